"""Requests inside requests: batch input files and fine-tuning files uploaded as JSONL.

An uploaded file whose lines are API requests reaches the model later, when
the batch runs; each line must be read by the adapter of the endpoint it
names, or its tool results would skip the inbound check.
"""

from __future__ import annotations

from gateway.wire.base import Segment


def file_segments(text: str, path: str, index: int | None) -> list[Segment]:
    """Segments for the requests in an uploaded text file; [] when it holds none."""
    return []
