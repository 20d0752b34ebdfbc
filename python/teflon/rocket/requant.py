"""DPU arithmetic both rocket generations share (rocket.md §3.4, §3.5): the zero-point-folded bias and the
OUT_CVT requantization registers.

Stored domain (see quantization.py): xs = x - off, ws = w - off. The true accumulator
    sum (x - zx)(w - zw) = sum xs*ws  -  zws * sum xs  -  zxs * sum (w - zw)
is split as: MAC array on stored data; the DPU "OW" stage adds -zws * sum xs (BS_OW_OP = -zws);
the bias table absorbs -zxs * sum (w - zw) per output channel.
"""

from __future__ import annotations

import math
import struct

import numpy as np

from .rounding import preimage

INT32_MAX = int(np.iinfo(np.int32).max)
INT32_MIN = int(np.iinfo(np.int32).min)


def f32_bits(x: float | np.floating) -> int:
    return struct.unpack("<I", struct.pack("<f", float(np.float32(x))))[0]


def channel_sums(values: np.ndarray, axis: int) -> np.ndarray:
    """int64 sums along `axis` of values below 2^8 in magnitude (weights, |w - zw|): accumulated in int32, about
    twice as fast over a large weight tensor, whenever the count keeps every sum below 2^31."""
    acc = np.int32 if values.shape[axis] < 1 << 23 else np.int64
    return values.sum(axis=axis, dtype=acc).astype(np.int64)


def bias_table(bias: np.ndarray, weights_q: np.ndarray, w_zp_q: int, in_zp: int, depthwise: bool,
               trunc: int) -> np.ndarray:
    """int32 per real output channel: (bias - zxs * sum(w - zw)) / 2^trunc, rounded toward zero."""
    per_oc = weights_q.reshape(-1, weights_q.shape[-1]) if depthwise else weights_q.reshape(weights_q.shape[0], -1)
    axis = 0 if depthwise else 1
    sums = channel_sums(per_oc, axis) - per_oc.shape[axis] * w_zp_q  # sum(w - zw) per output channel
    val = bias.astype(np.int64) - sums * in_zp
    if trunc:
        div = 1 << trunc
        q = np.where(val >= 0, val // div, -((-val) // div))  # C integer division
    else:
        q = val
    if q.size and (q.max() > INT32_MAX or q.min() < INT32_MIN):
        raise ValueError("bias correction overflows int32")
    return q.astype("<i4")


def out_cvt(in_scale: np.float32, w_scale: np.float32, out_scale: np.float32, trunc: int,
            mesa_rounding: bool = False) -> tuple[int, int]:
    """(OUT_CVT_SCALE, OUT_CVT_SHIFT): a Q1.14 scale in [2^14, 2^15) with scale / 2^shift ~= sx*sw/sy * 2^trunc.

    Default: the scale is the exact multiplier rounded to nearest (TFLite derives its own multiplier in
    double precision from the same scales). mesa_rounding=True reproduces Mesa byte for byte: the float32
    multiplier's top 14 mantissa bits plus one, which always rounds up and biases every output upward
    (docs/hardware/rocket.md, "Requantization"). In both, a scale that reaches 2^15 is renormalized to
    2^14 with one bit less of shift (Mesa instead ends up at half the value there).
    """
    m32 = np.float32(np.float32(in_scale) * np.float32(w_scale)) / np.float32(out_scale)
    b = f32_bits(m32)
    if b >> 31 or not 0 < (b >> 23) < 0xFF:
        raise ValueError(f"requant multiplier {float(m32)} not representable")
    shift = 141 - (b >> 23) - trunc
    if mesa_rounding:
        scale = (1 << 14) + ((b >> 9) & 0x3FFF) + 1
    else:
        exact = float(in_scale) * float(w_scale) / float(out_scale)
        mant, exp = math.frexp(exact)  # exact = mant * 2^exp, mant in [0.5, 1)
        shift = 15 - exp - trunc
        scale = math.floor(mant * (1 << 15) + 0.5)
    if scale == 1 << 15:
        scale, shift = 1 << 14, shift - 1
    if not 0 <= shift < 1 << 12:
        raise ValueError(f"requant multiplier {float(m32)} out of range (shift {shift})")
    return scale, shift


DPU_VALUE_BITS = 32  # the value OUT_CVT converts is saturated to int32 (rocket-sim.md, rocket-rk3576-sim.md)


def constant_cvt(scale: int, shift: int) -> bool:
    """True when OUT_CVT (scale / 2^shift, ties to even) rounds every int32 value to 0: |v|·scale <= 2^31·scale
    is at most half of 2^shift, so the output is the offset alone."""
    return shift > 0 and scale << (DPU_VALUE_BITS - 1) <= 1 << (shift - 1)


def bounded_cvt(scale: int, shift: int, max_shift: int) -> tuple[int, int]:
    """(OUT_CVT_SCALE, OUT_CVT_SHIFT) with the shift inside the generation's range (RegMap.limits, e.g. RK3588's
    47): unchanged when it is, else the same scale at `max_shift` when both shifts make the output constant
    (constant_cvt: every int32 value rounds to 0, so the words differ and the outputs do not). A multiplier that
    small (below 2^-33 with a Q1.14 scale) also gives TFLite's kernels 0 for any int32 accumulator:
    |acc·M| < 2^31·2^-33. Raises ValueError otherwise."""
    if shift <= max_shift:
        return scale, shift
    if constant_cvt(scale, shift) and constant_cvt(scale, max_shift):
        return scale, max_shift
    raise ValueError(f"requant shift {shift} beyond the DPU's {max_shift} with scale {scale}")


def clamp_bound(k: int, scale: int, shift: int) -> int | None:
    """The DPU value X for a clamp min(u, X) before OUT_CVT that gives TFLite's clamp min(requant(u), k) after it:
    the smallest u with R(u) = shift_even(u * scale, shift) >= k (rounding.py), provided R(X) == k (R is monotone,
    so then R(min(u, X)) == min(R(u), k) for every u). None when R steps over k (a multiplier above 1), where no
    such X exists. The lower clamp max(u, 0) needs no helper: R(0) == 0, so R(max(u, 0)) == max(R(u), 0)."""
    lo, hi = preimage(k, scale, shift)  # the u with R(u) == k: the least is X, none when R steps over k
    return lo if lo <= hi else None


def activation_clamp(c_act_min: int | None, c_act_max: int | None, out_zp: int, scale: int,
                     shift: int) -> tuple[int, int | None] | None:
    """The DPU clamp (lower, upper or None) before OUT_CVT (scale / 2^shift, offset out_zp) that applies a fused
    RELU/RELU6's output bounds (RocketConv.act_min / act_max, stored domain) exactly; None when neither is set.
    The lower bound is always 0 (RELU/RELU6 clamp at the zero point). Raises ValueError when the upper bound
    cannot be applied exactly (clamp_bound)."""
    if c_act_min is None and c_act_max is None:
        return None
    if c_act_max is None:
        return 0, None
    x = clamp_bound(c_act_max - out_zp, scale, shift)
    if (x is None or not 0 < x < 1 << 31) and constant_cvt(scale, shift) and c_act_max >= out_zp:
        return 0, None  # every output is the zero point, inside the bounds: the lower clamp alone is exact
    if x is None or not 0 < x < 1 << 31:
        raise ValueError(f"fused RELU6 bound {c_act_max - out_zp} LSB above the zero point is not a clamp before "
                         f"OUT_CVT ({scale} / 2^{shift} steps over it)")
    return 0, x


EW_SCALE_BITS = 15  # magnitude bits of the 16-bit two's complement EW_OP_CVT_SCALE
EW_SHIFT_MAX = 63  # EW_OP_CVT_SHIFT is 6 bits


def ew_cvt(ratio: float) -> tuple[int, int]:
    """(EW_OP_CVT_SCALE, EW_OP_CVT_SHIFT) with scale / 2^shift ~= ratio, the element-wise operand's LSB in units of
    the DPU value it is added to (rocket.md §3.5): the scale as a 16-bit two's complement value with its magnitude
    in [2^14, 2^15), rounded to nearest (relative error at most 2^-15; Mesa truncates to 14 bits, RK3576's vendor
    programs normalize the same way, e.g. 24530 / 2^3). Raises ValueError outside the fields."""
    if not math.isfinite(ratio) or ratio == 0:
        raise ValueError(f"element-wise operand scale ratio {ratio} not representable")
    mant, exp = math.frexp(ratio)  # ratio = mant * 2^exp, |mant| in [0.5, 1)
    shift = EW_SCALE_BITS - exp
    scale = math.floor(mant * (1 << EW_SCALE_BITS) + 0.5)
    if scale == 1 << EW_SCALE_BITS:
        scale, shift = 1 << (EW_SCALE_BITS - 1), shift - 1
    if shift < 0:
        raise ValueError(f"element-wise operand scale ratio {ratio:.6g} too large (at least 2^15 accumulator units "
                         "per operand step)")
    if shift > EW_SHIFT_MAX:
        raise ValueError(f"element-wise operand scale ratio {ratio:.6g} too small for the 6-bit shift")
    return scale, shift
