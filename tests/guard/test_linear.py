"""Inspection is linear in the input: work per character, measured in steps.

Every request waits on ``secrets.scan`` and every untrusted text on
``injection.assess``; an input on which they do quadratic work stalls the gateway
(46 KB of a repeated Kubernetes header once took 18 s). Wall time is noise on a
shared CI machine, so the work is counted by ``tests.guard.meter``: characters
that regex calls and string methods may read, and function calls.

The hostile inputs are built from the detectors' own data: every token prefix,
"A"-led format, pass anchor, key-name keyword, literal of every pattern, phrase
start and template token, each repeated alone and with the separators that take a
rule further. A rule added later brings its anchors along, and is covered.

For each input the steps for ``4n`` characters must stay within ``MAX_RATIO``
times those for ``n`` (4 when linear, 16 when quadratic), and under
``MAX_STEPS_PER_CHAR`` per character.
"""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
import random
import re
import types
from collections.abc import Callable, Iterable, Iterator
from re import _constants as sre  # type: ignore[attr-defined]
from re import _parser as sre_parse  # type: ignore[attr-defined]
from typing import Any

import pytest

from gateway.guard.detectors import injection, secrets
from gateway.guard.detectors.secrets import engine, names, tokens, urls
from gateway.guard.detectors.secrets.rules import RULES
from tests.guard.meter import Meter, ambiguities, char_class


def _with_submodules(module: types.ModuleType) -> tuple[types.ModuleType, ...]:
    """A detector module, or a package and every module in it: the meter swaps
    the patterns each one holds, and a rule's patterns live in its own module."""
    if not hasattr(module, "__path__"):
        return (module,)
    subs = (
        importlib.import_module(f"{module.__name__}.{info.name}")
        for info in pkgutil.iter_modules(module.__path__)
    )
    return (module, *subs)


SECRET_MODULES = _with_submodules(secrets)
DETECTOR_MODULES = (*SECRET_MODULES, *_with_submodules(injection))

# At least engine._SPLIT_AT, so that both sizes take the same prefilter path.
SMALL = 1024
MAX_RATIO = 5.0
MAX_STEPS_PER_CHAR = 400

Detector = Callable[[str], object]


def growth(meter: Meter, detect: Detector, piece: str) -> tuple[float, float]:
    """steps(4n) / steps(n), and steps per character at 4n.

    Whole copies of the piece, so that both texts end alike.
    """
    copies = max(1, SMALL // len(piece))
    small = meter.steps_of(detect, piece * copies)
    large = meter.steps_of(detect, piece * (4 * copies))
    return large / max(1, small), large / (4 * copies * len(piece))


def too_slow(
    detect: Detector, pieces: Iterable[str], *, calls: bool = False
) -> list[tuple[str, float, float]]:
    bad: list[tuple[str, float, float]] = []
    with Meter(*DETECTOR_MODULES, calls=calls) as meter:
        for piece in dict.fromkeys(pieces):
            ratio, per_char = growth(meter, detect, piece)
            if ratio > MAX_RATIO or per_char > MAX_STEPS_PER_CHAR:
                bad.append((piece, round(ratio, 1), round(per_char)))
    return bad


# ---------------------------------------------------------------------------
# What the hostile inputs are made of
# ---------------------------------------------------------------------------


def _patterns(value: object, seen: set[int] | None = None) -> Iterator[Any]:
    """Every compiled regex inside a module global."""
    seen = set() if seen is None else seen
    if id(value) in seen:
        return
    seen.add(id(value))
    if isinstance(value, re.Pattern):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _patterns(v, seen)
    elif isinstance(value, (tuple, list)):
        for v in value:
            yield from _patterns(v, seen)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            yield from _patterns(getattr(value, f.name), seen)


def _literal_runs(items: Any, out: list[str]) -> None:
    run: list[str] = []
    for op, av in items:
        if op is sre.LITERAL:
            run.append(chr(av))
            continue
        if len(run) >= 2:
            out.append("".join(run))
        run = []
        if op is sre.SUBPATTERN:
            _literal_runs(av[3], out)
        elif op is sre.BRANCH:
            for sub in av[1]:
                _literal_runs(sub, out)
        elif op in (sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT):
            _literal_runs(av[2], out)
        elif op in (sre.ASSERT, sre.ASSERT_NOT):
            _literal_runs(av[1], out)
    if len(run) >= 2:
        out.append("".join(run))


def module_patterns(module: object) -> list[Any]:
    """Every compiled regex reachable from a module's globals, once."""
    seen: set[int] = set()
    return [
        p
        for name, value in vars(module).items()
        if not name.startswith("__")
        for p in _patterns(value, seen)
    ]


def _source(p: Any) -> str:
    return p.pattern if isinstance(p.pattern, str) else p.pattern.decode("latin-1")


def pattern_literals(module: object) -> list[str]:
    """The literal runs (two characters or more) of every pattern of a module."""
    out: list[str] = []
    for p in module_patterns(module):
        _literal_runs(sre_parse.parse(_source(p), p.flags), out)
    return sorted(set(out))


# Separators that take a rule past its anchor: a value, an assignment, a line end.
VALUE = "Xq7mLp2RvT9kWz4B"
TAILS = ("", " ", ": ", "\n", "=" + VALUE + " ", ": " + VALUE + "\n")


def decorated(atoms: Iterable[str], tails: Iterable[str] = TAILS) -> list[str]:
    return [a + t for a in dict.fromkeys(atoms) for t in tails if a + t]


def families(atoms: dict[str, list[str]], tails: Iterable[str]) -> dict[str, list[str]]:
    """The decorated pieces of each family, each piece in the first family that has it."""
    seen: set[str] = set()
    out: dict[str, list[str]] = {}
    for family, members in atoms.items():
        pieces = [p for p in decorated(members, tails) if p not in seen]
        seen.update(pieces)
        out[family] = pieces
    return out


def pattern_samples(module: object, count: int = 3) -> list[str]:
    """A few strings read off every pattern of a module: its anchors in their order."""
    rnd = random.Random(3)
    out = [_sample(_source(p), rnd, p.flags) for p in module_patterns(module) for _ in range(count)]
    return sorted({s for s in out if s.strip()})


# Context rules read beyond their anchor: documents, blocks, command lines.
_B64_LINE = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7"
CONTEXT_DOCUMENTS = [
    "kind: Secret\n",
    "kind: Secret\ndata:\n",
    "kind: Secret\ndata:\n  k: dmFsdWUx\n",
    "data:\n  k: v\n",
    "apiVersion: v1\nkind: Secret\nstringData:\n  password: Xq7!Lm2pR9vT\n---\n",
    "kind: Secret\ndata:\n  tls.key: |\n    " + _B64_LINE + "\n",
    "-----BEGIN RSA PRIVATE KEY-----\n",
    "-----BEGIN RSA PRIVATE KEY-----\n" + _B64_LINE + "\n",
    "-----BEGIN PRIVATE KEY-----" + _B64_LINE,
    "# -----BEGIN EC PRIVATE KEY-----\n# " + _B64_LINE + "\n",
    '"-----BEGIN OPENSSH PRIVATE KEY-----\\n" + "' + _B64_LINE + '\\n" + ',
    "-----END PRIVATE KEY-----\n",
    "curl -u ",
    "curl -u a:b ",
    "curl \\\n",
    "curl -u user:" + VALUE + " \\\n",
    "--user=u:" + VALUE + " ",
    "https://u:p@",
    "https://u:" + VALUE + "@h ",
    "?sig=",
    "&sig=" + VALUE * 2,
    "?sv=1&sig=" + VALUE * 2 + " ",
    "BUNDLE_",
    "BUNDLE_GEMS__X__COM=u:" + VALUE + "\n",
    "---\n",
    "password ",
    "machine h login u password ",
    "password: " + VALUE + " ",
    "Server=db;Password=" + VALUE + ";",
    '"private_key_id": "' + "ab12" * 10 + '", ',
    "Authorization: Basic ",
    "Authorization: Bearer " + VALUE + " ",
    "eyJ-",
    "eyJhbGciOiJIUzI1NiJ9.",
    "eyJ" + VALUE + "." + VALUE + ".",
    "<password>",
    "<password>" + VALUE,
    "sshpass -p ",
    ":param password: ",
    '"name": "DB_PASSWORD", "value": ',
    '"api_key", "' + VALUE + '", ',
    "password = " + "a" * 60 + " ",
    "a" * 100 + "password=",
    # Private keys in log output: the prefix before the material is read lazily.
    "-----BEGIN RSA PRIVATE KEY-----\n2024-05-01T10:00:00Z INFO ",
    "-----BEGIN RSA PRIVATE KEY-----\n" + "a " * 40,
    "-----BEGIN RSA PRIVATE KEY-----\n#1 0.1 " + _B64_LINE + _B64_LINE + " x\n",
    "-----BEGIN ML-DSA-65 PRIVATE KEY-----\n",
    "PuTTY-User-Key-File-3: ssh-ed25519\n" + "Comment: x\n" * 3,
    "PuTTY-User-Key-File-2: ssh-rsa\nPrivate-Lines: 1\n" + _B64_LINE + "\n",
    "#define PASSWORD ",
    '#define DB_PASS "' + VALUE + '"\n',
    "%define db_password ",
    "CREATE USER app PASSWORD '",
    "IDENTIFIED BY '" + VALUE + "' ",
    'ConvertTo-SecureString "' + VALUE + '" -AsPlainText ',
    "https://discord.com/api/webhooks/1234567890123456789/",
    "https://x.webhook.office.com/webhookb2/",
]


def secret_atoms() -> dict[str, list[str]]:
    keywords = urls._KEYWORD_RE.pattern.split("|")
    key_names = [*keywords, *names._PW_WORDS, *names._STRONG_SUFFIXES]
    return {
        "token prefixes": [*tokens._PREFIX_RULES, tokens._BUNDLE_PREFIX],
        "keyword formats": [k for r in RULES for k in r.keywords],
        "pass anchors": sorted({a for p in engine._PASSES for a in p.anchors}),
        # Alone and, in capitals, at the end of a longer name (read back from the keyword).
        "key-name keywords": [*key_names, *("x_" + k.upper() for k in keywords)],
        "pattern literals": sorted({lit for m in SECRET_MODULES for lit in pattern_literals(m)}),
        "pattern samples": sorted({s for m in SECRET_MODULES for s in pattern_samples(m)}),
    }


def _sample(pattern: str, rnd: random.Random, flags: int = 0) -> str:
    """A string the pattern matches, read off its parse tree (shortest repeats)."""
    out: list[str] = []

    def walk(items: Any) -> None:
        for op, av in items:
            if op is sre.LITERAL:
                out.append(chr(av))
            elif op is sre.IN or op is sre.NOT_LITERAL or op is sre.ANY:
                out.append(" " if _accepts_space(op, av) else "a")
            elif op is sre.BRANCH:
                walk(rnd.choice(av[1]))
            elif op is sre.SUBPATTERN:
                walk(av[3])
            elif op in (sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT):
                for _ in range(av[0]):
                    walk(av[2])

    walk(sre_parse.parse(pattern, flags))
    return "".join(out)


def _accepts_space(op: Any, av: Any) -> bool:
    return re.fullmatch(char_class(op, av), " ", re.S) is not None


def phrase_starts() -> list[str]:
    """Near misses: each phrase alternative's sampled match, cut before its last word."""
    rnd = random.Random(5)
    out: list[str] = []
    for rule in injection._PHRASE_RULES:
        out.extend(w + " " for w in sorted(rule.starts | rule.gate))
        for alt in rule.alts:
            for _ in range(3):
                words = _sample(alt.pattern, rnd).split()
                for k in range(1, len(words)):
                    out.append(" ".join(words[:k]) + " ")
    return out


def injection_atoms() -> dict[str, list[str]]:
    templates = [lit for r in injection._TEMPLATE_RULES for lit in (*r.literals, *r.anchors)]
    rnd = random.Random(11)
    b64ish = "".join(rnd.choice("abcXYZ0123456789") for _ in range(16))
    return {
        "phrase starts": phrase_starts(),
        "template tokens": [
            *templates,
            *injection._TEMPLATE_CHARS,
            *injection._TEMPLATE_SOURCE,
            "[INST]",
            "[/INST]",
        ],
        "encodings": [
            "\\x41",
            "\\x4",
            "%41",
            "%4",
            "&#65;",
            "&#x41",
            b64ish,
            b64ish + "+",
            b64ish + "-",
            "0123456789abcdef" * 2 + "20",
            *sorted(injection._ROT13_HINTS),
            *sorted(injection._LEET_SPELLINGS)[::50],  # one in fifty of them
            *injection._ZERO_WIDTH,
            *injection._BIDI,
            "\U000e0041",
            injection._BLACK_FLAG + "\U000e0067",
            *injection._LOOKALIKES,
        ],
        "pattern literals": pattern_literals(injection),
        "pattern samples": pattern_samples(injection),
    }


SECRET_PIECES = families(secret_atoms(), TAILS)
INJECTION_PIECES = families(injection_atoms(), (" ", "", "\n", ": "))


@pytest.fixture
def searched_from_first(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each search of the secret scan goes on from its first place, at any size.

    With the prefilter, a search with at most `_anchors.PLACES_KEPT` places is
    matched at those alone: a subset of the match attempts that searching on
    from the first place makes. Which of the two a repeated piece takes
    changes with the number of copies, so one size would take one and four
    times the size the other, and the ratio would measure the switch; here
    both take the search, whose work bounds the other's.
    """
    monkeypatch.setattr(engine, "_PLACES_KEPT", 0)


@pytest.mark.parametrize("family", sorted(SECRET_PIECES))
def test_secret_scan_is_linear_in_repeated_anchors(family: str, searched_from_first: None) -> None:
    bad = too_slow(secrets.scan, SECRET_PIECES[family])
    assert not bad, f"super-linear (piece, steps(4n)/steps(n), steps per char): {bad}"


def test_secret_scan_is_linear_in_repeated_context_documents(searched_from_first: None) -> None:
    bad = too_slow(secrets.scan, CONTEXT_DOCUMENTS, calls=True)
    assert not bad, f"super-linear (piece, steps(4n)/steps(n), steps per char): {bad}"


def test_matching_at_places_reads_at_most_a_constant_more_than_searching() -> None:
    """What `searched_from_first` rests on, on the hostile inputs (every
    eighth piece, both sizes): the scan as it runs reads no more than with
    every search going on from its first place, but for a constant that does
    not grow with the text (a call and a short read per place kept)."""
    kept = engine._PLACES_KEPT
    searches = len(engine._TEXT_SEARCHES) + len(engine._LOWER_SEARCHES)
    # A call and a short read per place kept; and two scans of one text can
    # differ by a few steps however they run (the meter counts every call
    # the profiler sees meanwhile), hence the one more per search.
    slack = 2 * (kept + 1) * searches
    pieces = [p for family in sorted(SECRET_PIECES) for p in SECRET_PIECES[family]]
    compared = 0
    with Meter(*DETECTOR_MODULES, calls=True) as meter, pytest.MonkeyPatch.context() as patch:
        for piece in [*dict.fromkeys(pieces)][::8] + list(CONTEXT_DOCUMENTS):
            copies = max(1, SMALL // len(piece))
            for text in (piece * copies, piece * (4 * copies)):
                # The search first: a text's first scan pays for what is
                # computed once (a cache filled, a table built), and the
                # scan as run must not be charged for it.
                patch.setattr(engine, "_PLACES_KEPT", 0)
                searched = meter.steps_of(secrets.scan, text)
                patch.setattr(engine, "_PLACES_KEPT", kept)
                as_run = meter.steps_of(secrets.scan, text)
                assert as_run <= searched + slack, (piece[:60], as_run, searched)
                compared += 1
    assert compared > 500


@pytest.mark.parametrize("family", sorted(INJECTION_PIECES))
def test_injection_assess_is_linear_in_repeated_anchors(family: str) -> None:
    bad = too_slow(injection.assess, INJECTION_PIECES[family])
    assert not bad, f"super-linear (piece, steps(4n)/steps(n), steps per char): {bad}"


@pytest.mark.parametrize(
    "module",
    DETECTOR_MODULES,
    ids=[m.__name__.rsplit("detectors.", 1)[1] for m in DETECTOR_MODULES],
)
def test_no_pattern_can_backtrack_exponentially(module: object) -> None:
    # The step counts above see how far a regex may read, not how often it
    # backtracks over it: "password: ab-ab-...-ab-X!" once took 2^pieces steps
    # inside one 60-character value. Ambiguous repeats are found here instead.
    found = {p.pattern[:80]: a for p in module_patterns(module) if (a := ambiguities(p))}
    assert not found, found


# ---------------------------------------------------------------------------
# The meter itself
# ---------------------------------------------------------------------------


def test_meter_tells_a_rescan_from_a_single_pass() -> None:
    toy = types.ModuleType("toy")
    toy.RX = re.compile(r"x[ \t]*y")  # type: ignore[attr-defined]

    def per_anchor_to_the_end(text: str) -> None:
        for i in range(0, len(text), 8):
            toy.RX.search(text, i)  # no match: each search reads to the end

    def once(text: str) -> None:
        pos = 0
        while (m := toy.RX.search(text, pos)) is not None:
            pos = m.end()

    with Meter(toy, calls=False) as meter:
        for detect, expected in ((per_anchor_to_the_end, 16), (once, 4)):
            small = meter.steps_of(detect, "x  z    " * 200)
            large = meter.steps_of(detect, "x  z    " * 800)
            assert abs(large / small - expected) < 0.5, (detect.__name__, large / small)


def test_reach_is_what_the_engine_may_read() -> None:
    toy = types.ModuleType("toy")
    toy.RX = re.compile(r"ab[ \t]*(?=[0-9]{3})c|abz")  # type: ignore[attr-defined]
    with Meter(toy, calls=False):
        proxy = toy.RX
        # The spaces there are, then the three characters the lookahead reads.
        assert proxy.reach("ab     123c", 0, 11) == 2 + 5 + 3 + 1
        assert proxy.reach("ab     x", 0, 8) == 2 + 5 + 1
        assert proxy.reach("ax" + " " * 50, 0, 52) == 2
        assert proxy.reach("ab" + " " * 50, 0, 30) == 30  # never past endpos


def test_ambiguous_repeats_are_found() -> None:
    assert ambiguities(re.compile(r"(?:a|ab?)+c"))
    assert ambiguities(re.compile(r"(?:[a-z]+)+!"))
    assert ambiguities(re.compile(r"[a-z]+(?:-(?:[a-z]+|[a-z0-9]{1,4}))+"))
    assert not ambiguities(re.compile(r"(?:[a-z]+-)+!"))
    assert not ambiguities(re.compile(r"(?>[a-z]+|[a-z0-9]{1,4})+!"))
    assert not ambiguities(re.compile(r"(?:[a-z]++)+!"))
