"""reefgate: a security gateway between AI agents and the LLM APIs and peers they call."""

__version__ = "0.1.0"
