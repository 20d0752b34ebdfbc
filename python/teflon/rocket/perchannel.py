"""Per-output-channel weight scales through the DPU BS multiplier, shared by both rocket generations
(docs/hardware/rocket-rk3576.md "DPU", docs/hardware/rocket.md "Per-channel weights").

Per output channel the DPU computes  u = round((acc + A + B * sum_x) * C / 2^sh)  (to nearest, ties to even:
rounding.shift_even),  then OUT_CVT
(RK3588: acc + B * sum_x is the CORE value with the BS OW operand B, A the BS ALU operand, C the BS MUL
operand, sh BS_MUL_SHIFT_VALUE; RK3576: the coefficient table's A, B, C and its shift word).
- B: minus the stored weight zero point (direct only on RK3576; depthwise weights carry w - zw there);
- C: the channel's weight scale relative to the layer's: C = round(2^q * s_w / s_one), where s_one is the
  weight scale C = 2^q stands for. Per-tensor weights: q = 14, C = 2^14 (the RK3576 vendor's Q14, an exact
  identity with shift 14). Per-channel weights: q = 15 and the largest scale gets C = 32767 (the int16
  field's top), which halves C's rounding error against the vendor's Q14 (C <= 2^14);
- A: the bias correction, bias - zxs * sum(w - zw) (..requant.bias_table without truncation), with the
  model's bias scaled by s_w / (s_one * C / 2^q) so that it survives C's rounding (adjusted_bias);
- sh: 14 for per-tensor weights (RK3576). Per-channel layers use the smallest shift for which v * C >> sh
  provably stays inside int32 (bs_shift): u then keeps q - sh fractional bits, which OUT_CVT (built from
  s_one * 2^(sh - q)) removes with its one rounding. With sh = q, u would be rounded to whole accumulator
  units of the largest-scale channel: up to half an output LSB when sx * s_ref / sy approaches 1
  (tf2_mobilenet_v2_1.0_224_ptq's first depthwise layer: 0.44).
A layer is claimed per-channel only when the worst-case error the multiplier's rounding adds stays within
MAX_ERROR_LSB (multiplier_error) and every partial sum stays inside the DPU's int32 path (channel_scaling).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .operations import RocketConv
from .requant import bias_table, channel_sums
from .requant import out_cvt as dpu_out_cvt
from .stream import EncodeError

SHIFT = 14  # per-tensor layers (RK3576): C = 2^14 and the vendor's shift word 14 / 14
PER_CHANNEL_BITS = 15  # per-channel layers: C = 2^15 * s_w / s_one, at most 32767
C_MAX = (1 << 15) - 1  # int16 multiplier field
INT32_BITS = 31  # magnitude bits of the DPU's 32-bit data path
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
    s = np.asarray(w_scales, np.float64).reshape(-1)  # one scale per channel, or one for all
    bias = np.asarray(bias, np.int64)
    if (m.c == 1 << m.bits).all() and (s == m.s_one).all():
        scaled = bias
    else:
        scaled = np.rint(bias.astype(np.float64) * np.broadcast_to(s, m.c.shape) / m.value()).astype(np.int64)
    a = scaled + np.asarray(zero_point_term, np.int64)
    if (np.abs(a) >= 1 << INT32_BITS).any():
        raise ValueError("coefficient-table bias term overflows int32")
    return a


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


def _abs_weight_sums(c: RocketConv, zp: int) -> np.ndarray:
    """Per output channel: the sum of |stored weight - zp| over its taps and input channels (int64; depthwise
    weights (1, KH, KW, C), direct OHWI). int16 holds every difference of two int8 values; with zp 0 the int8
    absolute value read as uint8 is exact (|-128| wraps to -128, i.e. 128) and saves two passes."""
    d = np.abs(c.weights).view(np.uint8) if zp == 0 else np.abs(c.weights.astype(np.int16) - np.int16(zp))
    return channel_sums(d.reshape(-1, c.out_c), 0) if c.depthwise else channel_sums(d.reshape(c.out_c, -1), 1)


def _taps(c: RocketConv) -> int:
    """Weights per output channel (taps times input channels; depthwise: taps)."""
    return c.kh * c.kw if c.depthwise else c.weights[0].size


def _bounded_worst(c: RocketConv, a: np.ndarray) -> int:
    """An upper bound of accumulator_bounds' worst from the weight count alone: every |w - zw| of a stored int8
    weight is at most max(127 - zw, 128 + zw), every |w| at most 128. When it already fits int32, a per-tensor
    layer needs neither sum of absolute weights (its shift is fixed)."""
    taps = _taps(c)
    reach = max(127 - c.w_zp, 128 + c.w_zp)
    worst = 128 * reach * taps + int(np.abs(a).max(initial=0))
    if not c.depthwise:
        worst = max(worst, 128 * 128 * taps, 128 * abs(c.w_zp) * taps)
    return worst


def accumulator_bounds(c: RocketConv, a: np.ndarray, centered: np.ndarray) -> tuple[np.ndarray, int]:
    """(per channel: the largest |acc + A + B * sum_x|, the largest of every partial sum the DPU adds) over any
    int8 input; the MAC reads stored bytes in -128..127 (padding taps included). `centered`: the per-channel
    sums of |w - zw| (_abs_weight_sums)."""
    # acc + B * sum_x multiplies each input by w - zw (depthwise: the stored pair sums)
    total = 128 * centered + np.abs(a)
    worst = int(total.max(initial=0))
    if not c.depthwise:  # the MAC sum and the B term separately
        taps = _taps(c)
        worst = max(worst, 128 * int(_abs_weight_sums(c, 0).max(initial=0)), 128 * abs(c.w_zp) * taps)
    return total, worst


@dataclass(frozen=True)
class ChannelScaling:
    """What the BS stage needs per output channel: A (int64), the multipliers C and the shift sh."""

    a: np.ndarray
    multipliers: Multipliers
    shift: int


class ScaleSpreadError(EncodeError):
    """Per-channel weight scales too far apart for one 16-bit multiplier (rk3576 splits such a layer into channel
    groups: rk3576/groups.py)."""


def channel_scaling(c: RocketConv, max_error: float = MAX_ERROR_LSB) -> ChannelScaling:
    """A, C and sh of a convolution (per-tensor weights: C = 2^14, sh = 14); raises EncodeError when a sum could
    leave the DPU's int32 path, ScaleSpreadError when per-channel scales are too far apart for the 16-bit
    multiplier (an output error above `max_error` LSB)."""
    per_channel = c.w_scales is not None
    a_true = bias_table(c.bias, c.weights_q, c.w_zp_q, c.in_zp, c.depthwise, 0)
    if c.bs is not None:  # a fitted multiplier stage (const_elementwise.py): taken as it is, its sums checked
        mul, sh = c.bs
        m = Multipliers(np.asarray(mul, np.int64), sh, float(c.w_scale))
        a = a_true.astype(np.int64)
        v_max, worst = accumulator_bounds(c, a, _abs_weight_sums(c, c.w_zp))
        if worst >= 1 << INT32_BITS or int(v_max.max(initial=0)) * int(m.c.max(initial=1)) >= 1 << (INT32_BITS + sh):
            raise EncodeError(f"accumulator, bias and multiplier terms can reach {worst} x {int(m.c.max())} / 2^{sh}, "
                              "beyond the DPU's int32")
        return ChannelScaling(a, m, sh)
    if per_channel:
        scales = np.broadcast_to(c.w_scales, (c.out_c,))
        m = multipliers(scales, per_channel)
        bias = np.asarray(c.bias, np.int64)
        a = adjusted_bias(bias, a_true - bias, scales, m)
    else:  # multipliers() and adjusted_bias()'s identity case (C = 2^14 for every channel) without array passes
        if not c.w_scale > 0:
            raise ValueError("weight scales must be positive")
        m = Multipliers(np.full(c.out_c, 1 << SHIFT, np.int64), SHIFT, float(c.w_scale))
        a = a_true.astype(np.int64)
        if a.size and a.min() <= -(1 << INT32_BITS):
            raise ValueError("coefficient-table bias term overflows int32")
    shift = SHIFT
    if per_channel or _bounded_worst(c, a) >= 1 << INT32_BITS:
        centered = _abs_weight_sums(c, c.w_zp)
        v_max, worst = accumulator_bounds(c, a, centered)
        if worst >= 1 << INT32_BITS:
            raise EncodeError(f"accumulator, bias and zero-point terms can reach {worst}, beyond the DPU's int32")
    if per_channel:
        shift = bs_shift(int(v_max.max(initial=0)), m)
        # the true data sum: stored inputs in -128..127 minus the stored zero point (padding taps add 0)
        data = max(127 - c.in_zp, 128 + c.in_zp) * centered
        err = multiplier_error(scales, m, float(c.in_scale), float(c.out_scale), data, bias, shift)
        if err > max_error:
            raise ScaleSpreadError(f"per-channel weight scales too far apart for the 16-bit multiplier "
                                   f"(error up to {err:.2f} LSB)")
    return ChannelScaling(a, m, shift)


def ew_shift(c: RocketConv, m: Multipliers, shift: int) -> int:
    """The multiplier-stage shift of a layer with a fused ADD: at least `shift`, and large enough that one step of
    the operand is below 2^15 units of u (the EW converter's 16-bit signed scale with a shift >= 0). A per-channel
    layer's u keeps q - shift fractional bits, so its operand step can reach 2^20 units (tf2_mobilenet_v2_1.0_224_ptq);
    each bit more of shift rounds u to twice the step, an error below half an operand step / 2^14 at the limit,
    i.e. under 1e-4 output LSB when the operand and output scales are alike. Shared by RK3576 (coefficient shift
    word) and RK3588 (BS_MUL_SHIFT_VALUE)."""
    ratio = float(c.ew.scale) / (float(c.in_scale) * m.s_one) if c.ew is not None else 0.0
    # ratio * 2^(q - shift) <= 32767 keeps the rounded scale below 2^15 with a shift >= 0 (requant.ew_cvt)
    need = m.bits + math.ceil(math.log2(abs(ratio) / 32767)) if ratio != 0 else 0
    return max(shift, need)


def out_cvt(in_scale: float, m: Multipliers, out_scale: float, shift: int) -> tuple[int, int]:
    """(OUT_CVT_SCALE, OUT_CVT_SHIFT) for the multiplier sx * s_one * 2^(shift - q) / sy: u carries q - shift
    fractional bits (no CORE truncation on RK3576). Per-tensor (q = shift = 14): the RK3588 routine on the
    same scales."""
    w_scale = m.s_one * 2.0 ** (shift - m.bits)
    return dpu_out_cvt(np.float32(in_scale), np.float32(w_scale), np.float32(out_scale), 0)
