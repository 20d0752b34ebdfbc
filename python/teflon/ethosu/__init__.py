"""The ethosu family (Arm Ethos-U65 in the NXP i.MX93, driven by Linux accel/ethosu): `target(name)`.

Family interface (docs/architecture.md, "The Python family interface"): `target(name)` returns an object with
    spec                                      the teflon.targets row (params: CONFIG / ID images, MACs, SRAM size)
    supported(graph) -> {node: (claimed, reason)}
    compile(graph, nodes, inputs, outputs, *, vela_compat=False) -> teflon.program.Program
    disassemble(program) -> str               every task's command words by name and field
    to_json(program) -> dict                  the `regcmd --json` form (disasm)
    counters(program) -> dict                 kicks / jobs / submits / read-only bytes per inference (bench)
It claims Vela's `ethos-u` custom op and runs its stream as it is (vela: the passthrough), and lowers TFLite
operations itself (support, lower, blocks, quant, stream, program: docs/hardware/ethosu-compiler.md).

Modules:
    regs      the command set of the U65 (architecture 1.0.6) as data: opcodes, fields, enums
    cmdstream command words: pack, decode, pretty-print, Vela's COP1 driver-action header
    task      the teflon task header (which BO backs which NPU region, the SRAM size) + the command words
    vela      Vela's `ethos-u` custom op -> a Program
    mlw       the weight stream codec (clean room; docs/hardware/ethosu-weights.md)
    bricks    the weight order of a kick-off's stream (OHWI <-> decoded values)
    scales    the 10-byte bias/multiplier/shift records per output channel
    support   which TFLite operations the compiler lowers (and why not)
    lower, blocks, quant, stream, program   the lowering to kicks, block configuration, scaling, emission, Program
    disasm    a program by command and field; the `regcmd --json` form
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .. import targets

VELA_KIND = "CUSTOM(ethos-u)"  # Vela's compiled op as the delegate names it (teflon.ethosu.vela)

if TYPE_CHECKING:
    from ..ir import Graph
    from ..program import Program


@dataclass(frozen=True)
class EthosuTarget:
    """The Ethos-U65 family's target (teflon.compiler's family interface) for one SoC row."""

    spec: targets.Target
    nchw_islands: bool = True  # an ONNX export's NCHW stretches run as NHWC (teflon.nchw_islands)
    group_convs: bool = False

    @property
    def name(self) -> str:
        return self.spec.name

    def supported(self, graph: Graph) -> dict[int, tuple[bool, str]]:
        """Vela's `ethos-u` custom op runs as it is (vela.py); every other node as teflon's own compiler decides
        (support.py)."""
        from . import support

        out = support.support(graph)
        for op in graph.operations:
            if op.kind != VELA_KIND:
                continue
            from . import vela  # only for a graph that holds Vela's op

            try:
                vela.compile_op(self.spec, vela.read(graph, op, self.spec))
            except ValueError as e:
                out[op.index] = (False, f"Vela's {vela.KIND} op: {e}")
            else:
                out[op.index] = (True, f"Vela's {vela.KIND} op: its command stream runs as it is")
        return out

    def compile(self, graph: Graph, nodes: list[int], inputs: list[int], outputs: list[int], *,
                mesa_compat: bool = False, vela_compat: bool = False) -> Program:
        """A partition of Vela's op (alone: TFLite gives a custom op a partition of its own when its neighbours
        are CPU nodes; with claimed neighbours, the partition is refused) or of TFLite operations. mesa_compat has
        no meaning here (Mesa's ethosu encoder is not an oracle of this family); vela_compat takes Vela 5.2.0's
        decisions where the default differs (docs/hardware/ethosu-compiler.md)."""
        from . import program

        ops = [op for op in graph.operations if op.index in set(nodes)]
        if any(op.kind == VELA_KIND for op in ops):
            from . import vela

            if len(ops) != 1:
                raise ValueError(f"Vela's {vela.KIND} op runs in a partition of its own")
            return vela.compile_op(self.spec, vela.read(graph, ops[0], self.spec))
        return program.compile(graph, nodes, inputs, outputs, device=self.name, vela_compat=vela_compat)

    def disassemble(self, program: Program) -> str:
        from .disasm import disassemble

        return disassemble(program)

    def to_json(self, program: Program) -> dict[str, Any]:
        from .disasm import to_json

        return to_json(program)

    def counters(self, program: Program) -> dict[str, int]:
        """Per inference: compute kicks, kernel jobs, SUBMIT ioctls (accel/ethosu: one per job), and the bytes of
        the read-only buffers (weight streams, scale records, LUTs)."""
        from .disasm import task_parts
        from .regs import KICKS, U65

        kicks = sum(len(U65.state_at_kicks(task_parts(program, t)[2], KICKS)) for job in program.jobs
                    for t in job.tasks)
        ro = {b for job in program.jobs for b in job.in_buffers}
        return {"tasks": kicks, "jobs": len(program.jobs), "submits": len(program.jobs),
                "weight_bytes": sum(len(b.data or b"") for b in program.buffers if b.name in ro)}


def target(name: str) -> EthosuTarget:
    spec = targets.get(name)
    if spec.family != "ethosu":
        raise ValueError(f"{name} is not an ethosu target")
    return EthosuTarget(spec)
