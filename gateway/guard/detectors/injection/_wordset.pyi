from collections.abc import Iterable, Mapping
from collections.abc import Set as AbstractSet

NEAR_SLOTS: int
NEAR_PROBES: int

def plain_hash(data: bytes, /) -> int: ...
def lower(text: str, /) -> str: ...

class Vocabulary:
    def __init__(
        self,
        words: Iterable[str],
        weights: Mapping[str, int] | None = None,
        aliases: Mapping[str, str] | None = None,
    ) -> None: ...
    def scan(self, text: str, /) -> tuple[AbstractSet[str], int, int, int, int]: ...
