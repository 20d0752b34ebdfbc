"""Which graph nodes rk3568 claims: what the encoder writes and the simulator runs (docs/hardware/rk3568.md §6-§7).

A node is claimed when the encoder writes it as a partition of its own (encoder.py: CONV_2D, DEPTHWISE_CONV_2D and
FULLY_CONNECTED with per-tensor or per-channel weights, uint8 or int8; a global AVERAGE_POOL_2D as the vendor's
averaging depthwise convolution, any other AVERAGE_POOL_2D as an exact depthwise convolution; MUL/ADD/SUB with a
constant; a PAD folded into its convolution; the ADD of two maps; a reshape written in place) and the task kinds it
needs run on the simulated kernel: no PPU task is claimed, since the PPU raises no interrupt bit on RK3568 [IAV
T60/T61] and accel/rocket (the RFC's UAPI) kicks and completes one task at a time, so a PPU task alone would never
finish (MAX_POOL_2D stays on the CPU; with TEFLON_ROCKET_PPU=1 the encoder writes the vendor's PPU tasks for regcmd,
which are not claimed either).
"""

from __future__ import annotations

from ...hw.regmap import RegMap
from ...ir import Graph
from ..operations import CONV_KINDS
from ..pad_fold import NOT_FOLDED, PAD_KINDS, folded_pad
from ..quantization import LoweringError
from ..stream import EncodeError
from . import ALIAS_KINDS, ppu_pools

POOL_REASON = ("rk3568: a pool is a PPU task here (TEFLON_ROCKET_PPU=1), and the PPU raises no interrupt bit on RK3568 "
               "[IAV T60/T61]; accel/rocket kicks one task at a time, so it would never complete "
               "(docs/hardware/rk3568.md §5)")


def encodable(graph: Graph, regmap: RegMap, index: int) -> str:
    """Why node `index` is or is not encoded as a partition of its own (the reason's second half)."""
    return _encoded(graph, regmap, [index])


def _encoded(graph: Graph, regmap: RegMap, nodes: list[int]) -> str:
    """Why the partition `nodes` (one node, or a PAD and the convolution it folds into) is or is not encoded."""
    from . import lower
    from .encoder import compile_ops

    ops = [o for o in graph.operations if o.index in nodes]
    produced = {t for o in ops for t in o.outputs}
    inputs = [t for o in ops for t in o.inputs if t >= 0 and not graph.tensors[t].is_constant and t not in produced]
    try:
        prog = compile_ops(regmap, "rk3568", lower(graph, nodes), inputs, list(ops[-1].outputs))
    except (LoweringError, EncodeError) as e:
        return f"not encodable: {e}"
    n = len(prog.operations[0].tasks)
    return f"the encoder writes it as {n} task{'s' * (n > 1)}"


def supported(graph: Graph, regmap: RegMap) -> dict[int, tuple[bool, str]]:
    from .average import is_global_average

    out: dict[int, tuple[bool, str]] = {}
    folded: dict[int, int] = {}  # PAD node -> the convolution it folds into
    for op in graph.operations:
        if op.kind in PAD_KINDS:
            continue  # decided below, from its reader's decision
        # a global average is the vendor's averaging depthwise convolution (average.py): a conv task, not the PPU
        if op.kind in ("MAX_POOL_2D", "AVERAGE_POOL_2D") and ppu_pools() and not is_global_average(graph, op):
            out[op.index] = (False, POOL_REASON)
            continue
        fold = folded_pad(graph, op) if op.kind in CONV_KINDS else None
        if fold is not None:  # the PAD folds into this convolution's padding when the encoder takes the total
            why = _encoded(graph, regmap, [fold[0].index, op.index])
            if why.startswith("the encoder"):
                folded[fold[0].index] = op.index
                out[op.index] = (True, f"rk3568: {why}, the PAD of node {fold[0].index} folded into its padding")
                continue
        why = encodable(graph, regmap, op.index)
        out[op.index] = (why.startswith("the encoder"), f"rk3568: {why}")
    for op in graph.operations:
        if op.kind in PAD_KINDS:
            out[op.index] = ((True, f"rk3568: folded into the padding of node {folded[op.index]}")
                             if op.index in folded else (False, f"rk3568: {NOT_FOLDED}"))
        elif op.kind in ALIAS_KINDS:
            # a reshape the claimed operation before it writes as its own output (lower's `aliased`)
            chain = [op.index]  # back through claimed reshapes to the operation that writes the bytes
            prod = graph.producer(op.inputs[0]) if op.inputs else None
            while prod is not None and prod.kind in ALIAS_KINDS and out.get(prod.index, (False, ""))[0]:
                chain.insert(0, prod.index)
                prod = graph.producer(prod.inputs[0])
            if prod is not None and out.get(prod.index, (False, ""))[0] and prod.kind not in PAD_KINDS:
                why = _encoded(graph, regmap, [prod.index, *chain])
                if why.startswith("the encoder"):
                    out[op.index] = (True, f"rk3568: written in place by node {prod.index} (moves no byte)")
    return out
