"""TFLite's integer requantization arithmetic (tensorflow/lite/kernels/internal/common.h, quantization_util.cc and
gemmlowp's fixedpoint.h, as TFLite 2.14 builds them: double rounding, not TFLITE_SINGLE_ROUNDING), over numpy
arrays. Family-neutral: the unary tables (teflon.unary) and any encoder that must land on TFLite's own integers
use these, never a float approximation."""

from __future__ import annotations

import math

import numpy as np

INT16_MIN, INT16_MAX = -(1 << 15), (1 << 15) - 1
INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1


def quantize_multiplier(m: float) -> tuple[int, int]:
    """QuantizeMultiplier: m = q / 2^31 * 2^shift with q in [2^30, 2^31) (0 for m == 0); shift may be negative."""
    if m == 0.0:
        return 0, 0
    q, shift = math.frexp(m)
    q_fixed = round_half_away(q * (1 << 31))
    if q_fixed == 1 << 31:
        q_fixed //= 2
        shift += 1
    if shift < -31:
        return 0, 0
    if shift > 30:  # the runtime saturates a multiplier beyond 2^30
        return INT32_MAX, 30
    return q_fixed, shift


def round_half_away(x: float) -> int:
    """std::round / TfLiteRound on a double: halves away from zero."""
    return math.floor(abs(x) + 0.5) * (1 if x >= 0 else -1)


def srdhm32(a: np.ndarray, b: int) -> np.ndarray:
    """gemmlowp SaturatingRoundingDoublingHighMul on int32 (a an array, b a scalar multiplier)."""
    ab = np.asarray(a, np.int64) * np.int64(b)
    nudge = np.where(ab >= 0, 1 << 30, 1 - (1 << 30))
    s = ab + nudge
    q = np.where(s >= 0, s >> 31, -((-s) >> 31))  # C division truncates toward zero
    overflow = (np.asarray(a, np.int64) == INT32_MIN) & (b == INT32_MIN)
    return np.where(overflow, INT32_MAX, q)


def rounding_divide_by_pot(x: np.ndarray, exponent: int) -> np.ndarray:
    """gemmlowp RoundingDivideByPOT: x / 2^exponent rounded to nearest, halves away from zero."""
    x = np.asarray(x, np.int64)
    if exponent == 0:
        return x
    mask = (1 << exponent) - 1
    remainder = x & mask
    threshold = (mask >> 1) + (x < 0)
    return (x >> exponent) + (remainder > threshold)


def multiply_by_quantized_multiplier(x: np.ndarray, multiplier: int, shift: int) -> np.ndarray:
    """MultiplyByQuantizedMultiplier (int32 x): left shift, SRDHM, rounding right shift."""
    left = max(0, shift)
    right = max(0, -shift)
    xs = np.asarray(x, np.int64) * (1 << left)
    xs = ((xs + (1 << 31)) % (1 << 32)) - (1 << 31)  # int32 wrap of the left-shifted value, as in C
    return rounding_divide_by_pot(srdhm32(xs, multiplier), right)


def srdhm16(a: np.ndarray, b: np.ndarray | int) -> np.ndarray:
    """gemmlowp SaturatingRoundingDoublingHighMul on int16."""
    a32 = np.asarray(a, np.int64)
    b32 = np.asarray(b, np.int64)
    ab = a32 * b32
    s = ab + np.where(ab >= 0, 1 << 14, 1 - (1 << 14))
    q = np.where(s >= 0, s >> 15, -((-s) >> 15))
    return np.where((a32 == INT16_MIN) & (b32 == INT16_MIN), INT16_MAX, q)


def sdhm16(a: np.ndarray, b: np.ndarray | int) -> np.ndarray:
    """TFLite's SaturatingDoublingHighMul on int16 (no rounding nudge: a*b / 2^15, truncated toward zero)."""
    a32 = np.asarray(a, np.int64)
    b32 = np.asarray(b, np.int64)
    ab = a32 * b32
    q = np.where(ab >= 0, ab >> 15, -((-ab) >> 15))
    q = ((q + (1 << 15)) % (1 << 16)) - (1 << 15)  # static_cast<int16_t>
    return np.where((a32 == INT16_MIN) & (b32 == INT16_MIN), INT16_MAX, q)


def saturating_left_shift16(x: np.ndarray, amount: int) -> np.ndarray:
    return np.clip(np.asarray(x, np.int64) * (1 << amount), INT16_MIN, INT16_MAX)


def downscale_multiplier_to_int16(m32: int) -> int:
    """DownScaleInt32ToInt16Multiplier: the Q31 multiplier rounded to Q15 (saturating)."""
    if m32 >= INT32_MAX - (1 << 15):
        return INT16_MAX
    return (m32 + (1 << 15)) >> 16


# gemmlowp's exp(x) for x <= 0 (fixedpoint.h exp_on_negative_values), as TFLite's reference 8-bit softmax uses it:
# exp of the last quarter interval by a Taylor polynomial around -1/8, times exp(-2^k) for each bit k of the rest.
EXP_MINUS_ONE_EIGHTH_Q31 = 1895147668  # exp(-1/8) in Q0.31
ONE_THIRD_Q31 = 715827883
EXP_OF_POWERS = {-2: 1672461947, -1: 1302514674, 0: 790015084, 1: 290630308, 2: 39332535, 3: 720401, 4: 242}


def _exp_last_quarter(a: np.ndarray) -> np.ndarray:
    """exp(a) for a in [-1/4, 0) in Q0.31 (gemmlowp exp_on_interval_between_negative_one_quarter_and_0_excl)."""
    x = np.asarray(a, np.int64) + (1 << 28)  # a + 1/8
    x2 = srdhm32_arr(x, x)
    x3 = srdhm32_arr(x2, x)
    x4 = srdhm32_arr(x2, x2)
    x4_over_4 = rounding_divide_by_pot(x4, 2)
    poly = rounding_divide_by_pot(srdhm32(x4_over_4 + x3, ONE_THIRD_Q31) + x2, 1)
    return EXP_MINUS_ONE_EIGHTH_Q31 + srdhm32(x + poly, EXP_MINUS_ONE_EIGHTH_Q31)


def srdhm32_arr(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """srdhm32 with an array multiplier (saturating the one overflow case)."""
    a64, b64 = np.asarray(a, np.int64), np.asarray(b, np.int64)
    ab = a64 * b64
    s = ab + np.where(ab >= 0, 1 << 30, 1 - (1 << 30))
    q = np.where(s >= 0, s >> 31, -((-s) >> 31))
    return np.where((a64 == INT32_MIN) & (b64 == INT32_MIN), INT32_MAX, q)


def exp_on_negative_values(a: np.ndarray, integer_bits: int) -> np.ndarray:
    """exp(a) in Q0.31 of a <= 0 held with `integer_bits` integer bits (gemmlowp exp_on_negative_values)."""
    a = np.asarray(a, np.int64)
    frac = 31 - integer_bits
    quarter = 1 << (frac - 2)
    mod_quarter = (a & (quarter - 1)) - quarter
    rescaled = np.clip(mod_quarter * (1 << integer_bits), INT32_MIN, INT32_MAX)  # Rescale<0>: saturating shift
    result = _exp_last_quarter(rescaled)
    remainder = mod_quarter - a
    for k, mult in EXP_OF_POWERS.items():
        if integer_bits > k:
            bit = frac + k
            result = np.where(remainder & (1 << bit), srdhm32(result, mult), result)
    if integer_bits > 5:
        result = np.where(a < -(1 << (frac + 5)), 0, result)
    return np.where(a == 0, INT32_MAX, result)


def tflite_mean(sums: np.ndarray, n: int, dtype: str, sx: float, zx: int, sy: float, zy: int,
                keep_dims: bool = True) -> np.ndarray:
    """TFLite 2.14's uint8/int8 MEAN over H, W of a 4-D tensor (the kernels the builtin resolver runs), from the sums
    of n raw values to raw outputs, clamped to the type.

    keep_dims (optimized Mean): MultiplyByQuantizedMultiplier(sum, sx / (n·sy)) + zy − round(zx·sx/sy), the scale
    products in float32. Otherwise the reference QuantizedMeanOrSum, with or without a change of quantization: the
    multiplier of sx/sy (in double) times 2^k / n in integer division (k = floor(log2 n), at most 32), applied to
    sum − n·zx, plus zy. Both equal the runtime on random inputs (tests/rocket/test_average_conv.py,
    tests/etnaviv/test_ops.py `test_mean_reference`)."""
    sums = np.asarray(sums, np.int64)
    lo, hi = (0, 255) if dtype == "uint8" else (-128, 127)
    fsx, fsy = np.float32(sx), np.float32(sy)
    if keep_dims:
        bias = int(zy) - round_half_away(float(np.float32(np.float32(zx) * fsx / fsy)))
        m, shift = quantize_multiplier(float(np.float32(fsx / np.float32(np.float32(n) * fsy))))
        return np.clip(multiply_by_quantized_multiplier(sums, m, shift) + bias, lo, hi)
    m, shift = quantize_multiplier(float(fsx) / float(fsy))
    k = min(n.bit_length() - 1, 32, 31 + shift)
    q = multiply_by_quantized_multiplier(sums - int(zx) * n, (m << k) // n, shift - k) + int(zy)
    return np.clip(q, lo, hi)


def best_bias(lo: np.ndarray, hi: np.ndarray, step: int = 1) -> tuple[int, int]:
    """(bias, sums it serves): the bias (a multiple of `step`) inside the most of the intervals [lo, hi] (ties: least
    magnitude)."""
    starts = lo[lo > -(1 << 62)]
    cand = np.unique(np.concatenate([-(-starts // step) * step if step > 1 else starts, [0]]))
    served = np.searchsorted(np.sort(lo), cand, "right") - np.searchsorted(np.sort(hi), cand, "left")
    best = np.flatnonzero(served == served.max())
    b = int(cand[best[np.argmin(np.abs(cand[best]))]])
    return b, int(served.max())
