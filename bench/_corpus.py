"""Deterministic, seeded text for the benchmarks: code, logs, prose, agent turns.

Nothing here is a real secret. The clean generators must produce text the
secret detector has no business flagging (ids, hashes, UUIDs, `$VAR`
references are there on purpose: tool output is full of them); `secret()`
makes well-formed fake credentials to sprinkle in.
"""

from __future__ import annotations

import base64
import json
import random
import string
from collections.abc import Callable

SEED = 20240611


def _word_list(text: str) -> list[str]:
    return text.split()


_WORDS = _word_list(
    """
the a of to and in is it that for on with as this be are by from at or an was
request response server client cache retry timeout handler queue worker thread
config value result error warning record table column index query schema user
account order invoice payment customer report build deploy release branch commit
merge review test suite fixture mock module package function method class object
field parameter argument return yield async await future task event stream
buffer file path directory folder line offset length count total limit window
batch latency throughput memory budget policy rule check verdict gateway
upstream model prompt message reply summary context history agent tool call
output input text should would could must will may might can need want try use
make keep read write open close start stop send receive parse format validate
compute update delete create fetch load store save move copy sort filter merge
split join match replace quickly carefully again already still only also just
even never always often because although while when where which after before
during until since unless
"""
)

_IDENT_PARTS = _word_list(
    """
user order item cache conn session token_count retry backoff page row col idx
buf chunk frame payload header body status code msg err ctx cfg opts args kwargs
total size limit offset start end path name key_name value_list result node tree
parent child left right head tail queue stack pool lock event handler worker job
"""
)

_SERVICES = ["api", "worker", "scheduler", "billing", "search", "auth-proxy", "ingest"]
_LEVELS = ["INFO", "INFO", "INFO", "DEBUG", "WARN", "ERROR"]
_METHODS = ["GET", "GET", "POST", "PUT", "DELETE"]
_ROUTES = ["/api/v1/items", "/api/v1/users", "/healthz", "/api/v2/orders", "/search", "/login"]
_HEX = "0123456789abcdef"


def _sentence(rng: random.Random, lo: int = 6, hi: int = 18) -> str:
    words = rng.choices(_WORDS, k=rng.randint(lo, hi))
    return words[0].capitalize() + " " + " ".join(words[1:]) + rng.choice(".....?!")


def prose(rng: random.Random, sentences: int) -> str:
    return " ".join(_sentence(rng) for _ in range(sentences))


def _ident(rng: random.Random) -> str:
    return "_".join(rng.choices(_IDENT_PARTS, k=rng.randint(1, 3)))


def _hex(rng: random.Random, n: int) -> str:
    return "".join(rng.choices(_HEX, k=n))


def _uuid(rng: random.Random) -> str:
    h = _hex(rng, 32)
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-a{h[17:20]}-{h[20:]}"


def code(rng: random.Random) -> str:
    """A Python function with a docstring, comments, an env reference and a commit id."""
    name = _ident(rng)
    args = ", ".join(_ident(rng) for _ in range(rng.randint(1, 4)))
    lines = [
        f"def {name}({args}) -> dict[str, object]:",
        f'    """{_sentence(rng)}"""',
        f"    # {_sentence(rng, 4, 10)}",
    ]
    for _ in range(rng.randint(3, 10)):
        var = _ident(rng)
        kind = rng.randrange(6)
        if kind == 0:
            lines.append(f"    {var} = {_ident(rng)}.get({_ident(rng)!r}, {rng.randint(0, 999)})")
        elif kind == 1:
            lines.append(f"    if {var} is None or len({var}) > {rng.randint(1, 4096)}:")
            lines.append(f"        raise ValueError(f'{_sentence(rng, 3, 6)} {{{var}!r}}')")
        elif kind == 2:
            lines.append(f'    {var} = os.environ.get("{_ident(rng).upper()}_URL", "")')
        elif kind == 3:
            lines.append(f"    for {var} in range({rng.randint(2, 64)}):")
            lines.append(f"        log.debug('{_sentence(rng, 3, 7)} %s', {var})")
        elif kind == 4:
            lines.append(f"    # see commit {_hex(rng, 40)}")
        else:
            call = f"client.fetch({_ident(rng)}, timeout={rng.randint(1, 30)})"
            lines.append(f"    {var} = await {call}")
    lines.append(f"    return {{{_ident(rng)!r}: {_ident(rng)}}}")
    return "\n".join(lines) + "\n"


def log_lines(rng: random.Random, n: int) -> str:
    out = []
    for _ in range(n):
        ts = (
            f"2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}T"
            f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}."
            f"{rng.randint(0, 999):03d}Z"
        )
        svc = rng.choice(_SERVICES)
        kind = rng.randrange(4)
        if kind == 0:
            out.append(
                f"{ts} {rng.choice(_LEVELS)} [{svc}-{rng.randint(0, 9)}] request_id={_uuid(rng)} "
                f"{rng.choice(_METHODS)} {rng.choice(_ROUTES)}/{rng.randint(1, 99999)} "
                f"{rng.choice([200, 200, 201, 204, 404, 500])} {rng.uniform(0.2, 900):.1f}ms "
                f"client=10.{rng.randint(0, 255)}.{rng.randint(0, 255)}.{rng.randint(1, 254)}"
            )
        elif kind == 1:
            out.append(f"{ts} {rng.choice(_LEVELS)} [{svc}] {_sentence(rng, 4, 12)}")
        elif kind == 2:
            out.append(
                f"{ts} DEBUG [{svc}] cache {rng.choice(['hit', 'miss'])} "
                f"key=sha256:{_hex(rng, 64)} size={rng.randint(10, 99999)}"
            )
        else:
            out.append(
                f"{ts} WARN [{svc}] retry {rng.randint(1, 5)}/5 after "
                f"{rng.choice(['ConnectionResetError', 'TimeoutError', 'HTTP 503'])} "
                f"(trace {_hex(rng, 16)})"
            )
    return "\n".join(out) + "\n"


def config_block(rng: random.Random) -> str:
    svc = rng.choice(_SERVICES)
    return (
        f"{svc}:\n"
        f"  image: registry.internal/{svc}:"
        f"{rng.randint(1, 9)}.{rng.randint(0, 30)}.{rng.randint(0, 9)}\n"
        f"  replicas: {rng.randint(1, 12)}\n"
        f"  env:\n"
        f"    DATABASE_URL: ${{DATABASE_URL}}\n"
        f"    LOG_LEVEL: {rng.choice(['info', 'debug', 'warn'])}\n"
        f"    API_KEY: ${{{svc.upper().replace('-', '_')}_API_KEY}}\n"
        f"  resources: {{cpu: {rng.randint(1, 8)}00m, memory: {rng.randint(1, 16)}Gi}}\n"
    )


def mixed_chunk(rng: random.Random) -> str:
    kind = rng.randrange(10)
    if kind < 4:
        return code(rng)
    if kind < 7:
        return log_lines(rng, rng.randint(3, 12))
    if kind < 9:
        return prose(rng, rng.randint(2, 8)) + "\n"
    return config_block(rng)


def clean_text(chars: int, seed: int = SEED) -> str:
    rng = random.Random(seed)
    parts: list[str] = []
    size = 0
    while size < chars:
        chunk = mixed_chunk(rng)
        parts.append(chunk)
        size += len(chunk)
    return "".join(parts)[:chars]


# -- fake secrets, well formed so that a detector ought to find them --


def _rand(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choices(alphabet, k=n))


_ALNUM = string.ascii_letters + string.digits


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _jwt(rng: random.Random) -> str:
    head = _b64url(b'{"alg":"HS256","typ":"JWT"}')
    body = _b64url(json.dumps({"sub": _rand(rng, string.digits, 10), "iat": 1716000000}).encode())
    return f"{head}.{body}.{_b64url(rng.randbytes(32))}"


def _pem(rng: random.Random) -> str:
    raw = base64.b64encode(rng.randbytes(600)).decode()
    body = "\n".join(raw[i : i + 64] for i in range(0, len(raw), 64))
    return f"-----BEGIN RSA PRIVATE KEY-----\n{body}\n-----END RSA PRIVATE KEY-----"


_SECRETS: list[Callable[[random.Random], str]] = [
    lambda r: f'aws_access_key_id = "AKIA{_rand(r, string.ascii_uppercase + "234567", 16)}"',
    lambda r: f"aws_secret_access_key={_rand(r, _ALNUM + '+/', 40)}",
    lambda r: f"export GITHUB_TOKEN=ghp_{_rand(r, _ALNUM, 36)}",
    lambda r: f'client = OpenAI(api_key="sk-proj-{_rand(r, _ALNUM, 48)}")',
    lambda r: (
        f"SLACK_BOT_TOKEN: xoxb-{_rand(r, string.digits, 12)}-{_rand(r, string.digits, 13)}-"
        f"{_rand(r, _ALNUM, 24)}"
    ),
    lambda r: f"stripe.api_key = 'sk_live_{_rand(r, _ALNUM, 24)}'",
    lambda r: f"DATABASE_URL=postgres://app:{_rand(r, _ALNUM, 20)}@db.internal:5432/app",
    lambda r: f"Authorization: Bearer {_jwt(r)}",
    lambda r: f"GOOGLE_API_KEY=AIza{_rand(r, _ALNUM + '-_', 35)}",
    _pem,
]


def secret(rng: random.Random) -> str:
    return rng.choice(_SECRETS)(rng)


def with_secrets(text: str, every: int, seed: int = SEED + 1) -> tuple[str, int]:
    """`text` with a fake secret line inserted at a line break about every `every` chars."""
    rng = random.Random(seed)
    parts: list[str] = []
    pos = 0
    planted = 0
    while pos < len(text):
        cut = text.find("\n", pos + every)
        if cut < 0:
            parts.append(text[pos:])
            break
        parts.append(text[pos : cut + 1])
        parts.append(secret(rng) + "\n")
        planted += 1
        pos = cut + 1
    return "".join(parts), planted


# -- agent traffic --

SYSTEM_PROMPT = (
    "You are a careful software engineering agent working in a monorepo. Use the tools to "
    "read files, run tests and search the code before you change anything. Explain each "
    "change briefly, keep diffs small, never print credentials, and stop to ask when a "
    "request is ambiguous. " + prose(random.Random(SEED + 2), 5)
)

MODEL = "gpt-4o-mini-2024-07-18"


def tool_output(rng: random.Random, chars: int) -> str:
    """What a tool returns: file contents, test logs or search hits."""
    parts: list[str] = []
    size = 0
    while size < chars:
        chunk = code(rng) if rng.random() < 0.5 else log_lines(rng, rng.randint(2, 6))
        parts.append(chunk)
        size += len(chunk)
    return "".join(parts)[:chars]


def tool_call(rng: random.Random, n: int) -> dict[str, object]:
    choices: list[tuple[str, dict[str, object]]] = [
        ("read_file", {"path": f"src/{_ident(rng)}/{_ident(rng)}.py"}),
        ("run_tests", {"target": f"tests/test_{_ident(rng)}.py", "verbose": True}),
        ("grep", {"pattern": _ident(rng), "path": "src/"}),
        ("list_dir", {"path": f"src/{_ident(rng)}"}),
    ]
    name, args = rng.choice(choices)
    args["reason"] = _sentence(rng, 5, 14)
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": f"call_{n}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(args)},
            }
        ],
    }


def tool_result(text: str, n: int) -> dict[str, object]:
    return {"role": "tool", "tool_call_id": f"call_{n}", "content": text}


class AgentTurns:
    """The ~4 KB, 10-message agent turn of the overhead and memory benchmarks.

    Messages 0-6 and 8 (the history, and the assistant's tool call) are the
    same on every request; message 7 (the user's latest instruction) and 9
    (the tool result) are new on every request, so the gateway really scans
    new text each time. `template()` splits the body around those two texts so
    wrk's Lua script builds the same bodies.
    """

    USER_MARK = "\x00USER\x00"
    TOOL_MARK = "\x00TOOL\x00"

    def __init__(self, seed: int = SEED, variants: int = 256) -> None:
        rng = random.Random(seed)
        self._history: list[dict[str, object]] = [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": prose(rng, 3)},
            tool_call(rng, 1),
            tool_result(tool_output(rng, 700), 1),
            {"role": "assistant", "content": prose(rng, 3)},
            {"role": "user", "content": prose(rng, 2)},
            {"role": "assistant", "content": prose(rng, 2)},
        ]
        self._call = tool_call(rng, 2)
        # Variants of the new texts; a run-unique tag makes every body unique.
        self.users = [prose(rng, 3) for _ in range(variants)]
        self.tools = [tool_output(rng, 1200) for _ in range(variants)]

    def payload(self, user: str, tool: str, stream: bool) -> dict[str, object]:
        messages = [
            *self._history,
            {"role": "user", "content": user},
            self._call,
            tool_result(tool, 2),
        ]
        body: dict[str, object] = {"model": MODEL, "messages": messages, "stream": stream}
        if stream:
            body["stream_options"] = {"include_usage": True}
        return body

    def body(self, n: int, tag: str, stream: bool) -> bytes:
        i = n % len(self.users)
        user = f"{self.users[i]} (ref {tag}-{n})"
        tool = f"{self.tools[i]}\n# request {tag}-{n}\n"
        return json.dumps(self.payload(user, tool, stream)).encode()

    def template(self, stream: bool) -> tuple[str, str, str]:
        """(prefix, middle, suffix) of the JSON body around the user and tool texts."""
        raw = json.dumps(self.payload(self.USER_MARK, self.TOOL_MARK, stream))
        user_at = raw.index(json.dumps(self.USER_MARK)[1:-1])
        user_end = user_at + len(json.dumps(self.USER_MARK)[1:-1])
        tool_at = raw.index(json.dumps(self.TOOL_MARK)[1:-1])
        tool_end = tool_at + len(json.dumps(self.TOOL_MARK)[1:-1])
        return raw[:user_at], raw[user_end:tool_at], raw[tool_end:]


def conversation(rng: random.Random, chars: int) -> list[dict[str, object]]:
    """A long agent conversation of about `chars` characters of message text."""
    messages: list[dict[str, object]] = [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": prose(rng, 4)},
    ]
    size = sum(len(str(m["content"])) for m in messages)
    n = 0
    while size < chars:
        n += 1
        call = tool_call(rng, n)
        result = tool_output(rng, rng.randint(500, 4000))
        messages.append(call)
        messages.append(tool_result(result, n))
        size += len(result) + 200
        if n % 5 == 0:
            text = prose(rng, rng.randint(2, 6))
            messages.append({"role": "assistant", "content": text})
            size += len(text)
    return messages


def message_texts(messages: list[dict[str, object]]) -> list[str]:
    """Every text of a chat the gateway would scan, one string per segment."""
    out: list[str] = []
    for m in messages:
        content = m.get("content")
        if isinstance(content, str):
            out.append(content)
        for call in m.get("tool_calls") or []:  # type: ignore[attr-defined]
            fn = call["function"]
            out.extend((fn["name"], fn["arguments"]))
    return out
