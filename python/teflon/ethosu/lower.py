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

import numpy as np

from teflon.ethosu import blocks, quant
from teflon.ethosu.blocks import BlockConfig, OpGeometry
from teflon.ir import Graph, Operation

Regs = dict[str, dict[str, int]]
QRANGE = {"int8": (-128, 127), "uint8": (0, 255)}
REGION_COEFFS = 0  # weights and scale records (the program's coefficient buffer)
REGION_ARENA = 1  # every feature map, inputs and outputs included
REGION_FAST = 2  # the NPU's SRAM (the job's sram_size): --vela-compat stages split operations' weights there

# Vela splits a weighted operation whose weights it streams into fast memory at this many OFM channels for the
# first kick (Regor's OFM_SPLIT_DEPTH in Scheduler::ProposeSlicedWeightBuffering; docs "Operation splits").
FIRST_SPLIT_DEPTH = 16
# Regor tries depth slices when the OFM depth holds more than this many OFM blocks (its `expectedSlices > 2`).
SLICED_BLOCKS = 2


class LoweringError(ValueError):
    pass


@dataclass(frozen=True)
class FeatureMap:
    """A feature map as the NPU addresses it: shape, type, quantization, region, offset and strides."""

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
    """One NPU operation: its command, the registers it reads, and its weights and scale records."""

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
    # NATURAL rounding instead of TFL (a TEFLON_HW_FACTS report proved that NATURAL rounds twice, as TFLite's
    # optimized x86 CONV_2D / FULLY_CONNECTED do: board-facts.md fact 7); never with vela_compat
    natural: bool = False
    # the scale records (quant.conv_scale_records) when the spec's maker computed them: support.spec does, once per
    # graph for the support decision and the compile; None computes them here
    records: bytes | None = None


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
    records = spec.records
    if records is None:
        records = quant.conv_scale_records(spec.bias, ifm.scale, spec.weight_scales, ofm.scale, spec.float_product)
    ih = used_extent(ifm.shape[0], ofm.shape[0], kh, sy, pt)
    iw = used_extent(ifm.shape[1], ofm.shape[1], kw, sx, pl)
    splits = [(0, oc)]
    staged = vela_compat and conv_is_buffered(geo, cfg, oc) and oc > FIRST_SPLIT_DEPTH
    if staged:
        splits = [(0, FIRST_SPLIT_DEPTH), (FIRST_SPLIT_DEPTH, oc)]
    kicks = []
    for n, (o0, o1) in enumerate(splits):
        # a depthwise kick reads the IFM channels of its OFM channels
        ic0, ic = (o0, o1 - o0) if spec.depthwise else (0, ifm.shape[2])
        r = windowed_ifm_regs(replace(ifm, offset=ifm.offset + ic0 * ifm.strides[2]), (ih, iw, ic), (pt, pl, pb, pr))
        r.update(ofm_regs(ofm, o0 * ofm.strides[2], o1 - o0))
        r["NPU_SET_OFM_PRECISION"] = precision(ofm.dtype)
        if spec.natural and not vela_compat:
            r["NPU_SET_OFM_PRECISION"]["round_mode"] = quant.ROUND_NATURAL
        r.update(kernel_regs(kh, kw, sy, sx, part))
        r.update(activation_regs(ofm, spec.activation))
        r.update(block_regs(cfg))
        r["NPU_SET_BLOCKDEP"] = {"value": 0 if n == 0 else 3}
        kicks.append(Kick("NPU_OP_DEPTHWISE" if spec.depthwise else "NPU_OP_CONV", {}, r,
                          weights=spec.weights[o0:o1], block=cfg,
                          scales=records[o0 * quant.RECORD_BYTES:o1 * quant.RECORD_BYTES],
                          depthwise=spec.depthwise, info={"staged": n % 2} if staged else {}))
    return kicks


def effective_stride(stride: tuple[int, int], ofm_shape: tuple[int, int, int]) -> tuple[int, int]:
    """A stride along an axis with one output is never applied: Vela writes 1 there (and plans its blocks so)."""
    return (1 if ofm_shape[0] == 1 else stride[0], 1 if ofm_shape[1] == 1 else stride[1])


def conv_is_buffered(geo: OpGeometry, cfg: BlockConfig, depth: int) -> bool:
    """Whether Vela streams this operation's weights into fast memory, in depth slices. Two of the reasons Regor's
    Scheduler::ProposeSlicedWeightBuffering has for slicing, the two a single operation at the start of a network
    meets in the sweeps (docs "Operation splits"): the OFM takes more than one block in height x width, so the
    weights are fetched more than once (a start-of-network forced buffer), or its depth holds more than two OFM
    blocks (`expectedSlices`). The rest of Regor's choice is a cycle-cost comparison teflon does not model."""
    refetched = -(-geo.ofm[0] // cfg.ofm[0]) * -(-geo.ofm[1] // cfg.ofm[1]) > 1
    return refetched or depth // cfg.ofm[2] > SLICED_BLOCKS


@dataclass(frozen=True)
class PoolSpec:
    """A MAX / AVERAGE pool (or a copy through a 1x1 average pool) as the NPU sees it."""

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
    if not b.is_constant:
        ifm2 = fm(b, broadcast_shape(b.shape, ifm.shape))
        if not broadcasts(ifm2.shape, ifm.shape) or ifm2.dtype != ifm.dtype:
            raise LoweringError(f"{op.kind} of maps shaped {ifm.shape} and {ifm2.shape}: equal shapes, or a second "
                                "map of one row and/or column with the same channels, only")
        minmax_quant(op.kind, ifm, ifm2, ofm)
        return EltSpec(op.kind, ifm, ifm2, ofm, activation)
    assert b.data is not None and b.quant is not None
    if b.dtype != ifm.dtype or not b.quant.per_tensor:
        raise LoweringError(f"{op.kind} constant of type {b.dtype} or per-channel quantization")
    data = b.data.reshape(-1)
    minmax_quant(op.kind, ifm, FeatureMap((1, 1, 1), b.dtype, b.quant.zero_point, float(b.quant.scale)), ofm)
    if data.size == 1:
        cq = FeatureMap((1, 1, 1), b.dtype, b.quant.zero_point, float(b.quant.scale))
        return EltSpec(op.kind, ifm, cq, ofm, activation, scalar=int(data[0]))
    shape2 = constant_shape(tuple(int(d) for d in b.data.shape), ifm.shape)
    if shape2 is None:
        raise LoweringError(f"{op.kind} constant of shape {b.data.shape}: one value, or a map whose H, W and C are "
                            "each the input's or 1, only")
    cq = FeatureMap(shape2, b.dtype, b.quant.zero_point, float(b.quant.scale), region=REGION_COEFFS)
    return EltSpec(op.kind, ifm, cq, ofm, activation, const=data.astype(b.dtype).tobytes())


def constant_shape(shape: tuple[int, ...], like: tuple[int, int, int]) -> tuple[int, int, int] | None:
    """The (h, w, c) of a constant second operand (rank 1..4, aligned at the right as TFLite broadcasts, batch 1)
    when each of its H, W and C is the map's or 1 (the NPU broadcasts IFM2 along each such axis); else None. A
    per-channel vector is (1, 1, C); an NCHW-born per-"channel" constant (1, C, 1, 1) is (C, 1, 1)."""
    if not 1 <= len(shape) <= 4 or (len(shape) == 4 and shape[0] != 1):
        return None
    full = (1,) * (3 - min(len(shape), 3)) + shape[-3:]
    if any(d not in (1, m) for d, m in zip(full, like)):
        return None
    return (full[0], full[1], full[2])


def broadcast_shape(shape: tuple[int, ...], like: tuple[int, int, int]) -> tuple[int, int, int] | None:
    """The (h, w, c) of a second elementwise operand of rank 1..4 (TFLite aligns shapes at the right), or None
    (the default NHWC reading) when it has rank 4 or does not align."""
    if len(shape) >= 4 or len(shape) == 0:
        return None
    full = (1,) * (3 - len(shape)) + tuple(int(d) for d in shape)
    return (full[0], full[1], full[2]) if full[2] == like[2] else None


def broadcasts(shape2: tuple[int, int, int], shape: tuple[int, int, int]) -> bool:
    """A second operand the NPU broadcasts along H and/or W (IFM2_BROADCAST): same channels, each of H and W
    equal or 1."""
    return shape2[2] == shape[2] and all(a in (1, b) for a, b in zip(shape2[:2], shape[:2]))


MINMAX = ("MINIMUM", "MAXIMUM")


def minmax_quant(kind: str, ifm: FeatureMap, ifm2: FeatureMap, ofm: FeatureMap) -> None:
    """MAXIMUM / MINIMUM compare the raw quantized values (TFLite's kernels do not requantize): the operands and
    the output must share one quantization. Vela leaves the operation on the CPU otherwise (its raw output refuses
    such a model)."""
    if kind not in MINMAX:
        return
    for other in (ifm2, ofm):
        if other.zero_point != ifm.zero_point or np.float32(other.scale) != np.float32(ifm.scale):
            raise LoweringError(f"{kind} whose operands and output differ in quantization")


def lower(spec: ConvSpec | PoolSpec | EltSpec | LutSpec | RescaleSpec | PadSpec | MeanSpec,
          vela_compat: bool = False) -> list[Kick]:
    """The kicks of one computing operation (data movement is teflon.ethosu.moves.lower_moves and SOFTMAX
    teflon.ethosu.softmax.lower_softmax, both built on this module's pool copies and register helpers)."""
    if vela_compat and isinstance(spec, (EltSpec, LutSpec, RescaleSpec)) and vela_reshapes(spec):
        operands = " with operands of one shape" if isinstance(spec, EltSpec) else ""
        raise LoweringError(f"an element-wise operation on {spec.ifm.shape[2]} channels{operands}: Vela reshapes such "
                            "an operation (a shape search of its own, not modelled); the default compile runs it as "
                            "it is")
    if isinstance(spec, RescaleSpec):
        return lower_rescale(spec)
    if isinstance(spec, PadSpec):
        return lower_pad(spec)
    if isinstance(spec, MeanSpec):
        return lower_mean(spec, vela_compat) if vela_compat else lower_mean_builtin(spec)
    if isinstance(spec, ConvSpec):
        return lower_conv(spec, vela_compat)
    if isinstance(spec, PoolSpec):
        return lower_pool(spec)
    if isinstance(spec, LutSpec):
        return lower_lut(spec)
    if spec.scalar is not None and not vela_compat:
        spec = scalar_as_channels(spec)
    return lower_elementwise(spec)


def vela_reshapes(spec: EltSpec | LutSpec | RescaleSpec) -> bool:
    """Whether Vela 5.2.0 gives the operation another shape: an element-wise operation on fewer than 8 channels
    and more than 16 values whose second operand (a map or a constant) has its shape, or is one value, or that has
    one input (the LUT activations, the requantizing RELUs and QUANTIZE). Measured: (8, 8, 4) ADD becomes 4x4x16,
    (1, 4420, 2) MUL 17x13x40, (5, 7, 3) 1x1x105, (3, 3, 2) 1x1x18, 17 to 25 values 1x1xN, HARD_SWISH and RELU
    (4, 4, 3) 3x1x16, LOGISTIC (3, 3, 5) 1x1x45; maps of at most 16 values keep theirs ((4, 4, 1), (3, 5, 1),
    (2, 3, 2), (1, 13, 1), HARD_SWISH (2, 2, 3) and 12 others). A second operand broadcast along H, W or C keeps the
    shape. The shape Vela picks follows no rule found here (a search of its own), so --vela-compat refuses these;
    the default compile never reshapes: the NPU runs any depth, as Vela's own broadcast kicks on 1 to 7 channels do
    (docs/hardware/ethosu-compiler.md)."""
    same = (not isinstance(spec, EltSpec) or spec.scalar is not None
            or (spec.ifm2 is not None and spec.ifm2.shape == spec.ifm.shape))
    h, w, c = spec.ifm.shape
    return c < MIN_ELEMENTWISE_DEPTH and h * w * c > VELA_RESHAPE_MIN_VALUES and same


def scalar_as_channels(spec: EltSpec) -> EltSpec:
    """The default compile's form of a one-value constant operand: the value repeated once per channel, a (1, 1, C)
    constant in the coefficient region broadcast along H and W, exactly as Vela lowers a per-channel constant. Vela's
    own form (NPU_SET_IFM2_SCALAR with broadcast_scalar, kept by --vela-compat) is refused by the first accel/ethosu
    release, whose validator took a scalar only in the U85's encoding (fixed in mainline by 838ae99f9a77;
    docs/hardware/ethosu-kernel.md): this form runs on either."""
    assert spec.ifm2 is not None and spec.scalar is not None
    c = spec.ifm.shape[2]
    ifm2 = replace(spec.ifm2, shape=(1, 1, c), region=REGION_COEFFS)
    data = np.full(c, spec.scalar, np.int64).astype(spec.ifm2.dtype).tobytes()
    return replace(spec, ifm2=ifm2, scalar=None, const=data)


MIN_ELEMENTWISE_DEPTH = 8  # below it Vela reshapes an element-wise operation of one shape (vela_reshapes)
VELA_RESHAPE_MIN_VALUES = 16  # ... of more values than this (measured, vela_reshapes)
ELEMENTWISE_MODE = {"MUL": 0, "ADD": 1, "SUB": 2, "MINIMUM": 3, "MAXIMUM": 4}  # NPU_OP_ELEMENTWISE mode (regs)


def lower_elementwise(spec: EltSpec) -> list[Kick]:
    ifm, ifm2, ofm = spec.ifm, spec.ifm2, spec.ofm
    assert ifm2 is not None
    scalar = spec.scalar is not None
    cfg = blocks.find(OpGeometry(blocks.KIND_ELEMENTWISE, ifm.shape, ofm.shape, scalar=scalar))
    if cfg is None:
        raise LoweringError("no block configuration fits")
    r: Regs = {"NPU_SET_PARALLEL_MODE": {"cores_m1": 0}}
    scale_mode = 0
    ofm_scale_mode = 1
    if spec.kind in MINMAX:  # the raw values compared: unit scale, OFM_PRECISION scale mode 0 (Vela's state)
        (m, n), ofm_scale_mode = (1, 0), 0
    elif spec.kind == "MUL":
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
    r["NPU_SET_OFM_PRECISION"] = precision(ofm.dtype, scale_mode=ofm_scale_mode)
    r.update(activation_regs(ofm, spec.activation))
    if scalar:
        r["NPU_SET_IFM2_SCALAR"] = {"value": spec.scalar}
    else:
        regs2 = ifm_regs(ifm2, "IFM2")
        if spec.const is not None and ifm2.shape[1] == 1:  # one column, read at every x: Vela gives X the row
            regs2["NPU_SET_IFM2_STRIDE_X"] = regs2["NPU_SET_IFM2_STRIDE_Y"]
        r.update(regs2)
    r["NPU_SET_IFM2_ZERO_POINT"] = {"value": ifm2.zero_point}
    r["NPU_SET_IFM2_PRECISION"] = precision(ifm2.dtype)
    bh, bw = int(ifm2.shape[0] != ofm.shape[0]), int(ifm2.shape[1] != ofm.shape[1])
    bc = int(ifm2.shape[2] != ofm.shape[2])
    r["NPU_SET_IFM2_BROADCAST"] = {"broadcast_height": 0 if scalar else bh, "broadcast_width": 0 if scalar else bw,
                                   "broadcast_depth": 0 if scalar else bc, "operand_order": 0,
                                   "broadcast_scalar": int(scalar)}
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
    return [load_lut(k, spec.table)]


def load_lut(k: Kick, table: bytes) -> Kick:
    """The kick's LUT DMA'd from region 0 into the LUT slot of SHRAM before its registers, waited for right before
    the kick (Vela's order)."""
    k.pre = [("NPU_SET_DMA0_SRC_REGION", {"region": REGION_COEFFS, "internal": 0, "stride_mode": 0}),
             ("NPU_SET_DMA0_SRC", {"addr": 0}),  # the table's offset, set where the program places it
             ("NPU_SET_DMA0_DST_REGION", {"region": LUT_DMA_REGION, "internal": 1, "stride_mode": 0}),
             ("NPU_SET_DMA0_DST", {"addr": LUT_SHRAM_ADDRESS}),
             ("NPU_SET_DMA0_LEN", {"length": len(table)}),
             ("NPU_OP_DMA_START", {"channel_mode": 0})]
    k.wait = [("NPU_OP_DMA_WAIT", {"outstanding": 0, "channel": 0})]
    k.info["lut"] = table
    return k


@dataclass(frozen=True)
class RescaleSpec:
    """RELU / RELU6 / RELU_N1_TO_1 / RELU_0_TO_1 / QUANTIZE of an 8-bit map on its own, as Vela lowers them: a 1x1
    AVERAGE pool keeping both zero points whose global OFM scale requantizes (TFL rounding) and whose
    ACTIVATION_MIN/MAX clamp."""

    ifm: FeatureMap
    ofm: FeatureMap
    scale: tuple[int, int]  # (multiplier, shift) of s_in / s_out
    clamp: tuple[int, int]  # in OFM values


def lower_rescale(spec: RescaleSpec) -> list[Kick]:
    k = lower_pool(copy_spec(spec.ifm, spec.ofm))[0]
    k.regs["NPU_SET_OFM_PRECISION"] = precision(spec.ofm.dtype, scale_mode=1, round_mode=quant.ROUND_TFL)
    k.regs["NPU_SET_OFM_SCALE"] = {"scale": spec.scale[0], "shift": spec.scale[1]}
    k.regs["NPU_SET_ACTIVATION_MIN"] = {"value": spec.clamp[0]}
    k.regs["NPU_SET_ACTIVATION_MAX"] = {"value": spec.clamp[1]}
    return [k]


@dataclass(frozen=True)
class PadSpec:
    """PAD of an 8-bit map in H and W with its zero point, as Vela lowers it: a copy of the input into the output's
    interior, then one copy per border from a constant map of zero points in the coefficient region, each border
    read as a packed (h, w, C) map: the right and left columns over the output's whole height, then the bottom and
    top rows over its whole width (Vela's order; a border of width 0 is skipped)."""

    ifm: FeatureMap
    ofm: FeatureMap
    pads: tuple[int, int, int, int]  # (top, bottom, left, right)

    def borders(self) -> list[tuple[int, int, int, int]]:
        """(y, x, h, w) of each border copy, in Vela's order."""
        t, b, left, r = self.pads
        h, w, _ = self.ofm.shape
        out = [(0, w - r, h, r), (0, 0, h, left), (h - b, 0, b, w), (0, 0, t, w)]
        return [p for p in out if p[2] and p[3]]


def lower_pad(spec: PadSpec) -> list[Kick]:
    ifm, ofm = spec.ifm, spec.ofm
    c = ofm.shape[2]
    sy, sx, _ = ofm.strides
    t, _, left, _ = spec.pads

    def window(y: int, x: int, shape: tuple[int, int, int]) -> FeatureMap:
        return replace(ofm, shape=shape, offset=ofm.offset + y * sy + x * sx, row_stride=sy, pixel_stride=sx)

    kicks = lower_pool(copy_spec(ifm, window(t, left, ifm.shape)))
    for y, x, bh, bw in spec.borders():
        fill = FeatureMap((bh, bw, c), ofm.dtype, ofm.zero_point, ofm.scale, region=REGION_COEFFS)
        k = lower_pool(copy_spec(fill, window(y, x, (bh, bw, c)), 3))[0]
        k.info["fill"] = np.full(bh * bw * c, ofm.zero_point, np.int64).astype(ofm.dtype).tobytes()
        kicks.append(k)
    return kicks


@dataclass(frozen=True)
class MeanSpec:
    """MEAN of an 8-bit map over H and W, as Vela lowers it (its graph optimiser's convert_mean_to_depthwise_conv,
    which follows TFLite's reference kernel): a DEPTHWISE convolution with an all-ones H x W kernel sums each channel
    (input zero point removed, unit scale) into a 32-bit NHCWB16 map; an element-wise MUL by a 32-bit constant K
    then divides by the element count and requantizes: OFM = (sum * K) >> shift (TFL rounding) + zp_out."""

    ifm: FeatureMap
    ofm: FeatureMap  # (1, 1, C)
    scratch: FeatureMap  # the (1, 1, C) 32-bit sums; region and offset set by the program
    multiplier: int  # K
    shift: int
    real_scale: float  # the default compile's form (lower_mean_builtin): s_in / (n * s_out) in float32
    bias: int  # and its output offset

    @property
    def scratch_bytes(self) -> int:
        return ACC_BYTES * -(-self.ifm.shape[2] // BRICK) * BRICK


ACC_BYTES = 4  # a 32-bit map's element
BRICK = 16  # NHCWB16: channels in bricks of 16


def mean_scale(s_in: float, s_out: float, n: int) -> tuple[int, int]:
    """(K, shift) of MEAN's division: TFLite's multiplier of s_in / s_out (quant.quantise, in double) shifted left
    by floor(log2 n) (at most 32, and no further than the multiplier's own exponent allows), then divided by n
    (integer division), the shift reduced to match (Vela convert_mean_to_depthwise_conv, TFLite reference Mean)."""
    m, vela_shift = quant.quantise(float(np.float32(s_in)) / float(np.float32(s_out)))
    exponent = 31 - vela_shift
    up = min(n.bit_length() - 1, 32, 31 + exponent)
    k = (m << up) // n
    return k, 31 - (exponent - up)


def brick32_regs(fm: FeatureMap, prefix: str) -> Regs:
    """A (h, w, c) 32-bit map stored NHCWB16 (Vela's form of MEAN's sums): x stride a brick row (16 elements),
    c stride one brick plane (w bricks), y stride every plane of a row."""
    _, w, c = fm.shape
    sc = w * BRICK * ACC_BYTES
    r = {f"NPU_SET_{prefix}_REGION": {"region": fm.region}, f"NPU_SET_{prefix}_BASE0": {"addr": fm.offset},
         f"NPU_SET_{prefix}_STRIDE_X": {"value": BRICK * ACC_BYTES}, f"NPU_SET_{prefix}_STRIDE_C": {"value": sc},
         f"NPU_SET_{prefix}_STRIDE_Y": {"value": -(-c // BRICK) * sc},
         f"NPU_SET_{prefix}_ZERO_POINT": {"value": 0},
         f"NPU_SET_{prefix}_PRECISION": {"activation_type": 1, "activation_precision": 2, "format": 1}}
    return r


def lower_mean(spec: MeanSpec, vela_compat: bool = False) -> list[Kick]:
    ifm, ofm, sums = spec.ifm, spec.ofm, spec.scratch
    h, w, c = ifm.shape
    unit = replace(sums, scale=1.0)
    conv = ConvSpec(replace(ifm, scale=1.0), unit, np.ones((c, h, w, 1), np.int64), np.zeros(c, np.int64),
                    np.ones(c, np.float32), depthwise=True)
    (k0,) = lower_conv(conv, vela_compat)
    k0.regs.update(brick32_regs(sums, "OFM"))
    k0.regs["NPU_SET_OFM_PRECISION"] = {**k0.regs["NPU_SET_OFM_PRECISION"], "activation_type": 1,
                                        "activation_precision": 2, "format": 1}
    k0.regs["NPU_SET_ACTIVATION_MIN"] = {"value": -(1 << 15)}  # Vela clamps the registers to int16
    k0.regs["NPU_SET_ACTIVATION_MAX"] = {"value": (1 << 15) - 1}
    const = FeatureMap((1, 1, 1), "int8", 0, 1.0, region=REGION_COEFFS)
    data = np.array([spec.multiplier], np.int32).astype("<i4").tobytes()
    (k1,) = lower_elementwise(EltSpec("MUL", unit, const, ofm, const=data))
    cfg = blocks.find(OpGeometry(blocks.KIND_ELEMENTWISE, sums.shape, ofm.shape, ifm_bits=32))
    if cfg is None:
        raise LoweringError("no block configuration fits")
    k1.block = cfg
    k1.regs.update(block_regs(cfg, ifm2=True))
    k1.regs.update(brick32_regs(sums, "IFM"))
    k1.regs["NPU_SET_IFM_PRECISION"] = {**k1.regs["NPU_SET_IFM_PRECISION"], "activation_precision": 2, "format": 1,
                                        "activation_type": 1}
    for axis in ("X", "Y", "C"):
        k1.regs[f"NPU_SET_IFM2_STRIDE_{axis}"] = {"value": ACC_BYTES}
    k1.regs["NPU_SET_IFM2_PRECISION"] = {"activation_type": 1, "activation_precision": 2, "format": 0}
    k1.regs["NPU_SET_IFM2_BROADCAST"] = {**k1.regs["NPU_SET_IFM2_BROADCAST"], "broadcast_depth": 1}
    k1.regs["NPU_SET_OFM_SCALE"] = {"scale": 1, "shift": spec.shift}
    k1.regs["NPU_SET_OFM_PRECISION"] = precision(ofm.dtype, scale_mode=1, round_mode=quant.ROUND_TFL)
    return [k0, k1]


def mean_builtin_params(s_in: float, zp_in: int, s_out: float, n: int, zp_out: int) -> tuple[float, int]:
    """(scale, bias) of TFLite 2.14's builtin int8/uint8 MEAN over H and W (keep_dims): the raw input sum times
    the multiplier of s_in / (n * s_out) (float32), plus zp_out - round_half_away(zp_in * s_in / s_out) (float32),
    clamped. Measured equal to the runtime on 3840 outputs of 120 random cases (tests/ethos_u/test_ops_sim.py)."""
    si, so = np.float32(s_in), np.float32(s_out)
    scale = float(np.float32(si / np.float32(np.float32(n) * so)))
    t = np.float32(np.float32(np.float32(zp_in) * si) / so)
    t = np.float32(t + np.float32(0.5)) if t > 0 else np.float32(t - np.float32(0.5))
    return scale, zp_out - int(t)


def lower_mean_builtin(spec: MeanSpec) -> list[Kick]:
    """The default compile's MEAN: one unpadded AVERAGE pool over the whole H x W on the raw input (IFM zero point
    0). Unpadded, the pool's OFM scale does the division (see `quant.pool_scale`), so a global OFM scale of
    `real_scale` with TFL rounding (MultiplyByQuantizedMultiplier) and the OFM zero point `bias` give TFLite's
    builtin MEAN exactly. (Vela's two kicks follow the reference kernel's arithmetic, which the builtin kernel does
    not: within 1 LSB of it, 88 % exact.)"""
    ifm, ofm = spec.ifm, spec.ofm
    h, w, _ = ifm.shape
    if not (-(1 << 15) if ofm.dtype == "int8" else 0) <= spec.bias < (1 << 15):
        # the offset is the OFM zero point: a 16-bit register, read unsigned for an unsigned map
        raise LoweringError(f"MEAN whose output offset {spec.bias} does not fit a {ofm.dtype} map's zero point")
    # copy=True: the zero points as given (0 in, the offset out) and a scale set below
    (k,) = lower_pool(PoolSpec(replace(ifm, zero_point=0), replace(ofm, zero_point=spec.bias), "avg", (h, w), (1, 1),
                               False, copy=True))
    m, shift = quant.quantise(spec.real_scale)
    k.regs["NPU_SET_OFM_SCALE"] = {"scale": m, "shift": shift}
    k.regs["NPU_SET_OFM_PRECISION"] = precision(ofm.dtype, scale_mode=1, round_mode=quant.ROUND_TFL)
    return [k]
