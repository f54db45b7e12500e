"""The coverage table (``COVERAGE.md``), rendered from the rules and the contextual samples.

``python -m gateway.guard.detectors.secrets.coverage`` rewrites the file; a test
fails when the file and the rules disagree.
"""

from __future__ import annotations

import sys
from pathlib import Path

from gateway.guard.detectors.secrets.contextual import CONTEXTUAL
from gateway.guard.detectors.secrets.rules import RULES

COVERAGE_FILE = Path(__file__).with_name("COVERAGE.md")

# Formats that other scanners find only next to a provider's name ("adafruit",
# "algolia", ... followed by an assignment): here the assignment rules find the
# value under any name that says key, secret, token, password or credential.
_BY_ASSIGNMENT = (
    "adafruit, airtable, algolia, alibaba secret, asana, atlassian (keyword form), beamer, "
    "bitbucket, bittrex, cisco meraki, cloudflare api/global keys, codecov, cohere, coinbase, "
    "confluent, contentful delivery, datadog, discord client secret, droneci, dropbox (keyword "
    "form), etsy, facebook secret, fastly, finicity, finnhub, flickr, freshbooks, gitter, "
    "gocardless, heroku (uuid form), hubspot, intercom, jfrog api/identity, kraken, kucoin, "
    "launchdarkly, linear client secret, linkedin, lob, mailgun signing key, mapbox (pk), "
    "mattermost, messagebird, netlify (keyword form), new relic user key, nytimes, okta, "
    "plaid client/secret, privateai, rapidapi, sendbird, sentry (old form), snyk, squarespace, "
    "sumologic, travisci, twitch, twitter, typeform (keyword form), yandex access token, zendesk"
)


# Formats left out on purpose, and why.
_NOT_COVERED = (
    "NuGet API keys (oy2...) and ClickHouse Cloud secrets (4b1d...): prefixes of a digit "
    "and lowercase letters, which would cost every text one more search (see glued.py); "
    "under a key name the assignment rules find them. Twilio account SIDs (AC...) and "
    "publishable keys (pk_live_, FLWPUBK, NRJS-): identifiers meant to be public. "
    "Bare high-entropy strings without a key name: hashes, commit ids and base64 data "
    "look the same."
)


def _cell(s: str) -> str:
    return s.replace("|", "\\|").replace("\n", " ")


def render() -> str:
    rows: dict[str, list[tuple[str, str]]] = {}
    for r in RULES:
        rows.setdefault(r.kind, []).append((f"format `{r.id}`", r.shape))
    for kind, samples in CONTEXTUAL.items():
        rows.setdefault(kind, []).append(("context", samples.shape))
    lines = [
        "# Secret coverage",
        "",
        "Generated from `rules.yaml` and `contextual.py` by",
        "`python -m gateway.guard.detectors.secrets.coverage`; do not edit by hand.",
        "",
        "| kind | covered | sample |",
        "|---|---|---|",
    ]
    for kind in sorted(rows):
        for how, shape in rows[kind]:
            lines.append(f"| `{kind}` | {_cell(how)} | {_cell(shape)} |")
    lines += [
        "",
        f"{len(rows)} kinds, {len(RULES)} format rules.",
        "",
        "Found through the assignment rules (`secret_assignment`, `password_assignment`)",
        "rather than a format of their own: " + _BY_ASSIGNMENT + ".",
        "",
        "Not covered: " + _NOT_COVERED,
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    COVERAGE_FILE.write_text(render(), encoding="utf-8")
    sys.stdout.write(f"wrote {COVERAGE_FILE}\n")
