"""Rocket operations -> teflon.program.Program: the pieces both generations' encoders share.

Buffers: `t<index>` per feature-map tensor, and per operation k `op<k>.weights`, `op<k>.bias` (the bias or
coefficient table; convolutions only), `op<k>.regcmd` (its task streams); `scratch` once per program with rk3576 LUT
operations (rk3576/lut.py). Address registers are relocations of the 32-bit value field at bit 16 of their u64 regcmd
word (rocket.md §2.1). Feature maps are NC1HWC2 with C2 = 16 (rocket.md
§3.1); uint8 tensors are stored minus 0x80 (== xor 0x80), int8 as they are.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ..hw.regmap import WORD_VALUE_SHIFT
from ..program import LAYOUT_NC1HWC2, Buffer, IOBinding, Job, OpRecord, Program, Reloc, Task
from .geometry import FEATURE_ATOM
from .operations import EwOperand, RocketConv, RocketPool, TensorInfo
from .stream import ROLE_BIAS, ROLE_EW, ROLE_INPUT, ROLE_OUTPUT, ROLE_REGCMD, ROLE_WEIGHTS, EncodeError, Stream

if TYPE_CHECKING:
    from .views import Views

RocketOp = RocketConv | RocketPool  # an operation that runs (lower_partition also returns views, views.py)


def ew_operand(c: RocketOp) -> EwOperand | None:
    """A convolution's fused ADD operand (pools have none)."""
    return c.ew if isinstance(c, RocketConv) else None


def tensors(convs: list[RocketOp]) -> dict[int, TensorInfo]:
    """Every feature map the operations read or write, in first-use order (input, output, element-wise operand)."""
    out: dict[int, TensorInfo] = {}
    for c in convs:
        out.setdefault(c.input_tensor, TensorInfo(c.in_h, c.in_w, c.in_c, c.dtype))
        out.setdefault(c.output_tensor, TensorInfo(c.out_h, c.out_w, c.out_c, c.dtype))
        ew = ew_operand(c)
        if ew is not None:
            out.setdefault(ew.tensor, TensorInfo(c.out_h, c.out_w, c.out_c, c.dtype))
    return out


def reader_zero_points(convs: list[RocketOp]) -> dict[int, int]:
    """Stored zero point of every tensor an operation reads (its first reader's): the input padding value."""
    zps: dict[int, int] = {}
    for c in convs:
        zps.setdefault(c.input_tensor, c.in_zp)
        ew = ew_operand(c)
        if ew is not None:
            zps.setdefault(ew.tensor, ew.zp)
    return zps


def xor(dtype: str) -> int:
    """Host -> stored byte: uint8 is stored minus 0x80 (== xor 0x80), int8 as is."""
    return 0x80 if dtype == "uint8" else 0


def buffer_names(k: int, c: RocketOp) -> dict[str, str]:
    """Relocation role -> buffer name for operation k."""
    names = {
        ROLE_INPUT: f"t{c.input_tensor}",
        ROLE_OUTPUT: f"t{c.output_tensor}",
        ROLE_WEIGHTS: f"op{k}.weights",
        ROLE_BIAS: f"op{k}.bias",
        ROLE_REGCMD: f"op{k}.regcmd",
    }
    ew = ew_operand(c)
    if ew is not None:
        names[ROLE_EW] = f"t{ew.tensor}"
    return names


def regcmd_reloc(buffer: str, offset: int, target: str) -> Reloc:
    """The address register in the u64 regcmd word at `offset`: its 32-bit value field (bit 16) gets the
    target's device address added."""
    return Reloc(buffer, offset, target, width=32, pos=WORD_VALUE_SHIFT)


def patch_addends(regcmd: bytes, streams: list[Stream], offsets: list[int], addends: dict[str, int]) -> bytes:
    """Add each role's byte offset to the value field of its address registers (a view inside its holder)."""
    if not addends:
        return regcmd
    out = bytearray(regcmd)
    for s, off in zip(streams, offsets):
        for idx, role in s.relocs:
            if role in addends:
                pos = off + 8 * idx
                word = int.from_bytes(out[pos:pos + 8], "little")
                value = ((word >> WORD_VALUE_SHIFT) + addends[role]) & 0xFFFFFFFF
                word = (word & ~(0xFFFFFFFF << WORD_VALUE_SHIFT)) | (value << WORD_VALUE_SHIFT)
                out[pos:pos + 8] = word.to_bytes(8, "little")
    return bytes(out)


def add_tasks(prog: Program, names: dict[str, str], streams: list[Stream], offsets: list[int]) -> list[Task]:
    """Tasks of one operation's streams (in `names[ROLE_REGCMD]` at `offsets`) and their relocations."""
    tasks = []
    for s, off in zip(streams, offsets):
        tasks.append(Task(names[ROLE_REGCMD], off, 8 * len(s.words)))
        for idx, role in s.relocs:
            prog.relocs.append(regcmd_reloc(names[ROLE_REGCMD], off + 8 * idx, names[role]))
    return tasks


def add_operation(prog: Program, names: dict[str, str], weights: tuple[int, bytes | bytearray] | None, bias: bytes | None,
                  regcmd: bytes, streams: list[Stream], offsets: list[int], one_job: bool, record: OpRecord,
                  also_written: tuple[str, ...] = ()) -> None:
    """Buffers, tasks and jobs of one operation: all tasks in one job, or one job per task. `weights` is
    (allocation size, packed bytes); an operation without weights or bias (a pool) passes None; `also_written`:
    buffers the job writes besides the output (the rk3576 LUT load's scratch, rk3576/lut.py)."""
    if weights is not None:
        prog.add_buffer(Buffer(names[ROLE_WEIGHTS], weights[0], weights[1]))
    if bias is not None:
        prog.add_buffer(Buffer(names[ROLE_BIAS], len(bias), bias))
    prog.add_buffer(Buffer(names[ROLE_REGCMD], len(regcmd), regcmd))
    tasks = add_tasks(prog, names, streams, offsets)
    outs = [names[ROLE_OUTPUT], *also_written]
    # a buffer read and written by the job (views of one buffer, views.py) is listed once, as written: the kernel
    # wants the lists disjoint, and a written BO is one the job may also read; a fused ADD's operand is read too
    # (a residual ADD may read the convolution's own input: listed once)
    ins = list(dict.fromkeys(b for b in (names[ROLE_INPUT], names.get(ROLE_EW)) if b and b not in outs))
    if one_job:
        prog.jobs.append(Job(tasks, ins, outs))
    else:
        prog.jobs.extend(Job([t], ins, outs) for t in tasks)
    record.tasks = tasks
    prog.operations.append(record)


def nc1hwc2(t: int, direction: str, info: TensorInfo, plane_atoms: int, pad: int = 0, buffer: int | None = None,
            offset: int = 0) -> IOBinding:
    """The binding of a tensor in NC1HWC2 with `plane_atoms` 16-byte atoms per channel plane; inputs pad with
    `pad` (a stored byte). A view (views.py) lives in `buffer` (its holder's) from byte `offset` on."""
    return IOBinding(t, direction, f"t{t if buffer is None else buffer}", info.dtype, info.h, info.w, info.c,
                     LAYOUT_NC1HWC2, FEATURE_ATOM, offset, info.w * FEATURE_ATOM, plane_atoms * FEATURE_ATOM,
                     xor(info.dtype), pad)


def buffers(ops: list[RocketOp], views: Views) -> dict[int, TensorInfo]:
    """Every tensor that gets a buffer, with its geometry: those the operations name that are not views, and the
    holders of views."""
    holders = views.holders()
    out: dict[int, TensorInfo] = {}
    for t, i in tensors(ops).items():  # in first-use order
        holder = views.place(t)[0]
        out.setdefault(holder, holders.get(holder, i))
    for t, i in holders.items():
        out.setdefault(t, i)
    return out


def placed(names: dict[str, str], views: Views, plane_bytes: Callable[[int], int]) -> tuple[dict[str, str],
                                                                                             dict[str, int]]:
    """Buffer names of an operation's roles with views resolved to their holders, and the byte offset to add to
    each address register of a role whose tensor is a view."""
    out: dict[str, str] = {}
    addends: dict[str, int] = {}
    for role, name in names.items():
        if name.startswith("t") and name[1:].isdigit():
            holder, plane = views.place(int(name[1:]))
            name = f"t{holder}"
            if plane:
                addends[role] = plane * plane_bytes(holder)
        out[role] = name
    return out, addends


def bind(t: int, direction: str, shapes: dict[int, TensorInfo], views: Views, plane_atoms: Callable[[int], int],
         pad: int = 0) -> IOBinding:
    """The host binding of tensor t, a view or a buffer of its own."""
    holder, plane = views.place(t)
    info = views.by_view[t].info if t in views.by_view else shapes[t]
    atoms = plane_atoms(holder)
    return nc1hwc2(t, direction, info, atoms, pad, holder, plane * atoms * FEATURE_ATOM)


def check_outputs(convs: list[RocketOp], outputs: list[int], views: Views | None = None) -> None:
    produced = {c.output_tensor for c in convs}
    if views is not None:  # a view of NPU work or the buffer of such views (views.claims)
        produced |= views.by_view.keys() | views.holders().keys()
    for t in outputs:
        if t not in produced:
            raise EncodeError(f"partition output {t} is not produced by an NPU operation")


def op_kind(c: RocketOp) -> str:
    """The operation's label for tools: the convolution's builtin, "+ADD" / "+SUB" with a fused one."""
    ew = ew_operand(c)
    return c.kind + ("" if ew is None else "+SUB" if ew.scale < 0 else "+ADD")
