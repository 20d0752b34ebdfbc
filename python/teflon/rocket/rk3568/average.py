"""A global AVERAGE_POOL_2D (the window is the whole plane) as the vendor writes it on RK3568: a depthwise convolution
with its own weights and the 8-byte per-channel BS stream, one 133-word conv task [GOLD avgpool-in7x7x128: the
toolkit's node `..._2gavg_2conv0`; docs/hardware/rk3568.md §4 "Global average"].

The toolkit's constants, recovered from the sha256 of its two byte vectors [GOLD]: every weight byte 0x7F (stored
127) with OW 128 from the stream, i.e. w - zw = 255 on every tap; per channel the bias term -zx_s x n x 255, OW 128
and the multiplier 2^14 with BS_MUL shift 14 (an identity); OUT_CVT = s_in / (s_out x 255 n) (n = the window's
taps) with the output zero point as its offset. The DPU then computes round(255 (S - n zx_s) x OUT_CVT) + zy_s for
the window sum S of stored inputs, TFLite (same scale and zero point in and out) its integer average of S.

Only the bias term is free (the stream is not part of what the golden files compare): `solve` takes the vendor's
when it gives TFLite's result for every possible window sum, else the nearest one that does, else the one that is
right for the most sums; a window whose best bias is wrong on more than MIN_EXACT of the sums, or by more than one
LSB, is refused with that share (even windows in int8: TFLite rounds ties away from zero of S, the DPU's rounding is
the same for every S, so about 1/n of the sums can differ).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from functools import cache

import numpy as np

from ...fixedpoint import best_bias
from ...ir import Graph, Operation
from ..average import bias_bounds, tflite_average
from ..operations import RocketConv
from ..pool import window_pool
from ..quantization import LoweringError, stored_offset, tensor_quant
from ..requant import out_cvt
from ..rounding import shift_even

AVERAGE_KIND = "AVERAGE_POOL_2D"
TAP = 255  # w - zw of every tap: stored weight 127, OW 128 [GOLD]
W_STORED, W_ZP_STORED = 127, -128
MIN_EXACT = 0.995  # the single-op bar: >= 99.5 % of the outputs exact
INT8 = (-128, 127)


@dataclass(frozen=True)
class AverageBias:
    bias: int  # the BS stream's bias term (every channel)
    exact: float  # share of all window sums on which the DPU equals TFLite
    worst: int  # largest difference in LSB

    @property
    def accepted(self) -> bool:
        return self.exact >= MIN_EXACT and self.worst <= 1


def weight_scale(n: int) -> np.float32:
    """The weight scale the vendor's OUT_CVT stands for: one window sum of 255 per tap is n x 255 units."""
    return np.float32(float(Fraction(1, TAP * n)))


def cvt(n: int, sx: float | np.float32, sy: float | np.float32) -> tuple[int, int]:
    """OUT_CVT (scale, shift) = s_in / (s_out x 255 n) [GOLD avgpool-in7x7x128: 0x53EB, 28]; raises ValueError."""
    return out_cvt(np.float32(sx), weight_scale(n), np.float32(sy), 0)


def dpu_global_average(sums: np.ndarray, bias: int, scale: int, shift: int, offset: int) -> np.ndarray:
    """The stored output of the averaging convolution for stored window sums, as drivers/rocket/sim_rk3568.c computes
    it: 255 S + bias, the multiplier 2^14 >> 14 (exact), OUT_CVT with ties to even, the offset, saturation."""
    v = sums.astype(np.int64) * TAP + bias
    return np.clip(shift_even(v * scale, shift) + offset, *INT8)


@cache
def solve(n: int, dtype: str, in_zp: int, out_zp: int, scale: int, shift: int) -> AverageBias:
    """The bias term for an n-tap window (stored zero points, OUT_CVT scale and shift), checked on every window sum."""
    sums = np.arange(INT8[0] * n, INT8[1] * n + 1, dtype=np.int64)
    want = tflite_average(sums, n, dtype)
    vendor = -in_zp * n * TAP
    lo, hi = bias_bounds(sums, want - out_zp, TAP, scale, shift, (INT8[0] - out_zp, INT8[1] - out_zp))
    lo_b, hi_b = int(lo.max()), int(hi.min())
    bias = min(max(vendor, lo_b), hi_b) if lo_b <= hi_b else best_bias(lo, hi)[0]
    got = dpu_global_average(sums, bias, scale, shift, out_zp)
    return AverageBias(bias, float(np.mean(got == want)), int(np.abs(got - want).max(initial=0)))


def is_global_average(graph: Graph, op: Operation) -> bool:
    if op.kind != AVERAGE_KIND or not op.inputs or len(op.outputs) != 1:
        return False
    x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
    o = op.options
    return (len(x.shape) == 4 and len(y.shape) == 4 and tuple(int(d) for d in y.shape[1:3]) == (1, 1)
            and (int(o.get("filter_h", 0)), int(o.get("filter_w", 0))) == tuple(int(d) for d in x.shape[1:3]))


def lower_global_average(graph: Graph, op: Operation) -> RocketConv:
    """The averaging depthwise convolution of a global AVERAGE_POOL_2D; raises LoweringError."""
    if not is_global_average(graph, op):
        raise LoweringError(f"{op.kind} (node {op.index}) is not a global average pool")
    p = window_pool(graph, op, max_kernel=None)  # same quantization in and out, no padding reached, one type
    if p.pad_top or p.pad_left or p.pad_bottom or p.pad_right:
        raise LoweringError("a global average whose window reaches into the padding")
    x, y = graph.tensors[p.input_tensor], graph.tensors[p.output_tensor]
    sx, _ = tensor_quant(x, "input")
    sy, _ = tensor_quant(y, "output")
    n = p.kh * p.kw
    try:
        scale, shift = cvt(n, sx, sy)
    except ValueError as e:
        raise LoweringError(str(e)) from e
    out_zp = p.in_zp  # the same quantization in and out (window_pool)
    ab = solve(n, p.dtype, p.in_zp, out_zp, scale, shift)
    if not ab.accepted:
        raise LoweringError(f"a {p.kh}x{p.kw} global average in {p.dtype} as the vendor's averaging convolution is "
                            f"exact on {100 * ab.exact:.2f} % of the window sums (worst {ab.worst} LSB): TFLite "
                            f"rounds ties {'up' if p.dtype == 'uint8' else 'away from zero'}, the DPU cannot")
    w_scale = weight_scale(n)
    c = p.in_c
    weights = np.full((1, p.kh, p.kw, c), W_STORED, np.int8)
    # weights_q in the model's domain (w_zp_q likewise, w - zw = 255): requant.bias_table gives bias - zx_s x 255 n
    weights_q = np.full((1, p.kh, p.kw, c), W_STORED + stored_offset(p.dtype), np.int64)
    bias = np.full(c, ab.bias + p.in_zp * n * TAP, np.int64)
    return RocketConv(p.nodes, AVERAGE_KIND, p.input_tensor, p.output_tensor, p.dtype, p.in_h, p.in_w, c, 1, 1, c,
                      p.kh, p.kw, 1, 0, 0, 0, 0, True, p.in_zp, out_zp, W_ZP_STORED, sx, sy, w_scale, weights,
                      weights_q, bias, cvt=(scale, shift))
