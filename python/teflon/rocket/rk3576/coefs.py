"""RK3576 coefficient table, shift word and OUT_CVT (docs/hardware/rocket-rk3576.md, "DPU").

Per output channel the DPU computes  u = ((acc + A + B * sum_x) * C + 2^(sh-1)) >> sh,  then OUT_CVT.
- B: minus the stored weight zero point (direct only; depthwise weights carry w - zw themselves);
- C: the channel's weight scale relative to the layer's: C = round(2^q * s_w / s_one), where s_one is the
  weight scale C = 2^q stands for. Per-tensor weights: q = 14, C = 2^14 (the vendor's Q14, an exact
  identity with shift 14). Per-channel weights: q = 15 and the largest scale gets C = 32767 (the int16
  field's top), which halves C's rounding error against the vendor's Q14 (C <= 2^14);
- A: the RK3588 bias correction, bias - zxs * sum(w - zw) (..requant.bias_table without truncation), with the
  model's bias scaled by s_w / (s_one * C / 2^q) so that it survives C's rounding (adjusted_bias);
- sh (the shift word, one shift for both signs, stored after the table in the same buffer): 14 for
  per-tensor weights, the vendor's value. Per-channel layers use the smallest shift for which v * C >> sh
  provably stays inside int32 (bs_shift): u then keeps q - sh fractional bits, which OUT_CVT (built from
  s_one * 2^(sh - q)) removes with its one rounding. With sh = q, u would be rounded to whole accumulator
  units of the largest-scale channel: up to half an output LSB when sx * s_ref / sy approaches 1
  (tf2_mobilenet_v2_1.0_224_ptq's first depthwise layer: 0.44).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..requant import out_cvt as dpu_out_cvt

SHIFT = 14  # per-tensor layers: C = 2^14 and the vendor's shift word 14 / 14
PER_CHANNEL_BITS = 15  # per-channel layers: C = 2^15 * s_w / s_one, at most 32767
C_MAX = (1 << 15) - 1  # int16 multiplier field
INT32_BITS = 31  # magnitude bits of the DPU's 32-bit data path
GROUP = 8  # output channels per table group
DIRECT_GROUP_BYTES = 64  # int32 A[8], int16 B[8], int16 C[8]
DW_GROUP_BYTES = 48  # int32 A[8], int16 C[8]
TABLE_CHANNELS = 16  # the table covers the output channels rounded up to a whole 16-channel group
SHIFT_AREA = 256  # bytes reserved after the table for the shift word (the vendor's block is 256 B)
MAX_ERROR_LSB = 1.0  # largest worst-case output error the per-channel multiplier rounding may add


@dataclass(frozen=True)
class Multipliers:
    c: np.ndarray  # C per channel (int64, 1..32767)
    bits: int  # q: C = 2^q stands for the weight scale s_one
    s_one: float

    def value(self) -> np.ndarray:
        """The weight scale each channel's C stands for."""
        return self.c * self.s_one / (1 << self.bits)


def multipliers(w_scales: np.ndarray, per_channel: bool) -> Multipliers:
    s = np.asarray(w_scales, np.float64).reshape(-1)
    s_ref = float(s.max())
    if s_ref <= 0:
        raise ValueError("weight scales must be positive")
    if not per_channel:
        return Multipliers(np.full(s.shape, 1 << SHIFT, np.int64), SHIFT, s_ref)
    s_one = s_ref * (1 << PER_CHANNEL_BITS) / C_MAX
    c = np.clip(np.rint(s * (1 << PER_CHANNEL_BITS) / s_one), 1, C_MAX).astype(np.int64)
    return Multipliers(c, PER_CHANNEL_BITS, s_one)


def adjusted_bias(bias: np.ndarray, zero_point_term: np.ndarray, w_scales: np.ndarray, m: Multipliers) -> np.ndarray:
    """A = bias' + zero_point_term with bias' * C / 2^q = bias * s_w / s_one to within half a unit.

    The DPU multiplies acc + A + B * sum_x by C. Only the model's bias is rescaled: the zero-point term
    (-zxs * sum(w - zw)) cancels against the MAC's sum over the input zero point, so it must go through C
    exactly as the MAC sum does. C's rounding then touches only the true data sum (x - zx)(w - zw): never the
    bias (a channel whose weights are all zero and whose bias is huge, as in tf2_mobilenet_v2_1.0_224_ptq),
    nor the zero-point offset (after a ReLU it can be 100 times the true sum: rescaling it with the bias
    cost tf2_mobilenet_v2_1.0_224_ptq's 7x7x960 depthwise layer a quarter of its exact outputs).
    Identity for per-tensor weights (C = 2^14, s_w = s_one)."""
    s = np.broadcast_to(np.asarray(w_scales, np.float64).reshape(-1), m.c.shape)
    bias = np.asarray(bias, np.int64)
    if np.all(m.c == 1 << m.bits) and np.all(s == m.s_one):
        scaled = bias
    else:
        scaled = np.rint(bias.astype(np.float64) * s / m.value()).astype(np.int64)
    a = scaled + np.asarray(zero_point_term, np.int64)
    if np.any(np.abs(a) >= 1 << INT32_BITS):
        raise ValueError("coefficient-table bias term overflows int32")
    return a


def shift_word(shift: int) -> int:
    """The 32-bit shift word: bits 0..5 the shift of values >= 0, bits 8..13 of values < 0 [R76-GREG]."""
    if not 0 <= shift < 64:
        raise ValueError(f"coefficient shift {shift} outside 0..63")
    return shift | shift << 8


def bs_shift(v_max: int, m: Multipliers) -> int:
    """The smallest shift (at most q) for which |v| * C >> shift, plus its rounding term, stays below 2^31 for
    every |v| <= v_max: u is then never saturated, whatever the hardware does there."""
    c_max = int(m.c.max(initial=1))
    sh = 0
    while sh < m.bits and v_max * c_max + (1 << sh) >= 1 << (INT32_BITS + sh):
        sh += 1
    return sh


def multiplier_error(w_scales: np.ndarray, m: Multipliers, sx: float, sy: float, data_bound: np.ndarray,
                     bias: np.ndarray, shift: int) -> float:
    """Worst output error (LSB) of replacing s_w by C * s_one / 2^q on the true data sum (x - zx)(w - zw) (at
    most `data_bound` per channel; or, for an output in the 8-bit range, at most 256 LSB plus the bias's share);
    plus the half unit of the rescaled bias and the rounding of u (half of 2^(shift - q) accumulator units of
    a channel of scale s_one)."""
    s = np.asarray(w_scales, np.float64).reshape(-1)
    delta = np.abs(m.value() - s)
    in_range = (256.0 + np.abs(np.asarray(bias, np.float64)) * s * sx / sy) * delta / s
    err = np.minimum(in_range, data_bound * delta * sx / sy) + 0.5 * m.value() * sx / sy
    if shift > 0:
        err = err + 0.5 * 2.0 ** (shift - m.bits) * m.s_one * sx / sy
    return float(err.max(initial=0.0))


def coefficient_table(a: np.ndarray, b: int, c: np.ndarray, depthwise: bool) -> bytes:
    """Groups of 8 channels: A int32[8], (direct) B int16[8], C int16[8]; padded channels A=B=0, C=2^14."""
    n = -(-len(a) // TABLE_CHANNELS) * TABLE_CHANNELS
    groups = n // GROUP
    aa = np.zeros(n, "<i4")
    aa[: len(a)] = a
    cc = np.full(n, 1 << SHIFT, "<i2")
    cc[: len(c)] = c
    parts = [aa.reshape(groups, GROUP).view(np.uint8)]
    if not depthwise:
        bb = np.zeros(n, "<i2")
        bb[: len(a)] = b
        parts.append(bb.reshape(groups, GROUP).view(np.uint8))
    parts.append(cc.reshape(groups, GROUP).view(np.uint8))
    return np.concatenate(parts, axis=1).tobytes()


def coefficient_buffer(table: bytes, shift: int) -> bytes:
    """Table followed by the shift word (and the rest of its 256-byte block, zeroed)."""
    tail = np.zeros(SHIFT_AREA // 4, "<u4")
    tail[0] = shift_word(shift)
    return table + tail.tobytes()


def out_cvt(in_scale: float, m: Multipliers, out_scale: float, shift: int) -> tuple[int, int]:
    """(OUT_CVT_SCALE, OUT_CVT_SHIFT) for the multiplier sx * s_one * 2^(shift - q) / sy: u carries q - shift
    fractional bits (no CORE truncation on RK3576). Per-tensor (q = shift = 14): the RK3588 routine on the
    same scales."""
    w_scale = m.s_one * 2.0 ** (shift - m.bits)
    return dpu_out_cvt(np.float32(in_scale), np.float32(w_scale), np.float32(out_scale), 0)
