"""A compiled program: what the compiler hands back to the C delegate. Family-neutral.

Buffers (with optional initial bytes), relocations (a bit field inside a buffer gets another buffer's device
address added; never raw addresses), tasks (byte ranges of buffers that a family's driver submits: rocket's regcmd
streams, etnaviv's command streams), jobs (tasks + the buffers they read and write, as the kernel UAPIs take them)
and I/O bindings (which TFLite tensor lives in which buffer, in which device layout). Nothing here knows a
family: a rocket regcmd address is a relocation of a 32-bit field at bit 16 of a u64 word, an etnaviv coefficient
address one of a 26-bit field holding the address >> 6.

The binary form (`to_blob`) is parsed by delegate/program.c; its layout is specified in docs/architecture.md
("Program blob") and mirrored here by the struct formats below.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from teflon import targets

MAGIC = b"TFLP"
VERSION = 3

HEADER = struct.Struct("<4s11I")  # magic, version, target (blob id), nbuffers, nrelocs, ntasks, njobs, nbolist,
# nio, strings_offset, strings_size, data_offset
BUFFER = struct.Struct("<IIQQQ")  # name, flags, size, data_offset, data_size
RELOC = struct.Struct("<IIQBBBBI")  # buffer, target, offset, width, pos, shift, pad8, pad32
TASK = struct.Struct("<IIQ")  # buffer, bytes, offset
JOB = struct.Struct("<8I")  # first_task, ntasks, first_in, nin, first_out, nout, flags, pad
JOB_JOIN = 1  # Job.join
IO = struct.Struct("<iIIIIiiiIIiIQQQ")  # tensor, direction, buffer, layout, dtype, h, w, c, c2, xor,
# pad_value, host_order, offset, row_pitch, plane_pitch

BUF_HAS_DATA = 1
BUF_TENSOR = 2

LAYOUT_NC1HWC2 = 0  # channel groups of c2 as planes; pixel-major inside a plane
LAYOUT_ROWS = 1  # single channel, raw bytes row by row (rows padded to row_pitch)
HOST_NHWC = 0  # the TFLite tensor's bytes in (y, x, c) order
HOST_NCHW = 1  # ... in (c, y, x) order: an NCHW tensor whose device copy is its NHWC twin (teflon.nchw_islands)

TFLITE_DTYPE = {"uint8": 3, "int8": 9}


def reloc_fields(r: Reloc) -> tuple[int, int, int, int]:
    """(container bits, value bit position, value width, address shift) of a relocation."""
    return (r.container, r.pos, r.width, r.shift)


@dataclass(frozen=True)
class PatchedField:
    """A relocated field as a tool shows it: bits [pos, pos + width) of its word hold `offset` (in bytes) inside
    `target`; the runner adds the target's device address."""

    pos: int
    width: int
    target: str
    offset: int

    def __str__(self) -> str:
        return f"<{self.target}>+0x{self.offset:x}"


@dataclass
class Buffer:
    name: str
    size: int
    data: bytes | bytearray | None = None  # initial contents (weights, biases, regcmds); None = zero-filled
    tensor: bool = False  # holds a feature map (I/O or intermediate)


@dataclass
class Reloc:
    """The `width`-bit field at bit `pos` of the little-endian word at `offset` in `buffer` gets
    (device address of `target`) >> `shift` added; the field already holds the offset inside `target` (in the
    same units). The word is a u32 when the field ends by bit 32, else a u64. The runner refuses a sum that does
    not fit the field and an address not aligned to 1 << shift."""

    buffer: str
    offset: int
    target: str
    width: int = 32
    pos: int = 0
    shift: int = 0

    @property
    def container(self) -> int:
        return 32 if self.pos + self.width <= 32 else 64


@dataclass
class Task:
    """A byte range of a buffer that the family's driver submits as one unit (a regcmd stream, a command
    stream)."""

    buffer: str
    offset: int
    nbytes: int


@dataclass
class Job:
    """Tasks run in order on one core, with the buffers they read and write. `join`: the job may run inside the
    same kernel job as the job submitted right before it on the same open file (the runner then submits them as one
    job with the union of their buffer lists; rocket: docs/hardware/rocket.md "Kernel jobs"). A job without it
    starts a kernel job of its own (Mesa's job per operation)."""

    tasks: list[Task]
    in_buffers: list[str]
    out_buffers: list[str]
    join: bool = False


@dataclass
class IOBinding:
    """How a TFLite tensor maps onto device memory.

    Device byte for element (y, x, c) with LAYOUT_NC1HWC2:
        offset + (c // c2) * plane_pitch + y * row_pitch + x * c2 + c % c2
    with LAYOUT_ROWS (c == 1): offset + y * row_pitch + x.
    Stored value = host value XOR `xor` (0x80 turns uint8 into the NPU's "minus 0x80" int8).
    Padding bytes (channels c..align(c, c2), row tails) get `pad_value` on input.
    The host tensor holds the elements in (y, x, c) order, or in (c, y, x) order with host_order HOST_NCHW
    (LAYOUT_NC1HWC2 only).
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
    host_order: int = HOST_NHWC


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
    # names of `buffers`, so that add_buffer's duplicate check is not quadratic in the buffer count
    _names: set[str] = field(default_factory=set, init=False, repr=False, compare=False)

    def buffer(self, name: str) -> Buffer:
        for b in self.buffers:
            if b.name == name:
                return b
        raise KeyError(name)

    def patched_fields(self, buffer: str, start: int, nbytes: int, word_bytes: int) -> dict[int, PatchedField]:
        """The relocated fields inside bytes [start, start + nbytes) of `buffer`, by index of the `word_bytes`
        word holding them: for tools that print a buffer's words (regcmd streams, descriptors)."""
        data = self.buffer(buffer).data or b""
        out = {}
        for r in self.relocs:
            if r.buffer != buffer or not start <= r.offset < start + nbytes:
                continue
            container, pos, width, shift = reloc_fields(r)
            word = int.from_bytes(data[r.offset:r.offset + container // 8], "little")
            value = (word >> pos) & ((1 << width) - 1)
            out[(r.offset - start) // word_bytes] = PatchedField(pos, width, r.target, value << shift)
        return out

    def add_buffer(self, buf: Buffer) -> Buffer:
        if len(self._names) != len(self.buffers):  # `buffers` was built or edited directly
            self._names = {b.name for b in self.buffers}
        if buf.name in self._names:
            raise ValueError(f"duplicate buffer {buf.name}")
        self.buffers.append(buf)
        self._names.add(buf.name)
        return buf

    # ---- binary form for delegate/program.c -------------------------------------------------
    def to_blob(self) -> bytes:
        return b"".join(self.blob_parts())

    def blob_parts(self) -> list[bytes]:
        """The blob as consecutive pieces (to_blob joins them): the tables, then each buffer's data and its padding
        as they are, so a caller can copy them straight into its own memory (bridge: the weight-sized data is
        copied once, not gathered into a Python bytes object first)."""
        index = {b.name: i for i, b in enumerate(self.buffers)}
        strings = bytearray()
        data: list[bytes] = []
        ndata = 0

        def string(s: str) -> int:
            off = len(strings)
            strings.extend(s.encode() + b"\0")
            return off

        buf_rows = []
        for b in self.buffers:
            flags = (BUF_HAS_DATA if b.data is not None else 0) | (BUF_TENSOR if b.tensor else 0)
            doff = ndata
            if b.data is not None:
                if len(b.data) > b.size:
                    raise ValueError(f"buffer {b.name}: {len(b.data)} bytes of data exceed size {b.size}")
                pad = b"\0" * (-len(b.data) % 8)
                data += (b.data, pad)
                ndata += len(b.data) + len(pad)
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
            job_rows.append(JOB.pack(first, len(j.tasks), fin, len(j.in_buffers), fout, len(j.out_buffers),
                                     JOB_JOIN if j.join else 0, 0))

        body = bytearray()
        body += b"".join(buf_rows)
        body += b"".join(RELOC.pack(index[r.buffer], index[r.target], r.offset, r.width, r.pos, r.shift, 0, 0)
                         for r in self.relocs)
        body += b"".join(TASK.pack(index[t.buffer], t.nbytes, t.offset) for t in tasks)
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
                io.host_order,
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
            targets.get(self.device).blob_id,
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
        return [header, bytes(body), tail, *data]
