"""RK3576 generation of the rocket family (docs/hardware/rocket-rk3576.md): the register table (regs), CBUF ring
windows (split), weight cubes (weights), the coefficient table and shift word (coefs), 139-word task streams
with their trailer (stream), the encoder (encoder) and its claims (support).

Generation interface (used by teflon.rocket only): `supported(graph, regmap)`, `lower(graph, nodes, outputs)` and
`compile(regmap, device, graph, nodes, inputs, outputs, mesa_compat)`; `mesa_compat` changes nothing here (Mesa
has no RK3576 encoder to be compatible with).
"""

from __future__ import annotations

from typing import Any

from ...hw.regmap import RegMap
from ...ir import Graph
from ...program import Program


def cbuf_weight_bytes() -> int:
    """The weight bytes the CBUF keeps resident beside the largest data area (the split layer's ring, split.py)."""
    from .split import GRANULE, POOL, RING_LIMIT

    return (POOL - RING_LIMIT) * GRANULE


def supported(graph: Graph, regmap: RegMap) -> dict[int, tuple[bool, str]]:
    from .support import supported as _supported

    return _supported(graph, regmap)


def compile(regmap: RegMap, device: str, graph: Graph, nodes: list[int], inputs: list[int], outputs: list[int],
            mesa_compat: bool = False) -> Program:
    from .encoder import compile_ops
    from .groups import expand

    del mesa_compat  # nothing to be compatible with
    ops = lower(graph, nodes, outputs)
    return compile_ops(regmap, device, expand(graph, ops), inputs, outputs, graph)  # type: ignore[arg-type]


def lower(graph: Graph, nodes: list[int], outputs: list[int] | None = None) -> list[Any]:
    """The partition's rocket operations with this generation's options (..partition.lower_partition; no ADD
    fused into a channel-grouped convolution)."""
    from ..partition import lower_partition
    from .groups import grouped

    return lower_partition(graph, nodes, per_channel=True, unary=True, clamp=True, outputs=outputs,
                           fusable=lambda c: not grouped(c))
