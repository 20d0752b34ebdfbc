"""The static program check: what the etnaviv NPU would refuse (or the simulator cannot model) is found at compile
time, before a program reaches invoke.

The rules are data: the descriptor tables' field bounds (teflon.etnaviv.desc), which the simulator reads from the
same tables through its generated headers, plus the extent rule both apply to an NN job's input (every byte the
job reads lies inside the one buffer its address points into: a BO is the unit the MMU maps). Two entry points:
- `job_violations(job, chip)`: the bounds of one lowered job's descriptor fields, addresses aside; the support
  decision calls it so a layer whose encoding falls outside them stays on the CPU with the reason;
- `check_program(program, chip)`: every descriptor of a compiled program, bounds and input extents; the compile
  raises `ProgramCheckError` instead of handing such a program over.
"""

from __future__ import annotations

from ..hw.descriptor import DescError, DescTable
from ..program import Program
from .chips import Chip
from .desc import NN_V7, NN_V8, NN_WORDS, TP, TP_WORDS
from .nn import nn_fields
from .ops import KIND_NN, EtnaOp
from .pwl import PWL_TYPES
from .tp import tp_descriptors

LUT_OPS = PWL_TYPES  # TP jobs with a PWL table (teflon.etnaviv.pwl)
NN_WORD_IN = 6  # in_image_address (etnaviv.md §2.1)
PAGE = 4096  # a GEM BO is whole pages: the device MMU maps (and may read) up to the page end (etna_sim_mem.c, etnaviv-kernel.md)


class ProgramCheckError(ValueError):
    """A compiled program holds a descriptor the hardware would not take; the message names it."""


def nn_table(chip: Chip) -> DescTable:
    return NN_V8 if chip.version == 8 else NN_V7


def job_violations(job: EtnaOp, chip: Chip, mesa_compat: bool = False) -> list[str]:
    """The descriptor fields of `job` outside their bounds (addresses and the SRAM cache split do not matter), or
    the field that does not fit its bits at all."""
    try:
        return _violations(job, chip, mesa_compat)
    except DescError as exc:
        return [str(exc)]


def _violations(job: EtnaOp, chip: Chip, mesa_compat: bool) -> list[str]:
    if job.type == KIND_NN:
        fields = nn_fields(job, chip, 0, 0, 0, 0, mesa_compat)
        return [f"NN {v}" for v in nn_table(chip).out_of_bounds(fields)]
    lut = 0 if job.tp_name in LUT_OPS else None
    bad: list[str] = []
    for words in tp_descriptors(job, chip.tp_core_count, 0, 0, lut, mesa_compat, in_planar=job.in_planar):
        values = {f.name: TP.get(words, f.name) for f in TP.ranged()}
        bad += [f"TP {job.tp_name} {v}" for v in TP.out_of_bounds(values) if f"TP {job.tp_name} {v}" not in bad]
    return bad


def _words(data: bytes, offset: int, n: int) -> list[int]:
    return [int.from_bytes(data[offset + 4 * i: offset + 4 * i + 4], "little") for i in range(n)]


def program_violations(program: Program, chip: Chip) -> list[str]:
    """Every rule a compiled program breaks, one message per descriptor and rule."""
    descs = program.buffer("descriptors").data or b""
    targets = {(r.buffer, r.offset): r.target for r in program.relocs}
    sizes = {b.name: -(-b.size // PAGE) * PAGE for b in program.buffers}
    table = nn_table(chip)
    bad: list[str] = []
    for j, rec in enumerate(program.operations):
        nn = rec.kind == "NN"
        offsets = rec.info.get("descriptors", [])
        assert isinstance(offsets, list)
        for off in offsets:
            words = _words(descs, off, NN_WORDS if nn else TP_WORDS)
            t = table if nn else TP
            values = {f.name: t.get(words, f.name) for f in t.ranged()}
            bad += [f"job {j} ({rec.kind}): {v}" for v in t.out_of_bounds(values)]
            if nn:
                bad += _nn_extent(j, words, table, targets.get(("descriptors", off + 4 * NN_WORD_IN)), sizes)
    return bad


def _nn_extent(j: int, words: list[int], table: DescTable, target: str | None, sizes: dict[str, int]) -> list[str]:
    """The bytes an NN job reads: kernel_z_size planes of in_image_x/y_stride, the last one up to its size
    (the simulator's input span, docs/hardware/etnaviv-sim.md)."""
    g = table.get
    xs, ys = g(words, "in_image_x_stride"), g(words, "in_image_y_stride")
    span = (g(words, "kernel_z_size") - 1) * xs * ys + (g(words, "in_image_y_size") - 1) * xs + g(words,
                                                                                                  "in_image_x_size")
    start = g(words, "in_image_address")
    if target is None or start + span > sizes.get(target, 0):
        return [f"job {j} (NN): input {target}+{start}..+{span} is not inside one buffer"]
    return []


def check_program(program: Program, chip: Chip) -> None:
    bad = program_violations(program, chip)
    if bad:
        raise ProgramCheckError("program check: " + "; ".join(bad[:4]) + (f" (+{len(bad) - 4} more)"
                                                                          if len(bad) > 4 else ""))


__all__ = ["ProgramCheckError", "check_program", "job_violations", "program_violations"]
