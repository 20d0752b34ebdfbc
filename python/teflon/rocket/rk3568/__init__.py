"""RK3566/RK3568 generation of the rocket family (docs/hardware/rk3568.md): the register table (regs), feature and
CBUF geometry (layout), weight packing (weights), the 133-word conv task (stream), the encoder (encoder) and its
claims (support: none until a simulator runs the generation's programs).

Generation interface (used by teflon.rocket only): `supported(graph, regmap)`, `lower(graph, nodes, outputs)` and
`compile(regmap, device, graph, nodes, inputs, outputs, mesa_compat)`; `mesa_compat` changes nothing (no Mesa
encoder for the RK3568 upstream).
"""

from __future__ import annotations

from typing import Any

from ...hw.regmap import RegMap
from ...ir import Graph
from ...program import Program


def cbuf_weight_bytes() -> int:
    """Weight bytes the CBUF keeps beside the smallest data area (one bank of eight)."""
    from .layout import BANK_BYTES, CBUF_BANKS

    return (CBUF_BANKS - 1) * BANK_BYTES


def supported(graph: Graph, regmap: RegMap) -> dict[int, tuple[bool, str]]:
    from .support import supported as _supported

    return _supported(graph, regmap)


def compile(regmap: RegMap, device: str, graph: Graph, nodes: list[int], inputs: list[int], outputs: list[int],
            mesa_compat: bool = False) -> Program:
    from ..operations import RocketConv
    from ..stream import EncodeError
    from .encoder import compile_ops

    del mesa_compat
    ops = lower(graph, nodes, outputs)
    convs = [o for o in ops if isinstance(o, RocketConv)]
    if len(convs) != len(ops):
        raise EncodeError("rk3568 encodes convolutions only")
    return compile_ops(regmap, device, convs, inputs, outputs)


def lower(graph: Graph, nodes: list[int], outputs: list[int] | None = None) -> list[Any]:
    """The partition's rocket operations: per-tensor convolutions with fused RELU/RELU6 clamps."""
    from ..partition import lower_partition

    return lower_partition(graph, nodes, per_channel=False, unary=False, clamp=True, outputs=outputs)
