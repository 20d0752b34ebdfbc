"""Rocket programs for people: the regcmd streams pretty-printed by register and field, and the JSON form of
`python -m teflon regcmd --json` (per operation: its tasks' regcmd words and relocations)."""

from __future__ import annotations

import base64
import struct

from ..hw.regmap import WORD_VALUE_SHIFT, RegMap
from ..program import Program, Task


def task_words(prog: Program, t: Task) -> list[int]:
    data = prog.buffer(t.buffer).data or b""
    return list(struct.unpack_from(f"<{t.nbytes // 8}Q", data, t.offset))


def _relocated(prog: Program, t: Task) -> dict[int, str]:
    """Word index -> target buffer of the address registers of one task."""
    return {(r.offset - t.offset) // 8: r.target for r in prog.relocs
            if r.buffer == t.buffer and t.offset <= r.offset < t.offset + t.nbytes}


def pretty(prog: Program, regmap: RegMap) -> str:
    lines = []
    for op in prog.operations:
        lines.append(f"# operation {op.kind} nodes {op.nodes} {op.info}")
        for ti, t in enumerate(op.tasks):
            words = task_words(prog, t)
            lines.append(f"## task {ti}: {len(words)} words at {t.buffer}+0x{t.offset:x}")
            text = regmap.format_stream(words).splitlines()
            for i, target in _relocated(prog, t).items():
                offset = (words[i] >> WORD_VALUE_SHIFT) & 0xFFFFFFFF
                text[i] += f"  -> <{target}>+0x{offset:x}"
            lines.extend(text)
    return "\n".join(lines)


def to_json(prog: Program) -> dict[str, object]:
    ops = []
    for op in prog.operations:
        tasks = []
        for t in op.tasks:
            words = task_words(prog, t)
            relocs = [{"index": i, "buffer": target, "offset": (words[i] >> WORD_VALUE_SHIFT) & 0xFFFFFFFF}
                      for i, target in sorted(_relocated(prog, t).items())]
            tasks.append({"regcmd": [f"0x{w:016x}" for w in words], "relocs": relocs})
        ops.append({"nodes": op.nodes, "kind": op.kind, "tasks": tasks, **op.info})
    return {
        "device": prog.device,
        "operations": ops,
        "buffers": {b.name: base64.b64encode(b.data or b"").decode() for b in prog.buffers if not b.tensor},
    }
