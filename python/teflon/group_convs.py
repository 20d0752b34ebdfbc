"""Grouped convolutions as one convolution: SPLIT on the channel axis, one CONV_2D per part, CONCATENATION of their
outputs in the same order (how TFLite converters write a group convolution, e.g. ShuffleNet V1's 1x1 group
convolutions) become a single CONV_2D whose weights are block-diagonal.

The merged convolution computes bit for bit what TFLite computes: each output channel accumulates its own group's
products (the weights outside the group are the real value 0, so they add nothing), and its requantization uses
the same input scale, the same weight scale and the same output scale as the branch convolution it came from —
the rewrite is only taken when every branch writes the concatenation's own quantization. The cost is MACs (a
G-group convolution does G times the work); the gain is that channel parts which do not start on a 16-channel
plane (12 of 96, 45 of 360) never have to be split or joined in device memory, so the group stays on the NPU in
one partition.

A family opts in (`group_convs = True` on its target); teflon.compiler applies the rewrite to the graph the
family sees, after the NCHW islands (teflon.nchw_islands). Node indices are kept: the merged convolution takes the
CONCATENATION's index; the SPLIT and the branch convolutions are gone from the rewritten graph and follow the merged
node's decision.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from .ir import Graph, Operation, Quant, Tensor, memo

_SAME_OPTIONS = ("padding", "stride_w", "stride_h", "dilation_w", "dilation_h", "activation")


@dataclass(frozen=True)
class Group:
    split: int  # node indices
    convs: tuple[int, ...]
    concat: int
    hidden: tuple[int, ...]  # the parts and the branch outputs: tensors the rewritten graph no longer has

    @property
    def nodes(self) -> tuple[int, ...]:
        return (self.split, *self.convs, self.concat)


def _channel_axis(axis: int, rank: int) -> bool:
    return rank == 4 and axis in (3, -1)


def _split_axis(graph: Graph, op: Operation) -> int | None:
    a = graph.tensors[op.inputs[0]]
    if a.data is None or a.data.size != 1:
        return None
    return int(np.asarray(a.data).reshape(-1)[0])


def _only_reader(graph: Graph, tensor: int) -> Operation | None:
    readers = graph.consumers(tensor)
    return readers[0] if len(readers) == 1 else None


def _weights_quant(w: Tensor) -> tuple[np.ndarray, np.ndarray] | None:
    """(per-output-channel scales, zero points) of a branch's weights, or None."""
    q = w.quant
    if q is None or w.data is None:
        return None
    oc = w.shape[0]
    if len(q.scales) == 1:
        return np.full(oc, q.scales[0], np.float32), np.full(oc, q.zero_points[0], np.int32)
    if len(q.scales) != oc or q.axis != 0:
        return None
    zps = q.zero_points if len(q.zero_points) == oc else np.full(oc, q.zero_points[0], np.int32)
    return np.asarray(q.scales, np.float32), np.asarray(zps, np.int32)


def _group(graph: Graph, split: Operation) -> Group | None:
    if split.kind != "SPLIT" or len(split.inputs) != 2:
        return None
    x = graph.tensors[split.inputs[1]]
    axis = _split_axis(graph, split)
    if axis is None or not _channel_axis(axis, len(x.shape)) or x.quant is None or not x.quant.per_tensor:
        return None
    convs = [_only_reader(graph, t) for t in split.outputs]
    if any(c is None or c.kind != "CONV_2D" or c.inputs[0] != t for c, t in zip(convs, split.outputs)):
        return None
    first = convs[0]
    assert first is not None
    if any(len(c.inputs) != 3 or any(c.options.get(k) != first.options.get(k) for k in _SAME_OPTIONS)  # type: ignore[union-attr]
           for c in convs):
        return None
    concat = _only_reader(graph, first.outputs[0])
    if concat is None or concat.kind != "CONCATENATION" or concat.inputs != [c.outputs[0] for c in convs]:  # type: ignore[union-attr]
        return None
    if any(_only_reader(graph, c.outputs[0]) is not concat for c in convs):  # type: ignore[union-attr]
        return None
    y = graph.tensors[concat.outputs[0]]
    if not _channel_axis(int(concat.options.get("axis", -1)), len(y.shape)) or \
            concat.options.get("activation", "NONE") not in (None, "NONE"):
        return None
    for c in convs:
        w, b, out = (graph.tensors[t] for t in c.inputs[1:] + c.outputs)  # type: ignore[union-attr]
        if w.data is None or b.data is None or w.dtype != x.dtype:
            return None
        if w.shape[1:3] != graph.tensors[first.inputs[1]].shape[1:3] or _weights_quant(w) is None:
            return None
        if out.quant is None or y.quant is None or not out.quant.per_tensor or out.dtype != y.dtype or \
                out.quant.scale != y.quant.scale or out.quant.zero_point != y.quant.zero_point:
            return None
    hidden = (*split.outputs, *(c.outputs[0] for c in convs))  # type: ignore[union-attr]
    return Group(split.index, tuple(c.index for c in convs), concat.index, hidden)  # type: ignore[union-attr]


def find(graph: Graph) -> list[Group]:
    """The grouped convolutions of the graph that merge exactly (see the module doc). A part or branch output that
    is also a model output has a reader outside the group only in the runtime's eyes: compiler.compile refuses a
    partition whose boundary crosses a group's inner tensors."""
    return [g for op in graph.operations if (g := _group(graph, op)) is not None]


def _merged_weights(graph: Graph, convs: list[Operation], in_c: int) -> tuple[np.ndarray, Quant, np.ndarray, Quant] | None:
    """Block-diagonal weights (OHWI) and the concatenated bias, with their quantizations; None when the branches'
    "zero" weights cannot be one stored value per output channel (uint8 branches of different zero points need
    per-channel zero points, which TFLite's uint8 convolutions do not have)."""
    ws = [graph.tensors[c.inputs[1]] for c in convs]
    bs = [graph.tensors[c.inputs[2]] for c in convs]
    quants = [_weights_quant(w) for w in ws]
    scales = np.concatenate([q[0] for q in quants])  # type: ignore[index]
    zps = np.concatenate([q[1] for q in quants])  # type: ignore[index]
    dtype = ws[0].data.dtype  # type: ignore[union-attr]
    per_channel = not (np.all(scales == scales[0]) and np.all(zps == zps[0]))
    if dtype == np.uint8 and per_channel:
        return None
    kh, kw = ws[0].shape[1:3]
    oc = int(sum(w.shape[0] for w in ws))
    data = np.empty((oc, kh, kw, in_c), dtype)
    data[...] = zps.astype(dtype).reshape(oc, 1, 1, 1)  # each channel's real zero
    o = i = 0
    for w in ws:
        n, cg = w.shape[0], w.shape[3]
        data[o:o + n, :, :, i:i + cg] = w.data
        o, i = o + n, i + cg
    if i != in_c:
        return None
    wq = Quant(scales, zps, 0) if per_channel else Quant(scales[:1], zps[:1], 0)
    bias = np.concatenate([np.asarray(b.data).reshape(-1) for b in bs]).astype(np.int32)
    b_scales = np.concatenate([np.resize(np.asarray(b.quant.scales, np.float32), b.shape[0])  # type: ignore[union-attr]
                               if b.quant is not None else np.zeros(b.shape[0], np.float32) for b in bs])
    bq = Quant(b_scales if per_channel else b_scales[:1], np.zeros(len(b_scales) if per_channel else 1, np.int32), 0)
    return data, wq, bias, bq


def rewrite(graph: Graph, groups: list[Group]) -> tuple[Graph, list[Group]]:
    """(the graph with the groups merged, the groups that were). A group whose weights cannot merge is kept as is."""
    key = tuple(groups)

    def compute() -> tuple[Graph, list[Group]]:
        tensors = dict(graph.tensors)
        nxt = max(tensors, default=-1) + 1
        by_index = {op.index: op for op in graph.operations}
        merged: dict[int, Operation] = {}  # concat index -> the merged convolution
        done: list[Group] = []
        for g in groups:
            convs = [by_index[n] for n in g.convs]
            x = graph.tensors[by_index[g.split].inputs[1]]
            parts = _merged_weights(graph, convs, int(x.shape[3]))
            if parts is None:
                continue
            w, wq, b, bq = parts
            first_w = graph.tensors[convs[0].inputs[1]]
            tensors[nxt] = Tensor(nxt, str(w.dtype), tuple(int(d) for d in w.shape), wq, w, f"{first_w.name}:grouped")
            tensors[nxt + 1] = Tensor(nxt + 1, "int32", (int(b.shape[0]),), bq, b, f"{first_w.name}:grouped_bias")
            concat = by_index[g.concat]
            merged[g.concat] = replace(convs[0], index=g.concat, inputs=[x.index, nxt, nxt + 1],
                                       outputs=list(concat.outputs))
            nxt += 2
            done.append(g)
        gone = {n for g in done for n in g.nodes if n != g.concat}
        ops = [merged.get(op.index, op) for op in graph.operations if op.index not in gone]
        return Graph(tensors=tensors, operations=ops), done

    return memo(graph, (__name__, "rewrite", key), compute)


def hidden_tensors(groups: list[Group]) -> dict[int, int]:
    """Tensor -> the merged node that computes it: a group's parts and branch outputs exist only inside it."""
    return {t: g.concat for g in groups for t in g.hidden}
