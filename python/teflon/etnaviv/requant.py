"""Requantization of the etnaviv NN and TP engines (etnaviv.md §4).

The NN engine multiplies the int32 accumulator by a normalised mantissa with an implicit leading one and
shifts right; the mantissa and shift come straight from the IEEE-754 pattern of the float32 scale
S = input_scale * weight_scale / output_scale. v7 keeps 15 fraction bits (truncated), v8 all 23.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .ops import f32_bits


class RequantError(ValueError):
    pass


@dataclass(frozen=True)
class PostScale:
    multiplier: int  # fraction bits below the implicit one (15 bits on v7, 23 on v8)
    shift: int  # 7-bit right shift

    def integer(self, version: int) -> tuple[int, int]:
        """(m, s): the NN engine multiplies the accumulator by m and shifts right by s (etnaviv.md §4)."""
        frac_bits = 15 if version == 7 else 23
        return (1 << frac_bits) + self.multiplier, self.shift + (0 if version == 7 else 23)

    def real(self, version: int) -> float:
        """The multiplier the hardware applies (exact in a double: at most 24 significant bits)."""
        m, s = self.integer(version)
        return m / 2.0**s


def conv_scale(input_scale: float, weight_scale: float, output_scale: float) -> np.float32:
    """S computed in float32 in the same order as the reference (product first, then the division)."""
    with np.errstate(all="ignore"):
        return np.float32(np.float32(np.float32(input_scale) * np.float32(weight_scale)) / np.float32(output_scale))


def post_scale(scale: float, version: int, nearest: bool = False, up: bool = False) -> PostScale:
    """post_multiplier / post_shift of an NN descriptor for the real multiplier `scale` (etnaviv.md §4).

    nearest=False is Mesa's: the float32 pattern of `scale`, v7 keeping the top 15 mantissa bits (truncated).
    nearest=True (teflon's default): `scale` as given (a double, computed like TFLite's multiplier) rounded to the
    nearest 15 (v7) / 23 (v8) fraction bits; truncation biases every v7 output down by up to 2^-15 relative,
    which on a 255-step output range turns into systematic 1-LSB differences (docs/hardware/etnaviv-nn.md).
    up=True (with nearest): the smallest encodable multiplier >= `scale` instead of the nearest."""
    frac_bits = 15 if version == 7 else 23
    if nearest:
        if not scale > 0 or not math.isfinite(scale):
            raise RequantError(f"requantization scale {scale!r} is not positive and finite")
        m, e = math.frexp(scale)  # scale = m * 2^e, m in [0.5, 1): float32 exponent field e + 126
        mant = (math.ceil if up else round)((2 * m - 1) * (1 << frac_bits))
        exp = e + 126
        if mant == 1 << frac_bits:  # rounded up to the next power of two
            mant, exp = 0, exp + 1
        shift, mult = (142 if version == 7 else 127) - exp, mant
    else:
        bits = f32_bits(float(np.float32(scale)))
        if bits >> 31 or not 0 < (bits >> 23) < 255:
            raise RequantError(f"requantization scale {float(scale)!r} is not a positive normal float")
        exp = bits >> 23
        mant = bits & 0x7FFFFF
        shift, mult = (142 - exp, mant >> 8) if version == 7 else (127 - exp, mant)
    # S >= 1 (v8) or >= 2^15 (v7) would need a negative shift; Mesa does not guard it, we refuse.
    if not 0 <= shift < 128:
        raise RequantError(f"requantization scale {float(scale)!r} needs post_shift {shift} (outside 0..127)")
    return PostScale(mult, shift)


def tp_post_scale(scale: float) -> PostScale:
    """TP ALU output multiplier (15 bits, round-half-even on the mantissa) and shift (etnaviv.md §4, TP)."""
    bits = f32_bits(float(np.float32(scale)))
    if (bits & 0x80) and ((bits & 0x7F) or (bits & 0x100)):
        bits += 0x100
    shift = 127 - (bits >> 23)
    if not 0 <= shift < 128:
        raise RequantError(f"TP requantization scale {float(scale)!r} needs post_shift {shift}")
    return PostScale((bits >> 8) & 0x7FFF, shift)
