"""REEFGATE_NO_EXTENSION=1 makes every user of a compiled module take its Python twin.

Each probe runs in a fresh interpreter (the choice is made at import) and
prints whether the Python twin was chosen.
"""

from __future__ import annotations

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
        "from gateway.wire import jsontext;print(jsontext._same_colons is jsontext._py_same_colons)"
    ),
}


@pytest.mark.parametrize("probe", PROBES.values(), ids=PROBES.keys())
def test_the_environment_switch_selects_the_python_twin(probe: str) -> None:
    for value, python_twin in (("1", "True"), ("", "False")):
        env = {**os.environ, compiled.NO_EXTENSION_ENV: value}
        out = subprocess.run(
            [sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True
        )
        assert out.stdout.strip() == python_twin
