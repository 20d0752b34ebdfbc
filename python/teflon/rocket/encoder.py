"""Rocket operations -> teflon.program.Program (buffers, relocations, jobs, I/O bindings).

Buffers: `t<index>` per feature-map tensor (sized W*H*ceil(C/16)*2*16, Mesa's 2x slack),
`op<k>.weights` (Mesa's allocation size, packed bytes as a prefix), `op<k>.bias` (int32 per real
output channel), `op<k>.regcmd` (the op's task streams, 64-byte aligned). Jobs follow Mesa: one job
with all tasks when the weights stay resident in CBUF, else one job per task.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from ..hw.regmap import RegMap, RegMapError
from ..program import (
    LAYOUT_NC1HWC2,
    LAYOUT_ROWS,
    RELOC_REGCMD,
    Buffer,
    IOBinding,
    Job,
    OpRecord,
    Program,
    Reloc,
    Task,
)
from . import coefs, weights
from .lower import RocketConv
from .regcmd import (
    ROLE_ADD,
    ROLE_BIAS,
    ROLE_INPUT,
    ROLE_OUTPUT,
    ROLE_REGCMD,
    ROLE_WEIGHTS,
    EncodeError,
    FusedAdd,
    OpParams,
    Stream,
    link,
    stream_bytes,
    task_stream,
)
from .split import FEATURE_ATOM, Geometry, Split, SplitError, split


@dataclass
class EncodedOp:
    conv: RocketConv
    params: OpParams
    streams: list[Stream]
    offsets: list[int]  # byte offset of each task's stream in the regcmd buffer
    weights: bytes
    weights_alloc: int
    bias: bytes

    @property
    def split(self) -> Split:
        return self.params.split

    def regcmd_bytes(self) -> bytes:
        out = bytearray(sum(stream_bytes(len(s.words)) for s in self.streams))
        for s, off in zip(self.streams, self.offsets):
            struct.pack_into(f"<{len(s.words)}Q", out, off, *s.words)
        return bytes(out)


def geometry(c: RocketConv) -> Geometry:
    return Geometry(c.in_h, c.in_w, c.in_c, c.out_h, c.out_w, c.out_c, c.kh, c.kw, c.stride,
                    c.pad_top, c.pad_bottom, c.pad_left, c.pad_right, c.depthwise)


def op_params(c: RocketConv, mesa_compat: bool = False) -> OpParams:
    """Everything but the weight bytes: split, truncate bits, requant. Raises EncodeError.

    mesa_compat: round the requant scale as Mesa does (byte-equal streams, see coefs.out_cvt)."""
    try:
        sp = split(geometry(c))
        trunc = coefs.truncate_bits(c.w_scale, c.weights, c.depthwise)
        scale, shift = coefs.out_cvt(c.in_scale, c.w_scale, c.out_scale, trunc, mesa_rounding=mesa_compat)
        add = None
        if c.add is not None:
            ew_scale, ew_shift = coefs.ew_cvt(c.add.scale, c.in_scale, c.w_scale)
            # the operand joins the accumulator after CLIP_TRUNCATE: scale it down alike [INFERRED]
            add = FusedAdd(-c.add.zp, ew_scale, ew_shift + trunc)
    except (SplitError, ValueError) as e:
        raise EncodeError(str(e)) from e
    return OpParams(c, sp, trunc, scale, shift, add)


def build_streams(rm: RegMap, p: OpParams) -> tuple[list[Stream], list[int]]:
    try:
        streams = [task_stream(rm, p, t) for t in p.split.tasks]
        offsets = link(rm, streams)
    except RegMapError as e:
        raise EncodeError(f"register limit: {e}") from e
    return streams, offsets


def encode_op(rm: RegMap, c: RocketConv, mesa_compat: bool = False) -> EncodedOp:
    p = op_params(c, mesa_compat)
    streams, offsets = build_streams(rm, p)
    packed = weights.pack(c.weights, c.w_zp, c.depthwise)
    bias = coefs.bias_table(c.bias, c.weights_q, c.w_zp_q, c.in_zp, c.depthwise, p.truncate_bits)
    alloc = weights.alloc_size(c.kh, c.kw, c.in_c, c.out_c, c.depthwise)
    return EncodedOp(c, p, streams, offsets, packed, alloc, bias.tobytes())


def add_tasks(prog: Program, names: dict[str, str], streams: list[Stream], offsets: list[int]) -> list[Task]:
    """Tasks of one operation's streams (in `names[ROLE_REGCMD]` at `offsets`) and their relocations,
    address roles resolved to buffer names through `names`."""
    tasks = []
    for s, off in zip(streams, offsets):
        tasks.append(Task(names[ROLE_REGCMD], off, len(s.words)))
        for idx, role in s.relocs:
            prog.relocs.append(Reloc(names[ROLE_REGCMD], off + 8 * idx, names[role], RELOC_REGCMD))
    return tasks


def tensor_bytes(h: int, w: int, c: int) -> int:
    return w * h * -(-c // FEATURE_ATOM) * 2 * FEATURE_ATOM


def _xor(dtype: str) -> int:
    """Host -> stored byte: uint8 is stored minus 0x80 (== xor 0x80), int8 as is."""
    return 0x80 if dtype == "uint8" else 0


def compile_ops(rm: RegMap, device: str, convs: list[RocketConv], inputs: list[int], outputs: list[int],
                mesa_compat: bool = False) -> Program:
    prog = Program(device=device)
    produced = {c.output_tensor for c in convs}
    shapes: dict[int, tuple[int, int, int, str]] = {}
    in_zp: dict[int, int] = {}  # stored zero point of every tensor an op reads
    for c in convs:
        shapes.setdefault(c.input_tensor, (c.in_h, c.in_w, c.in_c, c.dtype))
        shapes.setdefault(c.output_tensor, (c.out_h, c.out_w, c.out_c, c.dtype))
        in_zp.setdefault(c.input_tensor, c.in_zp)
        if c.add is not None:
            shapes.setdefault(c.add.tensor, (c.out_h, c.out_w, c.out_c, c.dtype))
            in_zp.setdefault(c.add.tensor, c.add.zp)
    rows_inputs = {c.input_tensor for c in convs if c.single_channel_input}
    for t in rows_inputs & produced:
        raise EncodeError(f"tensor {t}: single-channel input produced on the NPU (needs the raw rows layout)")

    for t, (h, w, ch, _) in shapes.items():
        prog.add_buffer(Buffer(f"t{t}", tensor_bytes(h, w, ch), tensor=True))

    for k, c in enumerate(convs):
        enc = encode_op(rm, c, mesa_compat)
        prefix = f"op{k}"
        names = {
            ROLE_ADD: f"t{c.add.tensor}" if c.add is not None else "",
            ROLE_INPUT: f"t{c.input_tensor}",
            ROLE_OUTPUT: f"t{c.output_tensor}",
            ROLE_WEIGHTS: f"{prefix}.weights",
            ROLE_BIAS: f"{prefix}.bias",
            ROLE_REGCMD: f"{prefix}.regcmd",
        }
        regcmd = enc.regcmd_bytes()
        prog.add_buffer(Buffer(names[ROLE_WEIGHTS], enc.weights_alloc, enc.weights))
        prog.add_buffer(Buffer(names[ROLE_BIAS], len(enc.bias), enc.bias))
        prog.add_buffer(Buffer(names[ROLE_REGCMD], len(regcmd), regcmd))
        tasks = add_tasks(prog, names, enc.streams, enc.offsets)
        ins, outs = [names[ROLE_INPUT]], [names[ROLE_OUTPUT]]
        if c.add is not None and names[ROLE_ADD] not in ins:
            ins.append(names[ROLE_ADD])
        if enc.split.reuse_weights:
            prog.jobs.append(Job(tasks, ins, outs))
        else:
            prog.jobs.extend(Job([t], ins, outs) for t in tasks)
        kind = c.kind + ("+ADD" if c.add is not None else "")
        prog.operations.append(OpRecord(c.all_nodes, kind, tasks, _op_info(enc)))

    for t in inputs:
        if t not in shapes:
            continue  # a partition input no NPU op reads (nothing to bind)
        h, w, ch, dtype = shapes[t]
        zp = in_zp[t]
        if t in rows_inputs:
            # Raw bytes; the CNA subtracts 128 itself (CVT offset), so store the unsigned form.
            pitch = max(w, FEATURE_ATOM)
            prog.io.append(IOBinding(t, "in", f"t{t}", dtype, h, w, ch, LAYOUT_ROWS, 1, 0, pitch, pitch * h,
                                     _xor(dtype) ^ 0x80, (zp + 128) & 0xFF))
        else:
            prog.io.append(IOBinding(t, "in", f"t{t}", dtype, h, w, ch, LAYOUT_NC1HWC2, FEATURE_ATOM, 0,
                                     w * FEATURE_ATOM, w * h * FEATURE_ATOM, _xor(dtype), zp & 0xFF))
    for t in outputs:
        if t not in produced:
            raise EncodeError(f"partition output {t} is not produced by an NPU operation")
        h, w, ch, dtype = shapes[t]
        prog.io.append(IOBinding(t, "out", f"t{t}", dtype, h, w, ch, LAYOUT_NC1HWC2, FEATURE_ATOM, 0,
                                 w * FEATURE_ATOM, w * h * FEATURE_ATOM, _xor(dtype), 0))
    return prog


def _op_info(enc: EncodedOp) -> dict[str, object]:
    c, p = enc.conv, enc.params
    return {
        "depthwise": c.depthwise,
        "reuse_weights": p.split.reuse_weights,
        "truncate_bits": p.truncate_bits,
        "out_cvt": [p.cvt_scale, p.cvt_shift],
        "add_tensor": c.add.tensor if c.add is not None else -1,
        "input_tensor": c.input_tensor,
        "output_tensor": c.output_tensor,
        "macs": int(c.out_h * c.out_w * c.kh * c.kw * (c.in_c if not c.depthwise else 1) * c.out_c),
        "split": [
            {
                "input_rows": [t.top, t.bottom],
                "input_offset": p.input_offset(t),
                "output_rows": t.out_rows,
                "output_offset": t.output_offset,
                "pads": {"top": t.pad_top, "bottom": t.pad_bottom, "left": t.pad_left, "right": t.pad_right},
                "banks": {"data": t.data_banks, "weights": t.weight_banks},
            }
            for t in p.split.tasks
        ],
    }

