"""RK3566/RK3568 NPU register table (data only).

Same regcmd word format, unit ids and (mostly) register offsets as the RK3588 table (rk3588/regs.py, from Mesa's
registers.xml), plus the CMAC unit, with the RK3568 deltas of docs/hardware/rk3568.md §2: sources there, short tags
here. [IAV] = iav/rk3568-npu lab log (RE-LOG.md @2bb78261a514) and its Mesa fork, [VEND] = Rockchip's vendor kernel
driver / RKNN containers, [GOLD] = the rknn-toolkit2 2.5.0 programs in ../shared/golden/rocket-rk3568 (every word of
every file there decodes with this table: tests/rocket/test_golden_rk3568.py), [INF] = an inference.

Registers whose meaning is unknown are named UNDOC_<offset> and accept only the values the vendor writes (no
values: only 0). Fields that must hold one value on RK3568 silicon (a hazard otherwise, rk3568.md §5) accept only
that value: the program check (rocket/check.py) refuses anything else.
"""

from __future__ import annotations

from teflon.hw.regmap import Field, FieldRange, Register, SocTable, Special, Unit, reg
from teflon.rocket.rk3588.regs import PC as PC_RK3588
from teflon.rocket.rk3588.regs import PPU_COMMON, PPU_RDMA_COMMON, s_pointer

UNITS = (
    Unit("PC", 0x0100),
    Unit("CNA", 0x0200),
    Unit("CMAC", 0x0400),  # [IAV] RELOG T29; [GOLD] target 0x0401 in every conv task
    Unit("CORE", 0x0800),
    Unit("DPU", 0x1000),
    Unit("DPU_RDMA", 0x2000),
    Unit("PPU", 0x4000),
    Unit("PPU_RDMA", 0x8000),
)

# The value CNA_DMA_CON0 must hold: burst lengths 7/7, FETCH_PIXEL_LEN 28 and bit 20 (reserved in registers.xml);
# without bit 20 the MAC output is an input-independent constant [IAV RELOG T28/T38; GOLD every conv task].
DMA_CON0 = 0x00171C07
# DPU_RDMA FEATURE_MODE_CFG.BURST_LEN: 8 is the vendor's value; 7 hung the whole SoC [IAV RELOG T24/T27].
RDMA_BURST_LEN = 8


def _only(name: str, lo: int, hi: int, *values: int) -> Field:
    return Field(name, lo, hi, allowed=values)


def _undoc(unit: str, offset: int, *values: int, note: str = "") -> Register:
    """A register of unknown meaning: only the vendor's values (no values = only 0)."""
    text = note or "meaning unknown; the vendor always writes 0 [GOLD]"
    fields = (_only("VALUE", 0, 31, *values),) if values else ()
    return reg(unit, f"UNDOC_{offset:04X}", offset, *fields, note=text)


_IRQ16 = ("IRQ_BIT16", 16, 16)  # [IAV RELOG T29/T61] a real maskable per-task interrupt of unknown meaning

# The PC block is the RK3588 one ([VEND] rknpu rk356x config: 12-bit task number, status at 0x3C, as RK3588; the
# vendor kick is 0x6001 [IAV]) with interrupt bit 16 in the mask and status registers.
_WITH_IRQ16 = ("INTERRUPT_MASK", "INTERRUPT_STATUS", "INTERRUPT_RAW_STATUS")
# The broadcast op-enable's bitmap has CMAC at bit 1: 0x1F on every conv task [IAV T33/T42; GOLD].
_OP_ENABLE = reg("PC", "OPERATION_ENABLE", 0x0008, ("CNA_EN", 0, 0), ("CMAC_EN", 1, 1), ("CORE_EN", 2, 2),
                 ("DPU_EN", 3, 3), ("DPU_RDMA_EN", 4, 4), ("PPU_EN", 5, 5), ("PPU_RDMA_EN", 6, 6))
PC = tuple(_OP_ENABLE if r.name == "OPERATION_ENABLE" else
           reg("PC", r.name, r.offset, *r.fields, _IRQ16, note=r.note) if r.name in _WITH_IRQ16 else r
           for r in PC_RK3588)

CNA = (
    s_pointer("CNA", 0x1004),
    reg("CNA", "CONV_CON1", 0x100C,
        _only("CONV_MODE", 0, 3, 0, 3), ("IN_PRECISION", 4, 6), ("PROC_PRECISION", 7, 9), _only("ARGB_IN", 12, 15, 0, 8, 10, 11),
        note="CONV_MODE 0 direct, 3 depthwise [GOLD]; ARGB_IN 8 + channels - 1 (8, 10, 11 for 1, 3, 4 channels) on the "
             "packed-pixel first-layer path [IAV T30/T46; TOOLKIT, built here: rknn-toolkit2 2.5.0 target rk3566]"),
    reg("CNA", "CONV_CON2", 0x1010, ("FEATURE_GRAINS", 4, 13), _only("KERNEL_GROUP", 16, 23, 0),
        note="KERNEL_GROUP is 0 in every vendor task [IAV T28; GOLD]; FEATURE_GRAINS: the vendor's shape rule "
             "(rk3568.md §3)"),
    reg("CNA", "CONV_CON3", 0x1014, ("CONV_X_STRIDE", 0, 2), ("CONV_Y_STRIDE", 3, 5)),
    reg("CNA", "CONV_CON4", 0x1018, ("ARGB_PIXELS_X9", 0, 31),
        note="0 except on the 3-channel packed-pixel path: input width x rows of the task x 9 [IAV T29/T46; GOLD; TOOLKIT: "
             "0 for 1 and 4 channels]"),
    reg("CNA", "DATA_SIZE0", 0x1020, ("DATAIN_HEIGHT", 0, 10), ("DATAIN_WIDTH", 16, 26),
        note="11-bit width: maps wider than 2047 fail [IAV T76]"),
    reg("CNA", "DATA_SIZE1", 0x1024, ("DATAIN_CHANNEL", 0, 15), ("DATAIN_CHANNEL_REAL_M1", 16, 29)),
    reg("CNA", "DATA_SIZE2", 0x1028, ("DATAOUT_WIDTH", 0, 10)),
    reg("CNA", "DATA_SIZE3", 0x102C, ("DATAOUT_ATOMICS", 0, 21)),
    reg("CNA", "WEIGHT_SIZE0", 0x1030, ("WEIGHT_BYTES", 0, 31)),
    reg("CNA", "WEIGHT_SIZE1", 0x1034, ("WEIGHT_BYTES_PER_KERNEL", 0, 18)),
    reg("CNA", "WEIGHT_SIZE2", 0x1038, ("WEIGHT_KERNELS", 0, 13), ("WEIGHT_HEIGHT", 16, 20), ("WEIGHT_WIDTH", 24, 28)),
    reg("CNA", "CBUF_CON0", 0x1040, ("DATA_BANK", 0, 3), ("WEIGHT_BANK", 4, 7), ("WEIGHT_REUSE", 13, 13),
        note="8 banks of 32 KiB [IAV T44; FORK rkt_ml.h citing TRM Part2 §9.1]; DATA_BANK + WEIGHT_BANK = 8 [GOLD]"),
    reg("CNA", "CBUF_CON1", 0x1044, ("DATA_ENTRIES", 0, 13), ("DATAIN_WIDTH", 16, 28),
        note="input width in the high half on RK3568 [IAV T29; GOLD]"),
    reg("CNA", "CVT_CON0", 0x104C,
        ("CVT_BYPASS", 0, 0), ("CVT_TYPE", 1, 1), ("ROUND_TYPE", 2, 2), ("DATA_SIGN", 3, 3),
        ("CVT_TRUNCATE_0", 4, 9), ("CVT_TRUNCATE_1", 10, 15), ("CVT_TRUNCATE_2", 16, 21), ("CVT_TRUNCATE_3", 22, 27),
        note="0xA on the direct path (converter in the path, identity) [IAV T29; GOLD]"),
    reg("CNA", "CVT_CON1", 0x1050, ("CVT_OFFSET0", 0, 15, True), ("CVT_SCALE0", 16, 31)),
    reg("CNA", "CVT_CON2", 0x1054, ("CVT_OFFSET1", 0, 15, True), ("CVT_SCALE1", 16, 31)),
    reg("CNA", "CVT_CON3", 0x1058, ("CVT_OFFSET2", 0, 15, True), ("CVT_SCALE2", 16, 31)),
    reg("CNA", "CVT_CON4", 0x105C, ("CVT_OFFSET3", 0, 15, True), ("CVT_SCALE3", 16, 31)),
    reg("CNA", "FC_CON0", 0x1060, _only("FC_SKIP_EN", 0, 0, 0)),
    reg("CNA", "FC_CON1", 0x1064, _only("DATA_OFFSET", 0, 16, 0)),
    reg("CNA", "PAD_CON0", 0x1068, ("PAD_TOP", 0, 3), ("PAD_LEFT", 4, 7), ("PAD_VALUE", 16, 31, True),
        note="the pad value sits in the upper half on RK3568 (stored domain: zero point - 128); PAD_CON1 is "
             "never written [IAV T31; GOLD]"),
    reg("CNA", "FEATURE_DATA_ADDR", 0x1070, ("FEATURE_BASE_ADDR", 0, 31)),
    reg("CNA", "FC_CON2", 0x1074, _only("WEIGHT_OFFSET", 0, 16, 0)),
    reg("CNA", "DMA_CON0", 0x1078,
        _only("DATA_BURST_LEN", 0, 3, DMA_CON0 & 0xF), _only("FETCH_PIXEL_LEN", 8, 15, (DMA_CON0 >> 8) & 0xFF),
        _only("WEIGHT_BURST_LEN", 16, 19, (DMA_CON0 >> 16) & 0xF), _only("BIT20", 20, 20, 1),
        note="one value on RK3568: 0x00171C07 (bit 20 reserved in registers.xml, required) [IAV T28/T38; GOLD]"),
    reg("CNA", "DMA_CON1", 0x107C, ("LINE_STRIDE", 0, 27), note="8-byte units [IAV T44; GOLD]"),
    reg("CNA", "DMA_CON2", 0x1080, ("SURF_STRIDE", 0, 27), note="8-byte units [IAV T44; GOLD]"),
    reg("CNA", "FC_DATA_SIZE0", 0x1084, ("DMA_HEIGHT", 0, 10), ("DMA_WIDTH", 16, 29)),
    reg("CNA", "FC_DATA_SIZE1", 0x1088, ("DMA_CHANNEL", 0, 15)),
    reg("CNA", "DCOMP_CTRL", 0x1100, _only("DECOMP_CONTROL", 0, 2, 0)),
    reg("CNA", "DCOMP_REGNUM", 0x1104, _only("DCOMP_REGNUM", 0, 31, 0)),
    # 8 address and 8 amount registers (RK3588: 1 + 16); the weights base goes to 0x1110 [Mesa list post; FORK; GOLD]
    *(reg("CNA", f"DCOMP_ADDR{i}", 0x1110 + 4 * i, (f"DECOMPRESS_ADDR{i}", 0, 31)) for i in range(8)),
    *(reg("CNA", f"DCOMP_AMOUNT{i}", 0x1130 + 4 * i, _only(f"DCOMP_AMOUNT{i}", 0, 31, 0)) for i in range(8)),
    *(_undoc("CNA", 0x1210 + 4 * i) for i in range(9)),
)

CMAC = (
    s_pointer("CMAC", 0x2004),
    reg("CMAC", "CFG", 0x200C, _only("BIT0", 0, 0, 1), ("DW_EN", 1, 1),
        note="1 regular, 3 depthwise; Mesa never writes it [IAV T29/T30; GOLD]; names [INF]"),
)

CORE = (
    s_pointer("CORE", 0x3004),
    # registers.xml's MAC_GATING at 0x300C is spurious on RK3568 [IAV T29]
    reg("CORE", "MISC_CFG", 0x300C, _only("QD_EN", 0, 0, 0), ("DW_EN", 1, 1)),
    reg("CORE", "DATAOUT_SIZE_0", 0x3010, ("DATAOUT_WIDTH_M1", 0, 15), ("DATAOUT_HEIGHT_M1", 16, 31)),
    reg("CORE", "DATAOUT_SIZE_1", 0x3014, ("DATAOUT_CHANNEL_M1", 0, 15)),
    _undoc("CORE", 0x302C),
)

DPU = (
    s_pointer("DPU", 0x4004),
    reg("DPU", "FEATURE_MODE_CFG", 0x400C,
        ("FLYING_MODE", 0, 0), ("OUTPUT_MODE", 1, 2), ("CONV_MODE", 3, 4), ("BURST_LEN", 5, 8), ("SURF_LEN", 9, 24),
        ("NONALIGN", 25, 25), note="RK3588 fields [XML]; the vendor writes 0x108 conv, 0x138 depthwise, 0x109 "
                                   "DPU-only [GOLD]"),
    reg("DPU", "DATA_FORMAT", 0x4010, ("PROC_PRECISION", 0, 2), ("MC_SURF_OUT", 3, 3),
        ("BS_MUL_SHIFT_VALUE_NEG", 4, 9), ("BN_MUL_SHIFT_VALUE_NEG", 10, 15)),
    reg("DPU", "OFFSET_PEND", 0x4014, _only("OFFSET_PEND", 0, 15, 0)),
    reg("DPU", "DST_BASE_ADDR", 0x4020, ("DST_BASE_ADDR", 0, 31)),
    reg("DPU", "DST_SURF_STRIDE", 0x4024, ("DST_SURF_STRIDE_BYTES", 0, 31),
        note="raw bytes on RK3568 (W x H x 8, surface aligned) [IAV T52; GOLD]"),
    reg("DPU", "DATA_CUBE_WIDTH", 0x4030, ("WIDTH_M1", 0, 12)),
    reg("DPU", "DATA_CUBE_HEIGHT", 0x4034, ("HEIGHT_M1", 0, 12)),
    reg("DPU", "DATA_CUBE_NOTCH_ADDR", 0x4038, _only("NOTCH_ADDR", 0, 31, 0)),
    reg("DPU", "DATA_CUBE_CHANNEL", 0x403C, ("CHANNEL_M1", 0, 12), ("ORIG_CHANNEL_M1", 16, 28)),
    reg("DPU", "BS_CFG", 0x4040,
        ("BS_BYPASS", 0, 0), ("BS_ALU_BYPASS", 1, 1), _only("BS_BIT3", 3, 3, 0, 1), ("BS_MUL_BYPASS", 4, 4),
        ("BS_MUL_PRELU", 5, 5), ("BS_RELU_BYPASS", 6, 6), ("BS_RELUX_EN", 7, 7), ("BS_ALU_SRC", 8, 8),
        ("BS_ALU_ALGO", 16, 19),
        note="0x158 per-tensor (MUL bypassed), 0x148 with the 8 B/ch stream's multipliers [IAV T41/T43; GOLD]; "
             "bit 3 (not in registers.xml) is set in every vendor conv task, clear with BS bypassed (0x53), meaning unknown"),
    reg("DPU", "BS_ALU_CFG", 0x4044, ("BS_ALU_OPERAND", 0, 31, True)),
    reg("DPU", "BS_MUL_CFG", 0x4048, ("BS_MUL_SRC", 0, 0), ("BS_MUL_SHIFT_VALUE", 8, 13), ("BS_MUL_OPERAND", 16, 31)),
    reg("DPU", "BS_RELUX_CMP_VALUE", 0x404C, ("BS_RELUX_CMP_DAT", 0, 31)),
    reg("DPU", "BS_OW_CFG", 0x4050, ("OW_SRC", 0, 0), ("OD_BYPASS", 1, 1), ("SIZE_E_0", 2, 4), ("SIZE_E_1", 5, 7),
        ("SIZE_E_2", 8, 10)),
    reg("DPU", "BS_OW_OP", 0x4054, ("OW_OP", 0, 31, True),
        note="0x80 - weight zero point, all 32 bits written [IAV T43; GOLD]; the hardware adds OW_OP x sum(x)"),
    reg("DPU", "BN_CFG", 0x4060,
        ("BN_BYPASS", 0, 0), ("BN_ALU_BYPASS", 1, 1), ("BN_MUL_BYPASS", 4, 4), ("BN_MUL_PRELU", 5, 5),
        ("BN_RELU_BYPASS", 6, 6), ("BN_RELUX_EN", 7, 7), ("BN_ALU_SRC", 8, 8), ("BN_ALU_ALGO", 16, 19),
        note="fused ReLU: 0x12, ReLU6: 0x92 with BN_RELUX_CMP_VALUE in the accumulator domain [IAV T57; GOLD]"),
    reg("DPU", "BN_ALU_CFG", 0x4064, _only("BN_ALU_OPERAND", 0, 31, 0)),
    reg("DPU", "BN_MUL_CFG", 0x4068, _only("BN_MUL_OPERAND", 0, 31, 0)),
    reg("DPU", "BN_RELUX_CMP_VALUE", 0x406C, ("BN_RELUX_CMP_DAT", 0, 31, True)),
    reg("DPU", "EW_CFG", 0x4070,
        ("EW_BYPASS", 0, 0), ("EW_OP_BYPASS", 1, 1), ("EW_OP_TYPE", 2, 2), _only("EW_BIT4", 4, 4, 0, 1),
        ("EW_MUL_PRELU", 5, 5), ("EW_OP_SRC", 6, 6), ("EW_LUT_BYPASS", 7, 7), ("EW_OP_CVT_BYPASS", 8, 8),
        ("EW_RELU_BYPASS", 9, 9), ("EW_DATA_MODE", 28, 29), ("EW_CVT_TYPE", 31, 31),
        note="0x383 without an operand; 0x900002D0 with the vendor's ADD, which does not decode with RK3588 "
             "fields (bit 4 unknown) [IAV T53/T55; GOLD]"),
    reg("DPU", "EW_CVT_OFFSET_VALUE", 0x4074, ("EW_OP_CVT_OFFSET", 0, 31, True)),
    reg("DPU", "EW_CVT_SCALE_VALUE", 0x4078, ("EW_OP_CVT_SCALE", 0, 15, True), ("EW_OP_CVT_SHIFT", 16, 21)),
    reg("DPU", "EW_RELUX_CMP_VALUE", 0x407C, _only("EW_RELUX_CMP_DAT", 0, 31, 0)),
    reg("DPU", "OUT_CVT_OFFSET", 0x4080, ("OUT_CVT_OFFSET", 0, 31, True)),
    reg("DPU", "OUT_CVT_SCALE", 0x4084, ("OUT_CVT_SCALE", 0, 15)),
    reg("DPU", "OUT_CVT_SHIFT", 0x4088, ("OUT_CVT_SHIFT", 0, 11)),
    *(reg("DPU", f"EW_OP_VALUE_{i}", 0x4090 + 4 * i, _only(f"EW_OPERAND_{i}", 0, 31, 0)) for i in range(8)),
    reg("DPU", "SURFACE_ADD", 0x40C0, ("SURF_ADD_BYTES", 0, 31),
        note="raw: W x H x 16 regular, x 32 depthwise [IAV T32; GOLD]"),
    _undoc("DPU", 0x40C4),
    reg("DPU", "LUT_ACCESS_CFG", 0x4100, _only("LUT_ACCESS_CFG", 0, 31, 0)),
    reg("DPU", "LUT_ACCESS_DATA", 0x4104, _only("LUT_ACCESS_DATA", 0, 31, 0)),
    *(reg("DPU", name, off, _only(name, 0, 31, 0)) for name, off in (
        ("LUT_CFG", 0x4108), ("LUT_INFO", 0x410C), ("LUT_LE_START", 0x4110), ("LUT_LE_END", 0x4114),
        ("LUT_LO_START", 0x4118), ("LUT_LO_END", 0x411C), ("LUT_LE_SLOPE_SCALE", 0x4120),
        ("LUT_LE_SLOPE_SHIFT", 0x4124), ("LUT_LO_SLOPE_SCALE", 0x4128), ("LUT_LO_SLOPE_SHIFT", 0x412C))),
)

DPU_RDMA = (
    s_pointer("DPU_RDMA", 0x5004),
    reg("DPU_RDMA", "DATA_CUBE_WIDTH", 0x500C, ("WIDTH_M1", 0, 12)),
    reg("DPU_RDMA", "DATA_CUBE_HEIGHT", 0x5010, ("HEIGHT_M1", 0, 12)),
    reg("DPU_RDMA", "DATA_CUBE_CHANNEL", 0x5014, ("CHANNEL_M1", 0, 12)),
    reg("DPU_RDMA", "SRC_BASE_ADDR", 0x5018, ("SRC_BASE_ADDR", 0, 31)),
    reg("DPU_RDMA", "BRDMA_CFG", 0x501C, ("BRDMA_DISABLE", 0, 0), ("BRDMA_DATA_USE", 1, 4),
        note="2: bias-only stream (4 B/ch), 0xE: bias + OW + multiplier (8 B/ch) [IAV T41/T43; GOLD]"),
    reg("DPU_RDMA", "BS_BASE_ADDR", 0x5020, ("BS_BASE_ADDR", 0, 31)),
    reg("DPU_RDMA", "BS_LENGTH", 0x5024, ("BS_WORDS_M1", 0, 31),
        note="not in registers.xml: the BS stream's length in 8-byte words - 1; without it the bias RDMA fetches "
             "nothing [IAV T28/T71; MAP §3; GOLD]"),
    reg("DPU_RDMA", "NRDMA_CFG", 0x5028, _only("NRDMA_DISABLE", 0, 0, 1)),
    reg("DPU_RDMA", "BN_BASE_ADDR", 0x502C, ("BN_BASE_ADDR", 0, 31)),
    _undoc("DPU_RDMA", 0x5030),
    reg("DPU_RDMA", "ERDMA_CFG", 0x5034, ("ERDMA_DISABLE", 0, 0), ("ERDMA_DATA_MODE", 30, 31),
        note="0x40000000 with the vendor's ADD: does not decode with RK3588 fields [IAV T53]"),
    reg("DPU_RDMA", "EW_BASE_ADDR", 0x5038, ("EW_BASE_ADDR", 0, 31)),
    reg("DPU_RDMA", "UNDOC_503C", 0x503C, ("VALUE", 0, 31),
        note="meaning unknown: 0 on conv tasks; the EW operand's surface bytes - 8 (EW_SURF_STRIDE - 8) in both vendor "
             "ADD programs (planes 0x800 and 0x2300) [GOLD] and in every fused ADD of the third party's silicon runs, "
             "planes 7x7 to 56x56 (its 'EW line stride') [IAV FORK rkt_regcmd.c; T55/T57]; the relation is a "
             "program-check refusal (hazards.py)"),
    reg("DPU_RDMA", "EW_SURF_STRIDE", 0x5040, ("EW_SURF_STRIDE_BYTES", 0, 31), note="raw bytes [IAV T53; GOLD]"),
    reg("DPU_RDMA", "FEATURE_MODE_CFG", 0x5044,
        ("FLYING_MODE", 0, 0), ("CONV_MODE", 1, 2), _only("BURST_LEN", 11, 14, RDMA_BURST_LEN),
        note="0x4000 conv, 0x4006 depthwise; BURST_LEN 7 hung the SoC, only 8 is accepted [IAV T24/T27; GOLD]"),
    reg("DPU_RDMA", "SRC_DMA_CFG", 0x5048, _only("SRC_DMA_CFG", 0, 31, 0)),
    reg("DPU_RDMA", "SURF_NOTCH", 0x504C, _only("SURF_NOTCH_BYTES", 0, 31, 0),
        note="surface bytes - W x H_band x 8 for banded EW reads [IAV T72]; 0 in every program here"),
    reg("DPU_RDMA", "PAD_CFG", 0x5064, _only("PAD_CFG", 0, 31, 0)),
    reg("DPU_RDMA", "WEIGHT", 0x5068, ("M_WEIGHT", 0, 7), ("B_WEIGHT", 8, 15), ("N_WEIGHT", 16, 23),
        ("E_WEIGHT", 24, 31)),
)

# PPU / PPU_RDMA: the RK3588 layout for everything the vendor's pool programs write [GOLD; IAV T60-T62], strides in
# bytes (their low four bits are 0 in every program); the padding register and four padding values differ.
PPU = (
    *PPU_COMMON,
    reg("PPU", "POOLING_PADDING_CFG", 0x6040, ("PAD_LEFT", 0, 3), ("PAD_TOP", 4, 7), ("PAD_RIGHT", 8, 11),
        ("PAD_BOTTOM", 12, 15), note="[IAV T62]; a window not covered by input + padding stalls the chain"),
    *(reg("PPU", f"PADDING_VALUE_{i + 1}_CFG", 0x6044 + 4 * i, (f"PAD_VALUE_{i + 1}X", 0, 18, True))
      for i in range(4)),
)
PPU_RDMA = (
    *(r for r in PPU_RDMA_COMMON if r.name not in ("SRC_LINE_STRIDE", "SRC_SURF_STRIDE")),
    reg("PPU_RDMA", "SRC_LINE_STRIDE", 0x7024, ("SRC_LINE_STRIDE_BYTES", 0, 31), note="raw bytes (W x 8) [GOLD]"),
    reg("PPU_RDMA", "SRC_SURF_STRIDE", 0x7028, ("SRC_SURF_STRIDE_BYTES", 0, 31), note="raw bytes [GOLD]"),
    _undoc("PPU_RDMA", 0x7018, 1, note="meaning unknown; the vendor always writes 1 [GOLD]"),
    reg("PPU_RDMA", "DATA_FORMAT", 0x7030, _only("IN_PRECISION", 0, 1, 0)),
)

SPECIALS = (
    Special("SYNC", 0x0041),
    # the broadcast op-enable: 0x1F on conv tasks (five units incl. CMAC; per-unit enables give wrong bytes
    # [IAV T33/T42]), 0x18 DPU-only, 0x60 PPU [GOLD]
    Special("OP_ENABLE", 0x0081, register="PC_OPERATION_ENABLE", offset=0x0008),
)

RANGES = (
    FieldRange("CNA_CBUF_CON0", "DATA_BANK", 1, 7, "8 CBUF banks [IAV T44]: at least one for data, one for weights"),
    FieldRange("CNA_CBUF_CON0", "WEIGHT_BANK", 1, 7, "8 CBUF banks [IAV T44]: at least one for data, one for weights"),
    FieldRange("DPU_OUT_CVT_SHIFT", "OUT_CVT_SHIFT", 0, 47,
               "[INF] the RK3588 limit (rocket.md §3.4); the vendor programs here use 0..0x1D [GOLD]"),
)

TABLE = SocTable("rk3568", UNITS, PC + CNA + CMAC + CORE + DPU + DPU_RDMA + PPU + PPU_RDMA, SPECIALS, RANGES)
