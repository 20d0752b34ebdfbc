"""ir.Graph pooling nodes -> RocketPool: one PPU pass (PPU + PPU_RDMA, op-enable 0x60) each.

MAX_POOL_2D, AVERAGE_POOL_2D and MEAN over (H, W) with keep_dims. Like every lowering, everything is in the stored
domain (uint8 stored as q - 128, quantization.py). The PPU has no output conversion, so its output shares the input's
quantization (TFLite's pools always do); a MEAN that requantizes becomes the PPU average followed by a 1x1
depthwise convolution with unit weights whose OUT_CVT requantizes (`lower_pool_ops`). Average pooling is a window
sum times a per-axis reciprocal (docs/hardware/rocket.md, "Pooling (PPU)"); `average_recips` proves, over every
window sum the window can produce, that the simulated arithmetic equals TFLite's rounding before the node is
claimed. An AVERAGE_POOL_2D whose rounding the PPU cannot reproduce (and whose windows read no padding) runs as a
depthwise convolution on the DPU instead, with constant weights and an OUT_CVT that divides by the window count
(`average_conv` proves it exact the same way; docs/hardware/rocket.md §6a).
"""

from __future__ import annotations

import os
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from ..ir import Graph, Operation, Tensor
from .average import average_conv, average_recips
from .flat_pool import FLAT_KINDS, describe, flat_average_ops, is_global
from .geometry import same_pads
from .lower import MAX_KERNEL
from .operations import RocketConv, RocketPool, synthetic_tensor
from .quantization import LoweringError, activation_bounds, quantized, stored_offset, tensor_quant

if TYPE_CHECKING:
    from .views import RocketView

POOL_KINDS = ("MAX_POOL_2D", "AVERAGE_POOL_2D", "MEAN")
KERNEL_RANGE = (1, 8)  # per axis: KERNEL_WIDTH/HEIGHT are k - 1 in 4 bits; the vendor uses 2..7 [VENDOR]
STRIDE_RANGE = (1, 3)  # vendor programs use 1..3; the field (4 bits) would allow 16
PAD_MAX = 7  # POOLING_PADDING_CFG pads are 3-bit fields
# Boards whose accel/rocket kernel arms only the DPU completion (upstream today) see no end of a PPU task: each
# pool submit then waits out the 500 ms job timeout and resets the core (docs/hardware/rocket.md §6a). This
# switch keeps every pool on the CPU for such a board.
PPU_SWITCH = "TEFLON_ROCKET_PPU"
# A requantizing MEAN on the PPU rounds its average to the input's LSB (error up to 1/2), then the 1x1 depthwise
# requantization multiplies that error by g = s_in / s_out before its own rounding: below g = 2 the result stays
# within 1 LSB of TFLite's one rounding, above it reaches g/2 (real models' MEANs have g = 3-4: a mean of 25-49
# values spans less than its input). Such MEANs take the per-plane convolutions (flat_pool.py) where one rounding
# reproduces TFLite's, else stay on the CPU.
MAX_REQUANT_GAIN = 2.0


def _trailing_pad(size: int, out: int, k: int, s: int, before: int) -> int:
    return max(0, (out - 1) * s + k - before - size)


def _check_range(what: str, v: int, lo_hi: tuple[int, int]) -> None:
    if not lo_hi[0] <= v <= lo_hi[1]:
        raise LoweringError(f"pool {what} {v} not supported ({lo_hi[0]}..{lo_hi[1]})")


def lower_pool_ops(graph: Graph, op: Operation) -> list[RocketPool | RocketConv | list[RocketView]]:
    """The NPU operations of a pooling node: the PPU pass, and for a requantizing MEAN the 1x1 depthwise
    convolution after it (through an intermediate tensor the partition does not see); an AVERAGE_POOL_2D the PPU
    cannot round like TFLite is one depthwise convolution instead (average_pool_conv); a global average neither
    takes (a window wider than 8, or the PPU switched off) is a 1x1 convolution per 16-channel plane
    (flat_pool.py: its views, then its convolutions). Raises LoweringError."""
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
    (sx, zx), (sy, zy) = tensor_quant(x, "input"), tensor_quant(y, "output")
    if sx == sy and zx == zy:
        return [pool]
    if float(sx) >= MAX_REQUANT_GAIN * float(sy):
        raise LoweringError(f"requantizing {op.kind} with input / output scale {float(sx) / float(sy):.2f} >= "
                            f"{MAX_REQUANT_GAIN:g}: the PPU rounds at the input scale, and the requantization would "
                            f"multiply that half LSB past 1 output LSB")
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
    conv = constant_depthwise(p, 1, 1, 1, 1, 1, 0)
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
    sx = tensor_quant(x, "input")[0]
    conv = constant_depthwise(p, p.kh, p.kw, p.sh, p.sw, a.weight, a.bias + a.weight * n * p.in_zp)
    return replace(conv, out_zp=0, in_scale=sx, out_scale=sx, w_scale=np.float32(a.scale / (1 << a.shift)),
                   cvt=(a.scale, a.shift))


def constant_depthwise(p: RocketPool, kh: int, kw: int, sh: int, sw: int, weight: int, bias: int) -> RocketConv:
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
    sx, zx = tensor_quant(x, "input")
    sy, zy = tensor_quant(y, "output")
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
    activation_bounds(act, y.dtype, sy, zy, False)  # the PPU has no clamp stage
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
        return describe(ops)
    if isinstance(p, RocketConv):
        return (f"average pool {p.kh}x{p.kw} s{p.stride}x{p.sx} as a depthwise convolution on the DPU (the PPU cannot "
                "round it like TFLite; OUT_CVT divides exactly)")
    what = "average" if p.average else "max"
    tail = ", then a 1x1 depthwise requantization (2 tasks)" if len(ops) > 1 else ", 1 task"
    return f"{what} pool {p.kh}x{p.kw} s{p.sh}x{p.sw} on the PPU{tail}"
