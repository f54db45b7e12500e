"""The gateway's optional compiled modules, and the switch that hides them.

Each compiled module (built by setup.py when the install finds a C compiler)
has a Python twin that gives the same results; the code uses the compiled
one when it imports. REEFGATE_NO_EXTENSION=1, set before the modules that
use them are imported, selects the Python twins, so that path is tested on
machines that have both.

There are two kinds. A hand-written C module (`_wordset`, `_chat`, ...) has
its twin in Python code beside it, and `load` chooses between them. A
module compiled by mypyc is its own twin: the extension and the `.py` file
it was compiled from sit side by side, and the import system prefers the
extension; with the switch set, `prefer_source` (run by `gateway/__init__`
before any other gateway module is imported) makes it load the `.py` file.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import os
import sys
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from pathlib import Path
from types import ModuleType
from typing import Final

NO_EXTENSION_ENV: Final = "REEFGATE_NO_EXTENSION"


def switched_off() -> bool:
    return os.environ.get(NO_EXTENSION_ENV, "").strip() not in ("", "0")


class _SourceFirst:
    """A finder for gateway modules: the `.py` file where an extension was built from it."""

    @staticmethod
    def find_spec(
        name: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if not name.startswith("gateway.") or path is None:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if (
            spec is None
            or spec.origin is None
            or not isinstance(spec.loader, importlib.machinery.ExtensionFileLoader)
        ):
            return None
        source = Path(spec.origin).with_name(name.rpartition(".")[2] + ".py")
        # A hand-written C module has no `.py` of its own name: `load` decides for it.
        if not source.is_file():
            return None
        return importlib.util.spec_from_file_location(name, source)


def prefer_source() -> None:
    """With the switch set, gateway modules compiled by mypyc load from their `.py` files."""
    if switched_off() and not any(isinstance(f, _SourceFirst) for f in sys.meta_path):
        sys.meta_path.insert(0, _SourceFirst())


def load(name: str) -> ModuleType | None:
    """The compiled module ``name``, or None when it is switched off or was not built."""
    if switched_off():
        return None
    try:
        return importlib.import_module(name)
    except ImportError:
        return None
