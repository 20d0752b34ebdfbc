"""The element-wise operand converter's encoding (teflon.rocket.requant.ew_cvt, docs/hardware/rocket.md §6): a 16-bit
two's complement scale with magnitude in [2^14, 2^15) rounded to nearest, and a 6-bit right shift."""

from __future__ import annotations

import math

import pytest

from teflon.rocket.requant import ew_cvt


@pytest.mark.parametrize("ratio", [3066.25, 1.0, 0.75, 16382.0, 1e-6, 32767.4, 0.0123, -1.0, -16382.0, -0.3])
def test_normalized_and_within_2_pow_minus_15(ratio: float) -> None:
    scale, shift = ew_cvt(ratio)
    assert 1 << 14 <= abs(scale) <= 1 << 15 and (scale != 1 << 15) and 0 <= shift <= 63
    assert math.copysign(1, scale) == math.copysign(1, ratio)
    assert abs(scale / 2**shift - ratio) <= abs(ratio) * 2.0**-15


def test_vendor_examples() -> None:
    """RK3576's add-2conv stores 24530 / 2^3 for its operand; a ratio of that value encodes to the same word."""
    assert ew_cvt(24530 / 8) == (24530, 3)
    assert ew_cvt(16382.0) == (32764, 1)  # add-bare's 0x17FFC
    assert ew_cvt(-16382.0) == (-32764, 1)  # sub-bare's 0x18004 (low half -32764)


def test_carry_renormalizes() -> None:
    """A mantissa that rounds up to 2^15 becomes 2^14 with one bit less of shift."""
    assert ew_cvt(0.999999) == (1 << 14, 14)


@pytest.mark.parametrize(("ratio", "why"), [(32768.0, "too large"), (1e-20, "too small"), (0.0, "not representable"),
                                            (math.inf, "not representable")])
def test_refused(ratio: float, why: str) -> None:
    with pytest.raises(ValueError, match=why):
        ew_cvt(ratio)
