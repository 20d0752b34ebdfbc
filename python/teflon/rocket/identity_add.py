"""An ADD or SUB that no convolution on the NPU produces an input of (two partition inputs, a pool's or a table op's
output, a convolution output that other nodes read too): a 1x1 depthwise convolution that copies the first input,
with the ADD fused into it exactly as into a real convolution (fused_add.fuse_add: the other input through the DPU's
element-wise reader and EW stage, rocket.md §3.5).

The copy multiplies each value by a constant weight g and adds nothing, so its accumulator g·(xa - za) is exact:
unlike a fused ADD after a real convolution, no rounding TFLite performs is skipped. The other input joins that
accumulator through the EW converter in units of sa / g (the copy's accumulator LSB); a large g makes that unit
fine, so the sum reaches OUT_CVT with the other input's value rounded to 1/g of the first input's LSB, and OUT_CVT
rounds once, as TFLite's ADD does (its 2^20 headroom keeps its own intermediate roundings below that).
Measured bound: opcheck.check_add ("inputs" cases), docs/hardware/rocket.md §6.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..ir import Graph, Operation
from .operations import RocketConv
from .quantization import LoweringError, quantized, stored_offset, tensor_quant

# The copy's weight: the largest stored int8 weight a uint8 weight byte (g + 128) can hold. The converted operand's
# rounding is then within 1/254 of the first input's LSB.
COPY_WEIGHT = 127
# Why a copy convolution of a single-channel map is refused (its input would be read in the raw-rows layout)
SINGLE_CHANNEL = "a single-channel convolution reads raw rows only the host writes"


def depthwise_copy(nodes: list[int], tensor: int, out: int, dtype: str, hwc: tuple[int, int, int], weight: int,
                   zps: tuple[int, int], scales: tuple[np.float32, np.float32, np.float32]) -> RocketConv:
    """The 1x1 depthwise convolution of `tensor` (h, w, c) into `out` with the same `weight` for every channel and
    no bias: its accumulator is weight · (x - in_zp). `zps`: stored (input, output) zero points; `scales`: (input,
    output, weight)."""
    h, w, c = hwc
    weights = np.full((1, 1, 1, c), weight, np.int8)
    return RocketConv(
        nodes=list(nodes), kind="DEPTHWISE_CONV_2D", input_tensor=tensor, output_tensor=out, dtype=dtype,
        in_h=h, in_w=w, in_c=c, out_h=h, out_w=w, out_c=c, kh=1, kw=1, stride=1,
        pad_top=0, pad_bottom=0, pad_left=0, pad_right=0, depthwise=True, in_zp=zps[0], out_zp=zps[1],
        w_zp=0, in_scale=scales[0], out_scale=scales[1], w_scale=scales[2], weights=weights,
        weights_q=quantized(weights, dtype), bias=np.zeros(c, np.int32))


def identity_conv(graph: Graph, tensor: int) -> RocketConv:
    """The 1x1 depthwise convolution whose accumulator is COPY_WEIGHT · (x - zx) for every value of `tensor` (an NHWC
    map), its output requantization left to the ADD fused into it (no nodes of its own)."""
    x = graph.tensors[tensor]
    if len(x.shape) != 4 or x.shape[0] != 1:
        raise LoweringError(f"ADD of shape {x.shape} (4-D NHWC, batch 1)")
    _, h, w, c = (int(d) for d in x.shape)
    if c == 1:
        raise LoweringError(f"ADD of single-channel maps: {SINGLE_CHANNEL}")
    sx, zx = tensor_quant(x, "ADD input")
    off = stored_offset(x.dtype)
    return depthwise_copy([], x.index, x.index, x.dtype, (h, w, c), COPY_WEIGHT, (zx - off, zx - off),
                          (sx, sx, np.float32(1.0 / COPY_WEIGHT)))


def copy_conv(graph: Graph, tensor: int, out: int, node: int, channel0: int) -> RocketConv:
    """A byte-exact copy of `tensor` into tensor `out` (same quantization) as node `node`'s operation, which writes
    the node's channels from `channel0` on (its key among the node's operations: the encoders memoize by it): weight
    1, so the accumulator is x - zx and OUT_CVT's scale is exactly 1 (2^14 / 2^14), plus the zero point."""
    c = identity_conv(graph, tensor)
    weights = np.ones_like(c.weights)
    return replace(c, nodes=[node], output_tensor=out, channel0=channel0, w_scale=np.float32(1.0), weights=weights,
                   weights_q=quantized(weights, c.dtype))


def identity_fusion(graph: Graph, add: Operation) -> tuple[RocketConv, int]:
    """(the copy of the ADD's first input — for an ADD the input with the coarser scale, so the other one's step in
    copy units, g·sb/sa, stays within g and the EW converter's 16-bit scale —, the other input) or LoweringError;
    the checks fused_add.add_fusion makes of the ADD itself (shapes, types, constants, activation) have passed."""
    a, b = (graph.tensors[t] for t in add.inputs)
    first, other = (a, b)
    if add.kind == "ADD" and a.quant is not None and b.quant is not None and float(b.quant.scale) > float(a.quant.scale):
        first, other = b, a
    return identity_conv(graph, first.index), other.index


__all__ = ["COPY_WEIGHT", "SINGLE_CHANNEL", "copy_conv", "depthwise_copy", "identity_conv", "identity_fusion"]
