"""The rocket family (Rockchip RK3588 and RK3576 NPUs): support checks and the compiler.

    supported(graph, device) -> {node index: (claimed, reason)}
    compile(graph, nodes, inputs, outputs, device) -> teflon.program.Program
"""

from __future__ import annotations

from functools import cache

from ..hw.regmap import RegMap
from ..ir import Graph
from ..program import Program


@cache
def regmap_for(device: str) -> RegMap:
    if device == "rk3588":
        from .regs_rk3588 import TABLE

        return RegMap(TABLE)
    if device == "rk3576":
        from .regs_rk3576 import TABLE as TABLE_RK3576

        return RegMap(TABLE_RK3576)
    raise ValueError(f"no rocket register table for {device}")


def supported(graph: Graph, device: str) -> dict[int, tuple[bool, str]]:
    from .support import supported as _supported

    return _supported(graph, device)


def compile(graph: Graph, nodes: list[int], inputs: list[int], outputs: list[int], device: str, *,
            mesa_compat: bool = False) -> Program:
    """mesa_compat: requant scale rounded as Mesa does, for byte-equal streams (see coefs.out_cvt)."""
    from .lower import lower_partition

    if device == "rk3576":
        from .encoder_rk3576 import compile_ops as compile_rk3576

        return compile_rk3576(regmap_for(device), device, lower_partition(graph, nodes, outputs, fuse=False,
                                                                          per_channel=True), inputs, outputs)
    from .encoder import compile_ops

    return compile_ops(regmap_for(device), device, lower_partition(graph, nodes, outputs), inputs, outputs,
                       mesa_compat=mesa_compat)


__all__ = ["compile", "regmap_for", "supported"]
