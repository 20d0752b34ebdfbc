"""The operations rocket's lowerings produce and its encoders read: a convolution (one CNA -> CORE -> DPU pass), a
pool (one PPU pass), a fused ADD's operand, a feature map's geometry, and the synthetic tensor ids an operation's
intermediate tensors take. Every zero point here is in the stored domain (quantization.py). Axis meaning is the
hardware's: width = the contiguous TFLite W (dims[2]), rows = TFLite H (dims[1]); see docs/hardware/rocket.md.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from itertools import count

import numpy as np

from ..ir import Graph
from .quantization import stored_offset

CONV_KINDS = ("CONV_2D", "DEPTHWISE_CONV_2D")


@dataclass(frozen=True)
class EwOperand:
    """The other input of an ADD fused into the convolution that produces its first input: read by DPU_RDMA's
    element-wise reader and added by the DPU's EW stage before OUT_CVT (rocket.md §3.5)."""

    tensor: int
    zp: int  # stored zero point
    scale: np.float32  # negative for a SUB: the operand is subtracted
    mul: bool = False  # the EW stage multiplies instead (a MUL of two tensors, board-facts.md fact 1)


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
    # with `cvt`: a fitted BS multiplier stage before it, (C per output channel, shift), so that the DPU rounds twice
    # as TFLite's MultiplyByQuantizedMultiplier does (const_elementwise.py `two_rounding_plan`); A is then the
    # untruncated bias table (perchannel.channel_scaling). None: the stage is the identity
    bs: tuple[np.ndarray, int] | None = None

    @property
    def key(self) -> tuple[object, ...]:
        """Identifies the operation among a graph's lowerings: its nodes, its channel group, and the tensor it reads (a
        convolution lowered with its input PAD folded reads the PAD's input, without it the PAD's output)."""
        return (tuple(self.nodes), self.channel0, self.input_tensor)

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


@dataclass(frozen=True)
class TensorInfo:
    """A feature map as the operations see it: rows, columns, channels (NHWC; a vector is one pixel) and type."""

    h: int
    w: int
    c: int
    dtype: str


def synthetic_tensor(graph: Graph, node: int, slot: int) -> int:
    """A tensor index no graph tensor uses, the same for every compile of the graph: one per (node, slot), for the
    intermediate tensors and views an operation lowers to (pool.py, flat_pool.py, rk3576/groups.py)."""
    stride = max((op.index for op in graph.operations), default=-1) + 1  # node indices are execution-plan ids
    return max(graph.tensors, default=-1) + 1 + node + stride * slot


def synthetic_ids(graph: Graph, node: int) -> Iterator[int]:
    """synthetic_tensor of node for slots 1, 2, ... (slot 0 is pool.intermediate_tensor's)."""
    return (synthetic_tensor(graph, node, slot) for slot in count(1))
