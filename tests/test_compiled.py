"""REEFGATE_NO_EXTENSION=1 makes every user of a compiled module take its Python twin.

Each probe runs in a fresh interpreter (the choice is made at import) and
prints whether the Python twin was chosen.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from gateway import compiled

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
