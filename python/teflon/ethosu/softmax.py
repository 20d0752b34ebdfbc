"""SOFTMAX of an 8-bit map on the Ethos-U65, in the kick sequence Vela 5.2.0 uses for it (decoded from its streams
of single-SOFTMAX models; docs/hardware/ethosu-compiler.md "SOFTMAX"). The arithmetic is TFLite's *reference* 8-bit
softmax (gemmlowp fixed point), step for step:

  0  MAX pool of each row                                       -> m           (8-bit)
  1  SUB x - m, through a 32-bit LUT of exp(beta * s_in * diff)   -> e           (Q0.31)
  2  SHR e by 12 (round to nearest)                               -> e >> 12     (Q12 terms)
  3  REDUCE_SUM over the row                                      -> sum
  4  CLZ sum                                                      -> hr = headroom + 1
  5  SUB 35 - hr                                                  -> the final right shift (bits over unit + 23)
  6  SUB hr - 1;  7  SHL sum by it                                -> d = sum << (hr - 1)
  8  MUL d by -32/17; 9  ADD 48/17                                -> x0 (Newton-Raphson start, Q2.29)
 10-24  three Newton-Raphson steps x += x * (1 - x * d) * 4       -> 1 / d
 25  MUL e by the reciprocal (x 2: the doubling high multiply)   -> p
 26  SHR p by the right shift, + zp_out, clamped                  -> the output

A row is the innermost axis (C of the (H, W, C) reading); the rows are laid out along W as (1, H x W, C). The
scratch maps (the exponentials, the sums and the per-row values) are 32-bit; the program places them in the arena.

The reference kernel's final shift is `bits over unit + 23`; once the exponentials sum to 512 or more the shift
exceeds 31 and the reference kernel (and Vela's stream) give garbage where TFLite's builtin kernel gives ~0. A row
of fewer than 512 values cannot reach that sum: longer rows are refused (`MAX_ROW`)."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace

import numpy as np

from teflon import fixedpoint as fx
from teflon.ethosu import blocks, quant
from teflon.ethosu.blocks import OpGeometry
from teflon.ethosu.lower import (
    ACC_BYTES,
    BRICK,
    REGION_COEFFS,
    FeatureMap,
    Kick,
    LoweringError,
    Regs,
    block_regs,
    ifm_regs,
    kernel_regs,
    load_lut,
    ofm_regs,
    precision,
)

SCALED_DIFF_INTEGER_BITS = 5  # TFLite's reference softmax: the scaled difference is Q5.26
ACCUMULATION_INTEGER_BITS = 12  # its sum of exponentials is Q12.19: each term is e >> 12
MAX_ROW = 511  # the exponentials (each at most 1) then sum below 512: the final shift stays within 31
# Newton-Raphson constants of gemmlowp's one_over_one_plus_x_for_x_in_0_1, in Q2.29
NR_48_OVER_17 = 1515870810
NR_MINUS_32_OVER_17 = -1010580540
NR_ONE = 1 << 29
NR_STEPS = 3
DOUBLING_HIGH_MUL = (1 << 30, 31)  # OFM_SCALE of a 32-bit MUL giving a * b / 2^31 (ethosu-sim.md, 32-bit MUL)
TWICE_HIGH_MUL = (1 << 30, 30)
ELT = {"MUL": 0, "ADD": 1, "SUB": 2, "CLZ": 7, "SHR": 8, "SHL": 9}  # NPU_OP_ELEMENTWISE mode
POOL_MAX, POOL_REDUCE_SUM = 0, 2


def beta_scaling(beta: float, s_in: float) -> tuple[int, int, int]:
    """(multiplier, left shift, diff_min) of TFLite's PreprocessSoftmaxScaling / CalculateInputRadius (reference
    8-bit softmax): beta * s_in in Q5.26 units as a multiplier greater than one."""
    real = min(beta * float(np.float32(s_in)) * (1 << (31 - SCALED_DIFF_INTEGER_BITS)), float((1 << 31) - 1))
    mult, shift = fx.quantize_multiplier(real)
    if shift < 0:
        raise LoweringError(f"SOFTMAX: beta x input scale {beta * s_in:g} is below the reference kernel's range")
    radius = ((1 << SCALED_DIFF_INTEGER_BITS) - 1) * (1 << (31 - SCALED_DIFF_INTEGER_BITS)) / (1 << shift)
    return mult, shift, -int(np.floor(radius))


def exp_table(beta: float, s_in: float) -> bytes:
    """The 256 x int32 LUT of step 1: entry i is exp(beta * s_in * (i - 255)) in Q0.31 as the reference kernel
    computes it (0 below diff_min). The SUB's result x - max (<= 0) plus the OFM zero point 127 indexes it."""
    mult, shift, diff_min = beta_scaling(beta, s_in)
    d = np.arange(-255, 1, dtype=np.int64)
    rescaled = fx.srdhm32(d * (1 << shift), mult)
    e = fx.exp_on_negative_values(rescaled, SCALED_DIFF_INTEGER_BITS)
    return np.where(d >= diff_min, e, 0).astype("<i4").tobytes()


@dataclass(frozen=True)
class SoftmaxSpec:
    """A SOFTMAX as the NPU sees it: its maps, its exp table and the place of its 32-bit scratch."""

    ifm: FeatureMap  # (1, rows, C)
    ofm: FeatureMap  # (1, rows, C)
    table: bytes  # exp_table
    scratch: FeatureMap  # region and offset of the scratch bytes (set by the program); shape unused

    @property
    def rows(self) -> int:
        return self.ifm.shape[1]

    @property
    def depth(self) -> int:
        return self.ifm.shape[2]

    def layout(self) -> dict[str, int]:
        """Byte offsets of the scratch maps, from the scratch base (each 16-byte aligned)."""
        r, c = self.rows, self.depth
        bricks = r * -(-c // BRICK) * BRICK * ACC_BYTES
        sizes = {"max": r, "exp": bricks, "terms": r * c * ACC_BYTES, "prod": bricks}
        sizes.update(dict.fromkeys(("a", "b", "c", "d"), r * BRICK * ACC_BYTES))
        out, at = {}, 0
        for name, n in sizes.items():
            out[name] = at
            at += -(-n // 16) * 16
        out["end"] = at
        return out

    @property
    def scratch_bytes(self) -> int:
        return self.layout()["end"]


def _map32(spec: SoftmaxSpec, name: str, depth: int, prefix: str, bricks: bool = True) -> Regs:
    """A (1, rows, depth) 32-bit scratch map: NHCWB16 (x stride one brick row, c stride a brick plane) or NHWC."""
    r = spec.rows
    base = spec.scratch.offset + spec.layout()[name]
    if bricks:
        sc = r * BRICK * ACC_BYTES
        sx, sy = BRICK * ACC_BYTES, -(-depth // BRICK) * sc
    else:
        sc, sx = ACC_BYTES, depth * ACC_BYTES
        sy = r * sx
    regs: Regs = {f"NPU_SET_{prefix}_REGION": {"region": spec.scratch.region},
                  f"NPU_SET_{prefix}_BASE0": {"addr": base}}
    for i in (1, 2, 3):
        regs[f"NPU_SET_{prefix}_BASE{i}"] = {"addr": 0}
    if prefix == "OFM":
        regs.update({"NPU_SET_OFM_HEIGHT_M1": {"value": 0}, "NPU_SET_OFM_WIDTH_M1": {"value": r - 1},
                     "NPU_SET_OFM_HEIGHT0_M1": {"value": 0}, "NPU_SET_OFM_HEIGHT1_M1": {"value": 0},
                     "NPU_SET_OFM_WIDTH0_M1": {"value": r - 1}, "NPU_SET_OFM_DEPTH_M1": {"value": depth - 1}})
    else:
        regs.update({f"NPU_SET_{prefix}_HEIGHT0_M1": {"value": 0}, f"NPU_SET_{prefix}_HEIGHT1_M1": {"value": 0},
                     f"NPU_SET_{prefix}_WIDTH0_M1": {"value": r - 1}})
        if prefix == "IFM":
            regs["NPU_SET_IFM_DEPTH_M1"] = {"value": depth - 1}
    regs.update({f"NPU_SET_{prefix}_STRIDE_Y": {"value": sy}, f"NPU_SET_{prefix}_STRIDE_X": {"value": sx},
                 f"NPU_SET_{prefix}_STRIDE_C": {"value": sc}, f"NPU_SET_{prefix}_ZERO_POINT": {"value": 0}})
    fmt = {"activation_type": 1, "activation_precision": 2, "format": int(bricks)}
    if prefix == "OFM":
        regs["NPU_SET_OFM_PRECISION"] = fmt
    elif prefix == "IFM":
        regs["NPU_SET_IFM_PRECISION"] = {**fmt, "scale_mode": 0, "round_mode": 0}
    else:
        regs["NPU_SET_IFM2_PRECISION"] = fmt
    return regs


def _const_regs(prefix: str) -> Regs:
    """A one-value 32-bit constant in region 0 (its offset set by the program), broadcast along W and C."""
    regs: Regs = {f"NPU_SET_{prefix}_REGION": {"region": REGION_COEFFS}, f"NPU_SET_{prefix}_BASE0": {"addr": 0}}
    for i in (1, 2, 3):
        regs[f"NPU_SET_{prefix}_BASE{i}"] = {"addr": 0}
    regs.update({f"NPU_SET_{prefix}_HEIGHT0_M1": {"value": 0}, f"NPU_SET_{prefix}_HEIGHT1_M1": {"value": 0},
                 f"NPU_SET_{prefix}_WIDTH0_M1": {"value": 0}, f"NPU_SET_{prefix}_STRIDE_Y": {"value": ACC_BYTES},
                 f"NPU_SET_{prefix}_STRIDE_X": {"value": ACC_BYTES}, f"NPU_SET_{prefix}_STRIDE_C": {"value": ACC_BYTES},
                 f"NPU_SET_{prefix}_ZERO_POINT": {"value": 0},
                 f"NPU_SET_{prefix}_PRECISION": {"activation_type": 1, "activation_precision": 2, "format": 0}})
    if prefix == "IFM":
        regs["NPU_SET_IFM_DEPTH_M1"] = {"value": 0}
        regs["NPU_SET_IFM_PRECISION"] = {**regs["NPU_SET_IFM_PRECISION"], "scale_mode": 0, "round_mode": 0}
    return regs


def _broadcast(width: bool = False, depth: bool = False, swap: bool = False) -> Regs:
    return {"NPU_SET_IFM2_BROADCAST": {"broadcast_height": 0, "broadcast_width": int(width),
                                       "broadcast_depth": int(depth), "operand_order": int(swap),
                                       "broadcast_scalar": 0}}


def _clamp32() -> Regs:
    # Vela clamps ACTIVATION_MIN/MAX to int16 for its 32-bit OFMs (not applied to them: ethosu-sim.md)
    return {"NPU_SET_ACTIVATION": {"type": 0, "clip_range": 0}, "NPU_SET_ACTIVATION_MIN": {"value": -(1 << 15)},
            "NPU_SET_ACTIVATION_MAX": {"value": (1 << 15) - 1}}


def _elt(spec: SoftmaxSpec, mode: str, a: Regs, b: Regs, out: Regs, depth: int, scale: tuple[int, int],
         ofm_scale_mode: int, round_mode: int = quant.ROUND_TFL, ifm_bits: int = 32) -> Kick:
    shape = (1, spec.rows, depth)
    cfg = blocks.find(OpGeometry(blocks.KIND_ELEMENTWISE, shape, shape, ifm_bits=ifm_bits))
    if cfg is None:
        raise LoweringError("SOFTMAX: no block configuration fits")
    r: Regs = {"NPU_SET_PARALLEL_MODE": {"cores_m1": 0}, "NPU_SET_IFM_UPSCALE": {"mode": 0}}
    r.update(a)
    r.update(b)
    r.update(out)
    r["NPU_SET_OFM_PRECISION"] = {**r["NPU_SET_OFM_PRECISION"], "scale_mode": ofm_scale_mode, "round_mode": round_mode}
    r["NPU_SET_OFM_SCALE"] = {"scale": scale[0], "shift": scale[1]}
    r.update(_clamp32())
    r.update(block_regs(cfg, ifm2=True))
    r["NPU_SET_BLOCKDEP"] = {"value": 0}
    return Kick("NPU_OP_ELEMENTWISE", {"mode": ELT[mode]}, r, block=cfg)


def _with_const(k: Kick, value: int, prefix: str) -> Kick:
    data = np.array([value], "<i4").tobytes()
    k.info["const" if prefix == "IFM2" else "fill"] = data
    return k


def _blockdeps(kicks: list[Kick]) -> None:
    """BLOCKDEP 3 (no wait for the previous kick's blocks) where a kick reads nothing the previous kick wrote, 0
    elsewhere (Vela's values in the sequence: only `hr - 1` after `35 - hr` gets 3). Maps are whole scratch slots,
    so a shared base is a shared map."""
    for prev, k in itertools.pairwise(kicks):
        wrote = (prev.regs["NPU_SET_OFM_REGION"]["region"], prev.regs["NPU_SET_OFM_BASE0"]["addr"])
        reads = {(k.regs[f"NPU_SET_{p}_REGION"]["region"], k.regs[f"NPU_SET_{p}_BASE0"]["addr"])
                 for p in ("IFM", "IFM2") if f"NPU_SET_{p}_REGION" in k.regs}
        k.regs["NPU_SET_BLOCKDEP"] = {"value": 0 if wrote in reads else 3}


def lower_softmax(spec: SoftmaxSpec, vela_compat: bool = False) -> list[Kick]:
    r, c = spec.rows, spec.depth
    ifm, ofm = spec.ifm, spec.ofm
    base = spec.scratch.offset + spec.layout()["max"]
    kicks: list[Kick] = []

    # 0: the maximum of each row: a MAX pool of the rows read as (rows, C, 1) with a 1 x C window
    rows_in = replace(ifm, shape=(r, c, 1), row_stride=c, pixel_stride=1)
    m = replace(ifm, shape=(r, 1, 1), region=spec.scratch.region, offset=base, row_stride=None, pixel_stride=None)
    cfg = blocks.find(OpGeometry(blocks.KIND_POOL, rows_in.shape, m.shape, (1, c), (1, 1)))
    if cfg is None:
        raise LoweringError("SOFTMAX: no block configuration fits the row maximum")
    regs: Regs = {"NPU_SET_PARALLEL_MODE": {"cores_m1": 0}}
    regs.update(ifm_regs(rows_in))
    regs["NPU_SET_IFM_PRECISION"] = precision(ifm.dtype)
    regs.update({"NPU_SET_IFM_UPSCALE": {"mode": 0}, "NPU_SET_IFM_PAD_TOP": {"value": 0},
                 "NPU_SET_IFM_PAD_LEFT": {"value": 0}, "NPU_SET_IFM_PAD_BOTTOM": {"value": 0},
                 "NPU_SET_IFM_PAD_RIGHT": {"value": 0}})
    regs.update(ofm_regs(m))
    regs["NPU_SET_OFM_PRECISION"] = precision(ifm.dtype, scale_mode=1, round_mode=quant.ROUND_TFL)
    one_row = r == 1  # Vela keeps a single row's maximum as one 8-bit NHCWB16 brick
    if one_row:
        regs["NPU_SET_OFM_PRECISION"]["format"] = 1
        regs.update({f"NPU_SET_OFM_STRIDE_{a}": {"value": BRICK} for a in "YXC"})
    regs.update(kernel_regs(1, c, 1, 1, False))
    lo, hi = quant.activation_range(ifm.dtype, ifm.scale, ifm.zero_point, "NONE")
    regs.update({"NPU_SET_ACTIVATION": {"type": 0, "clip_range": 0}, "NPU_SET_ACTIVATION_MIN": {"value": lo},
                 "NPU_SET_ACTIVATION_MAX": {"value": hi}, "NPU_SET_OFM_SCALE": {"scale": 1, "shift": 0}})
    regs.update(block_regs(cfg))
    regs["NPU_SET_BLOCKDEP"] = {"value": 0}
    kicks.append(Kick("NPU_OP_POOL", {"mode": POOL_MAX}, regs, block=cfg))

    # 1: x - max through the exponential LUT (the difference + 127 indexes it, clipped to int8)
    a = ifm_regs(ifm)
    a["NPU_SET_IFM_PRECISION"] = precision(ifm.dtype, scale_mode=0, round_mode=quant.ROUND_TFL)
    b = ifm_regs(replace(m, shape=(1, r, 1), row_stride=r, pixel_stride=1), "IFM2")
    b["NPU_SET_IFM2_PRECISION"] = precision(ifm.dtype, format=int(one_row))
    if one_row:
        b.update({f"NPU_SET_IFM2_STRIDE_{a}": {"value": BRICK} for a in "YXC"})
    b.update(_broadcast(depth=True))
    out = _map32(spec, "exp", c, "OFM")
    k = _elt(spec, "SUB", a, b, out, c, (1, 0), 1, ifm_bits=8)
    k.regs["NPU_SET_OFM_ZERO_POINT"] = {"value": 127}
    k.regs.update({"NPU_SET_ACTIVATION": {"type": 16, "clip_range": 3}, "NPU_SET_ACTIVATION_MIN": {"value": -128},
                   "NPU_SET_ACTIVATION_MAX": {"value": 127}, "NPU_SET_OPA_SCALE": {"scale": 1, "shift": 0},
                   "NPU_SET_OPB_SCALE": {"scale": 1}})
    kicks.append(load_lut(k, spec.table))

    def row(name: str, prefix: str) -> Regs:
        return _map32(spec, name, 1, prefix)

    def const(prefix: str) -> Regs:
        return _const_regs(prefix)

    many = r > 1  # a one-value constant is broadcast along W (the rows) when there are several

    def minus(k_out: str, k_in: str, value: int) -> Kick:
        """value - map: for one row the constant is the IFM itself (it has the map's shape), as Vela writes it;
        for several rows it is IFM2, broadcast, with the operand order swapped."""
        if many:
            k = _elt(spec, "SUB", row(k_in, "IFM"), {**const("IFM2"), **_broadcast(width=True, swap=True)},
                     row(k_out, "OFM"), 1, (1, 0), 1)
            return _with_const(k, value, "IFM2")
        k = _elt(spec, "SUB", const("IFM"), {**row(k_in, "IFM2"), **_broadcast()}, row(k_out, "OFM"), 1, (1, 0), 1)
        return _with_const(k, value, "IFM")

    # 2: each exponential >> 12 (Q12 terms), NHWC
    k = _elt(spec, "SHR", _map32(spec, "exp", c, "IFM"), {**const("IFM2"), **_broadcast(width=many, depth=True)},
             _map32(spec, "terms", c, "OFM", bricks=False), c, (1, 0), 0, quant.ROUND_NATURAL)
    kicks.append(_with_const(k, ACCUMULATION_INTEGER_BITS, "IFM2"))

    # 3: the row sums
    ifm3 = _map32(spec, "terms", c, "IFM", bricks=False)
    out3 = row("b", "OFM")
    cfg = blocks.find(OpGeometry(blocks.KIND_POOL, (1, r, c), (1, r, 1), (1, 1), (1, 1), ifm_bits=32))
    if cfg is None:
        raise LoweringError("SOFTMAX: no block configuration fits the row sums")
    regs = {"NPU_SET_PARALLEL_MODE": {"cores_m1": 0}, **ifm3, "NPU_SET_IFM_UPSCALE": {"mode": 0}}
    regs.update({f"NPU_SET_IFM_PAD_{s}": {"value": 0} for s in ("TOP", "LEFT", "BOTTOM", "RIGHT")})
    regs.update(out3)
    regs["NPU_SET_OFM_PRECISION"] = {**regs["NPU_SET_OFM_PRECISION"], "scale_mode": 1,
                                     "round_mode": quant.ROUND_NATURAL}
    regs.update(kernel_regs(1, 1, 1, 1, False))
    regs.update(_clamp32())
    regs["NPU_SET_OFM_SCALE"] = {"scale": 1, "shift": 0}
    regs.update(block_regs(cfg))
    regs["NPU_SET_BLOCKDEP"] = {"value": 0}
    kicks.append(Kick("NPU_OP_POOL", {"mode": POOL_REDUCE_SUM}, regs, block=cfg))

    # 4: hr = CLZ(sum); 5: the final right shift 35 - hr; 6: hr - 1; 7: d = sum << (hr - 1)
    k = _elt(spec, "CLZ", row("b", "IFM"), {}, row("d", "OFM"), 1, (1, 0), 0)
    kicks.append(k)
    bits = ACCUMULATION_INTEGER_BITS + 31 - 8
    kicks.append(minus("a", "d", bits))
    kicks.append(_with_const(_elt(spec, "SUB", row("d", "IFM"), {**const("IFM2"), **_broadcast(width=many)},
                                  row("c", "OFM"), 1, (1, 0), 1), 1, "IFM2"))
    kicks.append(_elt(spec, "SHL", row("b", "IFM"), {**row("c", "IFM2"), **_broadcast()}, row("c", "OFM"), 1, (1, 0),
                      0))
    # 8, 9: x = 48/17 - 32/17 * d
    kicks.append(_with_const(_elt(spec, "MUL", row("c", "IFM"), {**const("IFM2"), **_broadcast(width=many)},
                                  row("d", "OFM"), 1, DOUBLING_HIGH_MUL, 1), NR_MINUS_32_OVER_17, "IFM2"))
    kicks.append(_with_const(_elt(spec, "ADD", row("d", "IFM"), {**const("IFM2"), **_broadcast(width=many)},
                                  row("d", "OFM"), 1, (1, 0), 1), NR_48_OVER_17, "IFM2"))
    # 10..24: x += 4 * x * (1 - x * d), three times (x ping-pongs between d and b, t the other)
    x, t = "d", "b"
    for _ in range(NR_STEPS):
        kicks.append(_elt(spec, "MUL", row(x, "IFM"), {**row("c", "IFM2"), **_broadcast()}, row(t, "OFM"), 1,
                          DOUBLING_HIGH_MUL, 1))
        kicks.append(minus(t, t, NR_ONE))
        kicks.append(_elt(spec, "MUL", row(x, "IFM"), {**row(t, "IFM2"), **_broadcast()}, row(t, "OFM"), 1,
                          DOUBLING_HIGH_MUL, 1))
        kicks.append(_with_const(_elt(spec, "MUL", row(t, "IFM"), {**const("IFM2"), **_broadcast(width=many)},
                                      row(t, "OFM"), 1, (1, 0), 1), 4, "IFM2"))
        kicks.append(_elt(spec, "ADD", row(x, "IFM"), {**row(t, "IFM2"), **_broadcast()}, row(t, "OFM"), 1, (1, 0), 1))
        x, t = t, x
    # 25: p = e * (1 / d) * 2; 26: p >> (35 - hr), rounded to nearest, + zp_out
    kicks.append(_elt(spec, "MUL", _map32(spec, "exp", c, "IFM"), {**row(x, "IFM2"), **_broadcast(depth=True)},
                      _map32(spec, "prod", c, "OFM"), c, TWICE_HIGH_MUL, 1))
    if vela_compat:  # Vela's no-op: an all-zero 32-bit constant map added to the products
        zeros = {**_const_regs("IFM"), "NPU_SET_IFM_DEPTH_M1": {"value": c - 1},
                 "NPU_SET_IFM_WIDTH0_M1": {"value": r - 1}, "NPU_SET_IFM_STRIDE_Y": {"value": r * c * ACC_BYTES},
                 "NPU_SET_IFM_STRIDE_X": {"value": c * ACC_BYTES}}
        k = _elt(spec, "ADD", zeros, {**_map32(spec, "prod", c, "IFM2"), **_broadcast()},
                 _map32(spec, "prod", c, "OFM"), c, (1, 0), 1)
        k.info["fill"] = bytes(r * c * ACC_BYTES)
        kicks.append(k)
    out = ofm_regs(ofm)
    out["NPU_SET_OFM_PRECISION"] = precision(ofm.dtype)
    k = _elt(spec, "SHR", _map32(spec, "prod", c, "IFM"), {**row("a", "IFM2"), **_broadcast(depth=True)}, out, c,
             (1, 0), 0, quant.ROUND_NATURAL)
    lo, hi = quant.activation_range(ofm.dtype, ofm.scale, ofm.zero_point, "NONE")
    k.regs.update({"NPU_SET_ACTIVATION_MIN": {"value": lo}, "NPU_SET_ACTIVATION_MAX": {"value": hi}})
    kicks.append(k)
    _blockdeps(kicks)
    return kicks
