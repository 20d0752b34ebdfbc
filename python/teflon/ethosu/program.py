"""Compile claimed TFLite operations for the Ethos-U65 into a teflon Program.

Memory: region 0 is the coefficient buffer (each weighted kick's scale records, then its weight stream, 16-byte
aligned), region 1 one arena buffer holding every feature map, graph inputs and outputs included, in NHWC.
One job = one task = the task header (drivers/ethosu/ethosu_task.h) + the command words of every kick.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from teflon import program as prog
from teflon.ethosu import lower, moves, softmax, stream, support
from teflon.ethosu import task as task_header
from teflon.ethosu.lower import REGION_ARENA, REGION_COEFFS, FeatureMap, Kick
from teflon.ir import Graph, Operation

DEVICE = "imx93"
ALIGN = 16  # feature maps and coefficient streams start 16-byte aligned (Vela aligns its tensors to 16)


def _align(n: int) -> int:
    return -(-n // ALIGN) * ALIGN


@dataclass
class Compiled:
    """What a compile produced, before it becomes a Program (tests compare this against Vela)."""

    kicks: list[Kick]
    placed: list[stream.Placed]
    words: list[int]
    coeffs: bytes
    arena_size: int
    offsets: dict[int, int]  # tensor index -> arena offset
    nodes_of_kick: list[int]
    sram_size: int = 0  # SRAM bytes the weight buffers take (region 2; --vela-compat's split operations only)


def _place(fm: FeatureMap, offset: int) -> FeatureMap:
    return replace(fm, region=REGION_ARENA, offset=offset)


def lower_graph(graph: Graph, nodes: Sequence[int], *, vela_compat: bool = False,
                weight_encoder: stream.WeightEncoder | None = None, sram_limit: int | None = None) -> Compiled:
    """The partition's kicks, words and coefficients; `sram_limit`: the SRAM bytes --vela-compat's weight buffers
    may take (None: no limit)."""
    encode = weight_encoder or stream.default_weight_encoder
    ops = [op for op in graph.operations if op.index in set(nodes)]
    offsets: dict[int, int] = {}
    arena = 0

    def at(t: int, size: int) -> int:
        nonlocal arena
        if t not in offsets:
            offsets[t] = arena
            arena = _align(arena + size)
        return offsets[t]

    kicks: list[Kick] = []
    owners: list[int] = []
    specs = {op.index: support.spec(graph, op) for op in ops}

    def is_view(op: Operation) -> bool:
        s = specs[op.index]
        return op.kind == "RESHAPE" or (isinstance(s, moves.MoveSpec) and s.views is not None)

    # A RESHAPE, or a slice that is one byte range of its input, is a view (the same bytes, no kick) unless the
    # partition has nothing else: a program without a job would leave its output bytes unwritten (its input is
    # never uploaded), so such a partition copies, as Vela does.
    views = not vela_compat and not all(is_view(op) for op in ops)
    for op in ops:
        s = specs[op.index]
        if views and is_view(op):
            if isinstance(s, moves.MoveSpec):
                h, w, c = s.ifms[0].shape
                base = at(s.sources[0], h * w * c)
                for t, delta in zip(s.targets, s.views or ()):
                    offsets.setdefault(t, base + delta)
                continue
            h, w, c = s.ifm.shape
            offsets.setdefault(op.outputs[0], at(op.inputs[0], h * w * c))
            continue
        if isinstance(s, moves.MoveSpec):
            def placed(fms: tuple[FeatureMap, ...], ts: tuple[int, ...]) -> tuple[FeatureMap, ...]:
                return tuple(_place(fm, at(t, int(np.prod(graph.tensors[t].shape)))) for fm, t in zip(fms, ts))

            s = replace(s, ifms=placed(s.ifms, s.sources), ofms=placed(s.ofms, s.targets))
            new = support.lower_spec(s, vela_compat)
            kicks += new
            owners += [op.index] * len(new)
            continue
        fms = {}
        for name, tensor in (("ifm", op.inputs[0]), ("ifm2", op.inputs[1] if len(op.inputs) > 1 else -1),
                             ("ofm", op.outputs[0])):
            fm = getattr(s, name, None)
            if fm is None or fm.region != REGION_ARENA or (name == "ifm2" and getattr(s, "scalar", None) is not None):
                continue  # no second operand, a constant (coefficient region) or a scalar (in the command)
            h, w, c = fm.shape
            fms[name] = _place(fm, at(tensor, h * w * c))
        if (isinstance(s, lower.MeanSpec) and vela_compat) or isinstance(s, softmax.SoftmaxSpec):
            # Vela's MEAN: its 32-bit sums (the default has none); SOFTMAX's 32-bit maps
            fms["scratch"] = _place(s.scratch, at(-1 - op.index, s.scratch_bytes))  # key: no tensor index
        s = replace(s, **fms)
        new = support.lower_spec(s, vela_compat)
        kicks += new
        owners += [op.index] * len(new)
    coeffs = bytearray()
    placed = []
    for k in kicks:
        sc = wt = None
        lut = k.info.get("lut")
        if isinstance(lut, bytes):  # the activation table, DMA'd into SHRAM before the kick
            k.pre = [(n, {"addr": len(coeffs)} if n == "NPU_SET_DMA0_SRC" else f) for n, f in k.pre]
            coeffs += lut
            coeffs += bytes(_align(len(coeffs)) - len(coeffs))
        const = k.info.get("const")
        if isinstance(const, bytes):  # an elementwise operand held as a constant
            k.regs["NPU_SET_IFM2_BASE0"] = {"addr": len(coeffs)}
            coeffs += const
            coeffs += bytes(_align(len(coeffs)) - len(coeffs))
        fill = k.info.get("fill")
        if isinstance(fill, bytes):  # a constant IFM (PAD's zero-point borders)
            k.regs["NPU_SET_IFM_BASE0"] = {"addr": len(coeffs)}
            coeffs += fill
            coeffs += bytes(_align(len(coeffs)) - len(coeffs))
        if k.scales is not None:
            sc = (len(coeffs), len(k.scales))
            coeffs += k.scales
            coeffs += bytes(_align(len(coeffs)) - len(coeffs))
        if k.weights is not None:
            data = encode(k)
            wt = (len(coeffs), len(data))
            coeffs += data
            coeffs += bytes(_align(len(coeffs)) - len(coeffs))
        placed.append(stream.Placed(wt, sc))
    placed, sram_size = _stage(kicks, placed, owners, sram_limit)
    words = stream.emit(kicks, placed)
    return Compiled(kicks, placed, words, bytes(coeffs), max(arena, ALIGN), offsets, owners, sram_size)


def _stage(kicks: list[Kick], placed: list[stream.Placed], owners: list[int],
           sram_limit: int | None) -> tuple[list[stream.Placed], int]:
    """Weight buffering as Vela does it (--vela-compat's split operations, `Kick.info["staged"]` = the buffer the
    slice uses): each slice's scale records and weights are copied from region 0 into one of two SRAM buffers by
    DMA, started right before the slice's registers, waited for right before its kick (while a slice computes,
    the next one's DMA is queued behind it; docs/hardware/ethosu-compiler.md). An operation whose slices would
    take the buffers past `sram_limit` bytes is not staged (its slices read region 0). Returns the placements and
    the SRAM bytes used (0: none)."""
    need: dict[int, list[int]] = {}  # node -> the bytes its slices need in each buffer
    for k, pl, node in zip(kicks, placed, owners):
        if "staged" in k.info:
            part = int(k.info["staged"])  # type: ignore[call-overload]
            n = need.setdefault(node, [0, 0])
            n[part] = max(n[part], _align(pl.staging()[1]))
    sizes = [0, 0]
    for node, n in need.items():  # operations whose buffers do not fit the SRAM read their weights in place
        grown = [max(a, b) for a, b in zip(sizes, n)]
        if sram_limit is None or sum(grown) <= sram_limit:
            sizes = grown
        else:
            for k, owner in zip(kicks, owners):
                if owner == node:
                    k.info.pop("staged", None)
    if not any(sizes):
        return placed, 0
    base = (0, sizes[0])
    out = []
    reader: dict[int, int] = {}  # buffer -> the last kick that read it
    for i, (k, pl) in enumerate(zip(kicks, placed)):
        if "staged" not in k.info:
            out.append(pl)
            continue
        part = int(k.info["staged"])  # type: ignore[call-overload]
        src, length = pl.staging()
        k.pre = [("NPU_SET_DMA0_SRC_REGION", {"region": REGION_COEFFS, "internal": 0, "stride_mode": 0}),
                 ("NPU_SET_DMA0_SRC", {"addr": src}),
                 ("NPU_SET_DMA0_DST_REGION", {"region": lower.REGION_FAST, "internal": 0, "stride_mode": 0}),
                 ("NPU_SET_DMA0_DST", {"addr": base[part]}),
                 ("NPU_SET_DMA0_LEN", {"length": length})]
        if part in reader:  # a kick that may still run reads this buffer: wait until it has finished (Vela's
            # NPU_OP_KERNEL_WAIT; `outstanding` = the kicks allowed to remain in flight)
            k.pre.append(("NPU_OP_KERNEL_WAIT", {"outstanding": 0 if reader[part] == i - 1 else 1, "channel": 0}))
        k.pre.append(("NPU_OP_DMA_START", {"channel_mode": 0}))
        reader[part] = i
        k.wait = [("NPU_OP_DMA_WAIT", {"outstanding": 0, "channel": 0})]
        out.append(replace(pl, staged=base[part]))
    return out, sizes[0] + sizes[1]


def compile(graph: Graph, nodes: Sequence[int], inputs: Sequence[int], outputs: Sequence[int], *,
            device: str = DEVICE, vela_compat: bool = False,
            weight_encoder: stream.WeightEncoder | None = None) -> prog.Program:
    from teflon import targets

    sram = targets.get(device).params.get("sram_size", 0)
    c = lower_graph(graph, nodes, vela_compat=vela_compat, weight_encoder=weight_encoder, sram_limit=sram)
    problems = stream.check(c.words)
    if problems:
        raise lower.LoweringError("; ".join(problems))
    p = prog.Program(device=device)
    # a kick that reads weights, scales or a LUT reads them from region 0; without any, region 0 gets no BO (the
    # kernel refuses a BO for a region the stream does not use: docs/hardware/ethosu-kernel.md)
    ins = ["coeffs"] if c.coeffs else []
    if ins:
        p.add_buffer(prog.Buffer("coeffs", len(c.coeffs), c.coeffs))
    p.add_buffer(prog.Buffer("arena", c.arena_size, None, tensor=True))
    tasks: list[prog.Task] = []
    if c.kicks:  # always, for a partition with a node (lower_graph copies where every node would be a view)
        regions = {REGION_ARENA: len(ins)} | ({REGION_COEFFS: 0} if ins else {})
        task = task_header.pack(c.words, c.sram_size, regions)
        p.add_buffer(prog.Buffer("cmds", len(task), task))
        tasks = [prog.Task("cmds", 0, len(task))]
        p.jobs.append(prog.Job(tasks, ins, ["arena"]))
    for direction, tensors in (("in", inputs), ("out", outputs)):
        for ti in tensors:
            tensor = graph.tensors[ti]
            h, w, ch = moves.packed_hwc(tensor.shape)
            p.io.append(prog.IOBinding(ti, direction, "arena", tensor.dtype, h, w, ch, prog.LAYOUT_NC1HWC2, c2=ch,
                                       offset=c.offsets[ti], row_pitch=w * ch, plane_pitch=h * w * ch))
    for node in dict.fromkeys(c.nodes_of_kick):
        kinds = [k.op for k, n in zip(c.kicks, c.nodes_of_kick) if n == node]
        p.operations.append(prog.OpRecord([node], kinds[0], tasks, {"kicks": len(kinds)}))
    return p
