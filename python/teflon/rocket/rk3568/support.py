"""Which graph nodes rk3568 claims: none yet.

The rk3568 encoder (encoder.py) writes single-task CONV_2D / DEPTHWISE_CONV_2D / FULLY_CONNECTED layers, but no
simulator executes RK3568 programs yet and no board was available: a claimed node could not be shown to run
right, so every node stays on the CPU and the reason says what the encoder would do (docs/hardware/rk3568.md,
"Status").
"""

from __future__ import annotations

from ...hw.regmap import RegMap
from ...ir import Graph
from ..convlike import is_conv_like, lower_conv_like
from ..quantization import LoweringError
from ..stream import EncodeError
from .encoder import encode_layer

NOT_YET = "rk3568: no simulator for the generation yet, so nothing is claimed"


def encodable(graph: Graph, regmap: RegMap, index: int) -> str:
    """Why node `index` would or would not be encoded (the reason's second half)."""
    op = graph.operations[index]
    if not is_conv_like(graph, op):
        return f"{op.kind} is not encoded on rk3568"
    try:
        encode_layer(regmap, lower_conv_like(graph, op, per_channel=False, clamp=True))
    except (LoweringError, EncodeError) as e:
        return f"not encodable: {e}"
    return "the encoder would write it as one task"


def supported(graph: Graph, regmap: RegMap) -> dict[int, tuple[bool, str]]:
    return {op.index: (False, f"{NOT_YET} ({encodable(graph, regmap, op.index)})") for op in graph.operations}
