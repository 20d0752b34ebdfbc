"""RK3576 NPU register table (data only).

Same word format and unit ids as the RK3588 (regs_rk3588.py); the CNA, CORE, DPU and DPU_RDMA blocks are
re-packed. Sources (see docs/hardware/rocket-rk3576.md for each fact's source and confidence):
../shared/docs/rocket.md §6.2 (third-party RK3576 measurements), §6.4 and ../shared/golden/rocket-rk3576/
(registers Rockchip's own toolkit emits for the RK3576; the strongest source), the RK3576 bring-up blog.

Every word of every single-core ("compile A") vendor program in the golden folder decodes with this table
(tests/test_rk3576_encoder.py). Registers whose meaning is unknown are named UNDOC_<offset> and accept only
the values the vendor writes (`Field.allowed`; no field at all = only 0). Fields whose meaning is an
inference carry "_M1" when the register holds a count minus one, and the note says what was measured.
"""

from __future__ import annotations

from teflon.hw.regmap import Field, FieldRange, Register, SocTable, Special, reg
from teflon.rocket.rk3588.regs import PC as PC_RK3588
from teflon.rocket.rk3588.regs import PPU_COMMON, PPU_RDMA_COMMON, UNITS, s_pointer

INT32_MIN = 0x80000000
INT32_MAX = 0x7FFFFFFF
EW_CFG_BYPASS = 0x010041C1  # DPU 0x407C in every vendor conv without an element-wise operand
EW_CFG_ADD = 0x8002C0C0  # DPU 0x407C where the vendor adds a second tensor (fused Add(Conv, Conv), Add/Sub)
# DPU 0x407C in the vendor's LUT consumers: the bypass word with bits 0 and 7 clear. [R76-USR] (diffing the vendor's
# consumer against its bare-conv control) reads bit 7 as EW_LUT_BYPASS; bit 0 is the RK3588 EW_BYPASS position.
EW_CFG_LUT = 0x01004140
# The LUT consumer's 0x4108 [VENDOR76, 24/24 consumers; R76-USR measured with it]; the LUT-load task's 0x00FF0000.
LUT_CFG_CONSUMER = 0x02000006
LUT_CFG_LOAD = 0x00FF0000


def _only(name: str, lo: int, hi: int, *values: int) -> Field:
    return Field(name, lo, hi, allowed=values)


def _undoc(unit: str, offset: int, *values: int, note: str = "") -> Register:
    """A register of unknown meaning: only the vendor's values (no values = only 0)."""
    text = note or "meaning unknown; the vendor always writes 0"
    fields = (_only("VALUE", 0, 31, *values),) if values else ()
    return reg(unit, f"UNDOC_{offset:04X}", offset, *fields, note=text)


def _clamp(offset: int, name: str, *, open_range: bool = False) -> Register:
    # Pairs (INT32_MIN, INT32_MAX) in every plain conv; two of them become (0, X) with a fused Clip(0,6)
    # in the vendor chain program. Which pipeline stage each pair bounds is not known.
    default = INT32_MIN if name.endswith("MIN") else INT32_MAX
    f = Field(name, 0, 31) if open_range else _only(name, 0, 31, default)
    note = ("[INFERRED] int32 clamp bound of the value before OUT_CVT; the no-op value (INT32_MIN / INT32_MAX), or "
            "with 0x4060 = 0x902 a fused RELU/RELU6's bound (CLAMP2 = CLAMP3)" if open_range else
            "[INFERRED] int32 clamp bound; the encoder writes only the no-op value (INT32_MIN / INT32_MAX)")
    return reg("DPU", name, offset, f, note=note)


# The PC block is the RK3588 one except the task control word and the task status offset.
_PC_CHANGES = {
    # TASK_NUMBER is 16 bits wide on RK3576 (12 on RK3588); the vendor kick word is 0x70001, i.e. the
    # RK3588 control bits 12..14 moved up to 16..18 [R76-GREG measured; bit names INFERRED].
    "TASK_CON": reg("PC", "TASK_CON", 0x0030, ("TASK_NUMBER", 0, 15), ("TASK_PP_EN", 16, 16),
                    ("TASK_COUNT_CLEAR", 17, 17), ("TASK_BIT18", 18, 18)),
    "TASK_STATUS": reg("PC", "TASK_STATUS", 0x0048, ("TASK_STATUS", 0, 31),
                       note="vendor rknpu: status at 0x48 on RK3576"),
}
PC = tuple(_PC_CHANGES.get(r.name, r) for r in PC_RK3588)

CNA = (
    s_pointer("CNA", 0x1004),
    reg(
        "CNA", "CONV_CON1", 0x100C,
        _only("CONV_MODE", 0, 3, 0, 1, 2, 6),  # 0 direct, 1 depthwise, 6 ARGB int8, 2 ARGB fp16
        _only("IN_PRECISION", 4, 6, 0, 2), _only("PROC_PRECISION", 7, 9, 0, 2), ("ARGB_IN", 12, 15),
        _only("FP16_BIT21", 21, 21, 0, 1), ("GROUP_LINE_OFF", 29, 29),
        note="ARGB_IN = 8 | (image channels - 1) on the ARGB path",
    ),
    _undoc("CNA", 0x1010, 0xFFF, note="meaning unknown; the vendor always writes 0xFFF"),
    reg("CNA", "CONV_CON3", 0x1014, ("CONV_X_STRIDE", 0, 2), ("CONV_Y_STRIDE", 3, 5)),
    reg(
        "CNA", "UNDOC_1018", 0x1018,
        _only("MODE_LO", 0, 3, 4, 5), _only("MODE_HI", 8, 11, 4, 5), _only("BIT30", 30, 30, 1),
        ("CBUF_RETAIN", 31, 31),
        note="0x40000404 single-window layers, 0x40000505 every window of a row-split layer; bit 31 on a "
             "window that reads rows kept in CBUF by the previous window",
    ),
    reg("CNA", "WEIGHT_SIZE0", 0x101C, ("WEIGHT_BYTES", 0, 31)),
    reg("CNA", "WEIGHT_SIZE1", 0x1020, ("WEIGHT_BYTES_PER_KERNEL", 0, 18)),
    reg("CNA", "WEIGHT_SIZE2", 0x1024, ("WEIGHT_KERNELS_M1", 0, 13), ("WEIGHT_WIDTH_M1", 16, 20),
        ("WEIGHT_HEIGHT_M1", 24, 28)),
    reg("CNA", "DATA_SIZE1", 0x1028, ("DATAIN_CHANNEL_M1", 0, 13), ("WINDOW_ENTRIES", 16, 31),
        note="WINDOW_ENTRIES = CBUF entries this task fetches from DRAM (entries per row x fetched rows)"),
    reg("CNA", "DATA_SIZE0", 0x102C, ("DATAIN_HEIGHT_M1", 0, 12), ("DATAIN_WIDTH_M1", 16, 28),
        note="height = rows in this task's CBUF window (kept + fetched)"),
    reg("CNA", "DATA_SIZE2", 0x1030, ("DATAOUT_WIDTH_M1", 0, 12), ("KERNEL_FETCH", 16, 31),
        note="KERNEL_FETCH: direct ic*kh*kw*2, depthwise WEIGHT_BYTES/16, ARGB 2*WEIGHT_BYTES_PER_KERNEL "
             "(meaning INFERRED)"),
    reg("CNA", "DATA_SIZE3", 0x1034, ("DATAOUT_ATOMICS_M1", 0, 21)),
    reg("CNA", "UNDOC_1038", 0x1038, _only("LOW", 0, 2, 7), ("NOT_FIRST_TASK", 31, 31),
        note="written twice per task; bit 31 on every task of a layer but the first"),
    reg("CNA", "CBUF_CON2", 0x103C, ("READ_ORIGIN", 0, 13), ("DATA_ENTRIES", 16, 29),
        note="READ_ORIGIN: CBUF granule where this task's window starts"),
    reg("CNA", "CBUF_CON0", 0x1040, ("WRITE_ORIGIN", 0, 13), ("DATA_LIMIT", 16, 31),
        note="DATA_LIMIT: end of the data ring in 64-B granules (4096 or 5120); WRITE_ORIGIN: granule "
             "where fetched rows start (INFERRED ring-buffer reading)"),
    reg("CNA", "CBUF_CON1", 0x1044, ("DATA_ENTRIES", 0, 13), ("DATAIN_WIDTH", 16, 28)),
    reg(
        "CNA", "CVT_CON0", 0x1048,
        ("CVT_BYPASS", 0, 0), ("CVT_TYPE", 1, 1), ("ROUND_TYPE", 2, 2), ("DATA_SIGN", 3, 3),
        ("CVT_TRUNCATE_0", 4, 9), ("CVT_TRUNCATE_1", 10, 15), ("CVT_TRUNCATE_2", 16, 21), ("CVT_TRUNCATE_3", 22, 27),
    ),
    reg("CNA", "CVT_CON1", 0x104C, ("CVT_SCALE0", 0, 15), ("CVT_SCALE1", 16, 31)),
    reg("CNA", "CVT_CON2", 0x1050, ("CVT_SCALE2", 0, 15), ("CVT_SCALE3", 16, 31)),
    reg("CNA", "CVT_CON3", 0x1054, ("CVT_OFFSET0", 0, 31, True)),
    reg("CNA", "CVT_CON4", 0x1058, ("CVT_OFFSET1", 0, 31, True)),
    reg("CNA", "CVT_CON5", 0x105C, ("CVT_OFFSET2", 0, 31, True)),
    _undoc("CNA", 0x1060),
    _undoc("CNA", 0x1064, note="the vendor writes 0; the live runtime patches 0x777 in, which changes nothing"),
    _undoc("CNA", 0x1068),
    _undoc("CNA", 0x106C),
    _undoc("CNA", 0x1070, note="the RK3588 feature address offset; always 0 on RK3576 (0x1088 is the address)"),
    _undoc("CNA", 0x1074),
    reg("CNA", "DMA_SIZE0", 0x1078, ("DMA_HEIGHT_M1", 0, 12), ("DMA_WIDTH_M1", 16, 28),
        note="height = rows fetched from DRAM by this task"),
    reg("CNA", "DMA_SIZE1", 0x107C, ("DMA_CHANNEL_M1", 0, 12)),
    reg("CNA", "PAD_CON0", 0x1080, ("PAD_TOP", 0, 7), ("PAD_LEFT", 8, 15), ("PAD_BOTTOM", 16, 23),
        ("PAD_RIGHT", 24, 31)),
    reg("CNA", "PAD_CON1", 0x1084, ("PAD_VALUE", 0, 31, True)),
    reg("CNA", "FEATURE_DATA_ADDR", 0x1088, ("FEATURE_BASE_ADDR", 0, 31)),
    reg("CNA", "DMA_CON0", 0x108C, _only("DATA_BURST_LEN", 0, 3, 15), _only("WEIGHT_BURST_LEN", 16, 19, 15)),
    reg("CNA", "DMA_CON1", 0x1090, ("LINE_STRIDE", 0, 27)),
    reg("CNA", "DMA_CON2", 0x1094, ("SURF_STRIDE", 0, 27)),
    reg("CNA", "DMA_CON3", 0x1098, ("TASK_SURF", 0, 27)),
    _undoc("CNA", 0x109C),
    _undoc("CNA", 0x1100, note="RK3588 DCOMP_CTRL offset; always 0 (no weight decompression)"),
    _undoc("CNA", 0x1104, note="RK3588 DCOMP_REGNUM offset; always 0"),
    reg("CNA", "DCOMP_ADDR0", 0x1110, ("DECOMPRESS_ADDR0", 0, 31), note="weight base address"),
    _undoc("CNA", 0x1140, note="RK3588 DCOMP_AMOUNT0 offset; always 0"),
    _undoc("CNA", 0x1144, note="RK3588 DCOMP_AMOUNT1 offset; always 0"),
    reg("CNA", "UNDOC_118C", 0x118C, ("LO", 0, 12), ("HI", 16, 28),
        note="meaning unknown; the vendor writes (iw-1) in both halves (direct, depthwise)"),
)

CORE = (
    s_pointer("CORE", 0x3004),
    reg(
        "CORE", "MISC_CFG", 0x3018,
        ("QD_EN", 0, 0), ("DW_EN", 1, 1), ("DW_BIT3", 3, 3), ("ARGB_BIT7", 7, 7),
        _only("PROC_PRECISION", 8, 10, 0, 2), _only("BIT28", 28, 28, 1),
        note="vendor values: 0x10000001 direct, 0x1000000A depthwise, 0x10000081 ARGB (int8)",
    ),
    reg("CORE", "DATAOUT_SIZE_0", 0x301C, ("DATAOUT_WIDTH_M1", 0, 15), ("DATAOUT_HEIGHT_M1", 16, 31)),
    reg("CORE", "DATAOUT_SIZE_1", 0x3020, ("DATAOUT_CHANNEL_M1", 0, 15)),
    reg("CORE", "CLIP_TRUNCATE", 0x3024,
        note="RK3588 CLIP_TRUNCATE moved +8 (R76-BLOG); the vendor always writes 0; only 0 is accepted"),
)

DPU = (
    s_pointer("DPU", 0x4004),
    reg("DPU", "FEATURE_MODE_CFG", 0x400C, _only("FLYING_MODE", 0, 0, 0, 1), _only("OUTPUT_MODE", 1, 2, 2),
        _only("CONV_MODE", 3, 4, 0, 1), _only("BIT30", 30, 30, 0, 1),
        note="CONV_MODE 1 on depthwise; 0x5 (FLYING_MODE, BIT30 clear) in the vendor's DPU-only LUT-load task "
             "(FLYING_MODE: the RK3588 bit 0 [INFERRED])"),
    reg("DPU", "DATA_FORMAT", 0x4010, _only("PROC_PRECISION", 0, 2, 0, 2), _only("OUT_PRECISION", 29, 31, 0, 2)),
    _undoc("DPU", 0x4014),
    reg("DPU", "DST_BASE_ADDR", 0x4018, ("DST_BASE_ADDR", 0, 31)),
    reg("DPU", "DST_SURF_STRIDE", 0x401C, ("DST_SURF_STRIDE", 0, 27), note="16-byte units, not shifted"),
    reg("DPU", "DATA_CUBE_WIDTH", 0x4020, ("WIDTH_M1", 0, 12)),
    reg("DPU", "DATA_CUBE_HEIGHT", 0x4024, ("HEIGHT_M1", 0, 12)),
    _undoc("DPU", 0x4028),
    reg("DPU", "DATA_CUBE_CHANNEL", 0x402C, ("CHANNEL_M1", 0, 12)),
    reg("DPU", "UNDOC_4030", 0x4030, _only("LO", 0, 15, 0x710, 0x310, 0xF00), ("CHANNEL_M1", 16, 28),
        note="low half 0x710 (direct, ARGB), 0x310 (depthwise) or 0xF00 (the vendor's DPU-only programs), meaning "
             "unknown; high half = oc - 1"),
    reg("DPU", "WDMA_SIZE_1", 0x4034, ("WIDTH_WDMA_M1", 0, 12), ("HEIGHT_WDMA_M1", 16, 28)),
    _undoc("DPU", 0x4038, 0x120080, 0x100092, 0x53,
           note="meaning unknown; 0x120080 int8 direct/ARGB, 0x100092 depthwise and fp16, 0x53 the vendor's LUT-load "
                "task"),
    _undoc("DPU", 0x403C),
    reg("DPU", "BS_CFG", 0x4044, _only("BS_MODE", 0, 1, 0, 1, 2),
        note="1 in the form the live capture uses (with BS_OW_CFG 0x8001x111, BRDMA_CFG 0x710); 0 in the "
             "0x8002x111 / 0x114 form and on depthwise; 2 fp16"),
    _clamp(0x4048, "CLAMP0_MIN"),
    _clamp(0x404C, "CLAMP0_MAX"),
    reg(
        "DPU", "BS_OW_CFG", 0x4050,
        _only("N0", 0, 3, 0, 1, 3), _only("N1", 4, 7, 0, 1, 3), ("GROUP_PHASE", 8, 9), _only("N3", 12, 15, 0, 1, 3),
        _only("N4", 16, 19, 1, 2), _only("FLOAT_OFF", 31, 31, 0, 1),
        note="direct int8 0x8001x111 / 0x8002x111, depthwise 0x13x33, fp16 0x21111; GROUP_PHASE = "
             "(ceil(oc/16) - 1) & 1 direct, (ceil(C/16) - 1) mod 4 depthwise; 0x20000 in the vendor's LUT-load task",
    ),
    _clamp(0x4058, "CLAMP1_MIN"),
    _clamp(0x405C, "CLAMP1_MAX"),
    _undoc("DPU", 0x4060, 0x903, 0x902, note="0x903; 0x902 when the vendor fuses a Clip (CLAMP2/3 live)"),
    _clamp(0x406C, "CLAMP2_MIN", open_range=True),
    _clamp(0x4070, "CLAMP2_MAX", open_range=True),
    _clamp(0x4074, "CLAMP3_MIN", open_range=True),
    _clamp(0x4078, "CLAMP3_MAX", open_range=True),
    reg("DPU", "EW_CFG", 0x407C, _only("VALUE", 0, 31, EW_CFG_BYPASS, EW_CFG_ADD, EW_CFG_LUT),
        note="the EW stage: 0x010041C1 in every conv without an element-wise operand, 0x8002C0C0 where the vendor "
             "adds a second tensor (its fused Add(Conv, Conv) and standalone Add/Sub programs), 0x01004140 in the "
             "vendor's LUT consumers (bit 7 = LUT bypass clear, R76-USR); only these three"),
    reg("DPU", "EW_CVT_OFFSET_VALUE", 0x4080, ("EW_OP_CVT_OFFSET", 0, 31, True),
        note="added to the stored operand: minus its zero point in the vendor's Add programs (RK3588 0x4074)"),
    reg("DPU", "EW_CVT_SCALE_VALUE", 0x4084, ("EW_OP_CVT_SCALE", 0, 15, True), ("EW_OP_CVT_SHIFT", 16, 21),
        note="operand converter: signed 16-bit scale (negative for the vendor's Sub) and right shift; 1 when "
             "bypassed (RK3588 0x4078)"),
    _clamp(0x4088, "CLAMP4_MIN"),
    _clamp(0x408C, "CLAMP4_MAX"),
    _undoc("DPU", 0x4090),
    _undoc("DPU", 0x4094),
    _undoc("DPU", 0x409C),
    _clamp(0x40A4, "CLAMP5_MIN"),
    _clamp(0x40A8, "CLAMP5_MAX"),
    reg("DPU", "OUT_CVT_OFFSET", 0x40AC, ("OUT_CVT_OFFSET", 0, 31, True)),
    reg("DPU", "OUT_CVT_SCALE", 0x40B0, ("OUT_CVT_SCALE", 0, 15), ("FP32TOFP16_EN", 16, 16)),
    reg("DPU", "OUT_CVT_SHIFT", 0x40B4, ("OUT_CVT_SHIFT", 0, 5), ("CVT_ROUND", 30, 30),
        note="CVT_ROUND: the tie rule of the shift, 0 ties to even, 1 away from zero (third-party hardware sweep, "
             "docs/hardware/rocket.md \"OUT_CVT's tie rule\"); teflon and the vendor write 0"),
    reg("DPU", "SURFACE_ADD", 0x40B8, ("SURF_ADD", 0, 27),
        note="channel-group jump in 16-byte units (not shifted)"),
    _undoc("DPU", 0x40BC),
    _undoc("DPU", 0x40C0, 0x04440100, 0x04440000,
           note="meaning unknown; 0x04440100 in every conv, 0x04440000 in the vendor's LUT-load task"),
    _undoc("DPU", 0x40C8),
    _undoc("DPU", 0x40CC),
    _undoc("DPU", 0x40D0, 0x0040FFFF, note="meaning unknown; always 0x0040FFFF"),
    # The LUT access pair: the vendor's LUT-load task writes 0x00020000 / 0x00030000 (write, table 0 / 1, address
    # 0) here, each followed by 513 data words (../shared/golden/rocket-rk3576-ops README §5 "Activations"); the
    # fields are RK3588's (registers.xml) and NVDLA's S_LUT_ACCESS_CFG/DATA. Conv programs write 0 / 0.
    reg("DPU", "LUT_ACCESS_CFG", 0x4100, ("LUT_ADDR", 0, 9), ("LUT_TABLE_ID", 16, 16), ("LUT_ACCESS_TYPE", 17, 17)),
    reg("DPU", "LUT_ACCESS_DATA", 0x4104, ("LUT_ACCESS_DATA", 0, 15)),
    # The consumer's LUT words (every vendor consumer: 0x4108 0x02000006, 0x410C 0x00050500, 0x4110..0x411C
    # 0xFFFFC000, 0x4140..0x414C 0x4000, 0x4188..0x4194 the tables' end entries [VENDOR76]). Their meaning is
    # [R76-USR]'s, measured on an RK3576 (tests/rk3576_lut_probe.c, four spans of 8192 samples): index =
    # (v - LE_START) >> sel, table 0 over [LE_START, 0], table 1 over [0, LO_END), v < LE_START reads the
    # underflow value, v >= LO_END the overflow value (docs/hardware/rocket-rk3576.md "The LUT on RK3576").
    _undoc("DPU", 0x4108, 0, LUT_CFG_LOAD, LUT_CFG_CONSUMER,
           note="LUT_CFG [R76-USR name]: 0x02000006 in every vendor consumer, 0x00FF0000 in the LUT-load task; bit "
                "meanings unknown"),
    reg("DPU", "LUT_INFO", 0x410C, _only("LUT_LE_INDEX_SELECT", 8, 15, 0, 5), _only("LUT_LO_INDEX_SELECT", 16, 23, 0, 5),
        note="sel, the index step 2^sel, in both bytes [VENDOR76 0x00050500; R76-USR writes sel << 16 | sel << 8]; "
             "the RK3588 field names (which byte is which table: [INFERRED]); only sel 5, the vendor's"),
    *(reg("DPU", f"LUT_LE_START_{i}", 0x4110 + 4 * i, ("LUT_LE_START", 0, 31, True),
          note="the value at table 0's entry 0, four lanes written alike [VENDOR76, R76-USR]") for i in range(4)),
    _undoc("DPU", 0x4120, note="LUT block (RK3588 LE_END analogy); always 0 (vendor and R76-USR)"),
    _undoc("DPU", 0x4130, note="LUT block (RK3588 LO_START analogy); always 0 (vendor and R76-USR)"),
    *(reg("DPU", f"LUT_LO_END_{i}", 0x4140 + 4 * i, ("LUT_LO_END", 0, 31, True),
          note="one past table 1's domain, four lanes written alike [VENDOR76, R76-USR]") for i in range(4)),
    *(_undoc("DPU", off, note="LUT slope words [INFERRED]; 0 in teflon's programs (no input reaches a tail)")
      for off in (0x4150, 0x4154, 0x4160, 0x4170, 0x4174, 0x4184)),
    reg("DPU", "LUT_UFLOW_0", 0x4188, ("LUT_UFLOW_HI", 16, 31, True),
        note="what v < LE_START reads, in the high half (low half 0) [VENDOR76 T0[0] << 16; R76-USR]"),
    reg("DPU", "LUT_UFLOW_1", 0x418C, ("LUT_UFLOW_LO", 0, 15, True), ("LUT_UFLOW_HI", 16, 31, True),
        note="the underflow value in both halves [VENDOR76; R76-USR]"),
    reg("DPU", "LUT_OFLOW_0", 0x4190, ("LUT_OFLOW_HI", 16, 31, True),
        note="what v >= LO_END reads, in the high half (low half 0) [VENDOR76 T1[512] << 16; R76-USR]"),
    reg("DPU", "LUT_OFLOW_1", 0x4194, ("LUT_OFLOW_LO", 0, 15, True), ("LUT_OFLOW_HI", 16, 31, True),
        note="the overflow value in both halves [VENDOR76; R76-USR]"),
)

DPU_RDMA = (
    s_pointer("DPU_RDMA", 0x5004),
    reg("DPU_RDMA", "DATA_CUBE_WIDTH", 0x500C, ("WIDTH_M1", 0, 12)),
    reg("DPU_RDMA", "DATA_CUBE_HEIGHT", 0x5010, ("HEIGHT_M1", 0, 12)),
    reg("DPU_RDMA", "DATA_CUBE_CHANNEL", 0x5014, ("CHANNEL_M1", 0, 12)),
    reg("DPU_RDMA", "SRC_BASE_ADDR", 0x5018, ("SRC_BASE_ADDR", 0, 31),
        note="RK3588 SRC_BASE_ADDR offset (the MRDMA source); 0 in convolutions; the LUT-load task's dummy cube "
             "(the vendor stores 0; R76-USR points it at a scratch buffer, which it measured is not written)"),
    reg("DPU_RDMA", "BRDMA_CFG", 0x501C, _only("BRDMA_CFG", 0, 31, 0, 0x710, 0x114, 0x510, 0x100),
        note="0x710 direct (live form), 0x114 direct (other form), 0x510 depthwise, 0x100 fp16, 0 in the vendor's "
             "LUT-load task"),
    reg("DPU_RDMA", "BS_BASE_ADDR", 0x5020, ("BS_BASE_ADDR", 0, 31), note="coefficient table"),
    reg("DPU_RDMA", "BS_SHIFT_ADDR", 0x5024, ("BS_SHIFT_ADDR", 0, 31),
        note="address of the 32-bit shift word (bits 0..5 acc >= 0, 8..13 acc < 0); must be real memory"),
    _undoc("DPU_RDMA", 0x5028, 0, 0x1A,
           note="NRDMA_CFG [R76-USR name]: 0x1A in every vendor LUT consumer and in R76-USR's measured LUT program "
                "(with BN bypassed, 0x4060 = 0x903); what it fetches there is not known; 0 elsewhere"),
    reg("DPU_RDMA", "BN_BASE_ADDR", 0x502C, ("BN_BASE_ADDR", 0, 31),
        note="BN_BASE_ADDR [R76-USR name, include/npu_regcmd_rk3576.h at 33643e4]; the vendor writes 0 everywhere. "
             "R76-USR warns that a base left at 0 reads IOVA 0 and put a 4 KiB scratch buffer there, so teflon's "
             "LUT consumers (0x5028 = 0x1A) point it at the program's 4 KiB scratch buffer; whether (and how much) it "
             "fetches with BN bypassed is not known [INFERRED: at most 4 KiB, the size R76-USR's probe gave it]; "
             "0 without the LUT"),
    _undoc("DPU_RDMA", 0x5030),
    reg("DPU_RDMA", "ERDMA_CFG", 0x5034, _only("ERDMA_DISABLE", 0, 0, 0, 1), _only("ERDMA_DATA_SIZE", 2, 3, 0, 1),
        _only("BIT6", 6, 6, 0, 1), _only("ERDMA_BIT28", 28, 28, 0, 1), _only("ERDMA_DATA_MODE", 30, 31, 0, 1),
        note="0x41 int8 without operand, 0x1 fp16; 0x50000044 with the operand of a fused conv + Add, 0x40000044 "
             "in the standalone element-wise program (RK3588 field positions)"),
    reg("DPU_RDMA", "EW_BASE_ADDR", 0x5038, ("EW_BASE_ADDR", 0, 31), note="element-wise operand address"),
    reg("DPU_RDMA", "EW_SURF_STRIDE", 0x5040, ("EW_SURF_STRIDE", 0, 27),
        note="operand surface pitch in 16-byte units (not shifted; W x H in the vendor's Add programs)"),
    reg(
        "DPU_RDMA", "FEATURE_MODE_CFG", 0x5044,
        _only("FLYING_MODE", 0, 0, 0, 1), _only("CONV_MODE", 1, 2, 0, 1), _only("EW_BIT3", 3, 3, 0, 1),
        _only("MRDMA_DISABLE", 4, 4, 0, 1), _only("PROC_PRECISION", 5, 7, 0, 2), _only("IN_PRECISION", 15, 17, 0, 2),
        _only("BIT30", 30, 30, 0, 1),
        note="EW_BIT3 set with the ERDMA operand of a fused conv + Add (0x40000018), meaning otherwise unknown; 0x9 "
             "in the vendor's DPU-only LUT-load task (FLYING_MODE: the RK3588 bit 0 [INFERRED])",
    ),
    _undoc("DPU_RDMA", 0x5048),
    reg("DPU_RDMA", "SURF_NOTCH", 0x504C, ("SURF_NOTCH_ADDR", 0, 27),
        note="16-byte units; W x H with a fused conv + Add, 0 otherwise (also in the standalone program)"),
    _undoc("DPU_RDMA", 0x5064),
    reg("DPU_RDMA", "EW_SURF_NOTCH", 0x506C, ("EW_SURF_NOTCH", 0, 27), note="as SURF_NOTCH"),
    _undoc("DPU_RDMA", 0x5078),
    _undoc("DPU_RDMA", 0x507C),
)

# PPU / PPU_RDMA: the RK3588 layout (TRM, registers.xml) for everything the vendor pool programs write, except
# two registers (../shared/golden/rocket-rk3576-ops README §5):
# - 0x6044..0x605C: seven 19-bit padding values, NVDLA PDP's pad_value_1x..7x (N x the pad value); the vendor
#   writes -128 into the first four for max pooling, (j + 1) x zp for average, 0 into the last three;
# - PPU_RDMA 0x7030: the vendor writes 0x40, outside the RK3588 IN_PRECISION field (bits 0..1). [INFERRED] the
#   field moved to bits 6..7 and 1 = 8-bit as in the TRM's enum; only that value is accepted.
PPU = (
    *PPU_COMMON,
    # The trailing pads in the low nibbles, the leading ones in the high: the vendor's SAME k3 s2 pool over 16
    # (right = bottom = 1, left = top = 0) writes 0x0011, and the PPU computes it exactly (third-party capture and
    # hardware sweep, docs/hardware/rocket.md §6a). Which nibble of each pair is x and which y is not known (equal
    # in every program seen): the encoder writes only pools whose pairs are equal (rk3576/encoder.py).
    reg("PPU", "POOLING_PADDING_CFG", 0x6040, ("PAD_RIGHT", 0, 2), ("PAD_BOTTOM", 4, 6), ("PAD_LEFT", 8, 10),
        ("PAD_TOP", 12, 14)),
    *(reg("PPU", f"PADDING_VALUE_{i + 1}_CFG", 0x6044 + 4 * i, (f"PAD_VALUE_{i + 1}X", 0, 18, True))
      for i in range(7)),
)
PPU_RDMA = (*PPU_RDMA_COMMON, reg("PPU_RDMA", "DATA_FORMAT", 0x7030, _only("IN_PRECISION", 6, 7, 1)))

SPECIALS = (
    Special("SYNC", 0x0041),
    Special("OP_ENABLE", 0x0081, register="PC_OPERATION_ENABLE", offset=0x0008),
)

# Values the datapath takes, narrower than the fields' bits (docs/hardware/rocket-rk3576.md "Program check"):
# shared by the encoder, rocket/check.py and the simulator (through the generated header). None is known on
# RK3576: its OUT_CVT_SHIFT field is 6 bits (0..63, all measured by R76-VENDOR's sweeps), and the simulator's
# other numeric checks depend on the task (e.g. CNA_PAD_CON1 is a sign-extended int8 on the NC1HWC2 path, but
# the vendor's raw-input programs write 0x00808080 there), so they are not plain field ranges.
RANGES: tuple[FieldRange, ...] = ()

TABLE = SocTable("rk3576", UNITS, PC + CNA + CORE + DPU + DPU_RDMA + PPU + PPU_RDMA, SPECIALS, RANGES)

# Per-task register order of the vendor's single-core program (139 words, compile "A"); the CNA
# UNDOC_1038 appears twice. The encoder emits exactly this order.
STREAM_ORDER: tuple[str, ...] = (
    "CNA_S_POINTER", "CORE_S_POINTER", "CNA_UNDOC_1038", "DPU_S_POINTER", "DPU_RDMA_S_POINTER",
    *(r.full_name for r in CNA if r.offset >= 0x100C),
    *(r.full_name for r in CORE if r.offset >= 0x3018),
    *(r.full_name for r in DPU if r.offset >= 0x400C),
    *(r.full_name for r in DPU_RDMA if r.offset >= 0x500C),
)
