"""The configuration schema: `gateway.yaml` and `teams/<team>.yaml`.

Every model forbids unknown keys, so a typo is an error that names its key
path instead of a setting that silently does nothing. Secrets never appear
inline: the YAML names environment variables that hold them.
"""

from __future__ import annotations

import ipaddress
import re
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from yarl import URL

from gateway.guard import rx
from gateway.guard.detectors.secrets import KINDS
from gateway.guard.verdict import check_rules, is_pinned_model

Flavor = Literal["openai", "anthropic"]

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_UPSTREAM_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,62}$")

_URL = re.compile(r"^https?://[^/\s?#]+(/[^\s?#]*)?$")
_RESERVED = frozenset({"healthz", "readyz", "metrics", "admin", "a2a", "a2a-in", "reef"})

EnvName = Annotated[str, Field(pattern=_ENV_NAME.pattern, max_length=128)]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Listen(Strict):
    host: str = "127.0.0.1"
    port: int = Field(default=8787, ge=0, le=65535)


class Upstream(Strict):
    base_url: str
    # Which provider's error shape and credential header this upstream uses.
    # Inferred from the name or host when left out.
    flavor: Flavor | None = None
    # Key custody: the gateway holds the provider key and agents only hold
    # gateway-issued keys.
    api_key_env: EnvName | None = None
    connect_timeout_s: float = Field(default=10.0, gt=0, le=300)
    # Time allowed between bytes from the upstream: reasoning models can think
    # for minutes before the first token.
    read_timeout_s: float = Field(default=600.0, gt=0, le=3600)
    # Secret kinds the agent's own credential header may carry to this upstream
    # (its provider's key format); default by flavor. Any other secret in it,
    # such as another provider's key, is denied like a secret anywhere else.
    key_kinds: list[str] | None = None

    @field_validator("key_kinds")
    @classmethod
    def _known_kinds(cls, value: list[str] | None) -> list[str] | None:
        for kind in value or ():
            if kind not in KINDS:
                raise ValueError(f"unknown secret kind {kind!r}")
        return value

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        if not _URL.match(value):
            raise ValueError("must be an http:// or https:// URL without query or fragment")
        if "@" in value.split("://", 1)[1].split("/", 1)[0]:
            # The reverse proxy would not send them, and a URL is often logged.
            raise ValueError(
                "must not hold credentials (user:password@); give the provider key with api_key_env"
            )
        try:
            host = URL(value, encoded=True).raw_host
        except ValueError as exc:
            raise ValueError(f"is not a valid URL: {exc}") from exc
        if not host:
            raise ValueError("must name a host")
        return value.rstrip("/")

    def resolved_flavor(self, name: str) -> Flavor:
        if self.flavor is not None:
            return self.flavor
        return "anthropic" if "anthropic" in name or "anthropic" in self.base_url else "openai"

    def resolved_key_kinds(self, name: str) -> frozenset[str]:
        if self.key_kinds is not None:
            return frozenset(self.key_kinds)
        flavor = self.resolved_flavor(name)
        return frozenset({"anthropic_api_key" if flavor == "anthropic" else "openai_api_key"})


class Limits(Strict):
    max_body_bytes: int = Field(default=32 * 1024 * 1024, ge=1024, le=1024 * 1024 * 1024)
    # Open connections to all upstreams together; streamed answers hold one each.
    upstream_connections: int = Field(default=4096, ge=1, le=1_000_000)
    # Time a request's inspection may take (parsing, detectors, classifier);
    # past it the request is denied as guard_failure, never forwarded.
    inspect_timeout_ms: int = Field(default=15_000, ge=100, le=600_000)
    # Time allowed between bytes of a request body; past it the client gets 408.
    body_read_timeout_s: float = Field(default=30.0, gt=0, le=3600)
    # On SIGTERM or SIGINT: time requests and streams in flight get to finish
    # (no new connection is accepted meanwhile); past it they are cut.
    drain_timeout_s: float = Field(default=30.0, ge=0, le=3600)


class ScanHeaders(Strict):
    """Request headers are scanned like the body; these are left alone (names, any case)."""

    skip: list[str] = Field(default_factory=list)

    @field_validator("skip")
    @classmethod
    def _lower(cls, value: list[str]) -> list[str]:
        return [name.strip().lower() for name in value]


class Audit(Strict):
    path: Path = Path("var/audit.jsonl")
    # fsync every record before its answer leaves: survives a machine crash,
    # at the cost of one fsync per group of entries written together.
    fsync: bool = False
    # The key of the HMAC that fingerprints found secrets: an environment
    # variable holding at least 32 characters, else a key file (created with
    # mode 0600 at first start; default: fingerprint.key beside the audit log).
    fingerprint_key_env: EnvName | None = None
    fingerprint_key_file: Path | None = None

    def key_file(self) -> Path:
        if self.fingerprint_key_file is not None:
            return self.fingerprint_key_file
        return self.path.with_name("fingerprint.key")


class Cache(Strict):
    size: int = Field(default=50_000, ge=0, le=10_000_000)
    ttl_s: float = Field(default=3600.0, gt=0, le=30 * 86400)


ProviderName = Literal["none", "openai", "anthropic", "openai-compatible"]

_PROVIDER_BASE_URL = {"openai": "https://api.openai.com", "anthropic": "https://api.anthropic.com"}


class Classifier(Strict):
    """An optional LLM classifier; `none` keeps the embedded deterministic guard."""

    provider: ProviderName = "none"
    base_url: str | None = None
    pinned_model: str | None = None
    api_key_env: EnvName | None = None
    timeout_ms: int = Field(default=10_000, ge=100, le=120_000)
    # Classifications of one request's segments that run at once.
    max_concurrency: int = Field(default=8, ge=1, le=256)

    @model_validator(mode="after")
    def _complete(self) -> Classifier:
        if self.provider == "none":
            return self
        if not self.pinned_model:
            raise ValueError(f"provider {self.provider} needs pinned_model")
        if not is_pinned_model(self.pinned_model):
            raise ValueError(
                f"pinned_model {self.pinned_model!r} is not pinned: use a dated snapshot "
                "(ending -YYYYMMDD or -YYYY-MM-DD) or a documented immutable id; "
                "a bare alias can change behind the same name"
            )
        if self.provider != "openai-compatible" and not self.api_key_env:
            raise ValueError(f"provider {self.provider} needs api_key_env")
        if self.base_url is None and self.provider == "openai-compatible":
            raise ValueError("provider openai-compatible needs base_url")
        if self.base_url is not None and not _URL.match(self.base_url):
            raise ValueError("base_url must be an http:// or https:// URL")
        return self

    def resolved_base_url(self) -> str:
        url = self.base_url or _PROVIDER_BASE_URL.get(self.provider, "")
        return url.rstrip("/")


class Guard(Strict):
    policy_version: str = Field(default="reef-v1", min_length=1, max_length=128)
    classifier: Classifier = Classifier()
    cache: Cache = Cache()


HoldMode = Literal["wait", "ticket"]
_STORE_URL = re.compile(r"^(sqlite:///.+|postgres(ql)?://.+)$")


class Review(Strict):
    """The review gate: where held requests live and how the agent waits for them."""

    # sqlite:///relative/path, sqlite:////absolute/path or postgresql://...
    store: str = "sqlite:///var/reviews.sqlite3"
    # ticket: answer 403 review_pending at once; wait: hold the request open
    # until a decision or hold_timeout_s, then answer as ticket does.
    hold: HoldMode = "ticket"
    hold_timeout_s: float = Field(default=60.0, ge=0, le=3600)
    # Pending reviews a team may have at once; past it, deny (review_capacity).
    max_pending: int = Field(default=100, ge=1, le=1_000_000)

    @field_validator("store")
    @classmethod
    def _store_url(cls, value: str) -> str:
        if not _STORE_URL.match(value):
            raise ValueError("must be sqlite:///<path> or postgresql://...")
        return value


class TeamReview(Strict):
    """A team's overrides of gateway.yaml's review settings."""

    store: str | None = None
    hold: HoldMode | None = None
    hold_timeout_s: float | None = Field(default=None, ge=0, le=3600)
    max_pending: int | None = Field(default=None, ge=1, le=1_000_000)

    @field_validator("store")
    @classmethod
    def _store_url(cls, value: str | None) -> str | None:
        return None if value is None else Review._store_url(value)

    def over(self, base: Review) -> Review:
        changes = self.model_dump(exclude_none=True)
        return base.model_copy(update=changes) if changes else base


class AdminListen(Strict):
    host: str = "127.0.0.1"
    port: int = Field(default=8789, ge=0, le=65535)


class Admin(Strict):
    """The reviewers' listener: never the agents' port."""

    listen: AdminListen = AdminListen()
    # Env var holding the admin token, which may see and decide every team's reviews.
    token_env: EnvName | None = None


class Reviewers(Strict):
    # Env vars holding tokens of this team's reviewers: they see and decide
    # this team's reviews only.
    tokens_env: list[EnvName] = Field(default_factory=list)


class Breaker(Strict):
    """The circuit breaker on tool calls, per agent turn (the guardian seed's thresholds)."""

    consecutive: int = Field(default=3, ge=1, le=1000)
    window: int = Field(default=50, ge=1, le=10_000)
    window_denials: int = Field(default=10, ge=1, le=10_000)
    # Turns remembered at once, and for how long after their last judgement.
    max_turns: int = Field(default=100_000, ge=1, le=10_000_000)
    ttl_s: float = Field(default=3600.0, gt=0, le=7 * 86400)

    @model_validator(mode="after")
    def _fits(self) -> Breaker:
        if self.window_denials > self.window:
            raise ValueError("window_denials cannot exceed window")
        return self


class Guardian(Strict):
    """How the calls a model asks the agent to run are judged before the agent sees them."""

    # An optional LLM guardian after the deterministic one; `none` keeps only
    # the deterministic rules. Pinned like the guard's classifier.
    classifier: Classifier = Classifier()
    breaker: Breaker = Breaker()
    # Characters of model text held back when a team redacts output: a secret
    # up to this long is caught however it is split across chunks.
    redact_window: int = Field(default=256, ge=64, le=65_536)


_HOST_PATTERN = re.compile(r"^(\*\.)?[A-Za-z0-9]([A-Za-z0-9.-]{0,251}[A-Za-z0-9])?$")


class ForwardListen(Strict):
    host: str = "127.0.0.1"
    port: int = Field(default=8788, ge=0, le=65535)


class ForwardProxy(Strict):
    """The HTTP proxy agents reach through HTTPS_PROXY: interception and egress control."""

    enabled: bool = False
    listen: ForwardListen = ForwardListen()
    # Host name -> upstream name: CONNECTs to these hosts are decrypted with a
    # leaf certificate from the gateway's CA and their requests take the
    # reverse proxy's path to that upstream.
    intercept: dict[str, str] = Field(default_factory=dict)
    # What happens to a CONNECT or plain http:// request for any other host:
    # tunnel it (only if it is in `allow`) or refuse it.
    egress: Literal["tunnel", "deny"] = "deny"
    # Host patterns (exact, or *.example.com for its subdomains) a tunnel may reach.
    allow: list[str] = Field(default_factory=list)
    ca_dir: Path = Path("var/ca")
    # Lifetime of minted leaf certificates, and how many are kept.
    leaf_validity_hours: float = Field(default=24.0, gt=0, le=24 * 30)
    leaf_cache_size: int = Field(default=1024, ge=1, le=100_000)

    @field_validator("intercept")
    @classmethod
    def _hosts(cls, value: dict[str, str]) -> dict[str, str]:
        out = {}
        for host, upstream in value.items():
            if not _HOST_PATTERN.match(host) or host.startswith("*."):
                raise ValueError(f"intercept host {host!r} must be a plain host name")
            out[host.lower()] = upstream
        return out

    @field_validator("allow")
    @classmethod
    def _patterns(cls, value: list[str]) -> list[str]:
        for pattern in value:
            if not _HOST_PATTERN.match(pattern):
                raise ValueError(f"allow pattern {pattern!r} must be a host or *.domain")
        return [p.lower() for p in value]


class Logging(Strict):
    # text: human-readable lines; json: one JSON object per line, with the
    # request id where there is one.
    format: Literal["text", "json"] = "text"
    level: Literal["debug", "info", "warning", "error"] = "info"


class A2APeer(Strict):
    """A remote agent reached at /a2a/<peer>: its JSON-RPC endpoint."""

    url: str
    timeout_s: float = Field(default=300.0, gt=0, le=3600)

    @field_validator("url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        if not _URL.match(value):
            raise ValueError("must be an http:// or https:// URL without query or fragment")
        return value


class A2AInbound(Strict):
    """The local agent's own A2A server, reached by peers through /a2a-in/."""

    local_agent: str

    @field_validator("local_agent")
    @classmethod
    def _http_url(cls, value: str) -> str:
        return A2APeer._http_url(value)


class Peers(Strict):
    a2a: dict[str, A2APeer] = Field(default_factory=dict)
    a2a_inbound: A2AInbound | None = None

    @field_validator("a2a")
    @classmethod
    def _names(cls, value: dict[str, A2APeer]) -> dict[str, A2APeer]:
        for name in value:
            if not _UPSTREAM_NAME.match(name):
                raise ValueError(
                    f"peer name {name!r} must be lowercase letters, digits, '-' or '_'"
                )
        return value


_REEF_PEER = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,62}#[1-9][0-9]{0,15}$")
_REEF_HANDLE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$")
_B64URL_KEY = re.compile(r"^[A-Za-z0-9_-]{43}$")


class ReefPeerKeys(Strict):
    """A pinned peer's public keys, base64url without padding (43 characters each)."""

    ed25519: str
    x25519: str

    @field_validator("ed25519", "x25519")
    @classmethod
    def _key(cls, value: str) -> str:
        if not _B64URL_KEY.match(value):
            raise ValueError("must be a 32-byte key in base64url without padding (43 characters)")
        return value


class Reef(Strict):
    """The gateway as the agent's Reef endpoint: it holds the claw's keys (custody)."""

    # Where the relay is; without it the endpoint is off.
    relay_url: str | None = None
    # Identity (private keys mode 0600), pinned peers, replay and inbox stores, audit key.
    state_dir: Path = Path("var/reef")
    # This claw's handle; `reefgate reef init --handle H` makes its identity.
    handle: str | None = None
    # Pinned peers, `handle#epoch` -> keys (added to those in state_dir/peers.json).
    peers: dict[str, ReefPeerKeys] = Field(default_factory=dict)
    # The team whose policy checks inbound messages (default: the default team).
    team: str | None = None
    # Pull backoff: from poll_min_s doubling to poll_max_s while idle or failing.
    poll_min_s: float = Field(default=0.25, gt=0, le=60)
    poll_max_s: float = Field(default=30.0, gt=0, le=3600)
    # Listen on the relay's WebSocket (/v1/mail/ws) for new mail; polling stays the fallback.
    websocket: bool = True

    @field_validator("relay_url")
    @classmethod
    def _relay(cls, value: str | None) -> str | None:
        if value is not None and not _URL.match(value):
            raise ValueError("must be an http:// or https:// URL without query or fragment")
        return value

    @field_validator("handle")
    @classmethod
    def _handle(cls, value: str | None) -> str | None:
        if value is not None and not _REEF_HANDLE.match(value):
            raise ValueError("must be 1-63 of [A-Za-z0-9_-], starting alphanumeric")
        return value

    @field_validator("peers")
    @classmethod
    def _peers(cls, value: dict[str, ReefPeerKeys]) -> dict[str, ReefPeerKeys]:
        for name in value:
            if not _REEF_PEER.match(name):
                raise ValueError(f"peer {name!r} must be handle#epoch")
        return value


class PeerProtocols(Strict):
    reef: Reef = Reef()


class GatewayConfig(Strict):
    listen: Listen = Listen()
    upstreams: dict[str, Upstream] = Field(
        default_factory=lambda: {
            "openai": Upstream(base_url="https://api.openai.com"),
            "anthropic": Upstream(base_url="https://api.anthropic.com"),
        }
    )
    limits: Limits = Limits()
    scan_headers: ScanHeaders = ScanHeaders()
    audit: Audit = Audit()
    guard: Guard = Guard()
    review: Review = Review()
    admin: Admin = Admin()
    guardian: Guardian = Guardian()
    forward_proxy: ForwardProxy = ForwardProxy()
    logging: Logging = Logging()
    # Agent-to-agent traffic in plaintext protocols (A2A), guarded both ways.
    peers: Peers = Peers()
    # Claw-to-claw peers the gateway is the endpoint for (Reef), guarded both ways.
    peer: PeerProtocols = PeerProtocols()

    @field_validator("upstreams")
    @classmethod
    def _names(cls, value: dict[str, Upstream]) -> dict[str, Upstream]:
        for name in value:
            if name in _RESERVED:
                raise ValueError(
                    f"upstream name {name!r} is reserved for the gateway's own endpoints"
                )
            if not _UPSTREAM_NAME.match(name):
                raise ValueError(
                    f"upstream name {name!r} must be lowercase letters, digits, '-' or '_'"
                )
        return value

    @model_validator(mode="after")
    def _intercepted_upstreams(self) -> GatewayConfig:
        for host, upstream in self.forward_proxy.intercept.items():
            if upstream not in self.upstreams:
                raise ValueError(
                    f"forward_proxy.intercept.{host}: no upstream named {upstream!r} "
                    f"(configured: {', '.join(self.upstreams)})"
                )
        return self


class Match(Strict):
    # Names of environment variables whose values are gateway-issued keys that
    # agents of this team send as their API key.
    keys_env: list[EnvName] = Field(default_factory=list)
    # Header name -> exact value; every listed header must match.
    headers: dict[str, str] = Field(default_factory=dict)
    source_cidrs: list[str] = Field(default_factory=list)

    @field_validator("source_cidrs")
    @classmethod
    def _cidrs(cls, value: list[str]) -> list[str]:
        for cidr in value:
            ipaddress.ip_network(cidr, strict=False)
        return value

    @field_validator("headers")
    @classmethod
    def _header_names(cls, value: dict[str, str]) -> dict[str, str]:
        return {name.lower(): v for name, v in value.items()}


class Credential(Strict):
    api_key_env: EnvName


class Rules(Strict):
    """Operator rules: trusted policy text that goes into the classifier's instructions.

    Kept exactly as written (not trimmed): the text is part of the policy identity.
    """

    outbound: str | None = None
    inbound: str | None = None

    @field_validator("outbound", "inbound")
    @classmethod
    def _size(cls, value: str | None) -> str | None:
        check_rules(value)
        return value


class TeamGuard(Strict):
    classifier: Classifier | None = None


class Inbound(Strict):
    """Which untrusted text gets the inbound (prompt-injection) check besides tool results."""

    documents: bool = True
    model_output: bool = False


class Tools(Strict):
    """A team's tool policy by tool name (shell-style patterns, case-sensitive)."""

    # Released without assessment.
    allow: list[str] = Field(default_factory=list)
    # Always replaced by a denial.
    deny: list[str] = Field(default_factory=list)
    # Held for a reviewer of the team, like a request the guard sends to review.
    review: list[str] = Field(default_factory=list)
    # Hosts local data may be sent to (exact, or *.example.com).
    allowed_hosts: list[str] = Field(default_factory=list)
    # Directories the agent works in: destructive commands inside them are routine.
    workspace: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _disjoint(self) -> Tools:
        lists = {"allow": self.allow, "deny": self.deny, "review": self.review}
        seen: dict[str, str] = {}
        for name, patterns in lists.items():
            for pattern in patterns:
                if pattern in seen and seen[pattern] != name:
                    raise ValueError(f"tool {pattern!r} is in both {seen[pattern]} and {name}")
                seen[pattern] = name
        return self


# A credential path: dotted keys and [*] (any index) or [N], e.g. tools[*].headers.
_CREDENTIAL_PATH = re.compile(r"^[A-Za-z_][\w-]*(?:\[(?:\*|\d+)\]|\.(?:[A-Za-z_][\w-]*|\*))*$")
_CUSTOM_KIND = re.compile(r"^[a-z][a-z0-9_]{0,62}$")
_FINGERPRINT = re.compile(r"^[0-9a-f]{16}$")


def _linear(pattern: str) -> str:
    """A regex an operator wrote, refused unless RE2 (linear time) can run it."""
    try:
        rx.compile(pattern)
    except rx.PatternError as exc:
        raise ValueError(f"{exc}; patterns run on RE2, which guarantees linear time") from exc
    return pattern


class CredentialPath(Strict):
    # Where in the request JSON an intentional credential may go upstream.
    path: str = Field(pattern=_CREDENTIAL_PATH.pattern, max_length=300)
    # Only these kinds are allowed there; any other finding still denies.
    kinds: list[str] = Field(min_length=1)
    # Only to these upstreams (every upstream the team may use when omitted).
    upstreams: list[str] | None = None

    @field_validator("kinds")
    @classmethod
    def _known(cls, value: list[str]) -> list[str]:
        for kind in value:
            if kind not in KINDS:
                raise ValueError(f"unknown secret kind {kind!r}")
        return value


class Allow(Strict):
    """Findings a team lets through, each audited as allowed with the rule that allowed it."""

    # Fingerprints as the audit writes them (16 hex digits).
    fingerprints: list[Annotated[str, Field(pattern=_FINGERPRINT.pattern)]] = Field(
        default_factory=list
    )
    # Regexes that must match the whole secret value (a provider's documented example key).
    patterns: list[str] = Field(default_factory=list)
    credential_paths: list[CredentialPath] = Field(default_factory=list)

    @field_validator("patterns")
    @classmethod
    def _linear_patterns(cls, value: list[str]) -> list[str]:
        return [_linear(p) for p in value]


class CustomRule(Strict):
    # A kind of its own: a project codename, an internal hostname, a customer id format.
    kind: str = Field(pattern=_CUSTOM_KIND.pattern)
    pattern: str = Field(min_length=1, max_length=4096)
    decision: Literal["deny", "review"] = "deny"

    @field_validator("pattern")
    @classmethod
    def _linear_pattern(cls, value: str) -> str:
        _linear(value)
        if rx.compile(value).search("") is not None:
            raise ValueError("the pattern matches the empty string, so it would match every text")
        return value


class Detectors(Strict):
    custom: list[CustomRule] = Field(default_factory=list)

    @field_validator("custom")
    @classmethod
    def _distinct(cls, value: list[CustomRule]) -> list[CustomRule]:
        kinds = [rule.kind for rule in value]
        for kind in kinds:
            if kinds.count(kind) > 1:
                raise ValueError(f"custom rule kind {kind!r} appears twice")
            if kind in KINDS:
                raise ValueError(f"custom rule kind {kind!r} is a built-in secret kind")
        return value


class Outbound(Strict):
    # deny: a request holding a secret is refused. redact: it goes upstream with
    # each secret replaced by [REDACTED:<kind>].
    on_secret: Literal["deny", "redact"] = "deny"


class Team(Strict):
    default: bool = False
    match: Match = Match()
    # Upstream names this team may use; None allows every configured upstream.
    upstreams: list[str] | None = None
    # Key custody per upstream for this team; overrides the upstream's own.
    credentials: dict[str, Credential] = Field(default_factory=dict)
    guard: TeamGuard = TeamGuard()
    rules: Rules = Rules()
    inbound: Inbound = Inbound()
    review: TeamReview = TeamReview()
    reviewers: Reviewers = Reviewers()
    tools: Tools = Tools()
    # Replace secrets the deterministic floor finds in model output with
    # [REDACTED:<kind>] before the agent sees them.
    redact_output: bool = False
    allow: Allow = Allow()
    detectors: Detectors = Detectors()
    outbound: Outbound = Outbound()

    @model_validator(mode="after")
    def _has_a_way_in(self) -> Team:
        m = self.match
        if not (self.default or m.keys_env or m.headers or m.source_cidrs):
            raise ValueError("a team needs default: true or at least one match rule")
        return self
