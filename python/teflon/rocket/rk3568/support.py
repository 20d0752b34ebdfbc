"""Which graph nodes rk3568 claims: none yet.

The rk3568 encoder (encoder.py) writes CONV_2D / DEPTHWISE_CONV_2D / FULLY_CONNECTED (uint8 per tensor), MAX/AVERAGE
pools and two-map ADDs, equal to Rockchip's own programs, but no simulator executes RK3568 programs yet and no board
was available: a claimed node could not be shown to run right, so every node stays on the CPU and the reason says
what the encoder would do (docs/hardware/rk3568.md, "Status").
"""

from __future__ import annotations

from ...hw.regmap import RegMap
from ...ir import Graph
from ..quantization import LoweringError
from ..stream import EncodeError

NOT_YET = "rk3568: no simulator for the generation yet, so nothing is claimed"


def encodable(graph: Graph, regmap: RegMap, index: int) -> str:
    """Why node `index` would or would not be encoded (the reason's second half)."""
    from . import lower
    from .encoder import compile_ops

    op = graph.operations[index]
    inputs = [t for t in op.inputs if t >= 0 and not graph.tensors[t].is_constant]
    try:
        prog = compile_ops(regmap, "rk3568", lower(graph, [op.index]), inputs, list(op.outputs))
    except (LoweringError, EncodeError) as e:
        return f"not encodable: {e}"
    n = len(prog.operations[0].tasks)
    return f"the encoder would write it as {n} task{'s' * (n > 1)}"


def supported(graph: Graph, regmap: RegMap) -> dict[int, tuple[bool, str]]:
    return {op.index: (False, f"{NOT_YET} ({encodable(graph, regmap, op.index)})") for op in graph.operations}
