"""An ethosu Program shown by command and field (`regcmd`), and its `regcmd --json` form.

Both kinds of ethosu programs, teflon's own (teflon.ethosu.program) and Vela's stream run as it is
(teflon.ethosu.vela), are jobs of one task each: the task header (teflon.ethosu.task) then the command words.
"""

from __future__ import annotations

import base64
from typing import Any

from teflon.ethosu import task
from teflon.ethosu.regs import KICKS, U65
from teflon.program import Program, Task


def task_parts(p: Program, t: Task) -> tuple[int, dict[int, int], tuple[int, ...]]:
    """(sram_size, {region: BO index in the job's list}, command words) of a task."""
    data = bytes(p.buffer(t.buffer).data or b"")[t.offset:t.offset + t.nbytes]
    return task.unpack(data)


def disassemble(p: Program) -> str:
    lines = []
    for ji, job in enumerate(p.jobs):
        bos = [*job.in_buffers, *job.out_buffers]
        for ti, t in enumerate(job.tasks):
            sram, regions, words = task_parts(p, t)
            where = ", ".join(f"region {r} = {bos[b]}" for r, b in sorted(regions.items()))
            lines.append(f"# job {ji + 1} task {ti + 1}: sram_size {sram}; {where}")
            lines += [f"  {s}" for s in U65.pretty(words)]
    return "\n".join(lines)


def to_json(p: Program) -> dict[str, Any]:
    """{"device", "command_stream": ["0x%08x", ...] (the words as submitted to accel/ethosu), "regions":
    {"<n>": buffer}, "sram_size", "buffers": {name: base64 of its initial bytes}, "jobs": [...]} (the top-level
    stream and regions are those of the program's one job; every job also lists its own, with the register state
    in force at each compute kick)."""
    jobs = []
    for job in p.jobs:
        bos = [*job.in_buffers, *job.out_buffers]
        for t in job.tasks:
            sram, regions, words = task_parts(p, t)
            kicks = [{"op": name, "state": {n: U65.fields_of(U65.command(n), v) for n, v in state.items()}}
                     for name, state in U65.state_at_kicks(words, KICKS)]
            jobs.append({"in": job.in_buffers, "out": job.out_buffers, "sram_size": sram,
                         "regions": {str(r): bos[b] for r, b in sorted(regions.items())},
                         "command_stream": [f"0x{w:08x}" for w in words], "kicks": kicks})
    doc: dict[str, Any] = {"device": p.device}
    if len(jobs) == 1:
        doc.update({k: jobs[0][k] for k in ("command_stream", "regions", "sram_size")})
    doc["buffers"] = {b.name: base64.b64encode(bytes(b.data)).decode() for b in p.buffers if b.data is not None}
    doc["jobs"] = jobs
    return doc
