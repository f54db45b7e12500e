"""`bench instructions`: the cache model its options ask callgrind for."""

from __future__ import annotations

import argparse

import pytest

from bench import instructions


def test_default_model_is_the_fixed_yardstick() -> None:
    parser = argparse.ArgumentParser()
    instructions._options(parser)
    kb = parser.parse_args([]).last_level_kb
    assert instructions._last_level(kb) == "--LL=524288,8,64"


@pytest.mark.parametrize(
    ("kb", "option"),
    [(256, "--LL=262144,8,64"), (2048, "--LL=2097152,16,64"), (32768, "--LL=33554432,16,64")],
)
def test_last_level_sizes(kb: int, option: str) -> None:
    parser = argparse.ArgumentParser()
    instructions._options(parser)
    assert parser.parse_args(["--last-level-kb", str(kb)]).last_level_kb == kb
    assert instructions._last_level(kb) == option


@pytest.mark.parametrize("text", ["1000", "0", "-512", "1536", "two"])
def test_sizes_callgrind_cannot_model_are_refused(text: str) -> None:
    parser = argparse.ArgumentParser()
    instructions._options(parser)
    with pytest.raises(SystemExit):
        parser.parse_args(["--last-level-kb", text])
