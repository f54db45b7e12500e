"""The exchange's numbers as the audit entry carries them."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from gateway.proxy.exchange import Exchange, ms


@given(st.floats(min_value=0, max_value=1e6, allow_nan=False))
def test_ms_is_the_milliseconds_to_three_decimals(seconds: float) -> None:
    shown = ms(seconds)
    # Within half a microsecond of the exact value (with the double's own error) ...
    assert abs(shown - seconds * 1000) <= 0.0005 + 1e-9 * seconds * 1000
    # ... and a decimal of three places, as it is written into the entry.
    assert shown == float(f"{shown:.3f}")
    # round() agrees except where the product in binary sits on a half microsecond.
    if abs((seconds * 1e6) % 1 - 0.5) > 1e-3:
        assert shown == round(seconds * 1000, 3)


def test_ms_edges() -> None:
    assert ms(0.0) == 0.0
    assert ms(0.0000004) == 0.0
    assert ms(0.0000006) == 0.001
    assert ms(1.5) == 1500.0
    assert ms(0.0123456) == 12.346
    assert isinstance(ms(2.0), float)


def test_the_latency_in_an_audit_record_has_three_decimals() -> None:
    exchange = Exchange("id", "POST", "openai", "/v1/chat/completions", "")
    exchange.started -= 0.25
    latency = exchange.audit_record()["latency_ms"]
    assert isinstance(latency, float)
    assert latency >= 250.0
    assert latency == float(f"{latency:.3f}")
