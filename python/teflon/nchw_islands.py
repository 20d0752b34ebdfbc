"""NCHW islands: the stretches of a model its converter ran in NCHW, seen as the NHWC graph they compute.

Models exported from PyTorch/ONNX (onnx2tf, onnx-tf) keep the source's NCHW layout between the convolutions:
every CONV_2D / pool sits between a TRANSPOSE to NHWC and one back to NCHW, and the glue between them (ADD, RELU,
PAD, CONCATENATION and SPLIT on axis 1, a ShuffleNet channel shuffle as RESHAPE-TRANSPOSE-RESHAPE) runs on NCHW
tensors. No NPU here runs a TRANSPOSE, so each one splits the delegated work into another partition (a CPU round
trip per layer on a board).

An island is a connected set of NCHW tensors that begins at TRANSPOSEs with permutation (0, 3, 1, 2) of an NHWC
tensor (entries), ends at TRANSPOSEs with permutation (0, 2, 3, 1) (exits), and in between is only read by
operations whose NHWC form is known (`_rewrite_*`). Rewritten, the island's entries and exits disappear (an entry's
output is its NHWC input; an exit's input is the tensor it writes) and every operation inside works on the NHWC
twin of its NCHW tensors with its axis parameters mapped. The rewritten graph computes the same values on every
tensor outside the islands, byte for byte: only the order of elements inside the island's tensors changes, and
no island tensor is visible outside it (an island with a graph output, or a tensor read by any operation not in
the island, is not rewritten).

`canonical(graph, islands)` is the graph a family's support decision and compiler then see (teflon.compiler). An
island operation the family leaves on the CPU runs as the converter wrote it, on the NCHW tensors: those it shares
with the NPU cross the partition boundary in NCHW order (the I/O binding's host order, delegate/layout.c).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

import numpy as np

from .ir import Graph, Operation, Quant, Tensor, memo

TO_NCHW = (0, 3, 1, 2)
TO_NHWC = (0, 2, 3, 1)
# NCHW axis -> the same axis of the NHWC twin
AXIS_TO_NHWC = {0: 0, 1: 3, 2: 1, 3: 2}

UNARY = frozenset({"RELU", "RELU6", "RELU_N1_TO_1", "RELU_0_TO_1", "LOGISTIC", "TANH", "HARD_SWISH", "LEAKY_RELU",
                   "QUANTIZE", "DEQUANTIZE", "ABS", "NEG", "EXP", "ELU", "GELU", "SQUARE", "SQRT", "RSQRT", "LOG"})
BINARY = frozenset({"ADD", "SUB", "MUL", "DIV", "MAXIMUM", "MINIMUM", "SQUARED_DIFFERENCE", "PRELU"})
PADS = frozenset({"PAD", "PADV2", "MIRROR_PAD"})


class NotInIsland(Exception):
    """An NCHW tensor is read by an operation whose NHWC form is not known (the island stays as it is)."""


@dataclass(frozen=True)
class Island:
    nodes: frozenset[int]  # every node touching the island's NCHW tensors, entries and exits included
    transposes: frozenset[int]  # the entries and exits (gone in the canonical graph)
    tensors: frozenset[int]  # the NCHW tensors

    def __len__(self) -> int:
        return len(self.nodes)


def _perm(graph: Graph, op: Operation) -> tuple[int, ...] | None:
    if op.kind != "TRANSPOSE" or len(op.inputs) != 2 or len(op.outputs) != 1:
        return None
    p = graph.tensors[op.inputs[1]].data
    return None if p is None else tuple(int(v) for v in np.asarray(p).reshape(-1))


def _is_entry(graph: Graph, op: Operation) -> bool:
    x = graph.tensors[op.inputs[0]] if op.inputs else None
    return _perm(graph, op) == TO_NCHW and x is not None and not x.is_constant and len(x.shape) == 4


def _is_exit(graph: Graph, op: Operation) -> bool:
    return _perm(graph, op) == TO_NHWC


def _shuffle_tail(graph: Graph, op: Operation) -> tuple[Operation, Operation] | None:
    """(TRANSPOSE, RESHAPE) when `op` is the RESHAPE starting a channel shuffle on NCHW: (1, C, H, W) ->
    (1, g, C/g, H, W) -> TRANSPOSE (0, 2, 1, 3, 4) -> RESHAPE back to (1, C, H, W)."""
    x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
    if len(x.shape) != 4 or len(y.shape) != 5 or (y.shape[0], y.shape[1] * y.shape[2], *y.shape[3:]) != x.shape:
        return None
    readers = graph.consumers(y.index)
    if len(readers) != 1 or _perm(graph, readers[0]) != (0, 2, 1, 3, 4):
        return None
    t = readers[0]
    last = graph.consumers(t.outputs[0])
    if len(last) != 1 or last[0].kind != "RESHAPE" or graph.tensors[last[0].outputs[0]].shape != x.shape:
        return None
    return t, last[0]


def _activations(graph: Graph, op: Operation) -> list[int]:
    """The inputs of `op` an island must hold (non-constant), by the op's kind."""
    if op.kind == "SPLIT":
        return [op.inputs[1]]
    if op.kind in PADS | {"SPLIT_V", "SLICE", "STRIDED_SLICE", "RESHAPE"}:
        return [op.inputs[0]]
    return [t for t in op.inputs if t >= 0 and not graph.tensors[t].is_constant]


def _check_op(graph: Graph, op: Operation) -> list[int]:
    """The NCHW outputs of an island operation, or NotInIsland."""
    if op.kind in UNARY or op.kind in BINARY or op.kind in PADS or op.kind in (
            "CONCATENATION", "SPLIT", "SPLIT_V", "SLICE", "STRIDED_SLICE"):
        if any(len(graph.tensors[t].shape) != 4 for t in op.outputs):
            raise NotInIsland(f"{op.kind} with an output of rank other than 4")
        if op.kind == "STRIDED_SLICE" and any(op.options.get(m, 1) for m in (
                "ellipsis_mask", "new_axis_mask", "shrink_axis_mask")):
            raise NotInIsland("STRIDED_SLICE with ellipsis/new-axis/shrink masks")
        if op.kind == "CONCATENATION" and "axis" not in op.options:
            raise NotInIsland("CONCATENATION options not decoded")
        return list(op.outputs)
    if op.kind == "RESHAPE" and _shuffle_tail(graph, op) is not None:
        _, last = _shuffle_tail(graph, op)  # type: ignore[misc]
        return [last.outputs[0]]
    raise NotInIsland(f"{op.kind} reads an NCHW tensor")


def _grow(graph: Graph, entry: Operation, outputs: frozenset[int]) -> Island:
    """The island reached from one entry (forwards through readers, backwards through the writers of the other
    operands), or NotInIsland."""
    nodes: set[int] = set()
    transposes: set[int] = set()
    tensors: set[int] = set()
    todo = [entry]
    while todo:
        op = todo.pop()
        if op.index in nodes:
            continue
        nodes.add(op.index)
        if _is_entry(graph, op):
            transposes.add(op.index)
            new = [op.outputs[0]]
        elif _is_exit(graph, op):
            transposes.add(op.index)
            if sum(_is_exit(graph, c) for c in graph.consumers(op.inputs[0])) > 1:
                raise NotInIsland("an NCHW tensor with two exits")
            new = []
        else:
            new = _check_op(graph, op)
            if op.kind == "RESHAPE":
                t, last = _shuffle_tail(graph, op)  # type: ignore[misc]
                nodes.update((t.index, last.index))
                tensors.update((op.outputs[0], t.outputs[0]))
        if op.index not in transposes or not _is_entry(graph, op):
            for t in _activations(graph, op):
                writer = graph.producer(t)
                if writer is None:
                    raise NotInIsland(f"{op.kind} reads graph input {t}")
                todo.append(writer)
        for t in new:
            if t in outputs or not graph.consumers(t):  # the graph's outputs are the tensors no node reads
                raise NotInIsland(f"NCHW tensor {t} is a graph output")
            tensors.add(t)
            todo.extend(graph.consumers(t))
    for n in nodes:
        op = _op(graph, n)
        if n in transposes and _is_entry(graph, op):
            continue
        if any(t not in tensors for t in _activations(graph, op)):
            raise NotInIsland(f"{op.kind} {n} also reads an NHWC tensor")
        if n in transposes and graph.producer(op.inputs[0]) is not None and _is_entry(
                graph, graph.producer(op.inputs[0])) and op.outputs[0] in outputs:  # type: ignore[arg-type]
            raise NotInIsland("an entry straight into an exit writes a graph output")
    for t in tensors:
        w = graph.producer(t)
        if w is None or w.index not in nodes or any(c.index not in nodes for c in graph.consumers(t)):
            raise NotInIsland(f"NCHW tensor {t} is read or written outside the island")
    return Island(frozenset(nodes), frozenset(transposes), frozenset(tensors))


def find(graph: Graph, graph_outputs: Iterable[int] = ()) -> list[Island]:
    """Every island of the graph whose NHWC form is known, smallest node first."""
    outputs = frozenset(graph_outputs)

    def compute() -> list[Island]:
        found: list[Island] = []
        seen: set[int] = set()
        for op in graph.operations:
            if op.index in seen or not _is_entry(graph, op):
                continue
            try:
                island = _grow(graph, op, outputs)
            except NotInIsland:
                continue
            seen |= island.nodes
            found.append(island)
        return found

    return memo(graph, (__name__, "find", outputs), compute)


def _nhwc_shape(shape: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(shape[i] for i in TO_NHWC)


def _nhwc_quant(q: Quant | None) -> Quant | None:
    if q is None or q.per_tensor:
        return q
    return replace(q, axis=AXIS_TO_NHWC[q.axis])


class _Builder:
    """The canonical graph's tensors: the originals, the NHWC twins, and new constants (indices past the graph's)."""

    def __init__(self, graph: Graph) -> None:
        self.tensors = dict(graph.tensors)
        self.next = max(graph.tensors, default=-1) + 1

    def constant(self, like: Tensor, data: np.ndarray, quant: Quant | None = None) -> int:
        i = self.next
        self.next += 1
        self.tensors[i] = Tensor(i, str(data.dtype), tuple(int(d) for d in data.shape), quant, data,
                                 f"{like.name}:nhwc")
        return i


def _const_nhwc(b: _Builder, graph: Graph, t: int) -> int:
    """A constant operand broadcast against an NCHW tensor, as the NHWC twin's operand."""
    c = graph.tensors[t]
    if len(c.shape) <= 1 and (not c.shape or c.shape[0] == 1):
        return t  # a scalar broadcasts the same in both layouts
    data = np.asarray(c.data).reshape((1,) * (4 - len(c.shape)) + tuple(c.shape))
    return b.constant(c, np.ascontiguousarray(data.transpose(TO_NHWC)), _nhwc_quant(c.quant) if len(c.shape) == 4
                      else c.quant)


def _axis(v: int) -> int:
    return AXIS_TO_NHWC[v % 4]


def _remap_params(b: _Builder, graph: Graph, op: Operation, inputs: list[int]) -> tuple[list[int], dict]:
    opts = dict(op.options)
    t = graph.tensors
    if op.kind == "CONCATENATION":
        opts["axis"] = _axis(int(op.options["axis"]))
    elif op.kind == "SPLIT":
        inputs[0] = b.constant(t[op.inputs[0]], np.array([_axis(int(np.asarray(t[op.inputs[0]].data).reshape(-1)[0]))],
                                                          np.int32))
    elif op.kind == "SPLIT_V":
        axis = t[op.inputs[2]]
        inputs[2] = b.constant(axis, np.array([_axis(int(np.asarray(axis.data).reshape(-1)[0]))], np.int32))
    elif op.kind in PADS:
        pads = np.asarray(t[op.inputs[1]].data).reshape(4, 2)
        inputs[1] = b.constant(t[op.inputs[1]], np.ascontiguousarray(pads[list(TO_NHWC)]))
    elif op.kind in ("SLICE", "STRIDED_SLICE"):
        for k in range(1, len(op.inputs)):
            v = np.asarray(t[op.inputs[k]].data).reshape(-1)
            inputs[k] = b.constant(t[op.inputs[k]], np.ascontiguousarray(v[list(TO_NHWC)]))
        for m in ("begin_mask", "end_mask"):
            bits = int(op.options.get(m, 0))
            opts[m] = sum(1 << i for i, src in enumerate(TO_NHWC) if bits >> src & 1)
    elif op.kind in BINARY:
        inputs = [_const_nhwc(b, graph, i) if i >= 0 and t[i].is_constant else i for i in inputs]
    return inputs, opts


def _shuffle_conv(b: _Builder, graph: Graph, op: Operation, sub: dict[int, int]) -> Operation:
    """The channel shuffle as the 1x1 convolution by a permutation matrix: weight 1 (scale 1) picks each output
    channel's input channel, so the requantization multiplier is in_scale / out_scale = 1 and the result exact."""
    _, last = _shuffle_tail(graph, op)  # type: ignore[misc]
    x, y5 = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
    out = graph.tensors[last.outputs[0]]
    g, cg = y5.shape[1], y5.shape[2]
    c = g * cg
    j = np.arange(c)
    w = np.zeros((c, 1, 1, c), np.int8 if x.dtype == "int8" else np.uint8)
    w[j, 0, 0, (j % g) * cg + j // g] = 1
    one = Quant(np.array([1.0], np.float32), np.zeros(1, np.int32))
    wi = b.constant(x, w, one)
    scale = x.quant.scale if x.quant is not None else np.float32(1.0)
    bi = b.constant(x, np.zeros(c, np.int32), Quant(np.array([scale], np.float32), np.zeros(1, np.int32)))
    opts = {"padding": "VALID", "stride_w": 1, "stride_h": 1, "activation": "NONE", "dilation_w": 1,
            "dilation_h": 1}
    return Operation(op.index, "CONV_2D", [sub.get(x.index, x.index), wi, bi], [sub.get(out.index, out.index)], opts,
                     3, 1)


def _same_quant(ts: list[Tensor]) -> bool:
    q = [t.quant for t in ts]
    return all(a is not None and a.per_tensor and a.scale == q[0].scale and a.zero_point == q[0].zero_point
               and t.dtype == ts[0].dtype for a, t in zip(q, ts))  # type: ignore[union-attr]


def substitutions(graph: Graph, islands: Iterable[Island]) -> dict[int, int]:
    """Tensor -> the tensor that stands for it in the canonical graph: an entry's output is its NHWC input; an
    exit's input is the NHWC tensor the exit writes (an entry straight into an exit: the exit's output is the
    entry's input)."""
    sub: dict[int, int] = {}
    for isl in islands:
        ends = sorted((_op(graph, n) for n in isl.transposes), key=lambda op: not _is_entry(graph, op))
        for op in ends:
            if _is_entry(graph, op):
                sub[op.outputs[0]] = op.inputs[0]
            elif op.inputs[0] in sub:
                sub[op.outputs[0]] = sub[op.inputs[0]]
            else:
                sub[op.inputs[0]] = op.outputs[0]
    return sub


def canonical(graph: Graph, islands: Iterable[Island]) -> Graph:
    """The graph with the given islands computed in NHWC (their entries and exits gone). Node indices are kept;
    the shuffle's TRANSPOSE and second RESHAPE are gone too (the first RESHAPE becomes the convolution)."""
    chosen = tuple(sorted(islands, key=lambda i: min(i.nodes)))

    def compute() -> Graph:
        b = _Builder(graph)
        sub = substitutions(graph, chosen)
        gone = {n for isl in chosen for n in isl.transposes}
        for isl in chosen:
            for t in isl.tensors:
                x = graph.tensors[t]
                if t not in sub and len(x.shape) == 4:
                    b.tensors[t] = replace(x, shape=_nhwc_shape(x.shape), quant=_nhwc_quant(x.quant))
        ops: list[Operation] = []
        island_nodes = {n for isl in chosen for n in isl.nodes}
        for op in graph.operations:
            if op.index in gone:
                continue
            if op.index not in island_nodes:
                ops.append(replace(op, inputs=[sub.get(i, i) for i in op.inputs]))
                continue
            if op.kind == "RESHAPE" and _shuffle_tail(graph, op) is not None:
                t, last = _shuffle_tail(graph, op)  # type: ignore[misc]
                gone.update((t.index, last.index))
                ops.append(_shuffle_conv(b, graph, op, sub))
                continue
            inputs, opts = _remap_params(b, graph, op, [sub.get(i, i) for i in op.inputs])
            ops.append(replace(op, inputs=inputs, outputs=[sub.get(o, o) for o in op.outputs], options=opts))
        return Graph(tensors=b.tensors, operations=ops)

    return memo(graph, (__name__, "canonical", chosen), compute)


def _op(graph: Graph, index: int) -> Operation:
    return memo(graph, (__name__, "by_index"), lambda: {op.index: op for op in graph.operations})[index]


def hidden_tensors(graph: Graph, islands: Iterable[Island]) -> dict[int, int]:
    """The tensors no operation of the canonical graph writes (a channel shuffle's two inner tensors), each with
    the node whose convolution holds the result."""
    out: dict[int, int] = {}
    for isl in islands:
        for n in isl.nodes:
            op = _op(graph, n)
            if op.kind == "RESHAPE" and n not in isl.transposes and _shuffle_tail(graph, op) is not None:
                t, _ = _shuffle_tail(graph, op)  # type: ignore[misc]
                out.update({op.outputs[0]: n, t.outputs[0]: n})
    return out


def usable(graph: Graph, island: Island) -> str | None:
    """Why an island cannot be rewritten beyond its structure (its shuffles requantize), or None."""
    for n in island.nodes:
        op = _op(graph, n)
        if op.kind == "RESHAPE" and n not in island.transposes and _shuffle_tail(graph, op) is not None:
            t, last = _shuffle_tail(graph, op)  # type: ignore[misc]
            ts = [graph.tensors[i] for i in (op.inputs[0], op.outputs[0], t.outputs[0], last.outputs[0])]
            if not _same_quant(ts) or ts[0].dtype not in ("int8", "uint8"):
                return f"the channel shuffle at node {n} changes the quantization"
    return None
