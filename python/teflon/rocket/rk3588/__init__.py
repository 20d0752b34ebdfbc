"""RK3588 generation of the rocket family (Mesa's rocket driver's target; rocket.md): the register table
(regs), CBUF banks and row splitting (split), weight packing (weights), CLIP_TRUNCATE (coefs), 130-word task streams (stream), the encoder (encoder) and its claims (support).

Generation interface (used by teflon.rocket only): `supported(graph, regmap)`, `lower(graph, nodes, outputs)` and
`compile(regmap, device, graph, nodes, inputs, outputs, mesa_compat)`.
"""

from __future__ import annotations

from typing import Any

from ...hw.regmap import RegMap
from ...ir import Graph
from ...program import Program


def cbuf_weight_bytes() -> int:
    """The most weight bytes the CBUF can keep resident for a whole operation: every bank but one data bank
    (split.py)."""
    from .split import CBUF_BANKS, CBUF_ENTRIES_PER_BANK, CBUF_ENTRY_BYTES

    return (CBUF_BANKS - 1) * CBUF_ENTRIES_PER_BANK * CBUF_ENTRY_BYTES


def supported(graph: Graph, regmap: RegMap) -> dict[int, tuple[bool, str]]:
    from .support import supported as _supported

    return _supported(graph, regmap)


def compile(regmap: RegMap, device: str, graph: Graph, nodes: list[int], inputs: list[int], outputs: list[int],
            mesa_compat: bool = False) -> Program:
    """mesa_compat: requant scale rounded as Mesa does, for byte-equal streams (see ..requant.out_cvt)."""
    from .encoder import compile_ops

    return compile_ops(regmap, device, lower(graph, nodes, outputs), inputs, outputs, mesa_compat=mesa_compat,
                       graph=graph)


def lower(graph: Graph, nodes: list[int], outputs: list[int] | None = None) -> list[Any]:
    """The partition's rocket operations with this generation's options (..partition.lower_partition)."""
    from ... import hw_facts
    from ..fused_add import EXACT_PRODUCT
    from ..partition import lower_partition

    return lower_partition(graph, nodes, per_channel=True, unary=True, clamp=True, outputs=outputs,
                           mul=hw_facts.proved("rk3588", "ew_mul") in EXACT_PRODUCT)
