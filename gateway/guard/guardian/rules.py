"""The deterministic guardian: rates a tool call by what it would do, before it runs.

Ratings (rules are in checks.py and commands.py; the most severe finding wins):

critical, always refused
    recursive delete of /, a glob of /, a home directory (~, $HOME, /home/x,
    /Users/x, /root) or a system directory (/etc, /usr, /var, /boot, /opt,
    /srv, /mnt, ..., and /usr/x); mkfs*, mkswap, wipefs, blkdiscard on a
    device; dd of=/dev/<disk>; a redirect, tee or cp onto a disk device;
    shred of a device; a fork bomb; recursive chmod/chown/chgrp of / or a
    system directory; sending a credential file to a host outside the allowed
    list (or to a host named only by a variable).
high, refused unless the user's last message asks for it
    recursive delete of any other absolute path outside the workspace, of a
    relative path climbing out with "..", or of "$VAR/..." (empty, it is
    absolute); deleting files inside a protected directory or a file in a
    system directory; force-push (-f, --force, --force-with-lease, +refspec,
    --mirror, --all with force) or delete of main/master, also when an earlier
    ``git checkout main`` made it the current branch; a download piped into a
    shell or interpreter, run through <(...) or $(...), or saved and then run;
    PowerShell's iex with a download; code decoded on the fly (base64 -d) and
    run; reading a credential file (file tools,
    cat/less/cp/tar/base64/grep..., a ``<`` redirect, dd if=); sending local
    data to a host outside the allowed list (curl data/form/upload, wget
    --post-*, scp/rsync to host:, nc/ssh/socat/ /dev/tcp fed data, a fetch tool
    with a body or POST/PUT/PATCH); recursive chmod/chown of a home directory;
    a script or arguments nested too deeply to check.
medium, allowed and noted
    force-push of another branch, or of one the text cannot name; recursive
    delete of an unresolvable path; other deletes outside the workspace;
    formatting an image file; a credential file handed to another program;
    data sent to a host named only by a variable.
low, allowed
    everything else, including a plain GET to any host.

Scripts are read wherever they hide: ``bash -c``, ``su -c``, ``ssh host cmd``,
``eval``, here-documents, ``echo ... | sh``, base64 literals piped to a shell,
and shell strings inside interpreter code (``os.system("...")``).

Loopback hosts always count as allowed. Protected places are checked before
the workspace: a workspace never makes deleting / or a home directory less
than critical. Without a configured workspace, a call's own working directory
(``working_directory``, ``cwd``) is taken as the workspace unless it is itself
a protected place; relative paths are taken as inside the workspace unless
they climb out of it.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence
from typing import TypeGuard

from gateway.guard.guardian import checks, commands, network
from gateway.guard.guardian.assessment import (
    AUTHORIZATION_RANK,
    RISK_RANK,
    Assessment,
    Authorization,
    Outcome,
    enforce,
)
from gateway.guard.guardian.authorization import Action, authorization
from gateway.guard.guardian.context import Command, Finding, Flow, Scope
from gateway.guard.guardian.paths import locate, protected
from gateway.guard.guardian.shell import Word
from gateway.wire.calls import Conversation, ToolCall


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


NO_FINDING_RATIONALE = "No guardian rule matched this call."
SHELL_KINDS = frozenset({"local_shell_call", "shell_call", "local_shell", "shell"})

_SHELL_HINTS = _words(
    "shell bash exec execute run terminal sh zsh powershell pwsh cmd command console"
)
_READ_HINTS = _words(
    "read open cat view show head tail load get print dump grep search edit inspect"
)
_DELETE_HINTS = _words("delete remove rm unlink trash erase")
_WRITE_HINTS = _words("write create save append put mkdir touch new insert")
_UPLOAD_HINTS = _words("upload send post put publish attach share submit")
_RECURSIVE_HINTS = _words("dir directory folder tree recursive recursively")
_SEND_METHODS = frozenset({"POST", "PUT", "PATCH"})

_SCRIPT_KEYS = ("command", "cmd", "script", "commands", "cmdline", "command_line")
_PATH_KEYS = (
    "path", "file_path", "filepath", "filename", "file", "paths", "files", "target_file",
    "absolute_path", "relative_path",
)  # fmt: skip
_URL_KEYS = ("url", "uri", "href", "endpoint", "link")
_BODY_KEYS = ("body", "data", "json", "form", "payload", "content", "files")
_CWD_KEYS = ("working_directory", "workdir", "cwd", "working_dir")
_VERB_KEYS = ("command", "operation", "action", "mode", "op")
_NESTED_KEYS = ("action", "input", "params", "parameters", "arguments")
_MAX_NESTING = 4  # wrapper objects looked into, e.g. {"input": {"action": {...}}}


def assess(
    call: ToolCall,
    conversation: Conversation,
    *,
    allowed_hosts: Sequence[str] = (),
    workspace: Sequence[str] = (),
) -> Assessment:
    found = findings(call, allowed_hosts=allowed_hosts, workspace=workspace)
    return decide(found, conversation.last_user)


def findings(
    call: ToolCall, *, allowed_hosts: Sequence[str] = (), workspace: Sequence[str] = ()
) -> list[Finding]:
    """Everything the rules find in one call, in the order found."""
    places = tuple(p for p in map(locate, workspace) if p.kind in ("abs", "home"))
    scope = Scope(places, tuple(allowed_hosts))
    words = _name_words(call.name)
    shellish = call.kind in SHELL_KINDS or _looks_like_shell(call.name, words)
    try:
        parsed = call.parsed()
    except RecursionError:  # JSON nested past what the decoder can hold
        scope.add("high", "nests its arguments too deeply to be checked", Action("run"))
        return scope.findings
    if isinstance(parsed, dict):
        _from_object(parsed, words, scope)
    elif shellish and isinstance(parsed, str):
        commands.walk(parsed, scope)
    elif shellish and _is_argv(parsed):
        _walk_argv(parsed, scope)
    elif shellish and parsed is None and not call.arguments.lstrip().startswith("*** Begin Patch"):
        commands.walk(call.arguments, scope)
    return scope.findings


def decide(found: Sequence[Finding], last_user: str | None) -> Assessment:
    """The assessment for a call's findings: the worst level decides; every worst finding counts."""
    if not found:
        return Assessment("low", "unknown", "allow", NO_FINDING_RATIONALE)
    top = max(RISK_RANK[f.risk] for f in found)
    worst = list(dict.fromkeys(f for f in found if RISK_RANK[f.risk] == top))
    # At the top level each finding needs the user's word: authorizing one of
    # two high-risk actions must not let the other through.
    rated = [(authorization(last_user, f.action), f) for f in worst]
    granted, finding = min(rated, key=lambda pair: AUTHORIZATION_RANK[pair[0]])
    risk = finding.risk
    outcome: Outcome = "allow"
    if risk == "critical":
        outcome = "deny"
        note = " Critical actions are always refused."
    elif risk == "high" and not _asked(granted):
        outcome = "deny"
        note = " The user's last message does not ask for it."
    elif risk == "high":
        note = " The user's last message asks for it."
    else:
        note = ""
    return enforce(Assessment(risk, granted, outcome, f"The call {finding.rule}.{note}"))


def _asked(granted: Authorization) -> bool:
    return granted in ("medium", "high")


def _name_words(name: str) -> frozenset[str]:
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)
    return frozenset(re.findall(r"[a-z]+", spaced.lower()))


def _looks_like_shell(name: str, words: frozenset[str]) -> bool:
    lowered = name.lower()
    return bool(words & _SHELL_HINTS) or any(
        hint in lowered for hint in ("shell", "bash", "terminal", "powershell")
    )


def _is_argv(value: object) -> TypeGuard[list[str]]:
    return isinstance(value, list) and bool(value) and all(isinstance(v, str) for v in value)


def _walk_argv(argv: list[str], scope: Scope) -> None:
    """An exec-style command: the program and its arguments, no shell in between."""
    commands.walk(shlex.join(argv), scope, (" ".join(argv),))


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if _is_argv(value):
        return list(value)
    return []


def _from_object(
    obj: Mapping[str, object], words: frozenset[str], scope: Scope, depth: int = 0
) -> None:
    for key in _NESTED_KEYS:  # e.g. a Responses API shell_call item rather than its action
        inner = obj.get(key)
        if isinstance(inner, dict) and depth < _MAX_NESTING:
            _from_object(inner, words, scope, depth + 1)
    _working_directory(obj, scope)
    extra = obj.get("args") if _is_argv(obj.get("args")) else obj.get("argv")
    extra_args = _strings(extra) if _is_argv(extra) else []
    ran_argv = False
    for key in _SCRIPT_KEYS:
        value = obj.get(key)
        if isinstance(value, str):
            if key in ("command", "cmd") and extra_args:
                _walk_argv([value, *extra_args], scope)
                ran_argv = True
            else:
                commands.walk(value, scope)
        elif _is_argv(value) and key == "commands":  # shell_call: a list of scripts
            for script in _strings(value):
                commands.walk(script, scope)
        elif _is_argv(value):  # local_shell_call and exec-style tools: one argv
            _walk_argv(_strings(value), scope)
    if extra_args and not ran_argv and (_is_argv(obj.get("argv")) or words & _SHELL_HINTS):
        _walk_argv(extra_args, scope)
    url = next((v for k in _URL_KEYS if isinstance(v := obj.get(k), str) and v), None)
    paths = [p for k in _PATH_KEYS for p in _strings(obj.get(k))]
    if url is not None:
        _fetch(obj, url, paths, words, scope)
    elif paths:
        _file_tool(obj, paths, words, scope)


def _working_directory(obj: Mapping[str, object], scope: Scope) -> None:
    wd = next((v for k in _CWD_KEYS if isinstance(v := obj.get(k), str) and v), None)
    if wd is None:
        return
    place = locate(wd)
    if place.kind not in ("abs", "home"):
        return
    scope.cwd = place.text()
    if not scope.workspace and protected(place) is None:
        scope.workspace = (place,)


def _tool_command(scope: Scope, verb: str, path: str) -> Command:
    return Command(scope, [Word(verb), Word(path)], (), Flow(), {})


def _file_tool(
    obj: Mapping[str, object], paths: list[str], words: frozenset[str], scope: Scope
) -> None:
    verb = next((v.lower() for k in _VERB_KEYS if isinstance(v := obj.get(k), str)), "")
    if verb in _DELETE_HINTS or (not verb and words & _DELETE_HINTS):
        recursive = obj.get("recursive") is True or bool(words & _RECURSIVE_HINTS)
        for path in paths:
            checks.delete(_tool_command(scope, "delete", path), path, recursive=recursive)
        return
    writes = verb in _WRITE_HINTS or (not verb and words & _WRITE_HINTS and not words & _READ_HINTS)
    if writes:
        return
    # Reading is what a tool given a path does unless it says otherwise; an
    # editor's view or replace shows the file's text too.
    for path in paths:
        c = _tool_command(scope, "read", path)
        if secret := c.secret(path):
            checks.reads(c, path, secret)


def _fetch(
    obj: Mapping[str, object], url: str, paths: list[str], words: frozenset[str], scope: Scope
) -> None:
    method = obj.get("method")
    method = method.upper() if isinstance(method, str) else "GET"
    uploads = paths if (method in _SEND_METHODS or words & _UPLOAD_HINTS) else []
    has_body = any(obj.get(k) not in (None, "", {}, []) for k in _BODY_KEYS)
    if not (has_body or uploads or method in _SEND_METHODS):
        return  # a plain GET: browsing stays allowed
    secret = next((s for p in uploads if (s := _secret(p, scope))), None)
    scope.send(network.url_hosts(url), secret, uploads, ())


def _secret(path: str, scope: Scope) -> str | None:
    return _tool_command(scope, "send", path).secret(path)
