"""Where a path named in a command points, as far as its text can tell, and what lives there.

Nothing here touches the file system: the guardian judges a call before it
runs, possibly on another machine. Paths are resolved textually (``..``
included); ``~``, ``~user``, ``$HOME`` and ``${HOME}`` are "a home directory",
and a path that starts with any other variable is of unknown place.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Literal


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# The directory relative paths start from: "" is the agent's working directory
# (taken to be its workspace); "/x" and "~/x" are known places; "a/b" and "../a"
# are relative to the workspace; None is unknown (after `cd "$DIR"`).
Cwd = str | None
Kind = Literal["abs", "home", "rel", "unknown"]
Protected = Literal["root", "system", "home"]

PROTECTED_LABELS: dict[Protected, str] = {
    "root": "the root directory",
    "system": "a system directory",
    "home": "a home directory",
}
# Top-level directories whose loss breaks the machine or loses everything mounted on it.
_SYSTEM = _words(
    "bin boot dev etc lib lib32 lib64 libx32 sbin usr var proc sys opt srv snap run mnt "
    "media nix System Library Applications private Volumes cores"
)
_HOMES = frozenset({"home", "Users"})
# Where even one deleted file can break the system.
_SYSTEM_FILES = _words("bin boot dev etc lib lib32 lib64 libx32 sbin usr System")
_GLOB = re.compile(r"[*?\[{]")
_HOME_PREFIX = re.compile(r"^(?:~[^/]*|\$HOME|\$\{HOME\})(?=/|$)")
_PWD_PREFIX = re.compile(r"^(?:\$PWD|\$\{PWD\}|\$\(pwd\)|`pwd`)(?=/|$)")
# A variable or a command substitution: the text cannot tell what it holds.
_VAR_PREFIX = re.compile(r"^(?:\$(?:\{[^}]*\}?|\([^)]*\)?|[A-Za-z_]\w*|[@*#?$!0-9-])|`[^`]*`?)")
# Block devices: writing to one destroys whatever file system it held.
_DISK = re.compile(
    r"^/dev/(?:[shv]d[a-z]|xvd[a-z]|nvme\d|mmcblk\d|r?disk\d|md\d|dm-\d|loop\d|nbd\d|sr\d"
    r"|mapper/|disk/|root$|mtdblock\d|ubi|zd\d|rbd\d|bcache\d|sg\d)"
)

_SSH_KEY = "an SSH private key"
# Credential files, by the trailing components of their path (globs allowed).
_CREDENTIAL_TAILS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (_SSH_KEY, (".ssh", "id_*")),
    ("AWS credentials", (".aws", "credentials")),
    ("AWS cached tokens", (".aws", "sso", "cache", "*")),
    ("AWS cached tokens", (".aws", "cli", "cache", "*")),
    ("a netrc file", (".netrc",)),
    ("Docker registry credentials", (".docker", "config.json")),
    ("a Kubernetes config", (".kube", "config")),
    ("git credentials", (".git-credentials",)),
    ("Google Cloud credentials", (".config", "gcloud", "*credentials*")),
    ("Google Cloud credentials", (".config", "gcloud", "legacy_credentials", "*", "*")),
    ("a GitHub CLI token", (".config", "gh", "hosts.yml")),
    ("an npm token file", (".npmrc",)),
    ("PyPI credentials", (".pypirc",)),
    ("a PostgreSQL password file", (".pgpass",)),
    ("a GnuPG private key", (".gnupg", "private-keys-v1.d", "*")),
    ("Azure tokens", (".azure", "msal_token_cache.*")),
    ("Azure tokens", (".azure", "accessTokens.json")),
)
# Directories made of credentials: copying or archiving them takes the keys along.
_CREDENTIAL_DIRS: tuple[tuple[str, ...], ...] = (
    (".ssh",),
    (".aws",),
    (".gnupg",),
    (".kube",),
    (".docker",),
    (".config", "gcloud"),
    (".password-store",),
)
_SYSTEM_SECRETS: tuple[tuple[str, str], ...] = (
    ("the system password hashes", "etc/shadow"),
    ("the system password hashes", "etc/shadow-"),
    ("the system password hashes", "etc/gshadow"),
    ("the system password hashes", "etc/gshadow-"),
    ("the system password hashes", "etc/master.passwd"),
    ("an SSH host key", "etc/ssh/ssh_host_*_key"),
)
_SSH_KEY_NAMES = ("id_rsa", "id_dsa", "id_ecdsa", "id_ed25519", "id_ecdsa_sk", "id_ed25519_sk")
_KEY_SUFFIXES = (".key", ".p12", ".pfx", ".ppk", ".jks", ".keystore")
# A .pem holding one of these words is a certificate or a public key, not a secret.
_PUBLIC_PEM = re.compile(r"cert|chain|bundle|pub|(?:^|[-_.])ca(?:[-_.]|$)", re.I)
# Every credential path above holds one of these; most paths hold none, and
# skipping them keeps a command with thousands of arguments cheap to check.
_MAYBE_CREDENTIAL = re.compile(
    r"\.(?:ssh|aws|netrc|docker|kube|git-credentials|config|npmrc|pypirc|pgpass|gnupg|azure"
    r"|password-store|env)|shadow|master\.passwd|ssh_host_|id_(?:rsa|dsa|ecdsa|ed25519)"
    r"|\.(?:pem|key|p12|pfx|ppk|jks|keystore)$",
    re.I,
)
# Committed templates of a .env file: they hold no secrets.
_ENV_TEMPLATES = frozenset({"example", "sample", "template", "dist", "defaults", "tpl"})


@dataclass(frozen=True, slots=True)
class Place:
    kind: Kind
    parts: tuple[str, ...]
    # An unknown place whose variable is followed by "/": empty, it makes the path absolute.
    dangling: bool = False

    @property
    def escapes(self) -> bool:
        """A relative path that climbs above the directory it starts from."""
        return self.kind == "rel" and self.parts[:1] == ("..",)

    def text(self) -> str:
        body = "/".join(self.parts)
        if self.kind == "abs":
            return "/" + body
        if self.kind == "home":
            return "~/" + body if body else "~"
        return body


def locate(text: str, cwd: Cwd = "") -> Place:
    if m := _HOME_PREFIX.match(text):
        return _resolve("home", text[m.end() :])
    if m := _PWD_PREFIX.match(text):
        text = text[m.end() :].lstrip("/")
    elif m := _VAR_PREFIX.match(text):
        rest = text[m.end() :]
        return Place("unknown", tuple(p for p in rest.split("/") if p), rest.startswith("/"))
    if text.startswith("/"):
        return _resolve("abs", text)
    if cwd is None:
        return Place("unknown", tuple(p for p in text.split("/") if p))
    if cwd:
        return locate(cwd.rstrip("/") + "/" + text)
    return _resolve("rel", text)


def _resolve(kind: Kind, path: str) -> Place:
    parts: list[str] = []
    for part in path.split("/"):
        if part in ("", "."):
            continue
        if part != "..":
            parts.append(part)
        elif parts and parts[-1] != "..":
            parts.pop()
        elif kind == "home":
            # Above a home directory: /home, /Users, or / for root. Assume the worst.
            return Place("abs", ())
        elif kind == "rel":
            parts.append("..")
    return Place(kind, tuple(parts))


def _fixed(parts: tuple[str, ...]) -> tuple[str, ...]:
    """The components before the first glob: the directory whose children a glob reaches."""
    for i, part in enumerate(parts):
        if _GLOB.search(part):
            return parts[:i]
    return parts


def protected(place: Place) -> Protected | None:
    """Whether losing the place, recursively, is a disaster: /, a system or a home directory."""
    fixed = _fixed(place.parts)
    if place.kind == "home":
        return "home" if not fixed else None
    if place.kind != "abs":
        return None
    if not fixed:
        return "root"
    top = fixed[0]
    if len(fixed) == 1:
        if top in _HOMES or top == "root":
            return "home"
        return "system" if top in _SYSTEM else None
    if len(fixed) == 2:
        if top in _HOMES:
            return "home"
        if top == "usr":
            return "system"
    return None


def system_file(place: Place) -> bool:
    return (
        place.kind == "abs"
        and bool(place.parts)
        and place.parts[0] in _SYSTEM_FILES
        and place.parts[:2] != ("usr", "local")
    )


def inside(place: Place, workspace: Sequence[Place]) -> bool:
    """Whether an absolute or home place lies in one of the workspace directories."""
    return any(
        w.kind == place.kind and place.parts[: len(w.parts)] == w.parts
        for w in workspace
        if w.kind in ("abs", "home")
    )


def is_disk(text: str) -> bool:
    place = locate(text)
    return place.kind == "abs" and _DISK.match(place.text()) is not None


def _part_matches(actual: str, pattern: str) -> bool:
    if fnmatchcase(actual, pattern):
        return True
    # A glob in the command ("~/.ssh/*") reaches the file the pattern names,
    # but, as in the shell, a dot file only when the glob itself starts with a dot.
    reaches_dot_files = actual.startswith(".") or not pattern.startswith(".")
    return bool(_GLOB.search(actual)) and reaches_dot_files and fnmatchcase(pattern, actual)


def _tail_matches(parts: tuple[str, ...], pattern: tuple[str, ...]) -> bool:
    return len(parts) >= len(pattern) and all(
        _part_matches(a, p) for a, p in zip(parts[-len(pattern) :], pattern, strict=True)
    )


def credential(place: Place) -> str | None:
    """What kind of credential file the place names, if any; the label is safe to show."""
    parts = place.parts
    if not parts or not (_GLOB.search(parts[-1]) or _MAYBE_CREDENTIAL.search("/".join(parts))):
        return None
    if place.kind == "abs":
        joined = "/".join(parts)
        for label, pattern in _SYSTEM_SECRETS:
            if _part_matches(joined, pattern):
                return label
    for label, tail in _CREDENTIAL_TAILS:
        if _tail_matches(parts, tail) and not (label == _SSH_KEY and parts[-1].endswith(".pub")):
            return label
    if any(_tail_matches(parts, d) for d in _CREDENTIAL_DIRS):
        return "a directory of credentials"
    name = parts[-1]
    if _part_matches(name, ".env") or (
        name.startswith(".env.") and name.rsplit(".", 1)[-1].lower() not in _ENV_TEMPLATES
    ):
        return "a .env file"
    lowered = name.lower()
    if (
        lowered in _SSH_KEY_NAMES
        or lowered.endswith(_KEY_SUFFIXES)
        or (lowered.endswith(".pem") and not _PUBLIC_PEM.search(lowered[:-4]))
    ):
        return "a private key file"
    return None
