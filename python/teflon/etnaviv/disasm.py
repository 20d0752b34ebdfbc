"""Etnaviv programs for people: every job's descriptors by field name, and the `regcmd --json` form

    {"device": D, "jobs": [{"kind": "NN"|"TP", "tp_type": T|null,
      "descriptors": [{"words": ["0x%08x", ...], "relocs": [{"word": i, "buffer": name, "offset": o}]}],
      "coefficients": {"buffer", "offset", "size"}, "lut": {"buffer", "offset"}}], "buffers": {name: base64}}

A relocated word holds the value it has with its target buffer at address 0 (the encoder writes it that way; the
runner adds the address), so the words compare with any other encoder's after the same normalisation.
"""

from __future__ import annotations

import base64

import numpy as np

from ..program import Program
from .chips import Chip
from .desc import TP
from .nn import version_module

NN_WORDS, TP_WORDS = 34, 31


def _words(prog: Program, offset: int, n: int) -> list[int]:
    data = prog.buffer("descriptors").data or b""
    return [int(w) for w in np.frombuffer(data, "<u4", n, offset)]


def _relocs(prog: Program, offset: int, n: int) -> list[dict[str, object]]:
    return [{"word": i, "buffer": f.target, "offset": f.offset}
            for i, f in sorted(prog.patched_fields("descriptors", offset, 4 * n, 4).items())]


def _jobs(prog: Program) -> list[dict[str, object]]:
    jobs = []
    for op in prog.operations:
        nn = op.kind == "NN"
        n = NN_WORDS if nn else TP_WORDS
        descs = [{"words": [f"0x{w:08x}" for w in _words(prog, off, n)], "relocs": _relocs(prog, off, n)}
                 for off in op.info["descriptors"]]  # type: ignore[union-attr]
        job: dict[str, object] = {"kind": "NN" if nn else "TP", "tp_type": None if nn else op.kind[3:],
                                  "descriptors": descs}
        for key in ("coefficients", "lut"):
            if key in op.info:
                job[key] = op.info[key]
        jobs.append(job)
    return jobs


def to_json(prog: Program) -> dict[str, object]:
    return {"device": prog.device, "jobs": _jobs(prog),
            "buffers": {b.name: base64.b64encode(b.data or b"").decode() for b in prog.buffers if not b.tensor}}


def pretty(prog: Program, chip: Chip) -> str:
    nn_table = version_module(chip).TABLE
    lines = []
    for j, op in enumerate(prog.operations):
        nn = op.kind == "NN"
        table, n = (nn_table, NN_WORDS) if nn else (TP, TP_WORDS)
        lines.append(f"# job {j}: {'NN' if nn else 'TP ' + op.kind[3:]}")
        for c, offset in enumerate(op.info["descriptors"]):  # type: ignore[arg-type]
            lines.append(f"## descriptor {c}")
            lines.append(table.format(_words(prog, offset, n), prog.patched_fields("descriptors", offset, 4 * n, 4)))
    return "\n".join(lines)
