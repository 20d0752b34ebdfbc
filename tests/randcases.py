"""Randomly generated cases for tests/test_random.py: hypothesis strategies, the multi-op GraphCase, and the parser
that turns a case id back into its case.

Single ops are the single-op suites' own case classes (teflon.modelgen: ConvCase, FcCase, AddCase,
ElementwiseCase) with every parameter drawn: sizes, channels, kernels, strides, paddings, activations, dtypes and
the quantization (input/weight/output zero points and scales in the ranges real models use; scales are rounded to
the 4 significant digits the case names print, so an id describes its case exactly). Some draws lie outside what
a backend claims (stride 3, non-square kernels, per-channel weights, RELU6 wider than 6, FC inputs >= 1280...):
those must come back from the CPU unchanged.

Small graphs (GraphCase) are chains of 2-5 CONV_2D / DEPTHWISE_CONV_2D / PAD / ADD nodes: a straight chain, two
branches reading one tensor joined by an ADD or both returned as outputs, or a residual ADD around a convolution.
Every number of a case (weights, biases, tensor quantization) comes from a generator seeded by its name, so the id
`graph-in9x7x4-u8-conv2d.x0.oc8.k3.s1.same-dwconv.x1.k3.s2.same.relu6-seed12` fully determines the model.
"""

from __future__ import annotations

import math
import re
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from hypothesis import strategies as st

from teflon import targets
from teflon.modelgen import (
    DTYPE_TOKEN,
    QRANGE,
    AddCase,
    ConvCase,
    ElementwiseCase,
    FcCase,
    GraphBuilder,
    QParams,
    add_add,
    add_conv,
    add_pad,
    conv_params,
    out_size,
)

Case = ConvCase | FcCase | AddCase | ElementwiseCase  # | GraphCase (below)
KINDS = ("conv2d", "dwconv", "fc", "add", "elementwise", "graph")
DTYPES = ("uint8", "int8")
ACTIVATIONS = ("none", "relu", "relu6")
_DTYPE_OF_TOKEN = {v: k for k, v in DTYPE_TOKEN.items()}


# --------------------------------------------------------------------------------------------------------------
# Small graphs
# --------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GraphNode:
    """One node of a GraphCase. `src` are tensor numbers: 0 is the graph input, i + 1 the output of node i."""

    op: Literal["conv2d", "dwconv", "add", "pad"]
    src: tuple[int, ...]
    out_c: int | None = None  # conv2d
    kernel: int = 1
    stride: int = 1
    padding: Literal["same", "valid"] = "same"
    activation: Literal["none", "relu", "relu6"] = "none"
    pads: tuple[int, int, int, int] = (0, 0, 0, 0)  # PAD: top, bottom, left, right (each 0..9)

    @property
    def token(self) -> str:
        parts = [self.op, *(f"x{s}" for s in self.src)]
        if self.op == "conv2d":
            parts.append(f"oc{self.out_c}")
        if self.op in ("conv2d", "dwconv"):
            parts += [f"k{self.kernel}", f"s{self.stride}", self.padding]
        if self.op == "pad":
            parts.append("p" + "".join(str(p) for p in self.pads))
        if self.activation != "none":
            parts.append(self.activation)
        return ".".join(parts)

    @classmethod
    def parse(cls, token: str) -> GraphNode:
        op, *fields = token.split(".")
        src: list[int] = []
        kw: dict[str, Any] = {}
        for f in fields:
            if m := re.fullmatch(r"x(\d+)", f):
                src.append(int(m[1]))
            elif m := re.fullmatch(r"oc(\d+)", f):
                kw["out_c"] = int(m[1])
            elif m := re.fullmatch(r"k(\d+)", f):
                kw["kernel"] = int(m[1])
            elif m := re.fullmatch(r"s(\d+)", f):
                kw["stride"] = int(m[1])
            elif f in ("same", "valid"):
                kw["padding"] = f
            elif f in ("relu", "relu6"):
                kw["activation"] = f
            elif m := re.fullmatch(r"p(\d{4})", f):
                kw["pads"] = tuple(int(c) for c in m[1])
            else:
                raise ValueError(f"graph node {token!r}: unknown field {f!r}")
        if op not in ("conv2d", "dwconv", "add", "pad"):
            raise ValueError(f"graph node {token!r}: unknown op {op!r}")
        return cls(op, tuple(src), **kw)  # type: ignore[arg-type]


@dataclass(frozen=True)
class GraphCase:
    """A small multi-op model: one (1, H, W, C) input, `nodes` in order; every tensor no node reads is an output."""

    in_h: int
    in_w: int
    in_c: int
    dtype: Literal["uint8", "int8"]
    nodes: tuple[GraphNode, ...]
    seed: int = 0

    @property
    def name(self) -> str:
        parts = ["graph", f"in{self.in_h}x{self.in_w}x{self.in_c}", DTYPE_TOKEN[self.dtype],
                 *(n.token for n in self.nodes)]
        return "-".join(parts + ([f"seed{self.seed}"] if self.seed else []))

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return self.name

    @property
    def shapes(self) -> list[tuple[int, int, int]]:
        """(H, W, C) of tensor 0 (the input) and of every node's output."""
        shapes = [(self.in_h, self.in_w, self.in_c)]
        for n in self.nodes:
            h, w, c = shapes[n.src[0]]
            if n.op in ("conv2d", "dwconv"):
                oc = c if n.op == "dwconv" else int(n.out_c or c)
                shapes.append((out_size(h, n.kernel, n.stride, n.padding), out_size(w, n.kernel, n.stride, n.padding),
                               oc))
            elif n.op == "pad":
                t, b, left, r = n.pads
                shapes.append((h + t + b, w + left + r, c))
            else:
                shapes.append((h, w, c))
        return shapes

    @property
    def outputs(self) -> list[int]:
        read = {s for n in self.nodes for s in n.src}
        return [i + 1 for i in range(len(self.nodes)) if i + 1 not in read]

    @property
    def valid(self) -> bool:
        shapes = self.shapes
        for i, n in enumerate(self.nodes):
            if any(s > i for s in n.src) or min(shapes[i + 1]) < 1:
                return False
            if n.op == "add" and (len(n.src) != 2 or shapes[n.src[0]] != shapes[n.src[1]]):
                return False
        return True

    def conv(self, node: GraphNode) -> ConvCase:
        h, w, c = self.shapes[node.src[0]]
        return ConvCase(node.op, h, w, c, node.out_c if node.op == "conv2d" else None,  # type: ignore[arg-type]
                        node.kernel, node.stride, node.padding, node.activation, self.dtype)

    def build(self) -> bytes:
        if not self.valid:
            raise ValueError(f"{self.name}: inconsistent graph")
        rng = np.random.default_rng([self.seed, zlib.crc32(self.name.encode())])
        qmin, qmax = QRANGE[self.dtype]
        g = GraphBuilder(f"teflon.randcases {self.name}")
        in_scale = float(np.float32(math.exp(rng.uniform(math.log(0.004), math.log(0.05)))))
        x = g.tensor("input", (1, self.in_h, self.in_w, self.in_c), self.dtype,
                     QParams.make(in_scale, int(rng.integers(qmin, qmax + 1))))
        tensors = [x]
        for i, n in enumerate(self.nodes):
            out_name = f"t{i + 1}"
            src = tensors[n.src[0]]
            if n.op in ("conv2d", "dwconv"):
                case = self.conv(n)
                q = g.quant(src)
                assert q is not None
                tensors.append(add_conv(g, case, src, conv_params(case, rng, q), out_name))
            elif n.op == "pad":
                tensors.append(add_pad(g, src, (*n.pads, 0, 0), out_name))
            else:
                tensors.append(add_add(g, src, tensors[n.src[1]], n.activation, out_name=out_name))
        return g.build([x], [tensors[o] for o in self.outputs])


# --------------------------------------------------------------------------------------------------------------
# Ids: <device>-<case name>, parsed back into the case
# --------------------------------------------------------------------------------------------------------------

_FLOAT = r"(\d[\d.e+-]*)"
_FIELDS: tuple[tuple[str, str], ...] = (
    ("shape", r"in(\d+)x(\d+)x(\d+)"), ("in_n", r"in(\d+)"), ("out_c", r"oc(\d+)"), ("out_n", r"out(\d+)"),
    ("kernel", r"k(\d+)(?:x(\d+))?"), ("stride", r"s(\d+)"), ("padding", r"(same|valid)"),
    ("dtype", r"(u8|i8)(pc)?"), ("activation", r"(relu6|relu)"), ("weight_zp", r"wzp(-?\d+)"),
    ("input_zp", r"izp(-?\d+)"), ("output_zp", r"ozp(-?\d+)"), ("scale_spread", rf"spread{_FLOAT}"),
    ("input_scale", rf"is{_FLOAT}"), ("weight_scale", rf"ws{_FLOAT}"), ("output_scale", rf"os{_FLOAT}"),
    ("seed", r"seed(\d+)"), ("pads", r"p(\d{6})"), ("requant", r"rq"),
)


def _fields(tokens: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for tok in tokens:
        for key, pattern in _FIELDS:
            m = re.fullmatch(pattern, tok)
            if m is None:
                continue
            if key == "shape":
                out["in_h"], out["in_w"], out["in_c"] = (int(v) for v in m.groups())
            elif key == "kernel":
                out["kernel"] = int(m[1])
                if m[2] is not None:
                    out["kernel_w"] = int(m[2])
            elif key == "dtype":
                out["dtype"] = _DTYPE_OF_TOKEN[m[1]]
                out["per_channel"] = m[2] is not None
            elif key in ("padding", "activation"):
                out[key] = m[1]
            elif key in ("scale_spread", "input_scale", "weight_scale", "output_scale"):
                out[key] = float(m[1])
            elif key == "pads":
                out["pads"] = tuple(int(c) for c in m[1])
            elif key == "requant":
                out["requant"] = True
            else:
                out[key] = int(m[1])
            break
        else:
            raise ValueError(f"unknown id field {tok!r}")
    return out


def _only(fields: dict[str, Any], allowed: set[str], what: str) -> dict[str, Any]:
    extra = set(fields) - allowed
    if extra:
        raise ValueError(f"{what}: fields {sorted(extra)} do not belong to this op")
    return fields


def parse_case(name: str) -> Case | GraphCase:
    """The case whose `.name` is `name` (the inverse of the case classes' names, for the generated cases)."""
    # '-' separates fields, except before a digit: negative zero points (izp-5) and exponents (is1e-05)
    tokens = re.split(r"-(?!\d)", name)
    head, rest = tokens[0], tokens[1:]
    if head == "graph":
        if len(rest) < 2:
            raise ValueError(f"{name}: graph id too short")
        seed = 0
        if m := re.fullmatch(r"seed(\d+)", rest[-1]):
            seed, rest = int(m[1]), rest[:-1]
        shape, dtype, *nodes = rest
        f = _fields([shape])
        return GraphCase(f["in_h"], f["in_w"], f["in_c"], _DTYPE_OF_TOKEN[dtype],
                         tuple(GraphNode.parse(t) for t in nodes), seed)
    if head in ("conv2d", "dwconv"):
        f = _fields(rest)
        return ConvCase(head, **f)  # type: ignore[arg-type]
    if head == "fc":
        f = _only(_fields(rest), {"in_n", "out_n", "dtype", "per_channel", "activation", "seed"}, name)
        f.pop("per_channel")
        return FcCase(**f)
    if head in ("relu", "logistic", "pad"):
        f = _only(_fields(rest), {"in_h", "in_w", "in_c", "dtype", "per_channel", "pads", "requant", "seed"}, name)
        f.pop("per_channel")
        return ElementwiseCase(head, **f)  # type: ignore[arg-type]
    producers = "inputs"
    if head in ("conv", "conv2") and rest and rest[0] in ("add", "sub"):
        producers, head, rest = head, rest[0], rest[1:]
    if head in ("add", "sub"):
        f = _only(_fields(rest), {"in_h", "in_w", "in_c", "out_c", "kernel", "dtype", "per_channel", "activation",
                                  "seed"}, name)
        f.pop("per_channel")
        return AddCase(producers=producers, op=head, **f)  # type: ignore[arg-type]
    raise ValueError(f"{name}: unknown op {head!r}")


def parse_id(case_id: str) -> tuple[str, Case | GraphCase]:
    """(device, case) of a test id `<device>-<case name>`."""
    device, _, name = case_id.partition("-")
    if device not in targets.names():
        raise ValueError(f"{case_id}: unknown device {device!r} (expected one of {', '.join(targets.names())})")
    return device, parse_case(name)


def kind_of(case: Case | GraphCase) -> str:
    if isinstance(case, ConvCase):
        return case.op
    return {FcCase: "fc", AddCase: "add", ElementwiseCase: "elementwise", GraphCase: "graph"}[type(case)]


# --------------------------------------------------------------------------------------------------------------
# Strategies
# --------------------------------------------------------------------------------------------------------------

Draw = Callable[[st.SearchStrategy[Any]], Any]


def _chance(draw: Draw, percent: int) -> bool:
    """True with about `percent` % probability (hypothesis shrinks towards False)."""
    return bool(draw(st.integers(0, 99)) >= 100 - percent)


def _scale(draw: Draw, lo: float, hi: float) -> float:
    """Log-uniform in [lo, hi], rounded to the 4 significant digits a case name prints."""
    v = math.exp(draw(st.floats(math.log(lo), math.log(hi))))
    return float(f"{v:.4g}")


def _zero_point(draw: Draw, dtype: str) -> int:
    qmin, qmax = QRANGE[dtype]
    return int(draw(st.integers(qmin, qmax)))


@st.composite
def conv_cases(draw: Draw, op: Literal["conv2d", "dwconv"]) -> ConvCase:
    """CONV_2D / DEPTHWISE_CONV_2D with every parameter drawn (sizes 1..40, channels 1..64, kernels 1..7)."""
    dtype = draw(st.sampled_from(DTYPES))
    h, w = draw(st.integers(1, 40)), draw(st.integers(1, 40))
    in_c = draw(st.integers(1, 64))
    out_c = draw(st.integers(1, 64)) if op == "conv2d" else None
    kernel = draw(st.sampled_from((1, 3, 2, 5, 4, 7)))
    kernel_w = draw(st.sampled_from((1, 2, 3, 5))) if _chance(draw, 8) else None
    stride = draw(st.sampled_from((1, 2, 3))) if _chance(draw, 10) else draw(st.sampled_from((1, 2)))
    padding = draw(st.sampled_from(("same", "valid")))
    if padding == "valid" and (kernel > h or (kernel_w or kernel) > w):
        padding = "same"  # no VALID output: the same geometry with SAME padding instead of a rejected draw
    activation = draw(st.sampled_from(ACTIVATIONS))
    per_channel = dtype == "int8" and _chance(draw, 25)
    spread = _scale(draw, 1.0, 1e4) if per_channel and _chance(draw, 40) else None
    weight_zp = _zero_point(draw, dtype) if dtype == "uint8" and _chance(draw, 70) else None
    input_zp = _zero_point(draw, dtype)
    output_zp = _zero_point(draw, dtype) if _chance(draw, 25) else None
    # RELU6 without an input scale: the generator aims the real outputs at [0, 6] (the clamp is exercised)
    input_scale = None if activation == "relu6" and _chance(draw, 50) else _scale(draw, 0.004, 0.05)
    weight_scale = _scale(draw, 0.002, 0.02)
    seed = draw(st.integers(0, 9999))
    base = ConvCase(op, h, w, in_c, out_c, kernel, stride, padding, activation, dtype, per_channel, weight_zp,
                    input_zp, output_zp, input_scale, weight_scale, None, spread, seed, kernel_w)
    if not _chance(draw, 25):
        return base
    # an explicit output scale: within a factor 2 of the one the generator derives from the accumulator spread
    natural = float(conv_params(base, base.rng()).output_quant.scale[0])
    output_scale = float(f"{natural * 2.0 ** draw(st.floats(-1.0, 1.0)):.4g}")
    return ConvCase(op, h, w, in_c, out_c, kernel, stride, padding, activation, dtype, per_channel, weight_zp,
                    input_zp, output_zp, input_scale, weight_scale, output_scale, spread, seed, kernel_w)


@st.composite
def fc_cases(draw: Draw) -> FcCase:
    in_n = draw(st.integers(1, 1500)) if _chance(draw, 15) else draw(st.integers(1, 300))
    return FcCase(in_n, draw(st.integers(1, 160)), draw(st.sampled_from(ACTIVATIONS)), draw(st.sampled_from(DTYPES)),
                  draw(st.integers(0, 9999)))


@st.composite
def add_cases(draw: Draw) -> AddCase:
    activation = draw(st.sampled_from(ACTIVATIONS)) if _chance(draw, 20) else "none"
    return AddCase(draw(st.integers(1, 32)), draw(st.integers(1, 32)), draw(st.integers(1, 64)),
                   activation=activation, dtype=draw(st.sampled_from(DTYPES)), seed=draw(st.integers(0, 9999)),
                   op=draw(st.sampled_from(("add", "sub"))))


@st.composite
def elementwise_cases(draw: Draw) -> ElementwiseCase:
    op = draw(st.sampled_from(("relu", "logistic", "pad")))
    extra: dict[str, Any] = {}  # only PAD's name shows its pads: the others keep the default
    if op == "pad":
        spatial = tuple(draw(st.integers(0, 3)) for _ in range(4))
        channel = tuple(draw(st.integers(0, 2)) for _ in range(2)) if _chance(draw, 15) else (0, 0)
        extra["pads"] = (*spatial, *channel)
    return ElementwiseCase(op, draw(st.integers(1, 32)), draw(st.integers(1, 32)), draw(st.integers(1, 64)),
                           draw(st.sampled_from(DTYPES)), requant=op == "relu" and _chance(draw, 40),
                           seed=draw(st.integers(0, 9999)), **extra)


def _conv_node(draw: Draw, src: int, shape: tuple[int, int, int], same_shape_as: tuple[int, int] | None = None,
               stride: int | None = None) -> GraphNode:
    """A convolution reading tensor `src`; `same_shape_as` = (stride, out_c) forces its output geometry (SAME)."""
    h, w, c = shape
    kernel = draw(st.sampled_from((1, 3, 5)))
    activation = draw(st.sampled_from(ACTIVATIONS))
    if same_shape_as is not None:
        s, oc = same_shape_as
        if oc == c and _chance(draw, 50):
            return GraphNode("dwconv", (src,), None, kernel, s, "same", activation)
        return GraphNode("conv2d", (src,), oc, kernel, s, "same", activation)
    s = stride if stride is not None else draw(st.sampled_from((1, 1, 2)))
    padding = draw(st.sampled_from(("same", "valid")))
    if padding == "valid" and kernel > min(h, w):
        padding = "same"
    if _chance(draw, 40):
        return GraphNode("dwconv", (src,), None, kernel, s, padding, activation)
    return GraphNode("conv2d", (src,), draw(st.integers(1, 32)), kernel, s, padding, activation)


def _chain_node(draw: Draw, src: int, shape: tuple[int, int, int]) -> GraphNode:
    if _chance(draw, 15):
        return GraphNode("pad", (src,), pads=tuple(draw(st.integers(0, 2)) for _ in range(4)))  # type: ignore[arg-type]
    return _conv_node(draw, src, shape)


@st.composite
def graph_cases(draw: Draw) -> GraphCase:
    """A chain of 2-4 nodes, or 0-2 chained nodes followed by a branch (ADD-joined, two outputs, or residual)."""
    dtype = draw(st.sampled_from(DTYPES))
    h, w, c = draw(st.integers(3, 32)), draw(st.integers(3, 32)), draw(st.integers(1, 32))
    topology = draw(st.sampled_from(("chain", "branch-add", "branch-out", "residual")))
    case = GraphCase(h, w, c, dtype, ())

    def append(node: GraphNode) -> None:
        nonlocal case
        case = GraphCase(h, w, c, dtype, (*case.nodes, node))

    prefix = draw(st.integers(2, 4)) if topology == "chain" else draw(st.integers(0, 2))
    for _ in range(prefix):
        n = len(case.nodes)
        append(_chain_node(draw, n, case.shapes[n]))
    t = len(case.nodes)  # the tensor the branches read
    shape = case.shapes[t]
    if topology == "branch-out":
        append(_conv_node(draw, t, shape))
        append(_conv_node(draw, t, shape))
    elif topology == "branch-add":
        geometry = (draw(st.sampled_from((1, 2))), shape[2] if _chance(draw, 50) else draw(st.integers(1, 32)))
        append(_conv_node(draw, t, shape, geometry))
        append(_conv_node(draw, t, shape, geometry))
        append(GraphNode("add", (t + 1, t + 2), activation=draw(st.sampled_from(ACTIVATIONS))))
    elif topology == "residual":
        append(_conv_node(draw, t, shape, (1, shape[2])))
        append(GraphNode("add", (t, t + 1) if _chance(draw, 50) else (t + 1, t),
                         activation=draw(st.sampled_from(ACTIVATIONS))))
    if topology != "chain" and len(case.nodes) < 5 and _chance(draw, 30):
        n = len(case.nodes)
        append(_conv_node(draw, n, case.shapes[n]))
    return GraphCase(h, w, c, dtype, case.nodes, draw(st.integers(0, 9999)))


STRATEGIES: dict[str, st.SearchStrategy[Any]] = {
    "conv2d": conv_cases("conv2d"),
    "dwconv": conv_cases("dwconv"),
    "fc": fc_cases(),
    "add": add_cases(),
    "elementwise": elementwise_cases(),
    "graph": graph_cases(),
}
