"""Did the user's own last message ask for this risky action?

The caller passes the text of the last user message (never a tool result) and
an :class:`Action`: the call's risky part in the words a user would use. The
answer is a user_authorization level:

- ``unknown``: there is no user message, or it is blank.
- ``high``: the message holds one of the action's command texts exactly
  (runs of whitespace count as one space; case counts), standing on its own
  rather than as the start of a longer word or path, and not negated.
- ``medium``: an affirmative clause asks with a verb of the action's family
  ("delete", "force push", "show", "upload", ...) and the affirmative clauses
  that ask name every target of the action: each path, branch and host.
- ``low``: anything else.

Negation is deliberately simple. The message is cut into sentences at ``.``,
``!``, ``?`` or ``;`` followed by a space, and at line breaks. Within a
sentence, a negation word (not, no, never, nor, cannot, avoid, without, or any
word ending in n't) negates everything after it, up to the sentence's end. So
"don't delete /srv/cache" and "clean the cache, but not /srv/data" give
nothing for the negated part, and "I'm not sure, delete it" gives nothing at
all: the check errs toward asking the user again.

Targets are matched as whole tokens. Paths compare after light normalising
(``$HOME`` and ``${HOME}`` read as ``~``, a leading ``./`` and a trailing
``/`` dropped; ``/home/<user>/x``, ``/Users/<user>/x`` and ``/root/x`` also
read as ``~/x``), and case counts. Branches compare without case, also as
``origin/main`` or as the destination of ``HEAD:main``. Hosts compare without
case, also inside a URL or ``user@host:path``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal
from urllib.parse import urlsplit

from gateway.guard.guardian.assessment import Authorization

Verb = Literal[
    "delete", "force-push", "read", "send", "run-download", "format-disk", "chmod", "run"
]


@dataclass(frozen=True, slots=True)
class Action:
    """What a risky call does, in terms a user's request can be compared with."""

    verb: Verb
    # The call's command texts, from the risky command alone to the whole
    # script around it; the user quoting any one of them exactly counts.
    commands: tuple[str, ...] = ()
    paths: tuple[str, ...] = ()
    branches: tuple[str, ...] = ()
    hosts: tuple[str, ...] = ()


def _verbs(words: str, *phrases: str, extra: str = "") -> re.Pattern[str]:
    """A family's verbs: single words, multi-word phrases, and any extra pattern."""
    alternatives = [re.escape(p).replace(r"\ ", r"\s+") for p in (*words.split(), *phrases)]
    pattern = r"(?<![\w-])(?:" + "|".join(alternatives) + r")(?![\w-])"
    return re.compile(pattern + (f"|{extra}" if extra else ""), re.I)


_VERBS: dict[Verb, re.Pattern[str]] = {
    "delete": _verbs(
        "delete deletes deleting remove removes removing rm rmdir unlink erase erasing wipe "
        "wiping purge purging nuke destroy clean cleaning clear clearing",
        "get rid of",
    ),
    "force-push": _verbs(
        "force-push force-pushing force-pushed forcepush",
        "force push",
        "force pushing",
        "force pushed",
        "push with force",
        # "push ... --force" and "push ... +main" spelled out by the user.
        extra=r"(?<![\w-])push\w*\b[^.;!?\n]*?\s(?:-f|--force[\w-]*|--mirror|\+\S+)(?![\w-])",
    ),
    "read": _verbs(
        "read show display print cat open view check inspect dump output see copy cp backup "
        "archive tar zip base64 encode grep paste",
        "look at",
        "back up",
        "what's in",
        "what is in",
        "contents of",
        "give me",
        "send me",
    ),
    "send": _verbs(
        "upload uploading send sending post posting put transfer copy cp scp rsync sync submit "
        "share publish push forward attach email"
    ),
    "run-download": _verbs(
        "run running execute exec install installing pipe source bash sh eval invoke iex"
    ),
    "format-disk": _verbs(
        "format formatting reformat mkfs wipe erase zero dd partition shred overwrite flash"
    ),
    "chmod": _verbs(
        "chmod chown chgrp permission permissions owner ownership",
        "make writable",
        "world-writable",
    ),
    "run": _verbs("run execute exec start launch try"),
}

_NEGATION = re.compile(
    r"(?<![\w'’/.~$-])(?:not|no|never|nor|cannot|avoid|without|\w+n['’]t|dont)(?![\w'’/-])",
    re.I,
)
# Where a sentence ends: sentence punctuation before whitespace or the end, or a line break.
_SENTENCE_END = re.compile(r"[.!?;](?=\s|$)|\n")
_WRAPPING = "\"'`“”‘’()[]{}<>,;:!?"
_PATH_CHAR = re.compile(r"[\w/~$.-]")
_USER_HOME = re.compile(r"^(?:/home/[^/]+|/Users/[^/]+|/root)(?=/|$)")


def authorization(last_user: str | None, action: Action) -> Authorization:
    if last_user is None or not last_user.strip():
        return "unknown"
    # Runs of whitespace become one character; a run that held a line break
    # stays a line break, since it ends a sentence.
    flat = re.sub(r"\s+", lambda m: "\n" if "\n" in m.group() else " ", last_user.strip())
    if _quotes_command(flat, action.commands):
        return "high"
    if _asks(flat, action):
        return "medium"
    return "low"


def _quotes_command(flat: str, commands: Iterable[str]) -> bool:
    hay = flat.replace("\n", " ")
    for command in commands:
        needle = " ".join(command.split())
        if not needle:
            continue
        at = hay.find(needle)
        while at >= 0:
            end = at + len(needle)
            if _stands_alone(hay, at, end) and not _negated_before(flat, at):
                return True
            at = hay.find(needle, at + 1)
    return False


def _stands_alone(text: str, start: int, end: int) -> bool:
    # "rm -rf /" inside "rm -rf /srv" is a different command.
    if start > 0 and _PATH_CHAR.match(text[start - 1]):
        return False
    if end < len(text) and _PATH_CHAR.match(text[end]):
        return text[end] == "." and (end + 1 == len(text) or text[end + 1].isspace())
    return True


def _negated_before(flat: str, at: int) -> bool:
    sentence_start = 0
    for m in _SENTENCE_END.finditer(flat, 0, at):
        sentence_start = m.end()
    return _NEGATION.search(flat, sentence_start, at) is not None


def _asks(flat: str, action: Action) -> bool:
    verb = _VERBS[action.verb]
    asking: list[str] = []
    for sentence in _SENTENCE_END.split(flat):
        negation = _NEGATION.search(sentence)
        clause = sentence[: negation.start()] if negation else sentence
        if verb.search(clause):
            asking.append(clause)
    if not asking:
        return False
    tokens = [t for clause in asking for t in _tokens(clause)]
    return (
        all(_names_path(tokens, p) for p in action.paths)
        and all(_names_branch(tokens, b) for b in action.branches)
        and all(_names_host(tokens, h) for h in action.hosts)
    )


def _tokens(clause: str) -> list[str]:
    out = []
    for raw in clause.split():
        token = raw.strip(_WRAPPING)
        if token.endswith(".") and not token.endswith(".."):
            token = token[:-1]
        if token:
            out.append(token)
    return out


def _path_forms(path: str) -> set[str]:
    p = re.sub(r"^(?:\$HOME|\$\{HOME\})(?=/|$)", "~", path)
    while p.startswith("./"):
        p = p[2:]
    p = re.sub(r"/{2,}", "/", p)
    if len(p) > 1:
        p = p.rstrip("/") or "/"
    forms = {p}
    if m := _USER_HOME.match(p):
        forms.add("~" + p[m.end() :])
    return forms


def _names_path(tokens: list[str], path: str) -> bool:
    wanted = _path_forms(path)
    return any(_path_forms(t) & wanted for t in tokens)


def _names_branch(tokens: list[str], branch: str) -> bool:
    b = branch.lower().removeprefix("refs/heads/")
    for token in tokens:
        t = token.lower().lstrip("+").rsplit(":", 1)[-1].removeprefix("refs/heads/")
        if t == b or (t.count("/") == 1 and t.endswith("/" + b)):
            return True
    return False


def _token_host(token: str) -> str:
    t = token.lower()
    if "://" in t:
        try:
            return (urlsplit(t.replace("\\", "/")).hostname or "").rstrip(".")
        except ValueError:
            return ""
    t = t.rsplit("@", 1)[-1]
    return re.split(r"[/:]", t, maxsplit=1)[0].rstrip(".")


def _names_host(tokens: list[str], host: str) -> bool:
    h = host.lower().rstrip(".")
    return any(_token_host(t) == h for t in tokens)
