"""A partition's nodes -> the rocket operations that compute them, in graph execution order: the top of the
lowering, above every op kind's module (docs/architecture.md, "Rocket's lowering in layers").
"""

from __future__ import annotations

from collections.abc import Callable

from ..ir import Graph
from .convlike import is_conv_like, lower_conv_like
from .fused_add import ELEMENTWISE_FUSED, add_fusion, fuse_add, fuse_mul, mul_fusion
from .operations import RocketConv, RocketPool
from .pad_fold import PAD_KINDS, folded_pad
from .pool import POOL_KINDS, lower_pool_ops
from .quantization import LoweringError
from .unary_lower import is_unary_node, lower_unary
from .views import VIEW_KINDS, RocketView, lower_view_node


def lower_partition(graph: Graph, nodes: list[int], per_channel: bool = False, unary: bool = False,
                    clamp: bool = False, outputs: list[int] | None = None,
                    fusable: Callable[[RocketConv], bool] | None = None, mul: bool = False
                    ) -> list[RocketConv | RocketPool | list[RocketView]]:
    """Lower the partition's nodes into rocket operations (convolutions, pools; a view node into its views,
    views.py; with `unary`, a table op into a RocketUnary, unary_lower.py; `clamp`: fused RELU/RELU6 through the
    DPU clamp), in graph execution order; each ADD / SUB is fused into the convolution producing one of its inputs
    (add_fusion), which then runs at the ADD's position; with `mul` (a proved fact, fused_add.mul_fusion) a MUL of
    two tensors becomes a copy of its first input with the element-wise multiply."""
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
            # The input PAD folds only when this partition computes it: a PAD left to another partition or to
            # the CPU hands over its padded output, which the convolution then reads as an input.
            pad = folded_pad(graph, op)
            conv = lower_conv_like(graph, op, per_channel, clamp, fold_pad=pad is None or pad[0].index in nodes)
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
        elif mul and op.kind == "MUL":
            fused = fuse_mul(graph, op, *mul_fusion(graph, op))
            by_output[fused.output_tensor] = fused
        else:
            raise LoweringError(f"{op.kind} (node {n}) is not supported by the rocket backend")
    ops: list[RocketConv | RocketPool | list[RocketView]] = [*by_output.values(), *others]
    # stable: a node's own operations keep their order
    ops.sort(key=lambda c: order[(c[0] if isinstance(c, list) else c).nodes[-1]])
    return ops


def internal_tensors(graph: Graph, nodes: list[int], ops: list[RocketConv | RocketPool | list[RocketView]]
                     ) -> dict[int, int]:
    """The tensors the partition's nodes produce that none of its lowered `ops` writes, so the program cannot hand
    them out, each with the node whose output holds it: a folded PAD's with its convolution, the convolution an ADD
    fused into with the ADD, a SiLU's LOGISTIC with its MUL."""
    written: set[int] = set()
    holder: dict[int, int] = {}  # node -> the last node of the operation that computes it
    for entry in ops:
        for item in entry if isinstance(entry, list) else [entry]:
            written.update((item.view, item.holder) if isinstance(item, RocketView) else (item.output_tensor,))
            holder.update((n, item.nodes[-1]) for n in item.nodes)
    by_index = {op.index: op for op in graph.operations}
    out: dict[int, int] = {}
    for n in nodes:
        op = by_index[n]
        for t in op.outputs:
            if t in written:
                continue
            readers = graph.consumers(t)
            out[t] = readers[0].index if op.kind in PAD_KINDS and readers else holder.get(n, n)
    return out
