"""The rocket family (Rockchip NPUs driven by the accel/rocket kernel driver): `target(name)`.

Family interface (docs/architecture.md, "Adding a family"): `target(name)` returns an object with
    spec                                      the teflon.targets row
    supported(graph) -> {node: (claimed, reason)}
    compile(graph, nodes, inputs, outputs, *, mesa_compat=False) -> teflon.program.Program (every word
                                              checked against the register table: check.py)
    internal_tensors(graph, nodes) -> {tensor: node}  tensors the partition computes but cannot hand out, each
                                              with the node whose output holds it (optional: none without it)
    disassemble(program) -> str               every task's regcmd words by register and field
    to_json(program) -> dict                  the `regcmd --json` form
    counters(program) -> dict                 tasks / kernel jobs (runs of joined jobs, kernel_jobs.py) / submits /
                                              weight bytes per inference (bench)
    cbuf_weight_bytes() -> int                weights that stay on chip for a whole operation (profile;
                                              optional: families without it skip the re-read check)
    encodable(graph) -> list[int] | None      the nodes a generation's encoder writes when it claims fewer (rk3568
                                              with TEFLON_ROCKET_PPU=1: pools as PPU tasks; regcmd compiles each
                                              on its own), else None
Each hardware generation is a subpackage (rk3588/, rk3576/: registers, split, weights, coefficients, streams,
encoder, support) over the shared modules here (lower, geometry, cube, requant, stream, assemble, disasm); a
target row names its generation.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from functools import cache
from types import ModuleType
from typing import TYPE_CHECKING

from .. import targets

if TYPE_CHECKING:
    from ..hw.regmap import RegMap
    from ..ir import Graph
    from ..program import Program


@dataclass(frozen=True)
class RocketTarget:
    spec: targets.Target
    generation: ModuleType = field(repr=False)
    # The compiler rewrites NCHW islands (teflon.nchw_islands) for this family: views.py runs their glue in place.
    nchw_islands: bool = True
    # ... and merges grouped convolutions (teflon.group_convs): their channel parts need not start on 16-channel planes.
    group_convs: bool = True

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def regmap(self) -> RegMap:
        return _regmap(self.spec.generation)

    def supported(self, graph: Graph) -> dict[int, tuple[bool, str]]:
        return self.generation.supported(graph, self.regmap)

    def compile(self, graph: Graph, nodes: list[int], inputs: list[int], outputs: list[int], *,
                mesa_compat: bool = False) -> Program:
        from .check import require_valid
        from .kernel_jobs import join_jobs

        # the last gate: a word outside the register table fails the compile (the partition stays on the CPU)
        # instead of the invoke (check.py)
        prog = require_valid(self.regmap, self.generation.compile(self.regmap, self.name, graph, nodes, inputs,
                                                                  outputs, mesa_compat))
        return join_jobs(prog, self.name, mesa_compat)

    def encodable(self, graph: Graph) -> list[int] | None:
        """Nodes the generation's encoder writes although it claims fewer (rk3568 with TEFLON_ROCKET_PPU=1: pools as PPU
        tasks), or None when the generation has no such list (its claims are `supported`)."""
        nodes = getattr(self.generation, "encodable_nodes", None)
        return None if nodes is None else list(nodes(graph, self.regmap))

    def internal_tensors(self, graph: Graph, nodes: list[int]) -> dict[int, int]:
        """Tensors of the partition `nodes` that its program cannot hand out (..partition.internal_tensors)."""
        from .partition import internal_tensors
        from .quantization import LoweringError

        try:
            ops = self.generation.lower(graph, nodes)
        except LoweringError:
            return {}  # the partition does not compile at all: compile() says why
        return internal_tensors(graph, nodes, ops)

    def disassemble(self, program: Program) -> str:
        from .disasm import pretty

        return pretty(program, self.regmap)

    def to_json(self, program: Program) -> dict[str, object]:
        from .disasm import to_json

        return to_json(program)

    def cbuf_weight_bytes(self) -> int:
        """Weight bytes that fit the on-chip buffer for a whole operation (profile's re-read check)."""
        return int(self.generation.cbuf_weight_bytes())

    def counters(self, program: Program) -> dict[str, int]:
        """Per inference: regcmd tasks, kernel jobs, SUBMIT ioctls (one carries all of a partition's jobs on one
        core: DRM_IOCTL_ROCKET_SUBMIT takes a job array; the runner's multi-core lanes submit once per lane),
        and the bytes of packed weights."""
        return {"tasks": sum(len(op.tasks) for op in program.operations),
                "jobs": sum(not j.join for j in program.jobs),  # kernel jobs: a joined job runs inside the one before
                "op_jobs": len(program.jobs),
                "submits": int(bool(program.jobs)),
                "weight_bytes": sum(len(b.data or b"") for b in program.buffers if b.name.endswith(".weights"))}


@cache
def _regmap(generation: str) -> RegMap:
    from ..hw.regmap import RegMap

    return RegMap(importlib.import_module(f"{__name__}.{generation}.regs").TABLE)


@cache
def target(name: str) -> RocketTarget:
    spec = targets.get(name)
    if spec.family != "rocket":
        raise ValueError(f"{name} is not a rocket target ({spec.family})")
    return RocketTarget(spec, importlib.import_module(f"{__name__}.{spec.generation}"))


__all__ = ["RocketTarget", "target"]
