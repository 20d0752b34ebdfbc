"""The ethosu family (Arm Ethos-U65 in the NXP i.MX93, driven by Linux accel/ethosu): `target(name)`.

Family interface (docs/architecture.md, "The Python family interface"): `target(name)` returns an object with
    spec                                      the teflon.targets row (params: CONFIG / ID images, MACs, SRAM size)
    supported(graph) -> {node: (claimed, reason)}
    compile(graph, nodes, inputs, outputs, *, mesa_compat=False) -> teflon.program.Program
    disassemble(program) -> str               every task's command words by name and field
    to_json(program) -> dict                  the `regcmd --json` form
Today it claims Vela's `ethos-u` custom op and runs its stream as it is (vela: the passthrough); lowering TFLite
operations itself is still to come (every other node stays on the CPU with its reason).

Modules:
    regs      the command set of the U65 (architecture 1.0.6) as data: opcodes, fields, enums
    cmdstream command words: pack, decode, pretty-print, Vela's COP1 driver-action header
    task      the teflon task header (which BO backs which NPU region, the SRAM size) + the command words
    vela      Vela's `ethos-u` custom op -> a Program
    mlw       the weight stream codec (clean room; docs/hardware/ethosu-weights.md)
    bricks    the weight order of a kick-off's stream (OHWI <-> decoded values)
    scales    the 10-byte bias/multiplier/shift records per output channel
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .. import targets

if TYPE_CHECKING:
    from ..ir import Graph
    from ..program import Program


@dataclass(frozen=True)
class EthosuTarget:
    spec: targets.Target
    nchw_islands: bool = False
    group_convs: bool = False

    @property
    def name(self) -> str:
        return self.spec.name

    def supported(self, graph: Graph) -> dict[int, tuple[bool, str]]:
        from . import vela

        out: dict[int, tuple[bool, str]] = {}
        for op in graph.operations:
            if op.kind != vela.KIND:
                out[op.index] = (False, f"the ethosu compiler does not lower {op.kind} yet")
                continue
            try:
                vela.compile_op(self.spec, vela.read(graph, op, self.spec))
            except ValueError as e:
                out[op.index] = (False, f"Vela's {vela.KIND} op: {e}")
            else:
                out[op.index] = (True, f"Vela's {vela.KIND} op: its command stream runs as it is")
        return out

    def compile(self, graph: Graph, nodes: list[int], inputs: list[int], outputs: list[int], *,
                mesa_compat: bool = False) -> Program:
        from . import vela

        ops = [op for op in graph.operations if op.index in set(nodes)]
        if len(ops) != 1 or ops[0].kind != vela.KIND:
            raise ValueError("an ethosu partition is one Vela ethos-u op")
        return vela.compile_op(self.spec, vela.read(graph, ops[0], self.spec))

    def disassemble(self, program: Program) -> str:
        from . import task
        from .regs import U65

        lines = []
        for ji, job in enumerate(program.jobs):
            for ti, t in enumerate(job.tasks):
                data = bytes(program.buffer(t.buffer).data or b"")[t.offset:t.offset + t.nbytes]
                sram, regions, words = task.unpack(data)
                bos = [*job.in_buffers, *job.out_buffers]
                where = ", ".join(f"region {r} = {bos[b]}" for r, b in sorted(regions.items()))
                lines.append(f"job {ji + 1} task {ti + 1}: sram_size {sram}; {where}")
                lines += [f"  {s}" for s in U65.pretty(words)]
        return "\n".join(lines)

    def to_json(self, program: Program) -> dict[str, Any]:
        from . import task
        from .regs import U65

        jobs = []
        for job in program.jobs:
            tasks = []
            for t in job.tasks:
                data = bytes(program.buffer(t.buffer).data or b"")[t.offset:t.offset + t.nbytes]
                sram, regions, words = task.unpack(data)
                bos = [*job.in_buffers, *job.out_buffers]
                tasks.append({"sram_size": sram, "regions": {str(r): bos[b] for r, b in sorted(regions.items())},
                              "commands": [{"name": d.command.name, "value": d.value, "fields": dict(d.fields)}
                                           for d in U65.decode(words, strict=False)]})
            jobs.append({"in": job.in_buffers, "out": job.out_buffers, "tasks": tasks})
        return {"device": program.device, "family": "ethosu", "jobs": jobs}


def target(name: str) -> EthosuTarget:
    spec = targets.get(name)
    if spec.family != "ethosu":
        raise ValueError(f"{name} is not an ethosu target")
    return EthosuTarget(spec)
