"""The RK3568 conv task: the vendor's 133-register body plus the 4-word PC trailer (docs/hardware/rk3568.md §2-§4).

Body order [GOLD: every full conv task of ../shared/golden/rocket-rk3568]: the six-word prologue (S_POINTER 0xE of
CNA, CMAC, CORE, then CNA_CBUF_CON0, then DPU and DPU_RDMA S_POINTER) [IAV FORK; DEC TK2], then every CNA, CMAC,
CORE, DPU and DPU_RDMA register of the table in offset order, each written. Trailer: [PC_BASE_ADDRESS next]
[PC_REGISTER_AMOUNTS next words - 1][SYNC][OP_ENABLE 0x1F], the last task [0][PC_REGISTER_AMOUNTS 0][SYNC]
[OP_ENABLE] (PC amount scale 1 on RK356x [VEND rknpu]: amount = words - 1, not RK3588's halved count).
Address registers hold the offset inside their buffer and are listed as relocations.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...hw.regmap import RegMap
from ..geometry import align
from ..operations import RocketConv
from ..stream import ROLE_BIAS, ROLE_INPUT, ROLE_OUTPUT, ROLE_WEIGHTS, Emitter, Stream, chain
from .layout import (
    ATOM,
    CBUF_BANKS,
    data_entries,
    dpu_plane,
    dw_channels,
    in_channels,
    packed_entries,
    packed_width,
)
from .regs import CNA, CORE, DMA_CON0, DPU, DPU_RDMA, RDMA_BURST_LEN
from .split import Window

PROLOGUE = ("CNA_S_POINTER", "CMAC_S_POINTER", "CORE_S_POINTER", "CNA_CBUF_CON0", "DPU_S_POINTER",
            "DPU_RDMA_S_POINTER")
BODY = (*PROLOGUE, *(r.full_name for r in CNA if r.offset >= 0x100C), "CMAC_CFG",
        *(r.full_name for r in CORE if r.offset >= 0x300C), *(r.full_name for r in DPU if r.offset >= 0x400C),
        *(r.full_name for r in DPU_RDMA if r.offset >= 0x500C))
BODY_WORDS = len(BODY)  # 133 [IAV T41; GOLD regcfg_amount]
OP_ENABLE_CONV = {"CNA_EN": 1, "CMAC_EN": 1, "CORE_EN": 1, "DPU_EN": 1, "DPU_RDMA_EN": 1}  # 0x1F [IAV T33/T42]
S_POINTER = {"POINTER_PP_EN": 1, "EXECUTER_PP_EN": 1, "POINTER_PP_MODE": 1}  # 0xE [IAV FORK; GOLD]
# Wout below which the vendor's FEATURE_GRAINS takes one, two stride rows more: fitted to every vendor task here
# (16 -> 1, 18 -> 0; 7 -> 2, 10 -> 1) [INF from GOLD; IAV T28 gives 28 / 14, which Wout 22 and 15 contradict]
GRAINS_WOUT = (17, 9)
BS_BYTES_PER_CHANNEL = 4  # the per-tensor bias-only BS stream [IAV T43 probe-D2; GOLD]
BS_CHANNEL_BYTES = 8  # the per-channel stream: bias, OW and multiplier per channel [IAV T41/T71; MAP §3; GOLD avgpool]
BS_GROUP = 4  # channels per group of the per-channel stream: [bias i32 x4][OW i16 x4][multiplier u16 x4]
ARGB_BASE = 8  # CONV_CON1.ARGB_IN = 8 + channels - 1 on the packed-pixel path: 8 / 10 / 11 for 1 / 3 / 4 channels
# [GOLD 0xA000; TOOLKIT, built here: rknn-toolkit2 2.5.0 target rk3566, first convolutions of 1, 3 and 4 channels]
CVT_SHIFT = 14  # the CNA converter's scale 2^14 = 1.0 and its truncation [IAV T46]
CVT_LANES = 4  # the converter's lanes: one per byte of a packed pixel
# graph-input channel counts the toolkit reads as packed pixels (2 channels take the direct path) [TOOLKIT, as above]
PACKED_CHANNELS = (1, 3, 4)
ARGB_PIXELS_X9_CHANNELS = 3  # CONV_CON4 = width x rows x 9 only for 3 channels, else 0 [TOOLKIT, as above; IAV T46]


@dataclass(frozen=True)
class Requant:
    """The DPU words of a per-tensor layer (requant.py arithmetic, rk3568.md §4)."""

    cvt_scale: int
    cvt_shift: int
    relux: int | None  # BN_RELUX_CMP_VALUE of a fused RELU6 (accumulator domain); None without
    relu: bool  # a fused RELU/RELU6 clamps at the zero point
    # the per-channel BS stream (8 bytes per channel: bias, OW and multiplier read from memory) and its BS_MUL
    # shift; None: the per-tensor bias-only stream with the OW operand in BS_OW_OP [IAV T41/T43/T71; GOLD]
    mul_shift: int | None = None


def out_channels(c: RocketConv) -> int:
    """Output channels the DPU cube declares: whole 16-channel pairs, a depthwise layer whole 32-channel groups
    [GOLD DATA_CUBE_CHANNEL; IAV T47]."""
    return align(c.out_c, 32 if c.depthwise else 16)


def feature_grains(c: RocketConv) -> int:
    extra = sum(c.out_w < t for t in GRAINS_WOUT)
    return min(c.stride + c.kh + c.stride * extra, rows_read(c))


def rows_read(c: RocketConv) -> int:
    """Input rows the layer reads: a VALID layer's unused bottom rows are left out [GOLD DATA_SIZE0 0x1D for a 30-row
    input of a 5x5 stride-2 VALID layer]."""
    return min(c.in_h, (c.out_h - 1) * c.stride + c.kh - c.pad_top)


def bs_bytes_per_channel(rq: Requant) -> int:
    return BS_BYTES_PER_CHANNEL if rq.mul_shift is None else BS_CHANNEL_BYTES


def bs_words(c: RocketConv, rq: Requant) -> int:
    return out_channels(c) * bs_bytes_per_channel(rq) // 8


def channel_stream(a: np.ndarray, ow: np.ndarray, mul: np.ndarray, channels: int) -> bytes:
    """The per-channel BS stream of `channels` declared channels (a multiple of 4): per group of four channels
    their int32 bias terms, int16 OW factors, then uint16 multipliers; channels beyond len(a) hold zeros
    [IAV T41/T71, MAP §3: the layout; GOLD avgpool-in7x7x128: the toolkit's 1024-byte stream is exactly this
    layout of bias 812175, OW 128, multiplier 16384 (its sha256)]."""
    n = len(a)
    fields = [(a, "<i4", -(1 << 31), (1 << 31) - 1), (ow, "<i2", -(1 << 15), (1 << 15) - 1), (mul, "<u2", 0, 0xFFFF)]
    cols = []
    for v, dt, lo, hi in fields:
        v = np.asarray(v, np.int64)
        if v.size and (v.min() < lo or v.max() > hi):
            raise ValueError(f"BS stream value outside {dt}")
        full = np.zeros(channels, dt)
        full[:n] = v
        cols.append(full.reshape(-1, BS_GROUP).view(np.uint8).reshape(channels // BS_GROUP, -1))
    return np.concatenate(cols, axis=1).tobytes()


def packed_row_bytes(w: int, c: int) -> int:
    """Bytes of one row of a packed-pixel input (c bytes per pixel, rows aligned to 8 bytes) [IAV T46/T54; GOLD]."""
    return align(w * c, ATOM)


def conv_stream(rm: RegMap, layer: RocketConv, w: Window, banks: int, rq: Requant, packed: bool = False,
                in_plane_atoms: int | None = None) -> Stream:
    """The full 133-word body of one task (split.py window `w` of `layer`, the layer's bank split `banks`). `packed`:
    the first-layer path, the input read as packed pixels (c bytes each) and converted by the CNA: uint8 - 128.
    `in_plane_atoms`: the input's plane in atoms, W x H (a host-written input, the vendor's) when None; an input
    another task wrote has the DPU's align4(W x H) planes."""
    e = Emitter(rm)
    c = w.conv
    dw = c.depthwise
    icp = in_channels(c.in_c) if not dw else dw_channels(c.in_c)
    ocp = out_channels(c)
    rows = rows_read(c)
    taps = c.kh * c.kw
    per_kernel = taps * icp
    # host-written input planes: W x H atoms [GOLD SURF_STRIDE]; DPU-written ones align4(W x H) [IAV T57]
    in_atoms = layer.in_h * layer.in_w if in_plane_atoms is None else in_plane_atoms
    in_plane = in_atoms * ATOM
    plane = dpu_plane(layer.out_h, layer.out_w) * ATOM
    cbuf = {"DATA_BANK": banks, "WEIGHT_BANK": CBUF_BANKS - banks, "WEIGHT_REUSE": int(w.reuse)}
    for name in PROLOGUE[:3]:
        e(name, **S_POINTER)
    e("CNA_CBUF_CON0", **cbuf)
    e("DPU_S_POINTER", **S_POINTER)
    e("DPU_RDMA_S_POINTER", **S_POINTER)
    e("CNA_CONV_CON1", CONV_MODE=3 if dw else 0, ARGB_IN=ARGB_BASE + c.in_c - 1 if packed else 0)
    e("CNA_CONV_CON2", FEATURE_GRAINS=feature_grains(layer))
    e("CNA_CONV_CON3", CONV_X_STRIDE=c.sx, CONV_Y_STRIDE=c.stride)
    e("CNA_CONV_CON4", ARGB_PIXELS_X9=c.in_w * rows * 9 if packed and c.in_c == ARGB_PIXELS_X9_CHANNELS else 0)
    e("CNA_DATA_SIZE0", DATAIN_HEIGHT=rows, DATAIN_WIDTH=c.in_w)
    e("CNA_DATA_SIZE1", DATAIN_CHANNEL=align(c.in_c, ATOM), DATAIN_CHANNEL_REAL_M1=c.in_c - 1)
    e("CNA_DATA_SIZE2", DATAOUT_WIDTH=c.out_w)
    e("CNA_DATA_SIZE3", DATAOUT_ATOMICS=c.out_w * c.out_h)
    e("CNA_WEIGHT_SIZE0", WEIGHT_BYTES=per_kernel if dw else per_kernel * c.out_c)
    e("CNA_WEIGHT_SIZE1", WEIGHT_BYTES_PER_KERNEL=per_kernel)
    e("CNA_WEIGHT_SIZE2", WEIGHT_KERNELS=1 if dw else c.out_c, WEIGHT_HEIGHT=c.kh, WEIGHT_WIDTH=c.kw)
    e("CNA_CBUF_CON0", **cbuf)
    dma_w = packed_width(c.in_w) if packed else c.in_w
    e("CNA_CBUF_CON1", DATA_ENTRIES=packed_entries(c.in_w) if packed else data_entries(c.in_w, c.in_c, dw),
      DATAIN_WIDTH=dma_w)
    if packed:  # x * 2^14 >> 14 - 128 on the pixel's lanes, the others 1:1 [IAV T46; GOLD and TOOLKIT fields]
        e("CNA_CVT_CON0", CVT_BYPASS=1, **{f"CVT_TRUNCATE_{i}": CVT_SHIFT for i in range(c.in_c)})
        for i in range(CVT_LANES):
            lane = {f"CVT_SCALE{i}": 1 << CVT_SHIFT, f"CVT_OFFSET{i}": -0x80} if i < c.in_c else {f"CVT_SCALE{i}": 1}
            e(f"CNA_CVT_CON{i + 1}", **lane)
    else:
        e("CNA_CVT_CON0", CVT_TYPE=1, DATA_SIGN=1)  # 0xA: converter in the path [IAV T29]
        for i in range(4):
            e(f"CNA_CVT_CON{i + 1}", **{f"CVT_SCALE{i}": 1})
    e("CNA_FC_CON0")
    e("CNA_FC_CON1")
    e("CNA_PAD_CON0", PAD_TOP=c.pad_top, PAD_LEFT=c.pad_left, PAD_VALUE=c.in_zp)
    line = packed_row_bytes(layer.in_w, layer.in_c) if packed else layer.in_w * ATOM
    e.addr("CNA_FEATURE_DATA_ADDR", ROLE_INPUT, w.in_row0 * line + w.ch0 // ATOM * in_plane)
    e("CNA_FC_CON2")
    e("CNA_DMA_CON0", DATA_BURST_LEN=DMA_CON0 & 0xF, FETCH_PIXEL_LEN=(DMA_CON0 >> 8) & 0xFF,
      WEIGHT_BURST_LEN=(DMA_CON0 >> 16) & 0xF, BIT20=1)
    e("CNA_DMA_CON1", LINE_STRIDE=line // ATOM)
    e("CNA_DMA_CON2", SURF_STRIDE=in_atoms)
    e("CNA_FC_DATA_SIZE0", DMA_HEIGHT=rows, DMA_WIDTH=dma_w)
    e("CNA_FC_DATA_SIZE1", DMA_CHANNEL=align(c.in_c, ATOM))
    e("CNA_DCOMP_CTRL")
    e("CNA_DCOMP_REGNUM")
    e.addr("CNA_DCOMP_ADDR0", ROLE_WEIGHTS, w.ch0 * taps if dw else 0)  # depthwise: whole 32-channel groups
    for i in range(1, 8):
        e(f"CNA_DCOMP_ADDR{i}")
    for i in range(8):
        e(f"CNA_DCOMP_AMOUNT{i}")
    for i in range(9):
        e(f"CNA_UNDOC_{0x1210 + 4 * i:04X}")
    e("CMAC_CFG", BIT0=1, DW_EN=int(dw))
    e("CORE_MISC_CFG", DW_EN=int(dw))
    e("CORE_DATAOUT_SIZE_0", DATAOUT_WIDTH_M1=c.out_w - 1, DATAOUT_HEIGHT_M1=c.out_h - 1)
    e("CORE_DATAOUT_SIZE_1", DATAOUT_CHANNEL_M1=ocp - 1)
    e("CORE_UNDOC_302C")
    # 0x108 conv, 0x138 depthwise [GOLD]: with RK3588's fields a burst length of 9 on depthwise layers
    e("DPU_FEATURE_MODE_CFG", CONV_MODE=3 if dw else 1, BURST_LEN=9 if dw else 8)
    stream = rq.mul_shift is not None
    e("DPU_DATA_FORMAT", BS_MUL_SHIFT_VALUE_NEG=rq.mul_shift or 0)  # 0xE0 with the vendor's shift 14 [GOLD]
    e("DPU_OFFSET_PEND")
    e.addr("DPU_DST_BASE_ADDR", ROLE_OUTPUT, w.out_row0 * layer.out_w * ATOM + w.ch0 // ATOM * plane)
    e("DPU_DST_SURF_STRIDE", DST_SURF_STRIDE_BYTES=plane)
    e("DPU_DATA_CUBE_WIDTH", WIDTH_M1=c.out_w - 1)
    e("DPU_DATA_CUBE_HEIGHT", HEIGHT_M1=c.out_h - 1)
    e("DPU_DATA_CUBE_NOTCH_ADDR")
    e("DPU_DATA_CUBE_CHANNEL", CHANNEL_M1=ocp - 1, ORIG_CHANNEL_M1=c.out_c - 1)
    # 0x158 per tensor (MUL bypassed) [IAV T43]; 0x148 with the per-channel stream's multipliers [IAV T41; GOLD]
    e("DPU_BS_CFG", BS_BIT3=1, BS_MUL_BYPASS=int(not stream), BS_RELU_BYPASS=1, BS_ALU_SRC=1)
    e("DPU_BS_ALU_CFG")
    e("DPU_BS_MUL_CFG", BS_MUL_SRC=int(stream), BS_MUL_SHIFT_VALUE=rq.mul_shift or 0)  # 0xE01 [IAV T41; GOLD]
    e("DPU_BS_RELUX_CMP_VALUE")
    size_e = 3 if dw else 1
    # 0x124 conv, 0x36C depthwise [GOLD]; OW_SRC 1 (the stream's OW): 0x125 / 0x36D [IAV T41; GOLD avgpool]
    e("DPU_BS_OW_CFG", OW_SRC=int(stream), SIZE_E_0=size_e, SIZE_E_1=size_e, SIZE_E_2=size_e)
    # 0x80 - weight zero point: the stored domain's -zw [IAV T43; GOLD]; 0 with the stream's OW [GOLD avgpool]
    e("DPU_BS_OW_OP", OW_OP=0 if stream else -c.w_zp)
    if rq.relux is not None:  # BN stage: ReLU at 0 and the upper bound [IAV T57; GOLD 0x92]
        e("DPU_BN_CFG", BN_ALU_BYPASS=1, BN_MUL_BYPASS=1, BN_RELUX_EN=1)
    elif rq.relu:
        e("DPU_BN_CFG", BN_ALU_BYPASS=1, BN_MUL_BYPASS=1)  # 0x12
    else:
        e("DPU_BN_CFG", BN_BYPASS=1, BN_ALU_BYPASS=1, BN_MUL_BYPASS=1, BN_RELU_BYPASS=1)  # 0x53
    e("DPU_BN_ALU_CFG")
    e("DPU_BN_MUL_CFG")
    e("DPU_BN_RELUX_CMP_VALUE", BN_RELUX_CMP_DAT=rq.relux or 0)
    e("DPU_EW_CFG", EW_BYPASS=1, EW_OP_BYPASS=1, EW_LUT_BYPASS=1, EW_OP_CVT_BYPASS=1, EW_RELU_BYPASS=1)  # 0x383
    e("DPU_EW_CVT_OFFSET_VALUE")
    e("DPU_EW_CVT_SCALE_VALUE", EW_OP_CVT_SCALE=1)
    e("DPU_EW_RELUX_CMP_VALUE")
    e("DPU_OUT_CVT_OFFSET", OUT_CVT_OFFSET=c.out_zp)
    e("DPU_OUT_CVT_SCALE", OUT_CVT_SCALE=rq.cvt_scale)
    e("DPU_OUT_CVT_SHIFT", OUT_CVT_SHIFT=rq.cvt_shift)
    for i in range(8):
        e(f"DPU_EW_OP_VALUE_{i}")
    e("DPU_SURFACE_ADD", SURF_ADD_BYTES=plane * (4 if dw else 2))  # W x H x 16, x 32 depthwise [IAV T32]
    e("DPU_UNDOC_40C4")
    for r in DPU:
        if r.offset >= 0x4100:
            e(r.full_name)
    e("DPU_RDMA_DATA_CUBE_WIDTH", WIDTH_M1=c.out_w - 1)
    e("DPU_RDMA_DATA_CUBE_HEIGHT", HEIGHT_M1=c.out_h - 1)
    e("DPU_RDMA_DATA_CUBE_CHANNEL", CHANNEL_M1=ocp - 1)
    e("DPU_RDMA_SRC_BASE_ADDR")
    # 2: the bias-only stream [IAV T43]; 0xE: bias, OW and multiplier [IAV T41; GOLD avgpool]
    e("DPU_RDMA_BRDMA_CFG", BRDMA_DATA_USE=7 if stream else 1)
    e.addr("DPU_RDMA_BS_BASE_ADDR", ROLE_BIAS, w.ch0 * bs_bytes_per_channel(rq))
    e("DPU_RDMA_BS_LENGTH", BS_WORDS_M1=bs_words(c, rq) - 1)
    e("DPU_RDMA_NRDMA_CFG", NRDMA_DISABLE=1)
    e("DPU_RDMA_BN_BASE_ADDR")
    e("DPU_RDMA_UNDOC_5030")
    e("DPU_RDMA_ERDMA_CFG", ERDMA_DISABLE=1)
    e("DPU_RDMA_EW_BASE_ADDR")
    e("DPU_RDMA_UNDOC_503C")
    e("DPU_RDMA_EW_SURF_STRIDE")
    e("DPU_RDMA_FEATURE_MODE_CFG", CONV_MODE=3 if dw else 0, BURST_LEN=RDMA_BURST_LEN)
    e("DPU_RDMA_SRC_DMA_CFG")
    e("DPU_RDMA_SURF_NOTCH")
    e("DPU_RDMA_PAD_CFG")
    e("DPU_RDMA_WEIGHT", M_WEIGHT=1, B_WEIGHT=1, N_WEIGHT=1, E_WEIGHT=1)
    assert len(e.s.words) == BODY_WORDS
    return e.s


def end_trailer(rm: RegMap) -> list[int]:
    """The last task's trailer: no next task, then SYNC and the op-enable."""
    return [0, rm.word("PC_REGISTER_AMOUNTS", PC_DATA_AMOUNT=0), rm.special_word("SYNC"),
            rm.special_word("OP_ENABLE", **OP_ENABLE_CONV)]


# Registers every delta task writes, changed or not: the addresses and the CNA's DMA size [GOLD: all 4 delta tasks]
DELTA_ALWAYS = frozenset({"CNA_FEATURE_DATA_ADDR", "CNA_FC_DATA_SIZE0", "CNA_FC_DATA_SIZE1",
                          *(f"CNA_DCOMP_ADDR{i}" for i in range(8)), "DPU_DST_BASE_ADDR", "DPU_RDMA_SRC_BASE_ADDR",
                          "DPU_RDMA_BS_BASE_ADDR", "DPU_RDMA_BN_BASE_ADDR", "DPU_RDMA_EW_BASE_ADDR"})
_DELTA_KEEP = tuple(i < len(PROLOGUE) or name in DELTA_ALWAYS for i, name in enumerate(BODY))


def delta(full: Stream, bank_before: Stream) -> Stream:
    """A task that rewrites only what differs from the task before it on the same ping-pong register bank (plus the
    prologue and DELTA_ALWAYS), relying on that bank's state for the rest: the vendor's 22-31-word tasks [GOLD]."""
    keep = [i for i, (a, b) in enumerate(zip(full.words, bank_before.words)) if _DELTA_KEEP[i] or a != b]
    index = {old: new for new, old in enumerate(keep)}
    return Stream([full.words[i] for i in keep], [(index[i], role) for i, role in full.relocs if i in index])


def task_streams(rm: RegMap, bodies: list[Stream]) -> tuple[list[Stream], list[int]]:
    """Full bodies -> the chained tasks: the first task of each ping-pong bank full, later ones deltas, each with its
    trailer (next task's address and words - 1, amount scale 1 [VEND]); returns the streams and their offsets."""
    streams = [b if i < 2 else delta(b, bodies[i - 2]) for i, b in enumerate(bodies)]
    for s in streams:
        s.words.extend(end_trailer(rm))
    return streams, chain(rm, streams, [len(s.words) - 1 for s in streams])
