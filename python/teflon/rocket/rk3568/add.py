"""The RK3568 ADD of two maps of one shape: a 69-word DPU-only task (op-enable 0x18), the vendor's form [GOLD: both
ADD programs; IAV T53/T55 for the element-wise registers].

The DPU reads input a through DPU_RDMA's main channel (flying mode) and b through its EW channel. Both are brought to
the larger input scale in Q1.14 units: a in the BS stage, (a + 128 - za) x mul_a >> shift_a, b in the EW converter,
(b + 128 - zb) x mul_b >> shift_b, where the larger-scale input gets 2^14 (1.0) and the other round(2^(14 + shift) x
s_small / s_large) with the multiplier in [2^14, 2^15); OUT_CVT then takes s_large / s_out x 2^-14. Both inputs and
the output are align4(W x H)-atom planes; DPU_RDMA SURF_NOTCH carries the main read's gap between W x H atoms and its
plane (0x18 on a 7 x 7 map, as the toolkit writes it).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ...hw.regmap import RegMap, RegMapError
from ...ir import Graph, Operation
from ..quantization import LoweringError, stored_offset, tensor_quant
from ..requant import out_cvt
from ..stream import ROLE_EW, ROLE_INPUT, ROLE_OUTPUT, Emitter, EncodeError, Stream
from .layout import ATOM, dpu_plane
from .stream import S_POINTER

OP_ENABLE_DPU = {"DPU_EN": 1, "DPU_RDMA_EN": 1}  # 0x18 [GOLD]
Q14 = 14
EW_CFG_ADD = 0x900002D0  # [GOLD; IAV T53: "raw 0x900000D0 (bit 9 = EW_RELU_BYPASS)"]: fields below
EW_ADD_FIELDS = {"EW_BIT4": 1, "EW_OP_SRC": 1, "EW_LUT_BYPASS": 1, "EW_RELU_BYPASS": 1, "EW_DATA_MODE": 1,
                 "EW_CVT_TYPE": 1}


@dataclass(frozen=True)
class RocketAdd:
    nodes: list[int]
    kind: str
    input_tensor: int  # a: the main (BS) channel
    ew_tensor: int  # b: the EW channel
    output_tensor: int
    dtype: str
    h: int
    w: int
    c: int
    a_zp: int  # stored zero points
    b_zp: int
    out_zp: int
    a_scale: float
    b_scale: float
    out_scale: float

    @property
    def in_h(self) -> int:
        return self.h

    @property
    def in_w(self) -> int:
        return self.w

    @property
    def in_c(self) -> int:
        return self.c

    out_h = in_h
    out_w = in_w
    out_c = in_c


def lower_add(graph: Graph, op: Operation) -> RocketAdd:
    if op.kind != "ADD" or len(op.inputs) != 2 or len(op.outputs) != 1:
        raise LoweringError(f"{op.kind} is not a two-input ADD")
    a, b, y = (graph.tensors[t] for t in (*op.inputs, op.outputs[0]))
    if a.shape != b.shape or a.shape != y.shape or len(a.shape) != 4 or a.shape[0] != 1:
        raise LoweringError("ADD of maps of different shapes (broadcast) is not encoded on rk3568")
    # int8 maps are the stored domain itself (uint8 ones are XORed with 0x80 by the host [IAV T71]): one task for both
    if a.dtype not in ("uint8", "int8") or b.dtype != a.dtype or y.dtype != a.dtype:
        raise LoweringError("ADD is encoded for uint8 or int8 maps on rk3568")
    if a.is_constant or b.is_constant or op.inputs[0] == op.inputs[1]:
        raise LoweringError("ADD of a constant or of a tensor with itself is not encoded on rk3568")
    if str(op.options.get("activation", "NONE")) != "NONE":
        raise LoweringError("a fused activation on ADD is not encoded on rk3568")
    (sa, za), (sb, zb), (sy, zy) = (tensor_quant(t, n) for t, n in ((a, "input"), (b, "input"), (y, "output")))
    off = stored_offset(a.dtype)
    _, h, w, c = (int(d) for d in a.shape)
    return RocketAdd([op.index], "ADD", op.inputs[0], op.inputs[1], op.outputs[0], a.dtype, h, w, c, za - off,
                     zb - off, zy - off, float(sa), float(sb), float(sy))


def q14(ratio: float) -> tuple[int, int]:
    """(multiplier in [2^14, 2^15), right shift) with multiplier / 2^(14 + shift) = ratio <= 1, rounded."""
    mant, exp = math.frexp(ratio)  # ratio = mant x 2^exp, mant in [0.5, 1): mant x 2^15 / 2^(14 + shift)
    mul = math.floor(mant * (1 << 15) + 0.5)
    shift = 1 - exp
    if mul == 1 << 15:
        mul, shift = 1 << 14, shift - 1
    return mul, shift


def add_stream(rm: RegMap, p: RocketAdd) -> Stream:
    large = max(p.a_scale, p.b_scale)
    mul_a, sh_a = q14(p.a_scale / large)
    mul_b, sh_b = q14(p.b_scale / large)
    try:
        scale, shift = out_cvt(large, 2.0 ** -Q14, p.out_scale, 0)  # type: ignore[arg-type]
    except ValueError as e:
        raise EncodeError(str(e)) from e
    plane = dpu_plane(p.h, p.w) * ATOM
    e = Emitter(rm)
    try:
        e("DPU_S_POINTER", **S_POINTER)
        e("DPU_RDMA_S_POINTER", **S_POINTER)
        e("DPU_FEATURE_MODE_CFG", FLYING_MODE=1, CONV_MODE=1, BURST_LEN=8)  # 0x109
        e("DPU_DATA_FORMAT", BS_MUL_SHIFT_VALUE_NEG=sh_a)
        e("DPU_OFFSET_PEND")
        e.addr("DPU_DST_BASE_ADDR", ROLE_OUTPUT, 0)
        e("DPU_DST_SURF_STRIDE", DST_SURF_STRIDE_BYTES=plane)
        e("DPU_DATA_CUBE_WIDTH", WIDTH_M1=p.w - 1)
        e("DPU_DATA_CUBE_HEIGHT", HEIGHT_M1=p.h - 1)
        e("DPU_DATA_CUBE_NOTCH_ADDR")
        e("DPU_DATA_CUBE_CHANNEL", CHANNEL_M1=p.c - 1, ORIG_CHANNEL_M1=p.c - 1)
        e("DPU_BS_CFG", BS_BIT3=1, BS_RELU_BYPASS=1)  # 0x48: ALU (register operand) and multiplier on
        e("DPU_BS_ALU_CFG", BS_ALU_OPERAND=-p.a_zp)
        e("DPU_BS_MUL_CFG", BS_MUL_SHIFT_VALUE=sh_a, BS_MUL_OPERAND=mul_a)
        e("DPU_BS_RELUX_CMP_VALUE")
        e("DPU_BS_OW_CFG", OD_BYPASS=1)
        e("DPU_BS_OW_OP")
        e("DPU_BN_CFG", BN_BYPASS=1, BN_ALU_BYPASS=1, BN_MUL_BYPASS=1, BN_RELU_BYPASS=1)
        e("DPU_BN_ALU_CFG")
        e("DPU_BN_MUL_CFG")
        e("DPU_BN_RELUX_CMP_VALUE")
        e("DPU_EW_CFG", **EW_ADD_FIELDS)
        e("DPU_EW_CVT_OFFSET_VALUE", EW_OP_CVT_OFFSET=-p.b_zp)
        e("DPU_EW_CVT_SCALE_VALUE", EW_OP_CVT_SCALE=mul_b, EW_OP_CVT_SHIFT=sh_b)
        e("DPU_EW_RELUX_CMP_VALUE")
        e("DPU_OUT_CVT_OFFSET", OUT_CVT_OFFSET=p.out_zp)
        e("DPU_OUT_CVT_SCALE", OUT_CVT_SCALE=scale)
        e("DPU_OUT_CVT_SHIFT", OUT_CVT_SHIFT=shift)
        for i in range(8):
            e(f"DPU_EW_OP_VALUE_{i}")
        e("DPU_SURFACE_ADD", SURF_ADD_BYTES=plane)
        e("DPU_UNDOC_40C4")
        for r in rm.registers:
            if r.unit == "DPU" and r.offset >= 0x4100:
                e(r.full_name)
        e("DPU_RDMA_DATA_CUBE_WIDTH", WIDTH_M1=p.w - 1)
        e("DPU_RDMA_DATA_CUBE_HEIGHT", HEIGHT_M1=p.h - 1)
        e("DPU_RDMA_DATA_CUBE_CHANNEL", CHANNEL_M1=p.c - 1)
        e.addr("DPU_RDMA_SRC_BASE_ADDR", ROLE_INPUT, 0)
        e("DPU_RDMA_BRDMA_CFG", BRDMA_DISABLE=1)
        e("DPU_RDMA_BS_BASE_ADDR")
        e("DPU_RDMA_BS_LENGTH")
        e("DPU_RDMA_NRDMA_CFG", NRDMA_DISABLE=1)
        e("DPU_RDMA_BN_BASE_ADDR")
        e("DPU_RDMA_UNDOC_5030")
        e("DPU_RDMA_ERDMA_CFG", ERDMA_DATA_MODE=1)
        e.addr("DPU_RDMA_EW_BASE_ADDR", ROLE_EW, 0)
        e("DPU_RDMA_UNDOC_503C", VALUE=plane - ATOM)
        e("DPU_RDMA_EW_SURF_STRIDE", EW_SURF_STRIDE_BYTES=plane)
        e("DPU_RDMA_FEATURE_MODE_CFG", FLYING_MODE=1, BURST_LEN=8)
        e("DPU_RDMA_SRC_DMA_CFG")
        # the main read's surface pitch is W x H x 8 + SURF_NOTCH: a's align4 plane [MAP §2; IAV T55; TOOLKIT 7x7: 0x18]
        e("DPU_RDMA_SURF_NOTCH", SURF_NOTCH_BYTES=plane - p.w * p.h * ATOM)
        e("DPU_RDMA_PAD_CFG")
        e("DPU_RDMA_WEIGHT", M_WEIGHT=1, B_WEIGHT=1, N_WEIGHT=1, E_WEIGHT=1)
        e.s.words += [0, rm.word("PC_REGISTER_AMOUNTS", PC_DATA_AMOUNT=0), rm.special_word("SYNC"),
                      rm.special_word("OP_ENABLE", **OP_ENABLE_DPU)]
    except RegMapError as err:
        raise EncodeError(f"register limit: {err}") from err
    return e.s
