"""Where network commands talk to, and what they send: curl, wget, scp, rsync, nc, ssh.

Also the generic option scanner the command checks share: it knows which
options take a value, so that a value is never mistaken for a URL, a path or
the command to run.
"""

from __future__ import annotations

import ipaddress
import posixpath
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from urllib.parse import urlsplit


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


@dataclass(frozen=True, slots=True)
class Opt:
    name: str  # "-d" or "--data"
    value: str | None
    index: int  # the argv index of the word holding the value (or the option)


@dataclass(slots=True)
class Scan:
    opts: list[Opt] = field(default_factory=list)
    operands: list[tuple[int, str]] = field(default_factory=list)

    def has(self, *names: str) -> bool:
        return any(o.name in names for o in self.opts)

    def values(self, *names: str) -> list[Opt]:
        return [o for o in self.opts if o.name in names and o.value is not None]


def scan(
    argv: Sequence[str],
    short_values: str = "",
    long_values: frozenset[str] = frozenset(),
    *,
    start: int = 1,
    first_operand_ends: bool = False,
) -> Scan:
    """Split argv[start:] into options and operands, getopt style.

    Short options may be clustered ("-sSLo out"), the last one taking the rest
    of its word or the next word as its value; long options take "--x=v" or
    "--x v". With ``first_operand_ends`` (wrappers such as sudo), everything
    from the first operand on is an operand.
    """
    out = Scan()
    i = start
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            out.operands.extend((k, argv[k]) for k in range(i + 1, len(argv)))
            break
        if arg.startswith("--"):
            name, eq, value = arg.partition("=")
            if eq:
                out.opts.append(Opt(name, value, i))
            elif name in long_values:
                out.opts.append(Opt(name, argv[i + 1] if i + 1 < len(argv) else "", i + 1))
                i += 1
            else:
                out.opts.append(Opt(name, None, i))
        elif arg.startswith("-") and len(arg) > 1:
            for j in range(1, len(arg)):
                if arg[j] in short_values:
                    if j + 1 < len(arg):
                        out.opts.append(Opt("-" + arg[j], arg[j + 1 :], i))
                    else:
                        out.opts.append(
                            Opt("-" + arg[j], argv[i + 1] if i + 1 < len(argv) else "", i + 1)
                        )
                        i += 1
                    break
                out.opts.append(Opt("-" + arg[j], None, i))
        else:
            if first_operand_ends:
                out.operands.extend((k, argv[k]) for k in range(i, len(argv)))
                break
            out.operands.append((i, arg))
        i += 1
    return out


_SCHEME = re.compile(r"^[a-z][a-z0-9+.-]*://", re.I)


def url_host(url: str) -> str | None:
    """The host a URL (or a bare "host/path") names; None when the text cannot tell."""
    hosts = url_hosts(url)
    return hosts[0] if len(hosts) == 1 else None


def url_hosts(url: str) -> list[str | None]:
    """Every host a client may read the URL as: one, unless a backslash makes them differ.

    Browsers read "\\" as "/" in http URLs, so "http://good\\@evil/" goes to good;
    curl keeps it in the user name and goes to evil. Both count.
    """
    text = url.strip()
    if not _SCHEME.match(text):
        text = "http://" + text
    found = [_host_of(text), _host_of(text.replace("\\", "/"))]
    return list(dict.fromkeys(found))


def _host_of(url: str) -> str | None:
    try:
        host = urlsplit(url).hostname
    except ValueError:
        return None
    if not host or re.search(r"[$`{}()\s\\]", host):
        return None
    return host.rstrip(".")


def is_loopback(host: str) -> bool:
    if host in ("localhost", "0.0.0.0") or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def host_allowed(host: str, patterns: Sequence[str]) -> bool:
    """Exact names, or "*.example.com" for any name below example.com (not example.com itself)."""
    host = host.lower().rstrip(".")
    if is_loopback(host):
        return True
    for pattern in patterns:
        p = pattern.strip().lower().rstrip(".")
        if p.startswith("*.") and host.endswith(p[1:]):
            return True
        if host == p:
            return True
    return False


def remote_host(spec: str) -> str | None:
    """The host of an scp/rsync location ("user@host:path", "host::module", "rsync://host/x")."""
    if _SCHEME.match(spec):
        return url_host(spec)
    if spec.startswith(("/", ".", "~")):
        return None
    m = re.match(r"^(?:[^@/:]+@)?(\[[^\]]+\]|[^/:@]+)::?", spec)
    if m is None:
        return None
    host = m.group(1).strip("[]").lower()
    return None if re.search(r"[$`{}]", host) else host


def bare_host(text: str) -> str | None:
    """A host named on its own ("user@host", "[::1]"), as ssh and nc take it."""
    host = text.rsplit("@", 1)[-1].strip("[]").lower().rstrip(".")
    return None if not host or re.search(r"[$`{}()/\s]", host) else host


@dataclass(slots=True)
class Transfer:
    """What one network command does with data."""

    hosts: list[str | None] = field(default_factory=list)
    sends: bool = False  # sends local data, not just a request
    files: list[str] = field(default_factory=list)  # local files whose contents it sends
    data_words: list[int] = field(default_factory=list)  # argv indices of inline data
    stdin: bool = False  # sends its standard input
    saves: list[str] = field(default_factory=list)  # files it stores a download in


_CURL_SHORT = "AbcCdDeEFHKmoPQrtTuUwxXyYz"
_CURL_LONG = _words(
    """--data --data-ascii --data-binary --data-raw --data-urlencode --json --form --form-string
    --upload-file --request --header --output --user --user-agent --referer --cookie
    --cookie-jar --config --max-time --connect-timeout --retry --retry-delay --retry-max-time
    --proxy --proxy-user --cacert --capath --cert --key --cert-type --key-type --pass --resolve
    --connect-to --interface --limit-rate --max-filesize --output-dir --range --write-out --url
    --oauth2-bearer --dns-servers --ciphers --continue-at --dump-header --trace --trace-ascii
    --stderr --unix-socket --abstract-unix-socket --variable --aws-sigv4 --proxy-header --noproxy
    --local-port --mail-from --mail-rcpt --create-file-mode --keepalive-time --speed-limit
    --speed-time --time-cond --tls-max --pinnedpubkey --socks4 --socks4a --socks5
    --socks5-hostname --preproxy --proto --proto-redir --request-target --quote --netrc-file
    --max-redirs --parallel-max --doh-url --expect100-timeout --happy-eyeballs-timeout-ms
    --hostpubmd5 --hostpubsha256 --login-options --sasl-authzid --service-name --ftp-port
    --crlfile --engine --krb --proxy-cacert --proxy-cert --proxy-key --proxy-pass
    --retry-connrefused-delay --etag-save --etag-compare --alt-svc --hsts"""
)
_CURL_DATA = frozenset({"-d", "--data", "--data-ascii", "--data-binary", "--json"})


def curl(argv: Sequence[str]) -> Transfer:
    s = scan(argv, _CURL_SHORT, _CURL_LONG)
    t = Transfer()
    urls = [arg for _, arg in s.operands] + [o.value or "" for o in s.values("--url")]
    for o in s.opts:
        value = o.value or ""
        if o.name in _CURL_DATA or o.name in ("--data-raw", "--data-urlencode"):
            t.sends = True
            t.data_words.append(o.index)
            if o.name == "--data-raw":
                continue
            m = re.match(
                r"^(?:[^=@]*@|@)(.*)$" if o.name == "--data-urlencode" else r"^@(.*)$", value
            )
            if m:
                _data_file(t, m.group(1))
        elif o.name in ("-F", "--form"):
            t.sends = True
            t.data_words.append(o.index)
            if m := re.match(r"^[^=]*=[@<]([^;]*)", value):
                _data_file(t, m.group(1))
        elif o.name == "--form-string":
            t.sends = True
            t.data_words.append(o.index)
        elif o.name in ("-T", "--upload-file"):
            t.sends = True
            _data_file(t, "-" if value == "." else value)
        elif o.name in ("-o", "--output") and value != "-":
            t.saves.append(value)
    if s.has("-O", "--remote-name", "--remote-name-all"):
        t.saves.extend(_remote_name(u) for u in urls)
    t.hosts = [h for u in urls for h in url_hosts(u)]
    return t


def _data_file(t: Transfer, name: str) -> None:
    if name == "-":
        t.stdin = True
    elif name:
        t.files.append(name)


def _remote_name(url: str) -> str:
    path = urlsplit(url if _SCHEME.match(url) else "http://" + url).path
    return posixpath.basename(path) or "index.html"


_WGET_SHORT = "OoaeiPtTUQwlARDIXB"
_WGET_LONG = _words(
    """--output-document --output-file --append-output --execute --input-file --directory-prefix
    --tries --timeout --user-agent --quota --wait --level --accept --reject --domains
    --include-directories --exclude-directories --base --header --post-data --post-file
    --body-data --body-file --method --user --password --http-user --http-password
    --load-cookies --save-cookies --referer --ca-certificate --certificate --private-key
    --limit-rate --bind-address --dns-timeout --connect-timeout --read-timeout --waitretry
    --restrict-file-names --progress --proxy-user --proxy-password --ca-directory"""
)


def wget(argv: Sequence[str]) -> Transfer:
    s = scan(argv, _WGET_SHORT, _WGET_LONG)
    t = Transfer()
    urls = [arg for _, arg in s.operands]
    for o in s.values("--post-data", "--body-data"):
        t.sends = True
        t.data_words.append(o.index)
    for o in s.values("--post-file", "--body-file"):
        t.sends = True
        _data_file(t, o.value or "")
    documents = s.values("-O", "--output-document")
    if documents:
        t.saves.extend(o.value or "" for o in documents if o.value != "-")
    else:
        prefix = next((o.value or "" for o in s.values("-P", "--directory-prefix")), "")
        t.saves.extend(posixpath.join(prefix, _remote_name(u)) for u in urls)
    t.hosts = [h for u in urls for h in url_hosts(u)]
    return t


_SCP_SHORT = "cDFiJloPSX"
_RSYNC_SHORT = "efTBM"
_RSYNC_LONG = _words(
    """--rsh --filter --exclude --include --exclude-from --include-from --files-from --port
    --password-file --log-file --log-file-format --temp-dir --partial-dir --compare-dest
    --copy-dest --link-dest --backup-dir --suffix --chmod --chown --timeout --contimeout
    --bwlimit --max-size --min-size --max-delete --modify-window --out-format --iconv
    --usermap --groupmap --rsync-path --info --debug --sockopts --skip-compress --block-size
    --remote-option --checksum-choice --compress-choice --compress-level --stop-after
    --stop-at --write-batch --only-write-batch --read-batch --protocol --address --outbuf"""
)


def copy(argv: Sequence[str], *, rsync: bool) -> Transfer:
    """scp and rsync: local sources copied to a remote destination are sent there."""
    s = scan(argv, _RSYNC_SHORT if rsync else _SCP_SHORT, _RSYNC_LONG if rsync else frozenset())
    t = Transfer()
    operands = [arg for _, arg in s.operands]
    if len(operands) < 2:
        return t
    *sources, destination = operands
    host = remote_host(destination)
    local = [src for src in sources if remote_host(src) is None]
    if host is not None and local:
        t.hosts = [host]
        t.sends = True
        t.files = local
    return t


_NC_SHORT = "IiMmOPpsTVWwXxecqo"
_SSH_SHORT = "BbcDEeFIiJLlmOoPpQRSWw"


def netcat(argv: Sequence[str]) -> tuple[Transfer, bool]:
    """nc/ncat: the host it connects to; the flag says it hands a program to the peer (-e, -c)."""
    s = scan(argv, _NC_SHORT, frozenset({"--exec", "--sh-exec", "--lua-exec", "--output"}))
    t = Transfer()
    if s.has("-l", "--listen") or not s.operands:
        return t, False
    t.hosts = [bare_host(s.operands[0][1])]
    return t, s.has("-e", "-c", "--exec", "--sh-exec", "--lua-exec")


def ssh(argv: Sequence[str]) -> tuple[str | None, list[str]]:
    """The host ssh logs in to and the words of the command it runs there."""
    s = scan(argv, _SSH_SHORT, first_operand_ends=True)
    if not s.operands:
        return None, []
    first = s.operands[0][1]
    host = url_host(first) if "://" in first else bare_host(first)
    return host, [arg for _, arg in s.operands[1:]]


_SOCAT_NET = re.compile(
    r"^(?:tcp|tcp4|tcp6|udp|udp4|udp6|openssl|ssl|sctp)(?:-connect|-sendto)?:"
    r"(\[[^\]]+\]|[^:,]+)",
    re.I,
)


def socat(argv: Sequence[str]) -> Transfer:
    t = Transfer()
    for arg in argv[1:]:
        if m := _SOCAT_NET.match(arg):
            t.hosts.append(m.group(1).strip("[]").lower())
        elif re.match(r"^(?:file|open|gopen|exec|system|create):", arg, re.I):
            t.sends = True  # a local file, or a program handed to the peer
    return t


_DEV_NET = re.compile(r"^/dev/(?:tcp|udp)/([^/]+)/")


def dev_net_host(target: str) -> str | None:
    """bash's /dev/tcp/HOST/PORT: redirecting into it sends the data to HOST."""
    m = _DEV_NET.match(target)
    return m.group(1).lower() if m else None
