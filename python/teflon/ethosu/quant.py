"""Requantization numbers of Ethos-U65 operations: per-channel multiplier/shift, activation clamps, pool and
elementwise scales, and the 10-byte scale records.

A scale s is stored as a 32-bit multiplier m and a 6-bit right shift n with s = m * 2**-n, m = round(f * 2**31) for
the frexp fraction f in [0.5, 1) (docs/ethosu.md §1.3: checked against Vela's records). The scale record layout
(40-bit bias, 32-bit multiplier, 6-bit shift, little-endian, 10 bytes) is that of Vela's `npu_encode_bias`
(api.py). Where Regor rounds differently from a plain reading is recorded in docs/hardware/ethosu-compiler.md.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from teflon.ethosu import scales
from teflon.fixedpoint import multiply_by_quantized_multiplier, quantize_multiplier

QRANGE = {"int8": (-128, 127), "uint8": (0, 255)}
ROUND_TFL, ROUND_TRUNCATE, ROUND_NATURAL = 0, 1, 2  # NPU_SET_*_PRECISION round_mode (teflon.ethosu.regs)
RECORD_BYTES = scales.RECORD_BYTES
MAX_SHIFT = 63  # the 6-bit shift field


def quantise(scale: float) -> tuple[int, int]:
    """(multiplier, shift) with scale = multiplier * 2**-shift, multiplier a Q31 fraction in [2**30, 2**31)."""
    if scale == 0:
        return 0, 0
    frac, exp = math.frexp(scale)
    m = round(frac * (1 << 31))  # exact product; ties to even as np.round (half away from zero would differ only on a tie)
    if m == 1 << 31:
        m //= 2
        exp += 1
    shift = 31 - exp
    if shift > MAX_SHIFT:  # too small to represent: shrink the multiplier with the shift
        m >>= shift - MAX_SHIFT
        shift = MAX_SHIFT
    if shift < 0:
        raise ValueError(f"scale {scale} is too large for the 32-bit multiplier")
    return m, shift


def quantise_array(scale: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`quantise` of every element of a float64 array, as two int64 arrays (the same numbers: frexp and the
    ties-to-even rounding of an exact product are the scalar ones)."""
    s = np.asarray(scale, np.float64)
    frac, exp = np.frexp(s)
    m = np.rint(frac * float(1 << 31)).astype(np.int64)
    top = m == 1 << 31
    m = np.where(top, m // 2, m)
    shift = 31 - (exp.astype(np.int64) + top)
    over = np.clip(shift - MAX_SHIFT, 0, 63)  # m < 2**31: 63 bits shift it all out, as any larger shift
    m >>= over
    shift = np.minimum(shift, MAX_SHIFT)
    zero = s == 0
    if np.any((shift < 0) & ~zero):
        raise ValueError(f"scale {s[(shift < 0) & ~zero][0]} is too large for the 32-bit multiplier")
    return np.where(zero, 0, m), np.where(zero, 0, shift)


def conv_scale_records(bias: np.ndarray, ifm_scale: float, weight_scales: np.ndarray, ofm_scale: float,
                       float_product: bool = False) -> bytes:
    """Scale records of a convolution: per channel s_in * s_w[c] / s_out. TFLite's kernels compute this two ways
    and Vela follows each: int8 convolutions and per-channel fully-connected layers in double throughout
    (reference_integer_ops / PopulateConvolutionQuantizationParams), uint8 ones and per-tensor fully-connected
    layers with the product s_in * s_w in float32 first (GetQuantizedConvolutionMultipler). Both reproduce
    Vela's records to the last bit (docs "Scaling")."""
    sw = np.asarray(weight_scales, np.float32)
    if float_product:
        prods = (np.float32(ifm_scale) * sw).astype(np.float64)
    else:
        prods = float(np.float32(ifm_scale)) * sw.astype(np.float64)
    ms, ss = quantise_array(prods / float(np.float32(ofm_scale)))
    return scales.pack_records(np.asarray(bias, np.int64), ms, ss)  # RECORD_BYTES per channel, back to back


def quantize_value(x: float, scale: float, zero_point: int) -> int:
    return zero_point + round(x / scale)


def activation_range(dtype: str, scale: float, zero_point: int, activation: str) -> tuple[int, int]:
    lo, hi = QRANGE[dtype]
    if activation in ("RELU", "RELU6", "RELU_N1_TO_1"):
        lo = max(lo, quantize_value(-1.0 if activation == "RELU_N1_TO_1" else 0.0, scale, zero_point))
    if activation in ("RELU6", "RELU_N1_TO_1"):
        hi = min(hi, quantize_value(6.0 if activation == "RELU6" else 1.0, scale, zero_point))
    return lo, hi


def pool_scale(kind: str, taps: int, padded: bool) -> tuple[int, int]:
    """NPU_SET_OFM_SCALE of a pool whose input and output share their quantization. Max pool and a padded average
    pool: unit scale (the hardware's AVERAGE divides by the taps it read). An unpadded average pool: 1 / taps as
    (2**(31 + k) + 2**k) // taps with shift 31 + k, k = bit length of taps - 1 (the rounding Vela's records show;
    one tap gives (2**31 + 1, 31)). A copy (lower.copy_spec) keeps the unit scale instead."""
    if kind == "max" or padded:
        return 1, 0
    k = (taps - 1).bit_length()
    return ((1 << (31 + k)) + (1 << k)) // taps, 31 + k


ADD_INPUT_SHIFT = 20  # TFLite's 8-bit ADD/SUB left shift (reference add.h: left_shift = 20)


def add_scales(s1: float, s2: float, so: float) -> tuple[tuple[int, int], tuple[int, int], int]:
    """ADD/SUB as TFLite scales it: both inputs over twice the larger input scale, shifted up by 20 bits; the
    smaller-scaled operand gets the 32-bit OPA multiplier (IFM_PRECISION scale_mode 1 = operand A, 2 = operand B;
    B on a tie), the other goes through unscaled; the output divides by 2**20 * s_out / (2 * s_max).
    Returns ((opa scale, shift), (ofm scale, shift), scale_mode)."""
    a, b, o = float(np.float32(s1)), float(np.float32(s2)), float(np.float32(so))
    hi, lo = max(a, b), min(a, b)
    opa = quantise(lo / (2 * hi) * (1 << ADD_INPUT_SHIFT))
    out = quantise(2 * hi / ((1 << ADD_INPUT_SHIFT) * o))
    return opa, out, 1 if a < b else 2


def mul_scale(s1: float, s2: float, so: float) -> tuple[int, int]:
    """MUL: s1 * s2 / s_out, all in float32 (Vela's multipliers end in eight zero bits: a float32 mantissa)."""
    return quantise(float(np.float32(np.float32(s1) * np.float32(s2)) / np.float32(so)))


def lut8(dtype: str, s_in: float, zp_in: int, s_out: float, zp_out: int, fn: Callable[[np.ndarray], np.ndarray]
         ) -> bytes:
    """The 256-entry table of an 8-bit unary function: entry x (the input value) holds
    clamp(round_half_away(zp_out + fn(s_in * (x - zp_in)) / s_out)), computed in double from the float32 scales
    (the rule of Vela's convert_to_lut8, checked against its tables)."""
    lo, hi = QRANGE[dtype]
    x = np.arange(lo, hi + 1, dtype=np.float64)
    y = zp_out + fn(float(np.float32(s_in)) * (x - zp_in)) / float(np.float32(s_out))
    q = np.clip(np.sign(y) * np.floor(np.abs(y) + 0.5), lo, hi)
    return q.astype(np.int64).astype(np.int8 if dtype == "int8" else np.uint8).tobytes()


def sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def leaky_relu_lut(dtype: str, s_in: float, zp_in: int, s_out: float, zp_out: int, alpha: float) -> bytes:
    """LEAKY_RELU's table as TFLite's integer kernel computes it: (x - zp_in) times the identity multiplier
    s_in / s_out when not negative, times alpha * s_in / s_out when negative, plus zp_out, clamped."""
    lo, hi = QRANGE[dtype]
    x = np.arange(lo, hi + 1, dtype=np.int64) - zp_in
    si, so = float(np.float32(s_in)), float(np.float32(s_out))
    m1, e1 = quantize_multiplier(si / so)
    m2, e2 = quantize_multiplier(float(np.float32(alpha)) * si / so)
    y = np.where(x >= 0, multiply_by_quantized_multiplier(x, m1, e1),
                 multiply_by_quantized_multiplier(x, m2, e2)) + zp_out
    return np.clip(y, lo, hi).astype(np.int8 if dtype == "int8" else np.uint8).tobytes()
