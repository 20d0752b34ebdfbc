"""TFLite int8/uint8 operations -> Ethos-U65 kicks: the register state of each compute operation (command name ->
field values, in teflon.ethosu.regs names), plus its OHWI weights and scale records.

One `Kick` is one NPU_OP_CONV / DEPTHWISE / POOL / ELEMENTWISE with every register it reads. Addresses are
(region, offset) pairs; the weight and scale streams are attached as data and placed by teflon.ethosu.stream.
What each register holds and why (which part is Vela 5.2.0 Regor's choice, inferred from its compiles of single-op
models) is in docs/hardware/ethosu-compiler.md.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import numpy as np

from teflon.ethosu import blocks, quant
from teflon.ethosu.blocks import BlockConfig, OpGeometry
from teflon.ir import Graph, Operation

if TYPE_CHECKING:
    from teflon.ethosu.moves import MoveSpec

Regs = dict[str, dict[str, int]]
QRANGE = {"int8": (-128, 127), "uint8": (0, 255)}
REGION_COEFFS = 0  # weights and scale records (the program's coefficient buffer)
REGION_ARENA = 1  # every feature map, inputs and outputs included

# Vela splits a weighted operation whose weights it streams into fast memory at this many OFM channels for the
# first kick (inferred from Regor's compiles; docs "Operation splits").
FIRST_SPLIT_DEPTH = 16


class LoweringError(ValueError):
    pass


@dataclass(frozen=True)
class FeatureMap:
    shape: tuple[int, int, int]  # (h, w, c)
    dtype: str  # "int8" or "uint8"
    zero_point: int
    scale: float
    region: int = REGION_ARENA
    offset: int = 0  # byte offset of element (0, 0, 0) in its region
    row_stride: int | None = None  # bytes between rows; None = packed NHWC
    pixel_stride: int | None = None  # bytes between pixels; None = packed (a channel slice of a wider map: its C)

    @property
    def strides(self) -> tuple[int, int, int]:
        """(y, x, c) byte strides of NHWC."""
        _, w, c = self.shape
        x = self.pixel_stride or c
        return (self.row_stride or w * x, x, 1)


@dataclass
class Kick:
    op: str  # NPU_OP_CONV, NPU_OP_DEPTHWISE, NPU_OP_POOL, NPU_OP_ELEMENTWISE
    op_fields: dict[str, int]
    regs: Regs
    weights: np.ndarray | None = None  # OHWI (depthwise: O = channel, I = 1), minus the weight zero point
    scales: bytes | None = None  # 10-byte records, one per OFM channel
    block: BlockConfig | None = None
    depthwise: bool = False
    info: dict[str, object] = field(default_factory=dict)
    pre: list[tuple[str, dict[str, int]]] = field(default_factory=list)  # commands before the registers (DMA)
    wait: list[tuple[str, dict[str, int]]] = field(default_factory=list)  # commands right before the kick


def _signed(dtype: str) -> int:
    return 1 if dtype == "int8" else 0


def ifm_regs(fm: FeatureMap, prefix: str = "IFM", used: tuple[int, int, int] | None = None) -> Regs:
    """An input feature map's registers; `used` = the (h, w, c) the operation reads, when less than the tensor."""
    h, w, c = used or fm.shape
    sy, sx, sc = fm.strides
    r: Regs = {f"NPU_SET_{prefix}_REGION": {"region": fm.region}}
    r[f"NPU_SET_{prefix}_BASE0"] = {"addr": fm.offset}
    for i in (1, 2, 3):
        r[f"NPU_SET_{prefix}_BASE{i}"] = {"addr": 0}
    r[f"NPU_SET_{prefix}_HEIGHT0_M1"] = {"value": h - 1}
    r[f"NPU_SET_{prefix}_HEIGHT1_M1"] = {"value": h - 1}
    r[f"NPU_SET_{prefix}_WIDTH0_M1"] = {"value": w - 1}
    if prefix == "IFM":
        r["NPU_SET_IFM_DEPTH_M1"] = {"value": c - 1}
    r[f"NPU_SET_{prefix}_STRIDE_Y"] = {"value": sy}
    r[f"NPU_SET_{prefix}_STRIDE_X"] = {"value": sx}
    r[f"NPU_SET_{prefix}_STRIDE_C"] = {"value": sc}
    r[f"NPU_SET_{prefix}_ZERO_POINT"] = {"value": fm.zero_point}
    return r


def windowed_ifm_regs(ifm: FeatureMap, used: tuple[int, int, int], pads: tuple[int, int, int, int]) -> Regs:
    """The first registers of a kick that slides a window over its IFM (convolution, pooling): one core, the
    part of the IFM it reads, its precision, no upscale, the (top, left, bottom, right) padding."""
    pt, pl, pb, pr = pads
    r: Regs = {"NPU_SET_PARALLEL_MODE": {"cores_m1": 0}}
    r.update(ifm_regs(ifm, used=used))
    r["NPU_SET_IFM_PRECISION"] = precision(ifm.dtype)
    r["NPU_SET_IFM_UPSCALE"] = {"mode": 0}
    r["NPU_SET_IFM_PAD_TOP"] = {"value": pt}
    r["NPU_SET_IFM_PAD_LEFT"] = {"value": pl}
    r["NPU_SET_IFM_PAD_BOTTOM"] = {"value": pb}
    r["NPU_SET_IFM_PAD_RIGHT"] = {"value": pr}
    return r


def ofm_regs(fm: FeatureMap, depth_offset: int = 0, depth: int | None = None) -> Regs:
    h, w, c = fm.shape
    sy, sx, sc = fm.strides
    d = c if depth is None else depth
    r: Regs = {"NPU_SET_OFM_REGION": {"region": fm.region}, "NPU_SET_OFM_BASE0": {"addr": fm.offset + depth_offset}}
    for i in (1, 2, 3):
        r[f"NPU_SET_OFM_BASE{i}"] = {"addr": 0}
    r["NPU_SET_OFM_HEIGHT_M1"] = {"value": h - 1}
    r["NPU_SET_OFM_WIDTH_M1"] = {"value": w - 1}
    r["NPU_SET_OFM_HEIGHT0_M1"] = {"value": h - 1}
    r["NPU_SET_OFM_HEIGHT1_M1"] = {"value": h - 1}
    r["NPU_SET_OFM_WIDTH0_M1"] = {"value": w - 1}
    r["NPU_SET_OFM_DEPTH_M1"] = {"value": d - 1}
    r["NPU_SET_OFM_STRIDE_Y"] = {"value": sy}
    r["NPU_SET_OFM_STRIDE_X"] = {"value": sx}
    r["NPU_SET_OFM_STRIDE_C"] = {"value": sc}
    r["NPU_SET_OFM_ZERO_POINT"] = {"value": fm.zero_point}
    return r


def padding(in_size: int, out_size: int, kernel: int, stride: int, same: bool) -> tuple[int, int]:
    """(before, after) padding of one axis: TFLite SAME puts the odd pixel after; VALID pads nothing."""
    if not same:
        return (0, 0)
    total = max((out_size - 1) * stride + kernel - in_size, 0)
    return (total // 2, total - total // 2)


def kernel_regs(kh: int, kw: int, sy: int, sx: int, part_kernel: bool) -> Regs:
    return {
        "NPU_SET_KERNEL_HEIGHT_M1": {"value": kh - 1},
        "NPU_SET_KERNEL_WIDTH_M1": {"value": kw - 1},
        "NPU_SET_KERNEL_STRIDE": {"stride_x_lsb": (sx - 1) & 1, "stride_y_lsb": (sy - 1) & 1,
                                  "weight_order": int(part_kernel), "stride_x_msb": (sx - 1) >> 1,
                                  "stride_y_msb": (sy - 1) >> 1},
    }


def activation_regs(ofm: FeatureMap, activation: str) -> Regs:
    """The clamp in OFM units: the OFM type's range narrowed by RELU / RELU6 / RELU_N1_TO_1."""
    lo, hi = quant.activation_range(ofm.dtype, ofm.scale, ofm.zero_point, activation)
    return {"NPU_SET_ACTIVATION": {"type": 0, "clip_range": 0},
            "NPU_SET_ACTIVATION_MIN": {"value": lo}, "NPU_SET_ACTIVATION_MAX": {"value": hi}}


def block_regs(cfg: BlockConfig, ifm2: bool = False) -> Regs:
    r: Regs = {
        "NPU_SET_OFM_BLK_HEIGHT_M1": {"value": cfg.ofm[0] - 1},
        "NPU_SET_OFM_BLK_WIDTH_M1": {"value": cfg.ofm[1] - 1},
        "NPU_SET_OFM_BLK_DEPTH_M1": {"value": cfg.ofm[2] - 1},
        "NPU_SET_IFM_IB_END": {"value": cfg.layout.ib_end},
        "NPU_SET_AB_START": {"value": cfg.layout.ab_start},
    }
    if ifm2:
        r["NPU_SET_IFM2_IB_START"] = {"value": cfg.layout.ib2_start}
    r["NPU_SET_ACC_FORMAT"] = {"format": 0 if cfg.acc_bits == 32 else 1}
    return r


def precision(dtype: str, **extra: int) -> dict[str, int]:
    return {"activation_type": _signed(dtype), "activation_precision": 0, "format": 0, **extra}


@dataclass(frozen=True)
class ConvSpec:
    """One CONV_2D / DEPTHWISE_CONV_2D / FULLY_CONNECTED as the NPU sees it."""

    ifm: FeatureMap
    ofm: FeatureMap
    weights: np.ndarray  # OHWI int, minus zero point (depthwise: [C, KH, KW, 1])
    bias: np.ndarray  # int64 per OFM channel
    weight_scales: np.ndarray  # float32 per OFM channel (one value repeated for per-tensor)
    stride: tuple[int, int] = (1, 1)
    same: bool = False
    activation: str = "NONE"
    depthwise: bool = False
    float_product: bool = False  # the scale's s_in * s_w in float32 (quant.conv_scale_records)


def used_extent(in_size: int, out_size: int, kernel: int, stride: int, pad_before: int) -> int:
    """IFM rows (columns) the OFM reads: Vela points the IFM registers at these only, so a VALID convolution whose
    stride skips the last rows does not list them."""
    return min(in_size, (out_size - 1) * stride + kernel - pad_before)


def lower_conv(spec: ConvSpec, vela_compat: bool = False) -> list[Kick]:
    ifm, ofm = spec.ifm, spec.ofm
    oc, kh, kw, _ = spec.weights.shape
    sy, sx = effective_stride(spec.stride, ofm.shape)
    kind = blocks.KIND_DEPTHWISE if spec.depthwise else blocks.KIND_CONV
    geo = OpGeometry(kind, ifm.shape, ofm.shape, (kh, kw), (sy, sx))
    cfg = blocks.find(geo)
    if cfg is None:
        raise LoweringError(f"no block configuration fits {geo}")
    part = cfg.part_kernel and not spec.depthwise
    pt, pb = padding(ifm.shape[0], ofm.shape[0], kh, sy, spec.same)
    pl, pr = padding(ifm.shape[1], ofm.shape[1], kw, sx, spec.same)
    records = quant.conv_scale_records(spec.bias, ifm.scale, spec.weight_scales, ofm.scale, spec.float_product)
    ih = used_extent(ifm.shape[0], ofm.shape[0], kh, sy, pt)
    iw = used_extent(ifm.shape[1], ofm.shape[1], kw, sx, pl)
    splits = [(0, oc)]
    if vela_compat and conv_is_buffered(geo, cfg) and oc > FIRST_SPLIT_DEPTH:
        splits = [(0, FIRST_SPLIT_DEPTH), (FIRST_SPLIT_DEPTH, oc)]
    kicks = []
    for n, (o0, o1) in enumerate(splits):
        # a depthwise kick reads the IFM channels of its OFM channels
        ic0, ic = (o0, o1 - o0) if spec.depthwise else (0, ifm.shape[2])
        r = windowed_ifm_regs(replace(ifm, offset=ifm.offset + ic0 * ifm.strides[2]), (ih, iw, ic), (pt, pl, pb, pr))
        r.update(ofm_regs(ofm, o0 * ofm.strides[2], o1 - o0))
        r["NPU_SET_OFM_PRECISION"] = precision(ofm.dtype)
        r.update(kernel_regs(kh, kw, sy, sx, part))
        r.update(activation_regs(ofm, spec.activation))
        r.update(block_regs(cfg))
        r["NPU_SET_BLOCKDEP"] = {"value": 0 if n == 0 else 3}
        kicks.append(Kick("NPU_OP_DEPTHWISE" if spec.depthwise else "NPU_OP_CONV", {}, r,
                          weights=spec.weights[o0:o1], scales=b"".join(records[o0:o1]), block=cfg,
                          depthwise=spec.depthwise))
    return kicks


def effective_stride(stride: tuple[int, int], ofm_shape: tuple[int, int, int]) -> tuple[int, int]:
    """A stride along an axis with one output is never applied: Vela writes 1 there (and plans its blocks so)."""
    return (1 if ofm_shape[0] == 1 else stride[0], 1 if ofm_shape[1] == 1 else stride[1])


def conv_is_buffered(geo: OpGeometry, cfg: BlockConfig) -> bool:
    """Whether Vela streams this operation's weights into fast memory (inferred from Regor's compiles: when the OFM
    takes more than one block in height x width, so the weights would be fetched more than once)."""
    return -(-geo.ofm[0] // cfg.ofm[0]) * -(-geo.ofm[1] // cfg.ofm[1]) > 1


@dataclass(frozen=True)
class PoolSpec:
    ifm: FeatureMap
    ofm: FeatureMap
    kind: str  # "max" or "avg"
    kernel: tuple[int, int]
    stride: tuple[int, int]
    same: bool
    activation: str = "NONE"
    blockdep: int = 0  # NPU_SET_BLOCKDEP: 3 when the previous kick writes nothing this one reads
    copy: bool = False  # a copy (RESHAPE, CONCATENATION): Vela keeps the zero points there
    upscale: bool = False  # the IFM read through IFM_UPSCALE NEAREST (RESIZE_NEAREST_NEIGHBOR x2)


def lower_pool(spec: PoolSpec) -> list[Kick]:
    ifm, ofm = spec.ifm, spec.ofm
    (kh, kw), (sy, sx) = spec.kernel, effective_stride(spec.stride, ofm.shape)
    cfg = blocks.find(OpGeometry(blocks.KIND_POOL, ifm.shape, ofm.shape, (kh, kw), (sy, sx), upscale=spec.upscale))
    if cfg is None:
        raise LoweringError("no block configuration fits")
    pt, pb = padding(ifm.shape[0], ofm.shape[0], kh, sy, spec.same)
    pl, pr = padding(ifm.shape[1], ofm.shape[1], kw, sx, spec.same)
    padded = any((pt, pb, pl, pr))
    scale, shift = (1, 0) if spec.copy else quant.pool_scale(spec.kind, kh * kw, padded)
    if spec.kind == "avg" and not spec.copy:  # in and out share their quantization: no zero point needed
        ifm, ofm = replace(ifm, zero_point=0), replace(ofm, zero_point=0)
    used = (used_extent(ifm.shape[0], ofm.shape[0], kh, sy, pt), used_extent(ifm.shape[1], ofm.shape[1], kw, sx, pl),
            ifm.shape[2])
    r = windowed_ifm_regs(ifm, used, (pt, pl, pb, pr))
    if spec.upscale:
        r["NPU_SET_IFM_UPSCALE"] = {"mode": 1}
    r.update(ofm_regs(ofm))
    r["NPU_SET_OFM_PRECISION"] = precision(ofm.dtype, scale_mode=1, round_mode=quant.ROUND_NATURAL)
    r.update(kernel_regs(kh, kw, sy, sx, False))
    r.update(activation_regs(ofm, spec.activation))
    r["NPU_SET_OFM_SCALE"] = {"scale": scale, "shift": shift}
    r.update(block_regs(cfg))
    r["NPU_SET_BLOCKDEP"] = {"value": spec.blockdep}
    return [Kick("NPU_OP_POOL", {"mode": 0 if spec.kind == "max" else 1}, r, block=cfg)]


def copy_spec(ifm: FeatureMap, ofm: FeatureMap, blockdep: int = 0) -> PoolSpec:
    """A copy as Vela makes one (RESHAPE alone, each input of a CONCATENATION): a 1x1 AVERAGE pool with unit scale."""
    return PoolSpec(ifm, ofm, "avg", (1, 1), (1, 1), False, "NONE", blockdep, copy=True)


@dataclass(frozen=True)
class EltSpec:
    """ADD / SUB / MUL of a feature map with a second feature map, a per-channel constant (`const`, a (1, 1, C)
    map in the coefficient region) or one constant value (`scalar`)."""

    kind: str  # "ADD", "SUB", "MUL"
    ifm: FeatureMap
    ifm2: FeatureMap | None  # None with a scalar
    ofm: FeatureMap
    activation: str = "NONE"
    scalar: int | None = None  # the second operand's one quantized value
    const: bytes | None = None  # the per-channel constant's bytes (ifm2 describes it)


def elementwise_spec(graph: Graph, op: Operation, fm: Callable[..., FeatureMap], activation: str) -> EltSpec:
    a, b = graph.tensors[op.inputs[0]], graph.tensors[op.inputs[1]]
    if a.is_constant:
        raise LoweringError(f"{op.kind} with a constant first operand")
    ifm = fm(a)
    ofm = fm(graph.tensors[op.outputs[0]])
    if ifm.dtype != ofm.dtype:
        raise LoweringError(f"{op.kind} changes the type")
    if ifm.shape[2] < MIN_ELEMENTWISE_DEPTH:
        raise LoweringError(f"{op.kind} of {ifm.shape[2]} channels: Vela reshapes such maps (not modelled)")
    if not b.is_constant:
        ifm2 = fm(b)
        if ifm2.shape != ifm.shape or ifm2.dtype != ifm.dtype:
            raise LoweringError(f"{op.kind} of maps shaped {ifm.shape} and {ifm2.shape}: equal shapes only")
        return EltSpec(op.kind, ifm, ifm2, ofm, activation)
    assert b.data is not None and b.quant is not None
    if b.dtype != ifm.dtype or not b.quant.per_tensor:
        raise LoweringError(f"{op.kind} constant of type {b.dtype} or per-channel quantization")
    data = b.data.reshape(-1)
    if data.size == 1:
        cq = FeatureMap((1, 1, 1), b.dtype, b.quant.zero_point, float(b.quant.scale))
        return EltSpec(op.kind, ifm, cq, ofm, activation, scalar=int(data[0]))
    if b.data.shape[-1] != ifm.shape[2] or data.size != ifm.shape[2]:
        raise LoweringError(f"{op.kind} constant of shape {b.data.shape}: one value or one per channel only")
    cq = FeatureMap((1, 1, data.size), b.dtype, b.quant.zero_point, float(b.quant.scale), region=REGION_COEFFS)
    return EltSpec(op.kind, ifm, cq, ofm, activation, const=data.astype(b.dtype).tobytes())


def lower(spec: ConvSpec | PoolSpec | EltSpec | LutSpec | MoveSpec, vela_compat: bool = False) -> list[Kick]:
    from teflon.ethosu import moves  # data movement, built on the pool copies of this module

    if isinstance(spec, moves.MoveSpec):
        return moves.lower_moves(spec)
    if isinstance(spec, ConvSpec):
        return lower_conv(spec, vela_compat)
    if isinstance(spec, PoolSpec):
        return lower_pool(spec)
    if isinstance(spec, LutSpec):
        return lower_lut(spec)
    return lower_elementwise(spec)


MIN_ELEMENTWISE_DEPTH = 8  # Regor reshapes elementwise operations on fewer channels (inferred; docs)
ELEMENTWISE_MODE = {"MUL": 0, "ADD": 1, "SUB": 2}  # NPU_OP_ELEMENTWISE mode (teflon.ethosu.regs)


def lower_elementwise(spec: EltSpec) -> list[Kick]:
    ifm, ifm2, ofm = spec.ifm, spec.ifm2, spec.ofm
    assert ifm2 is not None
    scalar = spec.scalar is not None
    cfg = blocks.find(OpGeometry(blocks.KIND_ELEMENTWISE, ifm.shape, ofm.shape, scalar=scalar))
    if cfg is None:
        raise LoweringError("no block configuration fits")
    r: Regs = {"NPU_SET_PARALLEL_MODE": {"cores_m1": 0}}
    scale_mode = 0
    if spec.kind == "MUL":
        m, n = quant.mul_scale(ifm.scale, ifm2.scale, ofm.scale)
    else:
        opa, ofm_scale, scale_mode = quant.add_scales(ifm.scale, ifm2.scale, ofm.scale)
        r["NPU_SET_OPA_SCALE"] = {"scale": opa[0], "shift": opa[1]}
        r["NPU_SET_OPB_SCALE"] = {"scale": 0}
        m, n = ofm_scale
    r["NPU_SET_OFM_SCALE"] = {"scale": m, "shift": n}
    r.update(ifm_regs(ifm))
    r["NPU_SET_IFM_PRECISION"] = precision(ifm.dtype, scale_mode=scale_mode)
    r["NPU_SET_IFM_UPSCALE"] = {"mode": 0}
    r.update(ofm_regs(ofm))
    r["NPU_SET_OFM_PRECISION"] = precision(ofm.dtype, scale_mode=1)
    r.update(activation_regs(ofm, spec.activation))
    if scalar:
        r["NPU_SET_IFM2_SCALAR"] = {"value": spec.scalar}
    else:
        regs2 = ifm_regs(ifm2, "IFM2")
        if spec.const is not None:  # a (1, 1, C) map read once per pixel: Vela gives both strides the row
            regs2["NPU_SET_IFM2_STRIDE_X"] = regs2["NPU_SET_IFM2_STRIDE_Y"]
        r.update(regs2)
    r["NPU_SET_IFM2_ZERO_POINT"] = {"value": ifm2.zero_point}
    r["NPU_SET_IFM2_PRECISION"] = precision(ifm2.dtype)
    bh, bw = int(ifm2.shape[0] != ofm.shape[0]), int(ifm2.shape[1] != ofm.shape[1])
    r["NPU_SET_IFM2_BROADCAST"] = {"broadcast_height": 0 if scalar else bh, "broadcast_width": 0 if scalar else bw,
                                   "broadcast_depth": 0, "operand_order": 0, "broadcast_scalar": int(scalar)}
    r.update(block_regs(cfg, ifm2=True))
    r["NPU_SET_BLOCKDEP"] = {"value": 0}
    return [Kick("NPU_OP_ELEMENTWISE", {"mode": ELEMENTWISE_MODE[spec.kind]}, r, block=cfg,
                 info={"const": spec.const} if spec.const is not None else {})]


# The LUT lives in the top SHRAM banks (blocks.RESERVED_END_BANKS): Vela DMAs the 256 bytes there before the kick.
LUT_SHRAM_ADDRESS = (blocks.TOTAL_BANKS - blocks.RESERVED_END_BANKS) * blocks.BANK_BYTES
LUT_DMA_REGION = 3  # NPU_SET_DMA0_DST_REGION.region with internal = 1, as Vela 5.2.0 writes it for the LUT


@dataclass(frozen=True)
class LutSpec:
    """LOGISTIC / TANH of an 8-bit map through a 256-entry table: an identity 1x1 AVERAGE pool (the OFM keeps the
    IFM's zero point, so the value passes unchanged) whose activation is LUT0."""

    ifm: FeatureMap
    ofm: FeatureMap
    table: bytes  # 256 entries, index = the input value (int8: -128..127, uint8: 0..255)


def lower_lut(spec: LutSpec) -> list[Kick]:
    ofm = replace(spec.ofm, zero_point=spec.ifm.zero_point)
    k = lower_pool(PoolSpec(spec.ifm, ofm, "avg", (1, 1), (1, 1), False, "NONE", copy=True))[0]
    k.regs["NPU_SET_ACTIVATION"] = {"type": 16, "clip_range": 0}
    k.pre = [("NPU_SET_DMA0_SRC_REGION", {"region": REGION_COEFFS, "internal": 0, "stride_mode": 0}),
             ("NPU_SET_DMA0_SRC", {"addr": 0}),  # the table's offset, set where the program places it
             ("NPU_SET_DMA0_DST_REGION", {"region": LUT_DMA_REGION, "internal": 1, "stride_mode": 0}),
             ("NPU_SET_DMA0_DST", {"addr": LUT_SHRAM_ADDRESS}),
             ("NPU_SET_DMA0_LEN", {"length": len(spec.table)}),
             ("NPU_OP_DMA_START", {"channel_mode": 0})]
    k.wait = [("NPU_OP_DMA_WAIT", {"outstanding": 0, "channel": 0})]
    k.info["lut"] = spec.table
    return [k]
