"""The RK3568 PPU pooling task (docs/hardware/rk3568.md §3 "Pooling"): 29 register words and the 4-word trailer with
op-enable 0x60 (PPU | PPU_RDMA), in the vendor's order [GOLD: every max/average pool task; IAV T60-T62].

The PPU_RDMA reads the input cube from memory (flying mode), the PPU writes the output: channel counts are the real
ones minus one, strides raw bytes of 8-channel planes, both planes align4(W x H) atoms. Max pooling pads with -128
in the four padding-value registers, average pooling with (j + 1) x the stored zero point, RECIP_KERNEL =
floor(65536 / k) [GOLD; IAV T60]. Only windows inside the input are written: a window not covered by input and
padding stalls the chain [IAV T62], so padded pools are refused here until the padding fields are pinned down.
"""

from __future__ import annotations

from ...hw.regmap import RegMap, RegMapError
from ..operations import RocketPool
from ..stream import ROLE_INPUT, ROLE_OUTPUT, Emitter, EncodeError, Stream
from .layout import ATOM, dpu_plane
from .stream import S_POINTER

OP_ENABLE_PPU = {"PPU_EN": 1, "PPU_RDMA_EN": 1}  # 0x60 [GOLD]
POOL_MAX, POOL_AVERAGE = 1, 0  # OPERATION_MODE_CFG.POOLING_METHOD [TRM; GOLD 0x11 / 0x10]
FROM_MEMORY = 1  # OPERATION_MODE_CFG.FLYING_MODE [IAV T60: bit 4 "flying"; GOLD]
MISC_BURST_LEN = 3  # PPU MISC_CTRL [GOLD]
PAD_VALUES = 4  # PADDING_VALUE_1..4_CFG [GOLD]
MAX_PAD = -128


def pool_stream(rm: RegMap, p: RocketPool) -> Stream:
    """The pool's one task, ending the chain; raises EncodeError."""
    if p.pad_top or p.pad_left or p.pad_bottom or p.pad_right:
        raise EncodeError("padded pools are not encoded on rk3568 yet (POOLING_PADDING_CFG unverified; an uncovered "
                          "window stalls the chain)")
    if p.kh > 8 or p.kw > 8 or p.sh > 16 or p.sw > 16:
        raise EncodeError(f"pool window {p.kh}x{p.kw} s{p.sh}x{p.sw} beyond the PPU's fields")
    e = Emitter(rm)
    in_plane = dpu_plane(p.in_h, p.in_w) * ATOM
    # the cube the windows read: a VALID pool's unused last rows and columns are left out [GOLD: 13x13 k3 s1 and
    # 32x32 k2 s2 read everything; TOOLKIT, built here: rknn-toolkit2 2.5.0 target rk3566, model
    # maxpool-in28x28x32-k3-s2-valid: a 27x27 cube]
    rows, cols = min(p.in_h, (p.out_h - 1) * p.sh + p.kh), min(p.in_w, (p.out_w - 1) * p.sw + p.kw)
    out_plane = dpu_plane(p.out_h, p.out_w) * ATOM
    try:
        e("PPU_S_POINTER", **S_POINTER)
        e("PPU_RDMA_S_POINTER", **S_POINTER)
        e("PPU_DATA_CUBE_IN_WIDTH", CUBE_IN_WIDTH=cols - 1)
        e("PPU_DATA_CUBE_IN_HEIGHT", CUBE_IN_HEIGHT=rows - 1)
        e("PPU_DATA_CUBE_IN_CHANNEL", CUBE_IN_CHANNEL=p.in_c - 1)
        e("PPU_DATA_CUBE_OUT_WIDTH", CUBE_OUT_WIDTH=p.out_w - 1)
        e("PPU_DATA_CUBE_OUT_HEIGHT", CUBE_OUT_HEIGHT=p.out_h - 1)
        e("PPU_DATA_CUBE_OUT_CHANNEL", CUBE_OUT_CHANNEL=p.in_c - 1)
        e("PPU_OPERATION_MODE_CFG", POOLING_METHOD=POOL_AVERAGE if p.average else POOL_MAX, FLYING_MODE=FROM_MEMORY)
        e("PPU_POOLING_KERNEL_CFG", KERNEL_WIDTH=p.kw - 1, KERNEL_HEIGHT=p.kh - 1, KERNEL_STRIDE_WIDTH=p.sw - 1,
          KERNEL_STRIDE_HEIGHT=p.sh - 1)
        e("PPU_RECIP_KERNEL_WIDTH", RECIP_KERNEL_WIDTH=(1 << 16) // p.kw if p.average else 0)
        e("PPU_RECIP_KERNEL_HEIGHT", RECIP_KERNEL_HEIGHT=(1 << 16) // p.kh if p.average else 0)
        e("PPU_POOLING_PADDING_CFG")
        for j in range(PAD_VALUES):
            e(f"PPU_PADDING_VALUE_{j + 1}_CFG", **{f"PAD_VALUE_{j + 1}X": (j + 1) * p.in_zp if p.average else MAX_PAD})
        e.addr("PPU_DST_BASE_ADDR", ROLE_OUTPUT, 0)
        e("PPU_DST_SURF_STRIDE", DST_SURF_STRIDE=out_plane >> 4)  # RK3588 field at bit 4: the word holds bytes
        e("PPU_DATA_FORMAT", INDEX_ADD=out_plane >> 4)
        e("PPU_MISC_CTRL", BURST_LEN=MISC_BURST_LEN)
        e("PPU_RDMA_CUBE_IN_WIDTH", CUBE_IN_WIDTH=cols - 1)
        e("PPU_RDMA_CUBE_IN_HEIGHT", CUBE_IN_HEIGHT=rows - 1)
        e("PPU_RDMA_CUBE_IN_CHANNEL", CUBE_IN_CHANNEL=p.in_c - 1)
        e("PPU_RDMA_UNDOC_7018", VALUE=1)
        e.addr("PPU_RDMA_SRC_BASE_ADDR", ROLE_INPUT, 0)
        e("PPU_RDMA_SRC_LINE_STRIDE", SRC_LINE_STRIDE_BYTES=p.in_w * ATOM)
        e("PPU_RDMA_SRC_SURF_STRIDE", SRC_SURF_STRIDE_BYTES=in_plane)
        e("PPU_RDMA_DATA_FORMAT")
        e.s.words += [0, rm.word("PC_REGISTER_AMOUNTS", PC_DATA_AMOUNT=0), rm.special_word("SYNC"),
                      rm.special_word("OP_ENABLE", **OP_ENABLE_PPU)]
    except RegMapError as err:
        raise EncodeError(f"register limit: {err}") from err
    return e.s
