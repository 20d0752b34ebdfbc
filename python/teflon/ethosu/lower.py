"""TFLite int8/uint8 operations -> Ethos-U65 kicks: the register state of each compute operation (command name ->
field values, in teflon.ethosu.regs names), plus its OHWI weights and scale records.

One `Kick` is one NPU_OP_CONV / DEPTHWISE / POOL / ELEMENTWISE with every register it reads. Addresses are
(region, offset) pairs; the weight and scale streams are attached as data and placed by teflon.ethosu.stream.
What each register holds and why (which part is Vela 5.2.0 Regor's choice, inferred from its compiles of single-op
models) is in docs/hardware/ethosu-compiler.md.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from teflon.ethosu import blocks, quant
from teflon.ethosu.blocks import BlockConfig, OpGeometry

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

    @property
    def strides(self) -> tuple[int, int, int]:
        """(y, x, c) byte strides of NHWC."""
        _, w, c = self.shape
        return (self.row_stride or w * c, c, 1)


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
    sy, sx = spec.stride
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
        r: Regs = {"NPU_SET_PARALLEL_MODE": {"cores_m1": 0}}
        # a depthwise kick reads the IFM channels of its OFM channels
        ic0, ic = (o0, o1 - o0) if spec.depthwise else (0, ifm.shape[2])
        r.update(ifm_regs(replace(ifm, offset=ifm.offset + ic0 * ifm.strides[2]), used=(ih, iw, ic)))
        r["NPU_SET_IFM_PRECISION"] = precision(ifm.dtype)
        r["NPU_SET_IFM_UPSCALE"] = {"mode": 0}
        r["NPU_SET_IFM_PAD_TOP"] = {"value": pt}
        r["NPU_SET_IFM_PAD_LEFT"] = {"value": pl}
        r["NPU_SET_IFM_PAD_BOTTOM"] = {"value": pb}
        r["NPU_SET_IFM_PAD_RIGHT"] = {"value": pr}
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


def lower_pool(spec: PoolSpec) -> list[Kick]:
    ifm, ofm = spec.ifm, spec.ofm
    (kh, kw), (sy, sx) = spec.kernel, spec.stride
    cfg = blocks.find(OpGeometry(blocks.KIND_POOL, ifm.shape, ofm.shape, (kh, kw), (sy, sx)))
    if cfg is None:
        raise LoweringError("no block configuration fits")
    pt, pb = padding(ifm.shape[0], ofm.shape[0], kh, sy, spec.same)
    pl, pr = padding(ifm.shape[1], ofm.shape[1], kw, sx, spec.same)
    scale, shift = quant.pool_scale(ifm.scale, ofm.scale, spec.kind, kh * kw)
    r: Regs = {"NPU_SET_PARALLEL_MODE": {"cores_m1": 0}}
    r.update(ifm_regs(ifm))
    r["NPU_SET_IFM_PRECISION"] = precision(ifm.dtype)
    r["NPU_SET_IFM_UPSCALE"] = {"mode": 0}
    r["NPU_SET_IFM_PAD_TOP"] = {"value": pt}
    r["NPU_SET_IFM_PAD_LEFT"] = {"value": pl}
    r["NPU_SET_IFM_PAD_BOTTOM"] = {"value": pb}
    r["NPU_SET_IFM_PAD_RIGHT"] = {"value": pr}
    r.update(ofm_regs(ofm))
    r["NPU_SET_OFM_PRECISION"] = precision(ofm.dtype, scale_mode=1, round_mode=quant.ROUND_NATURAL)
    r.update(kernel_regs(kh, kw, sy, sx, False))
    r.update(activation_regs(ofm, spec.activation))
    r["NPU_SET_OFM_SCALE"] = {"scale": scale, "shift": shift}
    r.update(block_regs(cfg))
    r["NPU_SET_BLOCKDEP"] = {"value": 0}
    return [Kick("NPU_OP_POOL", {"mode": 0 if spec.kind == "max" else 1}, r, block=cfg)]


@dataclass(frozen=True)
class EltSpec:
    """ADD / SUB / MUL of two feature maps (the second may be broadcast or a scalar)."""

    kind: str  # "ADD", "SUB", "MUL"
    ifm: FeatureMap
    ifm2: FeatureMap | None
    ofm: FeatureMap
    activation: str = "NONE"
    scalar: int | None = None  # the second operand as one quantized value (then ifm2 is None)
    reversed: bool = False  # the feature map is the second TFLite operand


def elementwise_spec(graph: object, op: object, fm: object, activation: str) -> EltSpec:
    raise LoweringError("elementwise operations are not lowered yet")


def lower(spec: ConvSpec | PoolSpec | EltSpec, vela_compat: bool = False) -> list[Kick]:
    if isinstance(spec, ConvSpec):
        return lower_conv(spec, vela_compat)
    if isinstance(spec, PoolSpec):
        return lower_pool(spec)
    return lower_elementwise(spec)


def lower_elementwise(spec: EltSpec) -> list[Kick]:
    raise LoweringError("elementwise operations are not lowered yet")
