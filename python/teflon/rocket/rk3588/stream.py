"""Per-task RK3588 regcmd streams (rocket.md §2.2 register list, §2.4 trailer and chaining).

Every task re-emits every register (130 words), as Mesa does: register state is per ping-pong group
and persists, so a shorter "delta" stream would depend on which group the task lands in. Address
registers hold the byte offset inside their target buffer and are listed as relocations (role,
word index); the encoder turns roles into buffers.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...hw.regmap import RegMap
from ..cube import kernels, packed_input_channels
from ..geometry import FEATURE_ATOM
from ..operations import RocketConv, RocketPool
from ..perchannel import ChannelScaling
from ..ppu import MAX_PAD_VALUE
from ..stream import ROLE_BIAS, ROLE_EW, ROLE_INPUT, ROLE_OUTPUT, ROLE_WEIGHTS, TRAILER_WORDS, Emitter, Stream, chain
from .split import Split, Task

# Mesa's single-channel ("ARGB-like") input conversion: out = ((raw + offset) * scale) >> truncate.
ARGB_CVT_TRUNCATE = 14
ARGB_CVT_SCALE = 1 << 14
ARGB_CVT_OFFSET = -128


SURF_STRIDE_MASK = (1 << 28) - 1  # CNA_DMA_CON2.SURF_STRIDE is bits 0..27

# Register names (and the unit CVT scales) every task writes, spelled out once rather than per task
UNIT_CVT_SCALES = tuple((f"CNA_CVT_CON{i + 1}", {f"CVT_SCALE{i}": 1}) for i in range(4))
DCOMP_AMOUNTS = tuple(f"CNA_DCOMP_AMOUNT{i}" for i in range(16))
EW_OP_VALUES = tuple(f"DPU_EW_OP_VALUE_{i}" for i in range(8))
LUT_REGS = tuple(f"DPU_LUT_{reg}" for reg in ("ACCESS_CFG", "ACCESS_DATA", "CFG", "INFO", "LE_START", "LE_END",
                                              "LO_START", "LO_END", "LE_SLOPE_SCALE", "LE_SLOPE_SHIFT",
                                              "LO_SLOPE_SCALE", "LO_SLOPE_SHIFT"))


@dataclass(frozen=True)
class EwParams:
    """The fused ADD's operand through DPU_RDMA and the DPU EW stage (rocket.md §3.5)."""

    offset: int  # EW_CVT_OFFSET: minus the operand's stored zero point
    scale: int  # EW_OP_CVT_SCALE
    shift: int  # EW_OP_CVT_SHIFT
    mul: bool = False  # the EW stage multiplies (a proved fact: board-facts.md fact 1)


@dataclass(frozen=True)
class OpParams:
    """Whole-operation values shared by all its tasks."""

    conv: RocketConv
    split: Split
    truncate_bits: int
    cvt_scale: int
    cvt_shift: int
    scaling: ChannelScaling | None = None  # per-channel weights: the BS stream's operands (None: per-tensor)
    relu: bool = False  # BS ReLU: max(u, 0) before OUT_CVT (a fused RELU/RELU6 the output range does not apply)
    relux: int | None = None  # and the ReLUX bound: min(u, relux) (RELU6)
    ew: EwParams | None = None
    mesa_compat: bool = False  # Mesa's words where teflon would write others (CNA_PAD_CON1 of depthwise layers)

    @property
    def per_channel(self) -> bool:
        return self.scaling is not None

    @property
    def in_ch(self) -> int:
        return packed_input_channels(self.conv.in_c)

    @property
    def out_ch(self) -> int:
        """Output channels as programmed (CORE/DPU): >= 32, and doubled/64-aligned for depthwise."""
        c = self.conv
        oc = -(-max(c.out_c, 32) // 32) * 32
        if c.depthwise:
            if c.out_c <= 32:
                oc *= 2
            oc = -(-oc // 64) * 64
        return oc

    @property
    def argb(self) -> bool:
        return self.conv.single_channel_input

    @property
    def task_in_width(self) -> int:
        w = self.conv.in_w
        if self.argb:
            w = max(w, FEATURE_ATOM)
        return w

    @property
    def line_stride(self) -> int:
        c = self.conv
        if self.argb:  # raw bytes, rows padded to 16
            return max(c.in_w, FEATURE_ATOM)
        return c.in_w * FEATURE_ATOM // 4

    @property
    def surface_stride(self) -> int:
        c = self.conv
        if self.argb:
            return self.line_stride * (c.in_h - 1)
        # Mesa: line_stride * (IH/4 - 1) = IW * (IH - 4); the plane pitch minus four rows, in 16 B units.
        # Below four rows Mesa's signed value wraps into the 28-bit field (how its MobileNet classifier
        # conv on a 1x1 map runs on silicon); the DMA adds SURF_STRIDE + LINE_STRIDE modulo 2^28
        # [INFERRED, docs/hardware/rocket.md].
        return (c.in_w * (c.in_h - 4)) & SURF_STRIDE_MASK

    @property
    def input_row_bytes(self) -> int:
        """Bytes between consecutive input rows in the input tensor's device layout."""
        return self.line_stride if self.argb else self.conv.in_w * FEATURE_ATOM

    def input_offset(self, task: Task) -> int:
        """Byte offset of the task's first input row and column (the same place in every channel plane)."""
        return self.input_row_bytes * task.top + task.in_col0 * FEATURE_ATOM

    def in_width(self, task: Task) -> int:
        """DATAIN_WIDTH of a task: its column window's, else the operation's (Mesa's task input width)."""
        return task.in_cols or self.task_in_width

    def data_entries(self, task: Task) -> int:
        c = self.conv
        w = self.in_width(task)
        if self.argb:
            return w * c.in_h
        if w == 40 and c.in_c == 40:  # Mesa special case
            return 40
        return -(-(w * 2 * -(-c.in_c // FEATURE_ATOM)) // 8)

    @property
    def pad_value(self) -> int:
        """CNA_PAD_CON1 (signed): the stored input zero point, with Mesa's empirical overrides whose low
        byte is that same value. Mesa's 0xFFFFFF80 for ops in a fused ADD is not reproduced: it would pad
        with -128 whatever the input zero point. Depthwise (outside mesa_compat): the byte in bytes 0 and 1,
        the form of Mesa's two overrides, for every zero point: on the int8 depthwise path the odd channels
        among the first 32 of each 64-channel group pad with byte 1 (third-party hardware sweep,
        docs/hardware/rocket.md §7 "PAD_CON1"), so a sign-extended byte pads them with 0 or -1."""
        c = self.conv
        if c.depthwise and not self.mesa_compat:
            v16 = (c.in_zp & 0xFF) * 0x101
            return v16 - (1 << 16) if v16 & 0x8000 else v16
        v = c.in_zp
        if max(c.kh, c.kw) >= 3 and c.in_zp == -128:
            v = -32640  # 0xFFFF8080
        if c.depthwise and c.in_zp == 0x8B - 0x80:
            v = 0x0B0B
        return v


# BRDMA_CFG.BRDMA_DATA_USE: 1 = Mesa's bias-only stream; 7 = ALU, OW and MUL operands in 64-byte groups of 8
# channels (coefs.bs_records; third-party hardware sweep, rocket.md "Per-channel weights").
BS_STREAM_ALU = 1
BS_STREAM_ALL = 7


def bs_stage(e: Emitter, p: OpParams) -> None:
    """DPU BS: ALU (add the bias) -> MUL -> ReLU (NVDLA SDP X1 order). Per-tensor layers keep Mesa's words:
    bias from the stream, OW from BS_OW_OP, MUL and ReLU bypassed. Per-channel layers take ALU, OW and MUL
    operands from the stream (coefs.bs_records) and shift the product by BS_MUL_SHIFT_VALUE (and, for a negative
    product, DATA_FORMAT.BS_MUL_SHIFT_VALUE_NEG: the same value). A fused
    RELU/RELU6 the output range does not apply turns the ReLU on (RELU6: ReLUX, min(max(u, 0), CMP))."""
    c = p.conv
    size_e = 3 if c.depthwise else 1
    relu = {"BS_RELU_BYPASS": int(not p.relu), "BS_RELUX_EN": int(p.relux is not None)}
    if p.scaling is None:
        e("DPU_BS_CFG", BS_ALU_ALGO=2, BS_ALU_SRC=1, BS_MUL_BYPASS=1, **relu)
        e("DPU_BS_ALU_CFG")
        e("DPU_BS_MUL_CFG")
    else:
        e("DPU_BS_CFG", BS_ALU_ALGO=2, BS_ALU_SRC=1, **relu)
        e("DPU_BS_ALU_CFG")
        e("DPU_BS_MUL_CFG", BS_MUL_SRC=1, BS_MUL_SHIFT_VALUE=p.scaling.shift)
    e("DPU_BS_RELUX_CMP_VALUE", BS_RELUX_CMP_DAT=p.relux or 0)
    if p.scaling is None:
        e("DPU_BS_OW_CFG", SIZE_E_2=size_e, SIZE_E_1=size_e, SIZE_E_0=size_e)
        e("DPU_BS_OW_OP", OW_OP=-c.w_zp)
    else:
        e("DPU_BS_OW_CFG", SIZE_E_2=size_e, SIZE_E_1=size_e, SIZE_E_0=size_e, OW_SRC=1)
        e("DPU_BS_OW_OP")


def fetch_amount(count: int) -> int:
    """PC_REGISTER_AMOUNTS for a chained stream of `count` words (Mesa: align((n - 4) / 2, 2))."""
    n = (count - TRAILER_WORDS) // 2
    return -(-n // 2) * 2


def task_stream(rm: RegMap, p: OpParams, task: Task) -> Stream:
    """The regcmd stream of one task (unchained; see link())."""
    multi_task = len(p.split.tasks) > 1
    c = p.conv
    e = Emitter(rm)
    dw = int(c.depthwise)
    oc = p.out_ch
    ic = p.in_ch
    kern = kernels(c.out_c, c.depthwise)
    tw, th = task.out_w, task.out_rows
    plane = c.out_w * c.out_h  # output plane in 16-byte atoms

    cbuf = {
        "DATA_BANK": task.data_banks,
        "WEIGHT_BANK": task.weight_banks,
        "WEIGHT_REUSE": int(task.index > 0 and p.split.reuse_weights),
    }
    con1 = {"CONV_MODE": 3 * dw}
    if p.argb:
        con1.update(NONALIGN_DMA=1, GROUP_LINE_OFF=1, ARGB_IN=8)
    pp = {"POINTER_PP_EN": 1, "EXECUTER_PP_EN": 1, "POINTER_PP_MODE": 1}

    e("CNA_CBUF_CON0", **cbuf)
    e("CNA_DCOMP_REGNUM")
    e("CNA_DCOMP_CTRL")
    e("CNA_CONV_CON1", **con1)
    e("DPU_S_POINTER", **pp)
    e("DPU_RDMA_S_POINTER", **pp)
    e("CNA_CONV_CON1", **con1)
    e("CNA_CONV_CON2", FEATURE_GRAINS=50 + c.stride + 1)  # Mesa: "magic, passes most tests" (the row stride)
    e("CNA_CONV_CON3", CONV_X_STRIDE=c.sx, CONV_Y_STRIDE=c.stride)
    e("CNA_DATA_SIZE0", DATAIN_WIDTH=p.in_width(task), DATAIN_HEIGHT=task.in_rows)
    e("CNA_DATA_SIZE1", DATAIN_CHANNEL_REAL=c.in_c - 1, DATAIN_CHANNEL=ic)
    e("CNA_DATA_SIZE2", DATAOUT_WIDTH=tw)
    e("CNA_DATA_SIZE3", DATAOUT_ATOMICS=tw * th)
    e("CNA_WEIGHT_SIZE0", WEIGHT_BYTES=c.kw * c.kh * ic * kern)
    e("CNA_WEIGHT_SIZE1", WEIGHT_BYTES_PER_KERNEL=c.kw * c.kh * ic)
    e("CNA_WEIGHT_SIZE2", WEIGHT_WIDTH=c.kw, WEIGHT_HEIGHT=c.kh, WEIGHT_KERNELS=kern)
    e("CNA_CBUF_CON0", **cbuf)
    e("CNA_CBUF_CON1", DATA_ENTRIES=p.data_entries(task))
    if p.argb:
        trunc = ARGB_CVT_TRUNCATE
        e("CNA_CVT_CON0", CVT_TRUNCATE_0=trunc, CVT_TRUNCATE_1=trunc, CVT_TRUNCATE_2=trunc, CVT_TRUNCATE_3=trunc)
        for i in range(4):
            e(f"CNA_CVT_CON{i + 1}", **{f"CVT_SCALE{i}": ARGB_CVT_SCALE, f"CVT_OFFSET{i}": ARGB_CVT_OFFSET})
    else:
        e("CNA_CVT_CON0", DATA_SIGN=1, CVT_TYPE=1, CVT_BYPASS=1)
        for reg, unit_scale in UNIT_CVT_SCALES:
            e.put(reg, unit_scale)
    e("CNA_FC_CON0")
    e("CNA_FC_CON1")
    e("CNA_PAD_CON0", PAD_LEFT=task.pad_left, PAD_TOP=task.pad_top)
    e.addr("CNA_FEATURE_DATA_ADDR", ROLE_INPUT, p.input_offset(task))
    e("CNA_FC_CON2")
    e("CNA_DMA_CON0", WEIGHT_BURST_LEN=15, DATA_BURST_LEN=15)
    e("CNA_DMA_CON1", LINE_STRIDE=p.line_stride)
    e("CNA_DMA_CON2", SURF_STRIDE=p.surface_stride)
    e("CNA_FC_DATA_SIZE0", DMA_WIDTH=task.in_cols or c.in_w, DMA_HEIGHT=task.in_rows)
    e("CNA_FC_DATA_SIZE1", DMA_CHANNEL=ic)
    e("CNA_DCOMP_CTRL")
    e("CNA_DCOMP_REGNUM")
    e.addr("CNA_DCOMP_ADDR0", ROLE_WEIGHTS, 0)
    for reg in DCOMP_AMOUNTS:
        e(reg)
    e("CNA_CVT_CON5", PER_CHANNEL_CVT_EN=0xFFFF if p.argb else 0)
    e("CNA_PAD_CON1", PAD_VALUE=p.pad_value)

    e("CORE_MISC_CFG", QD_EN=1, DW_EN=dw)
    e("CORE_DATAOUT_SIZE_0", DATAOUT_HEIGHT=th - 1, DATAOUT_WIDTH=tw - 1)
    e("CORE_DATAOUT_SIZE_1", DATAOUT_CHANNEL=oc - 1)
    e("CORE_CLIP_TRUNCATE", CLIP_TRUNCATE=p.truncate_bits)
    e("CORE_UNDOC_3030")

    e("DPU_FEATURE_MODE_CFG", BURST_LEN=15, OUTPUT_MODE=2, CONV_MODE=3 * dw)
    # the BS multiplier shifts negative products by this field, non-negative ones by BS_MUL_SHIFT_VALUE (measured,
    # docs/hardware/rocket.md "Per-channel weights"): one shift for both signs
    e("DPU_DATA_FORMAT", BS_MUL_SHIFT_VALUE_NEG=0 if p.scaling is None else p.scaling.shift)
    e("DPU_OFFSET_PEND")
    e.addr("DPU_DST_BASE_ADDR", ROLE_OUTPUT, task.output_offset)
    e("DPU_DST_SURF_STRIDE", DST_SURF_STRIDE=plane)
    e("DPU_DATA_CUBE_WIDTH", WIDTH=tw - 1)
    e("DPU_DATA_CUBE_HEIGHT", HEIGHT=th - 1)
    e("DPU_DATA_CUBE_NOTCH_ADDR")
    e("DPU_DATA_CUBE_CHANNEL", ORIG_CHANNEL=c.out_c - 1, CHANNEL=oc - 1)
    bs_stage(e, p)
    e("DPU_WDMA_SIZE_0", CHANNEL_WDMA=oc - 1)
    e("DPU_WDMA_SIZE_1", HEIGHT_WDMA=th - 1, WIDTH_WDMA=tw - 1)
    e("DPU_BN_CFG", BN_RELU_BYPASS=1, BN_MUL_BYPASS=1, BN_ALU_BYPASS=1, BN_BYPASS=1)
    e("DPU_BN_ALU_CFG")
    e("DPU_BN_MUL_CFG")
    e("DPU_BN_RELUX_CMP_VALUE")
    if p.ew is not None:  # Mesa's fused-ADD word 0x904202C0 (rocket.md §2.2 #81); the multiply: 0x904002C4
        e("DPU_EW_CFG", EW_CVT_TYPE=1, EW_DATA_MODE=1, EDATA_SIZE=1, EW_ALU_ALGO=0 if p.ew.mul else 2,
          EW_OP_TYPE=int(p.ew.mul), EW_RELU_BYPASS=1, EW_LUT_BYPASS=1, EW_OP_SRC=1)
        e("DPU_EW_CVT_OFFSET_VALUE", EW_OP_CVT_OFFSET=p.ew.offset)
        e("DPU_EW_CVT_SCALE_VALUE", EW_OP_CVT_SHIFT=p.ew.shift, EW_OP_CVT_SCALE=p.ew.scale)
    else:
        e("DPU_EW_CFG", EW_RELU_BYPASS=1, EW_OP_CVT_BYPASS=1, EW_LUT_BYPASS=1, EW_OP_BYPASS=1, EW_BYPASS=1)
        e("DPU_EW_CVT_OFFSET_VALUE")
        e("DPU_EW_CVT_SCALE_VALUE", EW_OP_CVT_SCALE=1)
    e("DPU_EW_RELUX_CMP_VALUE")
    e("DPU_OUT_CVT_OFFSET", OUT_CVT_OFFSET=c.out_zp)
    e("DPU_OUT_CVT_SCALE", OUT_CVT_SCALE=p.cvt_scale)
    e("DPU_OUT_CVT_SHIFT", OUT_CVT_SHIFT=p.cvt_shift)
    for reg in EW_OP_VALUES:
        e(reg)
    e("DPU_SURFACE_ADD", SURF_ADD=plane * (4 if dw else 2))
    e("DPU_UNDOC_40C4")
    for reg in LUT_REGS:
        e(reg)

    e("DPU_RDMA_DATA_CUBE_WIDTH", WIDTH=tw - 1)
    e("DPU_RDMA_DATA_CUBE_HEIGHT", HEIGHT=th - 1)
    e("DPU_RDMA_DATA_CUBE_CHANNEL", CHANNEL=oc - 1)
    # The fused ADD's operand (Mesa's words, rocket.md §2.2 #113-#126): the MRDMA reads from SRC_BASE, the ERDMA
    # from EW_BASE one operand plane further, EW_SURF_STRIDE the plane, both notches 2 planes - the task cube
    # (= Mesa's plane + W (OH - tOH)); the operand has the output's geometry, so the task's rows are at its
    # output offset. Mesa's max(plane, 12) is not needed: planes below 12 atoms are not claimed (encoder).
    notch = 2 * plane - tw * th
    if p.ew is not None:
        e.addr("DPU_RDMA_SRC_BASE_ADDR", ROLE_EW, task.output_offset)
    else:
        e("DPU_RDMA_SRC_BASE_ADDR")
    e("DPU_RDMA_BRDMA_CFG", BRDMA_DATA_USE=BS_STREAM_ALL if p.per_channel else BS_STREAM_ALU)
    e.addr("DPU_RDMA_BS_BASE_ADDR", ROLE_BIAS, 0)
    e("DPU_RDMA_NRDMA_CFG")
    e("DPU_RDMA_BN_BASE_ADDR")
    if p.ew is not None:
        e("DPU_RDMA_ERDMA_CFG", ERDMA_DATA_MODE=1, ERDMA_DATA_SIZE=1)
        e.addr("DPU_RDMA_EW_BASE_ADDR", ROLE_EW, task.output_offset + plane * FEATURE_ATOM)
        e("DPU_RDMA_EW_SURF_STRIDE", EW_SURF_STRIDE=plane)
        e("DPU_RDMA_FEATURE_MODE_CFG", BURST_LEN=15, COMB_USE=5, CONV_MODE=3 * dw)
    else:
        e("DPU_RDMA_ERDMA_CFG", ERDMA_DISABLE=1)
        e("DPU_RDMA_EW_BASE_ADDR")
        e("DPU_RDMA_EW_SURF_STRIDE")
        e("DPU_RDMA_FEATURE_MODE_CFG", BURST_LEN=15, MRDMA_DISABLE=1, CONV_MODE=3 * dw)
    e("DPU_RDMA_SRC_DMA_CFG")
    e("DPU_RDMA_SURF_NOTCH", SURF_NOTCH_ADDR=notch if p.ew is not None else 0)
    e("DPU_RDMA_PAD_CFG")
    e("DPU_RDMA_WEIGHT", E_WEIGHT=1, N_WEIGHT=1, B_WEIGHT=1, M_WEIGHT=1)
    e("DPU_RDMA_EW_SURF_NOTCH", EW_SURF_NOTCH=notch if p.ew is not None else 0)

    # Trailer: [next stream address][next fetch amount][SYNC][op-enable]; link() fills in the first two.
    # A multi-task op's last task keeps a PC_BASE_ADDRESS of 0 where a single task has a bare 0 word.
    if multi_task:
        e("PC_BASE_ADDRESS")
    else:
        e.s.words.append(0)
    e("PC_REGISTER_AMOUNTS")
    e.s.words.append(rm.special_word("SYNC"))
    e.s.words.append(rm.special_word("OP_ENABLE", CNA_EN=1, CORE_EN=1, DPU_EN=1, DPU_RDMA_EN=1))
    return e.s


def link(rm: RegMap, streams: list[Stream]) -> list[int]:
    """Chain the task streams with Mesa's fetch amounts; returns each stream's byte offset."""
    return chain(rm, streams, [fetch_amount(len(s.words)) for s in streams])


def pool_pad_registers(p: RocketPool) -> list[tuple[str, dict[str, int]]]:
    """The PPU padding value as the TRM lays it out: one 35-bit two's-complement value, bits 31..0 in
    PADDING_VALUE_1_CFG and 34..32 in PADDING_VALUE_2_CFG. Max pooling pads with -128; an average (claimed only
    when no window reaches the padding) writes 0."""
    v = (0 if p.average else MAX_PAD_VALUE) & ((1 << 35) - 1)
    return [("PPU_PADDING_VALUE_1_CFG", {"PAD_VALUE_0": v & 0xFFFFFFFF}),
            ("PPU_PADDING_VALUE_2_CFG", {"PAD_VALUE_1": v >> 32})]


def pool_trailer(rm: RegMap) -> list[int]:
    """A single pool task's trailer, as a single conv task's: [0][amount 0][SYNC][op-enable PPU | PPU_RDMA]."""
    return [0, rm.word("PC_REGISTER_AMOUNTS"), rm.special_word("SYNC"),
            rm.special_word("OP_ENABLE", PPU_EN=1, PPU_RDMA_EN=1)]
