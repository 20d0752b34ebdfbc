"""Lowered etnaviv jobs -> teflon.program.Program: one command stream that kicks every job of the partition.

Buffers:
- `t<index>` per tensor group: a tensor on its own, or the two inputs of an ADD/SUB back to back (the NN job reads
  them as one input, etnaviv.md §1.3); internal tensors (transposes, reshuffles, planar outputs) likewise.
- `job<j>.coefficients` per NN job (64-byte aligned: the descriptor holds its address >> 6), `job<j>.lut` per
  PWL job (1024 u32), `descriptors` (every NN/TP descriptor, each 256-byte aligned: rnndb asks NN_INST_ADDR to
  be), `cmdstream` (the task: etnaviv.md §7.3).
Address words are relocations with the target buffer's offset already in the field: NN words 5 (26 bits, >> 6),
6, 7; TP words 10, 13 and 11 (the LUT); the command stream's *_INST_ADDR values (which hold the tag).

Device layouts: every partition input is NHWC bytes in its buffer (the lowering transposes it); an output is NHWC
unless the lowering left it planar (then channel planes of H*W bytes). Bytes are uint8; int8 tensors are stored
+128 (xor 0x80, etnaviv.md §0).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..program import LAYOUT_NC1HWC2, Buffer, IOBinding, Job, OpRecord, Program, Reloc, Task
from . import cmdstream, coefs_v7, coefs_v8
from .chips import Chip
from .coefs_common import CoefJob
from .lower import Lowered, write_extent
from .nn import nn_descriptor, nn_geometry
from .ops import KIND_NN, EtnaOp
from .pwl import pwl_lut
from .tp import tp_descriptors

DESC_ALIGN = 256  # rnndb: NN_INST_ADDR must be aligned to 0x100
COEF_SHIFT = 6  # kernel_address holds the coefficient address >> 6 in bits 0..25 (etnaviv.md §2.1 word 5)
KERNEL_ADDRESS_BITS = 26
NN_WORD_KERNEL, NN_WORD_IN, NN_WORD_OUT = 5, 6, 7
TP_WORD_IN, TP_WORD_LUT, TP_WORD_OUT = 10, 11, 13
LUT_BYTES = 4 * 1024
TENSOR_ALIGN = 64


def _align(x: int, a: int) -> int:
    return -(-x // a) * a


@dataclass
class Placement:
    """Where every tensor of the partition lives: tensor -> (buffer name, byte offset); buffer sizes."""

    where: dict[int, tuple[str, int]] = field(default_factory=dict)
    sizes: dict[str, int] = field(default_factory=dict)

    def place(self, tensors: list[tuple[int, int]]) -> None:
        """Put tensors (index, bytes) back to back in one new buffer, unless placed already."""
        if all(t in self.where for t, _ in tensors):
            return
        if any(t in self.where for t, _ in tensors):
            raise ValueError(f"tensors {[t for t, _ in tensors]}: an ADD operand is already placed elsewhere")
        name, off = f"t{tensors[0][0]}", 0
        for t, size in tensors:
            self.where[t] = (name, off)
            off += size
        self.sizes[name] = off

    def grow(self, t: int, nbytes: int) -> None:
        """Make room for `nbytes` from the tensor's offset (writes past a tensor's end, e.g. v7 phantom kernels)."""
        name, off = self.where[t]
        self.sizes[name] = max(self.sizes[name], off + nbytes)


def place_tensors(jobs: list[EtnaOp], chip: Chip, aliases: dict[int, tuple[int, int]] | None = None,
                  held: dict[int, int] | None = None) -> Placement:
    """Every tensor's buffer and offset. `aliases`: views (tensor -> (holder, byte offset), lower.py), placed
    inside their holder's buffer; `held`: each holder's size."""
    aliases, held = aliases or {}, held or {}
    p = Placement()
    # ADD/SUB operands first: the second right after the first in one buffer; the lowering made these pairs chains
    # (no tensor has two successors or two predecessors, no cycle), each placed in one buffer
    after: dict[int, tuple[int, int]] = {}
    sizes: dict[int, int] = {}
    for j in jobs:
        if j.input_count == 2 and j.input_tensor not in aliases:  # two views back to back in a holder: in place
            if after.get(j.input_tensor, (j.input_tensor_1, 0))[0] != j.input_tensor_1:
                raise ValueError(f"tensor {j.input_tensor} is the first operand of adds with different partners")
            after[j.input_tensor] = (j.input_tensor_1, j.input_tensor_sizes[1])
            sizes[j.input_tensor] = j.input_tensor_sizes[0]
    seconds = {b for b, _ in after.values()}
    for head in [t for t in after if t not in seconds]:
        chain, t = [(head, sizes[head])], head
        while t in after:
            t, size = after[t]
            chain.append((t, size))
        p.place(chain)
    if any(t not in p.where for t in after):
        raise ValueError("the add operand pairs form a cycle")
    for j in jobs:
        for t, size in ((j.input_tensor, j.input_tensor_sizes[0]), (j.output_tensor, j.output_tensor_size)):
            if t not in aliases:
                p.place([(t, size)])
    _place_views(p, aliases, held)
    for j in jobs:
        if j.input_count == 2 and j.input_tensor in aliases:
            (na, oa), (nb, ob) = p.where[j.input_tensor], p.where[j.input_tensor_1]
            if (na, oa + j.input_tensor_sizes[0]) != (nb, ob):
                raise ValueError(f"add operands {j.input_tensor}, {j.input_tensor_1} are views not back to back")
    for j in jobs:
        if j.type == KIND_NN and chip.version == 7:
            # v7 streams give every core ceil(OC / cores) kernels: the phantom ones past OC write their
            # (zero-weight) planes after the job's channels (lower.write_extent); a job of a channel group writes
            # from its offset (the next group's job, later, overwrites what lands there)
            p.grow(j.output_tensor, write_extent(j, chip))
    return p


def _place_views(p: Placement, aliases: dict[int, tuple[int, int]], held: dict[int, int]) -> None:
    """Views at their holder's place plus their offset (a holder no job names gets a buffer of its own)."""
    def root(t: int) -> tuple[int, int]:
        off = 0
        while t in aliases:
            t, o = aliases[t]
            off += o
        return t, off

    for h, size in held.items():
        r, off = root(h)
        if r not in p.where:
            p.place([(r, held.get(r, size))])
        p.grow(r, off + size)
    for t in aliases:
        r, off = root(t)
        name, base = p.where[r]
        p.where[t] = (name, base + off)


def coefficients(op: EtnaOp, chip: Chip, mesa_compat: bool) -> tuple[bytes, int]:
    """(coefficient buffer, the cache size the descriptor's SRAM fields count)."""
    geo = nn_geometry(op, chip, mesa_compat)
    job = CoefJob.from_lowered(op, geo.tiling.superblocks)
    assert op.weights is not None and op.bias is not None
    if chip.version == 7:
        buf = coefs_v7.encode(op.weights, op.bias, job, nn_core_count=chip.nn_core_count,
                              nn_zrl_bits=chip.nn_zrl_bits, block=op.weights_block, first=op.weights_first)
        return buf, coefs_v7.cache_size(buf, nn_core_count=chip.nn_core_count)
    smap = None if mesa_compat else coefs_v8.coded_symbol_map(op.weights, job)
    buf = coefs_v8.encode(op.weights, op.bias, job, nn_core_count=chip.nn_core_count, symbol_map=smap)
    return buf, len(buf)


@dataclass
class _Builder:
    prog: Program
    chip: Chip
    mesa_compat: bool
    placement: Placement
    descriptors: list[list[int]] = field(default_factory=list)
    desc_relocs: list[tuple[int, int, str, int]] = field(default_factory=list)  # (descriptor, word, target, kind)

    def addr(self, t: int) -> int:
        return self.placement.where[t][1]

    def buf(self, t: int) -> str:
        return self.placement.where[t][0]

    def descriptor(self, words: list[int], relocs: list[tuple[int, str, int]]) -> int:
        self.descriptors.append(words)
        d = len(self.descriptors) - 1
        self.desc_relocs += [(d, w, target, shift) for w, target, shift in relocs]
        return d

    def nn(self, j: int, op: EtnaOp) -> tuple[list[int], dict[str, object]]:
        coefs, cache = coefficients(op, self.chip, self.mesa_compat)
        name = f"job{j}.coefficients"
        self.prog.add_buffer(Buffer(name, _align(len(coefs), 64), coefs))
        words = nn_descriptor(op, self.chip, cache, 0, self.addr(op.input_tensor) + op.input_offset,
                              self.addr(op.output_tensor) + op.output_offset, self.mesa_compat)
        d = self.descriptor(words, [(NN_WORD_KERNEL, name, COEF_SHIFT), (NN_WORD_IN, self.buf(op.input_tensor), 0),
                                    (NN_WORD_OUT, self.buf(op.output_tensor), 0)])
        return [d], {"coefficients": {"buffer": name, "offset": 0, "size": len(coefs)}}

    def tp(self, j: int, op: EtnaOp) -> tuple[list[int], dict[str, object]]:
        lut = pwl_lut(op, self.mesa_compat)
        info: dict[str, object] = {}
        relocs = [(TP_WORD_IN, self.buf(op.input_tensor), 0), (TP_WORD_OUT, self.buf(op.output_tensor), 0)]
        if lut is not None:
            name = f"job{j}.lut"
            self.prog.add_buffer(Buffer(name, LUT_BYTES, np.asarray(lut, "<u4").tobytes()))
            relocs.append((TP_WORD_LUT, name, 0))
            info["lut"] = {"buffer": name, "offset": 0}
        descs = tp_descriptors(op, self.chip.tp_core_count, self.addr(op.input_tensor), self.addr(op.output_tensor),
                               0 if lut is not None else None, self.mesa_compat, in_planar=op.in_planar)
        return [self.descriptor(w, relocs) for w in descs], info


def compile_jobs(device: str, chip: Chip, lowered: Lowered, inputs: list[int], outputs: list[int],
                 graph_shapes: dict[int, tuple[int, int, int, str]], mesa_compat: bool = False) -> Program:
    """`graph_shapes`: (H, W, C, dtype) of every partition input and output tensor."""
    prog = Program(device=device)
    jobs = lowered.jobs
    placement = place_tensors(jobs, chip, lowered.aliases, lowered.held)
    for name, size in placement.sizes.items():
        prog.add_buffer(Buffer(name, _align(max(size, 1), TENSOR_ALIGN), tensor=True))
    b = _Builder(prog, chip, mesa_compat, placement)
    stream = cmdstream.Stream()
    cmdstream.init(stream)
    stream.words += [0] * cmdstream.FILLER
    records = []
    for j, op in enumerate(jobs):
        descs, info = b.nn(j, op) if op.type == KIND_NN else b.tp(j, op)
        if op.type == KIND_NN:
            cmdstream.nn_job(stream, descs[0])
        else:
            cmdstream.tp_job(stream, descs, op.tp_name or "")
        records.append((op, descs, info))
    cmdstream.close(stream)

    # descriptors, each 256-byte aligned in one buffer, and their relocations
    offsets = [i * DESC_ALIGN for i in range(len(b.descriptors))]
    blob = bytearray(DESC_ALIGN * len(b.descriptors))
    for off, words in zip(offsets, b.descriptors):
        blob[off:off + 4 * len(words)] = np.asarray(words, "<u4").tobytes()
    prog.add_buffer(Buffer("descriptors", max(len(blob), DESC_ALIGN), bytes(blob)))
    for d, word, target, shift in b.desc_relocs:
        width = KERNEL_ADDRESS_BITS if word == NN_WORD_KERNEL and shift else 32
        prog.relocs.append(Reloc("descriptors", offsets[d] + 4 * word, target, width=width, shift=shift))
    for word, d in stream.relocs:  # *_INST_ADDR: descriptor offset + tag
        stream.words[word] += offsets[d]
        prog.relocs.append(Reloc("cmdstream", 4 * word, "descriptors"))
    data = stream.bytes
    prog.add_buffer(Buffer("cmdstream", len(data), data))
    task = Task("cmdstream", 0, len(data))
    # The submit lists every BO the jobs touch (etnaviv.md §7.4): written tensors as outputs, the rest as inputs;
    # the stream itself goes to the kernel from user memory.
    written = {placement.where[op.output_tensor][0] for op in jobs}
    ins = [x.name for x in prog.buffers if x.name != "cmdstream" and x.name not in written]
    prog.jobs.append(Job([task], ins, sorted(written)))
    for op, descs, info in records:
        nodes: list[int] = []
        prog.operations.append(OpRecord(nodes, "NN" if op.type == KIND_NN else f"TP:{op.tp_name}", [task],
                                         {"descriptors": [offsets[d] for d in descs], **info,
                                          "input_tensor": op.input_tensor, "output_tensor": op.output_tensor}))
    _bind(prog, placement, lowered, inputs, outputs, graph_shapes)
    return prog


def _bind(prog: Program, placement: Placement, lowered: Lowered, inputs: list[int], outputs: list[int],
          shapes: dict[int, tuple[int, int, int, str]]) -> None:
    for direction, tensors in (("in", inputs), ("out", outputs)):
        for t in tensors:
            if t not in placement.where:
                if direction == "out":
                    raise ValueError(f"partition output {t} is not produced by an NPU job")
                continue  # an input no job reads
            name, off = placement.where[t]
            h, w, c, dtype = shapes[t]
            xor = 0x80 if dtype == "int8" else 0
            if direction == "out" and t in lowered.planar:  # channel planes of H*W bytes
                prog.io.append(IOBinding(t, direction, name, dtype, h, w, c, LAYOUT_NC1HWC2, 1, off, w, h * w, xor))
            else:  # NHWC: one "plane" of all C channels
                prog.io.append(IOBinding(t, direction, name, dtype, h, w, c, LAYOUT_NC1HWC2, c, off, w * c,
                                         h * w * c, xor))
