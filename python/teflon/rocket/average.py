"""The averaging arithmetic rocket runs averages with, and the exhaustive checks that prove it rounds like TFLite.

TFLite's integer average and MEAN (tflite_average, tflite_mean), the PPU's reciprocal multiply (ppu_average) and a
DPU convolution's weight, bias and OUT_CVT (dpu_average), each computed as the simulator computes it; the searches
(average_recips, average_conv, mean_conv, channel_biases) try every window sum or input value and return only
parameters for which the NPU's result equals TFLite's (docs/hardware/rocket.md §6a).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from fractions import Fraction
from functools import cache

import numpy as np

from .. import fixedpoint
from ..fixedpoint import best_bias
from .quantization import stored_offset
from .rounding import preimage, shift_even

RECIP_ONE = 1 << 16  # RECIP_KERNEL_*: 1/k times 2^16 (TRM "reciprocal ... multiple 2^16")


def tflite_average(sums: np.ndarray, n: int, dtype: str) -> np.ndarray:
    """TFLite's integer average of window sums of *stored* values, in the stored domain: uint8 rounds
    (sum + n/2) / n on the non-negative q sums; int8 rounds half away from zero (reference_integer_ops)."""
    if dtype == "uint8":
        q = sums + 128 * n
        return (q + n // 2) // n - 128
    mag = (np.abs(sums) + n // 2) // n
    return np.where(sums > 0, mag, -mag)


def ppu_average(sums: np.ndarray, rw: int, rh: int) -> np.ndarray:
    """The PPU's average as the simulator computes it: sum x RECIP_W x RECIP_H, one rounding to nearest (ties to
    even) at 2^-32, saturated to int8 (the third party's measured cases fit it; docs/hardware/rocket.md §6a).
    Mirrors drivers/rocket/sim_ppu.c."""
    return np.clip(shift_even(sums.astype(np.int64) * (rw * rh), 32), -128, 127)


@cache
def average_recips(kh: int, kw: int, dtype: str) -> tuple[int, int] | None:
    """The reciprocals (width, height) floor(2^16 / k) — the vendor's, and the only ones the hardware was measured
    with — when ppu_average then equals TFLite for every window sum, else None. Under the ties-to-even rounding
    that holds for odd window counts only: an even count has exact ties, which the PPU sends to even (reciprocals
    that divide 2^16) or toward zero (the others) and TFLite up (uint8) or away from zero (int8)."""
    n = kh * kw
    sums = np.arange(-128 * n, 127 * n + 1, dtype=np.int64)
    rw, rh = RECIP_ONE // kw, RECIP_ONE // kh
    return (rw, rh) if np.array_equal(ppu_average(sums, rw, rh), tflite_average(sums, n, dtype)) else None


# Weights (w - zw) of the averaging convolution, tried in this order: 2 gives the bias half-sum steps, which uint8
# windows of an even count that is not a power of two need (docs/hardware/rocket.md §6a); larger ones give the
# 16-bit OUT_CVT scale a finer relative step, which int8 windows of hundreds of values need (flat_pool.py).
AVERAGE_WEIGHTS = tuple(range(1, 17))
CVT_SCALE_BITS = 15  # OUT_CVT_SCALE kept in [2^14, 2^15), as requant.out_cvt normalizes it


@dataclass(frozen=True)
class AverageConv:
    """The DPU arithmetic of an averaging depthwise convolution: v = weight * (window sum of stored inputs) + bias,
    then OUT_CVT v * scale / 2^shift (rounding.shift_even) with offset 0, saturated to int8."""

    weight: int
    bias: int
    scale: int
    shift: int
    exact: float = 1.0  # the share of all window sums on which it equals TFLite (1: every one)


def dpu_average(sums: np.ndarray, a: AverageConv) -> np.ndarray:
    """The stored output for stored window sums as the simulator computes it (drivers/rocket/sim_dot.h
    rkt_requantize with CLIP_TRUNCATE 0, no BS multiplier (RK3576: C = 2^14, shift 14, the identity), no clamp, no
    EW, OUT_CVT offset 0)."""
    v = sums.astype(np.int64) * a.weight + a.bias
    return np.clip(shift_even(v * a.scale, a.shift), -128, 127)


def bias_bounds(sums: np.ndarray, want: np.ndarray, g: int | np.ndarray, scale: int, shift: int,
                 bounds: tuple[int, int] = (-128, 127)) -> tuple[np.ndarray, np.ndarray]:
    """Per sum, the biases b for which dpu_average(sum, (g, b, scale, shift)) == want, an interval [lo, hi]: g·s + b
    in the preimage of `want` under OUT_CVT's rounding (rounding.preimage), except that a clamp at `bounds`
    (saturation, or an activation's clamp) also gives the upper bound above and the lower one below (no bound on
    that side)."""
    lo, hi = preimage(want, scale, shift)
    lo = np.where(want > bounds[0], lo - g * sums, -(1 << 62))
    hi = np.where(want < bounds[1], hi - g * sums, 1 << 62)
    return lo, hi


def channel_biases(xs: np.ndarray, want: np.ndarray, w: np.ndarray, scale: int, shift: int,
                   bounds: tuple[int, int], steps: np.ndarray | None = None) -> tuple[np.ndarray, int]:
    """Per channel c the bias b_c for which clip(shift_even((w_c·xs + b_c)·scale, shift), bounds) equals
    want[c] on the most inputs xs (want: channels x len(xs)), and how many (input, channel) pairs they serve.
    `steps`: per channel, the bias must be a multiple of it (None: any integer)."""
    lo, hi = bias_bounds(xs[None, :], want, w[:, None], scale, shift, bounds)
    lo_b, hi_b = lo.max(axis=1), hi.min(axis=1)
    step = np.ones(len(w), np.int64) if steps is None else np.asarray(steps, np.int64)
    # the multiple of the step of least magnitude in [lo_b, hi_b] (the negative one of a tie): 0, or the interval's
    # end nearest to 0 moved inwards to a multiple
    near = np.where(hi_b < 0, hi_b // step * step, -(-lo_b // step) * step)
    biases = np.where((lo_b <= 0) & (0 <= hi_b), 0, near)
    exact = (lo_b <= hi_b) & (lo_b <= biases) & (biases <= hi_b)
    biases = np.where(exact, biases, 0)
    served = int(exact.sum()) * len(xs)
    for ch in np.flatnonzero(~exact):  # channels no bias makes exact: the one serving the most inputs
        biases[ch], n = best_bias(lo[ch], hi[ch], int(step[ch]))
        served += n
    return biases.astype(np.int64), served


def cvt_pairs(ratio: Fraction) -> list[tuple[int, int]]:
    """(scale, shift) of OUT_CVT closest below and above `ratio` (scale in [2^14, 2^15))."""
    return [(scale, shift) for g, scale, shift in _cvt_candidates(ratio) if g == 1]


def _least(lo: int, hi: int) -> int:
    """The value of least magnitude in [lo, hi] (the negative one of a tie)."""
    return 0 if lo <= 0 <= hi else hi if hi < 0 else lo


def _cvt_candidates(ratio: Fraction) -> list[tuple[int, int, int]]:
    """(g, scale, shift) in the order tried: each weight, the scale floor(2^shift · ratio / g) then one more, shift
    putting it in [2^14, 2^15)."""
    out = []
    for g in AVERAGE_WEIGHTS:
        shift = 1
        while (1 << shift) * ratio / g < 1 << (CVT_SCALE_BITS - 1):
            shift += 1
        low = math.floor((1 << shift) * ratio / g)
        out += [(g, scale, shift) for scale in (low, low + 1)
                if 1 << (CVT_SCALE_BITS - 1) <= scale < 1 << CVT_SCALE_BITS]
    return out


def _solve_cvt(sums: np.ndarray, want: np.ndarray, ratio: Fraction, bias_limit: bool) -> AverageConv | None:
    """Weight g, bias and OUT_CVT for which dpu_average maps every stored sum in `sums` to `want`, or None; `ratio`
    = output steps per unit of sum (1/n for an average). Tries _cvt_candidates in order and the bias of least
    magnitude (the negative one of a tie) that works, within +-(g / ratio) when `bias_limit`."""
    for g, scale, shift in _cvt_candidates(ratio):
        lo, hi = bias_bounds(sums, want, g, scale, shift)
        lo_b, hi_b = int(lo.max()), int(hi.min())
        if bias_limit:
            d = math.floor(g / ratio)
            lo_b, hi_b = max(lo_b, -d), min(hi_b, d)
        if lo_b <= hi_b:
            return AverageConv(g, _least(lo_b, hi_b), scale, shift)
    return None


# Weights the inexact search tries (each costs a sort of every sum): larger ones gained < 0.05 % of the sums on
# 8x8..16x16 int8 MEANs (measured, docs/hardware/rocket.md §6a)
NEAREST_WEIGHTS = 4


def _nearest_cvt(sums: np.ndarray, want: np.ndarray, ratio: Fraction) -> AverageConv | None:
    """The candidate (the first NEAREST_WEIGHTS weights of _cvt_candidates, best bias) that maps the most sums to
    `want`, with its exact share over all sums, provided every other sum is off by one step only; None
    otherwise."""
    best: tuple[int, AverageConv] | None = None
    for g, scale, shift in _cvt_candidates(ratio)[:2 * NEAREST_WEIGHTS]:
        b, served = best_bias(*bias_bounds(sums, want, g, scale, shift))
        if best is None or served > best[0]:
            best = (served, AverageConv(g, b, scale, shift))
    if best is None or np.abs(dpu_average(sums, best[1]) - want).max() > 1:
        return None
    return replace(best[1], exact=best[0] / len(sums))


@cache
def average_conv(kh: int, kw: int, dtype: str) -> AverageConv | None:
    """Weight, bias and OUT_CVT for which dpu_average equals TFLite's average (tflite_average) for every window sum
    of a kh x kw window, or None (_solve_cvt with ratio 1/n, biases within +-(weight · n))."""
    n = kh * kw
    sums = np.arange(-128 * n, 127 * n + 1, dtype=np.int64)
    return _solve_cvt(sums, tflite_average(sums, n, dtype), Fraction(1, n), bias_limit=True)


def tflite_mean(sums: np.ndarray, n: int, dtype: str, sx: float, zx: int, sy: float, zy: int) -> np.ndarray:
    """TFLite 2.14's integer MEAN over H, W with keep_dims (fixedpoint.tflite_mean) of stored window sums, in the
    stored domain."""
    off = stored_offset(dtype)
    return fixedpoint.tflite_mean(sums + off * n, n, dtype, sx, zx, sy, zy) - off


@cache
def mean_conv(n: int, dtype: str, sx: float, zx: int, sy: float, zy: int) -> AverageConv | None:
    """Weight, bias and OUT_CVT for which dpu_average equals TFLite's MEAN (tflite_mean) of n values for every
    window sum; where no single rounding can (TFLite's int8 MEAN rounds twice: a power-of-two multiplier's half
    step, then the shift's), the one that matches the most sums, its `exact` share below 1; None when even that
    is more than one step off somewhere."""
    sums = np.arange(-128 * n, 127 * n + 1, dtype=np.int64)
    ratio = Fraction(float(np.float32(sx))) / (n * Fraction(float(np.float32(sy))))
    want = tflite_mean(sums, n, dtype, sx, zx, sy, zy)
    return _solve_cvt(sums, want, ratio, bias_limit=False) or _nearest_cvt(sums, want, ratio)
