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
