"""ir.Graph partition -> rocket convolutions (one CNA -> CORE -> DPU pass each).

Everything here is expressed in the NPU's *stored* domain: the hardware computes on signed int8, so
uint8 tensors are stored as q - 128 and int8 tensors as q. Mesa's "x - 0x80" expressions for uint8
become "stored(x)" and the same encoder serves int8 per-tensor models. Axis meaning is the hardware's:
width = the contiguous TFLite W (dims[2]), rows = TFLite H (dims[1]); see docs/hardware/rocket.md.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from itertools import count
from typing import TYPE_CHECKING

import numpy as np

from ..ir import Graph, Operation, Tensor, memo
from .pad_fold import PAD_KINDS, folded_pad

if TYPE_CHECKING:
    from .pool import RocketPool
    from .views import RocketView

CONV_KINDS = ("CONV_2D", "DEPTHWISE_CONV_2D")
ELEMENTWISE_FUSED = ("ADD", "SUB")  # fused into the producing convolution (add_fusion)
# The largest conv-output LSB, in output LSB, a fused ADD may skip the rounding of: the fused operation differs from
# TFLite's two roundings by up to half of it (docs/hardware/rocket.md §6, "Fused ADD: numbers")
MAX_FUSED_GAIN = 4.0
# Kernel sizes claimed: the weight-size fields hold 31 (5 bits, both generations), the pad fields 15 (4 bits); 7 is
# the largest the op sweeps prove on both simulators (docs/hardware/rocket.md "Kernels").
MAX_KERNEL = 7
# Strides claimed along each axis (CONV_X_STRIDE / CONV_Y_STRIDE are 3-bit fields; 3 is what the sweeps prove).
MAX_STRIDE = 3


class LoweringError(ValueError):
    """The node cannot run on the NPU; the message is the human reason."""


def stored_offset(dtype: str) -> int:
    """Value subtracted from a quantized value to get the byte the NPU computes on."""
    if dtype == "uint8":
        return 128
    if dtype == "int8":
        return 0
    raise LoweringError(f"tensor type {dtype} not supported (uint8 or int8 only)")


@dataclass(frozen=True)
class EwOperand:
    """The other input of an ADD fused into the convolution that produces its first input: read by DPU_RDMA's
    element-wise reader and added by the DPU's EW stage before OUT_CVT (rocket.md §3.5)."""

    tensor: int
    zp: int  # stored zero point
    scale: np.float32  # negative for a SUB: the operand is subtracted


@dataclass
class RocketConv:
    """One convolution as the encoder needs it (all zero points in the stored domain)."""

    nodes: list[int]
    kind: str  # "CONV_2D" / "DEPTHWISE_CONV_2D"
    input_tensor: int
    output_tensor: int
    dtype: str  # activation type, "uint8" or "int8" (weights share it)
    in_h: int
    in_w: int
    in_c: int
    out_h: int
    out_w: int
    out_c: int
    kh: int
    kw: int
    stride: int  # row (TFLite H) stride; the column stride is `sx`
    pad_top: int
    pad_bottom: int
    pad_left: int
    pad_right: int
    depthwise: bool
    in_zp: int  # stored input zero point (-128..127)
    out_zp: int
    w_zp: int
    in_scale: np.float32
    out_scale: np.float32
    w_scale: np.float32
    weights: np.ndarray  # stored int8: OHWI (conv) or (1, KH, KW, C) (depthwise)
    weights_q: np.ndarray  # the TFLite integer weights (uint8 or int8, the model's), same shape (for w - zw sums)
    bias: np.ndarray  # int32, out_c entries (zeros when the model has no bias)
    activation: str = "NONE"  # the conv's own fused activation (already checked to be a no-op)
    w_scales: np.ndarray | None = None  # per-output-channel weight scales; None = per-tensor
    # the fused RELU/RELU6's bounds (stored output domain) the output range does not already apply: the NPU's
    # DPU clamp must (None: nothing to clamp on that side); only set when lowered with clamp=True
    act_min: int | None = None
    act_max: int | None = None
    # A fused ADD (nodes then ends with the ADD; output_tensor, out_zp and out_scale are the ADD's), or None
    ew: EwOperand | None = None
    stride_w: int | None = None  # column (TFLite W) stride when it differs from `stride`
    channel0: int = 0  # first output channel of the node this operation computes (a channel group, rk3576/groups.py)
    # OUT_CVT (scale, shift) fixed by the lowering, with no CLIP_TRUNCATE: an averaging convolution whose exactness
    # pool.average_conv proves for these values; None: derived from the scales
    cvt: tuple[int, int] | None = None

    @property
    def key(self) -> tuple[object, ...]:
        """Identifies the operation among a partition's: its nodes, and its channel group."""
        return (tuple(self.nodes), self.channel0)

    @property
    def sx(self) -> int:
        """Column stride (CONV_X_STRIDE)."""
        return self.stride if self.stride_w is None else self.stride_w

    @property
    def single_channel_input(self) -> bool:
        """ICr == 1: Mesa's "ARGB-like" path (raw rows, CNA converts)."""
        return self.in_c == 1

    @property
    def w_zp_q(self) -> int:
        return self.w_zp + stored_offset(self.dtype)

    @property
    def macs(self) -> int:
        """Multiply-accumulates of the convolution (real channels)."""
        return int(self.out_h * self.out_w * self.kh * self.kw * (1 if self.depthwise else self.in_c) * self.out_c)


def same_pads(size: int, k: int, s: int) -> tuple[int, int]:
    """TFLite SAME padding along one axis: (before, after), before gets the smaller half."""
    out = -(-size // s)
    total = max((out - 1) * s + k - size, 0)
    return total // 2, total - total // 2


def _quant(t: Tensor, what: str) -> tuple[np.float32, int]:
    if t.quant is None or len(t.quant.scales) == 0:
        raise LoweringError(f"{what} tensor {t.index} is not quantized")
    if not t.quant.per_tensor:
        n = len(t.quant.scales)
        raise LoweringError(f"per-channel {what} quantization ({n} scales) not supported")
    return np.float32(t.quant.scale), t.quant.zero_point


def _weight_quant(w: Tensor, per_channel: bool) -> tuple[np.float32, int, np.ndarray | None]:
    """(first scale, zero point, per-channel scales or None). Per-channel weights need one zero point."""
    if not per_channel or w.quant is None or w.quant.per_tensor:
        return (*_quant(w, "weight"), None)
    zps = w.quant.zero_points
    if not np.all(zps == zps[0]):
        raise LoweringError("per-channel weights with different zero points not supported")
    scales = np.asarray(w.quant.scales, np.float32)
    if np.any(scales <= 0):
        raise LoweringError("per-channel weight scale not positive")
    return np.float32(scales[0]), int(zps[0]), scales


def lower_conv(graph: Graph, op: Operation, per_channel: bool = False, clamp: bool = False) -> RocketConv:
    """Build a RocketConv from a CONV_2D / DEPTHWISE_CONV_2D node, or raise LoweringError(reason).

    per_channel: accept per-output-channel weight scales (the DPU BS multiplier scales channels, ..perchannel).
    clamp: accept a fused RELU/RELU6 whose bounds fall inside the output range (the generation's DPU clamps; the
    bounds go to act_min / act_max), else only one the output range already applies."""
    if op.kind not in CONV_KINDS:
        raise LoweringError(f"{op.kind} is not a convolution")
    if len(op.inputs) < 2 or len(op.outputs) != 1:
        raise LoweringError("unexpected number of inputs/outputs")
    x = graph.tensors[op.inputs[0]]
    w = graph.tensors[op.inputs[1]]
    b = graph.tensors[op.inputs[2]] if len(op.inputs) > 2 and op.inputs[2] >= 0 else None
    y = graph.tensors[op.outputs[0]]
    o = op.options
    dw = op.kind == "DEPTHWISE_CONV_2D"

    fold = folded_pad(graph, op)
    if fold is not None:  # read the PAD's input; its amounts join the padding (pad_fold.py)
        x = graph.tensors[fold[0].inputs[0]]
    if x.dtype not in ("uint8", "int8"):
        raise LoweringError(f"input type {x.dtype} not supported (uint8 or int8 per-tensor only)")
    if w.dtype != x.dtype or y.dtype != x.dtype:
        raise LoweringError(f"mixed types (input {x.dtype}, weights {w.dtype}, output {y.dtype})")
    if x.is_constant:
        raise LoweringError("constant input tensor")
    if w.data is None:
        raise LoweringError("weights are not constant")
    if b is not None and (b.data is None or b.dtype != "int32"):
        raise LoweringError("bias must be a constant int32 tensor")
    if len(x.shape) != 4 or len(y.shape) != 4 or len(w.shape) != 4:
        raise LoweringError("only 4-D NHWC tensors are supported")
    if x.shape[0] != 1 or y.shape[0] != 1:
        raise LoweringError(f"batch {x.shape[0]} not supported (batch 1 only)")

    sx, zx = _quant(x, "input")
    sw, zw, w_scales = _weight_quant(w, per_channel)
    sy, zy = _quant(y, "output")
    if w_scales is not None and (len(w_scales) != int(y.shape[3]) or w.quant.axis != (3 if dw else 0)):
        raise LoweringError(f"per-channel weight scales ({len(w_scales)}) do not follow the output channels")
    if b is not None and b.quant is not None and not b.quant.per_tensor and w_scales is None:
        raise LoweringError(f"per-channel bias quantization ({len(b.quant.scales)} scales) without per-channel weights")

    sh, sw_ = int(o.get("stride_h", 1)), int(o.get("stride_w", 1))
    if not (1 <= sh <= MAX_STRIDE and 1 <= sw_ <= MAX_STRIDE):
        raise LoweringError(f"stride {sh}x{sw_} not supported (1 to {MAX_STRIDE} along each axis)")
    if int(o.get("dilation_h", 1)) != 1 or int(o.get("dilation_w", 1)) != 1:
        raise LoweringError(f"dilation {o.get('dilation_h')}x{o.get('dilation_w')} not supported")
    padding = o.get("padding")
    if padding not in ("SAME", "VALID"):
        raise LoweringError(f"padding {padding} not supported")

    _, ih, iw, ic = x.shape
    _, oh, ow, oc = y.shape
    if dw:
        if int(o.get("depth_multiplier", 1)) != 1 or oc != ic:
            raise LoweringError(f"depthwise depth_multiplier {o.get('depth_multiplier')} not supported (1 only)")
        if w.shape[0] != 1 or w.shape[3] != ic:
            raise LoweringError(f"unexpected depthwise weight shape {w.shape}")
    elif w.shape[0] != oc or w.shape[3] != ic:
        raise LoweringError(f"unexpected weight shape {w.shape}")
    kh, kw = int(w.shape[1]), int(w.shape[2])
    if not (1 <= kh <= MAX_KERNEL and 1 <= kw <= MAX_KERNEL):
        raise LoweringError(f"kernel {kh}x{kw} not supported (1 to {MAX_KERNEL} rows and columns)")

    if fold is not None:
        pt, pb, pl, pr = fold[1]
    elif padding == "SAME":
        pt, pb = same_pads(ih, kh, sh)
        pl, pr = same_pads(iw, kw, sw_)
    else:
        pt = pb = pl = pr = 0
    if (ih + pt + pb - kh) // sh + 1 != oh or (iw + pl + pr - kw) // sw_ + 1 != ow:
        raise LoweringError(f"output shape {y.shape} inconsistent with input {x.shape} and kernel")

    act = o.get("activation", "NONE")
    bounds = _check_activation(str(act), y.dtype, sy, zy, clamp)

    off = stored_offset(x.dtype)
    wq = np.asarray(w.data).reshape(w.shape)  # the graph's array: read, never written
    weights = _stored(wq, off)
    bias = _bias(b, oc)

    # Mesa runs a "depthwise" conv with a single channel as a normal conv (rkt_is_depthwise).
    is_dw = dw and ic > 1
    if dw and not is_dw:
        wq = wq.reshape(1, kh, kw, 1)
        weights = weights.reshape(1, kh, kw, 1)

    return RocketConv(
        nodes=[op.index], kind=op.kind, input_tensor=x.index, output_tensor=y.index, dtype=x.dtype,
        in_h=ih, in_w=iw, in_c=ic, out_h=oh, out_w=ow, out_c=oc, kh=kh, kw=kw, stride=sh,
        pad_top=pt, pad_bottom=pb, pad_left=pl, pad_right=pr, depthwise=is_dw,
        in_zp=zx - off, out_zp=zy - off, w_zp=zw - off, in_scale=sx, out_scale=sy, w_scale=sw,
        weights=weights, weights_q=wq, bias=bias, activation=str(act), w_scales=w_scales,
        act_min=None if bounds[0] is None else bounds[0] - off, act_max=None if bounds[1] is None else bounds[1] - off,
        stride_w=None if sw_ == sh else sw_,
    )


def _stored(wq: np.ndarray, off: int) -> np.ndarray:
    """stored = q - off as int8: for uint8 that is q ^ 0x80 (q - 128 == q + 128 mod 256), for int8 q itself."""
    return (wq ^ np.uint8(0x80)).view(np.int8) if off else wq.view(np.int8)


def quantized(stored: np.ndarray, dtype: str) -> np.ndarray:
    """The inverse of _stored: stored int8 weights (w - the stored zero point) as the quantized bytes of `dtype`."""
    return (stored.astype(np.int16) + stored_offset(dtype)).astype(dtype)


def _bias(b: Tensor | None, oc: int) -> np.ndarray:
    if b is None:
        return np.zeros(oc, np.int32)
    bias = np.asarray(b.data).astype(np.int32).reshape(-1)
    if bias.size != oc:
        raise LoweringError(f"bias has {bias.size} entries for {oc} output channels")
    return bias


def lower_fc(graph: Graph, op: Operation, per_channel: bool = False, clamp: bool = False) -> RocketConv:
    """A FULLY_CONNECTED of a vector (N values) as a 1x1 convolution over a 1x1xN feature map: the NC1HWC2 layout of
    a 1x1 map is the vector itself, channel-major in planes of 16, as the host writes any input."""
    if len(op.inputs) < 2 or len(op.outputs) != 1:
        raise LoweringError("unexpected number of inputs/outputs")
    if int(op.options.get("weights_format", 0)) != 0:
        raise LoweringError("FULLY_CONNECTED with shuffled weights not supported")
    x = graph.tensors[op.inputs[0]]
    w = graph.tensors[op.inputs[1]]
    b = graph.tensors[op.inputs[2]] if len(op.inputs) > 2 and op.inputs[2] >= 0 else None
    y = graph.tensors[op.outputs[0]]
    if x.dtype not in ("uint8", "int8") or w.dtype != x.dtype or y.dtype != x.dtype:
        raise LoweringError(f"types input {x.dtype}, weights {w.dtype}, output {y.dtype} (uint8 or int8, all equal)")
    if x.is_constant or w.data is None:
        raise LoweringError("FULLY_CONNECTED needs a non-constant input and constant weights")
    if b is not None and (b.data is None or b.dtype != "int32"):
        raise LoweringError("bias must be a constant int32 tensor")
    if len(w.shape) != 2:
        raise LoweringError(f"weights of shape {w.shape} (2-D only)")
    oc, n = int(w.shape[0]), int(w.shape[1])
    if int(np.prod(x.shape)) != n or int(np.prod(y.shape)) != oc:
        raise LoweringError(f"input {x.shape} / output {y.shape} are not one vector of {n} / {oc} values (batch 1)")
    sx, zx = _quant(x, "input")
    sw, zw, w_scales = _weight_quant(w, per_channel)
    sy, zy = _quant(y, "output")
    if w_scales is not None and (len(w_scales) != oc or w.quant.axis != 0):
        raise LoweringError(f"per-channel weight scales ({len(w_scales)}) do not follow the output channels")
    if b is not None and b.quant is not None and not b.quant.per_tensor and w_scales is None:
        raise LoweringError(f"per-channel bias quantization ({len(b.quant.scales)} scales) not supported")
    act = str(op.options.get("activation", "NONE"))
    bounds = _check_activation(act, y.dtype, sy, zy, clamp)
    off = stored_offset(x.dtype)
    wq = np.asarray(w.data).reshape(oc, 1, 1, n)
    return RocketConv(
        nodes=[op.index], kind=op.kind, input_tensor=x.index, output_tensor=y.index, dtype=x.dtype,
        in_h=1, in_w=1, in_c=n, out_h=1, out_w=1, out_c=oc, kh=1, kw=1, stride=1,
        pad_top=0, pad_bottom=0, pad_left=0, pad_right=0, depthwise=False,
        in_zp=zx - off, out_zp=zy - off, w_zp=zw - off, in_scale=sx, out_scale=sy, w_scale=sw,
        weights=_stored(wq, off), weights_q=wq, bias=_bias(b, oc), activation=act, w_scales=w_scales,
        act_min=None if bounds[0] is None else bounds[0] - off, act_max=None if bounds[1] is None else bounds[1] - off,
    )


# Node kinds the rocket encoders run as a convolution, and how each is lowered.
CONV_LOWERINGS = {"CONV_2D": lower_conv, "DEPTHWISE_CONV_2D": lower_conv, "FULLY_CONNECTED": lower_fc}


def is_conv_like(graph: Graph, op: Operation) -> bool:
    """A node that lowers to one convolution: a convolution, FULLY_CONNECTED, or a MUL/ADD/SUB with a constant
    (const_elementwise.py)."""
    from .const_elementwise import is_const_elementwise

    return op.kind in CONV_LOWERINGS or is_const_elementwise(graph, op)


def conv_label(conv: RocketConv) -> str:
    """What a claimed convolution-like node runs as, for its reason."""
    if conv.kind == "FULLY_CONNECTED":
        return "fully connected as conv"
    if conv.kind == "MUL":
        return "MUL by a constant as a depthwise conv"
    if conv.kind in ("ADD", "SUB"):
        return f"{conv.kind} of a constant as a depthwise copy with a bias"
    return "depthwise" if conv.depthwise else "conv"


def lower_conv_like(graph: Graph, op: Operation, per_channel: bool = False, clamp: bool = False) -> RocketConv:
    """The RocketConv of a node is_conv_like takes (LoweringError for any other); once per graph (the support
    decision and the partition's lowering share it; a RocketConv is never modified)."""
    from .const_elementwise import is_const_elementwise, lower_const_elementwise

    lower = lower_const_elementwise if is_const_elementwise(graph, op) else CONV_LOWERINGS.get(op.kind)
    if lower is None:
        raise LoweringError(f"{op.kind} is not a convolution")
    return memo(graph, (__name__, op.index, per_channel, clamp), lambda: lower(graph, op, per_channel, clamp))


def _check_activation(act: str, dtype: str, sy: np.float32, zy: int, clamp: bool) -> tuple[int | None, int | None]:
    """The fused activation's quantized bounds (TFLite's: zy and zy + round(6 / sy)) that fall inside the output
    range, (None, None) when the range already clamps. Without `clamp` (no DPU clamp stage) such a bound is a
    LoweringError."""
    if act == "NONE":
        return None, None
    qmin, qmax = (0, 255) if dtype == "uint8" else (-128, 127)
    if act not in ("RELU", "RELU6"):
        raise LoweringError(f"fused activation {act} not supported")
    lo = zy if zy > qmin else None
    hi = None
    if act == "RELU6":
        six = zy + int(np.floor(np.float32(6.0) / sy + np.float32(0.5)))
        hi = six if six < qmax else None
    if not clamp:
        if lo is not None:
            raise LoweringError(f"fused {act} with output zero point {zy} > {qmin} (the NPU path has no ReLU stage "
                                "enabled)")
        if hi is not None:
            raise LoweringError(f"fused RELU6 clamps at {hi} < {qmax} (the NPU path has no ReLU stage enabled)")
    return lo, hi


def add_fusion(graph: Graph, add: Operation, convs: dict[int, RocketConv],
               fusable: Callable[[RocketConv], bool] | None = None) -> tuple[RocketConv, int]:
    """(the convolution whose output the ADD consumes, the ADD's other input) or LoweringError(reason).

    `convs`: the convolutions that run on the NPU, by output tensor; `fusable`: the generation's own refusal of a
    convolution to fuse into (rk3576: a layer split into channel groups), the same in its support decision. The fused operation runs at the ADD's
    position, so the other input (a partition input or an earlier operation's output) is ready by then; the
    convolution's own output must feed nothing but the ADD, since it is never written. A SUB (a - b) fuses only
    into the convolution producing a: the operand b enters with a negative scale."""
    kind = add.kind
    if len(add.inputs) != 2 or len(add.outputs) != 1:
        raise LoweringError(f"{kind} with unexpected inputs/outputs")
    a, b = (graph.tensors[t] for t in add.inputs)
    y = graph.tensors[add.outputs[0]]
    if a.is_constant or b.is_constant:
        raise LoweringError(f"{kind} with a constant input runs on the CPU (no operand buffer is emitted for constants)")
    if not (a.shape == b.shape == y.shape):
        raise LoweringError(f"broadcasting {kind} {a.shape}, {b.shape} runs on the CPU")
    if a.index == b.index:
        raise LoweringError(f"{kind} of a tensor with itself runs on the CPU")
    why = (f"no convolution on the NPU produces {'the first' if kind == 'SUB' else 'an'} {kind} input (only {kind}s "
           "fused into their producing convolution run on the NPU)")
    # When both inputs qualify, fuse into the convolution with the smaller output scale: the fused operation skips
    # that tensor's rounding, an error of half its LSB (docs/hardware/rocket.md "Fused ADD: numbers").
    pairs = sorted(((a, b), (b, a)), key=lambda p: float(p[0].quant.scale) if p[0].quant is not None else 0.0)
    if kind == "SUB":
        pairs = [(a, b)]
    for first, other in pairs:
        conv = convs.get(first.index)
        if conv is None:
            continue
        if conv.ew is not None:
            why = f"node {conv.nodes[0]} already has a fused ADD or SUB"
        elif conv.cvt is not None:  # a fitted OUT_CVT (const_elementwise.py): its output requantization is fixed
            why = f"node {conv.nodes[0]}'s requantization is fitted to its own output"
        elif fusable is not None and not fusable(conv):
            why = f"node {conv.nodes[0]} runs as channel groups"
        elif len([op for op in graph.consumers(first.index) if op.index != add.index]) or \
                add.inputs.count(first.index) != 1:
            why = f"tensor {first.index} (output of node {conv.nodes[0]}) is also used outside the {kind}"
        elif conv.activation != "NONE":
            why = f"the convolution feeding the {kind} (node {conv.nodes[0]}) has a fused {conv.activation}"
        elif other.dtype != conv.dtype or y.dtype != conv.dtype:
            why = f"{kind} with mixed types ({first.dtype}, {other.dtype} -> {y.dtype})"
        elif first.quant is not None and y.quant is not None and \
                float(first.quant.scale) > MAX_FUSED_GAIN * float(y.quant.scale):
            g = float(first.quant.scale) / float(y.quant.scale)
            why = (f"fusing the {kind} skips TFLite's rounding of tensor {first.index}, whose LSB is {g:.1f} output "
                   f"LSB (more than {MAX_FUSED_GAIN}: the results would differ by up to {g / 2:.1f} LSB)")
        else:
            _check_add_itself(add, other, y)
            return conv, other.index
    # no convolution to fuse into (or none that may take it): a copy of one input takes the ADD (identity_add.py)
    if not a.dtype == b.dtype == y.dtype:
        raise LoweringError(f"{why}; {kind} with mixed types ({a.dtype}, {b.dtype} -> {y.dtype})")
    from .identity_add import identity_fusion

    _check_add_itself(add, a, y)
    try:
        return identity_fusion(graph, add)
    except LoweringError as e:
        raise LoweringError(f"{why}; {e}") from e


def _check_add_itself(add: Operation, other: Tensor, y: Tensor) -> None:
    """The ADD's quantization and fused activation (no clamp stage after the EW stage)."""
    _quant(other, f"{add.kind} input")
    sy, zy = _quant(y, f"{add.kind} output")
    _check_activation(str(add.options.get("activation", "NONE")), y.dtype, sy, zy, False)


def fuse_add(graph: Graph, add: Operation, conv: RocketConv, other: int) -> RocketConv:
    """`conv` computing conv + the ADD's other input (conv - it for a SUB), requantized to the output (a new
    RocketConv)."""
    b = graph.tensors[other]
    y = graph.tensors[add.outputs[0]]
    sb, zb = _quant(b, f"{add.kind} input")
    sy, zy = _quant(y, f"{add.kind} output")
    off = stored_offset(conv.dtype)
    sign = np.float32(-1.0 if add.kind == "SUB" else 1.0)
    return replace(conv, nodes=[*conv.nodes, add.index], output_tensor=y.index, out_zp=zy - off, out_scale=sy,
                   ew=EwOperand(other, zb - off, sign * sb))


def synthetic_tensor(graph: Graph, node: int, slot: int) -> int:
    """A tensor index no graph tensor uses, the same for every compile of the graph: one per (node, slot), for the
    intermediate tensors and views an operation lowers to (pool.py, flat_pool.py, rk3576/groups.py)."""
    stride = max((op.index for op in graph.operations), default=-1) + 1  # node indices are execution-plan ids
    return max(graph.tensors, default=-1) + 1 + node + stride * slot


def synthetic_ids(graph: Graph, node: int) -> Iterator[int]:
    """synthetic_tensor of node for slots 1, 2, ... (slot 0 is pool.intermediate_tensor's)."""
    return (synthetic_tensor(graph, node, slot) for slot in count(1))


def lower_partition(graph: Graph, nodes: list[int], per_channel: bool = False, unary: bool = False,
                    clamp: bool = False, outputs: list[int] | None = None,
                    fusable: Callable[[RocketConv], bool] | None = None
                    ) -> list[RocketConv | RocketPool | list[RocketView]]:
    """Lower the partition's nodes into rocket operations (convolutions, pools; a view node into its views,
    views.py; with `unary`, a table op into a RocketUnary, unary_lower.py; `clamp`: fused RELU/RELU6 through the
    DPU clamp), in graph execution order; each ADD / SUB is fused into the convolution producing one of its inputs
    (add_fusion), which then runs at the ADD's position."""
    from .pool import POOL_KINDS, lower_pool_ops
    from .unary_lower import is_unary_node, lower_unary
    from .views import VIEW_KINDS, lower_view_node

    by_index = {op.index: op for op in graph.operations}
    order = {op.index: i for i, op in enumerate(graph.operations)}
    by_output: dict[int, RocketConv] = {}  # the convolutions (fused ADDs included) by output tensor
    others: list[RocketConv | RocketPool | list[RocketView]] = []
    placed: dict[int, RocketView] = {}  # tensors the partition's view nodes placed so far
    for n in sorted(nodes, key=lambda i: order[i]):
        op = by_index[n]
        if unary and is_unary_node(graph, op):
            if op.kind != "MUL":  # a SiLU's MUL is part of its LOGISTIC's operation
                others.append(lower_unary(graph, op))  # type: ignore[arg-type]
                if not set(others[-1].nodes) <= set(nodes):  # type: ignore[union-attr]
                    raise LoweringError(f"SiLU nodes {others[-1].nodes} split across partitions")  # type: ignore[union-attr]
            elif not any(n in nodes for n in (p.index for p in graph.operations if p.outputs[0] in op.inputs)):
                raise LoweringError(f"SiLU MUL (node {n}) without its LOGISTIC in the partition")
        elif is_conv_like(graph, op):
            conv = lower_conv_like(graph, op, per_channel, clamp)
            by_output[conv.output_tensor] = conv
        elif op.kind in PAD_KINDS:
            reader = graph.consumers(op.outputs[0])
            if not reader or reader[0].index not in nodes or (outputs is not None and op.outputs[0] in outputs):
                raise LoweringError(f"PAD (node {n}) folded into node {reader[0].index if reader else '?'}: its "
                                    "output must not leave the partition")
        elif op.kind in VIEW_KINDS:
            others.extend(lower_view_node(graph, op, placed))  # type: ignore[arg-type]
        elif op.kind in POOL_KINDS:
            others.extend(lower_pool_ops(graph, op))
        elif op.kind in ELEMENTWISE_FUSED:
            conv, other = add_fusion(graph, op, by_output, fusable)
            if conv.nodes and outputs is not None and conv.output_tensor in outputs:
                raise LoweringError(f"tensor {conv.output_tensor} feeds a fused ADD and is a partition output")
            if conv.nodes:  # a copy (identity_add.py) replaces no convolution
                del by_output[conv.output_tensor]
            fused = fuse_add(graph, op, conv, other)
            by_output[fused.output_tensor] = fused
        else:
            raise LoweringError(f"{op.kind} (node {n}) is not supported by the rocket backend")
    ops: list[RocketConv | RocketPool | list[RocketView]] = [*by_output.values(), *others]
    # stable: a node's own operations keep their order
    ops.sort(key=lambda c: order[(c[0] if isinstance(c, list) else c).nodes[-1]])
    return ops
