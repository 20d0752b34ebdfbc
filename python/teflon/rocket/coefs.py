"""Bias table and requantization values for the RK3588 DPU (rocket.md §3.4, §3.5).

Stored domain (see lower.py): xs = x - off, ws = w - off. The true accumulator
    sum (x - zx)(w - zw) = sum xs*ws  -  zws * sum xs  -  zxs * sum (w - zw)
is split as: MAC array on stored data; the DPU "OW" stage adds -zws * sum xs (BS_OW_OP = -zws);
the bias table absorbs -zxs * sum (w - zw) per output channel.
"""

from __future__ import annotations

import math
import struct

import numpy as np

# Weight scales (float32 bit patterns) for which Mesa sets CLIP_TRUNCATE = 1 (rkt_coefs.c). Kept so
# the encoder reproduces Mesa's streams for models that hit them; see truncate_bits().
MESA_TRUNCATE_SCALES = frozenset(
    {
        0x3A88323F, 0x3C0060DE, 0x3C06022D, 0x3C1642E3, 0x3C1E3F51, 0x3C5C8AA8, 0x3C615E93, 0x3C7326A2,
        0x3C783013, 0x3D1748E6, 0x3D282992, 0x3D2E87AE, 0x3D77F5F6, 0x3A9A5956, 0x3CAEBC56,
    }
)  # fmt: skip

ACC_BITS = 32  # CORE -> DPU path width (NVDLA CACC: 34-bit int8 accumulator, clipped to 32)


def f32_bits(x: float | np.floating) -> int:
    return struct.unpack("<I", struct.pack("<f", float(np.float32(x))))[0]


def truncate_bits(w_scale: np.float32, weights: np.ndarray, depthwise: bool) -> int:
    """CORE_CLIP_TRUNCATE: right shift applied to the accumulator before the DPU.

    Mesa's table (kept for byte-compatibility) or, whichever is larger, the shift that keeps the
    worst-case MAC result of stored int8 data (|xs| <= 128) inside ACC_BITS signed bits.
    """
    t = 1 if f32_bits(w_scale) in MESA_TRUNCATE_SCALES else 0
    w = np.abs(weights.astype(np.int64))
    per_oc = w.reshape(-1, w.shape[-1]).sum(axis=0) if depthwise else w.reshape(w.shape[0], -1).sum(axis=1)
    bound = int(per_oc.max(initial=0)) * 128
    need = max(bound.bit_length() + 1 - ACC_BITS, 0)  # +1: sign bit
    return max(t, need)


def bias_table(bias: np.ndarray, weights_q: np.ndarray, w_zp_q: int, in_zp: int, depthwise: bool,
               trunc: int) -> np.ndarray:
    """int32 per real output channel: (bias - zxs * sum(w - zw)) / 2^trunc, rounded toward zero."""
    centered = weights_q.astype(np.int64) - w_zp_q
    if depthwise:
        sums = centered.reshape(-1, centered.shape[-1]).sum(axis=0)
    else:
        sums = centered.reshape(centered.shape[0], -1).sum(axis=1)
    val = bias.astype(np.int64) - sums * in_zp
    div = 1 << trunc
    q = np.where(val >= 0, val // div, -((-val) // div))  # C integer division
    if np.any(q > np.iinfo(np.int32).max) or np.any(q < np.iinfo(np.int32).min):
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


def ew_cvt(add_scale: np.float32, in_scale: np.float32, w_scale: np.float32) -> tuple[int, int]:
    """(EW_OP_CVT_SCALE, EW_OP_CVT_SHIFT) bringing a fused-ADD operand into the conv's accumulator
    domain: A = s_operand / (sx*sw), Q1.14 mantissa (no +1, unlike OUT_CVT), shift = 141 - E."""
    a = np.float32(add_scale) / np.float32(np.float32(in_scale) * np.float32(w_scale))
    b = f32_bits(a)
    if b >> 31 or not 0 < (b >> 23) < 0xFF:
        raise ValueError(f"add scale {float(a)} not representable")
    scale = (1 << 14) | ((b >> 9) & 0x3FFF)
    shift = 141 - (b >> 23)
    if not 0 <= shift < 64:
        raise ValueError(f"add scale {float(a)} out of range (shift {shift})")
    return scale, shift
