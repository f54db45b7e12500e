"""What installs the gateway: dependencies declared, and pinned for the container image."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _name(requirement: str) -> str:
    match = re.match(r"[A-Za-z0-9._-]+", requirement)
    assert match is not None, requirement
    return re.sub(r"[-_.]+", "-", match.group(0)).lower()


def _project() -> dict[str, object]:
    with (REPO / "pyproject.toml").open("rb") as fh:
        data = tomllib.load(fh)
    project = data["project"]
    assert isinstance(project, dict)
    return project


def test_the_constraints_file_pins_every_runtime_dependency() -> None:
    project = _project()
    runtime = list(project["dependencies"])  # type: ignore[call-overload]
    extras = project["optional-dependencies"]
    assert isinstance(extras, dict)
    wanted = {_name(r) for r in [*runtime, *extras["fast"]]}
    pinned = {}
    for line in (REPO / "constraints.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, version = line.partition("==")
            pinned[_name(name)] = version
    assert wanted <= set(pinned), sorted(wanted - set(pinned))
    assert all(pinned.values()), "every line pins an exact version"


def test_every_third_party_import_of_the_package_and_tests_is_declared() -> None:
    project = _project()
    extras = project["optional-dependencies"]
    assert isinstance(extras, dict)
    declared = {_name(r) for r in [*project["dependencies"], *extras["dev"]]}  # type: ignore[misc]
    # Import names that differ from their distribution's name.
    distribution = {
        "yaml": "pyyaml",
        "multipart": "python-multipart",
        "python_multipart": "python-multipart",
        "prometheus_client": "prometheus-client",
        "pytest_aiohttp": "pytest-aiohttp",
        "detect_secrets": "detect-secrets",
        "re2": "google-re2",
    }
    local = {"gateway", "tests", "bench"}
    missing: set[str] = set()
    for folder in ("gateway", "tests"):
        for path in (REPO / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                names: list[str] = []
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module]
                for name in names:
                    top = name.split(".")[0]
                    if top in local or top in sys.stdlib_module_names:
                        continue
                    if _name(distribution.get(top, top)) not in declared:
                        missing.add(f"{top} ({path.relative_to(REPO)})")
    assert not missing, sorted(missing)
