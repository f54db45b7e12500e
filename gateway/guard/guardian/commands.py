"""Walking a shell script: each command in it, and each script inside it, gets its check.

The walk follows what a shell would do, as far as text allows: ``cd`` moves
the directory relative paths start from (in a subshell only until it ends),
plain ``NAME=value`` assignments are substituted later on, a ``git checkout``
names the branch a bare ``git push`` pushes, and a download saved to a file
makes running that file a download run. Wrappers (sudo, env, nice, timeout,
xargs, ...) are taken off first (wrappers.py). Scripts handed to a shell
(``bash -c``, ``su -c``, here-documents, ``echo ... | sh``), to ``eval``, to
``ssh``, and those inside substitutions are walked too, to a bounded depth: a
script nested deeper than that is rated high rather than left unread.

Every finding carries the command texts a user might have quoted: the command
itself, its pipeline, its script and the scripts around it (``context``).
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable

from gateway.guard.guardian import checks, network, shell
from gateway.guard.guardian.authorization import Action
from gateway.guard.guardian.context import Command, Flow, Scope
from gateway.guard.guardian.paths import Cwd, is_disk, locate
from gateway.guard.guardian.wrappers import ASSIGN, unwrap


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


MAX_DEPTH = 12

_VAR_REF = re.compile(r"\$\{([A-Za-z_]\w*)\}|\$([A-Za-z_]\w*)")
_NAME = r"[^\s(){}|&;<>]+"
_FORK_BOMBS = (
    # name(){ name|name& }: each call starts two more, until the machine stalls.
    re.compile(rf"(?P<n>{_NAME})\s*\(\s*\)\s*\{{[^}}]*?(?P=n)\s*\|\s*&?\s*(?P=n)\s*&"),
    re.compile(rf"\bfunction\s+(?P<n>{_NAME})\s*(?:\(\s*\))?\s*\{{[^}}]*?(?P=n)\s*\|\s*(?P=n)\s*&"),
    re.compile(r"\bfork\s+while\s+fork\b"),
    re.compile(r"while\s*(?:True|1)\s*:\s*os\.fork\(\)"),
)
_PS_RUN = re.compile(r"(?<![\w-])(?:iex|invoke-expression)(?![\w-])", re.I)
_PS_FETCH = re.compile(
    r"(?<![\w-])(?:iwr|irm|invoke-webrequest|invoke-restmethod|curl|wget|start-bitstransfer)"
    r"(?![\w-])|downloadstring|downloadfile|net\.webclient",
    re.I,
)
SHELLS = _words("sh bash zsh dash ksh mksh ash fish csh tcsh yash")
_INTERPRETER = re.compile(r"^(python|perl|ruby|node|php|lua)(?:js)?[\d.]*$")
# Options that take the program text, per interpreter; and options after which
# the rest is the program's own arguments (python -m).
_CODE = {
    "python": ("-c",),
    "perl": ("-e", "-E"),
    "ruby": ("-e",),
    "node": ("-e", "--eval", "-p", "--print"),
    "php": ("-r",),
    "lua": ("-e",),
}
_VALUE = {"python": ("-W", "-X"), "node": ("-r", "--require", "--import", "--loader")}


def walk(script: str, scope: Scope, outer: tuple[str, ...] = (), *, subshell: bool = True) -> Flow:
    """Check every command of a script; returns what the script's output may carry."""
    summary = Flow()
    if not script.strip():
        return summary
    context = _texts((script,), outer)
    if scope.depth >= MAX_DEPTH:
        scope.add("high", "nests scripts too deeply to be checked", Action("run", context))
        return summary
    _patterns(script, scope, context)
    scope.depth += 1
    saved = scope.cwd
    try:
        _run(shell.parse(script), script, scope, context, summary)
    except RecursionError:
        scope.add("high", "nests scripts too deeply to be checked", Action("run", context))
    finally:
        scope.depth -= 1
        if subshell:
            scope.cwd = saved
    return summary


def _texts(own: tuple[str, ...], context: tuple[str, ...]) -> tuple[str, ...]:
    # Only the new texts are stripped: stripping a long script again for each
    # of its commands would cost time quadratic in its length.
    fresh = (t.strip() for t in own)
    return tuple(dict.fromkeys((*(t for t in fresh if t), *context)))


def _patterns(script: str, scope: Scope, commands: tuple[str, ...]) -> None:
    """What is plain from the text alone, whatever the syntax around it."""
    if any(p.search(script) for p in _FORK_BOMBS):
        scope.add("critical", "starts a fork bomb", Action("run", commands))
    if _PS_RUN.search(script) and _PS_FETCH.search(script):
        scope.add("high", "runs code that PowerShell downloads", Action("run-download", commands))


def _run(
    pipelines: list[shell.Pipeline],
    src: str,
    scope: Scope,
    context: tuple[str, ...],
    summary: Flow,
) -> None:
    for p in pipelines:
        text = src[p.start : p.end]
        flows = [_stage(stage, src, text, scope, context) for stage in p.stages]
        _across(p, flows, _texts((text,), context), scope)
        for flow in flows:
            summary.merge(flow)


def _stage(
    stage: shell.Simple | shell.Group, src: str, pipe: str, scope: Scope, context: tuple[str, ...]
) -> Flow:
    if isinstance(stage, shell.Simple):
        return _simple(stage, src, pipe, scope, context)
    flow = Flow()
    saved = scope.cwd
    _run(stage.body, src, scope, context, flow)
    if stage.subshell:
        scope.cwd = saved
    return flow


def _across(p: shell.Pipeline, flows: list[Flow], commands: tuple[str, ...], scope: Scope) -> None:
    """The checks that need the whole pipeline: what flows from one command into the next."""
    fetched: list[str | None] | None = None  # hosts downloaded from by earlier commands
    secret: str | None = None  # a credential an earlier command printed
    hidden = False  # an earlier command decoded something the text does not show
    for j, flow in enumerate(flows):
        if flow.decodes:
            # "echo cm0gLXJmIC8= | base64 -d | sh": decode the literal to read it.
            literal = flows[j - 1].prints if j else None
            flow.prints = _base64(literal) if literal is not None else None
            hidden = hidden or flow.prints is None
        if flow.runs_stdin and fetched is not None:
            hosts = tuple(dict.fromkeys(h for h in fetched if h))
            action = Action("run-download", commands, hosts=hosts)
            scope.add("high", "pipes a download into a shell or interpreter", action)
        elif flow.runs_stdin and j and flows[j - 1].prints is not None:
            walk(flows[j - 1].prints or "", scope, commands)
        elif flow.runs_stdin and hidden:
            scope.add("high", "runs code it decodes on the fly", Action("run", commands))
        if flow.sends_stdin is not None and j:
            scope.send(flow.sends_stdin, secret, (), commands)
        if flow.downloads is not None:
            fetched = fetched if fetched is not None else []
            fetched.extend(flow.downloads)
        secret = secret or flow.secret
    last = p.stages[-1]
    if isinstance(last, shell.Simple) and any(f.downloads is not None for f in flows):
        for r in last.redirects:
            if r.op in (">", ">>", ">|", "&>") and not r.target.text.startswith("/dev/"):
                scope.downloaded.add(locate(r.target.text, scope.cwd).text())


def _base64(text: str) -> str | None:
    try:
        return base64.b64decode("".join(text.split()), validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        return None


def _expand(word: shell.Word, variables: dict[str, str]) -> shell.Word:
    if not variables or "$" not in word.text:
        return word

    def value(m: re.Match[str]) -> str:
        return variables.get(m.group(1) or m.group(2), m.group(0))

    return shell.Word(_VAR_REF.sub(value, word.text), word.subs, word.proc_sub)


def _assign(words: list[shell.Word], scope: Scope) -> None:
    for w in words:
        if m := ASSIGN.match(w.text):
            if w.subs:  # a value from $(...) is unknown
                scope.variables.pop(m.group(1), None)
            else:
                scope.variables[m.group(1)] = m.group(2)


def _cwd(text: str, cwd: Cwd) -> Cwd:
    place = locate(text, cwd)
    return None if place.kind == "unknown" else place.text()


def _simple(cmd: shell.Simple, src: str, pipe: str, scope: Scope, context: tuple[str, ...]) -> Flow:
    commands = _texts((src[cmd.start : cmd.end], pipe), context)
    flow = Flow()
    sub_flows: dict[int, Flow] = {}
    words = [_expand(w, scope.variables) for w in cmd.words]
    for w in words:
        if w.subs:
            sub_flow = sub_flows[id(w)] = Flow()
            for sub in w.subs:
                sub_flow.merge(walk(sub, scope, commands))
            flow.merge(sub_flow)
    stdin_path, stdin_text, net_hosts = _redirects(cmd, scope, commands)
    if words and all(ASSIGN.match(w.text) for w in words):
        _assign(words, scope)
        return flow
    words, chdir, nested, via_xargs = unwrap(words)
    if nested is not None:
        walk(nested, scope, commands)
    if words:
        c = Command(scope, words, commands, flow, sub_flows, stdin_path, stdin_text, via_xargs)
        saved = scope.cwd
        if chdir is not None:
            scope.cwd = _cwd(chdir, scope.cwd)
        try:
            _dispatch(c)
            if stdin_path is not None and (secret := c.secret(stdin_path)):
                checks.reads(c, stdin_path, secret)
        finally:
            if chdir is not None:
                scope.cwd = saved
    if net_hosts:
        scope.send(net_hosts, flow.secret, [stdin_path] if stdin_path else [], commands)
    return flow


def _redirects(
    cmd: shell.Simple, scope: Scope, commands: tuple[str, ...]
) -> tuple[str | None, str | None, list[str | None]]:
    """Disk writes through redirects; and the command's standard input and network output."""
    stdin_path: str | None = None
    stdin_text: str | None = None
    net_hosts: list[str | None] = []
    for r in cmd.redirects:
        target = _expand(r.target, scope.variables).text
        for sub in r.target.subs:
            walk(sub, scope, commands)
        if r.op in shell.OUTPUT_REDIRECTS:
            if is_disk(target):
                action = Action("format-disk", commands, paths=(target,))
                scope.add("critical", "writes straight to a disk device", action)
            if (host := network.dev_net_host(target)) is not None:
                net_hosts.append(host)
        if r.op in ("<", "<>"):
            stdin_path = target
        elif r.op in ("<<", "<<-"):
            stdin_text = r.body
        elif r.op == "<<<":
            stdin_text = target
    return stdin_path, stdin_text, net_hosts


def _dispatch(c: Command) -> None:
    name = c.name
    local = _LOCAL.get(name)
    if local is not None:
        local(c)
    elif name in SHELLS:
        _shell(c)
    elif m := _INTERPRETER.match(name):
        _interpreter(c, m.group(1))
        checks.other(c)
    else:
        checks.check_for(name)(c)
    first = c.words[0].text
    if "/" in first and c.place(first).text() in c.scope.downloaded:
        _runs_download(c, "runs a script it has just downloaded")


def _runs_download(c: Command, rule: str, hosts: tuple[str | None, ...] = ()) -> None:
    named = tuple(dict.fromkeys(h for h in hosts if h))
    c.add("high", rule, Action("run-download", c.commands, hosts=named))


def _runs_substitution(c: Command, index: int) -> None:
    """Code built by a substitution ("$(curl ...)", "$(echo ... | base64 -d)") is unseen code."""
    hosts = c.downloads(index)
    flow = c.sub_flows.get(id(c.words[index])) if index < len(c.words) else None
    if hosts is not None:
        _runs_download(c, "runs code straight from a download", hosts)
    elif flow is not None and flow.decodes:
        c.add("high", "runs code it decodes on the fly", Action("run", c.commands))


def _runs_file(c: Command, index: int) -> None:
    """The script file a shell or interpreter is given: a download is a download run."""
    word = c.words[index]
    hosts = c.downloads(index)
    if word.proc_sub and hosts is not None:
        _runs_download(c, "runs a script straight from a download", hosts)
    elif c.place(word.text).text() in c.scope.downloaded:
        _runs_download(c, "runs a script it has just downloaded")


def _shell(c: Command) -> None:
    args = c.args
    has_script = reads_stdin = False
    i = 1
    while i < len(args):
        a = args[i]
        if a == "--":
            i += 1
            break
        if a == "-":
            break
        if a in ("-o", "+o", "-O", "+O", "--rcfile", "--init-file"):
            i += 2
            continue
        if not a.startswith(("-", "+")):
            break
        if a.startswith("-") and not a.startswith("--"):
            has_script = has_script or "c" in a
            reads_stdin = reads_stdin or "s" in a
        i += 1
    if has_script:
        if i < len(args):
            _runs_substitution(c, i)
            walk(args[i], c.scope, c.commands)
        return
    if i >= len(args) or args[i] == "-" or reads_stdin:
        c.flow.runs_stdin = True
        if c.stdin_text is not None:
            walk(c.stdin_text, c.scope, c.commands)
        return
    _runs_file(c, i)


def _interpreter(c: Command, family: str) -> None:
    args = c.args
    code = _CODE.get(family, ())
    i = 1
    while i < len(args):
        a = args[i]
        if a in code or (a[:2] in code and len(a) > 2):
            at = i + 1 if a in code else i
            _runs_substitution(c, at)
            if at < len(args):
                _system_calls(c, args[at] if a in code else a[2:])
            return
        if a == "-m" and family == "python":
            return
        if a == "--":
            i += 1
            break
        if a == "-" or not a.startswith("-"):
            break
        i += 2 if a in _VALUE.get(family, ()) else 1
    if i >= len(args) or args[i] == "-":
        c.flow.runs_stdin = True
    else:
        _runs_file(c, i)


# A shell command written out in a program: os.system("..."), subprocess.run("...", shell=True),
# system('...'), execSync("..."), backticks in Perl or Ruby.
_SYSTEM_CALL = re.compile(
    r"""(?:system|popen|getoutput|getstatusoutput|check_output|check_call|call|run|exec"""
    r"""|execSync|spawnSync|shell_exec|passthru)\s*\(\s*[rbuf]?(['"])(.+?)(?<!\\)\1"""
    r"""|`([^`]+)`|\bqx\{([^}]+)\}""",
    re.S,
)


def _system_calls(c: Command, code: str) -> None:
    for m in _SYSTEM_CALL.finditer(code):
        walk(m.group(2) or m.group(3) or m.group(4) or "", c.scope, c.commands)


def _powershell(c: Command) -> None:
    args = c.args
    for k, a in enumerate(args[1:], start=1):
        option = a.lower()
        if option in ("-command", "-c", "/c") and k + 1 < len(args):
            walk(" ".join(args[k + 1 :]), c.scope, c.commands)
            return
        if option in ("-encodedcommand", "-enc", "-e", "-ec") and k + 1 < len(args):
            try:
                decoded = base64.b64decode(args[k + 1], validate=False).decode(
                    "utf-16-le", "replace"
                )
            except (binascii.Error, ValueError):
                decoded = ""
            walk(decoded, c.scope, c.commands)
            return
        if option in ("-", "-file") and k + 1 >= len(args):
            c.flow.runs_stdin = True
    if len(args) == 1:
        c.flow.runs_stdin = True


def _cmd_exe(c: Command) -> None:
    args = c.args
    for k, a in enumerate(args[1:], start=1):
        if a.lower() in ("/c", "/k"):
            walk(" ".join(args[k + 1 :]), c.scope, c.commands)
            return


def _eval(c: Command) -> None:
    for k in range(1, len(c.words)):
        _runs_substitution(c, k)
    walk(" ".join(c.args[1:]), c.scope, c.commands, subshell=False)


def _source(c: Command) -> None:
    if len(c.words) > 1:
        _runs_file(c, 1)


def _echo(c: Command) -> None:
    args = c.args[1:]
    if c.name == "printf":
        c.flow.prints = shell.unescape(args[0]) if args else ""
    else:
        while args and re.fullmatch(r"-[neE]+", args[0]):
            args = args[1:]
        c.flow.prints = " ".join(args)


def _cd(c: Command) -> None:
    target = next((a for a in c.args[1:] if not a.startswith("-") or a == "-"), "~")
    c.scope.cwd = None if target == "-" else _cwd(target, c.scope.cwd)


def _export(c: Command) -> None:
    _assign(c.words[1:], c.scope)


def _ssh(c: Command) -> None:
    host, remote = network.ssh(c.args)
    if remote:
        saved = c.scope.cwd
        c.scope.cwd = "~"  # the remote command starts in the remote home
        try:
            walk(" ".join(remote), c.scope, c.commands)
        finally:
            c.scope.cwd = saved
    c.flow.sends_stdin = (host,)
    if c.stdin_path is not None or c.stdin_text is not None:
        files = [c.stdin_path] if c.stdin_path else []
        secret = c.secret(c.stdin_path) if c.stdin_path else None
        c.scope.send([host], secret, files, c.commands)


_LOCAL: dict[str, Callable[[Command], None]] = {
    "cd": _cd,
    "pushd": _cd,
    "export": _export,
    "declare": _export,
    "local": _export,
    "readonly": _export,
    "typeset": _export,
    "eval": _eval,
    "source": _source,
    ".": _source,
    "echo": _echo,
    "printf": _echo,
    "ssh": _ssh,
    "pwsh": _powershell,
    "powershell": _powershell,
    "cmd": _cmd_exe,
}
