"""RK3566/RK3568 generation of the rocket family (docs/hardware/rk3568.md): the register table (regs), feature and
CBUF geometry (layout), weight packing (weights), channel groups and row bands (split), the 133-word conv task and
its delta tasks (stream), the PPU pool task (pool), the DPU-only ADD (add), the encoder (encoder) and its claims
(support: what the encoder writes and drivers/rocket/sim_rk3568.c runs).

Generation interface (used by teflon.rocket only): `supported(graph, regmap)`, `lower(graph, nodes, outputs)` and
`compile(regmap, device, graph, nodes, inputs, outputs, mesa_compat)`; `mesa_compat` changes nothing (no Mesa
encoder for the RK3568 upstream).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...hw.regmap import RegMap
from ...ir import Graph
from ...program import Program

CONV_OPS = ("CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED")
MAX_POOL_REASON = ("a max pool needs the PPU, which raises no interrupt bit on RK3568 [IAV T60/T61] (the vendor's table "
                   "arms PPU_0/1, int_mask 0xC00, which never comes): a one-task kick of it never completes; only a "
                   "kernel that chains it behind a signalling task (IAV's module) could run it (rk3568.md §5)")


def cbuf_weight_bytes() -> int:
    """Weight bytes the CBUF keeps beside the smallest data area (one bank of eight)."""
    from .layout import BANK_BYTES, CBUF_BANKS

    return (CBUF_BANKS - 1) * BANK_BYTES


def supported(graph: Graph, regmap: RegMap) -> dict[int, tuple[bool, str]]:
    from .support import supported as _supported

    return _supported(graph, regmap)


def encodable_nodes(graph: Graph, regmap: RegMap) -> list[int]:
    """The nodes the encoder writes, each as a partition of its own (support.py says why the others are not)."""
    from .support import encodable

    return [op.index for op in graph.operations if encodable(graph, regmap, op.index).startswith("the encoder")]


def compile(regmap: RegMap, device: str, graph: Graph, nodes: list[int], inputs: list[int], outputs: list[int],
            mesa_compat: bool = False) -> Program:
    from .encoder import compile_ops

    del mesa_compat
    return compile_ops(regmap, device, lower(graph, nodes, outputs), inputs, outputs)


def ppu_pools() -> bool:
    """Pools as the vendor's PPU tasks (TEFLON_ROCKET_PPU=1), else the form a one-task kick completes (the default on
    rk3568): the PPU raises no interrupt bit at all [IAV T60/T61], so the simulated kernel (the RFC's one-task kicks)
    never sees a PPU task end; only a kernel that chains it behind a task that signals could run it (§5)."""
    import os

    from ..pool import PPU_SWITCH

    return os.environ.get(PPU_SWITCH, "0") == "1"


def lower(graph: Graph, nodes: list[int], outputs: list[int] | None = None) -> list[Any]:
    """The partition's operations in graph order: convolutions (per-tensor or per-channel, fused RELU/RELU6 through
    the BN stage; an input PAD the partition holds folded into their padding), MUL/ADD/SUB with a constant, pools
    (`_pool`), ADDs of two maps and reshapes written in place (`aliased`); anything else raises LoweringError."""
    from ..convlike import is_conv_like, lower_conv_like
    from ..pad_fold import NOT_FOLDED, PAD_KINDS, folded_pad
    from ..quantization import LoweringError
    from .add import lower_add

    del outputs
    ops: list[Any] = []
    for op in graph.operations:
        if op.index not in nodes:
            continue
        if op.kind in PAD_KINDS:
            # moves no byte: its reader, in the same partition, reads the PAD's input with the amounts added to its
            # own padding (pad_fold.py; the third party's fork folds PADs the same way on silicon [IAV T76])
            readers = graph.consumers(op.outputs[0]) if op.outputs else []
            fold = folded_pad(graph, readers[0]) if len(readers) == 1 and readers[0].index in nodes else None
            if fold is None or fold[0].index != op.index:
                raise LoweringError(NOT_FOLDED)
            continue
        if is_conv_like(graph, op) and op.kind not in CONV_OPS:
            # MUL/ADD/SUB with a constant: a 1x1 depthwise convolution with per-channel weight values but one
            # weight scale, a per-channel bias and a fitted OUT_CVT (const_elementwise.py), all of which the
            # per-tensor BS stream carries; its clamp must be the BN stage's ReLU at 0 (no RELU6: the BN bound is
            # computed from the convolution's scales, which a fitted OUT_CVT does not follow)
            conv = lower_conv_like(graph, op, per_channel=False, clamp=True)
            if conv.activation not in ("NONE", "RELU"):
                raise LoweringError(f"{op.kind} with a constant and a fused {conv.activation}: the rk3568 BN stage "
                                    "bounds ReLU6 from the convolution's scales, not from a fitted OUT_CVT")
            ops.append(conv)
            continue
        if is_conv_like(graph, op):
            # an input PAD folds when the partition holds it, else the convolution reads the PAD's output
            fold = folded_pad(graph, op)
            ops.append(lower_conv_like(graph, op, per_channel=True, clamp=True,
                                       fold_pad=fold is not None and fold[0].index in nodes))
        elif op.kind in ("MAX_POOL_2D", "AVERAGE_POOL_2D"):
            ops.append(_pool(graph, op))
        elif op.kind == "ADD":
            ops.append(lower_add(graph, op))
        elif op.kind in ALIAS_KINDS:
            k, writer = aliased(graph, op, ops)
            ops[k] = writer
        else:
            raise LoweringError(f"{op.kind} (node {op.index}) is not encoded on rk3568: {not_encoded(op.kind)}")
    return ops


ALIAS_KINDS = ("RESHAPE", "SQUEEZE")


def _pool(graph: Graph, op: Any) -> Any:
    """A pool's operation: a global average as the vendor's averaging depthwise convolution (average.py); with
    ppu_pools() any other window as the vendor's PPU task; else an average as the exact depthwise convolution of
    rocket/pool.py (windows up to 7) and a max pool refused (MAX_POOL_REASON). Raises LoweringError."""
    from ..pool import average_pool_conv, window_pool
    from ..quantization import LoweringError
    from .average import is_global_average, lower_global_average

    if is_global_average(graph, op):
        try:
            return lower_global_average(graph, op)
        except LoweringError:
            if ppu_pools():
                raise
    if ppu_pools():
        return window_pool(graph, op)
    if op.kind == "MAX_POOL_2D":
        raise LoweringError(MAX_POOL_REASON)
    # every other average (and a global one the vendor's form refuses): constant weights, a bias and an OUT_CVT
    # proved to round like TFLite for every window sum (rocket/average.py) [IAV T69: the third party's fallback too]
    try:
        return average_pool_conv(window_pool(graph, op), graph.tensors[op.inputs[0]])
    except LoweringError as e:
        raise LoweringError(f"{e} (rk3568 runs an average as one depthwise convolution, windows up to 7; the "
                            "per-plane convolutions rk3588 takes wider global averages with (flat_pool.py) are not "
                            "written by the rk3568 encoder)") from e


def aliased(graph: Graph, op: Any, ops: list[Any]) -> tuple[int, Any]:
    """A RESHAPE / SQUEEZE that keeps the channel count and the pixel count, the only reader of a tensor an operation
    of the partition writes: (that operation's index in `ops`, the operation writing the RESHAPE's output instead).
    The NC1HWC2 bytes depend only on the channel count and the pixels in row-major order (planes of align4(pixels)
    atoms), so the host and any reader take TFLite's reshaped tensor from them (as rk3588's views do, views.py); the
    RESHAPE moves no byte. LoweringError otherwise."""
    from dataclasses import replace

    from ..quantization import LoweringError

    x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
    k = next((i for i, o in enumerate(ops) if o.output_tensor == x.index), None)
    if k is None or [c.index for c in graph.consumers(x.index)] != [op.index]:
        raise LoweringError(f"{op.kind}: its input is not written by an operation of the partition for it alone "
                            f"(rk3568 encodes a reshape only as its writer's output: {not_encoded(op.kind)})")
    shape_in, shape_out = [int(d) for d in x.shape], [int(d) for d in y.shape]
    if not shape_in or not shape_out or shape_in[-1] != shape_out[-1] or int(np.prod(shape_in)) != int(np.prod(shape_out)):
        raise LoweringError(f"{op.kind} {tuple(shape_in)} -> {tuple(shape_out)} changes the channel count")
    if x.dtype != y.dtype or x.quant != y.quant:
        raise LoweringError(f"{op.kind} changes the type or the quantization")
    return k, replace(ops[k], output_tensor=y.index, nodes=[*ops[k].nodes, op.index])


def not_encoded(kind: str) -> str:
    """What the generation (or its encoder) lacks for an operation kind the lowering does not take."""
    from ...unary import TABLE_KINDS
    from ..views import VIEW_KINDS

    if kind in TABLE_KINDS:
        return ("no DPU LUT program: LUT loader tasks in a regcmd stream are unreliable on RK3568 (only the first of a "
                "chain lands; a stream over 1024 words hangs the PC) [IAV T75]; the working path writes the tables "
                "from the kernel through a UAPI extension the RFC's accel/rocket lacks [IAV RDME; MOD]")
    if kind == "MEAN":
        return ("TFLite's MEAN rounds unlike its average pool; the exact MEAN convolutions of rk3588 (average.mean_conv, "
                "flat_pool.py) are not written by the rk3568 encoder yet")
    if kind in ("MUL", "SUB"):
        return ("of two maps: rk3568's element-wise path is the vendor's DPU-only ADD (rk3588 runs a SUB through a copy "
                "convolution and a MUL only as a SiLU's second half, through the LUT program rk3568 lacks)")
    if kind in VIEW_KINDS:
        return ("views (channel offsets into 8-channel planes, reshapes) are not written by the rk3568 encoder yet "
                "(the third party runs CONCATENATION as addressing on silicon [IAV T64])")
    return "no NPU operation for it in the rk3568 encoder (as on rk3588: the rocket family has none)"
