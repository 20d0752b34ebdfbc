"""RK3566/RK3568 generation of the rocket family (docs/hardware/rk3568.md): the register table (regs), feature and
CBUF geometry (layout), weight packing (weights), channel groups and row bands (split), the 133-word conv task and
its delta tasks (stream), the PPU pool task (pool), the DPU-only ADD (add), the encoder (encoder) and its claims
(support: what the encoder writes and drivers/rocket/sim_rk3568.c runs).

Generation interface (used by teflon.rocket only): `supported(graph, regmap)`, `lower(graph, nodes, outputs)` and
`compile(regmap, device, graph, nodes, inputs, outputs, mesa_compat)`; `mesa_compat` changes nothing (no Mesa
encoder for the RK3568 upstream).
"""

from __future__ import annotations

from typing import Any

from ...hw.regmap import RegMap
from ...ir import Graph
from ...program import Program

CONV_OPS = ("CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED")


def cbuf_weight_bytes() -> int:
    """Weight bytes the CBUF keeps beside the smallest data area (one bank of eight)."""
    from .layout import BANK_BYTES, CBUF_BANKS

    return (CBUF_BANKS - 1) * BANK_BYTES


def supported(graph: Graph, regmap: RegMap) -> dict[int, tuple[bool, str]]:
    from .support import supported as _supported

    return _supported(graph, regmap)


def encodable_nodes(graph: Graph, regmap: RegMap) -> list[int]:
    """The nodes the encoder writes, each as a partition of its own (support.py says why the others are not)."""
    from .support import encodable

    return [op.index for op in graph.operations if encodable(graph, regmap, op.index).startswith("the encoder")]


def compile(regmap: RegMap, device: str, graph: Graph, nodes: list[int], inputs: list[int], outputs: list[int],
            mesa_compat: bool = False) -> Program:
    from .encoder import compile_ops

    del mesa_compat
    return compile_ops(regmap, device, lower(graph, nodes, outputs), inputs, outputs)


def lower(graph: Graph, nodes: list[int], outputs: list[int] | None = None) -> list[Any]:
    """The partition's operations in graph order: per-tensor convolutions (fused RELU/RELU6 through the BN stage)
    window pools and ADDs of two maps; anything else raises LoweringError."""
    from ..convlike import is_conv_like, lower_conv_like
    from ..pool import window_pool
    from ..quantization import LoweringError
    from .add import lower_add
    from .average import is_global_average, lower_global_average

    del outputs
    ops: list[Any] = []
    for op in graph.operations:
        if op.index not in nodes:
            continue
        if is_conv_like(graph, op) and op.kind not in CONV_OPS:
            # MUL/ADD/SUB with a constant run elsewhere as a 1x1 depthwise conv with per-channel factors, which the
            # per-tensor rk3568 path cannot express (measured: up to 93 LSB off before this refusal)
            raise LoweringError(f"{op.kind} with a constant (node {op.index}) is not encoded on rk3568")
        if is_conv_like(graph, op):
            # a PAD before it is not folded: rk3568 does not encode PAD, so the convolution reads its output
            ops.append(lower_conv_like(graph, op, per_channel=True, clamp=True, fold_pad=False))
        elif is_global_average(graph, op):  # the vendor's averaging depthwise convolution (average.py)
            ops.append(lower_global_average(graph, op))
        elif op.kind in ("MAX_POOL_2D", "AVERAGE_POOL_2D"):
            ops.append(window_pool(graph, op))
        elif op.kind == "ADD":
            ops.append(lower_add(graph, op))
        else:
            raise LoweringError(f"{op.kind} (node {op.index}) is not encoded on rk3568")
    return ops
