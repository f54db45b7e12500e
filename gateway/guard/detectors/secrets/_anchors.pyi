from array import array

PLACES_KEPT: int

class Prefilter:
    def __init__(
        self,
        anchored: bytes,
        searches: array[int],
        bucket_ways: array[int],
        way_start: array[int],
        checks: array[int],
        maps: bytes,
    ) -> None: ...
    def places(self, text: str, /) -> list[list[int] | None] | None: ...

def lower(text: str, /) -> bytes: ...
