"""Per-element maps of one 8-bit tensor as TP TABLE jobs (etnaviv-tp.md §6 "TABLE"): TANH, HARD_SWISH,
LEAKY_RELU, RELU6, RELU_N1_TO_1, QUANTIZE between 8-bit types, ADD/SUB/MUL/MAXIMUM/MINIMUM with one constant
value, the SiLU pair MUL(x, LOGISTIC(x)) and the square MUL(x, x).

Each is a function of the input byte alone, so its whole behaviour is teflon.unary's 256-entry table of TFLite's
own arithmetic; pwl_table.fit_table turns that table into the PWL table and input zero point of one TP job.
A SiLU MUL reads x only (LOGISTIC(x) is a function of x): its LOGISTIC needs no job of its own when nothing else
in the partition, and nothing outside it, reads the sigmoid (`silu_only`).

This module decides and computes; lower.py places the job (layout, detranspose) like its other TP jobs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import unary
from ..ir import Graph, Operation
from .pwl_table import TableFit, fit_table

TABLE_OPS = ("TANH", "HARD_SWISH", "LEAKY_RELU", "RELU6", "RELU_N1_TO_1", "QUANTIZE", *unary.CONST_KINDS)
# Claimed when at most one input value is off (by one LSB): the single-op contract's 99.5 %. SILU's measured limit
# (docs/hardware/etnaviv-tp.md §6a): TFLite rounds the sigmoid to 1/256 before the MUL, a staircase the 8-input
# segments cannot always follow; the zoo's worst (YOLOv5n) leaves 11 of 256 input values 1 LSB off, and a search
# for the fewest misses over a grid of entry values finds the same counts.
MIN_EXACT_DEFAULT = 255 / 256
MIN_EXACT = {"SILU": 0.95}
STORED_SHIFT = {"uint8": 0, "int8": 128}  # stored byte = value + shift (int8 tensors live +128 in NPU memory)


@dataclass(frozen=True)
class TablePlan:
    input: int  # the IR tensor the job reads
    output: int
    kind: str  # TFLite op, or "SILU"
    target: np.ndarray  # stored output for each stored input byte
    fit: TableFit


def _qp(graph: Graph, t: int, what: str) -> unary.QuantParams | str:
    q = graph.tensors[t].quant
    if q is None or len(q.scales) == 0 or not q.per_tensor:
        return f"{what} tensor {t} needs one per-tensor quantization"
    if not np.float32(q.scale) > 0:
        return f"{what} scale {q.scale} not positive"
    return unary.QuantParams(np.float32(q.scale), q.zero_point)


def _stored(values: np.ndarray, dtype: str) -> np.ndarray:
    return np.asarray(values, np.int64) + STORED_SHIFT[dtype]


def silu_input(graph: Graph, mul: Operation) -> tuple[int, Operation] | None:
    """(x, the LOGISTIC) of a MUL(x, LOGISTIC(x)) in either operand order, else None."""
    if mul.kind != "MUL" or len(mul.inputs) != 2 or len(mul.outputs) != 1:
        return None
    for i in (0, 1):
        s, x = mul.inputs[i], mul.inputs[1 - i]
        prod = graph.producer(s)
        if prod is not None and prod.kind == "LOGISTIC" and prod.inputs[0] == x and x != s:
            return x, prod
    return None


def silu_only(graph: Graph, logistic: Operation, nodes: list[int], outputs: set[int]) -> bool:
    """Whether the LOGISTIC's result is read only by SiLU MULs among `nodes` (each computes it from x itself) and
    is no partition output: then the LOGISTIC needs no job."""
    s = logistic.outputs[0]
    users = graph.consumers(s)
    inside = set(nodes)
    return (bool(users) and s not in outputs
            and all(u.index in inside and (silu_input(graph, u) or (None, None))[1] is logistic for u in users))


def _constant(graph: Graph, op: Operation) -> tuple[int, int, bool] | str | None:
    """(map tensor, the constant's single quantized value, constant first) of a binary op with one constant input;
    None when both inputs are maps; a reason when the constant is not one value."""
    if len(op.inputs) != 2:
        return "unexpected number of inputs"
    a, b = (graph.tensors[t] for t in op.inputs)
    if a.is_constant == b.is_constant:
        return None if not a.is_constant else f"{op.kind} of two constants"
    m, c, first = (b, a, True) if a.is_constant else (a, b, False)
    data = np.asarray(c.data).reshape(-1)
    if data.size == 0 or not np.all(data == data[0]):
        return f"{op.kind} with a constant of {data.size} different values (one value only)"
    if c.dtype != m.dtype:
        return f"{op.kind} constant of type {c.dtype} on a {m.dtype} tensor"
    if np.broadcast_shapes(tuple(m.shape), tuple(c.shape)) != tuple(m.shape):
        return f"{op.kind} constant of shape {tuple(c.shape)} widens the {tuple(m.shape)} tensor"
    return m.index, int(data[0]), first


def square_input(graph: Graph, op: Operation) -> int | None:
    """x of a MUL(x, x) of one non-constant tensor (a function of x: its square), else None."""
    if op.kind != "MUL" or len(op.inputs) != 2 or op.inputs[0] != op.inputs[1]:
        return None
    return None if graph.tensors[op.inputs[0]].is_constant else op.inputs[0]


def is_table_binary(graph: Graph, op: Operation) -> bool:
    """ADD/SUB/MUL/MAXIMUM/MINIMUM that this module lowers (a constant operand, a SiLU MUL, a square) rather than
    the two-map paths."""
    return op.kind in unary.CONST_KINDS and (silu_input(graph, op) is not None or square_input(graph, op) is not None
                                             or _constant(graph, op) is not None)


def _target(graph: Graph, op: Operation) -> tuple[int, str, np.ndarray] | str:
    """(input tensor, kind, table of TFLite's output values per input value) or the reason there is none."""
    if len(op.outputs) != 1:
        return "unexpected number of outputs"
    y = op.outputs[0]
    act = str(op.options.get("activation", "NONE"))
    if act not in unary.ACTIVATION_LIMITS:
        return f"{op.kind} with fused {act}"
    out = _qp(graph, y, "output")
    if isinstance(out, str):
        return out
    silu = silu_input(graph, op)
    if silu is not None:
        x, logistic = silu
        inp, sig = _qp(graph, x, "input"), _qp(graph, logistic.outputs[0], "sigmoid")
        if isinstance(inp, str) or isinstance(sig, str):
            return inp if isinstance(inp, str) else str(sig)
        dtype = graph.tensors[x].dtype
        if graph.tensors[logistic.outputs[0]].dtype != dtype:
            return "SiLU with a sigmoid of another type"
        return x, "SILU", unary.silu_table(dtype, inp, sig, out, act)
    sq = square_input(graph, op)
    if sq is not None:
        inp = _qp(graph, sq, "input")
        if isinstance(inp, str):
            return inp
        dtype = graph.tensors[sq].dtype
        xs = unary.input_values(dtype)
        return sq, "SQUARE", unary.mul_table(dtype, xs, inp, xs, inp, out, act)
    if op.kind in unary.CONST_KINDS:
        c = _constant(graph, op)
        if c is None:
            return f"{op.kind} of two feature maps (only one constant value, x * LOGISTIC(x) or x * x on the TP table)"
        if isinstance(c, str):
            return c
        x, value, first = c
        inp, cq = _qp(graph, x, "input"), _qp(graph, op.inputs[0 if first else 1], "constant")
        if isinstance(inp, str) or isinstance(cq, str):
            return inp if isinstance(inp, str) else str(cq)
        dtype = graph.tensors[x].dtype
        return x, op.kind, unary.const_table(op.kind, dtype, inp, value, cq, out, act, first)
    x = op.inputs[0]
    inp = _qp(graph, x, "input")
    if isinstance(inp, str):
        return inp
    if op.kind == "QUANTIZE":
        return x, op.kind, unary.quantize_table(graph.tensors[x].dtype, graph.tensors[y].dtype, inp, out)
    u = unary.unary_op(graph, op)
    if isinstance(u, str):
        return u
    return x, op.kind, u.table


def table_plan(graph: Graph, op: Operation) -> TablePlan | str:
    """The TABLE job of `op`, or the reason it has none."""
    if op.kind not in TABLE_OPS:
        return f"{op.kind} has no TP table"
    for t in (*op.inputs[:1], *op.outputs):
        if graph.tensors[t].dtype not in STORED_SHIFT:
            return f"{op.kind} on {graph.tensors[t].dtype}: the TP table maps uint8/int8 tensors"
    got = _target(graph, op)
    if isinstance(got, str):
        return got
    x, kind, values = got
    y = op.outputs[0]
    xt, yt = graph.tensors[x], graph.tensors[y]
    if xt.dtype not in STORED_SHIFT or yt.dtype not in STORED_SHIFT:
        return f"{op.kind}: the TP table maps uint8/int8 tensors"
    if xt.is_constant:
        return f"{op.kind} of a constant tensor"
    if xt.dtype != yt.dtype:
        return f"{op.kind} from {xt.dtype} to {yt.dtype} (the TP table keeps the type)"
    target = _stored(values, yt.dtype)
    assert xt.quant is not None and yt.quant is not None  # checked by _target
    fit = fit_table(target, xt.quant.zero_point + STORED_SHIFT[xt.dtype], yt.quant.zero_point + STORED_SHIFT[yt.dtype])
    if fit.max_diff > 1 or fit.exact < MIN_EXACT.get(kind, MIN_EXACT_DEFAULT):
        return (f"{kind}: the TP table reproduces TFLite on {round(fit.exact * 256)}/256 input values only (max "
                f"{fit.max_diff} LSB; a bend of the map between two table entries, pwl_table.py)")
    return TablePlan(x, y, kind, target, fit)


def claim_reason(graph: Graph, op: Operation) -> str | None:
    """The support reason of a node this module lowers (None: not one of them)."""
    if op.kind == "LOGISTIC" and graph.consumers(op.outputs[0]) and all(
            (silu_input(graph, u) or (None, None))[1] is op for u in graph.consumers(op.outputs[0])):
        return "LOGISTIC runs as a TP job, or inside its SiLU MUL's table job when that MUL shares its partition"
    if op.kind not in TABLE_OPS or (op.kind in ("ADD", "SUB") and not is_table_binary(graph, op)):
        return None
    if silu_input(graph, op) is not None:
        return "MUL of x and LOGISTIC(x) (SiLU) runs as one TP table job reading x"
    if square_input(graph, op) is not None:
        return "MUL of a map with itself (its square, a function of one byte) runs as one TP table job"
    return f"{op.kind} runs as a TP table job (a PWL table fitted to TFLite's map of the 256 input values)"
