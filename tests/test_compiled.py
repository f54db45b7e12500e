"""REEFGATE_NO_EXTENSION=1 makes every user of a compiled module take its Python twin.

Each probe runs in a fresh interpreter (the choice is made at import) and
prints whether the Python twin was chosen.
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from gateway import compiled

ROOT = Path(__file__).resolve().parent.parent

PROBES = {
    "word scan": (
        "from gateway.guard.detectors.injection import text;"
        "print(text.Vocabulary is text._PyVocabulary)"
    ),
    "rule index": (
        "from gateway.guard.detectors.injection import phrases;"
        "print(phrases._PHRASE_WAYS.table is None)"
    ),
    "unwrap gate": (
        "from gateway.guard.detectors import unwrap;print(unwrap._compiled_clean is None)"
    ),
    "encoded-run search": (
        "from gateway.guard.detectors.injection import decoders;"
        "print(decoders._find_blobs is decoders._blobs"
        " and decoders._has_dot_dash is decoders._dot_dash)"
    ),
    "secret-scan prefilter": (
        "from gateway.guard.detectors.secrets import engine;print(engine._PLACES is None)"
    ),
    "answer word test": (
        "from gateway.wire import replies;print(replies.names_no_call is replies._py_names_no_call)"
    ),
    "colon proof": (
        "from gateway.wire import jsontext;print(jsontext._proven is jsontext._py_proven)"
    ),
    # No twin: without the scan the reader parses every body whole.
    "repeated-part memo": ("from gateway.wire import jsontext;print(jsontext._SPLIT is None)"),
}


@pytest.mark.parametrize("probe", PROBES.values(), ids=PROBES.keys())
def test_the_environment_switch_selects_the_python_twin(probe: str) -> None:
    for value, python_twin in (("1", "True"), ("", "False")):
        env = {**os.environ, compiled.NO_EXTENSION_ENV: value}
        out = subprocess.run(
            [sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True
        )
        assert out.stdout.strip() == python_twin


# Every gateway module loaded, and from which file: an extension built by
# mypyc has the `.py` file of the same name beside it.
_LOADED = (
    "import json, sys, pathlib, gateway.app, gateway.cli;"
    "mods = [m for n, m in sys.modules.items() if n.startswith('gateway.')];"
    "files = [pathlib.Path(m.__file__) for m in mods if getattr(m, '__file__', None)];"
    "print(json.dumps(sorted(str(f) for f in files if f.suffix == '.so' and f.with_name("
    "f.name.split('.')[0] + '.py').is_file())))"
)


def test_the_environment_switch_runs_the_source_of_mypyc_modules() -> None:
    def extensions_with_source(value: str) -> list[str]:
        env = {**os.environ, compiled.NO_EXTENSION_ENV: value}
        out = subprocess.run(
            [sys.executable, "-c", _LOADED], env=env, capture_output=True, text=True, check=True
        )
        names: list[str] = json.loads(out.stdout)
        return names

    assert extensions_with_source("1") == []
    built = extensions_with_source("")
    # CI checks that the build made them (.ci/run); the switch must hide each one.
    assert any(name.endswith(".so") and "pipeline" in name for name in built)


# A module-level name that a compiled function reads is looked up in the
# module's dict on every read, unless it is Final: then mypyc reads it from a
# C static (and inlines a literal). These constants are not Final on
# purpose, because tests or the bench replace them on the module and the
# compiled code must see the replacement.
NOT_FINAL = {
    "gateway/guard/pipeline.py": {"_WINDOW", "_OVERLAP", "_YIELD_CHARS"},
    # The patterns tests/guard/test_linear.py swaps for counting ones, and
    # the prefilter and split that tests switch off.
    "gateway/guard/detectors/secrets/engine.py": {
        "_PASSES",
        "_PREFILTER",
        "_TEXT_SEARCHES",
        "_LOWER_SEARCHES",
        "_SPLIT_AT",
        "_PLACES",
        "_PLACES_KEPT",
    },
    "gateway/proxy/reverse.py": {"HEARTBEAT_S"},
    "gateway/wire/generic.py": {"MAX_SEGMENTS", "_CACHE_CHARS_MAX"},
    # bench/_stages.py and tests switch the reader's codec and its memo.
    "gateway/wire/jsontext.py": {"_CODEC", "_SPLIT"},
}
_CONSTANT = re.compile(r"_?[A-Z][A-Z0-9_]*")


def _typed_modules() -> list[str]:
    tree = ast.parse((ROOT / "setup.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "TYPED" for t in node.targets
        ):
            modules: list[str] = ast.literal_eval(node.value)
            return modules
    raise AssertionError("setup.py has no TYPED list")


def _constants(source: str) -> dict[str, bool]:
    """Each upper-case name the module binds once at its top level: whether it is Final."""
    tree = ast.parse(source)
    bindings = Counter(
        node.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)
    )
    out: dict[str, bool] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, final = node.targets[0], False
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            target, final = node.target, "Final" in ast.unparse(node.annotation)
        else:
            continue
        value = node.value
        type_var = isinstance(value, ast.Call) and ast.unparse(value.func) == "TypeVar"
        if (
            isinstance(target, ast.Name)
            and _CONSTANT.fullmatch(target.id)
            and bindings[target.id] == 1
            and not type_var
        ):
            out[target.id] = final
    return out


def test_the_compiled_modules_constants_are_final() -> None:
    typed = _typed_modules()
    assert set(NOT_FINAL) <= set(typed)
    for path in typed:
        constants = _constants((ROOT / path).read_text())
        kept = NOT_FINAL.get(path, set())
        assert kept <= {name for name, final in constants.items() if not final}, path
        missing = sorted(
            name for name, final in constants.items() if not final and name not in kept
        )
        assert missing == [], f"{path}: make these Final, or say in NOT_FINAL why not"


def test_the_constants_test_reads_final_and_plain_bindings() -> None:
    source = (
        "from typing import Final, TypeVar\n"
        "A: Final = 1\n"
        "B = 2\n"
        "_C: Final[int] = 3\n"
        "_D: int = 4\n"
        "T = TypeVar('T')\n"
        "E = 5\n"
        "E = 6\n"
        "lower = 7\n"
    )
    assert _constants(source) == {"A": True, "B": False, "_C": True, "_D": False}
