"""The etnaviv family (VeriSilicon Vivante NPUs driven by the etnaviv DRM driver): `target(name)`.

Family interface (docs/architecture.md, "Adding a family"): `target(name)` returns an object with
    spec                                      the teflon.targets row (its `params` are the chip parameters)
    supported(graph) -> {node: (claimed, reason)}
    compile(graph, nodes, inputs, outputs, *, mesa_compat=False) -> teflon.program.Program
    disassemble(program) -> str               every job's descriptors by field
    to_json(program) -> dict                  the `regcmd --json` form (teflon.etnaviv.disasm)
    counters(program) -> dict                 NN/TP jobs / streams / submits / coefficient bytes per inference (bench)
    internal_tensors(graph, nodes) -> {tensor: node}  a SiLU's sigmoid its MULs compute themselves (lower_unary)
The NN path's generation (v7: A311D class, v8: i.MX8M Plus class) differs in per-version modules (nn_v7/nn_v8,
coefs_v7/coefs_v8); lowering (lower, lower_unary), TP jobs (tp, pwl, pwl_table), tiling, requantization, the command stream (cmdstream)
and assembly (encoder) are shared.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

from .. import targets

if TYPE_CHECKING:
    from ..ir import Graph
    from ..program import Program
    from .chips import Chip


@dataclass(frozen=True)
class EtnavivTarget:
    spec: targets.Target
    # The compiler rewrites NCHW islands (teflon.nchw_islands) for this family: its glue (channel CONCATENATION /
    # SPLIT, reshapes) runs in place as views (views.py), its convolutions without the transposes around them.
    nchw_islands: bool = True
    # ... and merges grouped convolutions (teflon.group_convs).
    group_convs: bool = False

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def chip(self) -> Chip:
        from .chips import chip

        return chip(self.name)

    def supported(self, graph: Graph) -> dict[int, tuple[bool, str]]:
        from .lower import support

        return support(graph, self.chip)

    def internal_tensors(self, graph: Graph, nodes: list[int]) -> dict[int, int]:
        """The sigmoid of a SiLU pair whose MULs compute it from x themselves (lower_unary.silu_only): no job
        writes it; the (first) MUL's output holds it."""
        from .lower import partition_outputs
        from .lower_unary import silu_only

        outputs = partition_outputs(graph, nodes)
        inside = set(nodes)
        return {op.outputs[0]: min(u.index for u in graph.consumers(op.outputs[0]))
                for op in graph.operations if op.index in inside and op.kind == "LOGISTIC"
                and silu_only(graph, op, nodes, outputs)}

    def compile(self, graph: Graph, nodes: list[int], inputs: list[int], outputs: list[int], *,
                mesa_compat: bool = False) -> Program:
        from .check import check_program
        from .encoder import compile_jobs
        from .lower import lower, nhwc

        shapes = {}
        for t in (*inputs, *outputs):
            _, h, w, c = nhwc(graph.tensors[t].shape)
            shapes[t] = (h, w, c, graph.tensors[t].dtype)
        # a partition of views alone (views.py; the support decision avoids them) is a stream with no job: the
        # outputs are the inputs' bytes in place
        program = compile_jobs(self.name, self.chip, lower(graph, nodes, self.chip, mesa_compat, outputs), inputs,
                               outputs, shapes, mesa_compat)
        # no program the hardware would refuse reaches invoke (the support decision refused such layers already;
        # this catches what only the whole partition shows, e.g. buffer extents). mesa_compat reproduces Mesa's
        # bytes for comparison (regcmd --mesa-compat), quirks included (a reshuffle buffer smaller than its reader)
        if not mesa_compat:
            check_program(program, self.chip)
        return program

    def disassemble(self, program: Program) -> str:
        from .disasm import pretty

        return pretty(program, self.chip)

    def to_json(self, program: Program) -> dict[str, object]:
        from .disasm import to_json

        return to_json(program)

    def counters(self, program: Program) -> dict[str, int]:
        """Per inference: NN/TP jobs, command streams (kernel jobs), GEM_SUBMIT ioctls (one per stream: etnaviv
        takes one command buffer per submit), and the bytes of the coefficient buffers (compressed weights and
        biases)."""
        return {"tasks": len(program.operations), "jobs": len(program.jobs), "submits": len(program.jobs),
                "weight_bytes": sum(len(b.data or b"") for b in program.buffers if b.name.endswith(".coefficients"))}


@cache
def target(name: str) -> EtnavivTarget:
    spec = targets.get(name)
    if spec.family != "etnaviv":
        raise ValueError(f"{name} is not an etnaviv target ({spec.family})")
    return EtnavivTarget(spec)


__all__ = ["EtnavivTarget", "target"]
