"""The nodes that lower to one convolution — CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED (lower.py) and a MUL, ADD or
SUB with a constant (const_elementwise.py) — and the one memoized lowering both the support decision and the
partition's compile use.
"""

from __future__ import annotations

from ..ir import Graph, Operation, memo
from .const_elementwise import is_const_elementwise, lower_const_elementwise
from .lower import CONV_LOWERINGS, lower_conv
from .operations import CONV_KINDS, RocketConv
from .quantization import LoweringError


def is_conv_like(graph: Graph, op: Operation) -> bool:
    """A node that lowers to one convolution: a convolution, FULLY_CONNECTED, or a MUL/ADD/SUB with a constant
    (const_elementwise.py)."""
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


def lower_conv_like(graph: Graph, op: Operation, per_channel: bool = False, clamp: bool = False,
                    fold_pad: bool = True) -> RocketConv:
    """The RocketConv of a node is_conv_like takes (LoweringError for any other); once per graph (the support
    decision and the partition's lowering share it; a RocketConv is never modified).

    fold_pad=False: a convolution whose input PAD would fold (pad_fold.py) reads the PAD's output instead — the
    lowering of a partition that does not hold the PAD node, whose output then arrives as a partition input."""
    if not fold_pad and op.kind in CONV_KINDS:
        return memo(graph, (__name__, op.index, per_channel, clamp, "unfolded"),
                    lambda: lower_conv(graph, op, per_channel, clamp, fold_pad=False))
    lower = lower_const_elementwise if is_const_elementwise(graph, op) else CONV_LOWERINGS.get(op.kind)
    if lower is None:
        raise LoweringError(f"{op.kind} is not a convolution")
    return memo(graph, (__name__, op.index, per_channel, clamp), lambda: lower(graph, op, per_channel, clamp))
