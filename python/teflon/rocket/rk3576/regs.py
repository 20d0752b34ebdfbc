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

from teflon.hw.regmap import Field, Register, SocTable, Special, reg
from teflon.rocket.rk3588.regs import PC as PC_RK3588
from teflon.rocket.rk3588.regs import PPU_COMMON, PPU_RDMA_COMMON, UNITS, _s_pointer

INT32_MIN = 0x80000000
INT32_MAX = 0x7FFFFFFF


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
    return reg("DPU", name, offset, f, note="[INFERRED] int32 clamp bound; the encoder writes only the "
               "no-op value (INT32_MIN / INT32_MAX)")


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
    _s_pointer("CNA", 0x1004),
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
    _s_pointer("CORE", 0x3004),
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
    _s_pointer("DPU", 0x4004),
    reg("DPU", "FEATURE_MODE_CFG", 0x400C, _only("OUTPUT_MODE", 1, 2, 2), _only("CONV_MODE", 3, 4, 0, 1),
        _only("BIT30", 30, 30, 1), note="CONV_MODE 1 on depthwise"),
    reg("DPU", "DATA_FORMAT", 0x4010, _only("PROC_PRECISION", 0, 2, 0, 2), _only("OUT_PRECISION", 29, 31, 0, 2)),
    _undoc("DPU", 0x4014),
    reg("DPU", "DST_BASE_ADDR", 0x4018, ("DST_BASE_ADDR", 0, 31)),
    reg("DPU", "DST_SURF_STRIDE", 0x401C, ("DST_SURF_STRIDE", 0, 27), note="16-byte units, not shifted"),
    reg("DPU", "DATA_CUBE_WIDTH", 0x4020, ("WIDTH_M1", 0, 12)),
    reg("DPU", "DATA_CUBE_HEIGHT", 0x4024, ("HEIGHT_M1", 0, 12)),
    _undoc("DPU", 0x4028),
    reg("DPU", "DATA_CUBE_CHANNEL", 0x402C, ("CHANNEL_M1", 0, 12)),
    reg("DPU", "UNDOC_4030", 0x4030, _only("LO", 0, 15, 0x710, 0x310), ("CHANNEL_M1", 16, 28),
        note="low half 0x710 (direct, ARGB) or 0x310 (depthwise), meaning unknown; high half = oc - 1"),
    reg("DPU", "WDMA_SIZE_1", 0x4034, ("WIDTH_WDMA_M1", 0, 12), ("HEIGHT_WDMA_M1", 16, 28)),
    _undoc("DPU", 0x4038, 0x120080, 0x100092,
           note="meaning unknown; 0x120080 int8 direct/ARGB, 0x100092 depthwise and fp16"),
    _undoc("DPU", 0x403C),
    reg("DPU", "BS_CFG", 0x4044, _only("BS_MODE", 0, 1, 0, 1, 2),
        note="1 in the form the live capture uses (with BS_OW_CFG 0x8001x111, BRDMA_CFG 0x710); 0 in the "
             "0x8002x111 / 0x114 form and on depthwise; 2 fp16"),
    _clamp(0x4048, "CLAMP0_MIN"),
    _clamp(0x404C, "CLAMP0_MAX"),
    reg(
        "DPU", "BS_OW_CFG", 0x4050,
        _only("N0", 0, 3, 1, 3), _only("N1", 4, 7, 1, 3), ("GROUP_PHASE", 8, 9), _only("N3", 12, 15, 1, 3),
        _only("N4", 16, 19, 1, 2), _only("FLOAT_OFF", 31, 31, 0, 1),
        note="direct int8 0x8001x111 / 0x8002x111, depthwise 0x13x33, fp16 0x21111; GROUP_PHASE = "
             "(ceil(oc/16) - 1) & 1 direct, (ceil(C/16) - 1) mod 4 depthwise",
    ),
    _clamp(0x4058, "CLAMP1_MIN"),
    _clamp(0x405C, "CLAMP1_MAX"),
    _undoc("DPU", 0x4060, 0x903, 0x902, note="0x903; 0x902 when the vendor fuses a Clip (CLAMP2/3 live)"),
    _clamp(0x406C, "CLAMP2_MIN", open_range=True),
    _clamp(0x4070, "CLAMP2_MAX", open_range=True),
    _clamp(0x4074, "CLAMP3_MIN", open_range=True),
    _clamp(0x4078, "CLAMP3_MAX", open_range=True),
    _undoc("DPU", 0x407C, 0x010041C1, note="meaning unknown; always 0x010041C1"),
    _undoc("DPU", 0x4080),
    _undoc("DPU", 0x4084, 1, note="meaning unknown; always 1"),
    _clamp(0x4088, "CLAMP4_MIN"),
    _clamp(0x408C, "CLAMP4_MAX"),
    _undoc("DPU", 0x4090),
    _undoc("DPU", 0x4094),
    _undoc("DPU", 0x409C),
    _clamp(0x40A4, "CLAMP5_MIN"),
    _clamp(0x40A8, "CLAMP5_MAX"),
    reg("DPU", "OUT_CVT_OFFSET", 0x40AC, ("OUT_CVT_OFFSET", 0, 31, True)),
    reg("DPU", "OUT_CVT_SCALE", 0x40B0, ("OUT_CVT_SCALE", 0, 15), ("FP32TOFP16_EN", 16, 16)),
    reg("DPU", "OUT_CVT_SHIFT", 0x40B4, ("OUT_CVT_SHIFT", 0, 5)),
    reg("DPU", "SURFACE_ADD", 0x40B8, ("SURF_ADD", 0, 27),
        note="channel-group jump in 16-byte units (not shifted)"),
    _undoc("DPU", 0x40BC),
    _undoc("DPU", 0x40C0, 0x04440100, note="meaning unknown; always 0x04440100"),
    _undoc("DPU", 0x40C8),
    _undoc("DPU", 0x40CC),
    _undoc("DPU", 0x40D0, 0x0040FFFF, note="meaning unknown; always 0x0040FFFF"),
    # The LUT access pair: the vendor's LUT-load task writes 0x00020000 / 0x00030000 (write, table 0 / 1, address
    # 0) here, each followed by 513 data words (../shared/golden/rocket-rk3576-ops README §5 "Activations"); the
    # fields are RK3588's (registers.xml) and NVDLA's S_LUT_ACCESS_CFG/DATA. Conv programs write 0 / 0.
    reg("DPU", "LUT_ACCESS_CFG", 0x4100, ("LUT_ADDR", 0, 9), ("LUT_TABLE_ID", 16, 16), ("LUT_ACCESS_TYPE", 17, 17)),
    reg("DPU", "LUT_ACCESS_DATA", 0x4104, ("LUT_ACCESS_DATA", 0, 15)),
    # The consumer's LUT words (vendor bare sigmoid: 0x4108 0x02000006, 0x410C 0x00050500, 0x4110..0x411C
    # 0xFFFFC000, 0x4140..0x414C 0x4000, 0x4188..0x4194 the tables' end entries); meaning beyond the RK3588
    # analogy unknown: only 0 until teflon emits the RK3576 LUT program (docs/hardware/rocket-rk3576.md).
    *(_undoc("DPU", off, note="LUT block (RK3588 analogy); always 0 in teflon's programs")
      for off in (0x4108, 0x410C, 0x4110, 0x4114, 0x4118, 0x411C, 0x4120, 0x4130, 0x4140,
                  0x4144, 0x4148, 0x414C, 0x4150, 0x4154, 0x4160, 0x4170, 0x4174, 0x4184, 0x4188, 0x418C,
                  0x4190, 0x4194)),
)

DPU_RDMA = (
    _s_pointer("DPU_RDMA", 0x5004),
    reg("DPU_RDMA", "DATA_CUBE_WIDTH", 0x500C, ("WIDTH_M1", 0, 12)),
    reg("DPU_RDMA", "DATA_CUBE_HEIGHT", 0x5010, ("HEIGHT_M1", 0, 12)),
    reg("DPU_RDMA", "DATA_CUBE_CHANNEL", 0x5014, ("CHANNEL_M1", 0, 12)),
    _undoc("DPU_RDMA", 0x5018, note="RK3588 SRC_BASE_ADDR offset (element-wise source); always 0"),
    reg("DPU_RDMA", "BRDMA_CFG", 0x501C, _only("BRDMA_CFG", 0, 31, 0x710, 0x114, 0x510, 0x100),
        note="0x710 direct (live form), 0x114 direct (other form), 0x510 depthwise, 0x100 fp16"),
    reg("DPU_RDMA", "BS_BASE_ADDR", 0x5020, ("BS_BASE_ADDR", 0, 31), note="coefficient table"),
    reg("DPU_RDMA", "BS_SHIFT_ADDR", 0x5024, ("BS_SHIFT_ADDR", 0, 31),
        note="address of the 32-bit shift word (bits 0..5 acc >= 0, 8..13 acc < 0); must be real memory"),
    _undoc("DPU_RDMA", 0x5028),
    _undoc("DPU_RDMA", 0x502C),
    _undoc("DPU_RDMA", 0x5030),
    reg("DPU_RDMA", "ERDMA_CFG", 0x5034, _only("ERDMA_DISABLE", 0, 0, 1), _only("BIT6", 6, 6, 0, 1),
        note="0x41 int8, 0x1 fp16"),
    _undoc("DPU_RDMA", 0x5038),
    _undoc("DPU_RDMA", 0x5040),
    reg(
        "DPU_RDMA", "FEATURE_MODE_CFG", 0x5044,
        _only("CONV_MODE", 1, 2, 0, 1), _only("MRDMA_DISABLE", 4, 4, 1), _only("PROC_PRECISION", 5, 7, 0, 2),
        _only("IN_PRECISION", 15, 17, 0, 2), _only("BIT30", 30, 30, 1),
    ),
    _undoc("DPU_RDMA", 0x5048),
    _undoc("DPU_RDMA", 0x504C),
    _undoc("DPU_RDMA", 0x5064),
    _undoc("DPU_RDMA", 0x506C),
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
    *(reg("PPU", f"PADDING_VALUE_{i + 1}_CFG", 0x6044 + 4 * i, (f"PAD_VALUE_{i + 1}X", 0, 18, True))
      for i in range(7)),
)
PPU_RDMA = (*PPU_RDMA_COMMON, reg("PPU_RDMA", "DATA_FORMAT", 0x7030, _only("IN_PRECISION", 6, 7, 1)))

SPECIALS = (
    Special("SYNC", 0x0041),
    Special("OP_ENABLE", 0x0081, register="PC_OPERATION_ENABLE", offset=0x0008),
)

TABLE = SocTable("rk3576", UNITS, PC + CNA + CORE + DPU + DPU_RDMA + PPU + PPU_RDMA, SPECIALS)

# Per-task register order of the vendor's single-core program (139 words, compile "A"); the CNA
# UNDOC_1038 appears twice. The encoder emits exactly this order.
STREAM_ORDER: tuple[str, ...] = (
    "CNA_S_POINTER", "CORE_S_POINTER", "CNA_UNDOC_1038", "DPU_S_POINTER", "DPU_RDMA_S_POINTER",
    *(r.full_name for r in CNA if r.offset >= 0x100C),
    *(r.full_name for r in CORE if r.offset >= 0x3018),
    *(r.full_name for r in DPU if r.offset >= 0x400C),
    *(r.full_name for r in DPU_RDMA if r.offset >= 0x500C),
)
