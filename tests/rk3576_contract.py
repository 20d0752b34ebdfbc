"""A numpy model of the RK3576 encoder/simulator contract (docs/hardware/rocket-rk3576.md, "Register semantics
for the simulator"), used by tests to check the encoder's numbers end to end before the C simulator exists.

It reads only what the simulator reads: the Program's buffers, relocations, task streams and I/O bindings.
Kept rows of a CBUF window are read again from DRAM (the documented shortcut). Not a simulator: no
register-state persistence across tasks, no rejection of unknown values beyond the table's own checks.
"""

from __future__ import annotations

import struct

import numpy as np

from teflon import rocket
from teflon.ir import Graph, Operation, Quant, Tensor
from teflon.modelgen import ConvCase, conv_params
from teflon.program import RELOC_REGCMD, Program

RM = rocket.regmap_for("rk3576")
ALIGN = 4096


class Memory:
    def __init__(self, prog: Program) -> None:
        self.base: dict[str, int] = {}
        off = ALIGN
        for b in prog.buffers:
            self.base[b.name] = off
            off += -(-b.size // ALIGN) * ALIGN
        self.mem = np.zeros(off, np.uint8)
        for b in prog.buffers:
            if b.data:
                self.mem[self.base[b.name]:self.base[b.name] + len(b.data)] = np.frombuffer(b.data, np.uint8)
        for r in prog.relocs:
            at = self.base[r.buffer] + r.offset
            if r.kind == RELOC_REGCMD:
                w = int(self.mem[at:at + 8].view("<u8")[0])
                v = ((w >> 16) & 0xFFFFFFFF) + self.base[r.target]
                w = (w & ~(0xFFFFFFFF << 16)) | (v << 16)
                self.mem[at:at + 8] = np.frombuffer(struct.pack("<Q", w), np.uint8)

    def words(self, buffer: str, offset: int, count: int) -> list[int]:
        at = self.base[buffer] + offset
        return [int(w) for w in self.mem[at:at + 8 * count].view("<u8")]


def _fields(words: list[int]) -> dict[str, dict[str, int]]:
    regs: dict[str, dict[str, int]] = {}
    for w in words:
        _, name, f = RM.decode(w)
        regs[name] = f
    return regs


def _s8(v: int) -> int:
    return ((v & 0xFF) ^ 0x80) - 0x80


def _direct_weights(mem: np.ndarray, kernels: int, kh: int, kw: int, ic16: int) -> np.ndarray:
    """RK3588 cube -> (kernels, kh, kw, ic16) int8: 32x32 blocks, block-internal [kh][kw][o][i]."""
    out = np.zeros((kernels, kh, kw, ic16), np.int8)
    pos = 0
    for og in range(0, kernels, 32):
        ocb = min(32, kernels - og)
        for ig in range(0, ic16, 32):
            icb = min(32, ic16 - ig)
            n = kh * kw * ocb * icb
            blk = mem[pos:pos + n].view(np.int8).reshape(kh, kw, ocb, icb)
            out[og:og + ocb, :, :, ig:ig + icb] = blk.transpose(2, 0, 1, 3)
            pos += n
    return out


def _dw_weights(mem: np.ndarray, kh: int, kw: int, c16: int) -> np.ndarray:
    """Depthwise cube -> (kh, kw, c16) int: groups of 64, [kh][kw][c][2], both bytes added."""
    out = np.zeros((kh, kw, c16), np.int32)
    pos = 0
    for g in range(0, c16, 64):
        cb = min(64, c16 - g)
        n = kh * kw * cb * 2
        blk = mem[pos:pos + n].view(np.int8).reshape(kh, kw, cb, 2).astype(np.int32)
        out[:, :, g:g + cb] = blk.sum(axis=-1)
        pos += n
    return out


def run_task(m: Memory, words: list[int]) -> None:
    r = _fields(words)
    raw = {n: (w >> 16) & 0xFFFFFFFF for n, w in ((RM.decode(w)[1], w) for w in words)}
    dw = r["CNA_CONV_CON1"]["CONV_MODE"] == 1
    stride = r["CNA_CONV_CON3"]["CONV_X_STRIDE"]
    iw = r["CNA_DATA_SIZE0"]["DATAIN_WIDTH_M1"] + 1
    rows = r["CNA_DATA_SIZE0"]["DATAIN_HEIGHT_M1"] + 1
    fetched = r["CNA_DMA_SIZE0"]["DMA_HEIGHT_M1"] + 1
    ic = r["CNA_DATA_SIZE1"]["DATAIN_CHANNEL_M1"] + 1
    line = r["CNA_DMA_CON1"]["LINE_STRIDE"] * 4
    plane = r["CNA_DMA_CON2"]["SURF_STRIDE"] * 16
    kept = rows - fetched
    addr = raw["CNA_FEATURE_DATA_ADDR"] - kept * line  # kept rows: read again from DRAM
    pads = r["CNA_PAD_CON0"]
    pad_value = _s8(raw["CNA_PAD_CON1"])
    x = np.full((rows + pads["PAD_TOP"] + pads["PAD_BOTTOM"], iw + pads["PAD_LEFT"] + pads["PAD_RIGHT"], ic),
                pad_value, np.int64)
    for g in range(-(-ic // 16)):
        cs = min(16, ic - 16 * g)
        for y in range(rows):
            at = addr + g * plane + y * line
            px = m.mem[at:at + iw * 16].view(np.int8).reshape(iw, 16)[:, :cs]
            x[pads["PAD_TOP"] + y, pads["PAD_LEFT"]:pads["PAD_LEFT"] + iw, 16 * g:16 * g + cs] = px
    ow = r["CORE_DATAOUT_SIZE_0"]["DATAOUT_WIDTH_M1"] + 1
    oh = r["CORE_DATAOUT_SIZE_0"]["DATAOUT_HEIGHT_M1"] + 1
    oc = r["CORE_DATAOUT_SIZE_1"]["DATAOUT_CHANNEL_M1"] + 1
    kh = r["CNA_WEIGHT_SIZE2"]["WEIGHT_HEIGHT_M1"] + 1
    kw = r["CNA_WEIGHT_SIZE2"]["WEIGHT_WIDTH_M1"] + 1
    wbytes = r["CNA_WEIGHT_SIZE0"]["WEIGHT_BYTES"]
    wmem = m.mem[raw["CNA_DCOMP_ADDR0"]:raw["CNA_DCOMP_ADDR0"] + wbytes]
    ic16 = -(-ic // 16) * 16
    # windows of the padded input: (oh, ow, kh, kw, ic)
    win = np.stack([np.stack([x[ky:ky + stride * (oh - 1) + 1:stride, kx:kx + stride * (ow - 1) + 1:stride]
                              for kx in range(kw)], axis=2) for ky in range(kh)], axis=2)
    if dw:
        wt = _dw_weights(wmem, kh, kw, ic16)[:, :, :ic].astype(np.int64)
        acc = (win * wt).sum(axis=(2, 3))
        sx = win.sum(axis=(2, 3))
    else:
        kernels = r["CNA_WEIGHT_SIZE2"]["WEIGHT_KERNELS_M1"] + 1
        wt = _direct_weights(wmem, kernels, kh, kw, ic16)[:oc, :, :, :ic].astype(np.int64)
        acc = np.einsum("yxhwc,ohwc->yxo", win, wt)
        sx = np.broadcast_to(win.sum(axis=(2, 3, 4))[..., None], acc.shape)
    # coefficient table and shift word
    ngroups = -(-oc // 8)
    gbytes = 48 if dw else 64
    tab = m.mem[raw["DPU_RDMA_BS_BASE_ADDR"]:raw["DPU_RDMA_BS_BASE_ADDR"] + ngroups * gbytes].reshape(ngroups, gbytes)
    a = tab[:, :32].copy().view("<i4").reshape(-1)[:oc].astype(np.int64)
    b = np.zeros(oc, np.int64) if dw else tab[:, 32:48].copy().view("<i2").reshape(-1)[:oc].astype(np.int64)
    c = tab[:, gbytes - 16:].copy().view("<i2").reshape(-1)[:oc].astype(np.int64)
    sw = int(m.mem[raw["DPU_RDMA_BS_SHIFT_ADDR"]:raw["DPU_RDMA_BS_SHIFT_ADDR"] + 4].view("<u4")[0])
    sh_pos, sh_neg = sw & 0x3F, (sw >> 8) & 0x3F
    v = acc + a + b * sx
    sh = np.where(v >= 0, sh_pos, sh_neg)
    u = (v * c + np.where(sh > 0, np.left_shift(1, np.maximum(sh - 1, 0)), 0)) >> sh
    u = np.clip(u, -(1 << 31), (1 << 31) - 1)
    scale = r["DPU_OUT_CVT_SCALE"]["OUT_CVT_SCALE"]
    shift = r["DPU_OUT_CVT_SHIFT"]["OUT_CVT_SHIFT"]
    offset = r["DPU_OUT_CVT_OFFSET"]["OUT_CVT_OFFSET"]
    y = ((u * scale + ((1 << shift) >> 1)) >> shift) + offset
    out = np.clip(y, -128, 127).astype(np.int8)
    dst = raw["DPU_DST_BASE_ADDR"]
    oplane = r["DPU_DST_SURF_STRIDE"]["DST_SURF_STRIDE"] * 16
    for g in range(-(-oc // 16)):
        block = np.zeros((oh, ow, 16), np.int8)
        cs = min(16, oc - 16 * g)
        block[:, :, :cs] = out[:, :, 16 * g:16 * g + cs]
        for yy in range(oh):
            at = dst + g * oplane + yy * ow * 16
            m.mem[at:at + ow * 16] = block[yy].reshape(-1).view(np.uint8)


def run(prog: Program, inputs: dict[int, np.ndarray]) -> dict[int, np.ndarray]:
    """Host NHWC inputs by tensor index -> host NHWC outputs by tensor index."""
    m = Memory(prog)
    for io in prog.io:
        if io.direction != "in":
            continue
        host = inputs[io.tensor].reshape(io.h, io.w, io.c).view(np.uint8) ^ io.xor
        c16 = -(-io.c // 16) * 16
        full = np.full((io.h, io.w, c16), io.pad_value, np.uint8)
        full[:, :, :io.c] = host
        base = m.base[io.buffer] + io.offset
        for g in range(c16 // 16):
            for y in range(io.h):
                at = base + g * io.plane_pitch + y * io.row_pitch
                m.mem[at:at + io.w * 16] = full[y, :, 16 * g:16 * g + 16].reshape(-1)
    for job in prog.jobs:
        for t in job.tasks:
            run_task(m, m.words(t.buffer, t.offset, t.count))
    outs = {}
    for io in prog.io:
        if io.direction != "out":
            continue
        base = m.base[io.buffer] + io.offset
        res = np.zeros((io.h, io.w, io.c), np.uint8)
        for g in range(-(-io.c // 16)):
            cs = min(16, io.c - 16 * g)
            for y in range(io.h):
                at = base + g * io.plane_pitch + y * io.row_pitch
                res[y, :, 16 * g:16 * g + cs] = m.mem[at:at + io.w * 16].reshape(io.w, 16)[:, :cs]
        outs[io.tensor] = (res ^ io.xor).view(np.int8 if io.dtype == "int8" else np.uint8).reshape(1, io.h, io.w, io.c)
    return outs


def conv_graph(case: ConvCase) -> Graph:
    """The ir.Graph of ConvCase(...).build(): the same numbers (conv_params with the case's generator)."""
    p = conv_params(case, case.rng())
    dw = case.op == "dwconv"

    def q(qp) -> Quant:
        return Quant(np.asarray(qp.scale, np.float32), np.asarray(qp.zero_point, np.int32), int(qp.axis))

    tensors = {
        0: Tensor(0, case.dtype, case.input_shape, q(p.input_quant)),
        1: Tensor(1, case.dtype, p.weights.shape, q(p.weight_quant), p.weights),
        2: Tensor(2, "int32", p.bias.shape, q(p.bias_quant), p.bias),
        3: Tensor(3, case.dtype, case.output_shape, q(p.output_quant)),
    }
    opts: dict[str, object] = {"padding": case.padding.upper(), "stride_h": case.stride, "stride_w": case.stride,
                               "dilation_h": 1, "dilation_w": 1, "activation": "NONE"}
    if dw:
        opts["depth_multiplier"] = 1
    return Graph(tensors, [Operation(0, "DEPTHWISE_CONV_2D" if dw else "CONV_2D", [0, 1, 2], [3], opts)])
