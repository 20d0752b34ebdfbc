"""Rocket programs for people: the regcmd streams pretty-printed by register and field, and the JSON form of
`python -m teflon regcmd --json` (per operation: its tasks' regcmd words and relocations)."""

from __future__ import annotations

import base64
import struct

from ..hw.regmap import RegMap
from ..program import PatchedField, Program, Task


def task_words(prog: Program, t: Task) -> list[int]:
    data = prog.buffer(t.buffer).data or b""
    return list(struct.unpack_from(f"<{t.nbytes // 8}Q", data, t.offset))


def _patched(prog: Program, t: Task) -> dict[int, PatchedField]:
    """Word index -> relocated address field of one task's stream."""
    return prog.patched_fields(t.buffer, t.offset, t.nbytes, 8)


def pretty(prog: Program, regmap: RegMap) -> str:
    lines = []
    for op in prog.operations:
        lines.append(f"# operation {op.kind} nodes {op.nodes} {op.info}")
        for ti, t in enumerate(op.tasks):
            words = task_words(prog, t)
            lines.append(f"## task {ti}: {len(words)} words at {t.buffer}+0x{t.offset:x}")
            lines.append(regmap.format_stream(words, _patched(prog, t)))
    return "\n".join(lines)


def to_json(prog: Program) -> dict[str, object]:
    ops = []
    for op in prog.operations:
        tasks = []
        for t in op.tasks:
            relocs = [{"index": i, "buffer": f.target, "offset": f.offset} for i, f in sorted(_patched(prog, t).items())]
            tasks.append({"regcmd": [f"0x{w:016x}" for w in task_words(prog, t)], "relocs": relocs})
        ops.append({"nodes": op.nodes, "kind": op.kind, "tasks": tasks, **op.info})
    return {
        "device": prog.device,
        "operations": ops,
        "buffers": {b.name: base64.b64encode(b.data or b"").decode() for b in prog.buffers if not b.tensor},
    }
