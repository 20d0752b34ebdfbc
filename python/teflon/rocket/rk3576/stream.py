"""Per-task RK3576 regcmd streams (docs/hardware/rocket-rk3576.md, "Register semantics").

Every task is the vendor's 139-word body (regs_rk3576.STREAM_ORDER) with every register written, then the
4-word trailer [PC_BASE_ADDRESS next][PC_REGISTER_AMOUNTS n][SYNC][OP_ENABLE 0x1D], counted in the task's
word count. The last (or only) task of an operation gets [PC_BASE_ADDRESS 0][PC_REGISTER_AMOUNTS 0][SYNC]
[OP_ENABLE]: accel/rocket fetches exactly the words userspace counts (REGISTER_AMOUNTS = ceil(count/2) - 1),
so the op-enable must be inside the count. The vendor's stored programs end their last task without a trailer
because its driver fetches 4 words more (ceil((n + 4)/2) - 1) and supplies them itself
(../shared/golden/rocket-rk3576, compile A; docs/hardware/rocket-rk3576-sim.md §2). Address registers hold
offsets inside their buffer and are listed as relocations (role, word index), as on RK3588.
"""

from __future__ import annotations

from collections.abc import Container
from dataclasses import dataclass

from ...hw.regmap import RegMap
from ..geometry import FEATURE_ATOM, align
from ..operations import RocketConv, RocketPool
from ..ppu import MAX_PAD_VALUE
from ..stream import (
    ROLE_BIAS,
    ROLE_EW,
    ROLE_INPUT,
    ROLE_OUTPUT,
    ROLE_SCRATCH,
    ROLE_WEIGHTS,
    TRAILER_WORDS,
    Stream,
    chain,
)
from . import coefs
from .regs import EW_CFG_ADD, EW_CFG_BYPASS, INT32_MAX, INT32_MIN, STREAM_ORDER
from .split import Split, Task

BODY_WORDS = len(STREAM_ORDER)
ROLE_SHIFT = ROLE_BIAS  # the shift word lives in the coefficient buffer, after the table


def round4(n: int) -> int:
    """The vendor's plane sizes in atoms: rounded up to 4, except a single atom [VENDOR 0x401C, 0x1098]."""
    return n if n == 1 else align(n, 4)


def dpu_plane(h: int, w: int) -> int:
    """Output plane pitch in 16-byte atoms as the DPU writes it."""
    return round4(h * w)


@dataclass(frozen=True)
class EwParams:
    """A fused ADD's operand: DPU_RDMA's ERDMA reads it, the DPU EW stage adds it converted (the vendor's
    add-2conv program, docs/hardware/rocket-rk3576.md "Fused ADD")."""

    offset: int  # EW_CVT_OFFSET: minus the operand's stored zero point
    scale: int  # EW_OP_CVT_SCALE (signed)
    shift: int  # EW_OP_CVT_SHIFT
    plane: int  # the operand tensor's plane pitch, 16-byte atoms


@dataclass(frozen=True)
class LayerParams:
    """Whole-operation values shared by all tasks."""

    conv: RocketConv
    split: Split
    in_plane: int  # input tensor plane pitch, 16-byte atoms
    cvt_scale: int
    cvt_shift: int
    shift_offset: int  # byte offset of the shift word in the coefficient buffer
    bs_shift: int  # the shift word's shift (coefs_rk3576)
    clamp: tuple[int, int | None] | None = None  # fused RELU/RELU6 bounds before OUT_CVT (CLAMP2/3), None: off
    ew: EwParams | None = None
    # the EW stage's lookup table on (lut.py): register name -> fields of the LUT words, over the values below
    lut: dict[str, dict[str, int]] | None = None

    @property
    def in_c16(self) -> int:
        return align(max(self.conv.in_c, 1), FEATURE_ATOM)

    @property
    def out_plane(self) -> int:
        return dpu_plane(self.conv.out_h, self.conv.out_w)

    def kernels(self, ocs: int) -> int:
        """WEIGHT_KERNELS of a task computing `ocs` output channels (depthwise: the vendor's 2)."""
        return 2 if self.conv.depthwise else align(ocs, 2)

    def weight_bytes(self, ocs: int) -> int:
        """The weight cube of a task computing `ocs` output channels."""
        c = self.conv
        if c.depthwise:
            return self.in_c16 * c.kh * c.kw * 2
        return self.in_c16 * self.kernels(ocs) * c.kh * c.kw

    @property
    def weight_bytes_per_kernel(self) -> int:
        return self.in_c16 * self.conv.kh * self.conv.kw

    def weight_offset(self, oc0: int) -> int:
        """Where the cube of the chunk starting at output channel `oc0` starts (chunks are whole even cubes)."""
        return 0 if self.conv.depthwise else oc0 * self.weight_bytes_per_kernel

    @property
    def kernel_fetch(self) -> int:
        """CNA_DATA_SIZE2.KERNEL_FETCH [VENDOR formulas; meaning unknown]."""
        return self.weight_bytes(0) // 16 if self.conv.depthwise else 2 * self.weight_bytes_per_kernel


# The DPU clamp words without a clamp, built once (the field values of every task's body are only read).
NO_CLAMP: dict[str, dict[str, int]] = {f"DPU_CLAMP{i}_{m}": {f"CLAMP{i}_{m}": INT32_MIN if m == "MIN" else INT32_MAX}
                                       for i in range(6) for m in ("MIN", "MAX")}


def _values(p: LayerParams, task: Task) -> dict[str, dict[str, int]]:
    """Field values of every register of the body, by register name (absent: all fields 0)."""
    c = p.conv
    dw = c.depthwise
    sp = p.split
    t = task.window
    ocs = task.ocs  # output channels of this task (the layer's, unless its kernels come in chunks)
    rows_out = t.out_rows
    iw, ow = t.cols, t.out_cols  # the window's input / output columns (the whole width without column windows)
    epr = sp.row_entries(t)
    groups_out = -(-ocs // FEATURE_ATOM)
    pp = {"POINTER_PP_EN": 1, "EXECUTER_PP_EN": 1, "POINTER_PP_MODE": 1}
    clamp = NO_CLAMP
    if p.clamp is not None:  # the vendor's fused ReLU / Clip: CLAMP2 = CLAMP3 = (lower, upper), 0x4060 = 0x902
        clamp = dict(NO_CLAMP)
        lo, hi = p.clamp
        for i in (2, 3):
            clamp[f"DPU_CLAMP{i}_MIN"] = {f"CLAMP{i}_MIN": lo}
            clamp[f"DPU_CLAMP{i}_MAX"] = {f"CLAMP{i}_MAX": INT32_MAX if hi is None else hi}
    return {
        "CNA_S_POINTER": pp,
        "CORE_S_POINTER": pp,
        "DPU_S_POINTER": pp,
        "DPU_RDMA_S_POINTER": pp,
        "CNA_UNDOC_1038": {"LOW": 7, "NOT_FIRST_TASK": int(not task.loads_weights)},
        "CNA_CONV_CON1": {"CONV_MODE": int(dw)},
        "CNA_UNDOC_1010": {"VALUE": 0xFFF},
        "CNA_CONV_CON3": {"CONV_X_STRIDE": c.sx, "CONV_Y_STRIDE": c.stride},
        # the data ring in 1024-granule units (4 <-> 4096, 5 <-> 5120 in every vendor task); a layer between 4096
        # and 5120 granules runs as one window of the 5120 ring
        "CNA_UNDOC_1018": {"MODE_LO": sp.data_limit // 1024, "MODE_HI": sp.data_limit // 1024, "BIT30": 1,
                           "CBUF_RETAIN": int(t.kept > 0)},
        "CNA_WEIGHT_SIZE0": {"WEIGHT_BYTES": p.weight_bytes(ocs)},
        "CNA_WEIGHT_SIZE1": {"WEIGHT_BYTES_PER_KERNEL": p.weight_bytes_per_kernel},
        "CNA_WEIGHT_SIZE2": {"WEIGHT_KERNELS_M1": p.kernels(ocs) - 1, "WEIGHT_WIDTH_M1": c.kw - 1,
                             "WEIGHT_HEIGHT_M1": c.kh - 1},
        "CNA_DATA_SIZE1": {"DATAIN_CHANNEL_M1": c.in_c - 1, "WINDOW_ENTRIES": epr * t.fetched},
        "CNA_DATA_SIZE0": {"DATAIN_HEIGHT_M1": t.rows - 1, "DATAIN_WIDTH_M1": iw - 1},
        "CNA_DATA_SIZE2": {"DATAOUT_WIDTH_M1": ow - 1, "KERNEL_FETCH": p.kernel_fetch},
        "CNA_DATA_SIZE3": {"DATAOUT_ATOMICS_M1": ow * rows_out - 1},
        "CNA_CBUF_CON2": {"READ_ORIGIN": t.read_origin, "DATA_ENTRIES": epr},
        "CNA_CBUF_CON0": {"WRITE_ORIGIN": t.write_origin, "DATA_LIMIT": sp.data_limit},
        "CNA_CBUF_CON1": {"DATA_ENTRIES": epr, "DATAIN_WIDTH": iw},
        "CNA_CVT_CON0": {"CVT_BYPASS": 1, "CVT_TYPE": 1, "DATA_SIGN": 1},
        "CNA_CVT_CON1": {"CVT_SCALE0": 1, "CVT_SCALE1": 1},
        "CNA_CVT_CON2": {"CVT_SCALE2": 1, "CVT_SCALE3": 1},
        "CNA_DMA_SIZE0": {"DMA_HEIGHT_M1": t.fetched - 1, "DMA_WIDTH_M1": iw - 1},
        "CNA_DMA_SIZE1": {"DMA_CHANNEL_M1": c.in_c - 1},
        "CNA_PAD_CON0": {"PAD_TOP": t.pad_top, "PAD_LEFT": t.pad_left, "PAD_BOTTOM": t.pad_bottom,
                         "PAD_RIGHT": t.pad_right},
        "CNA_PAD_CON1": {"PAD_VALUE": c.in_zp},
        "CNA_DMA_CON0": {"DATA_BURST_LEN": 15, "WEIGHT_BURST_LEN": 15},
        "CNA_DMA_CON1": {"LINE_STRIDE": c.in_w * FEATURE_ATOM // 4},  # the whole tensor's rows
        "CNA_DMA_CON2": {"SURF_STRIDE": p.in_plane},
        "CNA_DMA_CON3": {"TASK_SURF": round4(iw * t.fetched)},
        "CNA_UNDOC_118C": {"LO": iw - 1, "HI": iw - 1},
        "CORE_MISC_CFG": {"DW_EN": 1, "DW_BIT3": 1, "BIT28": 1} if dw else {"QD_EN": 1, "BIT28": 1},
        "CORE_DATAOUT_SIZE_0": {"DATAOUT_WIDTH_M1": ow - 1, "DATAOUT_HEIGHT_M1": rows_out - 1},
        "CORE_DATAOUT_SIZE_1": {"DATAOUT_CHANNEL_M1": ocs - 1},
        "DPU_FEATURE_MODE_CFG": {"OUTPUT_MODE": 2, "CONV_MODE": int(dw), "BIT30": 1},
        "DPU_DST_SURF_STRIDE": {"DST_SURF_STRIDE": p.out_plane},
        "DPU_DATA_CUBE_WIDTH": {"WIDTH_M1": ow - 1},
        "DPU_DATA_CUBE_HEIGHT": {"HEIGHT_M1": rows_out - 1},
        "DPU_DATA_CUBE_CHANNEL": {"CHANNEL_M1": ocs - 1},
        "DPU_UNDOC_4030": {"LO": 0x310 if dw else 0x710, "CHANNEL_M1": ocs - 1},
        "DPU_WDMA_SIZE_1": {"WIDTH_WDMA_M1": ow - 1, "HEIGHT_WDMA_M1": rows_out - 1},
        "DPU_UNDOC_4038": {"VALUE": 0x100092 if dw else 0x120080},
        "DPU_BS_CFG": {"BS_MODE": 0 if dw else 1},
        "DPU_BS_OW_CFG": ({"N0": 3, "N1": 3, "GROUP_PHASE": (groups_out - 1) % 4, "N3": 3, "N4": 1} if dw else
                          {"N0": 1, "N1": 1, "GROUP_PHASE": (groups_out - 1) & 1, "N3": 1, "N4": 1, "FLOAT_OFF": 1}),
        **clamp,
        "DPU_UNDOC_4060": {"VALUE": 0x903 if p.clamp is None else 0x902},
        **_ew_values(p, task),
        "DPU_OUT_CVT_OFFSET": {"OUT_CVT_OFFSET": c.out_zp},
        "DPU_OUT_CVT_SCALE": {"OUT_CVT_SCALE": p.cvt_scale},
        "DPU_OUT_CVT_SHIFT": {"OUT_CVT_SHIFT": p.cvt_shift},
        "DPU_SURFACE_ADD": {"SURF_ADD": (4 if dw else 2) * p.out_plane - ow * rows_out},
        "DPU_UNDOC_40C0": {"VALUE": 0x04440100},
        "DPU_UNDOC_40D0": {"VALUE": 0x0040FFFF},
        "DPU_RDMA_DATA_CUBE_WIDTH": {"WIDTH_M1": ow - 1},
        "DPU_RDMA_DATA_CUBE_HEIGHT": {"HEIGHT_M1": rows_out - 1},
        "DPU_RDMA_DATA_CUBE_CHANNEL": {"CHANNEL_M1": ocs - 1},
        "DPU_RDMA_BRDMA_CFG": {"BRDMA_CFG": 0x510 if dw else 0x710},
        **(p.lut or {}),
    }


def _ew_values(p: LayerParams, task: Task) -> dict[str, dict[str, int]]:
    """DPU EW and DPU_RDMA ERDMA words: bypassed, or the vendor's fused conv + Add (add-2conv: EW_CFG 0x8002C0C0,
    ERDMA_CFG 0x50000044, FEATURE_MODE_CFG 0x40000018, stride and notches W x H for a whole-plane task). The
    notches of a row window follow the RK3588 reading of Mesa's words: 2 x stride - the task cube
    (docs/hardware/rocket-rk3576.md)."""
    dw = int(p.conv.depthwise)
    if p.ew is None:
        return {"DPU_EW_CFG": {"VALUE": EW_CFG_BYPASS}, "DPU_EW_CVT_SCALE_VALUE": {"EW_OP_CVT_SCALE": 1},
                "DPU_RDMA_ERDMA_CFG": {"ERDMA_DISABLE": 1, "BIT6": 1},
                "DPU_RDMA_FEATURE_MODE_CFG": {"CONV_MODE": dw, "MRDMA_DISABLE": 1, "BIT30": 1}}
    notch = 2 * p.ew.plane - p.conv.out_w * task.window.out_rows
    return {
        "DPU_EW_CFG": {"VALUE": EW_CFG_ADD},
        "DPU_EW_CVT_OFFSET_VALUE": {"EW_OP_CVT_OFFSET": p.ew.offset},
        "DPU_EW_CVT_SCALE_VALUE": {"EW_OP_CVT_SCALE": p.ew.scale, "EW_OP_CVT_SHIFT": p.ew.shift},
        "DPU_RDMA_ERDMA_CFG": {"ERDMA_DATA_SIZE": 1, "BIT6": 1, "ERDMA_BIT28": 1, "ERDMA_DATA_MODE": 1},
        "DPU_RDMA_FEATURE_MODE_CFG": {"CONV_MODE": dw, "EW_BIT3": 1, "MRDMA_DISABLE": 1, "BIT30": 1},
        "DPU_RDMA_EW_SURF_STRIDE": {"EW_SURF_STRIDE": p.ew.plane},
        "DPU_RDMA_SURF_NOTCH": {"SURF_NOTCH_ADDR": notch},
        "DPU_RDMA_EW_SURF_NOTCH": {"EW_SURF_NOTCH": notch},
    }


def with_input_pitch(rm: RegMap, streams: list[Stream], old_plane: int, new_plane: int) -> list[Stream]:
    """The streams of a layer encoded for input plane pitch `old_plane`, for `new_plane` instead: the pitch
    reaches only CNA_DMA_CON2.SURF_STRIDE (_values), so a partition whose input the DPU wrote reuses the
    layer the support decision encoded for a host-written input. Raises RegMapError."""
    old = rm.word_of("CNA_DMA_CON2", {"SURF_STRIDE": old_plane})
    new = rm.word_of("CNA_DMA_CON2", {"SURF_STRIDE": new_plane})
    return [Stream([new if w == old else w for w in s.words], list(s.relocs)) for s in streams]


def _addresses(p: LayerParams, task: Task) -> dict[str, tuple[str, int]]:
    """Offsets in each address register's buffer: the window's rows; the chunk's weight cube, first output
    plane (16 channels per plane) and coefficient groups (8 channels per group)."""
    c = p.conv
    t = task.window
    plane = task.oc0 // FEATURE_ATOM * p.out_plane * FEATURE_ATOM
    ew = {}
    if p.lut is not None:  # BN_BASE_ADDR: never IOVA 0 with the NRDMA on (lut.py, regs.py)
        ew["DPU_RDMA_BN_BASE_ADDR"] = (ROLE_SCRATCH, 0)
    if p.ew is not None:  # the operand has the output's geometry, at its own plane pitch
        ew["DPU_RDMA_EW_BASE_ADDR"] = (ROLE_EW, (task.oc0 // FEATURE_ATOM * p.ew.plane + t.out_row0 * c.out_w)
                                       * FEATURE_ATOM)
    return {
        **ew,
        "CNA_FEATURE_DATA_ADDR": (ROLE_INPUT, (t.fetch_row0 * c.in_w + t.col0) * FEATURE_ATOM),
        "CNA_DCOMP_ADDR0": (ROLE_WEIGHTS, p.weight_offset(task.oc0)),
        "DPU_DST_BASE_ADDR": (ROLE_OUTPUT, plane + (t.out_row0 * c.out_w + t.out_col0) * FEATURE_ATOM),
        "DPU_RDMA_BS_BASE_ADDR": (ROLE_BIAS, task.oc0 // coefs.GROUP * (
            coefs.DW_GROUP_BYTES if c.depthwise else coefs.DIRECT_GROUP_BYTES)),
        "DPU_RDMA_BS_SHIFT_ADDR": (ROLE_SHIFT, p.shift_offset),
    }


def task_stream(rm: RegMap, p: LayerParams, t: Task) -> Stream:
    """The 139-word body of one task (the trailer is added by link()): the body's all-zero words (RegMap.template),
    then the registers with field values and the relocated addresses written over them in place — two thirds of
    the body never changes, and a model's streams hold ~10,000 words."""
    tpl = rm.template(STREAM_ORDER)
    words = list(tpl.words)
    known = rm.known_words()
    for name, fields in _values(p, t).items():
        at = tpl.at.get(name)
        if at is None:
            continue  # a value for a register this body does not write
        word = known.get((name, *fields.items()))  # RegMap.word_of's memo read first (the values are ints)
        if word is None:
            word = rm.word_of(name, fields)
        for i in at:
            words[i] = word
    relocs = []
    for name, (role, offset) in _addresses(p, t).items():
        for i in tpl.at.get(name, ()):
            words[i] = rm.word_raw(name, offset)
            relocs.append((i, role))
    for i in tpl.required:
        if words[i] is None:  # a register left at 0 where 0 is not valid: word_of says why
            words[i] = rm.word_of(STREAM_ORDER[i], {})
    relocs.sort()
    return Stream(words, relocs)  # type: ignore[arg-type]


def fetch_amount(body_words: int) -> int:
    """PC_REGISTER_AMOUNTS for a task of `body_words` plus its 4-word trailer: ceil((n + 4) / 2) - 1 [VENDOR]."""
    return -(-(body_words + TRAILER_WORDS) // 2) - 1


def trailer(rm: RegMap, dpu_only: bool = False) -> list[int]:
    """The trailer of the last task: no next task (address and amount 0), then SYNC and the op-enable (a conv
    task's CNA | CORE | DPU | DPU_RDMA = 0x1D, or DPU | DPU_RDMA = 0x18 for a DPU-only task such as the vendor's
    LUT load [VENDOR76])."""
    enable = rm.special_word("OP_ENABLE", DPU_EN=1, DPU_RDMA_EN=1) if dpu_only else \
        rm.special_word("OP_ENABLE", CNA_EN=1, CORE_EN=1, DPU_EN=1, DPU_RDMA_EN=1)
    return [rm.word("PC_BASE_ADDRESS", PC_SOURCE_ADDR=0), rm.word("PC_REGISTER_AMOUNTS", PC_DATA_AMOUNT=0),
            rm.special_word("SYNC"), enable]


def link(rm: RegMap, streams: list[Stream], dpu_only: Container[int] = ()) -> list[int]:
    """Append the trailer to every task (bodies in, body + trailer out; the tasks whose index is in `dpu_only` get
    the DPU-only op-enable), lay the streams out 64-byte aligned in one buffer and chain each to the next
    (..stream.chain: next address and fetch amount in the first two trailer words; the last task keeps 0 / 0);
    returns each stream's byte offset."""
    amounts = [fetch_amount(len(s.words)) for s in streams]
    for i, s in enumerate(streams):
        s.words += trailer(rm, i in dpu_only)
    return chain(rm, streams, amounts)


def pool_pad_registers(p: RocketPool) -> list[tuple[str, dict[str, int]]]:
    """NVDLA-style padding values pad_value_Nx, N = 1..7 [VENDOR 0x6044..0x605C]: max pooling writes -128 into
    the first four, average pooling (j + 1) x the input zero point; the last three are 0."""
    vals = [(j + 1) * p.in_zp if p.average else MAX_PAD_VALUE for j in range(4)] + [0, 0, 0]
    return [(f"PPU_PADDING_VALUE_{i + 1}_CFG", {f"PAD_VALUE_{i + 1}X": v}) for i, v in enumerate(vals)]


def pool_trailer(rm: RegMap) -> list[int]:
    """A pool task's terminal trailer [VENDOR]: no next task, SYNC, op-enable PPU | PPU_RDMA (0x60)."""
    return [rm.word("PC_BASE_ADDRESS", PC_SOURCE_ADDR=0), rm.word("PC_REGISTER_AMOUNTS", PC_DATA_AMOUNT=0),
            rm.special_word("SYNC"), rm.special_word("OP_ENABLE", PPU_EN=1, PPU_RDMA_EN=1)]
