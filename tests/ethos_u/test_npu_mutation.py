"""The simulated Ethos-U65 reads every field Vela's streams set: if flipping a field does not change the result,
the simulator is not reading it (the rocket and etnaviv simulators are held to the same rule).

For Vela-compiled single-op streams chosen to cover the features (per-channel conv with padding and stride 2,
uint8 conv, depthwise, fully connected, ADD with 32-bit operand scaling, MUL by a broadcast constant, padded
average pool, max pool), every command's param bits (each bit its field defines) and its payload's lowest,
middle and highest bits are flipped, one at a time. Each mutant must make the simulator report an error or
change the device memory after the run (the outputs, or what it wrote elsewhere); a mutant that changes nothing is accepted only for the fields in DONT_CARE, each with its
reason and the condition under which it holds. The list is mirrored in docs/hardware/ethosu-sim.md.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytest
from npu_harness import Simulator, VelaOutput, npu_only, vela_compile_many, words_to_commands
from sweeps import resize_case

from teflon import modelgen as mg

STREAMS = [
    mg.ConvCase("conv2d", 16, 16, 8, 32, kernel=3, stride=2, padding="same", activation="relu6", dtype="int8",
                per_channel=True),
    mg.ConvCase("conv2d", 10, 10, 3, 16, kernel=3, stride=1, padding="same", dtype="uint8"),
    mg.ConvCase("dwconv", 10, 10, 24, kernel=3, stride=2, padding="same", dtype="int8", per_channel=True),
    mg.FcCase(64, 16, dtype="int8"),
    # SUB rather than ADD: modelgen's ADD output scale is the sum of the input scales, so ADD(o, o) = o and an
    # in-place OFM grown over its own first rows would rewrite them unchanged
    mg.AddCase(6, 7, 5, dtype="int8", op="sub"),
    mg.ConstOpCase(5, 6, 7, op="mul", bcast="c", dtype="int8"),
    mg.PoolCase(8, 8, 16, filter=3, stride=1, padding="same", op="avg", dtype="int8"),
    mg.PoolCase(9, 9, 8, filter=3, stride=2, padding="same", op="max", dtype="int8"),
    resize_case((5, 7, 16)),  # RESIZE_NEAREST_NEIGHBOR x2: a 1x1 AVERAGE pool through IFM_UPSCALE NEAREST
]


class CmdDef(ctypes.Structure):
    """struct ethosu_cmd_desc of the generated ethosu_regs_u65.h."""

    _fields_ = [("opcode", ctypes.c_uint16), ("cmd1", ctypes.c_uint8), ("name", ctypes.c_char_p),
                ("defined_mask", ctypes.c_uint64)]


def command_table(lib: ctypes.CDLL) -> dict[tuple[int, int], CmdDef]:
    """The command table the simulator decodes with (ethosu_npu_cmd_table): the bits each command defines."""
    n = ctypes.c_uint.in_dll(lib, "ethosu_npu_cmd_count").value
    arr = ctypes.cast(ctypes.c_void_p.in_dll(lib, "ethosu_npu_cmd_table"), ctypes.POINTER(CmdDef))
    return {(arr[i].opcode, arr[i].cmd1): arr[i] for i in range(n)}


@dataclass
class Mutant:
    name: str          # command name without the NPU_SET_ / NPU_ prefix
    where: str         # "param" or "payload"
    bit: int
    old: int           # the field's value before (param: the whole param; payload: the payload word)
    new: int
    state: dict[str, int]  # the stream's register values (last write of each command before the first op)
    op: str            # the operation kicked off: CONV, DEPTHWISE, POOL, ELEMENTWISE
    op_param: int      # its param: the pooling / element-wise mode
    out_range: tuple[int, int] = (0, 0)  # smallest and largest output value of the unmutated run
    decoder: object = None  # the test weight decoder (its measured weight orders)


def _extent_tiles(m: Mutant, fm: str) -> tuple[int, int]:
    """(height, width) of the OFM extent, or of IFM2's when it is broadcast along H / W."""
    h, w = m.state["OFM_HEIGHT_M1"] + 1, m.state["OFM_WIDTH_M1"] + 1
    if fm == "IFM2":
        bc = m.state.get("IFM2_BROADCAST", 0)
        h, w = (1 if bc & 1 else h), (1 if bc & 2 else w)
    return h, w


def _tile_unused(m: Mutant) -> bool:
    """A BASE1..3 / HEIGHT1 / WIDTH0 write the op's extent never reaches: tile 0 covers it before and after."""
    fm = m.name.split("_")[0]
    h0 = m.state.get(f"{fm}_HEIGHT0_M1", 0) + 1
    w0 = m.state.get(f"{fm}_WIDTH0_M1", 0) + 1
    if m.name.endswith(("BASE1", "BASE2", "BASE3")) or m.name.endswith("HEIGHT1_M1"):
        return True if fm == "OFM" and (h0, w0) >= _extent_tiles(m, fm) else fm != "OFM" and _covers(m, fm, h0, w0)
    if m.name.endswith(("HEIGHT0_M1", "WIDTH0_M1")):
        return m.new > m.old  # a larger tile 0 over an extent tile 0 already covered
    return False


def _covers(m: Mutant, fm: str, h0: int, w0: int) -> bool:
    """Tile 0 of an input map covers everything the op reads: the OFM extent mapped back through the kernel."""
    sy = 1 + (m.state.get("KERNEL_STRIDE", 0) >> 1 & 1) + 2 * (m.state.get("KERNEL_STRIDE", 0) >> 9 & 1)
    sx = 1 + (m.state.get("KERNEL_STRIDE", 0) & 1) + 2 * (m.state.get("KERNEL_STRIDE", 0) >> 6 & 1)
    oh, ow = _extent_tiles(m, fm)
    if m.op == "ELEMENTWISE":
        return h0 >= oh and w0 >= ow
    kh = m.state.get("KERNEL_HEIGHT_M1", 0) + 1 - m.state.get("IFM_PAD_TOP", 0) - m.state.get("IFM_PAD_BOTTOM", 0)
    kw = m.state.get("KERNEL_WIDTH_M1", 0) + 1 - m.state.get("IFM_PAD_LEFT", 0) - m.state.get("IFM_PAD_RIGHT", 0)
    need_h, need_w = (oh - 1) * sy + kh, (ow - 1) * sx + kw
    if m.state.get("IFM_UPSCALE", 0):  # the window walks the upscaled IFM: half as many IFM rows and columns
        need_h, need_w = -(-need_h // 2), -(-need_w // 2)
    return h0 >= need_h and w0 >= need_w


def _stride_unused(m: Mutant) -> bool:
    """NHWC addresses channels by element size, NHCWB16 its x positions by 16 elements: STRIDE_C resp. STRIDE_X
    is not part of the address (Linux ethosu_gem.c feat_matrix_length; Vela register_command_stream_util
    get_address); nor is the stride of an axis the op's extent has one position along."""
    fm = m.name.split("_")[0]
    brick = (m.state.get(f"{fm}_PRECISION", 0) >> 6 & 3) == 1
    if m.name.endswith("STRIDE_X" if brick else "STRIDE_C"):
        return True
    h, w = _extent_tiles(m, fm)
    if fm == "IFM" and m.op != "ELEMENTWISE":
        h, w = max(h, m.state.get("KERNEL_HEIGHT_M1", 0) + 1), max(w, m.state.get("KERNEL_WIDTH_M1", 0) + 1)
    return (m.name.endswith("STRIDE_Y") and h == 1) or (m.name.endswith("STRIDE_X") and w == 1)


def _grows_length(m: Mutant) -> bool:
    """A longer stream than the op reads (the weight decoder stops at the stream's end; the scale records are
    10 bytes per OFM channel)."""
    return m.new > m.old


def _same_weight_order(m: Mutant) -> bool:
    """The weight order the stream was encoded in is the same for both values (OFM block depth,
    decomposition: measured with the codec, see npu_harness.WeightDecoder.permutation)."""
    if m.op not in ("CONV", "DEPTHWISE"):  # no weights: no weight order
        return m.name == "OFM_BLK_DEPTH_M1" or m.bit == 2 or (m.name == "KERNEL_STRIDE" and _one_position(m))
    if m.decoder is None:
        return False
    ks = m.state.get("KERNEL_STRIDE", 0)
    shape = (m.state["OFM_DEPTH_M1"] + 1, m.state["KERNEL_HEIGHT_M1"] // (1 + (ks >> 4 & 1)) + 1,
             m.state["KERNEL_WIDTH_M1"] // (1 + (ks >> 3 & 1)) + 1,
             1 if m.op == "DEPTHWISE" else m.state["IFM_DEPTH_M1"] + 1)
    dil = (1 + (ks >> 3 & 1), 1 + (ks >> 4 & 1))

    def order(blk_m1: int, kstride: int) -> np.ndarray:
        return m.decoder.permutation(shape, blk_m1 + 1, m.op == "DEPTHWISE", bool(kstride & 4), 8, dil, 8)

    if m.name == "OFM_BLK_DEPTH_M1":
        return np.array_equal(order(m.state["OFM_BLK_DEPTH_M1"], ks), order(m.new, ks))
    return _one_position(m)


def _one_position(m: Mutant) -> bool:
    """Stride (x: bits 0, 6..8; y: 1, 9..11) along an axis with one OFM position; dilation (3, 4) of a one-tap
    axis."""
    oh, ow = m.state["OFM_HEIGHT_M1"] + 1, m.state["OFM_WIDTH_M1"] + 1
    kh, kw = m.state.get("KERNEL_HEIGHT_M1", 0) + 1, m.state.get("KERNEL_WIDTH_M1", 0) + 1
    if m.bit in (0, 6, 7, 8):
        return ow == 1
    if m.bit in (1, 9, 10, 11):
        return oh == 1
    return {3: kw == 1, 4: kh == 1}.get(m.bit, False)


def _upscale_unseen(m: Mutant) -> bool:
    """Upscaling of a 1x1 window at position (0, 0): nearest and zero insertion both read IFM (0, 0)."""
    oh, ow = m.state["OFM_HEIGHT_M1"] + 1, m.state["OFM_WIDTH_M1"] + 1
    return (oh, ow) == (1, 1) and m.state.get("KERNEL_HEIGHT_M1", 0) == 0 and m.state.get("KERNEL_WIDTH_M1", 0) == 0


def _padded_ifm_channels(m: Mutant) -> bool:
    """More IFM channels that meet zero weights: the encoder pads the IFM depth to its 8-channel micro-block
    (Vela architecture_features: ifm_ublock depth 8 for Ethos_U65_256)."""
    return m.op == "CONV" and m.new > m.old and m.new // 8 == m.old // 8


def _clamp_not_reached(m: Mutant) -> bool:
    """A clamp bound moved within a range no output of this data reaches (the field is read, the data does
    not exercise it): the smallest / largest output lies beyond both bounds."""
    lo, _hi = _ofm_range(m)

    def val(v: int) -> int:
        return v - 0x10000 if lo < 0 and v & 0x8000 else v

    if m.name == "ACTIVATION_MIN":
        return m.out_range[0] >= max(val(m.old), val(m.new))
    return m.out_range[1] <= min(val(m.old), val(m.new))


def _one_brick(m: Mutant) -> bool:
    """NHWC <-> NHCWB16 (format bit 6) of a map of at most 16 channels whose STRIDE_X is 16 elements: the same
    addresses."""
    fm = m.name.split("_")[0]
    depth = m.state["OFM_DEPTH_M1"] + 1
    size = 1 << (m.state.get(f"{fm}_PRECISION", 0) >> (1 if fm == "OFM" else 2) & 3)
    one_column = _extent_tiles(m, fm)[1] == 1
    return m.bit == 6 and depth <= 16 and (one_column or m.state.get(f"{fm}_STRIDE_X", 0) == 16 * size)


def _precision_dont_care(m: Mutant) -> bool:
    """OFM_PRECISION: the format bit on a single brick; the round mode (bits 14, 15), which changes results
    only at exact ties of the scaled value."""
    return _one_brick(m) or m.bit in (14, 15) or (m.bit == 8 and _identity_pool_scale(m))


def _identity_pool_scale(m: Mutant) -> bool:
    """Global scale mode with OFM_SCALE 1, shift 0 on a pool: scaling by one equals the unscaled path; so does
    (2^31 + 1) / 2^31 (Vela's RESIZE / TRANSPOSE copies) on 8-bit values."""
    unit = m.state.get("OFM_SCALE") == 1
    near_unit = m.state.get("OFM_SCALE") == (1 << 31) + 1 and m.state.get("OFM_SCALE:param") == 31
    return m.op == "POOL" and (unit or near_unit)


def _one_value_window(m: Mutant) -> bool:
    """OP_POOL mode AVERAGE <-> MAX on a 1x1 window without padding: both give the one value read."""
    pads = sum(m.state.get(f"IFM_PAD_{p}", 0) for p in ("TOP", "LEFT", "BOTTOM", "RIGHT"))
    return m.bit == 0 and m.state.get("KERNEL_HEIGHT_M1", 0) == 0 and m.state.get("KERNEL_WIDTH_M1", 0) == 0 \
        and pads == 0


def _commutative(m: Mutant) -> bool:
    """IFM2_BROADCAST: operand_order of MUL, MIN, MAX (modes 0, 3, 4), whose result does not depend on it;
    broadcast along an axis the OFM has one position on (H, W, C: bits 0, 1, 2)."""
    extent = {0: m.state["OFM_HEIGHT_M1"], 1: m.state["OFM_WIDTH_M1"], 2: m.state["OFM_DEPTH_M1"]}
    if m.bit in extent:
        return extent[m.bit] == 0
    return m.bit == 6 and m.op == "ELEMENTWISE" and m.op_param in (0, 3, 4)


def _ifm_precision_dont_care(m: Mutant) -> bool:
    """IFM_PRECISION scale/round mode (bits 8, 9, 14, 15) outside the element-wise operand scaling; its round
    mode (ties only) inside it; the format bit on a single brick."""
    scaled = m.op == "ELEMENTWISE" and m.op_param in (1, 2)  # ADD, SUB
    return (m.bit in (8, 9) and not scaled) or m.bit in (14, 15) or _one_brick(m)


def _same_clip(m: Mutant) -> bool:
    """ACTIVATION.clip_range forcing the OFM type's own range (uint8 on a uint8 OFM, int8 on int8)."""
    lo, hi = _ofm_range(m)
    forced = {2: (0, 255), 3: (-128, 127), 5: (-32768, 32767)}.get(m.new >> 12 & 15)
    return m.bit >= 12 and forced == (lo, hi)


def _int8_accumulators(m: Mutant) -> bool:
    """ACC_FORMAT 32 <-> 40 bit: the same sums while no sum leaves 32 bits (8-bit operands, small kernels)."""
    return True


def _ofm_range(m: Mutant) -> tuple[int, int]:
    prec = m.state.get("OFM_PRECISION", 0)
    bits = 8 << (prec >> 1 & 3)
    return (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if prec & 1 else (0, (1 << bits) - 1)


def _clamp_beyond_type(m: Mutant) -> bool:
    """A clamp bound at or beyond the OFM type's own limit before and after: saturation binds first."""
    lo, hi = _ofm_range(m)

    def val(v: int) -> int:
        return v - 0x10000 if lo < 0 and v & 0x8000 else v

    if m.name == "ACTIVATION_MIN":
        return val(m.old) <= lo and val(m.new) <= lo
    return val(m.old) >= hi and val(m.new) >= hi


def _always(_m: Mutant) -> bool:
    return True


def _opb_unused(m: Mutant) -> bool:
    """OPB_SCALE multiplies operand B only in the 16-bit scale mode (IFM_PRECISION.scale_mode 0)."""
    return (m.state.get("IFM_PRECISION", 0) >> 8 & 3) != 0


DONT_CARE: dict[str, tuple[str, Callable[[Mutant], bool]]] = {
    "IFM_IB_END": ("SHRAM input buffer layout: placement inside the NPU, not arithmetic", _always),
    "AB_START": ("SHRAM accumulator buffer start: placement inside the NPU", _always),
    "IFM2_IB_START": ("SHRAM placement of IFM2", _always),
    "BLOCKDEP": ("how many blocks the next op may overlap with this one: scheduling", _always),
    "OFM_BLK_WIDTH_M1": ("OFM block width: the traversal order, not the result", _always),
    "OFM_BLK_HEIGHT_M1": ("OFM block height: the traversal order, not the result", _always),
    "OFM_BLK_DEPTH_M1": ("the weight order is the same for both OFM block depths", _same_weight_order),
    "KERNEL_STRIDE": (("weight order of an op without weights; strides along a "
                      "one-position axis; dilation of a one-tap axis"), _same_weight_order),
    "ACTIVATION_MIN": ("a clamp beyond the OFM type's range, or one no output reaches",
                       lambda m: _clamp_beyond_type(m) or _clamp_not_reached(m)),
    "ACTIVATION_MAX": ("a clamp beyond the OFM type's range, or one no output reaches",
                       lambda m: _clamp_beyond_type(m) or _clamp_not_reached(m)),
    "ACTIVATION": ("a clip range equal to the OFM type's", _same_clip),
    "ACC_FORMAT": ("40-bit accumulators hold the same 8-bit-operand sums as 32-bit ones", _int8_accumulators),
    "IFM_DEPTH_M1": ("IFM channels added within the weight stream's zero padding", _padded_ifm_channels),
    "OFM_PRECISION": ("format on one brick; round mode away from ties; scale mode with an identity OFM_SCALE",
                      _precision_dont_care),
    "IFM2_PRECISION": ("format on one brick", _one_brick),
    "IFM2_BROADCAST": ("operand order of a commutative operation; broadcast along a one-position axis",
                       _commutative),
    "OP_STOP": ("the STOP mask is the IRQ mask", _always),
    "OP_KERNEL_WAIT": ("operations complete in order in the simulator", _always),
    "OP_DMA_WAIT": ("DMAs complete at once in the simulator", _always),
    "IFM_BASE1": ("tile 1 outside the extent the op reads", _tile_unused),
    "IFM_BASE2": ("tile 2 outside the extent the op reads", _tile_unused),
    "IFM_BASE3": ("tile 3 outside the extent the op reads", _tile_unused),
    "IFM_HEIGHT1_M1": ("tiles 1/3 outside the extent", _tile_unused),
    "IFM_HEIGHT0_M1": ("tile 0 grows past an extent it already covered", _tile_unused),
    "IFM_WIDTH0_M1": ("tile 0 grows past an extent it already covered", _tile_unused),
    "IFM2_BASE1": ("tile 1 outside the extent the op reads", _tile_unused),
    "IFM2_BASE2": ("tile 2 outside the extent the op reads", _tile_unused),
    "IFM2_BASE3": ("tile 3 outside the extent the op reads", _tile_unused),
    "IFM2_HEIGHT1_M1": ("tiles 1/3 outside the extent", _tile_unused),
    "IFM2_HEIGHT0_M1": ("tile 0 grows past an extent it already covered", _tile_unused),
    "IFM2_WIDTH0_M1": ("tile 0 grows past an extent it already covered", _tile_unused),
    "OFM_BASE1": ("tile 1 outside the extent the op writes", _tile_unused),
    "OFM_BASE2": ("tile 2 outside the extent the op writes", _tile_unused),
    "OFM_BASE3": ("tile 3 outside the extent the op writes", _tile_unused),
    "OFM_HEIGHT1_M1": ("tiles 1/3 outside the extent", _tile_unused),
    "OFM_HEIGHT0_M1": ("tile 0 grows past an extent it already covered", _tile_unused),
    "OFM_WIDTH0_M1": ("tile 0 grows past an extent it already covered", _tile_unused),
    "IFM_STRIDE_C": ("not part of an NHWC address", _stride_unused),
    "IFM_STRIDE_Y": ("an extent of one row", _stride_unused),
    "IFM2_STRIDE_Y": ("an extent of one row", _stride_unused),
    "OFM_STRIDE_Y": ("an extent of one row", _stride_unused),
    "IFM_UPSCALE": ("a 1x1 window at (0, 0)", _upscale_unseen),
    "OP_POOL": ("AVERAGE or MAX of one value (a 1x1 window, no padding)", _one_value_window),
    "IFM_STRIDE_X": ("not part of an NHCWB16 address", _stride_unused),
    "IFM2_STRIDE_C": ("not part of an NHWC address", _stride_unused),
    "IFM2_STRIDE_X": ("not part of an NHCWB16 address", _stride_unused),
    "OFM_STRIDE_C": ("not part of an NHWC address", _stride_unused),
    "OFM_STRIDE_X": ("not part of an NHCWB16 address", _stride_unused),
    "WEIGHT_LENGTH": ("a longer bound than the weight stream the decoder reads", _grows_length),
    "SCALE_LENGTH": ("a longer bound than the 10-byte records of the OFM channels", _grows_length),
    "OPB_SCALE": ("operand B is unscaled in the 32-bit operand scaling modes", _opb_unused),
    "IFM_PRECISION": ("operand scaling outside element-wise ops; round mode away from ties; one brick",
                      _ifm_precision_dont_care),
}


def _short(d: CmdDef) -> str:
    """NPU_SET_IFM_REGION -> IFM_REGION, NPU_OP_CONV -> OP_CONV."""
    return d.name.decode().removeprefix("NPU_SET_").removeprefix("NPU_")


def _state_and_op(words: np.ndarray, table: dict[tuple[int, int], CmdDef]) -> tuple[dict[str, int], str, int]:
    state: dict[str, int] = {}
    for i, n in words_to_commands(words):
        w = int(words[i])
        d = table[(w & 0x3FF, (w >> 14) & 1)]
        name = _short(d)
        if name in ("OP_CONV", "OP_DEPTHWISE", "OP_POOL", "OP_ELEMENTWISE"):
            return state, name.removeprefix("OP_"), w >> 16
        state[name] = int(words[i + 1]) if n == 2 else w >> 16
        if n == 2:
            state[f"{name}:param"] = w >> 16
    raise AssertionError("no operation in the stream")


def _mutants(words: np.ndarray, table: dict[tuple[int, int], CmdDef]):
    state, op, op_param = _state_and_op(words, table)
    for i, n in words_to_commands(words):
        w = int(words[i])
        d = table[(w & 0x3FF, (w >> 14) & 1)]
        name = _short(d)
        param_mask = (d.defined_mask >> 32 if n == 2 else d.defined_mask) & 0xFFFF
        for bit in range(16):
            if param_mask >> bit & 1:
                mw = words.copy()
                mw[i] = w ^ (1 << (16 + bit))
                yield Mutant(name, "param", bit, w >> 16, (w >> 16) ^ (1 << bit), state, op, op_param), mw
        if n == 2:
            p = int(words[i + 1])
            # a multiplier's low bits move results by less than one rounding step: flip its high ones
            bits = (24, 30, 31) if name.endswith("_SCALE") else (0, 15, 31)
            for bit in (b for b in bits if d.defined_mask >> b & 1):
                mw = words.copy()
                mw[i + 1] = p ^ (1 << bit)
                yield Mutant(name, "payload", bit, p, p ^ (1 << bit), state, op, op_param), mw


@pytest.fixture(scope="module")
def compiled() -> dict[str, VelaOutput | str]:
    return vela_compile_many({c.name: c.build() for c in STREAMS})


@pytest.mark.parametrize("case", STREAMS, ids=str)
def test_every_field_is_read(case, npu_sim: Simulator, compiled: dict[str, VelaOutput | str]) -> None:
    vo = compiled[case.name]
    if not isinstance(vo, VelaOutput) or not npu_only(vo):
        pytest.skip(f"Vela does not compile it to the NPU alone: {vo if isinstance(vo, str) else vo.summary}")
    model = case.build()
    inputs = mg.random_inputs(model, seed=0)
    like = [np.zeros(s[1:] if len(s) > 4 else s, dtype=np.uint8 if case.dtype == "uint8" else np.int8)
            for (_r, _o, s) in vo.outputs]
    base = npu_sim.run(vo, inputs, like=like)
    assert base.rc == 0, base.error
    table = command_table(npu_sim.lib)
    unread, accepted = [], 0
    # mutated weight streams reach the simulator's own decoder (ethosu_mlw), which reports malformed ones
    for m, words in _mutants(vo.cmds, table):
        m.out_range = (min(int(o.min()) for o in base.outputs), max(int(o.max()) for o in base.outputs))
        m.decoder = npu_sim.decoder
        run = npu_sim.run(vo, inputs, cmds=words, like=like)
        if run.rc != 0 or any(not np.array_equal(run.memory[r], base.memory[r]) for r in base.memory):
            continue
        dc = DONT_CARE.get(m.name)
        if dc is not None and dc[1](m):
            accepted += 1
            continue
        unread.append(f"{m.name} {m.where} bit {m.bit} ({m.old:#x} -> {m.new:#x})")
        if m.name == "IFM_PRECISION" and m.where == "param" and m.bit not in (8, 9, 14, 15):
            unread[-1] += " (type, precision or format)"
    print(f"{case.name}: {accepted} mutants accepted as don't-cares")
    assert not unread, f"mutants that change nothing ({len(unread)}):\n  " + "\n  ".join(unread)
