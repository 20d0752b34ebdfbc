"""ir.Graph pooling nodes -> RocketPool: one PPU pass (PPU + PPU_RDMA, op-enable 0x60) each.

MAX_POOL_2D, AVERAGE_POOL_2D and MEAN over (H, W) with keep_dims. Like lower.py everything is in the stored
domain (uint8 stored as q - 128). The PPU has no output conversion, so its output shares the input's
quantization (TFLite's pools always do); a MEAN that requantizes becomes the PPU average followed by a 1x1
depthwise convolution with unit weights whose OUT_CVT requantizes (`lower_pool_ops`). Average pooling is a window
sum times a per-axis reciprocal (docs/hardware/rocket.md, "Pooling (PPU)"); `average_recips` proves, over every
window sum the window can produce, that the simulated arithmetic equals TFLite's rounding before the node is
claimed. An AVERAGE_POOL_2D whose rounding the PPU cannot reproduce (and whose windows read no padding) runs as a
depthwise convolution on the DPU instead, with constant weights and an OUT_CVT that divides by the window count
(`average_conv` proves it exact the same way; docs/hardware/rocket.md §6a).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, replace
from fractions import Fraction
from functools import cache
from typing import TYPE_CHECKING

import numpy as np

from ..fixedpoint import multiply_by_quantized_multiplier, quantize_multiplier, round_half_away
from ..ir import Graph, Operation, Tensor
from .lower import (
    MAX_KERNEL,
    LoweringError,
    RocketConv,
    _check_activation,
    _quant,
    quantized,
    same_pads,
    stored_offset,
    synthetic_tensor,
)
from .rounding import preimage, shift_even

if TYPE_CHECKING:
    from .views import RocketView

POOL_KINDS = ("MAX_POOL_2D", "AVERAGE_POOL_2D", "MEAN")
KERNEL_RANGE = (1, 8)  # per axis: KERNEL_WIDTH/HEIGHT are k - 1 in 4 bits; the vendor uses 2..7 [VENDOR]
STRIDE_RANGE = (1, 3)  # vendor programs use 1..3; the field (4 bits) would allow 16
PAD_MAX = 7  # POOLING_PADDING_CFG pads are 3-bit fields
RECIP_ONE = 1 << 16  # RECIP_KERNEL_*: 1/k times 2^16 (TRM "reciprocal ... multiple 2^16")
# Boards whose accel/rocket kernel arms only the DPU completion (upstream today) see no end of a PPU task: each
# pool submit then waits out the 500 ms job timeout and resets the core (docs/hardware/rocket.md §6a). This
# switch keeps every pool on the CPU for such a board.
PPU_SWITCH = "TEFLON_ROCKET_PPU"


@dataclass
class RocketPool:
    """One pooling pass as the encoders need it (zero point in the stored domain)."""

    nodes: list[int]
    kind: str  # "MAX_POOL_2D" / "AVERAGE_POOL_2D" / "MEAN"
    input_tensor: int
    output_tensor: int
    dtype: str
    in_h: int
    in_w: int
    in_c: int
    out_h: int
    out_w: int
    kh: int
    kw: int
    sh: int
    sw: int
    pad_top: int  # leading pads, and the trailing pads the last window actually consumes
    pad_left: int
    pad_bottom: int
    pad_right: int
    in_zp: int  # stored
    average: bool
    recip_w: int = 0  # average only: RECIP_KERNEL_WIDTH / HEIGHT
    recip_h: int = 0

    @property
    def out_c(self) -> int:
        return self.in_c

    @property
    def single_channel_input(self) -> bool:
        return False  # the PPU reads NC1HWC2 only

    @property
    def macs(self) -> int:
        return 0

    @property
    def consumed_w(self) -> int:
        """Input columns the windows read (the vendor's CUBE_IN_WIDTH + 1)."""
        return min(self.in_w, (self.out_w - 1) * self.sw + self.kw - self.pad_left)

    @property
    def consumed_h(self) -> int:
        return min(self.in_h, (self.out_h - 1) * self.sh + self.kh - self.pad_top)

    @property
    def pads_consumed(self) -> bool:
        return bool(self.pad_top or self.pad_left or self.pad_bottom or self.pad_right)


def _trailing_pad(size: int, out: int, k: int, s: int, before: int) -> int:
    return max(0, (out - 1) * s + k - before - size)


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


def _bias_bounds(sums: np.ndarray, want: np.ndarray, g: int | np.ndarray, scale: int, shift: int,
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
                   bounds: tuple[int, int]) -> tuple[np.ndarray, int]:
    """Per channel c the bias b_c for which clip(shift_even((w_c·xs + b_c)·scale, shift), bounds) equals
    want[c] on the most inputs xs (want: channels x len(xs)), and how many (input, channel) pairs they serve."""
    lo, hi = _bias_bounds(xs[None, :], want, w[:, None], scale, shift, bounds)
    lo_b, hi_b = lo.max(axis=1), hi.min(axis=1)
    exact = lo_b <= hi_b
    biases = np.where(exact, np.clip(0, lo_b, hi_b), 0)
    served = int(exact.sum()) * len(xs)
    for ch in np.flatnonzero(~exact):  # channels no bias makes exact: the one serving the most inputs
        biases[ch], n = _best_bias(lo[ch], hi[ch])
        served += n
    return biases.astype(np.int64), served


def cvt_pairs(ratio: Fraction) -> list[tuple[int, int]]:
    """(scale, shift) of OUT_CVT closest below and above `ratio` (scale in [2^14, 2^15))."""
    return [(scale, shift) for g, scale, shift in _cvt_candidates(ratio) if g == 1]


def _least(lo: int, hi: int) -> int:
    """The value of least magnitude in [lo, hi] (the negative one of a tie)."""
    return 0 if lo <= 0 <= hi else hi if hi < 0 else lo


def _best_bias(lo: np.ndarray, hi: np.ndarray) -> tuple[int, int]:
    """(bias, sums it serves): the bias inside the most of the intervals [lo, hi] (ties: least magnitude)."""
    cand = np.unique(np.concatenate([lo[lo > -(1 << 62)], [0]]))
    served = np.searchsorted(np.sort(lo), cand, "right") - np.searchsorted(np.sort(hi), cand, "left")
    best = np.flatnonzero(served == served.max())
    b = int(cand[best[np.argmin(np.abs(cand[best]))]])
    return b, int(served.max())


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
        lo, hi = _bias_bounds(sums, want, g, scale, shift)
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
        b, served = _best_bias(*_bias_bounds(sums, want, g, scale, shift))
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
    """TFLite 2.14's integer MEAN over H, W (keep_dims, 4-D: the optimized uint8 / int8 kernels) of stored window
    sums, in the stored domain: MultiplyByQuantizedMultiplier(sum of q, sx / (n · sy)) + zy - round(zx · sx / sy),
    the float products in float32 as the kernel computes them; checked against tflite_runtime on random inputs
    (tests/rocket/test_average_conv.py)."""
    off = stored_offset(dtype)
    fsx, fsy = np.float32(sx), np.float32(sy)
    bias = int(zy) - round_half_away(float(np.float32(np.float32(zx) * fsx / fsy)))
    m, shift = quantize_multiplier(float(np.float32(fsx / np.float32(np.float32(n) * fsy))))
    q = multiply_by_quantized_multiplier(sums + off * n, m, shift) + bias
    lo, hi = (0, 255) if dtype == "uint8" else (-128, 127)
    return np.clip(q, lo, hi) - off


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


def _check_range(what: str, v: int, lo_hi: tuple[int, int]) -> None:
    if not lo_hi[0] <= v <= lo_hi[1]:
        raise LoweringError(f"pool {what} {v} not supported ({lo_hi[0]}..{lo_hi[1]})")


def lower_pool_ops(graph: Graph, op: Operation) -> list[RocketPool | RocketConv | list[RocketView]]:
    """The NPU operations of a pooling node: the PPU pass, and for a requantizing MEAN the 1x1 depthwise
    convolution after it (through an intermediate tensor the partition does not see); an AVERAGE_POOL_2D the PPU
    cannot round like TFLite is one depthwise convolution instead (average_pool_conv); a global average neither
    takes (a window wider than 8, or the PPU switched off) is a 1x1 convolution per 16-channel plane
    (flat_pool.py: its views, then its convolutions). Raises LoweringError."""
    from .flat_pool import FLAT_KINDS, flat_average_ops, is_global

    try:
        return _window_ops(graph, op)
    except LoweringError:
        if op.kind not in FLAT_KINDS:
            raise
        pool = window_pool(graph, op, requantize=True, max_kernel=None)
        if not is_global(pool):
            raise
    return flat_average_ops(graph, op, pool)  # type: ignore[return-value]


def _window_ops(graph: Graph, op: Operation) -> list[RocketPool | RocketConv]:
    pool = window_pool(graph, op, requantize=True)
    ppu_off = _ppu_off()
    if op.kind == "AVERAGE_POOL_2D" and not pool.pads_consumed and (
            ppu_off or average_recips(pool.kh, pool.kw, pool.dtype) is None):
        try:
            return [average_pool_conv(pool, graph.tensors[op.inputs[0]])]
        except LoweringError:
            if not ppu_off:
                raise
    if ppu_off:  # an average the DPU can take exactly ran above (it needs no PPU completion)
        _refuse_ppu()
    set_recips(pool)
    x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
    (sx, zx), (sy, zy) = _quant(x, "input"), _quant(y, "output")
    if sx == sy and zx == zy:
        return [pool]
    pool.output_tensor = intermediate_tensor(graph, op)
    return [pool, requantize_conv(pool, y.index, sx, sy, zy)]


def intermediate_tensor(graph: Graph, op: Operation) -> int:
    """A tensor index no graph tensor uses, the same for every compile of the graph."""
    return synthetic_tensor(graph, op.index, 0)


def requantize_conv(p: RocketPool, out_tensor: int, sx: np.float32, sy: np.float32, zy: int) -> RocketConv:
    """1x1 depthwise convolution with unit weights: (x - zx) * sx / sy + zy on the pool's output."""
    if p.in_c == 1:
        raise LoweringError("requantizing MEAN of one channel: a single-channel convolution reads raw rows only the "
                            "host writes")
    conv = _constant_depthwise(p, 1, 1, 1, 1, 1, 0)
    return replace(conv, input_tensor=p.output_tensor, output_tensor=out_tensor, in_h=p.out_h, in_w=p.out_w,
                   out_zp=zy - stored_offset(p.dtype), in_scale=np.float32(sx), out_scale=np.float32(sy))


def average_pool_conv(p: RocketPool, x: Tensor) -> RocketConv:
    """The average pool `p` (no padding read) as a depthwise convolution over its input: weights w - zw = g, a bias
    and OUT_CVT (average_conv) for which the result is TFLite's rounded average of every possible window."""
    why = f"{p.kh}x{p.kw} {p.dtype} average: the PPU's reciprocal multiply cannot round like TFLite for every window sum"
    if max(p.kh, p.kw) > MAX_KERNEL:
        raise LoweringError(f"{why}, and a depthwise convolution takes kernels up to {MAX_KERNEL}")
    if p.in_c == 1:
        raise LoweringError(f"{why}, and a single-channel convolution reads raw rows only the host writes")
    a = average_conv(p.kh, p.kw, p.dtype)
    if a is None:
        raise LoweringError(f"{why}, nor can a depthwise convolution's OUT_CVT")
    n = p.kh * p.kw
    # v = sum of (xs - zxs) * g + bias: the bias g * n * zxs leaves g * (sum of stored inputs) + a.bias, whatever the
    # zero point; the output (same quantization as the input) then needs no OUT_CVT offset
    sx = _quant(x, "input")[0]
    conv = _constant_depthwise(p, p.kh, p.kw, p.sh, p.sw, a.weight, a.bias + a.weight * n * p.in_zp)
    return replace(conv, out_zp=0, in_scale=sx, out_scale=sx, w_scale=np.float32(a.scale / (1 << a.shift)),
                   cvt=(a.scale, a.shift))


def _constant_depthwise(p: RocketPool, kh: int, kw: int, sh: int, sw: int, weight: int, bias: int) -> RocketConv:
    """A depthwise convolution over the pool's input and output tensors and its output geometry (kh x kw, strides
    sh / sw, no padding) whose weights are all w - zw = weight (stored weight zero point 0), with one bias."""
    c = p.in_c
    weights = np.full((1, kh, kw, c), weight, np.int8)
    weights_q = quantized(weights, p.dtype)
    return RocketConv(
        nodes=list(p.nodes), kind="DEPTHWISE_CONV_2D", input_tensor=p.input_tensor, output_tensor=p.output_tensor,
        dtype=p.dtype, in_h=p.in_h, in_w=p.in_w, in_c=c, out_h=p.out_h, out_w=p.out_w, out_c=c, kh=kh, kw=kw,
        stride=sh, pad_top=0, pad_bottom=0, pad_left=0, pad_right=0, depthwise=True, in_zp=p.in_zp, out_zp=p.in_zp,
        w_zp=0, in_scale=np.float32(1.0), out_scale=np.float32(1.0), w_scale=np.float32(1.0),
        weights=weights, weights_q=weights_q, bias=np.full(c, bias, np.int32), stride_w=None if sw == sh else sw)


def lower_pool(graph: Graph, op: Operation, requantize: bool = False) -> RocketPool:
    """Build a RocketPool from a MAX_POOL_2D / AVERAGE_POOL_2D / MEAN node, or raise LoweringError(reason).
    requantize: a MEAN whose output quantization differs is accepted (the caller adds the requantization)."""
    if _ppu_off():
        _refuse_ppu()
    pool = window_pool(graph, op, requantize)
    set_recips(pool)
    return pool


def _ppu_off() -> bool:
    return os.environ.get(PPU_SWITCH, "1") == "0"


def _refuse_ppu() -> None:
    raise LoweringError(f"pools on the PPU are switched off ({PPU_SWITCH}=0: the kernel would not see their "
                        "completion, docs/hardware/rocket.md §6a)")


def window_pool(graph: Graph, op: Operation, requantize: bool = False,
                max_kernel: int | None = KERNEL_RANGE[1]) -> RocketPool:
    """lower_pool without the average's reciprocals (set_recips). `max_kernel` None: any window size (a global
    average that runs as convolutions, flat_pool.py)."""
    if op.kind not in POOL_KINDS:
        raise LoweringError(f"{op.kind} is not a pooling operation")
    if not op.inputs or len(op.outputs) != 1:
        raise LoweringError("unexpected number of inputs/outputs")
    x = graph.tensors[op.inputs[0]]
    y = graph.tensors[op.outputs[0]]
    if x.dtype not in ("uint8", "int8") or y.dtype != x.dtype:
        raise LoweringError(f"pool types {x.dtype} -> {y.dtype} not supported (uint8 or int8, same type)")
    if x.is_constant:
        raise LoweringError("constant input tensor")
    if len(x.shape) != 4 or x.shape[0] != 1:
        raise LoweringError(f"input shape {x.shape} not supported (4-D NHWC, batch 1)")
    sx, zx = _quant(x, "input")
    sy, zy = _quant(y, "output")
    _, ih, iw, ic = (int(d) for d in x.shape)

    if op.kind == "MEAN":
        kh, kw, sh, sw, padding, act = _mean_window(graph, op, ih, iw, ic)
    else:
        o = op.options
        kh, kw = int(o.get("filter_h", 0)), int(o.get("filter_w", 0))
        sh, sw = int(o.get("stride_h", 0)), int(o.get("stride_w", 0))
        padding, act = str(o.get("padding")), str(o.get("activation", "NONE"))
    if len(y.shape) != 4 or y.shape[0] != 1 or y.shape[3] != ic:
        raise LoweringError(f"output shape {y.shape} not supported for input {x.shape}")
    if (sx != sy or zx != zy) and not (requantize and op.kind == "MEAN"):
        raise LoweringError(f"pool output quantization differs from its input (scale {sx:g} -> {sy:g}, zero point "
                            f"{zx} -> {zy}): the PPU has no output conversion")
    _check_activation(act, y.dtype, sy, zy, False)  # the PPU has no clamp stage
    for what, v in (("kernel height", kh), ("kernel width", kw)):
        _check_range(what, v, (KERNEL_RANGE[0], v if max_kernel is None else max_kernel))
    oh, ow = int(y.shape[1]), int(y.shape[2])
    # a single output position never moves the window: program stride 1 whatever the model says
    sh, sw = (1 if oh == 1 else sh), (1 if ow == 1 else sw)
    for what, v in (("stride height", sh), ("stride width", sw)):
        _check_range(what, v, STRIDE_RANGE)
    if padding == "SAME":
        pt, _ = same_pads(ih, kh, sh)
        pl, _ = same_pads(iw, kw, sw)
    elif padding == "VALID":
        pt = pl = 0
    else:
        raise LoweringError(f"padding {padding} not supported")
    pb, pr = _trailing_pad(ih, oh, kh, sh, pt), _trailing_pad(iw, ow, kw, sw, pl)
    if max(pt, pl, pb, pr) > PAD_MAX:
        raise LoweringError(f"pool padding {pt},{pl},{pb},{pr} exceeds the 3-bit pad fields")
    if (ih + pt + pb - kh) // sh + 1 != oh or (iw + pl + pr - kw) // sw + 1 != ow:
        raise LoweringError(f"output shape {y.shape} inconsistent with input {x.shape} and the window")

    off = stored_offset(x.dtype)
    pool = RocketPool([op.index], op.kind, x.index, y.index, x.dtype, ih, iw, ic, oh, ow, kh, kw, sh, sw,
                      pt, pl, pb, pr, zx - off, average=op.kind != "MAX_POOL_2D")
    if pool.average and pool.pads_consumed:
        raise LoweringError("average pool whose windows reach into the padding: TFLite divides by the valid "
                            "count; the PPU's count-excluding mode (OPERATION_MODE_CFG bit 3) is not understood")
    return pool


def set_recips(pool: RocketPool) -> None:
    """An average's PPU reciprocals (average_recips), or LoweringError when they cannot round like TFLite."""
    if not pool.average:
        return
    recips = average_recips(pool.kh, pool.kw, pool.dtype)
    if recips is None:
        raise LoweringError(f"{pool.kh}x{pool.kw} {pool.dtype} average: the PPU's reciprocal multiply cannot round "
                            "like TFLite for every window sum (docs/hardware/rocket.md, Pooling)")
    pool.recip_w, pool.recip_h = recips


def _mean_window(graph: Graph, op: Operation, ih: int, iw: int, ic: int) -> tuple[int, int, int, int, str, str]:
    """A MEAN over axes (1, 2) with keep_dims: one VALID window over the whole plane."""
    if len(op.inputs) < 2 or graph.tensors[op.inputs[1]].data is None:
        raise LoweringError("MEAN axes are not constant")
    axes = sorted({int(a) % 4 for a in np.asarray(graph.tensors[op.inputs[1]].data).reshape(-1)})
    if axes != [1, 2]:
        raise LoweringError(f"MEAN over axes {axes} not supported (only the spatial axes 1, 2)")
    y = graph.tensors[op.outputs[0]]
    if tuple(y.shape) != (1, 1, 1, ic):
        raise LoweringError(f"MEAN output shape {y.shape} not supported (keep_dims, (1, 1, 1, C))")
    return ih, iw, 1, 1, "VALID", "NONE"


def describe_pool(ops: list[RocketPool | RocketConv | list[RocketView]]) -> str:
    p = ops[0]
    if isinstance(p, list):
        from .flat_pool import describe

        return describe(ops)
    if isinstance(p, RocketConv):
        return (f"average pool {p.kh}x{p.kw} s{p.stride}x{p.sx} as a depthwise convolution on the DPU (the PPU cannot "
                "round it like TFLite; OUT_CVT divides exactly)")
    what = "average" if p.average else "max"
    tail = ", then a 1x1 depthwise requantization (2 tasks)" if len(ops) > 1 else ", 1 task"
    return f"{what} pool {p.kh}x{p.kw} s{p.sh}x{p.sw} on the PPU{tail}"
