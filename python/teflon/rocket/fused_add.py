"""An ADD or SUB of two feature maps fused into the convolution producing one of its inputs: the other input enters
through DPU_RDMA's element-wise reader and the DPU's EW stage before OUT_CVT (rocket.md §3.5); with no convolution
to fuse into, into a 1x1 depthwise copy of one input (identity_add.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np

from ..ir import Graph, Operation, Tensor
from .identity_add import identity_conv, identity_fusion
from .operations import EwOperand, RocketConv
from .quantization import LoweringError, activation_bounds, stored_offset, tensor_quant

ELEMENTWISE_FUSED = ("ADD", "SUB")  # fused into the producing convolution (add_fusion)
# The largest conv-output LSB, in output LSB, a fused ADD may skip the rounding of: the fused operation differs from
# TFLite's two roundings by up to half of it (docs/hardware/rocket.md §6, "Fused ADD: numbers")
MAX_FUSED_GAIN = 4.0


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
    _check_add_itself(add, a, y)
    try:
        return identity_fusion(graph, add)
    except LoweringError as e:
        raise LoweringError(f"{why}; {e}") from e


def _check_add_itself(add: Operation, other: Tensor, y: Tensor) -> None:
    """The ADD's quantization and fused activation (no clamp stage after the EW stage)."""
    tensor_quant(other, f"{add.kind} input")
    sy, zy = tensor_quant(y, f"{add.kind} output")
    activation_bounds(str(add.options.get("activation", "NONE")), y.dtype, sy, zy, False)


def fuse_add(graph: Graph, add: Operation, conv: RocketConv, other: int) -> RocketConv:
    """`conv` computing conv + the ADD's other input (conv - it for a SUB), requantized to the output (a new
    RocketConv)."""
    b = graph.tensors[other]
    y = graph.tensors[add.outputs[0]]
    sb, zb = tensor_quant(b, f"{add.kind} input")
    sy, zy = tensor_quant(y, f"{add.kind} output")
    off = stored_offset(conv.dtype)
    sign = np.float32(-1.0 if add.kind == "SUB" else 1.0)
    return replace(conv, nodes=[*conv.nodes, add.index], output_tensor=y.index, out_zp=zy - off, out_scale=sy,
                   ew=EwOperand(other, zb - off, sign * sb))


# The EW stage's multiply as a board run proved it (board-facts.md fact 1, TEFLON_HW_FACTS): the hypotheses under
# which a product inside int32 with EW_TRUNCATE 0 is exact, which is all a copy's accumulator times an 8-bit operand
# needs (|127 x 255 x 255| < 2^23).
EXACT_PRODUCT = ("wide", "wide_even", "sat32", "wrap32")


def mul_fusion(graph: Graph, mul: Operation) -> tuple[RocketConv, int]:
    """(a 1x1 depthwise copy of the MUL's first input, its other input) or LoweringError: the product of the copy's
    exact accumulator COPY_WEIGHT·(a - za) and the converted operand (b - zb) reaches OUT_CVT, which rounds once (to
    sa·sb / (COPY_WEIGHT·sy)), as TFLite's MUL does."""
    if len(mul.inputs) != 2 or len(mul.outputs) != 1:
        raise LoweringError("MUL with unexpected inputs/outputs")
    a, b = (graph.tensors[t] for t in mul.inputs)
    y = graph.tensors[mul.outputs[0]]
    if a.is_constant or b.is_constant:
        raise LoweringError("MUL with a constant input runs on the CPU (no operand buffer is emitted for constants)")
    if not (a.shape == b.shape == y.shape):
        raise LoweringError(f"broadcasting MUL {a.shape}, {b.shape} runs on the CPU")
    if a.index == b.index:
        raise LoweringError("MUL of a tensor with itself runs on the CPU")
    if not a.dtype == b.dtype == y.dtype:
        raise LoweringError(f"MUL with mixed types ({a.dtype}, {b.dtype} -> {y.dtype})")
    _check_add_itself(mul, b, y)
    return identity_conv(graph, a.index), b.index


def fuse_mul(graph: Graph, mul: Operation, conv: RocketConv, other: int) -> RocketConv:
    """`conv` (the copy) times the MUL's other input, requantized to the output."""
    fused = fuse_add(graph, mul, conv, other)
    assert fused.ew is not None
    return replace(fused, ew=replace(fused.ew, mul=True))
