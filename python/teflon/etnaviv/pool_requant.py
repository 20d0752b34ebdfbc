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

from dataclasses import dataclass
from functools import cache

import numpy as np

from ..fixedpoint import best_bias, round_half_away, tflite_mean
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


@dataclass(frozen=True)
class MeanEncoding:
    """A MEAN's NN job: every input weighted `weight`, so the accumulator holds weight·S (S the raw window sum) plus
    `bias`; times the multiplier `scale` rounded half away from zero, plus the raw output value `zero_point`,
    clamped to the type (npu_mean). `exact`: the share of all reachable sums on which it equals TFLite."""

    weight: int
    scale: PostScale
    bias: int
    zero_point: int
    exact: float = 1.0


def npu_mean(sums: np.ndarray, enc: MeanEncoding, dtype: str, version: int) -> np.ndarray:
    """The raw outputs the NN job writes for raw window sums `sums` (the stored clamp 0..255 is the type's)."""
    lo, hi = RAW_RANGE[dtype]
    return np.clip(npu_average(enc.weight * sums + enc.bias, enc.scale, version) + enc.zero_point, lo, hi)


def _preimage(t: np.ndarray, m: int, s: int) -> tuple[np.ndarray, np.ndarray]:
    """Per target t, the accumulators a with round_half_away(a·m / 2^s) == t: the interval [lo, hi] (s >= 1)."""
    half, step = 1 << (s - 1), t << s
    p_lo = np.where(t > 0, step - half, np.where(t < 0, step - half + 1, 1 - half))
    p_hi = np.where(t > 0, step + half - 1, np.where(t < 0, step + half, half - 1))
    return -((-p_lo) // m), p_hi // m  # ceil, floor


def _bias_bounds(sums: np.ndarray, want: np.ndarray, g: int, m: int, s: int, z: int,
                 dtype: str) -> tuple[np.ndarray, np.ndarray]:
    """Per sum, the biases B for which npu_mean(sum) == want under weight g, multiplier m / 2^s and zero point z:
    [lo, hi]. An output at the type's end only needs the rounding to reach it (the clamp does the rest)."""
    qlo, qhi = RAW_RANGE[dtype]
    a_lo, a_hi = _preimage(want - z, m, s)
    return (np.where(want > qlo, a_lo - g * sums, -(1 << 62)), np.where(want < qhi, a_hi - g * sums, 1 << 62))


# The search (mean_encoding): unit weights 1..MEAN_MAX_WEIGHT (a weight g makes the multiplier r/g and so the
# bias's steps g times finer), multipliers around the nearest encodable one (steps of the last fraction bit),
# output zero points around the natural one; exact first, else the best share.
MEAN_MAX_WEIGHT = 16
MEAN_PROBE = 8192  # sums checked first when there are more (window sums of over 32 values)
MEAN_NEAREST_WEIGHTS = 4  # the inexact search (a sort of every sum per candidate) tries the first few weights only
MEAN_MULTIPLIER_STEPS = (0, 1, -1, 2, -2)
MEAN_ZERO_POINT_STEPS = (0, 1, -1)
# An inexact encoding is claimed when it is within one step of TFLite on every sum and equal on this share of all
# reachable sums (the single-op bound, docs/hardware/etnaviv-pool.md)
MEAN_MIN_SHARE = 0.995


@cache
def mean_encoding(n: int, dtype: str, sx: float, zx: int, sy: float, zy: int, keep_dims: bool,
                  version: int) -> MeanEncoding:
    """Weight, multiplier, bias and output zero point of an n-value MEAN's NN job whose result equals TFLite's
    (fixedpoint.tflite_mean) on every reachable window sum, else the one equal on the most sums (`exact` < 1) when
    that share reaches MEAN_MIN_SHARE with every other sum one step off; RequantError otherwise."""
    lo, hi = RAW_RANGE[dtype]
    sums = np.arange(lo * n, hi * n + 1, dtype=np.int64)
    want = tflite_mean(sums, n, dtype, sx, zx, sy, zy, keep_dims)
    ratio = float(np.float32(sx)) / (n * float(np.float32(sy)))
    # the zero point at which TFLite's own rounding is centred: the sum's (keep_dims) or sum - n·zx's
    if keep_dims:
        z0 = int(zy) - round_half_away(float(np.float32(np.float32(zx) * np.float32(sx) / np.float32(sy))))
    else:
        z0 = int(zy)
    best = _unit_window_search(sums, want, ratio, dtype, version, (z0, int(zy)), 0 if keep_dims else -n * int(zx))
    assert best is not None
    off = int(np.abs(npu_mean(sums, best, dtype, version) - want).max())
    if best.exact == 1.0 or (best.exact >= MEAN_MIN_SHARE and off <= 1):
        return best
    raise RequantError(f"no v{version} weight, multiplier and bias round an {n}-value MEAN as TFLite does on "
                       f"{MEAN_MIN_SHARE:.1%} of the sums within 1 step (best {best.exact:.2%}, up to {off} off)")


@cache
def average_encoding(n: int, dtype: str, version: int) -> MeanEncoding | None:
    """An n-value AVERAGE_POOL_2D whose multiplier alone cannot round as TFLite does (pool_post_scale) may still with a
    weight, bias and output offset found as for a MEAN: the exact one, or None."""
    lo, hi = RAW_RANGE[dtype]
    sums = np.arange(lo * n, hi * n + 1, dtype=np.int64)
    best = _unit_window_search(sums, tflite_average(sums, n, dtype), 1 / n, dtype, version, (0,), 0, nearest=False)
    return best if best is not None and best.exact == 1.0 else None


def _unit_window_search(sums: np.ndarray, want: np.ndarray, ratio: float, dtype: str, version: int,
                        z_centres: tuple[int, ...], bias_centre: int, nearest: bool = True) -> MeanEncoding | None:
    """The first (weight, multiplier, zero point) whose bias intervals over every sum meet (bias: the one nearest
    `bias_centre`), else (`nearest`) the encoding equal to `want` on the most sums (its `exact` < 1), else None."""
    lo, hi = RAW_RANGE[dtype]
    frac = 1 << (15 if version == 7 else 23)
    zs = list(dict.fromkeys(int(np.clip(z + d, lo, hi)) for z in z_centres for d in MEAN_ZERO_POINT_STEPS))
    probe = slice(None, None, max(1, len(sums) // MEAN_PROBE))
    best: MeanEncoding | None = None
    for g in range(1, MEAN_MAX_WEIGHT + 1):
        try:
            m0, s = post_scale(ratio / g, version, nearest=True).integer(version)
        except RequantError as exc:
            raise RequantError(f"average multiplier: {exc}") from None
        for dm in MEAN_MULTIPLIER_STEPS:
            m = m0 + dm
            if not frac <= m < 2 * frac:
                continue
            ps = PostScale(m - frac, s - (0 if version == 7 else 23))
            for z in zs:
                if len(sums) > MEAN_PROBE and not (nearest and g <= MEAN_NEAREST_WEIGHTS):
                    # a necessary condition first, on every k-th sum (most candidates fail it)
                    p_lo, p_hi = _bias_bounds(sums[probe], want[probe], g, m, s, z, dtype)
                    if p_lo.max() > p_hi.min():
                        continue
                b_lo, b_hi = _bias_bounds(sums, want, g, m, s, z, dtype)
                lo_b, hi_b = int(b_lo.max()), int(b_hi.min())
                if lo_b <= hi_b:
                    return MeanEncoding(g, ps, int(np.clip(g * bias_centre, lo_b, hi_b)), z)
                if not nearest or g > MEAN_NEAREST_WEIGHTS:
                    continue
                b, served = best_bias(b_lo, b_hi)
                if best is None or served > best.exact * len(sums):
                    best = MeanEncoding(g, ps, b, z, served / len(sums))
    return best
