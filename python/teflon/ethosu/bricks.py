"""The order in which the Ethos-U55/U65 weight decoder hands weights to the MAC array ("bricks").

docs/hardware/ethosu-weights.md §3. A compressed weight stream (teflon.ethosu.mlw) decodes to a flat sequence
of values; this module maps that sequence to and from the OHWI weights of one CONV_2D, DEPTHWISE_CONV_2D or
FULLY_CONNECTED kick-off. The order depends only on the kick-off's geometry (`BrickGeometry`), which the command
stream carries: OFM depth, IFM depth, kernel size, dilation, OFM block depth, the weight order bit of
NPU_SET_KERNEL_STRIDE and the IFM precision. Stride plays no part on U55/U65.

`brick_index(geom)` is the whole mapping: for each position of the decoded sequence, the flat OHWI index of the
weight it carries, or -1 for a padding zero. `reorder` and `unorder` apply it both ways.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

# Micro-block depths of Ethos-U65-256 (and U55-256): 8 OFM and 8 IFM channels. Vela 5.2.0
# ethosu/vela/architecture_features.py accelerator_configs (ofm_ublock / ifm_ublock Block(2, 2, 8)).
OFM_UBLOCK_DEPTH = 8
IFM_UBLOCK_DEPTH = 8
# Sub-kernels are at most 8x8 taps (halved per dilated axis). Vela architecture_features.py SubKernelMax and
# weight_compressor.py encode_weights (decomp = SubKernelMax // dilation).
SUBKERNEL_MAX = 8


@dataclass(frozen=True)
class BrickGeometry:
    """What the weight order of one kick-off depends on.

    kind             "conv" (CONV_2D and FULLY_CONNECTED, the latter as a 1x1 convolution) or "depthwise"
    ofm_depth        output channels of the kick-off (NPU_SET_OFM_DEPTH_M1 + 1)
    ifm_depth        input channels (NPU_SET_IFM_DEPTH_M1 + 1; depthwise: ignored, one weight per channel)
    kernel_h/_w      kernel taps (un-dilated: NPU_SET_KERNEL_*_M1 / dilation + 1)
    ofm_block_depth  NPU_SET_OFM_BLK_DEPTH_M1 + 1
    part_kernel      NPU_SET_KERNEL_STRIDE bit 2 (weight_order: 0 depth first, 1 part-kernel first)
    dilation         (y, x), 1 or 2 each (NPU_SET_KERNEL_STRIDE bits 4 and 3)
    ifm_bits         8 or 16 (NPU_SET_IFM_PRECISION)
    """

    kind: Literal["conv", "depthwise"]
    ofm_depth: int
    ifm_depth: int
    kernel_h: int
    kernel_w: int
    ofm_block_depth: int
    part_kernel: bool = False
    dilation: tuple[int, int] = (1, 1)
    ifm_bits: int = 8

    @property
    def weights_shape(self) -> tuple[int, int, int, int]:
        """OHWI shape of the weights (depthwise: I = 1, the channel is O)."""
        ifm = 1 if self.kind == "depthwise" else self.ifm_depth
        return (self.ofm_depth, self.kernel_h, self.kernel_w, ifm)

    @property
    def ifm_block_depth(self) -> int:
        """IFM channels per brick: 16 part-kernel-first or 16-bit, else 32 [§3.2]."""
        return 16 if (self.part_kernel or self.ifm_bits == 16) else 32

    @property
    def tap_round(self) -> int:
        """Sub-kernel taps are padded to a multiple of this [§3.3]."""
        if self.kind == "depthwise":
            return 4
        if self.part_kernel:
            return 2 if self.ifm_bits == 16 else 4
        return 1


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _brick(g: BrickGeometry, o0: int, ofm_len: int, i0: int, sy: int, sx: int) -> np.ndarray:
    """Flat OHWI indices (-1 = padding) of one brick: an OFM block at o0 of ofm_len channels, the IFM block at i0,
    the sub-kernel whose top-left tap is (sy, sx). Axis order, outermost first, is the decoder's [§3.1]."""
    dy, dx = SUBKERNEL_MAX // g.dilation[0], SUBKERNEL_MAX // g.dilation[1]
    sub_h, sub_w = min(g.kernel_h - sy, dy), min(g.kernel_w - sx, dx)
    taps = _ceil_div(sub_h * sub_w, g.tap_round) * g.tap_round
    depthwise = g.kind == "depthwise"
    if depthwise:
        ifm_len = IFM_UBLOCK_DEPTH  # one IFM micro-block, one element deep: i is 0
    elif g.part_kernel:
        ifm_len = min(g.ifm_block_depth, g.ifm_depth - i0)
    else:
        ifm_len = g.ifm_block_depth  # depth-first walks the whole IFM block, padding past the IFM depth
    outer = _ceil_div(ifm_len, IFM_UBLOCK_DEPTH) if g.part_kernel else 1
    inner = 1 if g.part_kernel else _ceil_div(ifm_len, IFM_UBLOCK_DEPTH)
    n_ou = _ceil_div(ofm_len, OFM_UBLOCK_DEPTH)
    iz_len = 1 if depthwise else IFM_UBLOCK_DEPTH

    # axes: ifm outer ublock, ofm ublock, tap, ifm inner ublock, ofm in ublock, ifm in ublock
    iuo = np.arange(outer).reshape(-1, 1, 1, 1, 1, 1) * IFM_UBLOCK_DEPTH
    ou = np.arange(n_ou).reshape(1, -1, 1, 1, 1, 1) * OFM_UBLOCK_DEPTH
    tap = np.arange(taps).reshape(1, 1, -1, 1, 1, 1)
    iui = np.arange(inner).reshape(1, 1, 1, -1, 1, 1) * IFM_UBLOCK_DEPTH
    oz = np.arange(OFM_UBLOCK_DEPTH).reshape(1, 1, 1, 1, -1, 1)
    iz = np.arange(iz_len).reshape(1, 1, 1, 1, 1, -1)
    ky, kx = tap // sub_w, tap % sub_w
    o = o0 + ou + oz
    i = (i0 + iuo + iui + iz) if not depthwise else np.zeros_like(iz)
    ifm = 1 if depthwise else g.ifm_depth
    valid = (o < g.ofm_depth) & (i < ifm) & (ky < sub_h)
    flat = ((o * g.kernel_h + sy + ky) * g.kernel_w + sx + kx) * ifm + i
    return np.where(valid, flat, -1).reshape(-1)


def brick_index(g: BrickGeometry) -> np.ndarray:
    """For each decoded value of the kick-off's weight stream, the flat OHWI weight index it carries, or -1 for
    a padding zero (int64). The length is the number of values the stream must decode to."""
    if g.kind == "depthwise" and g.part_kernel:
        raise ValueError("depthwise weights have no part-kernel-first order")
    dy, dx = SUBKERNEL_MAX // g.dilation[0], SUBKERNEL_MAX // g.dilation[1]
    ifm_stop = 1 if g.kind == "depthwise" else g.ifm_depth
    parts = []
    # The block loops run a handful of times per kick-off; every weight is placed by the vectorised _brick.
    for o0 in range(0, g.ofm_depth, g.ofm_block_depth):
        ofm_len = min(g.ofm_block_depth, g.ofm_depth - o0)
        for i0 in range(0, ifm_stop, g.ifm_block_depth):
            for sy in range(0, g.kernel_h, dy):
                for sx in range(0, g.kernel_w, dx):
                    parts.append(_brick(g, o0, ofm_len, i0, sy, sx))
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)


def reorder(weights: np.ndarray, g: BrickGeometry) -> np.ndarray:
    """OHWI weights (already minus their zero point, -255..255) -> the int16 value sequence to encode."""
    w = np.asarray(weights)
    if w.shape != g.weights_shape:
        raise ValueError(f"weights shape {w.shape}, geometry wants {g.weights_shape}")
    idx = brick_index(g)
    flat = w.reshape(-1).astype(np.int16)
    return np.where(idx >= 0, flat[np.maximum(idx, 0)], 0).astype(np.int16)


def unorder(values: np.ndarray, g: BrickGeometry) -> np.ndarray:
    """The decoded value sequence -> int16 OHWI weights (the inverse of `reorder`; padding is dropped)."""
    idx = brick_index(g)
    v = np.asarray(values)
    if v.shape != idx.shape:
        raise ValueError(f"{v.size} values, the geometry's bricks hold {idx.size}")
    out = np.zeros(int(np.prod(g.weights_shape)), dtype=np.int16)
    keep = idx >= 0
    out[idx[keep]] = v[keep]
    return out.reshape(g.weights_shape)
