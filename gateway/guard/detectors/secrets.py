"""Deterministic detection of concrete secrets in outbound text.

Every request waits on this scan, so speed is part of correctness. The rules
are grouped into passes, each anchored on one character where its matches
start, with a pattern whose groups its handler reads:

  ``_`` ``-`` ``.``   the separator after a known token prefix (``ghp_``,
                      ``sk-``, ``ya29.``...), checked by fixed-width lookbehinds;
                      the dash pass also finds ``--password`` style flags
  ``A``               AWS key ids, Google API keys and other ``A``-led formats
  ``J`` ``B``         JWTs (``eyJ``) and PEM private keys (``-----BEGIN``)
  ``~`` ``|``         Azure client secrets, OpenShift and Facebook app tokens
  ``G`` ``p`` ``S``   GitLab runner (``GR1348941``), Databricks (``dapi``) and
                      Twilio (``SK``) tokens, whose prefix runs into the body
  ``:`` ``=``         credentials in URLs, Slack webhooks, Telegram bot tokens,
                      Azure SAS signatures and random values under plain names
  ``k`` ``c`` ``p`` ``u`` ``g``, either case: the key-name keywords
                      (``token``/``key``, ``secret``/``cred``, ``pass``/``pw``,
                      ``auth``, ``login``) in code, config, env files, XML, HTTP
                      headers, CLI flags and plain sentences ("my password is
                      ..."), and ``curl -u`` command lines

Finding where a pass could match is the expensive part, and clean text must
cost as little as possible: short texts take one search with all passes as
alternatives, longer ones one literal-led search per anchor character (see
``_PREFILTER`` and ``_TEXT_SEARCHES`` for why). Each search tests a probe in C
that turns away nearly every anchor. Python only runs where a probe matched,
where the pass's own pattern is run for its groups, on a small window.

What must not be denied is left alone on purpose (a deny here cannot be
overridden): hashes and commit ids, UUIDs on their own, public keys and
certificates, paths, URLs without credentials, references such as ``$VAR`` or
``os.environ[...]``, code expressions, and placeholders.
"""

from __future__ import annotations

import base64
import binascii
import functools
import math
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import AnyStr

from gateway.guard.findings import Finding

__all__ = ["KINDS", "names_secret", "scan"]

_A = re.ASCII


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


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

# A specific format wins over a context finding, which wins over a generic one.
_PRIO_SPECIFIC = 3
_PRIO_CONTEXT = 2
_PRIO_GENERIC = 1


@dataclass(slots=True)
class _Ctx:
    """One scan's text, its hits, and how far context rules have already read.

    Work per character must stay bounded on hostile input, so a rule that reads
    past its anchor (a document, a query, a token run) remembers where it got to
    and the next anchor inside that stretch does not read it again.
    """

    text: str
    hits: list[tuple[int, int, str, int]]
    seen: set[int]
    # End of the last value read by the current keyword pass: a "name" inside
    # it is part of that value ("key=key=key=..." costs one hit, not thousands).
    value_end: int = -1
    # End of the last Kubernetes document whose data was read.
    k8s_until: int = -1
    # The JWT header run being read (its end), and where no JWT can start before.
    jwt_run_end: int = -1
    jwt_skip: int = -1
    jwt_tail_end: int = -1
    jwt_tail_marker: bool = False
    jwt_last_marker: int = -1
    # The URL query of the last "sig=" read: its "?", how far it was read, and
    # whether it holds a SAS field.
    sas_query: int = -1
    sas_read: int = -1
    sas_fields: bool = False
    service_account: bool | None = None

    def add(self, start: int, end: int, kind: str, prio: int) -> None:
        if end > start:
            self.hits.append((start, end, kind, prio))


# ---------------------------------------------------------------------------
# Value heuristics
# ---------------------------------------------------------------------------


def _any_case(*words: str, after: str = "") -> str:
    """Alternatives for case-insensitive words, each led by a plain literal.

    Under a global re.I a search has no first-character filter and tries every
    branch at every position; led by literals in both cases it is a set scan.
    """
    return "|".join(f"{c}(?i:{w[1:]}){after}" for w in words for c in (w[0], w[0].upper()))


# Fillers used in docs and scanner fixtures.
_MARKER_RE = re.compile(
    r"\*\*\*|###|•••|\.\.\.|<[^>]{0,60}>|"
    + _any_case("xxxx", "your", "placeholder", "redacted", "replace", "insert", "dummy", "fake")
    + "|"
    + _any_case("here", after="(?![a-zA-Z])"),
    _A,
)
# Repeating the group reference (not "\1{5}") keeps it out of re's general repeat machinery.
_RUN_RE = re.compile(r"([A-Za-z0-9])\1\1\1\1\1", _A)


def _seq_pattern() -> str:
    """Seven letters in alphabetical order ("abcdefg", ..., "tuvwxyz").

    Every such run contains g, n or u (seven apart), so the search anchors on
    those three letters rather than on any of twenty.
    """
    abc = "abcdefghijklmnopqrstuvwxyz"
    alternatives = []
    for a in (6, 13, 20):
        tails = [
            abc[a + 1 : i + 7] + (f"(?<={abc[i : i + 7]})" if i < a else "")
            for i in range(min(a, 19), max(0, a - 6) - 1, -1)
        ]
        alternatives.append(f"{abc[a]}(?:{'|'.join(tails)})")
    return "|".join(alternatives)


_SEQ_RE = re.compile(_seq_pattern(), _A)
# Digits or symbols other than word separators mean "not just words".
_WORDY_BREAK_RE = re.compile(r"[^A-Za-z_\-. /]", _A)
_WORD_PARTS_RE = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[^A-Za-z]+", _A)
_TOKENISH_RE = re.compile(r"[A-Za-z0-9+/=_.~-]+", _A)
_WS_RE = re.compile(r"\s")
_UUID_RE = re.compile(
    r"\{?[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}\}?", _A
)
_HEX_RE = re.compile(r"[0-9A-Fa-f]+", _A)
# Lowercase words or short pieces joined by separators: "shorter-version". Each
# piece is taken whole by the first way that fits it (atomic): with a choice left
# open per piece, a failing "ab-ab-ab-...-X" took 2^pieces steps.
_SLUG_PIECE = r"(?>[a-z]+(?![a-z0-9])|[0-9]+(?![a-z0-9])|[a-z0-9]{1,4}(?![a-z0-9]))"
_SLUG_RE = re.compile(rf"{_SLUG_PIECE}(?:[-_.]{_SLUG_PIECE})+", _A)
_HASH_PREFIX_RE = re.compile(r"(?:sha1|sha256|sha384|sha512|md5)[-:=]", re.I | _A)
_B64_RE = re.compile(r"[A-Za-z0-9+/_-]+={0,2}", _A)

# Whole values that say "no real secret here".
_PLACEHOLDER_VALUES = _words(
    """
    password passwd pass pwd secret token key apikey api_key changeme changeit example
    sample dummy test testing fake foo bar baz foobar qwerty admin root user username
    none null nil undefined true false yes no on off redacted removed hidden masked
    placeholder value default string str int bool boolean number any object bytes text
    char varchar optional secretstr sensitive required todo tbd xxx abc abc123 123456
    12345678 password1 password123 secret123 mypassword mysecret my_password my_secret
    letmein welcome guest demo temp empty unset notset
    """
)
# Values that are references, templates or encrypted envelopes, not secrets.
_REF_PREFIXES = (
    "$", "%", "{", "[", "(", "<%", "#", "@{", "@microsoft", "!", "&", "*", "ENC[",
    "vault:", "arn:", "file:", "env:", "secret:", "ref+", "op://", "secretref:", "sm://",
    "projects/", "process.env", "os.environ", "os.getenv", "getenv(", "ENV[",
    "System.getenv",
)  # fmt: skip
_TEMPLATE_RE = re.compile(
    r"\$\{\{?\s{0,2}[A-Za-z_][\w.:\[\]'\"-]{0,80}(?:[:?]?[-=?+][^}\s]{0,80})?\s{0,2}\}\}?"
    r"|\$\([A-Za-z_][^)]{0,80}\)|\{\{-?\s{0,2}[\w.$|()\[\]'\" -]{1,80}\s{0,2}-?\}\}"
    r"|%\([A-Za-z_]\w{0,40}\)[sd]|%[sd]|%[A-Za-z_]\w{0,40}%|\{[A-Za-z_][\w.\[\]'\"]{0,40}\}"
    r"|<%=?[^%]{0,80}%>",
    _A,
)
_CODE_REF_RE = re.compile(
    r"[A-Za-z_$][\w$]{0,60}(?:(?:\.|::|->)[A-Za-z_$][\w$]{0,60}){0,8}\s{0,2}[(\[]?", _A
)
_CHAIN_SPLIT_RE = re.compile(r"\.|::|->")
# Regular expressions quoted in code and schemas: \s, .+, [^...], (?:...), )+ ...
_REGEX_HINT_RE = re.compile(r"\\[sdwbSDWB./-]|[\])][+*?{]|\.[*+]|\[\^|\(\?[:=!<]|[\])+*]\$$", _A)
_KWARG_RE = re.compile(r"[A-Za-z_]\w{0,60}=[A-Za-z_]", _A)
_CALL_RE = re.compile(r"[A-Za-z_$][\w$.]{0,80}[ \t]{0,2}[(\[]", _A)
_IDENT_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,80}", _A)

_LOWER = frozenset("abcdefghijklmnopqrstuvwxyz")
_UPPER = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZ")
_DIGITS = frozenset("0123456789")
_ALNUM = _LOWER | _UPPER | _DIGITS


def _entropy(s: str) -> float:
    n = len(s)
    return -sum(c / n * math.log2(c / n) for c in Counter(s).values()) if n else 0.0


def _char_classes(v: str) -> int:
    chars = set(v)
    return (
        (not chars.isdisjoint(_LOWER))
        + (not chars.isdisjoint(_UPPER))
        + (not chars.isdisjoint(_DIGITS))
        + (not chars <= _ALNUM)
    )


def _has_digit(v: str) -> bool:
    return not _DIGITS.isdisjoint(v)


def _has_marker(v: str) -> bool:
    return _MARKER_RE.search(v) is not None


def _is_wordy(v: str) -> bool:
    """Identifier- or prose-like: two or more words, no digits, no random casing."""
    if _WORDY_BREAK_RE.search(v) is not None:
        return False
    words = 0
    for part in _WORD_PARTS_RE.findall(v):
        if part[0].isalpha():
            # Random letters break into short pieces ("JVLn" -> "JV", "Ln").
            if len(part) < 3 and not (len(part) == 2 and (part.islower() or part.istitle())):
                return False
            words += 1
    return words >= 2


def _is_placeholder(v: str) -> bool:
    if len(v) > _SHORT_VALUE:
        # Placeholders say so at their start or end; deep inside kilobytes of random
        # characters a "here" or six equal letters in a row are chance.
        return _is_placeholder(v[:64]) or _is_placeholder(v[-64:])
    low = v.lower()
    if low in _PLACEHOLDER_VALUES or _has_marker(v) or "example" in low:
        return True
    if v.isupper() and "_" in v and _IDENT_RE.fullmatch(v) and not _has_digit(v):
        return True  # "REFRESH_TOKEN", "AWS_ACCESS_KEY_ID": a name standing in for a value
    if v.startswith("__") and v.endswith("__"):
        return True  # "__root__"
    if low.startswith(("my", "your", "the", "some", "example", "sample", "test_", "dummy")):
        rest = low.lstrip("_-")
        if rest.isalpha() or _is_wordy(v):
            return True
    # One repeated character, a tiny alphabet, or the alphabet itself.
    return len(set(v)) <= 2 or _RUN_RE.search(v) is not None or _SEQ_RE.search(low) is not None


def _is_reference(v: str, quoted: bool) -> bool:
    """A variable, template, expression or pattern rather than a literal value."""
    if v.startswith(_REF_PREFIXES) or _REGEX_HINT_RE.search(v) is not None:
        return True
    t = _TEMPLATE_RE.search(v)
    if t is not None:
        rest = (v[: t.start()] + v[t.end() :]).strip()
        if len(rest) < 8 or _TEMPLATE_RE.search(rest) is not None:
            return True
    if quoted:
        return False
    if _CALL_RE.match(v) is not None or _KWARG_RE.match(v) is not None:
        return True  # calls, subscripts, defaults: get_password(), env["X"], Token=None
    if _CODE_REF_RE.fullmatch(v) is None:
        return False
    if "." in v or "::" in v or "->" in v:
        # obj.attr chains are references; "s.<random>" is a token with a dot in it.
        return not any(_looks_random(p, 20) for p in _CHAIN_SPLIT_RE.split(v))
    # DB_PASSWORD, db_password, dbPassword, v4auth_header: names, not values.
    if _IDENT_RE.fullmatch(v) is None:
        return False
    if "_" in v:
        # snake_case names (pkcs8_priv_key_info_st) split into short or alphabetic parts;
        # random base64url pieces are long and mixed.
        return all(p.isalpha() or len(p) <= 8 for p in v.split("_"))
    return not _has_digit(v) and (v.isupper() or _is_wordy(v))


_LOWER_RUN_RE = re.compile(r"[a-z]+", _A)
_IDENT_PARTS_RE = re.compile(r"[A-Za-z0-9]+", _A)


def _is_identifier_like(v: str) -> bool:
    """CamelCase / snake_case / CONSTANT_CASE names, even with a digit or two.

    Random tokens have short lowercase runs (about two letters); names are made
    of words. Values that are mostly digits are left to the other checks.
    """
    digits = sum(1 for c in v if c.isdigit())
    if digits * 4 > len(v):
        return False
    runs = _LOWER_RUN_RE.findall(v)
    if runs:
        # Random base36 also has ~3.6-letter runs, so lowercase-only values need
        # longer ones than CamelCase before they count as words.
        need = 3.5 if not _UPPER.isdisjoint(v) else 4.5
        return sum(map(len, runs)) / len(runs) >= need
    # CONSTANT_CASE: at least two real words between separators.
    parts = _IDENT_PARTS_RE.findall(v)
    return sum(1 for p in parts if p.isalpha() and len(p) >= 3) >= 2


_NAME_CHARSET_RE = re.compile(r"[A-Za-z0-9_.:/-]+", _A)


def _has_name_parts(v: str) -> bool:
    """Built from names: "867139942017-EntitiesDetection-ab98", "serverlessrepo:applicationId".

    Only for values spelled like identifiers; symbol-rich values are passwords.
    """
    if _NAME_CHARSET_RE.fullmatch(v) is None:
        return False
    return any(
        len(p) >= 4 and p.isalpha() and (_is_identifier_like(p) or _is_wordy(p))
        for p in _IDENT_PARTS_RE.findall(v)
    ) or any(_is_identifier_like(p) for p in _IDENT_PARTS_RE.findall(v) if len(p) >= 8)


def _looks_random(v: str, min_len: int = 16) -> bool:
    """A machine-generated credential rather than a word, name or sentence."""
    if not min_len <= len(v) <= 1024 or _TOKENISH_RE.fullmatch(v) is None:
        return False
    if _char_classes(v) < 2 or _is_wordy(v) or _SLUG_RE.fullmatch(v) is not None:
        return False
    if _is_identifier_like(v) or _UUID_RE.search(v) is not None or _has_name_parts(v):
        return False
    return _entropy(v) >= 2.5


def _is_text_b64(v: str) -> bool:
    """Base64 that decodes to ordinary text or structured data, not key bytes."""
    if len(v) < 16 or _B64_RE.fullmatch(v) is None:
        return False
    s = v.replace("-", "+").replace("_", "/")
    try:
        raw = base64.b64decode(s + "=" * (-len(s) % 4), validate=True)
    except (binascii.Error, ValueError):
        return False
    printable = sum(1 for b in raw if 32 <= b < 127 or b in (9, 10, 13))
    return bool(raw) and printable / len(raw) > 0.95


def _at(text: str, literal: str, i: int) -> bool:
    # str.startswith counts a negative index from the end; never look there.
    return i >= 0 and text.startswith(literal, i)


def _left_ok(text: str, start: int, extra: str = "") -> bool:
    """The token is not the tail of a longer word."""
    if start <= 0:
        return True
    c = text[start - 1]
    return not (c.isascii() and (c.isalnum() or c in extra))


def _clean_token(tok: str, runs: bool = True) -> bool:
    return not _has_marker(tok) and not (runs and _RUN_RE.search(tok) is not None)


# ---------------------------------------------------------------------------
# Prefixed token formats, found at their separator
# ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Rule:
    kind: str
    body: re.Pattern[str]
    # Some formats legitimately contain long digit runs ("xoxa-511111111-...").
    runs: bool
    wordy: bool
    min_classes: int


def _rules(
    prefixes: str, kind: str, body: str, classes: int = 2, runs: bool = True
) -> dict[str, _Rule]:
    # eyJ (base64 JSON) bodies read like words to the wordy test; skip it there.
    rule = _Rule(kind, re.compile(body, _A), runs, not body.startswith("eyJ"), classes)
    return dict.fromkeys(prefixes.split(), rule)


_B62 = "A-Za-z0-9"
_END = r"(?![A-Za-z0-9])"
_END_ = r"(?![A-Za-z0-9_-])"

_PREFIX_RULES: dict[str, _Rule] = {
    **_rules("ghp_ gho_ ghu_ ghs_ ghr_", "github_token", rf"[{_B62}]{{20,255}}{_END}"),
    **_rules("github_pat_", "github_token", rf"[{_B62}_]{{22,255}}{_END}"),
    **_rules(
        "sk_live_ sk_test_ sk_prod_ rk_live_ rk_test_ rk_prod_",
        "stripe_key",
        rf"[{_B62}]{{10,255}}{_END}",
    ),
    **_rules("whsec_", "stripe_key", r"[A-Za-z0-9+/=]{24,128}(?![A-Za-z0-9+/=])"),
    **_rules("hf_ api_org_", "huggingface_token", rf"[{_B62}]{{30,40}}{_END_}"),
    **_rules("npm_", "npm_token", rf"[{_B62}]{{36}}{_END}"),
    **_rules("dop_v1_ doo_v1_ dor_v1_", "digitalocean_token", rf"[a-f0-9]{{64}}{_END}", 1),
    **_rules("shpat_ shpca_ shppa_ shpss_", "shopify_token", rf"[a-fA-F0-9]{{32}}{_END}", 1),
    **_rules("sgp_", "sourcegraph_token", rf"(?:[a-fA-F0-9]{{16}}_)?[a-fA-F0-9]{{40}}{_END}"),
    **_rules("sgp_local_", "sourcegraph_token", rf"[a-fA-F0-9]{{40}}{_END}"),
    **_rules("glc_", "grafana_token", r"[A-Za-z0-9+/]{32,400}={0,2}(?![A-Za-z0-9+/=])"),
    **_rules("glsa_", "grafana_token", rf"[{_B62}]{{32}}_[A-Fa-f0-9]{{8}}{_END}"),
    **_rules("ops_", "onepassword_token", r"eyJ[A-Za-z0-9+/=_-]{60,4096}"),
    **_rules("pnu_", "prefect_token", rf"[{_B62}]{{36}}{_END}"),
    **_rules("fo1_", "flyio_token", rf"[A-Za-z0-9_-]{{43}}{_END_}"),
    **_rules("fm1a_ fm1r_ fm2_", "flyio_token", r"[A-Za-z0-9+/=_-]{100,4096}"),
    **_rules("sntrys_", "sentry_token", r"eyJ[A-Za-z0-9+/=_-]{30,4096}"),
    **_rules("sntryu_", "sentry_token", rf"[a-f0-9]{{64}}{_END}", 1),
    **_rules("ntn_", "notion_token", rf"[{_B62}]{{40,50}}{_END}"),
    **_rules("CLOJARS_", "clojars_token", rf"[a-z0-9]{{60}}{_END}"),
    **_rules("sqp_ squ_ sqa_", "sonar_token", rf"[{_B62}]{{40}}{_END}"),
    **_rules(
        "pscale_tkn_ pscale_pw_ pscale_oauth_",
        "planetscale_token",
        r"[A-Za-z0-9_.-]{32,64}(?![A-Za-z0-9_.-])",
    ),
    **_rules("lin_api_", "linear_api_key", rf"[{_B62}]{{40}}{_END}"),
    **_rules("rubygems_", "rubygems_token", rf"[a-f0-9]{{48}}{_END}", 1),
    **_rules("sk-", "openai_api_key", r"[A-Za-z0-9_-]{16,300}(?![A-Za-z0-9_-])", 1),
    **_rules(
        "glpat- glptt- gldt- glrt- glrtr- glft- glsoat- glcbt- glimt- glagent- gloas- glffct-",
        "gitlab_token",
        r"[A-Za-z0-9_-]{20,1024}(?![A-Za-z0-9_-])",
    ),
    # Slack bodies legitimately repeat digits ("xoxa-2-511111111-...").
    **_rules(
        "xoxa- xoxb- xoxp- xoxr- xoxs- xoxo- xoxe-",
        "slack_token",
        r"[A-Za-z0-9-]{10,400}(?![A-Za-z0-9-])",
        1,
        runs=False,
    ),
    **_rules("xapp-", "slack_token", r"[0-9]-[A-Za-z0-9-]{30,400}(?![A-Za-z0-9-])", runs=False),
    **_rules("pypi-", "pypi_token", r"AgE[A-Za-z0-9_-]{50,1024}"),
    **_rules("GOCSPX-", "google_oauth_client_secret", rf"[A-Za-z0-9_-]{{28}}{_END_}"),
    **_rules("sq0atp- sq0csp-", "square_token", r"[A-Za-z0-9_\\-]{22,60}(?![A-Za-z0-9_-])"),
    **_rules("pplx-", "perplexity_api_key", rf"[{_B62}]{{48}}{_END}"),
    **_rules("ico-", "infracost_token", rf"[{_B62}]{{32}}{_END}"),
    **_rules("HRKU-", "heroku_api_key", r"AA[A-Za-z0-9_-]{58}(?![A-Za-z0-9_-])"),
    **_rules("bedrock-api-key-", "aws_bedrock_api_key", r"[A-Za-z0-9+/=]{20,512}"),
    **_rules("key-", "mailgun_api_key", rf"[a-f0-9]{{32}}{_END}", 1),
    **_rules("v1.0-", "cloudflare_origin_ca_key", rf"[a-f0-9]{{24}}-[a-f0-9]{{146}}{_END}", 1),
    **_rules("s-s4t2ud- s-s4t2af-", "intra42_secret", rf"[a-f0-9]{{64}}{_END}", 1),
    **_rules("PMAK-", "postman_api_key", rf"[a-f0-9]{{24}}-[a-f0-9]{{34}}{_END}", 1),
    **_rules("NRAK-", "newrelic_key", rf"[A-Z0-9]{{27}}{_END}"),
    **_rules("pul-", "pulumi_token", rf"[a-f0-9]{{40}}{_END}", 1),
    **_rules("xkeysib-", "brevo_api_key", rf"[a-f0-9]{{64}}-[{_B62}]{{16}}{_END}"),
    **_rules("ya29.", "google_oauth_token", r"[A-Za-z0-9_-]{30,2048}(?![A-Za-z0-9_-])"),
    **_rules("hvs.", "vault_token", r"[A-Za-z0-9_-]{90,120}(?![A-Za-z0-9_-])"),
    **_rules("hvb.", "vault_token", r"[A-Za-z0-9_-]{138,400}(?![A-Za-z0-9_-])"),
    **_rules("SG.", "sendgrid_api_key", rf"[A-Za-z0-9_-]{{22}}\.[A-Za-z0-9_-]{{43}}{_END_}"),
    **_rules("dp.pt. dp.st. dp.sa. dp.ct. dp.scim.", "doppler_token", rf"[{_B62}]{{40,44}}{_END}"),
    # LLM and developer platforms an agent is likely to hold keys for.
    **_rules("gsk_", "groq_api_key", rf"[{_B62}]{{52}}{_END}"),
    **_rules("r8_", "replicate_api_token", rf"[{_B62}]{{37}}{_END}"),
    **_rules("tvly-", "tavily_api_key", rf"(?:dev-|prod-)?[{_B62}]{{32}}{_END}"),
    **_rules("xai-", "xai_api_key", rf"[{_B62}]{{70,90}}{_END}"),
    **_rules("lsv2_pt_ lsv2_sk_", "langsmith_api_key", rf"[a-f0-9]{{32}}_[a-f0-9]{{10}}{_END}", 1),
    **_rules("pcsk_", "pinecone_api_key", r"[A-Za-z0-9_]{60,90}(?![A-Za-z0-9_])"),
    **_rules("dckr_pat_", "docker_token", rf"[A-Za-z0-9_-]{{27}}{_END_}"),
    **_rules("figd_", "figma_token", rf"[A-Za-z0-9_-]{{40}}{_END_}"),
    **_rules("nfp_", "netlify_token", rf"[{_B62}]{{36,40}}{_END}"),
    **_rules("sbp_", "supabase_token", rf"[a-f0-9]{{40}}{_END}", 1),
    **_rules("CFPAT-", "contentful_token", rf"[A-Za-z0-9_-]{{43}}{_END_}"),
    **_rules("FLWSECK- FLWSECK_TEST-", "flutterwave_key", rf"[a-fA-F0-9]{{32}}-X{_END}", 1),
    **_rules("shippo_live_ shippo_test_", "shippo_token", rf"[a-f0-9]{{40}}{_END}", 1),
    **_rules("tfp_", "typeform_token", r"[A-Za-z0-9._-]{59}(?![A-Za-z0-9._-])"),
    **_rules("rdme_", "readme_api_key", rf"[a-z0-9]{{70}}{_END}"),
    **_rules("dt0c01.", "dynatrace_token", rf"[A-Z0-9]{{24}}\.[A-Z0-9]{{64}}{_END}"),
}

# Not a token format, but found by the same pass: Bundler host credentials
# (BUNDLE_GEMS__EXAMPLE__COM=user:password).
_BUNDLE_PREFIX = "BUNDLE_"

_CLI_FLAG = r"(?<=--)(?=[A-Za-z0-9][A-Za-z0-9_-]{0,30}(?i:pass|pw|secret|token|key|auth|cred))"
_MAILCHIMP_TAIL = r"(?=us[0-9])(?<=[0-9a-f]{32}-)"
_DISCORD_MID = r"(?=[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27})(?<=[A-Za-z0-9_-]{23}\.)"
_ATLAS_MID = r"(?<=\.atlasv1\.)"


def _sep_pattern(sep: str, *extra: str) -> re.Pattern[str]:
    """One pass per separator: prefixes behind it are tested by fixed-width lookbehinds.

    The group that matches captures the prefix. Every body starts with at least ten
    token characters; testing that first keeps the lookbehinds away from ordinary
    snake_case, kebab-case and sentence ends.
    """
    prefixes = [p for p in _PREFIX_RULES if p.endswith(sep)]
    if sep == "_":
        prefixes.append(_BUNDLE_PREFIX)
    by_len: dict[int, list[str]] = {}
    for p in prefixes:
        by_len.setdefault(len(p), []).append(re.escape(p))
    behind = "|".join(
        f"(?<=({'|'.join(sorted(v))}))" for _, v in sorted(by_len.items(), reverse=True)
    )
    # The last character of some prefix must precede the separator (one cheap
    # test that turns away most UUID and kebab-case dashes).
    last = re.escape("".join(sorted({p[-2] for p in prefixes})))
    head = rf"(?<=[{last}].)(?=[A-Za-z0-9+/][A-Za-z0-9+/=_-]{{9}})(?:{behind})"
    if sep == "-":
        # UUIDs and hex ids are the commonest dashes in logs: 4 or 12 hex digits.
        head = r"(?!(?<=[0-9a-fA-F]{4}-)(?:[0-9a-fA-F]{4}-|[0-9a-fA-F]{12}(?![A-Za-z0-9])))" + head
    return re.compile(re.escape(sep) + "(?:" + "|".join([head, *extra]) + ")", _A)


_UNDER_RE = _sep_pattern("_")
_DASH_RE = _sep_pattern("-", _MAILCHIMP_TAIL, _CLI_FLAG)
_DOT_RE = _sep_pattern(".", _ATLAS_MID, _DISCORD_MID)


def _prefix_behind(sep: str) -> str:
    """A lookbehind, ten body characters after ``sep``: some known prefix ends at it.

    The two characters before the separator are laid out as a trie on the first
    of them (re skips a branch whose leading literal differs without entering
    it), each pair followed by its full prefixes.
    """
    stems: dict[str, dict[str, set[str]]] = {}
    for prefix in _PREFIX_RULES:
        if prefix.endswith(sep):
            stem = prefix[:-1]
            stems.setdefault(stem[-2], {}).setdefault(stem[-1], set()).add(stem)
    if sep == "_":
        stem = _BUNDLE_PREFIX[:-1]
        stems.setdefault(stem[-2], {}).setdefault(stem[-1], set()).add(stem)
    trie: list[str] = []
    for first, seconds in sorted(stems.items()):
        branches: list[str] = []
        for second, words in sorted(seconds.items()):
            full = ""
            if all(len(w) > 2 for w in words):
                by_len: dict[int, list[str]] = {}
                for w in sorted(words):
                    by_len.setdefault(len(w), []).append(re.escape(w))
                full = "(?:" + "|".join(f"(?<={'|'.join(v)})" for v in by_len.values()) + ")"
            branches.append(re.escape(second) + full)
        trie.append(re.escape(first) + "(?:" + "|".join(branches) + ")")
    return rf"(?<=(?:{'|'.join(trie)}){re.escape(sep)}[\s\S]{{10}})"


# What the prefilter tests after each separator: together at least everything
# the pass pattern matches (the dash pattern's UUID test is left to it), laid
# out for the way re rejects, since separators are the commonest anchors in
# code and logs. Every sre operation costs about as much as a hundred or more
# machine instructions, so the body characters come first: one repeat with no
# lookaround, which most identifier parts, dates and numbers fail.
_BODY_HEAD = r"[A-Za-z0-9+/][A-Za-z0-9+/=_-]{9}"
_UNDER_PROBE = _BODY_HEAD + _prefix_behind("_")
_DASH_PROBE = (
    _BODY_HEAD
    + _prefix_behind("-")
    + r"|us[0-9](?<=[0-9a-f]{32}-us[0-9])"
    + r"|[A-Za-z0-9](?<=--.)[A-Za-z0-9_-]{0,30}(?i:pass|pw|secret|token|key|auth|cred)"
)
# After a dot the prefix body and the middle part of a Discord token share
# their first six characters, read once.
_DOT_PROBE = (
    r"[A-Za-z0-9+/=_-]{6}(?:"
    + r"[A-Za-z0-9+/=_-]{4}(?<=\.[A-Za-z0-9+/][\s\S]{9})"
    + _prefix_behind(".")
    + r"|\.(?<=[A-Za-z0-9_-]{23}\.[A-Za-z0-9_-]{6}\.)[A-Za-z0-9_-]{27})"
    + r"|(?<=\.atlasv1\.)"
)


def _slack_ok(body: str) -> bool:
    # Real tokens end in a long random segment: xoxb-<team>-<bot>-<secret>.
    return (
        len(body) >= 14
        and len(body.rsplit("-", 1)[-1]) >= 10
        and _has_digit(body)
        and not body.isdigit()
    )


def _openai_kind(body: str, after: str) -> str | None:
    if body.startswith("ant-"):
        return "anthropic_api_key"
    if body.startswith("or-"):
        return "openrouter_api_key"
    # Lowercase kebab-case ("sk-learn-feature-flags") and FIDO key types
    # ("sk-ecdsa-sha2-nistp256@openssh.com") are names, not keys.
    if after == "@" or (body.islower() and body.count("-") >= 2):
        return None
    return "openai_api_key"


def _on_prefix(ctx: _Ctx, m: re.Match[str]) -> None:
    prefix = m.group(m.lastindex or 0)
    text = ctx.text
    start = m.end() - len(prefix)
    if prefix == _BUNDLE_PREFIX:
        _on_bundle(ctx, start)
        return
    rule = _PREFIX_RULES[prefix]
    if prefix.startswith("xox") and _at(text, "xoxe.", start - 5):
        start -= 5
    if not _left_ok(text, start, "_.-"):
        return
    bm = rule.body.match(text, m.end())
    if bm is None:
        return
    body = bm.group(0)
    if not _clean_token(body, rule.runs) or (rule.wordy and _is_wordy(body)):
        return
    if _char_classes(body) < rule.min_classes:
        return
    kind = rule.kind
    if kind == "slack_token" and prefix != "xapp-" and not _slack_ok(body):
        return
    if prefix == "sk-":
        k = _openai_kind(body, text[bm.end() : bm.end() + 1])
        if k is None:
            return
        kind = k
    ctx.add(start, bm.end(), kind, _PRIO_SPECIFIC)


_MAILCHIMP_RE = re.compile(r"[0-9a-f]{32}-us[0-9]{1,2}(?![A-Za-z0-9])", _A)


def _on_dash(ctx: _Ctx, m: re.Match[str]) -> None:
    if m.lastindex is not None:
        _on_prefix(ctx, m)
        return
    text = ctx.text
    pos = m.start()
    if _at(text, "-", pos - 1):
        _on_cli(ctx, pos + 1)
        return
    start = pos - 32
    if start >= 0 and _left_ok(text, start, "_-"):
        mm = _MAILCHIMP_RE.match(text, start)
        if mm is not None and _clean_token(mm.group(0)):
            ctx.add(start, mm.end(), "mailchimp_api_key", _PRIO_SPECIFIC)


_TERRAFORM_RE = re.compile(r"[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=-]{60,100}", _A)
_DISCORD_RE = re.compile(
    r"[A-Za-z0-9_-]{23,26}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,38}(?![A-Za-z0-9_-])", _A
)
_TOKEN_BACK_RE = re.compile(r"[A-Za-z0-9_-]{1,26}\Z", _A)


def _on_dot(ctx: _Ctx, m: re.Match[str]) -> None:
    if m.lastindex is not None:
        _on_prefix(ctx, m)
        return
    text = ctx.text
    pos = m.start()
    if _at(text, ".atlasv1.", pos - 8):
        start = pos - 22
        if start >= 0 and _left_ok(text, start):
            tm = _TERRAFORM_RE.match(text, start)
            if tm is not None and _clean_token(tm.group(0)):
                ctx.add(start, tm.end(), "terraform_token", _PRIO_SPECIFIC)
        return
    # Discord bot token: <user id, base64>.<timestamp>.<hmac>
    back = _TOKEN_BACK_RE.search(text, max(0, pos - 27), pos)
    if back is None or not 23 <= pos - back.start() <= 26:
        return
    start = back.start()
    if not _left_ok(text, start, "_-."):
        return
    dm = _DISCORD_RE.match(text, start)
    if dm is None:
        return
    tok = dm.group(0)
    first, last = tok.split(".", 1)[0], tok.rsplit(".", 1)[1]
    if (
        _char_classes(first) >= 2
        and _char_classes(last) >= 3
        and not _is_wordy(last)
        and _clean_token(tok)
        and _entropy(last) >= 3.5
    ):
        ctx.add(start, dm.end(), "discord_token", _PRIO_SPECIFIC)


# ---------------------------------------------------------------------------
# "A"-led formats: AWS, Google, Bedrock, 1Password, Atlassian, age, Artifactory,
# Facebook (EAA...). All start with "A" so the search stays a literal one.
# ---------------------------------------------------------------------------

_A_RE = re.compile(
    r"A(?:KIA|SIA|BIA|CCA|3T[A-Z0-9]|IzaSy|BSK|3-[A-Z0-9]|TATT|GE-SECRET-KEY-1|KCp"
    r"|[MC](?<=EAA[MC]))",
    _A,
)
_A_RULES: tuple[tuple[tuple[str, ...], re.Pattern[str], str], ...] = (
    (
        ("AKIA", "ASIA", "ABIA", "ACCA", "A3T"),
        re.compile(r"(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}(?![A-Za-z0-9])", _A),
        "aws_access_key",
    ),
    (("AIza",), re.compile(r"AIzaSy[A-Za-z0-9_-]{33}(?![A-Za-z0-9_-])", _A), "google_api_key"),
    (("ABSK",), re.compile(r"ABSK[A-Za-z0-9+/]{109,269}={0,2}", _A), "aws_bedrock_api_key"),
    (
        ("A3-",),
        re.compile(
            r"A3-[A-Z0-9]{6}-(?:[A-Z0-9]{11}|[A-Z0-9]{6}-[A-Z0-9]{5})(?:-[A-Z0-9]{5}){3}"
            r"(?![A-Za-z0-9])",
            _A,
        ),
        "onepassword_token",
    ),
    (("ATATT",), re.compile(r"ATATT3[A-Za-z0-9_=-]{150,300}", _A), "atlassian_api_token"),
    (("AGE-",), re.compile(r"AGE-SECRET-KEY-1[0-9A-Z]{58}", _A), "private_key"),
    (("AKCp",), re.compile(r"AKCp[A-Za-z0-9]{69}(?![A-Za-z0-9])", _A), "artifactory_token"),
    (("EAA",), re.compile(r"EAA[MC][A-Za-z0-9]{100,1024}", _A), "facebook_token"),
)


def _on_a(ctx: _Ctx, m: re.Match[str]) -> None:
    text = ctx.text
    pos = m.start()
    if _at(text, "EAA", pos - 2):
        pos -= 2
    if not _left_ok(text, pos, "_"):
        return
    for leads, rx, kind in _A_RULES:
        if not text.startswith(leads, pos):
            continue
        am = rx.match(text, pos)
        if am is None:
            return
        tok = am.group(0)
        if kind == "aws_access_key":
            # AWS docs and fixtures fill ids with Z or EXAMPLE; only XXXX is a blank.
            if "XXXX" in tok:
                return
        elif not _clean_token(tok):
            return
        ctx.add(pos, am.end(), kind, _PRIO_SPECIFIC)
        return


# ---------------------------------------------------------------------------
# JWTs, PEM private keys, "~" and "|" formats, GitLab runner tokens
# ---------------------------------------------------------------------------

_JWT_PASS_RE = re.compile(r"J(?<=eyJ)", _A)
# The rule as one pattern (what _on_jwt matches, read in parts).
_JWT_RE = re.compile(
    r"eyJ[A-Za-z0-9_-]{10,4096}\.[A-Za-z0-9_-]{10,16384}(?:\.[A-Za-z0-9_-]{0,4096}){0,3}", _A
)


_JWT_RUN_RE = re.compile(r"[A-Za-z0-9_-]*", _A)
_JWT_TAIL_RE = re.compile(r"\.[A-Za-z0-9_-]{10,16384}(?:\.[A-Za-z0-9_-]{0,4096}){0,3}", _A)


def _on_jwt(ctx: _Ctx, m: re.Match[str]) -> None:
    """What _JWT_RE matches at the "eyJ", with a JSON header and no marker.

    Every "eyJ" inside one run of header characters ends its header where the run
    ends, and shares what follows, so the run and the tail are read once for all
    of them ("-eyJ-eyJ-eyJ..." would otherwise read 4 KB per "eyJ").
    """
    text = ctx.text
    start = m.start() - 2
    if start < ctx.jwt_skip or not _left_ok(text, start):
        return
    if start >= ctx.jwt_run_end:
        _jwt_run(ctx, start)
    run_end = ctx.jwt_run_end
    header = run_end - start - 3
    if header < 10 or ctx.jwt_tail_end < 0:
        ctx.jwt_skip = run_end  # later starts have shorter headers and the same tail
        return
    if header > 4096 or ctx.jwt_tail_marker or ctx.jwt_last_marker >= start:
        return  # too long for the pattern, or a placeholder
    # A JOSE header is a JSON object. Base64 of length 4k+1 does not decode, any
    # other length does, and its first three bytes come from its first four characters.
    head = base64.urlsafe_b64decode(text[start : start + 4])
    if (run_end - start) % 4 != 1 and head.startswith(b'{"'):
        ctx.add(start, ctx.jwt_tail_end, "jwt", _PRIO_SPECIFIC)
        ctx.jwt_skip = run_end  # later starts in the run give hits inside this one


def _jwt_run(ctx: _Ctx, start: int) -> None:
    """Read the header run from ``start``, the tail after it, and their markers."""
    text = ctx.text
    run_end = _JWT_RUN_RE.match(text, start + 3).end()  # type: ignore[union-attr]
    ctx.jwt_run_end = run_end
    tm = _JWT_TAIL_RE.match(text, run_end)
    ctx.jwt_tail_end = -1 if tm is None else tm.end()
    if tm is None:
        return
    ctx.jwt_tail_marker = _has_marker(tm.group(0))
    # Markers are letters and punctuation the header has none of, so none spans
    # the "."; the header of a later start holds one if one starts after it.
    last = -1
    mm = _MARKER_RE.search(text, start, run_end)
    while mm is not None:
        last = mm.start()
        mm = _MARKER_RE.search(text, last + 1, run_end)
    ctx.jwt_last_marker = last


_BEGIN_RE = re.compile(r"BEGIN(?<=-----BEGIN)", _A)
_PEM_HEAD_RE = re.compile(r"-----BEGIN [A-Z0-9 ]{0,40}?PRIVATE KEY(?: BLOCK)?-----", _A)
_PEM_END_RE = re.compile(r"-----END [A-Z0-9 ]{0,40}?PRIVATE KEY(?: BLOCK)?-----", _A)
# Between the header and the key material: real or escaped line breaks (escaped
# once or more), quotes and concatenation of keys pasted into code, comment and
# quote marks in front of every line (# // -- ; > * ! %), "Proc-Type:" lines.
_PEM_BODY_RE = re.compile(
    r"(?:\s|\\+[nr]|[\"',+#;>*!%]|/{2,}(?=\s)|--(?=\s)"
    r"|[A-Za-z-]{2,30}: [^\n\\]{1,200}(?:\\+n|\n)){0,64}"
    r"([A-Za-z0-9+/=]{20,4096}+)(?![ \t]+[A-Za-z])",
    _A,
)
# What a header may be followed by and still be a key that was cut off.
_PEM_BLANK_RE = re.compile(r"(?:[ \t\r\n\"']|\\n)*", _A)
_B64_RUN_RE = re.compile(r"[A-Za-z0-9+/=]{20,8192}", _A)


def _on_begin(ctx: _Ctx, m: re.Match[str]) -> None:
    text = ctx.text
    start = m.start() - 5
    hm = _PEM_HEAD_RE.match(text, start)
    if hm is None:
        return
    body_start = hm.end()
    # Key blocks are a few KB; look for the footer before the next header.
    limit = text.find("-----BEGIN", body_start, body_start + 32768)
    limit = body_start + 32768 if limit < 0 else limit
    end_at = text.find("-----END ", body_start, limit)
    em = _PEM_END_RE.match(text, end_at) if end_at >= 0 else None
    body_end = em.start() if em is not None else min(len(text), body_start + 4096)
    # The material of this key ends before the next header (read by its own turn).
    bm = _PEM_BODY_RE.match(text, body_start, min(body_end, limit))
    if bm is not None and bm.group(1) is not None:
        material = text[bm.start(1) : min(body_end, bm.start(1) + 400)]
        if not _has_marker(material) and "EXAMPLE" not in material:
            end = em.end() if em is not None else _b64_block_end(text, body_start)
            ctx.add(start, end, "private_key", _PRIO_SPECIFIC)
        return
    blank = _PEM_BLANK_RE.match(text, body_start, body_end)
    if em is None and blank is not None and blank.end() == body_end:
        # A bare header at the very end: the key was cut off, not absent.
        ctx.add(start, body_start, "private_key", _PRIO_SPECIFIC)


def _b64_block_end(text: str, pos: int) -> int:
    """End of the key material after an unterminated PEM header."""
    end = pos
    run = _B64_RUN_RE.search(text, pos, pos + 8192)
    while run is not None and run.start() - end < 16:
        end = run.end()
        run = _B64_RUN_RE.search(text, end, end + 8192)
    return end


_TILDE_RE = re.compile(r"~(?:(?<=[0-9]Q~)|(?<=sha256~))", _A)
_AZURE_SECRET_RE = re.compile(
    r"[A-Za-z0-9_~.]{3}[0-9]Q~[A-Za-z0-9_~.-]{31,34}(?![A-Za-z0-9_~.-])", _A
)
_OPENSHIFT_RE = re.compile(r"sha256~[A-Za-z0-9_-]{43}(?![A-Za-z0-9_-])", _A)


def _on_tilde(ctx: _Ctx, m: re.Match[str]) -> None:
    text = ctx.text
    pos = m.start()
    if text[pos - 1] == "Q":
        start, rx, kind, extra = pos - 5, _AZURE_SECRET_RE, "azure_client_secret", "_~.-"
    else:
        start, rx, kind, extra = pos - 6, _OPENSHIFT_RE, "openshift_token", "_"
    if start < 0 or not _left_ok(text, start, extra):
        return
    tm = rx.match(text, start)
    if tm is not None and _clean_token(tm.group(0)) and _char_classes(tm.group(0)) >= 3:
        ctx.add(start, tm.end(), kind, _PRIO_SPECIFIC)


# Facebook app access token: <15-16 digit app id>|<27 characters>
_PIPE_RE = re.compile(r"\|(?<=[0-9]{15}\|)(?=[A-Za-z0-9_-]{27}(?![A-Za-z0-9_-]))", _A)


def _on_pipe(ctx: _Ctx, m: re.Match[str]) -> None:
    text = ctx.text
    start = m.start() - 15
    if start > 0 and text[start - 1].isdigit():
        start -= 1
    tok = text[m.end() : m.end() + 27]
    if _left_ok(text, start, "_") and _char_classes(tok) >= 3 and _clean_token(tok):
        ctx.add(start, m.end() + 27, "facebook_token", _PRIO_SPECIFIC)


# Formats whose prefix runs straight into the body, each with its own literal.
_GITLAB_RUNNER_RE = re.compile(r"GR1348941[A-Za-z0-9_-]{20,50}(?![A-Za-z0-9_-])", _A)
_DATABRICKS_RE = re.compile(r"dapi[a-f0-9]{32}(?:-[0-9])?(?![A-Za-z0-9])", _A)
_TWILIO_RE = re.compile(r"SK[0-9a-fA-F]{32}(?![A-Za-z0-9])", _A)


_DAPI_PASS_RE = re.compile(r"pi(?<=dapi)", _A)


def _on_dapi(ctx: _Ctx, m: re.Match[str]) -> None:
    dm = _DATABRICKS_RE.match(ctx.text, m.start() - 2)
    if dm is not None:
        _on_glued(ctx, dm)


def _on_glued(ctx: _Ctx, m: re.Match[str]) -> None:
    tok = m.group(0)
    body = tok[9:] if tok.startswith("GR") else tok[2:]
    if not _left_ok(ctx.text, m.start(), "_") or not _clean_token(body):
        return
    if tok.startswith("GR"):
        if _char_classes(body) >= 2:
            ctx.add(m.start(), m.end(), "gitlab_token", _PRIO_SPECIFIC)
    elif _char_classes(body) >= 2 and _entropy(body) >= 3.0:
        kind = "databricks_token" if tok.startswith("dapi") else "twilio_api_key"
        ctx.add(m.start(), m.end(), kind, _PRIO_SPECIFIC)


# ---------------------------------------------------------------------------
# ":" and "=": URL credentials, webhooks, Telegram, Azure SAS, and random
# values under names that carry no keyword
# ---------------------------------------------------------------------------

# Mixed case and a digit near the start, then 32+ token characters. The
# uppercase test runs first so hex digests and UUIDs in logs fail within a few
# steps.
_HIGH_ENTROPY_AHEAD = (
    r"[ \t]{0,3}+[\"'`]?(?=[A-Za-z0-9][a-z0-9+/_~.=-]{0,7}+[A-Z])"
    r"(?=[A-Z0-9+/_~.=-]{0,15}+[a-z])(?=[A-Za-z+/_~.=-]{0,15}+[0-9])"
    r"(?=[A-Za-z0-9+/_~.=-]{32})"
)
_COLON_RE = re.compile(
    r":(?:"
    r"(?=//(?:[^\s:/?#@\"'<>\\]{0,128}:[^\s/?@\"'<>\\]{1,256}@[A-Za-z0-9\[_]"
    r"|hooks\.slack\.com/|api\.softlayer\.com/))"
    r"|(?=AA[A-Za-z0-9_-]{33})(?<=[0-9]{8}:)"
    r"|" + _HIGH_ENTROPY_AHEAD + r")",
    _A,
)
_EQ_RE = re.compile(r"=(?:(?<=[?&]sig=)(?=[A-Za-z0-9%+/]{30})|" + _HIGH_ENTROPY_AHEAD + r")", _A)

# Prefilter probes for ":" and "=", the same conditions rearranged for speed:
# most values after them are short, so the 32 value characters are read first
# (no lookaround jump), and only then is their mix of cases and digits checked,
# from the value's start, by a lookbehind over exactly those 32 characters.
_HE_MIX = (
    r"(?<=(?=[A-Za-z0-9][a-z0-9+/_~.=-]{0,7}+[A-Z])(?=[A-Z0-9+/_~.=-]{0,15}+[a-z])"
    r"(?=[A-Za-z+/_~.=-]{0,15}+[0-9])[\s\S]{32})"
)
_HE_PROBE = (
    # No space or quote before the value, one to three spaces, or a quote.
    rf"[A-Za-z0-9][A-Za-z0-9+/_~.=-]{{31}}{_HE_MIX}"
    rf"|[ \t][ \t]{{0,2}}+[\"'`]?[A-Za-z0-9+/_~.=-]{{32}}{_HE_MIX}"
    rf"|[\"'`][A-Za-z0-9+/_~.=-]{{32}}{_HE_MIX}"
)
# Every value either probe reads starts with 30 characters of this class (up to
# four spaces or a quote, then value characters): one repeat turns short values
# away before any alternative is tried.
_VALUE_30 = r"(?=[ \t\"'`A-Za-z0-9%+/_~.=-]{30})"
_COLON_PROBE = (
    r"//(?:[^\s:/?#@\"'<>\\]{0,128}:[^\s/?@\"'<>\\]{1,256}@[A-Za-z0-9\[_]"
    r"|hooks\.slack\.com/|api\.softlayer\.com/)"
    r"|AA[A-Za-z0-9_-]{33}(?<=[0-9]{8}:AA[A-Za-z0-9_-]{33})"
    rf"|{_VALUE_30}(?:{_HE_PROBE})"
)
_EQ_PROBE = (
    rf"{_VALUE_30}(?:[A-Za-z0-9%+/][A-Za-z0-9%+/]{{29}}(?<=[?&]sig=[A-Za-z0-9%+/]{{30}})"
    rf"|{_HE_PROBE})"
)

_URL_CRED_RE = re.compile(
    r"([A-Za-z][A-Za-z0-9+.:-]{0,30})://([^\s:/?#@\"'<>\\]{0,128}):([^\s/?@\"'<>\\]{1,256})@",
    _A,
)
_SCHEME_BACK_RE = re.compile(r"[A-Za-z][A-Za-z0-9+.:-]{0,30}\Z", _A)
_DB_SCHEMES = _words(
    """
    postgres postgresql mysql mariadb mongodb redis rediss amqp amqps mssql sqlserver
    oracle cockroachdb clickhouse couchdb cassandra neo4j bolt memcached db2 snowflake
    jdbc:postgresql jdbc:mysql jdbc:sqlserver jdbc:oracle jdbc:mariadb ftp sftp
    """
)
_URL_PLACEHOLDER_PW = _words("password passwd pass pwd secret pw changeme token apikey")
_SLACK_HOOK_RE = re.compile(
    r"//hooks\.slack\.com/(?:services|workflows|triggers)/"
    r"(T[A-Z0-9]{6,12}/[A-Z0-9]{6,14}/[A-Za-z0-9/]{16,120})",
    _A,
)
_SOFTLAYER_URL_RE = re.compile(
    r"//api\.softlayer\.com/(?:soap|rest)/v3(?:\.1)?/([a-z0-9]{64})(?![a-z0-9])", _A
)
_TELEGRAM_RE = re.compile(r"[0-9]{8,10}:AA[A-Za-z0-9_-]{33}(?![A-Za-z0-9_-])", _A)
_DIGITS_BACK_RE = re.compile(r"[0-9]{8,10}\Z", _A)


def _on_colon(ctx: _Ctx, m: re.Match[str]) -> None:
    text = ctx.text
    pos = m.start()
    if text.startswith("//", pos + 1):
        _on_url(ctx, pos)
    elif text.startswith("AA", pos + 1):
        back = _DIGITS_BACK_RE.search(text, max(0, pos - 10), pos)
        # api.telegram.org/bot<token>/sendMessage glues the token to "bot".
        if back is not None and (
            _left_ok(text, back.start(), "_") or _at(text, "bot", back.start() - 3)
        ):
            tm = _TELEGRAM_RE.match(text, back.start())
            if tm is not None and _clean_token(tm.group(0)):
                ctx.add(back.start(), tm.end(), "telegram_bot_token", _PRIO_SPECIFIC)
    else:
        _on_high_entropy(ctx, m)


def _on_url(ctx: _Ctx, pos: int) -> None:
    text = ctx.text
    if text.startswith("//hooks.slack.com/", pos + 1):
        hm = _SLACK_HOOK_RE.match(text, pos + 1)
        if hm is not None and _clean_token(hm.group(1)):
            ctx.add(hm.start(1), hm.end(1), "slack_webhook", _PRIO_SPECIFIC)
        return
    if text.startswith("//api.softlayer.com/", pos + 1):
        sm = _SOFTLAYER_URL_RE.match(text, pos + 1)
        if sm is not None and _clean_token(sm.group(1)):
            ctx.add(sm.start(1), sm.end(1), "softlayer_api_key", _PRIO_SPECIFIC)
        return
    back = _SCHEME_BACK_RE.search(text, max(0, pos - 31), pos)
    if back is None:
        return
    um = _URL_CRED_RE.match(text, back.start())
    if um is None or not _credential_ok(um.group(2), um.group(3)):
        return
    scheme = um.group(1).lower()
    db = scheme in _DB_SCHEMES or scheme.split("+", 1)[0] in _DB_SCHEMES
    kind = "db_connection_string" if db else "url_credentials"
    ctx.add(um.start(3), um.end(3), kind, _PRIO_CONTEXT)


_BRACED_RE = re.compile(r"\{([^{}$%\s]{1,256})\}", _A)


def _credential_ok(user: str, pw: str) -> bool:
    """A user:password pair holds a real password, not a template or a blank."""
    braced = _BRACED_RE.fullmatch(pw)
    p = braced.group(1) if braced is not None else pw
    if len(p) < 6 or p == user or p.lower() in _URL_PLACEHOLDER_PW or len(set(p)) < 3:
        return False
    if "%20" in p or "," in p:
        return False  # a sentence or a multi-host list, not a password
    if _is_reference(p, quoted=True) or _has_marker(p):
        return False
    return not (p.lower() in _PLACEHOLDER_VALUES and user.lower() in _PLACEHOLDER_VALUES)


_KEYWORD_RE = re.compile(r"pass|pw|secret|token|key|auth|cred|login", re.I | _A)
# The same words for text already lowercased: a literal-led search, several
# times faster than a case-insensitive one on the short keys of JSON objects.
_KEYWORD_LOW_RE = re.compile(_KEYWORD_RE.pattern)


_HE_VALUE_RE = re.compile(r"[A-Za-z0-9+/_~.=-]{32,200}", _A)
_SAS_RE = re.compile(r"[A-Za-z0-9%+/]{30,200}(?:%3D|=){0,2}", _A)
_NAME_BACK_RE = re.compile(r"[A-Za-z0-9_.-]{0,64}\Z", _A)


def _on_eq(ctx: _Ctx, m: re.Match[str]) -> None:
    text = ctx.text
    pos = m.start()
    if _at(text, "sig=", pos - 3) and pos >= 4 and text[pos - 4] in "?&":
        sm = _SAS_RE.match(text, pos + 1)
        if sm is not None and _sas_query(ctx, pos):
            ctx.add(sm.start(), sm.end(), "azure_sas_token", _PRIO_SPECIFIC)
        return
    _on_high_entropy(ctx, m)


_SAS_FIELD_RE = re.compile(r"s[vep]=", _A)


def _sas_query(ctx: _Ctx, pos: int) -> bool:
    """The query before "sig=" (from its "?", 2 KB back at most) has sv=, se= or sp=.

    A query with many "&sig=" is read once: the "?" found for the one before
    still holds when no "?" came since, and only the new part is read.
    """
    text = ctx.text
    lo = max(0, pos - 2048)
    q0 = text.rfind("?", max(lo, ctx.sas_read), pos)
    if q0 >= 0:
        ctx.sas_query, ctx.sas_read, ctx.sas_fields = q0, q0, False
    elif ctx.sas_query < lo:
        ctx.sas_query, ctx.sas_read, ctx.sas_fields = -1, pos, False
        return False
    if not ctx.sas_fields:
        # Two characters of overlap: a field cut at the last read position.
        from_ = max(ctx.sas_query, ctx.sas_read - 2)
        ctx.sas_fields = _SAS_FIELD_RE.search(text, from_, pos) is not None
    ctx.sas_read = pos
    return ctx.sas_fields


def _on_high_entropy(ctx: _Ctx, m: re.Match[str]) -> None:
    """A long random value under a name that is neither a keyword nor metadata."""
    text = ctx.text
    vm = _HE_VALUE_RE.match(text, m.end())
    if vm is None:
        return
    v = vm.group(0).rstrip(".")
    vs, ve = vm.start(), vm.start() + len(v)
    if ve < len(text) and text[ve].isascii() and text[ve].isalnum():
        return
    i = m.start()
    while i > 0 and text[i - 1] in " \t\"'`]":
        i -= 1
    nm = _NAME_BACK_RE.search(text, max(0, i - 64), i)
    j = nm.start() if nm is not None else i
    if j > 0 and text[j - 1] in "?&;":
        return  # URL query parameters: state, code, signatures
    name = text[j:i]
    if name and (
        not _NEG_SEGMENTS.isdisjoint(_segments(name)) or _KEYWORD_RE.search(name) is not None
    ):
        return  # keyword names are judged by the keyword passes
    if (
        _HASH_PREFIX_RE.match(v)
        or "=" in v.rstrip("=")
        or v.startswith("/")
        or v.count("/") > 2
        or v.count(".") > 2
        or _is_placeholder(v)
        or not _looks_random(v, 32)
        or _entropy(v) < 4.0
        or _is_text_b64(v)
    ):
        return
    ctx.add(vs, ve, "high_entropy_token", _PRIO_GENERIC)


# ---------------------------------------------------------------------------
# Key names: classification
# ---------------------------------------------------------------------------

_SEG_RE = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+", _A)

# Name segments meaning "this value identifies, locates or describes something".
_NEG_SEGMENTS = _words(
    """
    id ids uuid guid hash hashed sha sha1 sha256 sha512 md5 digest checksum integrity etag
    version rev revision commit public pub url uri href src path file filename image icon
    name title class type kind sum crc fingerprint thumbprint cert certificate modulus
    nonce salt signature sig data content body payload blob message msg text label format
    pattern regex prefix suffix length len size count field header column placeholder
    description desc example sample test tests mock dummy fake ref arn store vault manager
    provider template env var variable endpoint location link list playlist key keys
    address addr host domain email user username login policy mode algorithm alg algo
    cipher encoding index idx ttl timeout expiry expires date time timestamp created
    updated chars charset alphabet
    """
)
# Last segments that turn a secret-ish name into metadata about the secret.
_NEG_LAST = _NEG_SEGMENTS - _words("key login user username sig signature data") | _words(
    """
        hint question prompt input form box button reset strength min max limit rotation
        validator validation required enabled enable flag bits source mount volume
        generator engine backend dir directory scope scopes params param option options
        config setting settings attr attribute property prop props error errors span
        match matches confirm confirmation changed change expired expiration lifetime
        usage types tokens secrets passwords counter cache callback handler fn func
        function method obj object struct request response req resp res result status
        state regexp re spec schema model table view widget component pane panel modal
        dialog page route router
        """
)
_DIGEST_WORDS = _words("sha sha1 sha256 sha512 md5 hash hashed digest checksum fingerprint")
_PW_WORDS = ("password", "passwd", "passphrase", "passcode", "passwort", "contrasena")
_NOT_PW = _words(
    """
    bypass compass surpass overpass underpass trespass encompass impass lowpass highpass
    bandpass allpass multipass onepass firstpass subpass
    """
)
_STRONG_SUFFIXES = (
    "secret", "token", "apikey", "secretkey", "accesskey", "privatekey", "authkey",
    "credential", "credentials",
)  # fmt: skip
# Tokens that are protocol counters or idempotency ids, not credentials.
_NOT_SECRET_TOKEN = _words(
    """
    max min num n total input output completion prompt next page continuation
    cancellation csrf xsrf sync change client idempotency request task upload resume
    pagination retry dedup form curr current last first prev start end stop pad unk
    bos eos sep cls mask special lock action lifecycle product copy verification lease
    transaction batch job execution workflow operation work unit share update sequence
    starting forward backward export import
    """
)
_PAGING_WORDS = _words("next page continuation pagination sequence forward backward starting")
_VALUE_QUALIFIERS = _words(
    """
    value val str string plain plaintext clear cleartext raw secure enc encoded b64 base64
    hex prod production dev development stage staging local old new current tmp temp
    default db admin root user base v1 v2 v3 0 1 2 3 4 5 6 7 8 9 key secret token
    """
)
_KEY_STRONG_QUALIFIERS = _words(
    """
    api secret access private auth master encryption signing account shared app
    application service license client consumer session webhook hmac crypto aes jwt
    admin root bot deploy subscription integration management write read ingest
    """
)
# Qualifiers of "key" that name lookup keys, not credentials.
_KEY_LOOKUP_QUALIFIERS = _words(
    """
    idempotency cache sort partition primary foreign object row range hash dedup dedupe
    lookup index map dict group routing shard cursor state storage s3 bucket file i18n
    translation message event trace correlation unique natural composite sequence schema
    registry config setting cluster redis query search filter order column field entity
    component react list item node child parent element public pub ssh gpg pgp host known
    sorting data meta metadata label attr attribute property prop name dictionary local
    json yaml env var param arg option menu shortcut hot hotkey keyboard press pressed up
    down modifier secondary surrogate candidate blob kms cmk pk fk memo store
    """
)

# Name classes; the value test gets stricter as the name gets less specific.
_PW, _STRONG, _WEAK, _BARE_PW = 1, 2, 3, 4
_CLASS_KIND = {
    _PW: "password_assignment",
    _BARE_PW: "password_assignment",
    _STRONG: "secret_assignment",
    _WEAK: "high_entropy_token",
}
_PUBLIC_WORDS = _words("public pub publishable")
_SETTER_PREFIXES = _words("set with use")
_SETTER_TARGETS = _words("password passwd passphrase pwd secret token apikey")


def _is_setter(name: str) -> bool:
    """secret("..."), setPassword("..."), withToken("...")"""
    segs = _segments(name.rsplit(".", 1)[-1])
    if segs and segs[0] in _SETTER_PREFIXES:
        segs = segs[1:]
    return segs in (["api", "key"], ["client", "secret"]) or (
        len(segs) == 1 and segs[0] in _SETTER_TARGETS
    )


def _segments(name: str) -> list[str]:
    return [s.lower() for s in _SEG_RE.findall(name)]


@functools.lru_cache(maxsize=4096)
def _classify(name: str) -> int:
    segs = _segments(name)
    if not segs or segs[-1] in _NEG_LAST or not _DIGEST_WORDS.isdisjoint(segs):
        return 0
    if not _PUBLIC_WORDS.isdisjoint(segs):
        return 0
    cls = 0
    for i, s in enumerate(segs):
        prev = segs[i - 1] if i else ""
        # Words after the keyword must qualify the value ("password_secure"),
        # not name something else ("password_manager", "pass_through").
        tail_ok = _VALUE_QUALIFIERS.issuperset(segs[i + 1 :])
        if s.endswith(_PW_WORDS) or (s in ("pass", "pw", "pwd") and i == len(segs) - 1):
            if tail_ok:
                return _BARE_PW if len(segs) == 1 and s in ("pass", "pw", "pwd") else _PW
            continue
        if s.endswith("pass") and len(s) <= 8 and s not in _NOT_PW and i == len(segs) - 1:
            return _PW  # db_pass, f5pass
        if s.endswith(_STRONG_SUFFIXES):
            if tail_ok and not (
                s == "token"
                and (prev in _NOT_SECRET_TOKEN or not _PAGING_WORDS.isdisjoint(segs[:i]))
            ):
                cls = _STRONG
        elif s == "key":
            if prev in _KEY_STRONG_QUALIFIERS:
                cls = _STRONG
            elif prev not in _KEY_LOOKUP_QUALIFIERS and cls == 0:
                cls = _WEAK
        elif s == "authorization" and tail_ok:
            cls = _STRONG
        elif s in ("auth", "login", "cred", "creds", "bearer") and cls == 0:
            cls = _WEAK
    return cls


# ---------------------------------------------------------------------------
# Values after a key name
# ---------------------------------------------------------------------------

# Most values are short. Under password and strong names a long one is judged
# too (a key or certificate pasted as one base64 string, a session token), up to
# a bound that keeps the work per keyword hit constant on hostile input.
_SHORT_VALUE = 256
_LONG_VALUE = 8192
_VALUE_RE = re.compile(
    (
        r"[ \t]{0,8}(?:[fbrFBRuU@](?=[\"']))?(?:"
        r"\\\"((?:[^\\\n]|\\(?!\")){0,N})\\\""
        r"|\\'((?:[^\\\n]|\\(?!')){0,N})\\'"
        r"|\"((?:[^\"\\\n]|\\.){0,N})\""
        r"|'((?:[^'\\\n]|\\.){0,N})'"
        r"|`([^`\n]{0,N})`"
        r"|([^\s\"'`,;<|]{1,N1})"
        r")"
    )
    .replace("N}", f"{_LONG_VALUE}}}")
    .replace("N1}", f"{_LONG_VALUE + 1}}}"),
    _A,
)
# Escaped line breaks and tabs: text of several lines, not one secret.
_ESCAPED_WS_RE = re.compile(r"\\[nrt]", _A)
_ANNOT_RE = re.compile(r"[ \t]{0,3}(?:\[[^\]\n]{0,40}\])?[ \t]{0,3}=(?!=)", _A)
_OPENERS = {"(": ")", "[": "]", "{": "}"}
_CLOSER_RE = re.compile(r"[)\]}]")
_BRACKET_RE = re.compile(r"[()\[\]{}]")
_AWS_SECRET_RE = re.compile(r"[A-Za-z0-9/+]{40}", _A)
_AUTH_SCHEMES = _words("bearer basic token bot digest apikey sso-key ssws key otoken negotiate")
# Signature schemes: the header carries a per-request HMAC, not a reusable secret.
_SIGNED_SCHEMES = _words("aws4-hmac-sha256 hmac-sha256 signature")


def _read_value(text: str, i: int) -> tuple[int, int, bool] | None:
    """The value at text[i]: a quoted string (escaped or not) or a bare token."""
    m = _VALUE_RE.match(text, i)
    if m is None or m.lastindex is None:
        return None
    g = m.lastindex
    if g != 6:
        return m.start(g), m.end(g), True
    # A bare value ends at the first bracket it did not open: f(password=x), {"k": v}.
    vs, ve = m.start(g), m.end(g)
    if _CLOSER_RE.search(text, vs, ve) is not None:
        depth = {")": 0, "]": 0, "}": 0}
        for bm in _BRACKET_RE.finditer(text, vs, ve):
            c = bm.group()
            if c in _OPENERS:
                depth[_OPENERS[c]] += 1
            elif depth[c] == 0:
                ve = bm.start()
                break
            else:
                depth[c] -= 1
    while ve > vs and text[ve - 1] == ">":
        ve -= 1  # <td>x</td>
    return (vs, ve, False) if ve > vs else None


def _value_ok(v: str, cls: int, quoted: bool, bare_key: bool = False) -> bool:
    n = len(v)
    if n < (6 if cls in (_PW, _BARE_PW) else 8) or _WS_RE.search(v) is not None:
        return False
    if n > _SHORT_VALUE and (
        n > _LONG_VALUE or cls == _WEAK or _ESCAPED_WS_RE.search(v) is not None
    ):
        return False
    if cls == _WEAK:
        # Weak names ("*_key", "auth", "login") need a value that is clearly
        # random; short hex under such names is usually an id or a digest, and
        # a UUID under a bare "key" is an object or cache key.
        if _UUID_RE.fullmatch(v) is not None:
            if bare_key:
                return False
        elif not _looks_random(v) or (n < 32 and _HEX_RE.fullmatch(v) is not None):
            return False
    if v.startswith(("/", "./", "~/", "..", *_REF_PREFIXES)) or "://" in v or v in ("|-", ">-"):
        return False  # paths, URLs, and the cheapest part of _is_reference
    if _HASH_PREFIX_RE.match(v) is not None or _is_placeholder(v) or _is_reference(v, quoted):
        return False
    if n > _SHORT_VALUE:
        # Pasted whole (a key or certificate as base64, a session token): judged by
        # its characters; the word and name tests below are for short values, and
        # kilobytes of random characters hold a word or a name by chance.
        return _char_classes(v) >= 2 and _entropy(v) >= 3.5 and _SLUG_RE.fullmatch(v) is None
    if cls == _PW:
        return not _is_wordy(v) and not (_SLUG_RE.fullmatch(v) and not _has_digit(v))
    if cls == _BARE_PW:
        # "pass:" and "pwd:" are also English and shell words; ask for more than letters.
        return not v.isalpha() and not _is_wordy(v) and not _SLUG_RE.fullmatch(v)
    if cls == _STRONG:
        if _is_wordy(v) or (_SLUG_RE.fullmatch(v) and _UUID_RE.fullmatch(v) is None):
            return False
        if (v.isalpha() and _is_identifier_like(v)) or (
            _UUID_RE.fullmatch(v) is None and _has_name_parts(v)
        ):
            return False  # "client_secret: Configuration options", "serverlessrepo:applicationId"
        return _char_classes(v) >= 2 or n >= 16
    return True


def _emit_assignment(ctx: _Ctx, name: str, cls: int, vs: int, ve: int, quoted: bool) -> None:
    text = ctx.text
    v = text[vs:ve]
    low = name.lower()
    if low.endswith("authorization"):
        _emit_auth_header(ctx, vs, ve, quoted)
        return
    if v.lower() == low or v.lower() in _segments(name):
        return  # "lowpass": "lowpass", an enum echoing its own name
    if low == "auth" and _basic_ok(v):
        # Docker config.json: base64 of user:password
        ctx.add(vs, ve, "basic_auth", _PRIO_CONTEXT)
        return
    flat = low.replace("_", "").replace("-", "")
    if ("aws" in flat or flat.endswith("secretaccesskey")) and _AWS_SECRET_RE.fullmatch(v):
        # Like AKIA...EXAMPLE ids, the documented example secret counts: the
        # reference floor denies it, and it is indistinguishable in shape.
        if _clean_token(v) and _char_classes(v) >= 3:
            ctx.add(vs, ve, "aws_secret_access_key", _PRIO_CONTEXT)
        return
    if not _value_ok(v, cls, quoted, low == "key"):
        return
    kind = _CLASS_KIND[cls]
    if flat.endswith("accountkey") and len(v) >= 40:
        kind = "azure_storage_key"
    elif flat.endswith("sharedaccesskey") and len(v) >= 30:
        kind = "azure_shared_access_key"
    elif flat.endswith("authtoken") and _at(text, "/:", vs - len(name) - 3):
        kind = "npm_token"
    elif cls in (_PW, _BARE_PW):
        line = text[_line_start(text, vs) : vs].lower()
        if any(k in line for k in ("server=", "data source=", "database=", "host=")):
            kind = "db_connection_string"
    ctx.add(vs, ve, kind, _PRIO_GENERIC if cls == _WEAK else _PRIO_CONTEXT)


# How far back a rule looks for the start of the line it is on: enough for the
# keys of a connection string or a .netrc entry, and a bound on hostile lines.
_LINE_BACK = 256


def _line_start(text: str, pos: int) -> int:
    lo = max(0, pos - _LINE_BACK)
    return text.rfind("\n", lo, pos) + 1 or lo


def _emit_auth_header(ctx: _Ctx, vs: int, ve: int, quoted: bool) -> None:
    """Authorization: <scheme> <credentials>, or a bare credential.

    Quoted, the scheme and the credentials are one string ("Bearer <token>").
    """
    text = ctx.text
    v = text[vs:ve]
    scheme = v.lower()
    head, space, rest = scheme.partition(" ")
    if quoted and space and head in _AUTH_SCHEMES and rest.strip(" "):
        scheme = head
        ts, te = ve - len(rest.lstrip(" ")), ve
    else:
        if scheme in _SIGNED_SCHEMES:
            return
        if scheme not in _AUTH_SCHEMES:
            if _value_ok(v, _STRONG, quoted):
                ctx.add(vs, ve, "bearer_token", _PRIO_CONTEXT)
            return
        if not text.startswith((" ", "\t"), ve):
            return
        tv = _read_value(text, ve)
        if tv is None:
            return
        ts, te, _ = tv
    tok = text[ts:te]
    if scheme == "basic":
        if _basic_ok(tok, header=True):
            ctx.add(ts, te, "basic_auth", _PRIO_CONTEXT)
    elif _value_ok(tok, _STRONG, True) or (
        len(tok) >= 16 and _HEX_RE.fullmatch(tok) is not None and not _is_placeholder(tok)
    ):
        ctx.add(ts, te, "bearer_token", _PRIO_CONTEXT)


def _basic_ok(tok: str, header: bool = False) -> bool:
    """Base64 user:password of HTTP Basic auth with a real password.

    In an Authorization header any long random value counts; elsewhere (Docker
    "auth" fields) it must decode to user:password.
    """
    if len(tok) < 8 or _has_marker(tok) or _is_reference(tok, True):
        return False
    try:
        raw = base64.b64decode(tok + "=" * (-len(tok) % 4), validate=True)
    except (binascii.Error, ValueError):
        return len(tok) >= 20 and _looks_random(tok)
    decoded = raw.decode("latin-1")
    if not decoded.isprintable():
        return header and len(tok) >= 16 and _looks_random(tok)
    user, sep, pw = decoded.partition(":")
    if not sep:
        return False
    if not pw:
        return bool(user) and user.lower() not in _PLACEHOLDER_VALUES
    return _credential_ok(user, pw)


def _pw_like(v: str) -> bool:
    return (
        len(v) >= 6 and not _is_placeholder(v) and not _is_reference(v, True) and not _is_wordy(v)
    )


# ---------------------------------------------------------------------------
# Key-name keywords, in either case
# ---------------------------------------------------------------------------

# After the keyword: the rest of the name, then one assignment form. Groups:
# 1 rest of name, 2 operator, 3 ("name", "value"), 4 <name>value</name>,
# 5 key="..." value="...", 6 name("value"), 7 name/value pairs (Kubernetes env,
# CloudFormation), 8 "kind: Secret" at the end of a line, 9 a space: .netrc
# "password X" and "sshpass -p X" (prose hits here are dropped in Python).
# The rules are written lowercase and searched for in an ASCII-lowercased copy
# of long texts, where every non-ASCII character reads as "?", while handlers
# match them in the text itself (case-insensitively); "(?:\?|[^\x00-\x7f])="
# gives the one operator containing "?" the same meaning in both.
_KW_TAIL = (
    # Possessive: the name never gives characters back, so a failed tail costs
    # one attempt per keyword instead of one per name length.
    r"([a-z0-9_.\-]{0,40}+)"
    r"(?:"
    r"([\\\"'\]`]{0,3}[ \t]{0,24}+(?:=>|:=|::=|:::=|(?:\?|[^\x00-\x7f])=|!==?|===?|=|:|<-)"
    r"[ \t]{0,4})"
    # A value of 6+ characters follows; "ns:id" lookup keys (cache "session:...") do not.
    r"(?=[fbru@]?[\\\"'`]{0,2}(?:[^\s\"'`,;:]{6}(?![^\s\"'`,;:]{0,3}:)"
    r"|(?:basic|token|bot|key|ssws)[ \t]))"
    r"|([\\\"'`],[ \t]{0,2})(?=[\"'`])"
    r"|(>)(?=[^<\s])"
    r"|([\"'][ \t]{1,4}value[ \t]{0,2}=[ \t]{0,2})"
    r"|(\([ \t]{0,3})(?=[\"'`])"
    r"|([\"']?[ \t]{0,4},?\s{0,8}[\"']?value[\"']?[ \t]{0,3}[:=][ \t]{0,3})"
    r"|([\"']?[ \t]*+(?=\r?\n|\Z))"
)


def _kw(head: str, extra: str = "") -> tuple[str, str]:
    """A keyword rule: its lowercase head and the rest of its pattern."""
    return head, "(?i:" + _KW_TAIL + extra + "))"


# "my password is X", "the token is X": what people type into a chat.
_PROSE_TAIL = r"|([ \t]{1,4}(?:is|was)[ \t]{1,4})(?=[^\s=:\-])"

# Each rule is anchored on the first letter of its head, in either case, and
# starts with letters a search can look for as one literal in a lowercased
# copy: "ke" finds token and key, "cre" secret and cred(entials).
_KW_K = _kw("ke(?:y|n(?<=token))", _PROSE_TAIL)
_KW_C = _kw("cre(?:t(?<=secret)|d)", _PROSE_TAIL)
_KW_P = _kw("p(?:ass|w)", r"|([ \t]{1,4}(?:(?:is|was)[ \t]{1,4}|-p[ \t]{0,2})?)(?=[^\s=:\-])")
_KW_U = _kw("uth(?<=auth)")
_KW_G = _kw("gin(?<=login)")
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")
_PATH_LEAD = _NAME_CHARS | frozenset(":*}])")
_NAME_KEY_RE = re.compile(r"[nN](?i:ame)[\"']?[ \t]*[:=][ \t]*[\"']?\Z", _A)
_K8S_KIND_LINE_RE = re.compile(r"[ \t]*(?i:kind):[ \t]*[\"']?(?i:secret)[\"']?[ \t]*\r?\Z", _A)


def _is_word(s: str, word: str) -> bool:
    """``s`` is ``word`` in any ASCII case (str.lower maps a few non-ASCII letters to ASCII)."""
    return len(s) == len(word) and s.isascii() and s.lower() == word


def _on_keyword(ctx: _Ctx, m: re.Match[str]) -> None:
    text = ctx.text
    name_start = m.start()
    lo = max(0, name_start - 64)
    while name_start > lo and text[name_start - 1] in _NAME_CHARS:
        name_start -= 1
    if name_start in ctx.seen or name_start < ctx.value_end:
        return
    ctx.seen.add(name_start)
    form = m.lastindex or 0
    if form == 8:
        line_start = text.rfind("\n", 0, name_start) + 1
        if _K8S_KIND_LINE_RE.match(text, line_start, m.end()) is not None:
            _k8s_secret(ctx, line_start)
        return
    prose = form == 9 and m.group(9).strip(" \t").lower() in ("is", "was")
    if form == 9 and not prose and not _spaced_credential(text, name_start, m):
        return
    name = text[name_start : m.end(1)].strip(".-")
    if not name:
        return
    before = text[name_start - 1] if name_start else ""
    if before == " " and _DOC_PARAM_RE.search(text, max(0, name_start - 40), name_start):
        return  # ":param password: the password to use" documents, not assigns
    if before == ":" and name_start > 1 and text[name_start - 2] in _PATH_LEAD:
        return  # AWS::ApiGateway::ApiKey, arn:...:secret:name (not a Ruby :symbol)
    if name.lower() == "private_key_id":
        _gcp_key_id(ctx, m.end())
        return
    cls = _classify(name)
    if cls == 0:
        return
    if prose and cls == _PW:
        cls = _BARE_PW  # "the password is correct": prose needs a value with digits or symbols
    op_end = m.end()
    if form == 3 and (before not in "\"'`" or cls == _WEAK):
        return  # ("api_token", "value") needs a quoted, clearly secret name
    if (
        form == 7
        and before not in "\"'`"
        and not _NAME_KEY_RE.search(text, max(0, name_start - 12), name_start)
    ):
        return  # "token, value = ..." is a tuple, not a name/value pair
    if form == 4:
        if before == "<":
            end = text.find("<", op_end, op_end + _LONG_VALUE + 1)
            if end > op_end:
                _emit_assignment(ctx, name, cls, op_end, end, True)
        return
    if form == 6 and not _is_setter(name):
        return  # get_secret("name"), hash_password(...): calls, not values
    rv = _read_value(text, op_end)
    if rv is None:
        return
    vs, ve, quoted = rv
    ctx.value_end = ve
    if not quoted and _CALL_RE.match(text, vs, ve) is not None:
        return  # token = tokenizer.encode(text): code, the common case in source files
    if prose and not quoted:
        while ve > vs and text[ve - 1] in ".,!?;":
            ve -= 1  # the end of the sentence, not of the password
    if not quoted and before in "?&":
        amp = text.find("&", vs, ve)
        ve = ve if amp < 0 else amp  # ?user=x&password=y&next=...
    if not quoted and _IDENT_RE.fullmatch(text, vs, ve) is not None:
        # password: str = "hunter2" (an annotation, then the value)
        am = _ANNOT_RE.match(text, ve)
        if am is not None:
            rv = _read_value(text, am.end())
            if rv is None:
                return
            vs, ve, quoted = rv
    v = text[vs:ve]
    if not quoted:
        op = text[m.start(2) : m.end(2)].strip(" \t") if form == 2 else ""
        if op.startswith(("==", "!=")):
            return  # comparisons against variables
        if op != ":" and _IDENT_RE.fullmatch(v) is not None and not _has_digit(v):
            return  # token = Whitespace: a name in code, not a value
    if form == 3 and not (quoted and (_looks_random(v, 12) or _UUID_RE.fullmatch(v))):
        return
    _emit_assignment(ctx, name, cls, vs, ve, quoted)


# Case-insensitive patterns searched in a window start with a literal or a class:
# a leading "(?i:...)" would leave re without a first-character filter.
_DOC_PARAM_RE = re.compile(
    r"(?::(?i:param|type|arg|keyword)|@(?i:param))[ \t]+(?:[\w\[\], |]{1,30} )?\Z", _A
)
_NETRC_LINE_RE = re.compile(
    r"[mMdD](?<![a-zA-Z0-9_].)(?:(?<=[mM])(?i:achine)|(?<=[dD])(?i:efault))[ \t]", _A
)


def _spaced_credential(text: str, name_start: int, m: re.Match[str]) -> bool:
    """'password' followed by a space is prose, except in .netrc and sshpass -p."""
    end = m.end(1)
    if "-p" in m.group(9).lower():
        return _is_word(text[max(0, end - 7) : end], "sshpass")
    if not _is_word(text[name_start:end], "password"):
        return False
    return _NETRC_LINE_RE.search(text, _line_start(text, name_start), name_start) is not None


def _gcp_key_id(ctx: _Ctx, pos: int) -> None:
    rv = _read_value(ctx.text, pos)
    if rv is None:
        return
    if ctx.service_account is None:
        ctx.service_account = "service_account" in ctx.text
    if not ctx.service_account:
        return
    vs, ve, _ = rv
    if ve - vs == 40 and _HEX_RE.fullmatch(ctx.text, vs, ve) is not None:
        ctx.add(vs, ve, "gcp_service_account", _PRIO_SPECIFIC)


_CLI_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,50}", _A)


def _on_cli(ctx: _Ctx, pos: int) -> None:
    """--password VALUE, --api-key=VALUE"""
    text = ctx.text
    nm = _CLI_NAME_RE.match(text, pos)
    if nm is None or not text.startswith(("=", " ", "\t"), nm.end()):
        return
    cls = _classify(nm.group(0))
    if cls == 0:
        return
    rv = _read_value(text, nm.end() + 1)
    if rv is not None and not text.startswith("-", rv[0]):
        vs, ve, quoted = rv
        _emit_assignment(ctx, nm.group(0), cls, vs, ve, quoted)


# ---------------------------------------------------------------------------
# Kubernetes Secret manifests, curl and Bundler credentials
# ---------------------------------------------------------------------------

_K8S_DATA_RE = re.compile(r"^([ \t]*)(data|stringData):[ \t]*\r?$", re.M | _A)
_K8S_ITEM_RE = re.compile(
    r"^([ \t]+)[A-Za-z0-9_.\-]{1,253}:[ \t]*"
    r"(?:([|>][-+]?)[ \t]*\r?$|[\"']?([^\s\"'#]{1,8192})[\"']?[ \t]*\r?$)",
    re.M | _A,
)


def _k8s_secret(ctx: _Ctx, kind_line: int) -> None:
    """Values under data: / stringData: of the `kind: Secret` document.

    A document is read once, however many `kind: Secret` lines it holds; the
    search for its start stops at the end of the last document read.
    """
    text = ctx.text
    if kind_line < ctx.k8s_until:
        return
    doc_start = max(text.rfind("\n---", max(0, ctx.k8s_until), kind_line), 0)
    doc_end = text.find("\n---", kind_line)
    doc_end = len(text) if doc_end < 0 else doc_end
    ctx.k8s_until = doc_end
    for dm in _K8S_DATA_RE.finditer(text, doc_start, doc_end):
        indent = len(dm.group(1).expandtabs(4))
        string_data = dm.group(2) == "stringData"
        pos = dm.end() + 1
        while pos < doc_end:
            im = _K8S_ITEM_RE.match(text, pos, doc_end)
            if im is None or len(im.group(1).expandtabs(4)) <= indent:
                break
            pos = im.end() + 1
            if im.group(2) is not None:
                pos = _k8s_block(ctx, im, pos, doc_end)
                continue
            v = im.group(3)
            ok = _value_ok(v, _PW, True) if string_data else _k8s_b64_ok(v)
            if ok:
                ctx.add(im.start(3), im.end(3), "kubernetes_secret", _PRIO_CONTEXT)


def _k8s_block(ctx: _Ctx, im: re.Match[str], pos: int, doc_end: int) -> int:
    """A block scalar value: the following lines indented deeper than its key."""
    text = ctx.text
    child = len(im.group(1).expandtabs(4))
    vs = pos
    while pos < doc_end:
        eol = text.find("\n", pos, doc_end)
        eol = doc_end if eol < 0 else eol
        line = text[pos:eol]
        if line.strip() and len(line) - len(line.lstrip(" \t")) <= child:
            break
        pos = eol + 1
    ve = min(pos, doc_end)
    if len("".join(text[vs:ve].split())) >= 12:
        ctx.add(vs, ve, "kubernetes_secret", _PRIO_CONTEXT)
    return pos


def _k8s_b64_ok(v: str) -> bool:
    try:
        raw = base64.b64decode(v, validate=True)
    except (binascii.Error, ValueError):
        return False
    return len(raw) >= 6 and not _is_placeholder(raw.decode("latin-1").strip())


_CURL = ("url(?<=curl)", r"\b")
_CURL_WORD_RE = re.compile(r"[cC][uU][rR][lL]", _A)
_CURL_USER_RE = re.compile(r"\s(?:-u|--user)(?:[ \t]{1,4}|=)", _A)


def _on_curl(ctx: _Ctx, m: re.Match[str]) -> None:
    text = ctx.text
    start = end = m.end()
    # The command runs to the end of the line, or further after "\" continuations,
    # and stops at the next curl, so that repeated commands are read once.
    limit = min(len(text), start + 4096)
    nxt = _CURL_WORD_RE.search(text, start, limit)
    limit = limit if nxt is None else nxt.start()
    while end < limit:
        nl = text.find("\n", end, limit)
        if nl < 0:
            end = limit
            break
        end = nl + 1
        if not _continued(text, nl):
            break
    for um in _CURL_USER_RE.finditer(text, start, end):
        _curl_user(ctx, um.end())


def _continued(text: str, nl: int) -> bool:
    """The line ending at ``nl`` ends in a backslash (before any carriage returns)."""
    i = nl
    while i > 0 and text[i - 1] == "\r":
        i -= 1
    return i > 0 and text[i - 1] == "\\"


def _curl_user(ctx: _Ctx, pos: int) -> None:
    text = ctx.text
    rv = _read_value(text, pos)
    if rv is None:
        return
    vs, ve, quoted = rv
    v = text[vs:ve]
    pw_span: tuple[int, int] | None = None
    if quoted and text.startswith(":", ve + 1):
        # --user "{id}":"{secret}" quotes each half.
        rv2 = _read_value(text, ve + 2)
        user = v
        if rv2 is not None:
            pw_span = rv2[0], rv2[1]
    else:
        user, sep, pw = v.partition(":")
        if not sep:
            return
        if pw:
            pw_span = vs + len(user) + 1, ve
        elif not quoted and text.startswith(("'", '"'), ve):
            # kevin:'secret' quotes only the password.
            rv2 = _read_value(text, ve)
            if rv2 is not None:
                pw_span = rv2[0], rv2[1]
        elif _pw_like(user) and len(user) >= 10 and _char_classes(user) >= 3:
            ctx.add(vs, vs + len(user), "basic_auth", _PRIO_CONTEXT)
            return
    if pw_span is not None:
        pw = text[pw_span[0] : pw_span[1]]
        braced = _BRACED_RE.fullmatch(pw)
        bare = braced.group(1) if braced is not None else pw
        if _credential_ok(user, pw) and _pw_like(bare):
            ctx.add(pw_span[0], pw_span[1], "basic_auth", _PRIO_CONTEXT)


_BUNDLE_RE = re.compile(r"BUNDLE_[A-Z0-9_]{0,60}__[A-Z0-9]{2,20}[\"']?[ \t]{0,4}[:=][ \t]{0,4}", _A)


def _on_bundle(ctx: _Ctx, start: int) -> None:
    bm = _BUNDLE_RE.match(ctx.text, start)
    if bm is None or not _left_ok(ctx.text, start, "_"):
        return
    rv = _read_value(ctx.text, bm.end())
    if rv is None:
        return
    vs, ve, _ = rv
    user, sep, pw = ctx.text[vs:ve].partition(":")
    if sep and _credential_ok(user, pw) and _pw_like(pw):
        ctx.add(vs + len(user) + 1, ve, "basic_auth", _PRIO_CONTEXT)


# ---------------------------------------------------------------------------
# Scan
# ---------------------------------------------------------------------------

_Handler = Callable[[_Ctx, re.Match[str]], None]


@dataclass(frozen=True, slots=True)
class _Pass:
    """One rule family: the characters its matches start with, its pattern, its handler."""

    anchors: str
    rx: re.Pattern[str]
    handler: _Handler
    # What the prefilter tests after the anchor: succeeds wherever ``rx`` would.
    probe: str
    # The same for an ASCII-lowercased copy, for passes anchored on a letter.
    low_probe: str | None


def _pass(
    anchors: str, rest: str, handler: _Handler, probe: str | None = None, low: str | None = None
) -> _Pass:
    head = re.escape(anchors) if len(anchors) == 1 else "[" + anchors + "]"
    rx = re.compile(head + rest, _A)
    return _Pass(anchors, rx, handler, _ungrouped(rest) if probe is None else probe, low)


def _text_pass(
    rx: re.Pattern[str], handler: _Handler, probe: str | None = None, low: str | None = None
) -> _Pass:
    """A pass from a pattern that starts with its one anchor character."""
    src = rx.pattern
    n = 2 if src.startswith("\\") else 1
    if re.escape(src[n - 1]) != src[:n] and src[:n] != src[n - 1]:
        raise ValueError(f"pattern does not start with a literal: {src[:20]!r}")
    return _pass(src[n - 1], src[n:], handler, probe, low)


def _word_pass(rule: tuple[str, str], handler: _Handler) -> _Pass:
    """A case-insensitive pass from a lowercase head and the rest of its pattern.

    The head is letters and group syntax only, so spelling each letter as a
    two-case class is exact; ``low_probe`` is the rule as written, for the
    lowercased copy.
    """
    head, rest = rule
    if re.fullmatch(r"[a-z][a-z()?:<=|]*", head) is None:
        raise ValueError(f"keyword head must be lowercase letters and groups: {head!r}")
    cased = re.sub("[a-z]", lambda m: f"[{m[0]}{m[0].upper()}]", head[1:])
    return _pass(head[0] + head[0].upper(), cased + rest, handler, low=head[1:] + rest)


def _ungrouped(src: str) -> str:
    """``src`` with capturing groups made non-capturing (the prefilter needs none)."""
    out: list[str] = []
    i, in_class = 0, False
    while i < len(src):
        c = src[i]
        if c == "\\":
            out.append(src[i : i + 2])
            i += 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
            # "]" right after "[" or "[^" is a member, not the end of the class.
            j = i + 1 + (src.startswith("^", i + 1))
            if src.startswith("]", j):
                out.append(src[i : j + 1])
                i = j + 1
                continue
        elif c == "(" and not src.startswith("?", i + 1):
            c = "(?:"
        out.append(c)
        i += 1
    return "".join(out)


# In the order the passes used to run one after another: when two findings have
# the same span and priority, the earlier pass's kind is reported, as before.
_PASSES: tuple[_Pass, ...] = (
    _text_pass(_UNDER_RE, _on_prefix, _UNDER_PROBE),
    _text_pass(_DASH_RE, _on_dash, _DASH_PROBE),
    _text_pass(_DOT_RE, _on_dot, _DOT_PROBE),
    _text_pass(_A_RE, _on_a),
    _text_pass(_JWT_PASS_RE, _on_jwt),
    _text_pass(_BEGIN_RE, _on_begin),
    _text_pass(_TILDE_RE, _on_tilde),
    _text_pass(_PIPE_RE, _on_pipe),
    # Also looked for with the keywords, in the lowercased copy: lowercase
    # versions of their patterns find at least what they find.
    _text_pass(_GITLAB_RUNNER_RE, _on_glued, low=r"r1348941[a-z0-9_-]{20,50}(?![a-z0-9_-])"),
    _text_pass(_DAPI_PASS_RE, _on_dapi, low=r"i(?<=dapi)"),
    _text_pass(_TWILIO_RE, _on_glued),
    _text_pass(_COLON_RE, _on_colon, _COLON_PROBE),
    _text_pass(_EQ_RE, _on_eq, _EQ_PROBE),
    _word_pass(_KW_K, _on_keyword),
    _word_pass(_KW_C, _on_keyword),
    _word_pass(_KW_P, _on_keyword),
    _word_pass(_KW_U, _on_keyword),
    _word_pass(_KW_G, _on_keyword),
    _word_pass(_CURL, _on_curl),
)


def _probe(passes: tuple[int, ...]) -> str:
    return "|".join(_PASSES[i].probe for i in passes)


def _anchor_table() -> dict[str, tuple[int, ...]]:
    by_anchor: dict[str, list[int]] = {}
    for i, p in enumerate(_PASSES):
        for anchor in p.anchors:
            by_anchor.setdefault(anchor, []).append(i)
    return {k: tuple(v) for k, v in by_anchor.items()}


# The passes anchored on each character. A hit is handed to all of them: each
# runs its own pattern there, so the probes need only be supersets.
_BY_ANCHOR = _anchor_table()

# Short texts: one pattern. Each alternative is one anchor character and the
# probes of its passes; every alternative starts with a plain literal, so re
# scans for the set of anchor characters in C and enters a branch only there.
# Probes may consume text: the scan restarts one character after each hit.
_PREFILTER = re.compile(
    "|".join(f"{re.escape(a)}(?:{_probe(passes)})" for a, passes in _BY_ANCHOR.items()), _A
)

# Longer texts: one pattern per anchor character instead. re looks for a set
# of characters at about 6.5 ns per character however small the set, but for
# one leading literal at about 0.4 ns, and an anchor found that way skips the
# other alternatives' tests; above several hundred characters that outweighs
# the fixed cost of a dozen calls (1.6x faster on 4 KB of prose, 1.3x on the
# 1 MB benchmark text; characters absent from the text cost one memchr).
# Passes anchored on letters are looked for in an ASCII-lowercased copy, one
# search per letter for both cases, with their lowercase probes (``low_probe``).
_LOWERED = "kcpug"


def _lower_search(letter: str) -> tuple[bytes, re.Pattern[bytes], tuple[int, ...]]:
    passes = tuple(i for i, p in enumerate(_PASSES) if letter in p.anchors.lower())
    probes: list[str] = []
    for i in passes:
        low = _PASSES[i].low_probe
        if low is None:
            raise ValueError(f"pass {i} is anchored on {letter!r} but has no lowercase probe")
        probes.append(_ungrouped(low))
    return letter.encode(), re.compile(f"{letter}(?:{'|'.join(probes)})".encode()), passes


_TEXT_SEARCHES: tuple[tuple[str, re.Pattern[str], tuple[int, ...]], ...] = tuple(
    (a, re.compile(f"{re.escape(a)}(?:{_probe(passes)})", _A), passes)
    for a, passes in _BY_ANCHOR.items()
    if a.lower() not in _LOWERED
)
_LOWER_SEARCHES = tuple(_lower_search(letter) for letter in _LOWERED)
# Text length from which the searches per anchor beat the single pattern: the
# crossover measured on prose, logs, code and agent conversations lies between
# about 500 and 1000 characters.
_SPLIT_AT = 768


def _candidates(text: str) -> dict[int, list[int]]:
    """For each pass, in increasing order, the positions where its probe matches."""
    found: dict[int, list[int]] = {}
    if len(text) < _SPLIT_AT:
        search = _PREFILTER.search
        m = search(text)
        while m is not None:
            pos = m.start()
            for i in _BY_ANCHOR[text[pos]]:
                found.setdefault(i, []).append(pos)
            m = search(text, pos + 1)
        return found
    # Each pass is looked for by exactly one of these searches.
    for anchor, rx, passes in _TEXT_SEARCHES:
        if anchor in text and (positions := _starts(rx, text)):
            found.update(dict.fromkeys(passes, positions))
    # Non-ASCII becomes "?", so the copy keeps the offsets of ``text``.
    low = text.encode("ascii", "replace").lower()
    for letter, lrx, passes in _LOWER_SEARCHES:
        if letter in low and (positions := _starts(lrx, low)):
            found.update(dict.fromkeys(passes, positions))
    return found


def _starts(rx: re.Pattern[AnyStr], subject: AnyStr) -> list[int]:
    """Every position where `rx` matches, overlapping matches included."""
    positions = []
    search = rx.search
    m = search(subject)
    while m is not None:
        pos = m.start()
        positions.append(pos)
        m = search(subject, pos + 1)
    return positions


def _resolve(hits: list[tuple[int, int, str, int]]) -> list[Finding]:
    # A hit inside one at least as specific (same value seen by a vendor rule and
    # by the generic assignment rule) is reported once; partial overlaps are all
    # kept, since redaction needs their union.
    hits.sort(key=lambda h: (h[0], -h[1], -h[3]))
    reach = [-1] * (_PRIO_SPECIFIC + 1)  # furthest end kept so far, per priority
    kept: list[tuple[int, int, str, int]] = []
    for h in hits:
        if max(reach[h[3] :]) >= h[1]:
            continue  # every kept hit starts at or before h, so this one contains it
        reach[h[3]] = max(reach[h[3]], h[1])
        kept.append(h)
    return [Finding(kind, s, e) for s, e, kind, _ in kept]


def scan(text: str) -> list[Finding]:
    """Findings for every concrete secret in ``text``, in order of position."""
    if len(text) < 8:
        return []
    found = _candidates(text)
    if not found:
        return []
    ctx = _Ctx(text, [], set())
    # Pass by pass, each handler sees what a finditer of its own pattern would
    # return: its matches in order, none overlapping the one before.
    for i in sorted(found):
        match, handler = _PASSES[i].rx.match, _PASSES[i].handler
        ctx.value_end = last_end = -1
        for pos in found[i]:
            if pos >= last_end:
                m = match(text, pos)
                if m is not None:
                    last_end = m.end()
                    handler(ctx, m)
    return _resolve(ctx.hits) if ctx.hits else []


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
