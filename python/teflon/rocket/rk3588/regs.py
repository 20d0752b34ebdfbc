"""RK3588 NPU register table (data only).

Offsets and bit positions: Mesa src/gallium/drivers/rocket/registers.xml (RK3588 layout, derived from
the TRM) and the Linux accel/rocket driver (PC block, S_POINTER core bits). Reserved bits are not
declared: a value touching them is rejected by RegMap and by the simulator. Register names drop
the redundant "RDMA_" prefix registers.xml puts on DPU_RDMA registers (DPU_RDMA_S_POINTER, not
DPU_RDMA_RDMA_S_POINTER). Only registers the encoder emits, plus the PC block and the S_POINTERs
the kernel writes by MMIO, are listed. See docs/hardware/rocket.md.
"""

from __future__ import annotations

from teflon.hw.regmap import FieldRange, Register, SocTable, Special, Unit, reg

# Target ids (registers.xml enum "target"); a normal write uses id + 1. DDMA/SDMA/GLOBAL ids do not
# fit the 16-bit word target field and are never written from a stream.
UNITS = (
    Unit("PC", 0x0100),
    Unit("CNA", 0x0200),
    Unit("CORE", 0x0800),
    Unit("DPU", 0x1000),
    Unit("DPU_RDMA", 0x2000),
    Unit("PPU", 0x4000),
    Unit("PPU_RDMA", 0x8000),
)

_IRQ_BITS = (
    ("CNA_FEATURE_0", 0, 0), ("CNA_FEATURE_1", 1, 1), ("CNA_WEIGHT_0", 2, 2), ("CNA_WEIGHT_1", 3, 3),
    ("CNA_CSC_0", 4, 4), ("CNA_CSC_1", 5, 5), ("CORE_0", 6, 6), ("CORE_1", 7, 7), ("DPU_0", 8, 8),
    ("DPU_1", 9, 9), ("PPU_0", 10, 10), ("PPU_1", 11, 11), ("DMA_READ_ERROR", 12, 12),
    ("DMA_WRITE_ERROR", 13, 13),
)


def s_pointer(unit: str, offset: int, name: str = "S_POINTER") -> Register:
    return reg(
        unit, name, offset,
        ("POINTER", 0, 0), ("POINTER_PP_EN", 1, 1), ("EXECUTER_PP_EN", 2, 2), ("POINTER_PP_MODE", 3, 3),
        ("POINTER_PP_CLEAR", 4, 4), ("EXECUTER_PP_CLEAR", 5, 5), ("EXECUTER", 16, 16),
        # The kernel ORs 0x10000000 * core_index into CNA/CORE S_POINTER ("from rknpu; reserved in
        # the TRM"). Declared so MMIO writes of cores 1 and 2 decode.
        ("CORE_SELECT", 28, 29),
    )


PC = (
    reg("PC", "VERSION", 0x0000, ("VERSION", 0, 31)),
    reg("PC", "VERSION_NUM", 0x0004, ("VERSION_NUM", 0, 31)),
    # Written from the stream by the 0x0081 broadcast word: a per-unit enable bitmap with the
    # GLOBAL_OPERATION_ENABLE layout (bit 0 doubles as the TRM's OP_EN when the kernel writes 1).
    reg(
        "PC", "OPERATION_ENABLE", 0x0008,
        ("CNA_EN", 0, 0), ("CORE_EN", 2, 2), ("DPU_EN", 3, 3), ("DPU_RDMA_EN", 4, 4), ("PPU_EN", 5, 5),
        ("PPU_RDMA_EN", 6, 6),
    ),
    reg("PC", "BASE_ADDRESS", 0x0010, ("PC_SEL", 0, 0), ("PC_SOURCE_ADDR", 4, 31)),
    reg("PC", "REGISTER_AMOUNTS", 0x0014, ("PC_DATA_AMOUNT", 0, 15)),
    reg("PC", "INTERRUPT_MASK", 0x0020, *_IRQ_BITS),
    reg("PC", "INTERRUPT_CLEAR", 0x0024, *_IRQ_BITS, ("CLEAR_HIGH", 14, 16)),  # kernel writes 0x1FFFF
    reg("PC", "INTERRUPT_STATUS", 0x0028, *_IRQ_BITS),
    reg("PC", "INTERRUPT_RAW_STATUS", 0x002C, *_IRQ_BITS),
    # Bit 14 is "reserved" in registers.xml but both the kernel (0x7001) and the vendor driver set it.
    reg("PC", "TASK_CON", 0x0030, ("TASK_NUMBER", 0, 11), ("TASK_PP_EN", 12, 12), ("TASK_COUNT_CLEAR", 13, 13),
        ("TASK_BIT14", 14, 14)),
    reg("PC", "TASK_DMA_BASE_ADDR", 0x0034, ("DMA_BASE_ADDR", 4, 31)),
    reg("PC", "TASK_STATUS", 0x003C, ("TASK_STATUS", 0, 27)),
)

CNA = (
    s_pointer("CNA", 0x1004),
    reg(
        "CNA", "CONV_CON1", 0x100C,
        ("CONV_MODE", 0, 3), ("IN_PRECISION", 4, 6), ("PROC_PRECISION", 7, 9), ("ARGB_IN", 12, 15),
        ("DECONV", 16, 16), ("GROUP_LINE_OFF", 29, 29), ("NONALIGN_DMA", 30, 30),
    ),
    reg(
        "CNA", "CONV_CON2", 0x1010,
        ("CMD_FIFO_SRST", 0, 0), ("CSC_DO_EN", 1, 1), ("CSC_WO_EN", 2, 2), ("FEATURE_GRAINS", 4, 13),
        ("KERNEL_GROUP", 16, 23),
    ),
    reg(
        "CNA", "CONV_CON3", 0x1014,
        ("CONV_X_STRIDE", 0, 2), ("CONV_Y_STRIDE", 3, 5), ("DECONV_X_STRIDE", 8, 10), ("DECONV_Y_STRIDE", 11, 13),
        ("ATROUS_X_DILATION", 16, 20), ("ATROUS_Y_DILATION", 21, 25), ("NN_MODE", 28, 30),
    ),
    reg("CNA", "DATA_SIZE0", 0x1020, ("DATAIN_HEIGHT", 0, 10), ("DATAIN_WIDTH", 16, 26)),
    reg("CNA", "DATA_SIZE1", 0x1024, ("DATAIN_CHANNEL", 0, 15), ("DATAIN_CHANNEL_REAL", 16, 29)),
    reg("CNA", "DATA_SIZE2", 0x1028, ("DATAOUT_WIDTH", 0, 10)),
    reg("CNA", "DATA_SIZE3", 0x102C, ("DATAOUT_ATOMICS", 0, 21), ("SURF_MODE", 22, 23)),
    reg("CNA", "WEIGHT_SIZE0", 0x1030, ("WEIGHT_BYTES", 0, 31)),
    reg("CNA", "WEIGHT_SIZE1", 0x1034, ("WEIGHT_BYTES_PER_KERNEL", 0, 18)),
    reg("CNA", "WEIGHT_SIZE2", 0x1038, ("WEIGHT_KERNELS", 0, 13), ("WEIGHT_HEIGHT", 16, 20), ("WEIGHT_WIDTH", 24, 28)),
    reg(
        "CNA", "CBUF_CON0", 0x1040,
        ("DATA_BANK", 0, 3), ("WEIGHT_BANK", 4, 7), ("FC_DATA_BANK", 8, 10), ("DATA_REUSE", 12, 12),
        ("WEIGHT_REUSE", 13, 13),
    ),
    reg("CNA", "CBUF_CON1", 0x1044, ("DATA_ENTRIES", 0, 13)),
    reg(
        "CNA", "CVT_CON0", 0x104C,
        ("CVT_BYPASS", 0, 0), ("CVT_TYPE", 1, 1), ("ROUND_TYPE", 2, 2), ("DATA_SIGN", 3, 3),
        ("CVT_TRUNCATE_0", 4, 9), ("CVT_TRUNCATE_1", 10, 15), ("CVT_TRUNCATE_2", 16, 21), ("CVT_TRUNCATE_3", 22, 27),
    ),
    reg("CNA", "CVT_CON1", 0x1050, ("CVT_OFFSET0", 0, 15, True), ("CVT_SCALE0", 16, 31)),
    reg("CNA", "CVT_CON2", 0x1054, ("CVT_OFFSET1", 0, 15, True), ("CVT_SCALE1", 16, 31)),
    reg("CNA", "CVT_CON3", 0x1058, ("CVT_OFFSET2", 0, 15, True), ("CVT_SCALE2", 16, 31)),
    reg("CNA", "CVT_CON4", 0x105C, ("CVT_OFFSET3", 0, 15, True), ("CVT_SCALE3", 16, 31)),
    reg("CNA", "FC_CON0", 0x1060, ("FC_SKIP_EN", 0, 0), ("FC_SKIP_DATA", 16, 31)),
    reg("CNA", "FC_CON1", 0x1064, ("DATA_OFFSET", 0, 16)),
    reg("CNA", "PAD_CON0", 0x1068, ("PAD_TOP", 0, 3), ("PAD_LEFT", 4, 7)),
    reg("CNA", "FEATURE_DATA_ADDR", 0x1070, ("FEATURE_BASE_ADDR", 0, 31)),
    reg("CNA", "FC_CON2", 0x1074, ("WEIGHT_OFFSET", 0, 16)),
    reg("CNA", "DMA_CON0", 0x1078, ("DATA_BURST_LEN", 0, 3), ("WEIGHT_BURST_LEN", 16, 19), ("OV4K_BYPASS", 31, 31)),
    reg("CNA", "DMA_CON1", 0x107C, ("LINE_STRIDE", 0, 27)),
    reg("CNA", "DMA_CON2", 0x1080, ("SURF_STRIDE", 0, 27)),
    reg("CNA", "FC_DATA_SIZE0", 0x1084, ("DMA_HEIGHT", 0, 10), ("DMA_WIDTH", 16, 29)),
    reg("CNA", "FC_DATA_SIZE1", 0x1088, ("DMA_CHANNEL", 0, 15)),
    reg("CNA", "DCOMP_CTRL", 0x1100, ("DECOMP_CONTROL", 0, 2), ("WT_DEC_BYPASS", 3, 3)),
    reg("CNA", "DCOMP_REGNUM", 0x1104, ("DCOMP_REGNUM", 0, 31)),
    reg("CNA", "DCOMP_ADDR0", 0x1110, ("DECOMPRESS_ADDR0", 0, 31)),
    *(reg("CNA", f"DCOMP_AMOUNT{i}", 0x1140 + 4 * i, (f"DCOMP_AMOUNT{i}", 0, 31)) for i in range(16)),
    reg("CNA", "CVT_CON5", 0x1180, ("PER_CHANNEL_CVT_EN", 0, 31)),
    reg("CNA", "PAD_CON1", 0x1184, ("PAD_VALUE", 0, 31, True)),
)

CORE = (
    s_pointer("CORE", 0x3004),
    reg("CORE", "MISC_CFG", 0x3010, ("QD_EN", 0, 0), ("DW_EN", 1, 1), ("PROC_PRECISION", 8, 10),
        ("SOFT_GATING", 14, 19)),
    reg("CORE", "DATAOUT_SIZE_0", 0x3014, ("DATAOUT_WIDTH", 0, 15), ("DATAOUT_HEIGHT", 16, 31)),
    reg("CORE", "DATAOUT_SIZE_1", 0x3018, ("DATAOUT_CHANNEL", 0, 15)),
    reg("CORE", "CLIP_TRUNCATE", 0x301C, ("CLIP_TRUNCATE", 0, 4), ("ROUND_TYPE", 6, 6)),
    reg("CORE", "UNDOC_3030", 0x3030, note="not in registers.xml; Mesa writes 0 raw; only 0 is accepted"),
)

DPU = (
    s_pointer("DPU", 0x4004),
    reg(
        "DPU", "FEATURE_MODE_CFG", 0x400C,
        ("FLYING_MODE", 0, 0), ("OUTPUT_MODE", 1, 2), ("CONV_MODE", 3, 4), ("BURST_LEN", 5, 8), ("SURF_LEN", 9, 24),
        ("NONALIGN", 25, 25), ("RGP_TYPE", 26, 29), ("TP_EN", 30, 30), ("COMB_USE", 31, 31),
    ),
    reg(
        "DPU", "DATA_FORMAT", 0x4010,
        ("PROC_PRECISION", 0, 2), ("MC_SURF_OUT", 3, 3), ("BS_MUL_SHIFT_VALUE_NEG", 4, 9),
        ("BN_MUL_SHIFT_VALUE_NEG", 10, 15), ("EW_TRUNCATE_NEG", 16, 25), ("IN_PRECISION", 26, 28),
        ("OUT_PRECISION", 29, 31),
    ),
    reg("DPU", "OFFSET_PEND", 0x4014, ("OFFSET_PEND", 0, 15)),
    reg("DPU", "DST_BASE_ADDR", 0x4020, ("DST_BASE_ADDR", 0, 31)),
    reg("DPU", "DST_SURF_STRIDE", 0x4024, ("DST_SURF_STRIDE", 4, 31)),
    reg("DPU", "DATA_CUBE_WIDTH", 0x4030, ("WIDTH", 0, 12)),
    reg("DPU", "DATA_CUBE_HEIGHT", 0x4034, ("HEIGHT", 0, 12), ("MINMAX_CTL", 22, 24)),
    reg("DPU", "DATA_CUBE_NOTCH_ADDR", 0x4038, ("NOTCH_ADDR_0", 0, 12), ("NOTCH_ADDR_1", 16, 28)),
    reg("DPU", "DATA_CUBE_CHANNEL", 0x403C, ("CHANNEL", 0, 12), ("ORIG_CHANNEL", 16, 28)),
    reg(
        "DPU", "BS_CFG", 0x4040,
        ("BS_BYPASS", 0, 0), ("BS_ALU_BYPASS", 1, 1), ("BS_MUL_BYPASS", 4, 4), ("BS_MUL_PRELU", 5, 5),
        ("BS_RELU_BYPASS", 6, 6), ("BS_RELUX_EN", 7, 7), ("BS_ALU_SRC", 8, 8), ("BS_ALU_ALGO", 16, 19),
    ),
    reg("DPU", "BS_ALU_CFG", 0x4044, ("BS_ALU_OPERAND", 0, 31)),
    reg(
        "DPU", "BS_MUL_CFG", 0x4048,
        ("BS_MUL_SRC", 0, 0), ("BS_TRUNCATE_SRC", 1, 1), ("BS_MUL_SHIFT_VALUE", 8, 13), ("BS_MUL_OPERAND", 16, 31),
    ),
    reg("DPU", "BS_RELUX_CMP_VALUE", 0x404C, ("BS_RELUX_CMP_DAT", 0, 31)),
    reg(
        "DPU", "BS_OW_CFG", 0x4050,
        ("OW_SRC", 0, 0), ("OD_BYPASS", 1, 1), ("SIZE_E_0", 2, 4), ("SIZE_E_1", 5, 7), ("SIZE_E_2", 8, 10),
        ("TP_ORG_EN", 27, 27), ("RGP_CNTER", 28, 31),
    ),
    reg("DPU", "BS_OW_OP", 0x4054, ("OW_OP", 0, 15, True)),
    reg("DPU", "WDMA_SIZE_0", 0x4058, ("CHANNEL_WDMA", 0, 12), ("SIZE_C_WDMA", 16, 26), ("TP_PRECISION", 27, 27)),
    reg("DPU", "WDMA_SIZE_1", 0x405C, ("WIDTH_WDMA", 0, 12), ("HEIGHT_WDMA", 16, 28)),
    reg(
        "DPU", "BN_CFG", 0x4060,
        ("BN_BYPASS", 0, 0), ("BN_ALU_BYPASS", 1, 1), ("BN_MUL_BYPASS", 4, 4), ("BN_MUL_PRELU", 5, 5),
        ("BN_RELU_BYPASS", 6, 6), ("BN_RELUX_EN", 7, 7), ("BN_ALU_SRC", 8, 8), ("BN_ALU_ALGO", 16, 19),
    ),
    reg("DPU", "BN_ALU_CFG", 0x4064, ("BN_ALU_OPERAND", 0, 31)),
    reg(
        "DPU", "BN_MUL_CFG", 0x4068,
        ("BN_MUL_SRC", 0, 0), ("BN_TRUNCATE_SRC", 1, 1), ("BN_MUL_SHIFT_VALUE", 8, 13), ("BN_MUL_OPERAND", 16, 31),
    ),
    reg("DPU", "BN_RELUX_CMP_VALUE", 0x406C, ("BN_RELUX_CMP_DAT", 0, 31)),
    reg(
        "DPU", "EW_CFG", 0x4070,
        ("EW_BYPASS", 0, 0), ("EW_OP_BYPASS", 1, 1), ("EW_OP_TYPE", 2, 2), ("EW_MUL_PRELU", 5, 5),
        ("EW_OP_SRC", 6, 6), ("EW_LUT_BYPASS", 7, 7), ("EW_OP_CVT_BYPASS", 8, 8), ("EW_RELU_BYPASS", 9, 9),
        ("EW_RELUX_EN", 10, 10), ("EW_ALU_ALGO", 16, 19), ("EW_BINARY_EN", 20, 20), ("EW_EQUAL_EN", 21, 21),
        ("EDATA_SIZE", 22, 23), ("EW_DATA_MODE", 28, 29), ("EW_CVT_ROUND", 30, 30), ("EW_CVT_TYPE", 31, 31),
    ),
    reg("DPU", "EW_CVT_OFFSET_VALUE", 0x4074, ("EW_OP_CVT_OFFSET", 0, 31, True)),
    reg("DPU", "EW_CVT_SCALE_VALUE", 0x4078, ("EW_OP_CVT_SCALE", 0, 15, True), ("EW_OP_CVT_SHIFT", 16, 21),
        ("EW_TRUNCATE", 22, 31),
        note="EW_OP_CVT_SCALE two's complement [INFERRED: RK3576's vendor Sub programs write negative scales in the "
             "same converter word]"),
    reg("DPU", "EW_RELUX_CMP_VALUE", 0x407C, ("EW_RELUX_CMP_DAT", 0, 31)),
    reg("DPU", "OUT_CVT_OFFSET", 0x4080, ("OUT_CVT_OFFSET", 0, 31, True)),
    reg("DPU", "OUT_CVT_SCALE", 0x4084, ("OUT_CVT_SCALE", 0, 15), ("FP32TOFP16_EN", 16, 16)),
    reg("DPU", "OUT_CVT_SHIFT", 0x4088, ("OUT_CVT_SHIFT", 0, 11), ("MINUS_EXP", 12, 19), ("CVT_ROUND", 30, 30),
        ("CVT_TYPE", 31, 31)),
    *(reg("DPU", f"EW_OP_VALUE_{i}", 0x4090 + 4 * i, (f"EW_OPERAND_{i}", 0, 31)) for i in range(8)),
    reg("DPU", "SURFACE_ADD", 0x40C0, ("SURF_ADD", 4, 31)),
    reg("DPU", "UNDOC_40C4", 0x40C4, note="not in registers.xml; Mesa writes 0 raw; only 0 is accepted"),
    reg("DPU", "LUT_ACCESS_CFG", 0x4100, ("LUT_ADDR", 0, 9), ("LUT_TABLE_ID", 16, 16), ("LUT_ACCESS_TYPE", 17, 17)),
    reg("DPU", "LUT_ACCESS_DATA", 0x4104, ("LUT_ACCESS_DATA", 0, 15)),
    reg(
        "DPU", "LUT_CFG", 0x4108,
        ("LUT_ROAD_SEL", 0, 0), ("LUT_EXPAND_EN", 1, 1), ("LUT_LO_LE_MUX", 2, 3), ("LUT_UFLOW_PRIORITY", 4, 4),
        ("LUT_OFLOW_PRIORITY", 5, 5), ("LUT_HYBRID_PRIORITY", 6, 6), ("LUT_CAL_SEL", 7, 7),
    ),
    reg("DPU", "LUT_INFO", 0x410C, ("LUT_LE_INDEX_SELECT", 8, 15), ("LUT_LO_INDEX_SELECT", 16, 23)),
    reg("DPU", "LUT_LE_START", 0x4110, ("LUT_LE_START", 0, 31)),
    reg("DPU", "LUT_LE_END", 0x4114, ("LUT_LE_END", 0, 31)),
    reg("DPU", "LUT_LO_START", 0x4118, ("LUT_LO_START", 0, 31)),
    reg("DPU", "LUT_LO_END", 0x411C, ("LUT_LO_END", 0, 31)),
    reg("DPU", "LUT_LE_SLOPE_SCALE", 0x4120, ("LUT_LE_SLOPE_UFLOW_SCALE", 0, 15), ("LUT_LE_SLOPE_OFLOW_SCALE", 16, 31)),
    reg("DPU", "LUT_LE_SLOPE_SHIFT", 0x4124, ("LUT_LE_SLOPE_UFLOW_SHIFT", 0, 4), ("LUT_LE_SLOPE_OFLOW_SHIFT", 5, 9)),
    reg("DPU", "LUT_LO_SLOPE_SCALE", 0x4128, ("LUT_LO_SLOPE_UFLOW_SCALE", 0, 15), ("LUT_LO_SLOPE_OFLOW_SCALE", 16, 31)),
    reg("DPU", "LUT_LO_SLOPE_SHIFT", 0x412C, ("LUT_LO_SLOPE_UFLOW_SHIFT", 0, 4), ("LUT_LO_SLOPE_OFLOW_SHIFT", 5, 9)),
)

DPU_RDMA = (
    s_pointer("DPU_RDMA", 0x5004),
    reg("DPU_RDMA", "DATA_CUBE_WIDTH", 0x500C, ("WIDTH", 0, 12)),
    reg("DPU_RDMA", "DATA_CUBE_HEIGHT", 0x5010, ("HEIGHT", 0, 12), ("EW_LINE_NOTCH_ADDR", 16, 28)),
    reg("DPU_RDMA", "DATA_CUBE_CHANNEL", 0x5014, ("CHANNEL", 0, 12)),
    reg("DPU_RDMA", "SRC_BASE_ADDR", 0x5018, ("SRC_BASE_ADDR", 0, 31)),
    reg("DPU_RDMA", "BRDMA_CFG", 0x501C, ("BRDMA_DATA_USE", 1, 4)),
    reg("DPU_RDMA", "BS_BASE_ADDR", 0x5020, ("BS_BASE_ADDR", 0, 31)),
    reg("DPU_RDMA", "NRDMA_CFG", 0x5028, ("NRDMA_DATA_USE", 1, 4)),
    reg("DPU_RDMA", "BN_BASE_ADDR", 0x502C, ("BN_BASE_ADDR", 0, 31)),
    reg(
        "DPU_RDMA", "ERDMA_CFG", 0x5034,
        ("ERDMA_DISABLE", 0, 0), ("OV4K_BYPASS", 1, 1), ("ERDMA_DATA_SIZE", 2, 3), ("ERDMA_NONALIGN", 28, 28),
        ("ERDMA_SURF_MODE", 29, 29), ("ERDMA_DATA_MODE", 30, 31),
    ),
    reg("DPU_RDMA", "EW_BASE_ADDR", 0x5038, ("EW_BASE_ADDR", 0, 31)),
    reg("DPU_RDMA", "EW_SURF_STRIDE", 0x5040, ("EW_SURF_STRIDE", 4, 31)),
    reg(
        "DPU_RDMA", "FEATURE_MODE_CFG", 0x5044,
        ("FLYING_MODE", 0, 0), ("CONV_MODE", 1, 2), ("MRDMA_FP16TOFP32_EN", 3, 3), ("MRDMA_DISABLE", 4, 4),
        ("PROC_PRECISION", 5, 7), ("COMB_USE", 8, 10), ("BURST_LEN", 11, 14), ("IN_PRECISION", 15, 17),
    ),
    reg(
        "DPU_RDMA", "SRC_DMA_CFG", 0x5048,
        ("KERNEL_WIDTH", 0, 2), ("KERNEL_HEIGHT", 3, 5), ("KERNEL_STRIDE_WIDTH", 6, 8),
        ("KERNEL_STRIDE_HEIGHT", 9, 11), ("UNPOOLING_EN", 12, 12), ("POOLING_METHOD", 13, 13),
        ("LINE_NOTCH_ADDR", 19, 31),
    ),
    reg("DPU_RDMA", "SURF_NOTCH", 0x504C, ("SURF_NOTCH_ADDR", 4, 31)),
    reg("DPU_RDMA", "PAD_CFG", 0x5064, ("PAD_LEFT", 0, 2), ("PAD_TOP", 4, 6), ("PAD_VALUE", 16, 31)),
    reg("DPU_RDMA", "WEIGHT", 0x5068, ("M_WEIGHT", 0, 7), ("B_WEIGHT", 8, 15), ("N_WEIGHT", 16, 23), ("E_WEIGHT", 24, 31)),
    reg("DPU_RDMA", "EW_SURF_NOTCH", 0x506C, ("EW_SURF_NOTCH", 4, 31)),
)

# PPU / PPU_RDMA (pooling): offsets and fields from the RK3588 TRM part 1 (RKNN chapter, "RKNN_ppu_*" register
# descriptions) and Mesa's registers.xml, which agree; every offset also appears in the RK3576 vendor pool
# programs (../shared/golden/rocket-rk3576-ops README §5). PPU_COMMON / PPU_RDMA_COMMON are shared with the
# RK3576 table; the padding fields, the padding values and the RDMA data format differ (docs/hardware/rocket.md,
# "Pooling (PPU)").
PPU_COMMON = (
    s_pointer("PPU", 0x6004),
    reg("PPU", "DATA_CUBE_IN_WIDTH", 0x600C, ("CUBE_IN_WIDTH", 0, 12)),
    reg("PPU", "DATA_CUBE_IN_HEIGHT", 0x6010, ("CUBE_IN_HEIGHT", 0, 12)),
    reg("PPU", "DATA_CUBE_IN_CHANNEL", 0x6014, ("CUBE_IN_CHANNEL", 0, 12)),
    reg("PPU", "DATA_CUBE_OUT_WIDTH", 0x6018, ("CUBE_OUT_WIDTH", 0, 12)),
    reg("PPU", "DATA_CUBE_OUT_HEIGHT", 0x601C, ("CUBE_OUT_HEIGHT", 0, 12)),
    reg("PPU", "DATA_CUBE_OUT_CHANNEL", 0x6020, ("CUBE_OUT_CHANNEL", 0, 12)),
    # POOLING_METHOD 0 average, 1 max, 2 min; FLYING_MODE 1 = the cube comes from memory (PPU_RDMA) [TRM]
    reg("PPU", "OPERATION_MODE_CFG", 0x6024, ("POOLING_METHOD", 0, 1), ("FLYING_MODE", 4, 4), ("USE_CNT", 5, 7),
        ("NOTCH_ADDR", 16, 28), ("INDEX_EN", 30, 30)),
    reg("PPU", "POOLING_KERNEL_CFG", 0x6034, ("KERNEL_WIDTH", 0, 3), ("KERNEL_HEIGHT", 8, 11),
        ("KERNEL_STRIDE_WIDTH", 16, 19), ("KERNEL_STRIDE_HEIGHT", 20, 23)),
    reg("PPU", "RECIP_KERNEL_WIDTH", 0x6038, ("RECIP_KERNEL_WIDTH", 0, 16)),
    reg("PPU", "RECIP_KERNEL_HEIGHT", 0x603C, ("RECIP_KERNEL_HEIGHT", 0, 16)),
    reg("PPU", "DST_BASE_ADDR", 0x6070, ("DST_BASE_ADDR", 4, 31)),
    reg("PPU", "DST_SURF_STRIDE", 0x607C, ("DST_SURF_STRIDE", 4, 31)),
    reg("PPU", "DATA_FORMAT", 0x6084, ("PROC_PRECISION", 0, 2), ("DPU_FLYIN", 3, 3), ("INDEX_ADD", 4, 31)),
    reg("PPU", "MISC_CTRL", 0x60DC, ("BURST_LEN", 0, 3), ("NONALIGN", 7, 7), ("MC_SURF_OUT", 8, 8),
        ("SURF_LEN", 16, 31)),
)
PPU_RDMA_COMMON = (
    s_pointer("PPU_RDMA", 0x7004),
    reg("PPU_RDMA", "CUBE_IN_WIDTH", 0x700C, ("CUBE_IN_WIDTH", 0, 12)),
    reg("PPU_RDMA", "CUBE_IN_HEIGHT", 0x7010, ("CUBE_IN_HEIGHT", 0, 12)),
    reg("PPU_RDMA", "CUBE_IN_CHANNEL", 0x7014, ("CUBE_IN_CHANNEL", 0, 12)),
    reg("PPU_RDMA", "SRC_BASE_ADDR", 0x701C, ("SRC_BASE_ADDR", 0, 31)),
    reg("PPU_RDMA", "SRC_LINE_STRIDE", 0x7024, ("SRC_LINE_STRIDE", 4, 31)),
    reg("PPU_RDMA", "SRC_SURF_STRIDE", 0x7028, ("SRC_SURF_STRIDE", 4, 31)),
)
PPU = (
    *PPU_COMMON,
    reg("PPU", "POOLING_PADDING_CFG", 0x6040, ("PAD_LEFT", 0, 2), ("PAD_TOP", 4, 6), ("PAD_RIGHT", 8, 10),
        ("PAD_BOTTOM", 12, 14)),
    # TRM: one 35-bit padding value, bits 31:0 here and 34:32 in PADDING_VALUE_2_CFG (not NVDLA's seven
    # 19-bit pad_value_Nx registers, which is what the RK3576 vendor programs write at 0x6044..0x605C)
    reg("PPU", "PADDING_VALUE_1_CFG", 0x6044, ("PAD_VALUE_0", 0, 31)),
    reg("PPU", "PADDING_VALUE_2_CFG", 0x6048, ("PAD_VALUE_1", 0, 2)),
)
# TRM: IN_PRECISION 0 4-bit, 1 8-bit, 2 16-bit, 3 32-bit
PPU_RDMA = (*PPU_RDMA_COMMON, reg("PPU_RDMA", "DATA_FORMAT", 0x7030, ("IN_PRECISION", 0, 1)))

SPECIALS = (
    # Must precede the op-enable word (Mesa quotes the TRM); the vendor tooling calls it SYNC.
    Special("SYNC", 0x0041),
    # Broadcast op-enable: value = PC_OPERATION_ENABLE unit bitmap, offset 0x0008.
    Special("OP_ENABLE", 0x0081, register="PC_OPERATION_ENABLE", offset=0x0008),
)

# Values the datapath takes, narrower than the fields' bits (docs/hardware/rocket.md "Program check"). The
# encoder packs no word outside them, rocket/check.py checks programs against them and the simulator includes
# them from the generated header (sim_rk3588.c), so compiler and simulator share one limit per field.
RANGES = (
    FieldRange("DPU_OUT_CVT_SHIFT", "OUT_CVT_SHIFT", 0, 47,
               "[MESA] ../shared/docs/rocket.md §3.4 (OUT_CVT_SHIFT = 141 - E), the limit the simulator models "
               "(rocket-sim.md OUT_CVT row)"),
    FieldRange("DPU_BS_MUL_CFG", "BS_MUL_SHIFT_VALUE", 0, 48,
               "third-party RK3588 hardware sweep (rocket.md \"Per-channel weights\"): shifts up to 48 measured"),
    FieldRange("DPU_DATA_FORMAT", "BS_MUL_SHIFT_VALUE_NEG", 0, 48,
               "third-party RK3588 hardware sweep (rocket.md \"Per-channel weights\"): shifts up to 48 measured"),
    FieldRange("CORE_CLIP_TRUNCATE", "CLIP_TRUNCATE", 0, 16,
               "INFERRED (rocket-sim.md CLIP_TRUNCATE): the goldens use at most 1, the modelled truncation is <= 16"),
    *(FieldRange("DPU_LUT_INFO", f"LUT_{t}_INDEX_SELECT", 0, 30,
                 "the shifts the simulator models (rocket.md §8; the encoder writes 0, one entry per input)")
      for t in ("LE", "LO")),
    FieldRange("DPU_BS_RELUX_CMP_VALUE", "BS_RELUX_CMP_DAT", 0, 0x7FFFFFFF,
               "[XML] field, [INFERRED] signed int32 bound >= 0 (rocket-sim.md BS_CFG row, rocket.md "
               "\"Fused RELU/RELU6\")"),
)

TABLE = SocTable("rk3588", UNITS, PC + CNA + CORE + DPU + DPU_RDMA + PPU + PPU_RDMA, SPECIALS, RANGES)
