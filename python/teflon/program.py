"""A compiled program: what the compiler hands back to the C delegate.

Buffers (with optional initial bytes), relocations (buffer + offset -> another buffer's device
address; never raw addresses), tasks (regcmd streams inside buffers), jobs (tasks + the buffers
they read and write, as the kernel UAPI takes them) and I/O bindings (which TFLite tensor lives
in which buffer, in which device layout).

The binary form (`to_blob`) is parsed by delegate/program.c; its layout is specified in
docs/architecture.md ("Program blob") and mirrored here by the struct formats below.
"""

from __future__ import annotations

import base64
import struct
from dataclasses import dataclass, field

MAGIC = b"TFLP"
VERSION = 1
SOC_IDS = {"rk3588": 1, "rk3576": 2, "a311d": 3, "imx8mp": 4}

HEADER = struct.Struct("<4s11I")  # magic, version, soc, nbuffers, nrelocs, ntasks, njobs, nbolist, nio,
# strings_offset, strings_size, data_offset
BUFFER = struct.Struct("<IIQQQ")  # name, flags, size, data_offset, data_size
RELOC = struct.Struct("<IIQII")  # buffer, kind, offset, target, pad
TASK = struct.Struct("<IIQ")  # buffer, count, offset
JOB = struct.Struct("<6I")  # first_task, ntasks, first_in, nin, first_out, nout
IO = struct.Struct("<iIIIIiiiIIiIQQQ")  # tensor, direction, buffer, layout, dtype, h, w, c, c2, xor,
# pad_value, pad, offset, row_pitch, plane_pitch

BUF_HAS_DATA = 1
BUF_TENSOR = 2

RELOC_REGCMD = 0  # u64 regcmd word: value field (bits 16..47) += device address of target
RELOC_U32 = 1  # u32 += device address of target

LAYOUT_NC1HWC2 = 0  # channel groups of c2 as planes; pixel-major inside a plane
LAYOUT_ROWS = 1  # single channel, raw bytes row by row (rows padded to row_pitch)

def reloc_fields(r: "Reloc") -> tuple[int, int, int, int]:
    """(container bits, value bit position, value width, address shift) of a relocation."""
    return (64, 16, 32, 0) if r.kind == RELOC_REGCMD else (32, 0, 32, 0)


TFLITE_DTYPE = {"uint8": 3, "int8": 9}


@dataclass
class Buffer:
    name: str
    size: int
    data: bytes | None = None  # initial contents (weights, biases, regcmds); None = zero-filled
    tensor: bool = False  # holds a feature map (I/O or intermediate)


@dataclass
class Reloc:
    buffer: str
    offset: int  # byte offset of the word/u32 inside `buffer`
    target: str  # buffer whose device address is added
    kind: int = RELOC_REGCMD


@dataclass
class Task:
    buffer: str  # regcmd buffer
    offset: int  # byte offset of the first word
    count: int  # number of 64-bit words

    @property
    def nbytes(self) -> int:
        return 8 * self.count


@dataclass
class Job:
    tasks: list[Task]
    in_buffers: list[str]
    out_buffers: list[str]


@dataclass
class IOBinding:
    """How a TFLite tensor maps onto device memory.

    Device byte for element (y, x, c) with LAYOUT_NC1HWC2:
        offset + (c // c2) * plane_pitch + y * row_pitch + x * c2 + c % c2
    with LAYOUT_ROWS (c == 1): offset + y * row_pitch + x.
    Stored value = host value XOR `xor` (0x80 turns uint8 into the NPU's "minus 0x80" int8).
    Padding bytes (channels c..align(c, c2), row tails) get `pad_value` on input.
    """

    tensor: int
    direction: str  # "in" or "out"
    buffer: str
    dtype: str  # "uint8" or "int8"
    h: int
    w: int
    c: int
    layout: int = LAYOUT_NC1HWC2
    c2: int = 16
    offset: int = 0
    row_pitch: int = 0
    plane_pitch: int = 0
    xor: int = 0
    pad_value: int = 0


@dataclass
class OpRecord:
    """Per-operation view of the program, for tools (regcmd dump, inspect, bench)."""

    nodes: list[int]
    kind: str
    tasks: list[Task]
    info: dict[str, object] = field(default_factory=dict)


@dataclass
class Program:
    device: str
    buffers: list[Buffer] = field(default_factory=list)
    relocs: list[Reloc] = field(default_factory=list)
    jobs: list[Job] = field(default_factory=list)
    io: list[IOBinding] = field(default_factory=list)
    operations: list[OpRecord] = field(default_factory=list)

    def buffer(self, name: str) -> Buffer:
        for b in self.buffers:
            if b.name == name:
                return b
        raise KeyError(name)

    def add_buffer(self, buf: Buffer) -> Buffer:
        if any(b.name == buf.name for b in self.buffers):
            raise ValueError(f"duplicate buffer {buf.name}")
        self.buffers.append(buf)
        return buf

    # ---- binary form for delegate/program.c -------------------------------------------------
    def to_blob(self) -> bytes:
        index = {b.name: i for i, b in enumerate(self.buffers)}
        strings = bytearray()
        data = bytearray()

        def string(s: str) -> int:
            off = len(strings)
            strings.extend(s.encode() + b"\0")
            return off

        buf_rows = []
        for b in self.buffers:
            flags = (BUF_HAS_DATA if b.data is not None else 0) | (BUF_TENSOR if b.tensor else 0)
            doff = len(data)
            if b.data is not None:
                if len(b.data) > b.size:
                    raise ValueError(f"buffer {b.name}: {len(b.data)} bytes of data exceed size {b.size}")
                data.extend(b.data)
                data.extend(b"\0" * (-len(data) % 8))
            buf_rows.append(BUFFER.pack(string(b.name), flags, b.size, doff, len(b.data or b"")))

        tasks: list[Task] = []
        job_rows = []
        bolist: list[int] = []
        for j in self.jobs:
            first = len(tasks)
            tasks.extend(j.tasks)
            fin = len(bolist)
            bolist.extend(index[n] for n in j.in_buffers)
            fout = len(bolist)
            bolist.extend(index[n] for n in j.out_buffers)
            job_rows.append(JOB.pack(first, len(j.tasks), fin, len(j.in_buffers), fout, len(j.out_buffers)))

        body = bytearray()
        body += b"".join(buf_rows)
        body += b"".join(RELOC.pack(index[r.buffer], r.kind, r.offset, index[r.target], 0) for r in self.relocs)
        body += b"".join(TASK.pack(index[t.buffer], t.count, t.offset) for t in tasks)
        body += b"".join(job_rows)
        body += struct.pack(f"<{len(bolist)}I", *bolist)
        body += b"".join(
            IO.pack(
                io.tensor,
                0 if io.direction == "in" else 1,
                index[io.buffer],
                io.layout,
                TFLITE_DTYPE[io.dtype],
                io.h,
                io.w,
                io.c,
                io.c2,
                io.xor,
                io.pad_value,
                0,
                io.offset,
                io.row_pitch,
                io.plane_pitch,
            )
            for io in self.io
        )
        strings_offset = HEADER.size + len(body)
        tail = bytes(strings) + b"\0" * (-(strings_offset + len(strings)) % 8)
        data_offset = strings_offset + len(tail)
        header = HEADER.pack(
            MAGIC,
            VERSION,
            SOC_IDS[self.device],
            len(self.buffers),
            len(self.relocs),
            len(tasks),
            len(self.jobs),
            len(bolist),
            len(self.io),
            strings_offset,
            len(strings),
            data_offset,
        )
        return header + bytes(body) + tail + bytes(data)

    # ---- JSON form for `python -m teflon regcmd --json` --------------------------------------
    def to_json(self) -> dict[str, object]:
        ops = []
        for op in self.operations:
            tasks = []
            for t in op.tasks:
                buf = self.buffer(t.buffer)
                assert buf.data is not None
                words = struct.unpack_from(f"<{t.count}Q", buf.data, t.offset)
                relocs = [
                    {"index": (r.offset - t.offset) // 8, "buffer": r.target, "offset": (words[(r.offset - t.offset) // 8] >> 16) & 0xFFFFFFFF}
                    for r in self.relocs
                    if r.buffer == t.buffer and r.kind == RELOC_REGCMD and t.offset <= r.offset < t.offset + 8 * t.count
                ]
                tasks.append({"regcmd": [f"0x{w:016x}" for w in words], "relocs": relocs})
            ops.append({"nodes": op.nodes, "kind": op.kind, "tasks": tasks, **{k: v for k, v in op.info.items()}})
        return {
            "device": self.device,
            "operations": ops,
            "buffers": {b.name: base64.b64encode(b.data or b"").decode() for b in self.buffers if not b.tensor},
        }
