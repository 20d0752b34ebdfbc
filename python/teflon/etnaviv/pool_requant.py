"""The requantization of AVERAGE_POOL_2D run as an NN job with unit weights (docs/hardware/etnaviv-pool.md).

TFLite's average pool adds the raw window values and divides by the window count with its own rounding: uint8
`(S + n/2) / n` (S >= 0: halves up), int8 `S > 0 ? (S + n/2) / n : (S - n/2) / n` in C's truncating division
(halves away from zero). The NN job sums the window with weight 1 into its accumulator (the bias makes it S
itself), multiplies by the descriptor's multiplier and rounds halves away from zero (etnaviv.md §4), so the
result is TFLite's exactly when the multiplier lies at or just above 1/n: at it or above, an exact half stays a
half or moves away from zero, as TFLite rounds it; the excess must stay below the gap between 1/n's multiples
and the next rounding threshold over every reachable S. `pool_post_scale` takes the smallest encodable
multiplier >= 1/n (`requant.post_scale(..., up=True)`) and proves that over the whole range of S, or refuses.
"""

from __future__ import annotations

import numpy as np

from .requant import PostScale, RequantError, post_scale

# (lowest, highest) raw value of one element: uint8 0..255, int8 -128..127
RAW_RANGE = {"uint8": (0, 255), "int8": (-128, 127)}


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
    m, s = ps.integer(version)
    p = sums.astype(np.int64) * m
    mag = (np.abs(p) + ((1 << s) >> 1)) >> s
    return np.where(p < 0, -mag, mag)


def pool_post_scale(count: int, dtype: str, version: int) -> PostScale:
    """The multiplier of an n-value average pool whose result equals TFLite's for every reachable window sum, or
    RequantError with the first sum that differs."""
    ps = post_scale(1 / count, version, nearest=True, up=True)
    lo, hi = RAW_RANGE[dtype]
    sums = np.arange(lo * count, hi * count + 1, dtype=np.int64)
    got, want = npu_average(sums, ps, version), tflite_average(sums, count, dtype)
    bad = np.flatnonzero(got != want)
    if bad.size:
        s = int(sums[bad[0]])
        raise RequantError(f"a {count}-value average needs more than the v{version} multiplier's "
                           f"{15 if version == 7 else 23} fraction bits ({bad.size} window sums round differently from "
                           f"TFLite's, e.g. {s}: {int(got[bad[0]])} against {int(want[bad[0]])})")
    return ps
