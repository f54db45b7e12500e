from collections.abc import Set as AbstractSet

class WayTable:
    from_bits: int
    def __init__(
        self,
        ways: tuple[
            tuple[
                int,
                tuple[str, ...],
                tuple[tuple[str, ...], ...],
                tuple[tuple[tuple[str, ...], tuple[str, ...]], ...],
            ],
            ...,
        ],
        index: dict[str, tuple[int, ...]],
        alternatives: int,
    ) -> None: ...
    def live(
        self, present: AbstractSet[str], words: AbstractSet[str], low: str, /
    ) -> list[int]: ...
    def bind(self, vocabulary: object, /) -> None: ...
