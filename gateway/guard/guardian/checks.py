"""The checks on single commands: deletes, disks, permissions, git push, reads and transfers.

Each check takes one :class:`Command` and adds findings to its scope; the
walk in ``commands.py`` decides which check a command gets.
"""

from __future__ import annotations

from collections.abc import Callable

from gateway.guard.guardian import network
from gateway.guard.guardian.assessment import RiskLevel
from gateway.guard.guardian.authorization import Action
from gateway.guard.guardian.context import Command
from gateway.guard.guardian.paths import (
    PROTECTED_LABELS,
    inside,
    is_disk,
    protected,
    system_file,
)


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


PROTECTED_BRANCHES = frozenset({"main", "master"})


def delete(c: Command, target: str, *, recursive: bool, selective: bool = False) -> None:
    """Rate deleting ``target``; ``selective`` deletes only what matches a test (find -name)."""
    place = c.place(target)
    action = Action("delete", c.commands, paths=(target,))
    whole = recursive and not selective
    kind = protected(place)
    if kind is not None:
        if whole:
            c.add("critical", f"recursively deletes {PROTECTED_LABELS[kind]}", action)
        else:
            c.add("high", f"deletes files in {PROTECTED_LABELS[kind]}", action)
    elif place.kind == "unknown":
        if whole and place.dangling:
            # Steam's "rm -rf $STEAMROOT/*": an empty variable leaves an absolute path.
            c.add("high", "recursively deletes a path under a variable that may be empty", action)
        elif whole:
            c.add("medium", "recursively deletes a path the guardian cannot resolve", action)
    elif place.kind == "rel":
        if place.escapes:
            risk: RiskLevel = "high" if whole else "medium"
            c.add(risk, "deletes files above the working directory", action)
    elif not inside(place, c.scope.workspace):
        if whole:
            c.add("high", "recursively deletes a path outside the workspace", action)
        elif system_file(place):
            c.add("high", "deletes a file in a system directory", action)
        else:
            c.add("medium", "deletes files outside the workspace", action)


def rm(c: Command) -> None:
    s = network.scan(c.args)
    recursive = s.has("-r", "-R", "--recursive")
    for _, target in s.operands:
        delete(c, target, recursive=recursive)
    if recursive and c.via_xargs:  # the paths come down the pipe: unknown here
        action = Action("delete", c.commands)
        c.add("medium", "recursively deletes paths read from its input", action)


def shred(c: Command) -> None:
    s = network.scan(c.args, "nsx", frozenset({"--iterations", "--size", "--random-source"}))
    for _, target in s.operands:
        if is_disk(target):
            action = Action("format-disk", c.commands, paths=(target,))
            c.add("critical", "overwrites a disk device", action)
        else:
            delete(c, target, recursive=False)


# find predicates that narrow what is deleted; -type alone does not.
_FIND_TESTS = _words(
    """-name -iname -path -ipath -wholename -iwholename -regex -iregex -lname -ilname -mtime
    -mmin -atime -amin -ctime -cmin -newer -anewer -cnewer -size -user -group -uid -gid -empty
    -perm -links -inum -samefile -nouser -nogroup -used -newermt"""
)


def find(c: Command) -> None:
    args = c.args
    i = 1
    while i < len(args) and (args[i] in ("-H", "-L", "-P", "-D") or args[i].startswith("-O")):
        i += 2 if args[i] == "-D" else 1
    starts = []
    while i < len(args) and not args[i].startswith(("-", "(", "!", ")")):
        starts.append(args[i])
        i += 1
    expression = args[i:]
    deletes = "-delete" in expression
    for k, word in enumerate(expression[:-1]):
        if word in ("-exec", "-execdir", "-ok", "-okdir"):
            deletes = deletes or expression[k + 1].rsplit("/", 1)[-1] in ("rm", "shred", "unlink")
    if deletes:
        selective = any(word in _FIND_TESTS for word in expression)
        for start in starts or ["."]:
            delete(c, start, recursive=True, selective=selective)


def permissions(c: Command) -> None:
    """chmod, chown, chgrp: a recursive change over / or a system directory breaks the machine."""
    s = network.scan(c.args, "", frozenset({"--reference", "--from"}))
    operands = [t for _, t in s.operands]
    if not s.has("--reference"):
        operands = operands[1:]  # the mode or the owner
    if not s.has("-R", "--recursive"):
        return
    for target in operands:
        kind = protected(c.place(target))
        action = Action("chmod", c.commands, paths=(target,))
        if kind in ("root", "system"):
            label = PROTECTED_LABELS[kind]
            c.add("critical", f"recursively changes the permissions or owner of {label}", action)
        elif kind == "home":
            c.add(
                "high", "recursively changes the permissions or owner of a home directory", action
            )


def dd(c: Command) -> None:
    for arg in c.args[1:]:
        key, _, value = arg.partition("=")
        if key == "of" and is_disk(value):
            action = Action("format-disk", c.commands, paths=(value,))
            c.add("critical", "writes straight to a disk device", action)
        elif key == "if" and (secret := c.secret(value)):
            reads(c, value, secret)


def format_disk(c: Command) -> None:
    """mkfs*, mkswap, wipefs, blkdiscard: formatting an image file is harmless, a disk is not."""
    operands = [a for a in c.args[1:] if not a.startswith("-")]
    devices = [a for a in operands if a.startswith(("/dev/", "$"))]
    if devices:
        action = Action("format-disk", c.commands, paths=tuple(devices))
        c.add("critical", "formats or wipes a disk device", action)
    elif operands:
        c.add("medium", "formats a file system image", Action("format-disk", c.commands))


def writes_to(c: Command) -> None:
    """tee, cp, mv, install, pv: a disk device as the destination; a credential as the source."""
    operands = [
        t for _, t in network.scan(c.args, "tS", frozenset({"--target-directory"})).operands
    ]
    copies = c.name in ("cp", "mv", "install")
    destinations = operands[-1:] if copies else operands
    for target in destinations:
        if is_disk(target):
            action = Action("format-disk", c.commands, paths=(target,))
            c.add("critical", "writes straight to a disk device", action)
    if copies:
        reader(c)


def git(c: Command) -> None:
    args = c.args
    i = 1
    while i < len(args) and args[i].startswith("-"):
        i += 2 if args[i] in ("-C", "-c", "--git-dir", "--work-tree", "--namespace") else 1
    if i >= len(args):
        return
    if args[i] in ("checkout", "switch"):
        s = network.scan(args, "bBcC", frozenset({"--orphan"}), start=i + 1)
        created = s.values("-b", "-B", "-c", "-C", "--orphan")
        branch = created[0].value if created else next((t for _, t in s.operands), None)
        if branch and not s.has("--"):
            c.scope.branch = branch
    elif args[i] == "push":
        push(c, i + 1)


def push(c: Command, start: int) -> None:
    """Force pushes and deletes. --mirror counts as a force push of every branch, main included."""
    s = network.scan(
        c.args,
        "o",
        frozenset({"--repo", "--push-option", "--receive-pack", "--exec"}),
        start=start,
    )
    if s.has("-n", "--dry-run"):
        return
    force = s.has("-f", "--force", "--force-with-lease", "--mirror")
    every = s.has("--mirror", "--all", "--branches")
    removes = s.has("-d", "--delete")
    refspecs = [t for _, t in s.operands[1:]]
    targets: list[tuple[str | None, bool, bool]] = []  # branch, forced, deleted
    for spec in refspecs:
        plus = spec.startswith("+")
        source, colon, destination = spec.lstrip("+").partition(":")
        branch = destination if colon else source
        if branch in ("HEAD", "@"):
            branch = c.scope.branch or ""  # unknown when no checkout named it
        branch = branch.removeprefix("refs/heads/")
        deleted = removes or (bool(colon) and not source)
        targets.append((branch or None, force or plus, deleted))
    if not refspecs:
        targets.append((None if every else c.scope.branch, force, False))
    for target, forced, deleted in targets:
        hits_protected = every or target in PROTECTED_BRANCHES
        named = (target,) if target and not every else ()
        action = Action("force-push", c.commands, branches=named)
        if deleted and hits_protected:
            c.add("high", "deletes a protected branch (main or master) on the remote", action)
        elif forced and hits_protected:
            c.add("high", "force-pushes a protected branch (main or master)", action)
        elif forced:
            c.add("medium", "force-pushes a branch", action)


# Programs that print, copy or pack the files they are given.
READERS = _words(
    """cat tac less more most head tail nl od xxd hexdump hd strings base64 base32 basenc
    uuencode tar zip 7z 7za gzip bzip2 xz zstd gpg openssl grep egrep fgrep rg ag ack awk gawk
    mawk sed sort uniq cut paste jq yq bat batcat view vi vim nvim nano emacs ed diff cmp comm
    column fold fmt pr rev xclip pbcopy split csplit iconv expand unexpand cpio"""
)
# Programs that use a credential file without showing its contents, or only name it.
QUIET = _words(
    """ls stat file test [ [[ touch chmod chown chgrp rm unlink shred mkdir rmdir ssh ssh-add
    ssh-keygen ssh-copy-id git echo printf source . export cd pushd realpath readlink dirname
    basename wc md5sum sha1sum sha256sum sha512sum b2sum cksum docker kubectl helm aws gcloud
    gh az terraform du df find ln which type code true false chattr lsattr"""
)


def reads(c: Command, path: str, secret: str) -> None:
    c.add("high", f"reads {secret}", Action("read", c.commands, paths=(path,)))
    c.flow.secret = c.flow.secret or secret


def reader(c: Command) -> None:
    """A reader given a credential file prints or copies its contents."""
    operands = [a.partition("=")[2] if a.startswith("--") else a for a in c.args[1:]]
    operands = [a for a in operands if a and not a.startswith("-")]
    if c.name in ("cp", "mv", "install") and "-t" not in c.args:
        operands = operands[:-1]
    for path in operands:
        if secret := c.secret(path):
            reads(c, path, secret)


def decoder(c: Command) -> None:
    """base64 and friends: decoding is how a command hides what it runs."""
    reader(c)
    if any(a in ("-d", "-D", "--decode", "-r", "--reverse") for a in c.args[1:]):
        c.flow.decodes = True


def other(c: Command) -> None:
    """Any other program handed a credential file may print it: worth noting, not refusing."""
    if c.name in QUIET:
        return
    for arg in c.args[1:]:
        path = arg.partition("=")[2] if arg.startswith("-") else arg
        if path and (secret := c.secret(path)):
            action = Action("read", c.commands, paths=(path,))
            c.add("medium", f"hands {secret} to another program", action)
            c.flow.secret = c.flow.secret or secret


def transfer(c: Command, t: network.Transfer) -> None:
    secret = None
    for name in t.files:
        secret = secret or c.secret(name)
    for k in t.data_words:
        flow = c.sub_flows.get(id(c.words[k])) if k < len(c.words) else None
        secret = secret or (flow.secret if flow else None)
    files = list(t.files)
    if t.stdin and c.stdin_path is not None:
        secret = secret or c.secret(c.stdin_path)
        files.append(c.stdin_path)
    c.scope.send(t.hosts, secret, files, c.commands)


def saved(c: Command, names: list[str]) -> None:
    for name in names:
        c.scope.downloaded.add(c.place(name).text())


def curl_like(c: Command) -> None:
    t = network.wget(c.args) if c.name == "wget" else network.curl(c.args)
    c.flow.downloads = tuple(t.hosts)
    saved(c, t.saves)
    if t.stdin:
        c.flow.sends_stdin = tuple(t.hosts)
    if t.sends:
        transfer(c, t)


def other_downloader(c: Command) -> None:
    """fetch, httpie, aria2c...: a first URL-looking operand is where it downloads from."""
    urls = [a for a in c.args[1:] if not a.startswith("-") and ("://" in a or "." in a)]
    c.flow.downloads = tuple(network.url_host(u) for u in urls[:1])


def copy(c: Command) -> None:
    t = network.copy(c.args, rsync=c.name == "rsync")
    if t.sends:
        transfer(c, t)


def netcat(c: Command) -> None:
    t, hands_shell = network.netcat(c.args)
    if not t.hosts:
        return
    c.flow.sends_stdin = tuple(t.hosts)
    if c.stdin_path is not None or c.stdin_text is not None or hands_shell:
        t.stdin = True
        transfer(c, t)


def socat(c: Command) -> None:
    t = network.socat(c.args)
    if not t.hosts:
        return
    c.flow.sends_stdin = tuple(t.hosts)
    if t.sends or c.stdin_path is not None:
        t.stdin = c.stdin_path is not None
        transfer(c, t)


CHECKS: dict[str, Callable[[Command], None]] = {
    "rm": rm,
    "unlink": rm,
    "srm": rm,
    "shred": shred,
    "find": find,
    "chmod": permissions,
    "chown": permissions,
    "chgrp": permissions,
    "dd": dd,
    "mke2fs": format_disk,
    "mkswap": format_disk,
    "mkdosfs": format_disk,
    "mkntfs": format_disk,
    "wipefs": format_disk,
    "blkdiscard": format_disk,
    "tee": writes_to,
    "cp": writes_to,
    "mv": writes_to,
    "install": writes_to,
    "pv": writes_to,
    "git": git,
    "curl": curl_like,
    "wget": curl_like,
    "fetch": other_downloader,
    "http": other_downloader,
    "https": other_downloader,
    "xh": other_downloader,
    "xhs": other_downloader,
    "aria2c": other_downloader,
    "lwp-request": other_downloader,
    "scp": copy,
    "rsync": copy,
    "nc": netcat,
    "ncat": netcat,
    "netcat": netcat,
    "socat": socat,
    "base64": decoder,
    "base32": decoder,
    "basenc": decoder,
    "xxd": decoder,
}


def check_for(name: str) -> Callable[[Command], None]:
    if name.startswith("mkfs"):
        return format_disk
    if name in CHECKS:
        return CHECKS[name]
    return reader if name in READERS else other
