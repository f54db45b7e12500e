"""The kinds found by code rather than by a format in ``rules.yaml``, with samples.

Key/value assignments, URLs with credentials, PEM blocks, Kubernetes Secrets,
webhooks and the like are judged by their context, each in its own module.
Their samples (synthetic) are here so that every kind in ``KINDS`` has a test
(``tests/guard/secrets/test_rules.py``) and a line in ``COVERAGE.md``.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Samples:
    shape: str
    matches: tuple[str, ...]
    non_matches: tuple[str, ...]


_SAMPLES: dict[str, tuple[str, tuple[str, ...], tuple[str, ...]]] = {
    "aws_secret_access_key": (
        "40 base64 chars under an aws_secret_access_key name",
        ("aws_secret_access_key = 2hpChYgCfrL1spNxnyVmihA/2O76UMFxFkM/R5KQ",),
        ("aws_secret_access_key = ${AWS_SECRET_ACCESS_KEY}",),
    ),
    "azure_client_secret": (
        "3 chars + digit + Q~ + 31-34 chars",
        ("client_secret=Meh8Q~GAkWvj7FAc9QeWJKY40uvSwMFLZDe1f8rE",),
        ("SQe8Q~short",),
    ),
    "azure_sas_token": (
        "?...sv=...&sig=<30+ url-base64>",
        (
            "https://acct.blob.core.windows.net/c?sv=2022-11-02&se=2030-01-01&sp=r&sig=dUStPKR0CsTy4Qwb8DwkNhFdnXsiVpzz63FfkCzJr4i%3D",
        ),
        ("https://example.com/?page=2&sig=0B3JrTAwR4",),
    ),
    "azure_shared_access_key": (
        "SharedAccessKey=<44 base64>",
        (
            "Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=Root;SharedAccessKey=y9ojfljoQoaF1LlqsajAIxNKu8iS2G8NPRVdD53X83R=",
        ),
        ("SharedAccessKey=<your-key>",),
    ),
    "azure_storage_key": (
        "AccountKey=<88 base64>",
        (
            "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=ZJzzzzgEOzdmenCkhvMdgaKjIg8xNbe3nNyjOq9wMxEhh2FDEEtfjgVvVqE1SkHbn88HxjSI6bWHtP3fS2qHx6==;",
        ),
        ("AccountKey=${STORAGE_KEY};",),
    ),
    "basic_auth": (
        "Authorization: Basic <base64 user:password>; curl -u user:password",
        (
            "Authorization: Basic ZGVwbG95OlFtNyNjZkJBZXBmSiF2",
            "curl -u deploy:Qm7#cfBAepfJ!v https://ci.internal/api",
        ),
        (
            "Authorization: Basic <credentials>",
            "curl -u user:password https://x",
        ),
    ),
    "bearer_token": (
        "Authorization: Bearer <20+ token chars>",
        ("Authorization: Bearer kwXoIIXGvOoNZYW2mZp0zVZomHFwUbbYrEqmSM9w",),
        (
            "Authorization: Bearer $TOKEN",
            "Authorization: Bearer <token>",
        ),
    ),
    "db_connection_string": (
        "scheme://user:password@host (database schemes); Password=...; in ADO strings",
        (
            "postgres://app:Qm7#cfBAepfJ!v@db.internal:5432/app",
            "Server=db;Database=app;User Id=app;Password=Qm7#cfBAepfJ!v;",
        ),
        (
            "postgres://app:${DB_PASSWORD}@db:5432/app",
            "Server=db;Password=<password>;",
        ),
    ),
    "discord_webhook": (
        "discord.com/api/webhooks/<id>/<60-68 base64url>",
        (
            "https://discord.com/api/webhooks/1234567890123456789/HLxDsCxqjBLd3qbJskH53rGTD_2U3OpSH5r44wLzwTGV6HJYq_EEyUqj37Xa2fCs-4Gu",
        ),
        ("https://discord.com/api/webhooks/123/abc",),
    ),
    "teams_webhook": (
        "<tenant>.webhook.office.com/webhookb2/<uuid>@<uuid>/IncomingWebhook/<32 hex>/<uuid>",
        (
            "https://contoso.webhook.office.com/webhookb2/de451397-bc7b-3"
            "b16-69da-8a2ebbafd285@cd9cb03a-c28c-b594-e2dd-81ad4053bcf1/IncomingWebhook/b95bc059d0a0fb333da794b4241589da/b76d454d-8535-dcf4-5ff0-066fa16854c6",
        ),
        ("https://contoso.webhook.office.com/webhookb2/",),
    ),
    "discord_token": (
        "24 base64url . 6 . 27 (bot token)",
        ("MTIzNDU2Nzg5MDEyMzQ1Njc4.CZ7Uw9.xfogoEmvnEN5N1aE6PwZPf1Qh6y",),
        ("aaaaaaaaaaaaaaaaaaaaaaaa.bbbbbb.ccccccccccccccccccccccccccc",),
    ),
    "gcp_service_account": (
        '"private_key_id": <40 hex> in a service-account JSON',
        (
            '{"type": "service_account", "project_id": "demo-project",'
            ' "private_key_id": "6f5da2cec255404e4fb440034d6608697a8d41be"}',
        ),
        ('{"type": "service_account", "private_key_id": "<key-id>"}',),
    ),
    "high_entropy_token": (
        "32+ random chars (mixed case and digits) under a plain name",
        ("session_value: QL05HA064GiIjHGb3CXlMaXZjljENUhJduRHHJEY",),
        (
            "commit: 3176813e02ea68ef786e4d3cea27d26934b484e7",
            "id: 123e4567-e89b-12d3-a456-426614174000",
        ),
    ),
    "jwt": (
        "eyJ<header>.<payload>.<signature>",
        (
            "eyJhbGciOiAiSFMyNTYiLCAidHlwIjogIkpXVCJ9.eyJzdWIiOiAidThqelBkZTAiLCAiaWF0IjogMTcwMDAwMDAwMH0.K5AviRHoGBj4yZ1dXZgxlXUE2Q6UXeLo9U7ngcx19jY",
        ),
        ("eyJhbGciOiJIUzI1NiJ9.<payload>.<signature>",),
    ),
    "kubernetes_secret": (
        "kind: Secret with data: / stringData: values",
        (
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\n"
            "data:\n  password: UW03I2NmQkFlcGZKIXY=\n",
        ),
        ("apiVersion: v1\nkind: ConfigMap\ndata:\n  mode: fast\n",),
    ),
    "mailchimp_api_key": (
        "32 hex + -us + 1-2 digits",
        ("3cf575dcad6ba2b0aee0ca9237328815-us14",),
        ("84d8c4fa2815d2802827283e0ad84173-usa",),
    ),
    # The "sk-" format of rules.yaml, read by its body (tokens._openai_kind).
    "anthropic_api_key": (
        "sk-ant-api03- | sk-ant-admin01- + 93 base64url + AA",
        (
            "x-api-key: sk-ant-api03-GTd7FguoV8FWnFbB0JxXujr4qqaaABvvLOzAx"
            "zXMcU1vsHiQMaRiNTN9Ox98whGcTZc1UWb5fxzpF7STG7nVLe3lARUsRAA",
        ),
        ("sk-ant-api03-short",),
    ),
    "openrouter_api_key": (
        "sk-or-v1- + 64 hex",
        ("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",),
        ("sk-or-v1-",),
    ),
    "openshift_token": (
        "sha256~ + 43 base64url",
        ("sha256~avyfErGPmpGXafq0fjzLczbttOofL9H2WjQ5TY4MyWu",),
        ("sha256~abc",),
    ),
    "password_assignment": (
        "password / passwd / pwd ... = <value> in code, config, env, prose",
        (
            'DB_PASSWORD="Qm7#cfBAepfJ!v"',
            "my password is Qm7#cfBAepfJ!v",
        ),
        (
            'password = "changeme"',
            "password = get_password()",
            'password: "${DB_PASSWORD}"',
        ),
    ),
    "secret_assignment": (
        "secret / token / api_key ... = <value>",
        ('client_secret = "UFjsUNPjc01T5GOBUSZGi6HWGK10Zb0R"',),
        (
            'client_secret = os.environ["CLIENT_SECRET"]',
            "api_key: <your-api-key>",
        ),
    ),
    "slack_webhook": (
        "hooks.slack.com/services/T.../B.../<24 alnum>",
        ("https://hooks.slack.com/services/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",),
        ("https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX",),
    ),
    "softlayer_api_key": (
        "api.softlayer.com/rest/v3/<64 hex-ish>",
        (
            "https://api.softlayer.com/rest/v3/eqpno35ye4scmejvqtia4d5rgn5s7s333h9mtf4bs3e62rynnefj7qxi6rhxo55z",
        ),
        ("https://api.softlayer.com/rest/v3/SoftLayer_Account",),
    ),
    "telegram_bot_token": (
        "8-10 digits : AA + 33 base64url",
        ("1234567890:AAbka8FRCztUjAwyuh1vauWv1zh87mTa5Vs",),
        ("1234567890:AAxx",),
    ),
    "terraform_token": (
        "14 alnum .atlasv1. 60-100 chars",
        (
            "qxezy3Lex7BWr2.atlasv1.drgd1QsO7jprBGumXxY9B4bZWOz648JJnUfd7UACNWiP3sFd67JikEAvstqVVPqzPpt",
        ),
        ("abc.atlasv1.def",),
    ),
    "url_credentials": (
        "scheme://user:password@host",
        ("https://deploy:Qm7#cfBAepfJ!v@git.internal/repo.git",),
        (
            "https://user:password@example.com",
            "https://${USER}:${PASS}@host/",
        ),
    ),
}

CONTEXTUAL: dict[str, Samples] = {k: Samples(*v) for k, v in _SAMPLES.items()}
