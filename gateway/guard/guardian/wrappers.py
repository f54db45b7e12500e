"""Commands that run another command: sudo, env, nice, timeout, xargs, su -c and the like.

Taking them off shows the command that really runs. Each wrapper's options
that take a value are listed, so that a value is never taken for the command.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from gateway.guard.guardian import network
from gateway.guard.guardian.context import command_name
from gateway.guard.guardian.shell import Word

ASSIGN = re.compile(r"^([A-Za-z_]\w*)=(.*)$", re.S)


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


@dataclass(frozen=True, slots=True)
class Wrapper:
    short: str = ""  # short options that take a value
    long: frozenset[str] = frozenset()
    skip: int = 0  # operands before the command: timeout's duration, chroot's root
    chdir: tuple[str, ...] = ()
    script: tuple[str, ...] = ()  # options whose value a shell runs
    permute: bool = False  # options may follow operands (su)


_SU = Wrapper(
    "cgGsuw",
    frozenset({"--command", "--session-command", "--group", "--supp-group", "--shell", "--user"}),
    script=("-c", "--command", "--session-command"),
    permute=True,
)
WRAPPERS: dict[str, Wrapper] = {
    "sudo": Wrapper(
        "CDghpRrtTUu",
        _words("""--chdir --close-from --group --host --prompt --chroot --role --type
            --command-timeout --other-user --user"""),
        chdir=("-D", "--chdir"),
    ),
    "doas": Wrapper("uC"),
    "env": Wrapper(
        "uCS", frozenset({"--unset", "--chdir", "--split-string"}), chdir=("-C", "--chdir")
    ),
    "nice": Wrapper("n", frozenset({"--adjustment"})),
    "ionice": Wrapper("cnpPu", frozenset({"--class", "--classdata", "--pid", "--pgid", "--uid"})),
    "timeout": Wrapper("sk", frozenset({"--signal", "--kill-after"}), skip=1),
    "stdbuf": Wrapper("ioe", frozenset({"--input", "--output", "--error"})),
    "time": Wrapper("fo", frozenset({"--format", "--output"})),
    "exec": Wrapper("a"),
    "nohup": Wrapper(),
    "command": Wrapper(),
    "builtin": Wrapper(),
    "setsid": Wrapper(),
    "unbuffer": Wrapper(),
    "busybox": Wrapper(),
    "chroot": Wrapper("", frozenset({"--userspec", "--groups"}), skip=1),
    "taskset": Wrapper("", skip=1),
    "xargs": Wrapper(
        "IanPLdEs",
        _words("""--arg-file --delimiter --eof --max-lines --max-args --max-procs --max-chars
            --process-slot-var"""),
    ),
    "flock": Wrapper(
        "wEc", frozenset({"--timeout", "--command"}), skip=1, script=("-c", "--command")
    ),
    "watch": Wrapper("n", frozenset({"--interval"})),
    "su": _SU,
    "runuser": _SU,
}


def unwrap(
    words: list[Word],
) -> tuple[list[Word], str | None, str | None, bool]:
    """Take off sudo, env, timeout, xargs... and leading assignments.

    Returns the command's words, a directory it is started in, a script it
    hands to a shell (su -c), and whether xargs feeds it arguments.
    """
    chdir: str | None = None
    nested: str | None = None
    via_xargs = False
    for _ in range(16):  # wrappers of wrappers, but not forever
        while words and ASSIGN.match(words[0].text):
            words = words[1:]
        if not words:
            break
        name = command_name(words[0].text)
        spec = WRAPPERS.get(name)
        if spec is None:
            break
        argv = [w.text for w in words]
        s = network.scan(argv, spec.short, spec.long, first_operand_ends=not spec.permute)
        if (name == "command" and s.has("-v", "-V")) or (
            name == "sudo" and s.has("-e", "--edit", "-l", "--list")
        ):
            return [], chdir, nested, via_xargs  # a look-up or an edit, not a run
        chdir = next((o.value for o in s.values(*spec.chdir)), chdir)
        nested = next((o.value for o in s.values(*spec.script)), nested)
        if spec.permute:  # su and runuser run a shell; only -u names a command
            words = [words[k] for k, _ in s.operands] if s.has("-u", "--user") else []
            continue
        start = s.operands[0][0] + spec.skip if s.operands else len(words)
        rest = words[start:]
        for o in s.values("-S", "--split-string") if name == "env" else []:
            try:
                split = shlex.split(o.value or "")
            except ValueError:
                split = (o.value or "").split()
            rest = [Word(t) for t in split] + rest
        via_xargs = via_xargs or name == "xargs"
        if name == "watch":
            nested, rest = " ".join(w.text for w in rest), []
        if spec.script and nested is not None:
            rest = []
        words = rest
    return words, chdir, nested, via_xargs
