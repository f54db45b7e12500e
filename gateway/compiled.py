"""The gateway's optional compiled modules, and the switch that hides them.

Each compiled module (built by setup.py when the install finds a C compiler)
has a Python twin that gives the same results; the code uses the compiled
one when it imports. REEFGATE_NO_EXTENSION=1, set before the modules that
use them are imported, selects the Python twins, so that path is tested on
machines that have both.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType
from typing import Final

NO_EXTENSION_ENV: Final = "REEFGATE_NO_EXTENSION"


def load(name: str) -> ModuleType | None:
    """The compiled module ``name``, or None when it is switched off or was not built."""
    if os.environ.get(NO_EXTENSION_ENV, "").strip() not in ("", "0"):
        return None
    try:
        return importlib.import_module(name)
    except ImportError:
        return None
