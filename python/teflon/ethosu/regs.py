"""The Ethos-U65 command set (architecture 1.0.6) as data: every command the encoder emits, the simulator
executes and the simulated kernel's validator walks, with its fields and the values they may take.

Sources (docs/hardware/ethosu-commands.md): the opcodes and field positions of Vela 5.2.0's U55/U65 register
definitions (`ethosu/vela/ethos_u55_regs/ethos_u55_regs.py`, Apache-2.0, ARCH_VER 1.0.6) and how its command
stream generator fills them (`register_command_stream_generator.py`); Mesa's rules-ng description
(`src/gallium/drivers/ethosu/registers.xml`, MIT), which splits the precision fields the same way. Commands only
the U85 has (NPU_SET_WEIGHT_FORMAT, NPU_SET_IFM_BROADCAST, NPU_OP_RESIZE) are not in this table: a U65 stream
holding one is refused.

Numpy-free and importing nothing but teflon.hw: gen_c_header.py loads it from the source tree at build time
(drivers/ethosu/meson.build -> ethosu_regs_u65.h).
"""

from __future__ import annotations

from teflon.hw.cmdset import Command, CommandSet
from teflon.hw.regmap import Field, FieldRange

ENUMS = {
    "pooling_mode": {0: "MAX", 1: "AVERAGE", 2: "REDUCE_SUM"},
    "elementwise_mode": {0: "MUL", 1: "ADD", 2: "SUB", 3: "MIN", 4: "MAX", 5: "LRELU", 6: "ABS", 7: "CLZ", 8: "SHR",
                         9: "SHL"},
    "signedness": {0: "UNSIGNED", 1: "SIGNED"},
    "bits": {0: "8BIT", 1: "16BIT", 2: "32BIT"},
    "format": {0: "NHWC", 1: "NHCWB16"},
    "ifm_scale_mode": {0: "SCALE_16BIT", 1: "SCALE_OPA_32BIT", 2: "SCALE_OPB_32BIT"},
    "ofm_scale_mode": {0: "PER_CHANNEL", 1: "GLOBAL"},
    "rounding": {0: "TFL", 1: "TRUNCATE", 2: "NATURAL"},
    "resampling_mode": {0: "NONE", 1: "NEAREST", 2: "TRANSPOSE"},
    "acc_format": {0: "INT_32BIT", 1: "INT_40BIT", 2: "FP_S5_10"},
    "activation": {0: "NONE", 3: "TANH", 4: "SIGMOID", **{16 + i: f"LUT{i}" for i in range(8)}},
    "clip_range": {0: "OFM_PRECISION", 2: "FORCE_UINT8", 3: "FORCE_INT8", 5: "FORCE_INT16"},
    "weight_order": {0: "DEPTH_FIRST", 1: "PART_KERNEL_FIRST"},
    "stride_mode": {0: "1D", 1: "2D", 2: "3D"},
}


def _f(name: str, lo: int, hi: int, *, signed: bool = False, allowed: dict[int, str] | None = None) -> Field:
    return Field(name, lo, hi, signed=signed, allowed=tuple(sorted(allowed)) if allowed else ())


def _c0(name: str, opcode: int, *fields: Field, enums: tuple[tuple[str, str], ...] = (), note: str = "") -> Command:
    return Command(name, opcode, False, tuple(fields), note=note, enums=enums)


def _c1(name: str, opcode: int, *fields: Field, enums: tuple[tuple[str, str], ...] = (), note: str = "") -> Command:
    return Command(name, opcode, True, tuple(fields), note=note, enums=enums)


def _u16(name: str, opcode: int, fname: str = "value", *, signed: bool = False, note: str = "") -> Command:
    """A cmd0 whose param is one 16-bit quantity."""
    return _c0(name, opcode, _f(fname, 0, 15, signed=signed), note=note)


def _addr(name: str, opcode: int) -> Command:
    """A cmd1 address: payload = bits 0..31, param bits 0..7 = address bits 32..39 (U65 addresses are 40 bits:
    Vela's cmd1_with_address puts offset >> 32 in the param)."""
    return _c1(name, opcode, _f("addr", 0, 39))


def _u32(name: str, opcode: int, fname: str = "value", *, signed: bool = False) -> Command:
    """A cmd1 whose payload is one 32-bit quantity (param 0)."""
    return _c1(name, opcode, _f(fname, 0, 31, signed=signed))


_E = ENUMS

_CMD0 = (
    # operations (opcodes below 0x100)
    _c0("NPU_OP_STOP", 0x000, _f("mask", 0, 15)),
    _c0("NPU_OP_IRQ", 0x001, _f("mask", 0, 15)),
    _c0("NPU_OP_CONV", 0x002),
    _c0("NPU_OP_DEPTHWISE", 0x003),
    _c0("NPU_OP_POOL", 0x005, _f("mode", 0, 15, allowed=_E["pooling_mode"]), enums=(("mode", "pooling_mode"),)),
    _c0("NPU_OP_ELEMENTWISE", 0x006, _f("mode", 0, 15, allowed=_E["elementwise_mode"]),
        enums=(("mode", "elementwise_mode"),)),
    _c0("NPU_OP_DMA_START", 0x010, _f("channel_mode", 0, 15)),
    # Vela's cmd_wait: param = 16 * channel + outstanding count
    _c0("NPU_OP_DMA_WAIT", 0x011, _f("outstanding", 0, 3), _f("channel", 4, 15)),
    _c0("NPU_OP_KERNEL_WAIT", 0x012, _f("outstanding", 0, 3), _f("channel", 4, 15)),
    _c0("NPU_OP_PMU_MASK", 0x013, _f("mask", 0, 15)),
    # IFM
    _u16("NPU_SET_IFM_PAD_TOP", 0x100),
    _u16("NPU_SET_IFM_PAD_LEFT", 0x101),
    _u16("NPU_SET_IFM_PAD_RIGHT", 0x102),
    _u16("NPU_SET_IFM_PAD_BOTTOM", 0x103),
    _u16("NPU_SET_IFM_DEPTH_M1", 0x104),
    _c0("NPU_SET_IFM_PRECISION", 0x105,
        _f("activation_type", 0, 0), _f("activation_precision", 2, 3, allowed=_E["bits"]),
        _f("format", 6, 7, allowed=_E["format"]), _f("scale_mode", 8, 9, allowed=_E["ifm_scale_mode"]),
        _f("round_mode", 14, 15, allowed=_E["rounding"]),
        enums=(("activation_type", "signedness"), ("activation_precision", "bits"), ("format", "format"),
               ("scale_mode", "ifm_scale_mode"), ("round_mode", "rounding"))),
    _c0("NPU_SET_IFM_UPSCALE", 0x107, _f("mode", 0, 1, allowed=_E["resampling_mode"]),
        enums=(("mode", "resampling_mode"),)),
    _u16("NPU_SET_IFM_ZERO_POINT", 0x109, signed=True, note="int8 zero points are written sign-extended"),
    _u16("NPU_SET_IFM_WIDTH0_M1", 0x10A),
    _u16("NPU_SET_IFM_HEIGHT0_M1", 0x10B),
    _u16("NPU_SET_IFM_HEIGHT1_M1", 0x10C),
    _u16("NPU_SET_IFM_IB_END", 0x10D),
    _c0("NPU_SET_IFM_REGION", 0x10F, _f("region", 0, 2)),
    # OFM
    _u16("NPU_SET_OFM_WIDTH_M1", 0x111),
    _u16("NPU_SET_OFM_HEIGHT_M1", 0x112),
    _u16("NPU_SET_OFM_DEPTH_M1", 0x113),
    _c0("NPU_SET_OFM_PRECISION", 0x114,
        _f("activation_type", 0, 0), _f("activation_precision", 1, 2, allowed=_E["bits"]),
        _f("format", 6, 7, allowed=_E["format"]), _f("scale_mode", 8, 8),
        _f("round_mode", 14, 15, allowed=_E["rounding"]),
        enums=(("activation_type", "signedness"), ("activation_precision", "bits"), ("format", "format"),
               ("scale_mode", "ofm_scale_mode"), ("round_mode", "rounding"))),
    _u16("NPU_SET_OFM_BLK_WIDTH_M1", 0x115),
    _u16("NPU_SET_OFM_BLK_HEIGHT_M1", 0x116),
    _u16("NPU_SET_OFM_BLK_DEPTH_M1", 0x117),
    _u16("NPU_SET_OFM_ZERO_POINT", 0x118, signed=True),
    _u16("NPU_SET_OFM_WIDTH0_M1", 0x11A),
    _u16("NPU_SET_OFM_HEIGHT0_M1", 0x11B),
    _u16("NPU_SET_OFM_HEIGHT1_M1", 0x11C),
    _c0("NPU_SET_OFM_REGION", 0x11F, _f("region", 0, 2)),
    # kernel; NPU_SET_KERNEL_STRIDE's bits as Vela's generate_kernel sets them
    _u16("NPU_SET_KERNEL_WIDTH_M1", 0x120, note="dilated extent: dilation_x * (width - 1)"),
    _u16("NPU_SET_KERNEL_HEIGHT_M1", 0x121, note="dilated extent: dilation_y * (height - 1)"),
    _c0("NPU_SET_KERNEL_STRIDE", 0x122,
        _f("stride_x_lsb", 0, 0), _f("stride_y_lsb", 1, 1), _f("weight_order", 2, 2),
        _f("dilation_x_m1", 3, 3), _f("dilation_y_m1", 4, 4), _f("stride_x_msb", 6, 8), _f("stride_y_msb", 9, 11),
        enums=(("weight_order", "weight_order"),),
        note="stride - 1 = msb << 1 | lsb; bit 5 (decomposition) is never set for the U65 here"),
    _c0("NPU_SET_PARALLEL_MODE", 0x123, _f("cores_m1", 0, 0), note="number of cores - 1 (U65-512: 2 cores)"),
    _c0("NPU_SET_ACC_FORMAT", 0x124, _f("format", 0, 1, allowed=_E["acc_format"]), enums=(("format", "acc_format"),)),
    _c0("NPU_SET_ACTIVATION", 0x125, _f("type", 0, 11, allowed=_E["activation"]),
        _f("clip_range", 12, 15, allowed=_E["clip_range"]),
        enums=(("type", "activation"), ("clip_range", "clip_range"))),
    _u16("NPU_SET_ACTIVATION_MIN", 0x126, signed=True),
    _u16("NPU_SET_ACTIVATION_MAX", 0x127, signed=True),
    _c0("NPU_SET_WEIGHT_REGION", 0x128, _f("region", 0, 2)),
    _c0("NPU_SET_SCALE_REGION", 0x129, _f("region", 0, 2)),
    _u16("NPU_SET_AB_START", 0x12D),
    _u16("NPU_SET_BLOCKDEP", 0x12F),
    # DMA
    _c0("NPU_SET_DMA0_SRC_REGION", 0x130, _f("region", 0, 7), _f("internal", 8, 8),
        _f("stride_mode", 9, 10, allowed=_E["stride_mode"]), enums=(("stride_mode", "stride_mode"),)),
    _c0("NPU_SET_DMA0_DST_REGION", 0x131, _f("region", 0, 7), _f("internal", 8, 8),
        _f("stride_mode", 9, 10, allowed=_E["stride_mode"]), enums=(("stride_mode", "stride_mode"),)),
    _u16("NPU_SET_DMA0_SIZE0", 0x132),
    _u16("NPU_SET_DMA0_SIZE1", 0x133),
    # IFM2 (elementwise second operand)
    _c0("NPU_SET_IFM2_BROADCAST", 0x180, _f("broadcast_height", 0, 0), _f("broadcast_width", 1, 1),
        _f("broadcast_depth", 2, 2), _f("operand_order", 6, 6), _f("broadcast_scalar", 7, 7)),
    _u16("NPU_SET_IFM2_SCALAR", 0x181, signed=True),
    _c0("NPU_SET_IFM2_PRECISION", 0x185,
        _f("activation_type", 0, 0), _f("activation_precision", 2, 3, allowed=_E["bits"]),
        _f("format", 6, 7, allowed=_E["format"]),
        enums=(("activation_type", "signedness"), ("activation_precision", "bits"), ("format", "format"))),
    _u16("NPU_SET_IFM2_ZERO_POINT", 0x189, signed=True),
    _u16("NPU_SET_IFM2_WIDTH0_M1", 0x18A),
    _u16("NPU_SET_IFM2_HEIGHT0_M1", 0x18B),
    _u16("NPU_SET_IFM2_HEIGHT1_M1", 0x18C),
    _u16("NPU_SET_IFM2_IB_START", 0x18D),
    _c0("NPU_SET_IFM2_REGION", 0x18F, _f("region", 0, 2)),
)

_CMD1 = (
    _addr("NPU_SET_IFM_BASE0", 0x000), _addr("NPU_SET_IFM_BASE1", 0x001),
    _addr("NPU_SET_IFM_BASE2", 0x002), _addr("NPU_SET_IFM_BASE3", 0x003),
    _u32("NPU_SET_IFM_STRIDE_X", 0x004), _u32("NPU_SET_IFM_STRIDE_Y", 0x005), _u32("NPU_SET_IFM_STRIDE_C", 0x006),
    _addr("NPU_SET_OFM_BASE0", 0x010), _addr("NPU_SET_OFM_BASE1", 0x011),
    _addr("NPU_SET_OFM_BASE2", 0x012), _addr("NPU_SET_OFM_BASE3", 0x013),
    _u32("NPU_SET_OFM_STRIDE_X", 0x014), _u32("NPU_SET_OFM_STRIDE_Y", 0x015), _u32("NPU_SET_OFM_STRIDE_C", 0x016),
    _addr("NPU_SET_WEIGHT_BASE", 0x020), _u32("NPU_SET_WEIGHT_LENGTH", 0x021, "length"),
    _addr("NPU_SET_SCALE_BASE", 0x022), _u32("NPU_SET_SCALE_LENGTH", 0x023, "length"),
    # scale in the payload, shift in the param (Vela: cmd1_with_offset(OFM_SCALE, scale, shift)); the U65 shift
    # is 6 bits (the U85's param adds double-rounding and round-mode fields: Mesa registers.xml)
    _c1("NPU_SET_OFM_SCALE", 0x024, _f("scale", 0, 31), _f("shift", 32, 37)),
    _c1("NPU_SET_OPA_SCALE", 0x025, _f("scale", 0, 31), _f("shift", 32, 37)),
    _c1("NPU_SET_OPB_SCALE", 0x026, _f("scale", 0, 31),
        note="operand B scale (Vela's U55/U65 definition has no shift field here)"),
    _addr("NPU_SET_DMA0_SRC", 0x030), _addr("NPU_SET_DMA0_DST", 0x031), _u32("NPU_SET_DMA0_LEN", 0x032, "length"),
    _u32("NPU_SET_DMA0_SKIP0", 0x033, "skip"), _u32("NPU_SET_DMA0_SKIP1", 0x034, "skip"),
    _addr("NPU_SET_IFM2_BASE0", 0x080), _addr("NPU_SET_IFM2_BASE1", 0x081),
    _addr("NPU_SET_IFM2_BASE2", 0x082), _addr("NPU_SET_IFM2_BASE3", 0x083),
    _u32("NPU_SET_IFM2_STRIDE_X", 0x084), _u32("NPU_SET_IFM2_STRIDE_Y", 0x085), _u32("NPU_SET_IFM2_STRIDE_C", 0x086),
    _addr("NPU_SET_WEIGHT1_BASE", 0x090), _u32("NPU_SET_WEIGHT1_LENGTH", 0x091, "length"),
    _addr("NPU_SET_SCALE1_BASE", 0x092), _u32("NPU_SET_SCALE1_LENGTH", 0x093, "length"),
)

# Values the datapath takes, narrower than the fields' bits (the encoder packs nothing outside them; the simulator
# reads the same rows from the generated header).
RANGES: tuple[FieldRange, ...] = ()

U65 = CommandSet("ethos-u65", _CMD0 + _CMD1, ENUMS, RANGES)

# The command set of each generation (targets.py `generation`).
BY_GENERATION = {"u65": U65}

# The commands that start a compute operation: the register state in force there is what an operation does.
KICKS = ("NPU_OP_CONV", "NPU_OP_DEPTHWISE", "NPU_OP_POOL", "NPU_OP_ELEMENTWISE")
