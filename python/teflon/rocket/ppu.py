"""The PPU pooling task both rocket generations emit: PPU + PPU_RDMA registers in the vendor's order, then the
generation's trailer with op-enable 0x60 (PPU | PPU_RDMA). Register semantics: docs/hardware/rocket.md,
"Pooling (PPU)"; the RK3576 vendor program has the same 31 words (../shared/golden/rocket-rk3576-ops §5).

A pool is one task: the PPU_RDMA reads the input cube (NC1HWC2, 16-byte atoms) from memory ("flying" mode),
the PPU writes the output cube. Addresses are relocations (roles input/output), as for the convolutions.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..hw.regmap import RegMap, RegMapError
from .geometry import FEATURE_ATOM, align
from .operations import RocketPool
from .stream import ROLE_INPUT, ROLE_OUTPUT, Emitter, EncodeError, Stream

POOL_MAX, POOL_AVERAGE = 1, 0  # OPERATION_MODE_CFG.POOLING_METHOD [TRM]
FROM_MEMORY = 1  # OPERATION_MODE_CFG.FLYING_MODE: the cube comes from outside (PPU_RDMA), not the DPU [TRM]
RDMA_8BIT = 1  # PPU_RDMA DATA_FORMAT.IN_PRECISION: 8-bit [TRM enum]
MAX_PAD_VALUE = -128  # the vendor's padding value for max pooling: the smallest int8 never wins a max

PadRegisters = Sequence[tuple[str, dict[str, int]]]


def channels_m1(p: RocketPool) -> int:
    """CUBE_*_CHANNEL: the channels rounded up to whole 16-channel atoms, minus one [VENDOR 0x6014]."""
    return align(p.in_c, FEATURE_ATOM) - 1


def pool_stream(rm: RegMap, p: RocketPool, in_plane: int, out_plane: int, pad_regs: PadRegisters,
                trailer: list[int], swap_pad_xy: bool = False) -> Stream:
    """The task's words; `in_plane` / `out_plane` are the tensors' channel-plane pitches in 16-byte atoms,
    `pad_regs` the generation's padding-value writes, `trailer` its 4 trailer words (op-enable 0x60);
    `swap_pad_xy`: POOLING_PADDING_CFG's x and y swapped within each pair against the register table's names (a
    proved RK3576 order, board-facts.md fact 4)."""
    e = Emitter(rm)
    pp = {"POINTER_PP_EN": 1, "EXECUTER_PP_EN": 1, "POINTER_PP_MODE": 1}
    cin = {"CUBE_IN_WIDTH": p.consumed_w - 1, "CUBE_IN_HEIGHT": p.consumed_h - 1}
    ch = channels_m1(p)
    try:
        e("PPU_S_POINTER", **pp)
        e("PPU_RDMA_S_POINTER", **pp)
        e("PPU_DATA_CUBE_IN_WIDTH", CUBE_IN_WIDTH=cin["CUBE_IN_WIDTH"])
        e("PPU_DATA_CUBE_IN_HEIGHT", CUBE_IN_HEIGHT=cin["CUBE_IN_HEIGHT"])
        e("PPU_DATA_CUBE_IN_CHANNEL", CUBE_IN_CHANNEL=ch)
        e("PPU_DATA_CUBE_OUT_WIDTH", CUBE_OUT_WIDTH=p.out_w - 1)
        e("PPU_DATA_CUBE_OUT_HEIGHT", CUBE_OUT_HEIGHT=p.out_h - 1)
        e("PPU_DATA_CUBE_OUT_CHANNEL", CUBE_OUT_CHANNEL=ch)
        e("PPU_OPERATION_MODE_CFG", POOLING_METHOD=POOL_AVERAGE if p.average else POOL_MAX, FLYING_MODE=FROM_MEMORY)
        e("PPU_POOLING_KERNEL_CFG", KERNEL_WIDTH=p.kw - 1, KERNEL_HEIGHT=p.kh - 1, KERNEL_STRIDE_WIDTH=p.sw - 1,
          KERNEL_STRIDE_HEIGHT=p.sh - 1)
        e("PPU_RECIP_KERNEL_WIDTH", RECIP_KERNEL_WIDTH=p.recip_w)
        e("PPU_RECIP_KERNEL_HEIGHT", RECIP_KERNEL_HEIGHT=p.recip_h)
        x0, y0, x1, y1 = (p.pad_top, p.pad_left, p.pad_bottom, p.pad_right) if swap_pad_xy else \
            (p.pad_left, p.pad_top, p.pad_right, p.pad_bottom)
        e("PPU_POOLING_PADDING_CFG", PAD_LEFT=x0, PAD_TOP=y0, PAD_RIGHT=x1, PAD_BOTTOM=y1)
        for reg, fields in pad_regs:
            e(reg, **fields)
        e.addr("PPU_DST_BASE_ADDR", ROLE_OUTPUT, 0)
        e("PPU_DST_SURF_STRIDE", DST_SURF_STRIDE=out_plane)
        e("PPU_DATA_FORMAT", INDEX_ADD=out_plane)  # TRM: equals the surface stride without INDEX_EN
        e("PPU_MISC_CTRL")
        e("PPU_RDMA_CUBE_IN_WIDTH", CUBE_IN_WIDTH=cin["CUBE_IN_WIDTH"])
        e("PPU_RDMA_CUBE_IN_HEIGHT", CUBE_IN_HEIGHT=cin["CUBE_IN_HEIGHT"])
        e("PPU_RDMA_CUBE_IN_CHANNEL", CUBE_IN_CHANNEL=ch)
        e.addr("PPU_RDMA_SRC_BASE_ADDR", ROLE_INPUT, 0)
        e("PPU_RDMA_SRC_LINE_STRIDE", SRC_LINE_STRIDE=p.in_w)
        e("PPU_RDMA_SRC_SURF_STRIDE", SRC_SURF_STRIDE=in_plane)
        e("PPU_RDMA_DATA_FORMAT", IN_PRECISION=RDMA_8BIT)
    except RegMapError as err:
        raise EncodeError(f"register limit: {err}") from err
    e.s.words += trailer
    return e.s


def pool_info(p: RocketPool, in_plane: int, out_plane: int) -> dict[str, object]:
    return {
        "method": "average" if p.average else "max",
        "kernel": [p.kh, p.kw],
        "stride": [p.sh, p.sw],
        "pads": {"top": p.pad_top, "left": p.pad_left, "bottom": p.pad_bottom, "right": p.pad_right},
        "recip": [p.recip_w, p.recip_h],
        "input_tensor": p.input_tensor,
        "output_tensor": p.output_tensor,
        "planes": [in_plane, out_plane],
    }
