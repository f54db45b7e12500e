"""reefgate: a security gateway between AI agents and the LLM APIs and peers they call."""

from gateway import compiled

__version__ = "0.1.0"

# Before any other gateway module is imported (see `compiled`).
compiled.prefer_source()
