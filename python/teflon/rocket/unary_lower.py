"""Per-element unary ops (teflon.unary's exact tables) as rocket operations: the DPU alone, mapping each stored
int8 input through the EW stage's lookup table (docs/hardware/rocket.md "DPU-only programs and the LUT").

Family-shared: the claim, the lowering to a `RocketUnary` and the stored-domain table. Each generation that can
run it provides the program (rk3588/dpu.py: DPU-only; rk3576/lut.py: a LUT-load task and a copy convolution). A
`RocketUnary` carries the attributes rocket.assemble reads from a convolution (tensors, shapes, stored input zero
point), so both kinds share the partition's bookkeeping.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .. import unary
from ..ir import Graph, Operation
from .quantization import LoweringError, stored_offset
from .stream import EncodeError

# The node kinds the table path claims (the MUL of a SiLU pair goes with its LOGISTIC).
UNARY_KINDS = unary.TABLE_KINDS


@dataclass
class RocketUnary:
    nodes: list[int]
    kind: str  # a teflon.unary kind, or "SILU"
    input_tensor: int
    output_tensor: int
    dtype: str
    in_h: int
    in_w: int
    in_c: int
    in_zp: int  # stored input zero point (the padding value of the input binding)
    table: np.ndarray  # int8[256]: stored output for stored input s at index s + 128

    @property
    def out_h(self) -> int:
        return self.in_h

    @property
    def out_w(self) -> int:
        return self.in_w

    @property
    def out_c(self) -> int:
        return self.in_c

    @property
    def single_channel_input(self) -> bool:
        return False

    @property
    def macs(self) -> int:
        return 0


def _shape(graph: Graph, t: int) -> tuple[int, int, int]:
    shape = graph.tensors[t].shape
    if len(shape) == 4 and shape[0] == 1:
        return int(shape[1]), int(shape[2]), int(shape[3])
    if len(shape) == 3 and shape[0] == 1:  # (1, W, C): a one-row map, as the host binding lays it out
        return 1, int(shape[1]), int(shape[2])
    if len(shape) == 2 and shape[0] == 1:
        return 1, 1, int(shape[1])
    raise LoweringError(f"tensor of shape {shape}: the DPU program runs on batch-1 maps of rank 2 to 4")


def lower_unary(graph: Graph, op: Operation, max_dim: int = 8192) -> RocketUnary:
    """The RocketUnary starting at `op` (LoweringError with the reason otherwise). The table is exact by
    construction: every stored input byte is one entry (teflon.unary)."""
    u = unary.unary_op(graph, op)
    if isinstance(u, str):
        raise LoweringError(u)
    if graph.tensors[u.input].is_constant:
        raise LoweringError(f"{u.kind} of a constant tensor")
    h, w, c = _shape(graph, u.input)
    if _shape(graph, u.output) != (h, w, c):
        raise LoweringError(f"{u.kind}: output shape differs from the input's")
    if max(h, w, c) > max_dim:
        raise LoweringError(f"{u.kind} on {h}x{w}x{c}: a DPU cube dimension is at most {max_dim}")
    off = stored_offset(u.dtype)
    stored = (u.table - off).astype(np.int8)  # index = q - qmin = stored input + 128 for both types
    return RocketUnary(list(u.ops), u.kind, u.input, u.output, u.dtype, h, w, c,
                       graph.tensors[u.input].quant.zero_point - off, stored)  # type: ignore[union-attr]


def claim(graph: Graph, op: Operation,
          check: Callable[[RocketUnary], None] | None = None) -> tuple[bool, str] | None:
    """(claimed, reason) for a table-op node or the MUL of a SiLU pair; None for any other node. `check`: the
    generation's own test that it can build the program (raises LoweringError / EncodeError with the reason)."""
    if op.kind == "MUL":
        logistic = unary.silu_logistic(graph, op)
        if logistic is None:
            return None
        try:
            u = lower_unary(graph, logistic)
            if check is not None:
                check(u)
        except (LoweringError, EncodeError) as e:
            return False, f"SiLU: {e}"
        return True, f"SiLU with LOGISTIC node {logistic.index}: one DPU LUT program"
    if not is_unary_node(graph, op):
        return None  # a QUANTIZE that keeps the values is a view (views.py)
    try:
        u = lower_unary(graph, op)
        if check is not None:
            check(u)
    except (LoweringError, EncodeError) as e:
        return False, str(e)
    what = "SiLU (with its MUL)" if u.kind == "SILU" else op.kind
    return True, f"{what}: DPU LUT program, exact 256-entry table"


def is_unary_node(graph: Graph, op: Operation) -> bool:
    if op.kind == "QUANTIZE":
        return unary.requantizes(graph, op)
    return op.kind in UNARY_KINDS or (op.kind == "MUL" and unary.silu_logistic(graph, op) is not None)
