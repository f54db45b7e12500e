"""The facts the rules stand on: where a path points, what it holds, where a URL goes."""

from __future__ import annotations

import pytest

from gateway.guard.guardian.network import (
    bare_host,
    host_allowed,
    remote_host,
    scan,
    url_hosts,
)
from gateway.guard.guardian.paths import credential, is_disk, locate, protected


@pytest.mark.parametrize(
    ("text", "cwd", "kind", "rendered"),
    [
        ("/usr/../etc/./x/", "", "abs", "/etc/x"),
        ("/../..", "", "abs", "/"),
        ("~", "", "home", "~"),
        ("$HOME/a", "", "home", "~/a"),
        ("${HOME}/a/../b", "", "home", "~/b"),
        ("~alice/x", "", "home", "~/x"),
        ("~/..", "", "abs", "/"),
        ("build", "", "rel", "build"),
        ("../x", "", "rel", "../x"),
        ("$PWD/build", "", "rel", "build"),
        ("build", "/srv/app", "abs", "/srv/app/build"),
        ("..", "~/proj", "home", "~"),
        ("build", None, "unknown", "build"),
        ("$DIR/x", "", "unknown", "x"),
        ("$(pwd)/build", "", "rel", "build"),
        ("$(dirname $0)/x", "", "unknown", "x"),
        ("`mktemp -d`/x", "", "unknown", "x"),
    ],
)
def test_locate(text: str, cwd: str | None, kind: str, rendered: str) -> None:
    place = locate(text, cwd)
    assert (place.kind, place.text()) == (kind, rendered)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("/", "root"), ("/*", "root"), ("/.", "root"), ("/[a-z]*", "root"), ("/etc", "system"),
        ("/etc/*", "system"), ("/usr/local", "system"), ("/home", "home"), ("/home/a", "home"),
        ("/Users/a/*", "home"), ("/root", "home"), ("~", "home"), ("~/*", "home"),
        ("/etc/nginx", None), ("/usr/local/lib", None), ("/srv/cache", None), ("/tmp", None),
        ("~/.cache", None), ("build", None),
    ],
)  # fmt: skip
def test_protected(text: str, expected: str | None) -> None:
    assert protected(locate(text)) == expected


@pytest.mark.parametrize(
    "path",
    [
        "~/.ssh/id_rsa", "/home/a/.ssh/id_ed25519", ".ssh/id_ecdsa", "~/.ssh/*", "~/.ssh",
        "~/.aws/credentials", "$HOME/.aws/sso/cache/x.json", ".env", "app/.env.local", ".env*",
        "/etc/shadow", "/etc/sha*", "~/.netrc", "~/.docker/config.json", "~/.kube/config",
        "~/.git-credentials", "certs/server.pem", "tls.key", "~/.config/gcloud/credentials.db",
        "~/.config/gh/hosts.yml", "/etc/ssh/ssh_host_ed25519_key",
    ],
)  # fmt: skip
def test_credential_files(path: str) -> None:
    assert credential(locate(path)) is not None


@pytest.mark.parametrize(
    "path",
    [
        "~/.ssh/id_rsa.pub", "~/.ssh/config", "~/.ssh/known_hosts", ".env.example",
        ".env.sample", "README.md", "*", "~/*/credentials", "fullchain.pem", "ca.pem",
        "cert.pem", "/etc/passwd", "~/.aws/config", "environment.py",
    ],
)  # fmt: skip
def test_not_credential_files(path: str) -> None:
    assert credential(locate(path)) is None


@pytest.mark.parametrize(
    ("path", "disk"),
    [("/dev/sda", True), ("/dev/sdb1", True), ("/dev/nvme0n1p2", True), ("/dev/disk2", True),
     ("/dev/mapper/root", True), ("/dev//sda", True), ("/dev/null", False),
     ("/dev/stdout", False), ("/dev/tcp/h/80", False), ("sda", False)],
)  # fmt: skip
def test_disk_devices(path: str, disk: bool) -> None:
    assert is_disk(path) is disk


@pytest.mark.parametrize(
    ("host", "allowed"),
    [("api.example.com", True), ("API.Example.com.", True), ("x.corp.example", True),
     ("a.b.corp.example", True), ("corp.example", False), ("evilcorp.example", False),
     ("api.example.com.evil.test", False), ("localhost", True), ("127.0.0.2", True),
     ("::1", True), ("10.0.0.1", False)],
)  # fmt: skip
def test_allowed_hosts(host: str, allowed: bool) -> None:
    assert host_allowed(host, ["api.example.com", "*.corp.example"]) is allowed


@pytest.mark.parametrize(
    ("url", "hosts"),
    [
        ("https://a.test/x", ["a.test"]),
        ("a.test:8080/x", ["a.test"]),
        ("https://user:pw@a.test/", ["a.test"]),
        ("http://good.test\\\\@evil.test/", ["evil.test", "good.test"]),
        ("$URL/x", [None]),
        ("https://${HOST}/x", [None]),
    ],
)
def test_url_hosts(url: str, hosts: list[str | None]) -> None:
    assert url_hosts(url) == hosts


@pytest.mark.parametrize(
    ("spec", "host"),
    [("u@h.test:/tmp", "h.test"), ("h.test:x", "h.test"), ("h.test::mod", "h.test"),
     ("rsync://h.test/m", "h.test"), ("./a:b", None), ("/abs/path", None), ("file", None)],
)  # fmt: skip
def test_remote_hosts(spec: str, host: str | None) -> None:
    assert remote_host(spec) == host


@pytest.mark.parametrize(
    ("text", "host"),
    [("deploy@h.test", "h.test"), ("H.Test.", "h.test"), ("[::1]", "::1"), ("::1", "::1"),
     ("$HOST", None), ("", None)],
)  # fmt: skip
def test_bare_hosts(text: str, host: str | None) -> None:
    assert bare_host(text) == host


def test_scan_reads_clusters_and_values() -> None:
    s = scan(["curl", "-sSLo", "out", "--data=@x", "-H", "A: b", "https://h.test", "--", "-x"],
             "oH", frozenset({"--data"}))  # fmt: skip
    assert [(o.name, o.value) for o in s.opts] == [
        ("-s", None), ("-S", None), ("-L", None), ("-o", "out"), ("--data", "@x"), ("-H", "A: b"),
    ]  # fmt: skip
    assert [arg for _, arg in s.operands] == ["https://h.test", "-x"]
