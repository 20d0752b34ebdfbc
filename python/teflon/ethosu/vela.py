"""Vela's `ethos-u` custom operator run as it is (the passthrough): its command stream and read-only blob become a
one-task program.

A model compiled by Vela (ethos-u-vela) holds one CUSTOM op `ethos-u` per NPU subgraph; its inputs are, in order
(docs/hardware/ethosu-kernel.md "Vela passthrough"; read from Vela's output):

    0  ethos_u_command_stream  uint8, constant: the COP1 driver-action header, then the command words
    1  read_only               uint8, constant: encoded weights and scale records (the stream's region 0)
    2  scratch                 uint8 [arena bytes]: the arena (region 1), holding every feature map
    3  scratch_fast            uint8 [bytes]: the fast scratch (region 2: the NPU's SRAM on a U65)
    4.. the op's feature-map inputs; its outputs are the op's feature-map outputs

and the model's `OfflineMemoryAllocation` metadata gives each tensor's byte offset in the arena (int32 words:
version, subgraph, count, then one offset per tensor, -1 when the tensor is not in the arena). The program has one
job with one task (the teflon task header + the command words), the read-only blob, the arena and, when the stream
uses region 2 and the NPU's SRAM is too small for it, a BO for region 2; feature maps are bound at their arena
offsets in NHWC byte order.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import targets
from ..ir import OFFLINE_ALLOCATION, Graph, Operation
from ..program import LAYOUT_NC1HWC2, LAYOUT_ROWS, Buffer, IOBinding, Job, OpRecord, Program, Task
from . import VELA_KIND, cmdstream, task
from .regs import U65

KIND = VELA_KIND
FIXED_INPUTS = 4  # command stream, read-only, scratch, scratch_fast
IO_DTYPES = ("int8", "uint8")
# The regions Vela gives its tensors (Mesa uses the same roles): read-only 0, arena 1, fast scratch 2.
READ_ONLY_REGION, ARENA_REGION = 0, 1
MAX_DIM = 65536  # an I/O binding's height, width and channels at most (delegate/program.c)


@dataclass(frozen=True)
class Feature:
    """One input or output of Vela's custom op: tensor, direction and place in the arena."""

    tensor: int
    direction: str  # "in" / "out"
    offset: int  # byte offset in the arena
    shape: tuple[int, ...]
    dtype: str


@dataclass(frozen=True)
class VelaOp:
    """Vela's ethos-u custom op as read from the graph: its command words, register images, data and tensors."""

    node: int
    words: tuple[int, ...]  # the command words (COP1 header dropped)
    config_reg: int | None  # the NPU CONFIG / ID images the stream was compiled for
    id_reg: int | None
    read_only: bytes
    arena_size: int
    fast_size: int
    scratch: tuple[tuple[int, int], ...]  # (tensor, bytes) of the scratch tensors TFLite hands over as inputs
    io: tuple[Feature, ...]  # the feature maps the op reads and writes, in the arena


def offline_offsets(graph: Graph) -> np.ndarray | None:
    """The arena offset of each tensor (by index; -1: none) from the model's OfflineMemoryAllocation metadata."""
    raw = graph.metadata.get(OFFLINE_ALLOCATION)
    if raw is None or len(raw) < 12 or len(raw) % 4:
        return None
    words = np.frombuffer(raw, "<i4")
    count = int(words[2])
    return words[3:3 + count] if 0 <= count <= len(words) - 3 else None


def _bytes_of(graph: Graph, t: int) -> bytes | None:
    tensor = graph.tensors.get(t)
    if tensor is None or (tensor.data is None and int(np.prod(tensor.shape)) != 0):
        return None
    return b"" if tensor.data is None else np.ascontiguousarray(tensor.data).tobytes()


def _size(graph: Graph, t: int) -> int:
    return int(np.prod(graph.tensors[t].shape)) if t in graph.tensors else 0


def read(graph: Graph, op: Operation, spec: targets.Target) -> VelaOp:
    """The op as a VelaOp; ValueError with the reason teflon cannot run it."""
    if op.kind != KIND or len(op.inputs) < FIXED_INPUTS:
        raise ValueError(f"not a Vela {KIND} op with its {FIXED_INPUTS} fixed inputs")
    stream, ro = _bytes_of(graph, op.inputs[0]), _bytes_of(graph, op.inputs[1])
    if stream is None or ro is None:
        raise ValueError("the command stream or the read-only blob is not a constant tensor")
    try:
        payload = cmdstream.parse(stream)
    except cmdstream.StreamError as e:
        raise ValueError(f"the command stream: {e}") from None
    if payload.config_reg is not None and payload.config_reg != spec.params["config"]:
        raise ValueError(f"compiled for an NPU with CONFIG 0x{payload.config_reg:08x}, {spec.name} has "
                         f"0x{spec.params['config']:08x} (vela --accelerator-config ethos-u65-256)")
    offsets = offline_offsets(graph)
    if offsets is None:
        raise ValueError(f"the model has no {OFFLINE_ALLOCATION} metadata (where Vela put each tensor)")
    io = []
    for direction, tensors in (("in", op.inputs[FIXED_INPUTS:]), ("out", op.outputs)):
        for t in tensors:
            tensor = graph.tensors.get(t)
            if tensor is None or tensor.dtype not in IO_DTYPES:
                raise ValueError(f"tensor {t} is not int8 / uint8")
            if t >= len(offsets) or offsets[t] < 0:
                raise ValueError(f"tensor {t} has no arena offset in {OFFLINE_ALLOCATION}")
            io.append(Feature(t, direction, int(offsets[t]), tuple(tensor.shape), tensor.dtype))
    scratch = tuple((t, _size(graph, t)) for t in op.inputs[2:FIXED_INPUTS])
    return VelaOp(op.index, payload.words, payload.config_reg, payload.id_reg, ro, scratch[0][1], scratch[1][1],
                  scratch, tuple(io))


_IFM2_SCALAR = U65.value("NPU_SET_IFM2_BROADCAST", broadcast_scalar=1)


def regions_used(words: tuple[int, ...]) -> set[int]:
    """The regions the kernel's validator finds the stream touching (drivers/ethosu/ethosu_validate.c rules,
    docs/hardware/ethosu-kernel.md "Validator"): those of each operation's IFM, IFM2, weights, scales, OFM and DMA
    ends. A job may name a BO only for these (ethosu_job.c: a BO for an unused region is refused)."""
    reg = {"ifm": -1, "ifm2": -1, "ofm": -1, "weight": -1, "scale": -1, "dma_src": -1, "dma_dst": -1}
    ofm_precision = ifm_broadcast = ifm2_broadcast = 0xFFFF
    used: set[int] = set()
    setters = {"NPU_SET_IFM_REGION": "ifm", "NPU_SET_IFM2_REGION": "ifm2", "NPU_SET_OFM_REGION": "ofm",
               "NPU_SET_WEIGHT_REGION": "weight", "NPU_SET_SCALE_REGION": "scale"}
    for d in U65.decode(words, strict=False):
        name, v = d.command.name, d.value
        if name in setters:
            reg[setters[name]] = v & 0x7
        elif name in ("NPU_SET_DMA0_SRC_REGION", "NPU_SET_DMA0_DST_REGION"):
            reg["dma_src" if "SRC" in name else "dma_dst"] = -1 if v & 0x100 else v & 0x7
        elif name == "NPU_SET_OFM_PRECISION":
            ofm_precision = v
        elif name == "NPU_SET_IFM2_BROADCAST":
            ifm2_broadcast = v
        touched: list[str] = []
        scale = ["scale"] if not ofm_precision & 0x100 else []
        if name in ("NPU_OP_CONV", "NPU_OP_DEPTHWISE"):
            touched = ["ifm", "ifm2" if v & 1 else "weight", *scale, "ofm"]
        elif name == "NPU_OP_POOL":
            touched = (["ifm"] if v != 4 else []) + [*scale, "ofm"]
        elif name == "NPU_OP_ELEMENTWISE":  # a scalar IFM2 on the U65: IFM2_BROADCAST bit 7 (unset reads as set)
            unary = bool(ifm2_broadcast & _IFM2_SCALAR) or v in (5, 6, 7, 0x24)
            touched = (["ifm"] if ifm_broadcast != 8 else []) + ([] if unary else ["ifm2"]) + ["ofm"]
        elif name == "NPU_OP_DMA_START":
            touched = ["dma_src", "dma_dst"]
        used.update(reg[k] for k in touched if reg[k] >= 0)
    return used


def _binding(f: Feature) -> IOBinding:
    """A feature map at its arena offset in NHWC byte order (one channel group of all its channels)."""
    h, w, c = (1,) * max(0, 3 - len(f.shape[-3:])) + tuple(int(x) for x in f.shape[-3:])
    if len(f.shape) > 3 and int(np.prod(f.shape[:-3])) != 1:
        raise ValueError(f"tensor {f.tensor}: batch {f.shape[:-3]} is not 1")
    return IOBinding(tensor=f.tensor, direction=f.direction, buffer="arena", dtype=f.dtype, h=h, w=w, c=c,
                     layout=LAYOUT_NC1HWC2, c2=c, offset=f.offset, row_pitch=w * c, plane_pitch=h * w * c)


def compile_op(spec: targets.Target, v: VelaOp) -> Program:
    used = regions_used(v.words)
    if used - {0, 1, 2}:
        raise ValueError(f"the stream uses regions {sorted(used - {0, 1, 2})}; Vela's are 0, 1 and 2")
    prog = Program(device=spec.name)
    ins: list[str] = []
    outs: list[str] = []
    regions: dict[int, str] = {}
    if READ_ONLY_REGION in used:
        prog.add_buffer(Buffer("read_only", max(len(v.read_only), 1), data=v.read_only))
        ins.append("read_only")
        regions[READ_ONLY_REGION] = "read_only"
    prog.add_buffer(Buffer("arena", max(v.arena_size, 1), tensor=True))
    outs.append("arena")
    regions[ARENA_REGION] = "arena"
    sram = 0
    if task.SRAM_REGION in used:
        if v.fast_size <= spec.params["sram_size"]:
            sram = max(v.fast_size, 1)  # the NPU's own SRAM: no BO
        else:  # larger than the SRAM: a BO in DRAM serves as region 2 (the kernel allows one when sram_size is 0)
            prog.add_buffer(Buffer("scratch_fast", v.fast_size, tensor=True))
            outs.append("scratch_fast")
            regions[task.SRAM_REGION] = "scratch_fast"
    order = ins + outs
    data = task.pack(v.words, sram, {r: order.index(b) for r, b in regions.items()})
    prog.add_buffer(Buffer("task", len(data), data=data))
    t = Task("task", 0, len(data))
    prog.jobs.append(Job([t], ins, outs))
    prog.io = [_binding(f) for f in v.io]
    _bind_scratch(prog, v)
    prog.operations.append(OpRecord([v.node], KIND, [t], {"words": len(v.words), "sram_size": sram,
                                                          "regions": sorted(used)}))
    return prog


def _bind_scratch(prog: Program, v: VelaOp) -> None:
    """TFLite hands the scratch tensors to the partition as inputs (they are neither constant nor produced by a
    node): they get a buffer no job lists, which tells the delegate to ignore them (teflon_runner_input_ignored)."""
    sizes = [(t, n) for t, n in v.scratch if n > 0]
    if not sizes:
        return
    prog.add_buffer(Buffer("host_scratch", max(n for _, n in sizes)))
    for t, n in sizes:
        h, w = _rows(n)
        prog.io.append(IOBinding(tensor=t, direction="in", buffer="host_scratch", dtype="uint8", h=h, w=w, c=1,
                                 layout=LAYOUT_ROWS, c2=1, row_pitch=w))


def _rows(n: int) -> tuple[int, int]:
    """n bytes as h rows of w (each at most MAX_DIM, the runner's limit on a binding's dimensions)."""
    d = np.arange(1, MAX_DIM + 1)
    fits = d[(n % d == 0) & (n // d <= MAX_DIM)]
    if not len(fits):
        raise ValueError(f"a scratch tensor of {n} bytes is not rows of at most {MAX_DIM} bytes")
    w = int(fits.max())
    return n // w, w
