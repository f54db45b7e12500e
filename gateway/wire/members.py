"""The parsed form of a JSON object written inside a string: its members in order.

A module of its own because `generic`, which reads these, is compiled by
mypyc, and mypyc compiles no subclass of `list`; this one stays a plain
Python class that compiled code tests with `isinstance`.
"""

from __future__ import annotations


class Members(list[tuple[str, object]]):
    """A JSON object parsed as its members in order, duplicate keys kept."""
