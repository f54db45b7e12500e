"""Deterministic detection of concrete secrets in outbound text.

A reader finds a rule by its name: token formats are data (``rules.yaml``,
compiled once by ``rules``); the scan that finds them and the contextual rules
are one module each (``private_keys``, ``jwt``, ``urls``, ``assignments``,
``kubernetes``, ``curl``, ``bundler``...), driven by ``engine``.
"""

from __future__ import annotations

from gateway.guard.detectors.secrets.common import _words
from gateway.guard.detectors.secrets.engine import scan
from gateway.guard.detectors.secrets.urls import _KEYWORD_LOW_RE, _KEYWORD_RE

__all__ = ["KINDS", "names_secret", "scan"]

KINDS: frozenset[str] = _words(
    """
    private_key openai_api_key anthropic_api_key openrouter_api_key github_token
    gitlab_token aws_access_key aws_secret_access_key aws_bedrock_api_key slack_token
    slack_webhook jwt google_api_key google_oauth_token google_oauth_client_secret
    gcp_service_account azure_storage_key azure_shared_access_key azure_sas_token
    azure_client_secret stripe_key npm_token pypi_token huggingface_token discord_token
    telegram_bot_token sendgrid_api_key mailgun_api_key mailchimp_api_key shopify_token
    digitalocean_token square_token databricks_token twilio_api_key vault_token
    terraform_token heroku_api_key
    sourcegraph_token grafana_token onepassword_token sentry_token notion_token flyio_token
    perplexity_api_key sonar_token openshift_token facebook_token atlassian_api_token
    artifactory_token postman_api_key newrelic_key pulumi_token linear_api_key
    rubygems_token planetscale_token doppler_token dynatrace_token brevo_api_key
    clojars_token prefect_token infracost_token cloudflare_origin_ca_key intra42_secret
    softlayer_api_key kubernetes_secret url_credentials db_connection_string basic_auth
    bearer_token password_assignment secret_assignment high_entropy_token groq_api_key
    replicate_api_token tavily_api_key xai_api_key langsmith_api_key pinecone_api_key
    docker_token figma_token netlify_token supabase_token contentful_token flutterwave_key
    shippo_token typeform_token readme_api_key
    """
)


def names_secret(key: str) -> bool:
    """Whether ``key`` could name a secret: it holds a word the keyword passes
    look for (pass, pw, secret, token, key, auth, cred, login, in any case).

    For the wire adapters, which give the value of such a JSON member a segment
    of its own, ``json.dumps(key) + ": " + json.dumps(value)``, so that a pair
    parsed out of a tool input is judged as its text form would be.
    """
    if key.isascii():
        return _KEYWORD_LOW_RE.search(key.lower()) is not None
    return _KEYWORD_RE.search(key) is not None
