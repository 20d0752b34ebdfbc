"""The requantization of AVERAGE_POOL_2D run as an NN job with unit weights (docs/hardware/etnaviv-pool.md).

TFLite's average pool adds the raw window values and divides by the window count with its own rounding: uint8
`(S + n/2) / n` (S >= 0: halves up), int8 `S > 0 ? (S + n/2) / n : (S - n/2) / n` in C's truncating division
(halves away from zero). The NN job sums the window with weight 1 into its accumulator (the bias makes it S
itself), multiplies by the descriptor's multiplier and rounds halves away from zero (etnaviv.md §4), so the
result is TFLite's exactly when the multiplier lies at or just above 1/n: at it or above, an exact half stays a
half or moves away from zero, as TFLite rounds it; the excess must stay below the gap between 1/n's multiples
and the next rounding threshold over every reachable S. `pool_post_scale` takes the smallest encodable
multiplier >= 1/n and proves that over the whole range of S, or refuses.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from .requant import PostScale, RequantError

# (lowest, highest) raw value of one element: uint8 0..255, int8 -128..127
RAW_RANGE = {"uint8": (0, 255), "int8": (-128, 127)}


def _frac_bits(version: int) -> int:
    return 15 if version == 7 else 23


def _hw_total(ps: PostScale, version: int) -> tuple[int, int]:
    """(integer multiplier, total right shift) the NN engine applies: acc * m / 2^s (etnaviv.md §4)."""
    fb = _frac_bits(version)
    return (1 << fb) + ps.multiplier, ps.shift + (0 if version == 7 else 23)


def ceil_post_scale(value: Fraction, version: int) -> PostScale:
    """The smallest descriptor multiplier whose real value is >= `value` (0 < value < 1)."""
    fb = _frac_bits(version)
    e = 0
    while value * (1 << e) < 1:  # value * 2^e in [1, 2)
        e += 1
    mant = value * (1 << e)
    frac = mant - 1
    m = -(-frac.numerator * (1 << fb) // frac.denominator)  # ceil(frac * 2^fb)
    if m == 1 << fb:  # rounded up to the next power of two
        m, e = 0, e - 1
    # real = (1 + m / 2^fb) / 2^e; the descriptor's shift: v7 post_shift = e + 15, v8 post_shift = e
    shift = e + (15 if version == 7 else 0)
    if not 0 <= shift < 128:
        raise RequantError(f"pooling multiplier 1/{1 / value} needs post_shift {shift}")
    return PostScale(m, shift)


def tflite_average(sums: np.ndarray, count: int, dtype: str) -> np.ndarray:
    """TFLite's rounded average of raw window sums (reference and optimized kernels alike)."""
    half = count // 2
    if dtype == "uint8":
        return (sums + half) // count
    mag = (np.abs(sums) + half) // count  # C's truncating division of the signed sum, halves away from zero
    return np.where(sums > 0, mag, -mag)


def npu_average(sums: np.ndarray, ps: PostScale, version: int) -> np.ndarray:
    """The NN engine's requantization of accumulator `sums`: acc * m / 2^s rounded half away from zero (|sums| <
    2^16 and m < 2^24 keep the product inside int64)."""
    m, s = _hw_total(ps, version)
    p = sums.astype(np.int64) * m
    mag = (np.abs(p) + ((1 << s) >> 1)) >> s
    return np.where(p < 0, -mag, mag)


def pool_post_scale(count: int, dtype: str, version: int) -> PostScale:
    """The multiplier of an n-value average pool whose result equals TFLite's for every reachable window sum, or
    RequantError with the first sum that differs."""
    ps = ceil_post_scale(Fraction(1, count), version)
    lo, hi = RAW_RANGE[dtype]
    sums = np.arange(lo * count, hi * count + 1, dtype=np.int64)
    got, want = npu_average(sums, ps, version), tflite_average(sums, count, dtype)
    bad = np.flatnonzero(got != want)
    if bad.size:
        s = int(sums[bad[0]])
        raise RequantError(f"a {count}-value average needs more than the v{version} multiplier's "
                           f"{_frac_bits(version)} fraction bits ({bad.size} window sums round differently from "
                           f"TFLite's, e.g. {s}: {int(got[bad[0]])} against {int(want[bad[0]])})")
    return ps


def real_multiplier(ps: PostScale, version: int) -> float:
    """The multiplier's value (exact in a double: at most 24 significant bits)."""
    m, s = _hw_total(ps, version)
    return m / float(1 << s)
