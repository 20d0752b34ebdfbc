"""The order in which the Ethos-U55/U65 weight decoder hands weights to the MAC array ("bricks").

docs/hardware/ethosu-weights.md §3. A compressed weight stream (teflon.ethosu.mlw) decodes to a flat sequence
of values; this module maps that sequence to and from the OHWI weights of one CONV_2D, DEPTHWISE_CONV_2D or
FULLY_CONNECTED kick-off. The order depends only on the kick-off's geometry (`BrickGeometry`), which the command
stream carries: OFM depth, IFM depth, kernel size, dilation, OFM block depth, the weight order bit of
NPU_SET_KERNEL_STRIDE and the IFM precision. Stride plays no part on U55/U65.

`brick_index(geom)` is the whole mapping: for each position of the decoded sequence, the flat OHWI index of the
weight it carries, or -1 for a padding zero. `unorder` applies it; `reorder`, on the compile's path, is written
by libteflon.so in one pass (teflon.native.ethosu_brick_order) and tested against `reorder_reference`, the same
mapping through `brick_index`.
"""

from __future__ import annotations

import functools
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


def _brick_rel(g: BrickGeometry, ofm_len: int, ifm_len: int, sy: int, sx: int
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One brick's (OFM channel, IFM channel, flat OHWI index) of each value relative to its OFM block start o0
    and IFM block start i0, flattened in the decoder's axis order [§3.1]; the tap rows past the sub-kernel get an
    OFM channel no block reaches (so `_brick` marks them padding)."""
    dy, dx = SUBKERNEL_MAX // g.dilation[0], SUBKERNEL_MAX // g.dilation[1]
    sub_h, sub_w = min(g.kernel_h - sy, dy), min(g.kernel_w - sx, dx)
    taps = _ceil_div(sub_h * sub_w, g.tap_round) * g.tap_round
    depthwise = g.kind == "depthwise"
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
    o = ou + oz
    i = (iuo + iui + iz) if not depthwise else np.zeros_like(iz)
    ifm = 1 if depthwise else g.ifm_depth
    flat = ((o * g.kernel_h + sy + ky) * g.kernel_w + sx + kx) * ifm + i
    shape = flat.shape
    o = np.where(ky < sub_h, o, g.ofm_depth)
    return (np.broadcast_to(o, shape).reshape(-1), np.broadcast_to(i, shape).reshape(-1), flat.reshape(-1))


def _brick(g: BrickGeometry, rel: tuple[np.ndarray, np.ndarray, np.ndarray], o0: int, i0: int) -> np.ndarray:
    """Flat OHWI indices (-1 = padding) of one brick (`_brick_rel`) of the OFM block at o0 and IFM block at i0."""
    o, i, flat = rel
    ifm = 1 if g.kind == "depthwise" else g.ifm_depth
    valid = (o < g.ofm_depth - o0) & (i < ifm - i0)
    return np.where(valid, flat + ((o0 * g.kernel_h * g.kernel_w) * ifm + i0), -1)


@functools.lru_cache(maxsize=4)  # a network repeats a layer's geometry a few kick-offs later (MobileNetV2's blocks)
def brick_index(g: BrickGeometry) -> np.ndarray:
    """For each decoded value of the kick-off's weight stream, the flat OHWI weight index it carries, or -1 for
    a padding zero (int64, read-only: shared by the cache). The length is the number of values the stream must
    decode to."""
    if g.kind == "depthwise" and g.part_kernel:
        raise ValueError("depthwise weights have no part-kernel-first order")
    dy, dx = SUBKERNEL_MAX // g.dilation[0], SUBKERNEL_MAX // g.dilation[1]
    depthwise = g.kind == "depthwise"
    ifm_stop = 1 if depthwise else g.ifm_depth
    rels: dict[tuple[int, int, int, int], tuple[np.ndarray, np.ndarray, np.ndarray]] = {}

    def block(o0: int) -> np.ndarray:
        """The values of the OFM block at o0: its IFM blocks and sub-kernels in order, each placed by the
        vectorised _brick, the brick's shape computed once per (block sizes, sub-kernel)."""
        ofm_len = min(g.ofm_block_depth, g.ofm_depth - o0)
        parts = []
        for i0 in range(0, ifm_stop, g.ifm_block_depth):
            if depthwise:
                ifm_len = IFM_UBLOCK_DEPTH  # one IFM micro-block, one element deep: i is 0
            elif g.part_kernel:
                ifm_len = min(g.ifm_block_depth, g.ifm_depth - i0)
            else:
                ifm_len = g.ifm_block_depth  # depth-first walks the whole IFM block, padding past the IFM depth
            for sy in range(0, g.kernel_h, dy):
                for sx in range(0, g.kernel_w, dx):
                    key = (ofm_len, ifm_len, sy, sx)
                    rel = rels.get(key)
                    if rel is None:
                        rel = rels[key] = _brick_rel(g, ofm_len, ifm_len, sy, sx)
                    parts.append(_brick(g, rel, o0, i0))
        return np.concatenate(parts)

    if g.ofm_depth == 0:
        return np.zeros(0, dtype=np.int64)
    # Full OFM blocks of whole micro-blocks differ only by their OFM offset (their padding is the same: taps past
    # the sub-kernel, IFM channels past the depth): the first one's indices, shifted, are every one's.
    full = g.ofm_depth // g.ofm_block_depth if g.ofm_block_depth % OFM_UBLOCK_DEPTH == 0 else 0
    parts = []
    if full:
        first = block(0)
        step = g.ofm_block_depth * g.kernel_h * g.kernel_w * (1 if depthwise else g.ifm_depth)
        shifts = step * np.arange(full, dtype=np.int64).reshape(-1, 1)
        parts.append(np.where(first >= 0, first + shifts, -1).reshape(-1))
    parts += [block(o0) for o0 in range(full * g.ofm_block_depth, g.ofm_depth, g.ofm_block_depth)]
    index = np.concatenate(parts)
    index.flags.writeable = False
    return index


def reorder(weights: np.ndarray, g: BrickGeometry) -> np.ndarray:
    """OHWI weights (already minus their zero point, -255..255) -> the int16 value sequence to encode."""
    w = np.asarray(weights)
    if w.shape != g.weights_shape:
        raise ValueError(f"weights shape {w.shape}, geometry wants {g.weights_shape}")
    if g.kind == "depthwise" and g.part_kernel:
        raise ValueError("depthwise weights have no part-kernel-first order")
    from teflon.native import ethosu_brick_order

    return ethosu_brick_order(w, g.kind == "depthwise", g.part_kernel, g.ofm_depth, g.ifm_depth,
                              (g.kernel_h, g.kernel_w), g.ofm_block_depth, g.ifm_block_depth,
                              (SUBKERNEL_MAX // g.dilation[0], SUBKERNEL_MAX // g.dilation[1]), g.tap_round)


def reorder_reference(weights: np.ndarray, g: BrickGeometry) -> np.ndarray:
    """`reorder` through `brick_index` (the reference of the library's brick order)."""
    w = np.asarray(weights)
    flat = np.zeros(w.size + 1, dtype=np.int16)  # a zero after the weights: index -1, a padding zero, reads it
    flat[:-1] = w.reshape(-1)
    return flat[brick_index(g)]


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
