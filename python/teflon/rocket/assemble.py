"""Rocket operations -> teflon.program.Program: the pieces both generations' encoders share.

Buffers: `t<index>` per feature-map tensor, and per operation k `op<k>.weights`, `op<k>.bias` (the bias or
coefficient table), `op<k>.regcmd` (its task streams). Address registers are relocations of the 32-bit value
field at bit 16 of their u64 regcmd word (rocket.md §2.1). Feature maps are NC1HWC2 with C2 = 16 (rocket.md
§3.1); uint8 tensors are stored minus 0x80 (== xor 0x80), int8 as they are.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..hw.regmap import WORD_VALUE_SHIFT
from ..program import LAYOUT_NC1HWC2, Buffer, IOBinding, Job, OpRecord, Program, Reloc, Task
from .geometry import FEATURE_ATOM
from .lower import RocketConv
from .stream import ROLE_BIAS, ROLE_EW, ROLE_INPUT, ROLE_OUTPUT, ROLE_REGCMD, ROLE_WEIGHTS, EncodeError, Stream


@dataclass(frozen=True)
class TensorInfo:
    h: int
    w: int
    c: int
    dtype: str


def tensors(convs: list[RocketConv]) -> dict[int, TensorInfo]:
    """Every feature map the operations read or write, in first-use order (input, output, element-wise operand)."""
    out: dict[int, TensorInfo] = {}
    for c in convs:
        out.setdefault(c.input_tensor, TensorInfo(c.in_h, c.in_w, c.in_c, c.dtype))
        out.setdefault(c.output_tensor, TensorInfo(c.out_h, c.out_w, c.out_c, c.dtype))
        if c.ew is not None:
            out.setdefault(c.ew.tensor, TensorInfo(c.out_h, c.out_w, c.out_c, c.dtype))
    return out


def reader_zero_points(convs: list[RocketConv]) -> dict[int, int]:
    """Stored zero point of every tensor an operation reads (its first reader's): the input padding value."""
    zps: dict[int, int] = {}
    for c in convs:
        zps.setdefault(c.input_tensor, c.in_zp)
        if c.ew is not None:
            zps.setdefault(c.ew.tensor, c.ew.zp)
    return zps


def xor(dtype: str) -> int:
    """Host -> stored byte: uint8 is stored minus 0x80 (== xor 0x80), int8 as is."""
    return 0x80 if dtype == "uint8" else 0


def buffer_names(k: int, c: RocketConv) -> dict[str, str]:
    """Relocation role -> buffer name for operation k."""
    names = {
        ROLE_INPUT: f"t{c.input_tensor}",
        ROLE_OUTPUT: f"t{c.output_tensor}",
        ROLE_WEIGHTS: f"op{k}.weights",
        ROLE_BIAS: f"op{k}.bias",
        ROLE_REGCMD: f"op{k}.regcmd",
    }
    if c.ew is not None:
        names[ROLE_EW] = f"t{c.ew.tensor}"
    return names


def regcmd_reloc(buffer: str, offset: int, target: str) -> Reloc:
    """The address register in the u64 regcmd word at `offset`: its 32-bit value field (bit 16) gets the
    target's device address added."""
    return Reloc(buffer, offset, target, width=32, pos=WORD_VALUE_SHIFT)


def add_tasks(prog: Program, names: dict[str, str], streams: list[Stream], offsets: list[int]) -> list[Task]:
    """Tasks of one operation's streams (in `names[ROLE_REGCMD]` at `offsets`) and their relocations."""
    tasks = []
    for s, off in zip(streams, offsets):
        tasks.append(Task(names[ROLE_REGCMD], off, 8 * len(s.words)))
        for idx, role in s.relocs:
            prog.relocs.append(regcmd_reloc(names[ROLE_REGCMD], off + 8 * idx, names[role]))
    return tasks


def add_operation(prog: Program, names: dict[str, str], weights: tuple[int, bytes], bias: bytes, regcmd: bytes,
                  streams: list[Stream], offsets: list[int], one_job: bool, record: OpRecord) -> None:
    """Buffers, tasks and jobs of one operation: all tasks in one job, or one job per task. `weights` is
    (allocation size, packed bytes)."""
    prog.add_buffer(Buffer(names[ROLE_WEIGHTS], weights[0], weights[1]))
    prog.add_buffer(Buffer(names[ROLE_BIAS], len(bias), bias))
    prog.add_buffer(Buffer(names[ROLE_REGCMD], len(regcmd), regcmd))
    tasks = add_tasks(prog, names, streams, offsets)
    ins, outs = [names[ROLE_INPUT]], [names[ROLE_OUTPUT]]
    if ROLE_EW in names and names[ROLE_EW] not in ins:  # a residual ADD may read the convolution's own input
        ins.append(names[ROLE_EW])
    if one_job:
        prog.jobs.append(Job(tasks, ins, outs))
    else:
        prog.jobs.extend(Job([t], ins, outs) for t in tasks)
    record.tasks = tasks
    prog.operations.append(record)


def nc1hwc2(t: int, direction: str, info: TensorInfo, plane_atoms: int, pad: int = 0) -> IOBinding:
    """The binding of a tensor in NC1HWC2 with `plane_atoms` 16-byte atoms per channel plane; inputs pad with
    `pad` (a stored byte)."""
    return IOBinding(t, direction, f"t{t}", info.dtype, info.h, info.w, info.c, LAYOUT_NC1HWC2, FEATURE_ATOM, 0,
                     info.w * FEATURE_ATOM, plane_atoms * FEATURE_ATOM, xor(info.dtype), pad)


def check_outputs(convs: list[RocketConv], outputs: list[int]) -> None:
    produced = {c.output_tensor for c in convs}
    for t in outputs:
        if t not in produced:
            raise EncodeError(f"partition output {t} is not produced by an NPU operation")


def op_kind(c: RocketConv) -> str:
    """The operation's label for tools: the convolution's builtin, "+ADD" / "+SUB" with a fused one."""
    return c.kind + ("" if c.ew is None else "+SUB" if c.ew.scale < 0 else "+ADD")
