"""The error an adapter raises for a payload it cannot read.

Its own module, left interpreted: a class defined in a compiled module
(`wire/base` is one, see setup.py) is a native class, which compiled code
matches by its exact type, and the archive and upload readers raise
subclasses of this one that are not compiled.
"""

from __future__ import annotations


class PayloadError(ValueError):
    """The payload cannot be read by the adapter; the gateway answers 400."""
