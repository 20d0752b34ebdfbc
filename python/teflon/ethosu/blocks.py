"""Ethos-U65-256 block configuration and SHRAM layout: which OFM block an operation runs in and where the input
buffers and accumulators sit in the shared buffer (IB_END, IFM2_IB_START, AB_START).

The NPU computes an OFM block (H x W x C) at a time out of an IFM block held in SHRAM; the block must fit SHRAM
next to its accumulators. The architecture numbers (48 banks of 1 KB, 2 reserved at each end, 2x2x8 micro-blocks,
bank granules, 32x64x128 largest block, 8x8 sub-kernel) are the U65-256 row of Vela 5.2.0's
`architecture_features.py`. The layout arithmetic and the cost-ranked search follow Regor's
`ArchEthosU55::FindBlockConfig` / `TryBlockConfig` / `ChooseKernelMethod` (Vela's C++ core, read as the fact
source; written anew here), float32 rounding included: the sweeps in tests/ethos_u/test_vela_compat.py check the
choices against Vela's compiles (docs/hardware/ethosu-compiler.md, "Block configuration").
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

# U65-256 (Vela architecture_features.py, accelerator_configs[Ethos_U65_256] and the SHRAM constants)
BANK_BYTES = 1024
TOTAL_BANKS = 48
RESERVED_OUTPUT_BANKS = 2
RESERVED_END_BANKS = 2  # the top banks, kept for the LUT
UBLOCK = (2, 2, 8)  # OFM/IFM micro-block (h, w, c)
BLOCK_MAX = (32, 64, 128)  # largest OFM block (h, w, c)
SUBKERNEL_MAX = (8, 8)  # (h, w)
SPLIT_DEPTH = 16  # OFM block depths are tried in steps that round up to this when below the OFM depth
IFM_GRANULE = {8: 8, 16: 8, 32: 16}  # banks, IFM of a convolution / pooling, by IFM bits
IFM_EW_GRANULE = {8: 8, 16: 8, 32: 16}  # banks, IFMs of an elementwise operation
ACC_GRANULE = {16: 8, 32: 16, 40: 20}  # banks, by accumulator bits

KIND_CONV, KIND_DEPTHWISE, KIND_POOL, KIND_ELEMENTWISE = "conv", "depthwise", "pool", "elementwise"


def _round_up(v: int, m: int) -> int:
    return -(-v // m) * m


def _div_up(v: int, m: int) -> int:
    return -(-v // m)


@dataclass(frozen=True)
class Layout:
    """The SHRAM layout of a block: IB_END, IFM2_IB_START and AB_START, in banks."""

    ib_end: int
    ib2_start: int
    ab_start: int


@dataclass(frozen=True)
class BlockConfig:
    """An operation's OFM block, the IFM block it reads, their SHRAM layout and the weight order."""

    ofm: tuple[int, int, int]  # (h, w, c)
    ifm: tuple[int, int, int]
    layout: Layout
    part_kernel: bool  # weight order: part-kernel-first (else depth-first)
    acc_bits: int = 32


@dataclass(frozen=True)
class OpGeometry:
    """What the block search of one operation depends on."""

    kind: str
    ifm: tuple[int, int, int]  # (h, w, c), the larger IFM for an elementwise op
    ofm: tuple[int, int, int]
    kernel: tuple[int, int] = (1, 1)  # (h, w)
    stride: tuple[int, int] = (1, 1)
    ifm_bits: int = 8
    scalar: bool = False  # elementwise with a scalar second operand
    upscale: bool = False  # the IFM is read through IFM_UPSCALE (x2): each IFM row and column covers two OFM ones


def part_kernel_first(ifm_depth: int, kernel: tuple[int, int], ifm_bits: int = 8) -> bool:
    """Part-kernel-first traversal when it uses the MACs at least as well as depth-first: depth-first pads the IFM
    depth to 32 (8-bit) per pass, part-kernel pads the depth to 8 and the kernel taps to 4 (Regor
    ChooseKernelMethod, in double; a tie goes to part-kernel-first)."""
    if ifm_depth <= 8:
        return True
    taps = kernel[0] * kernel[1]
    depth_use = ifm_depth / _round_up(ifm_depth, 32 if ifm_bits == 8 else 16)
    part_use = (ifm_depth / _round_up(ifm_depth, 8)) * (taps / _round_up(taps, 4 if ifm_bits == 8 else 2))
    return part_use >= depth_use


def _ifm_block_depth(ifm_depth: int, ifm_bits: int, part_kernel: bool) -> int:
    if ifm_bits == 16:
        return _round_up(min(ifm_depth, 16), 4)
    return _round_up(min(ifm_depth, 16 if part_kernel else 32), UBLOCK[2])


def _depths(g: OpGeometry, space: tuple[int, int, int]) -> list[int]:
    """The OFM block depths `find` tries, in order."""
    depths = []
    depth = max(UBLOCK[2], min(space[2], SPLIT_DEPTH))
    if depth < g.ofm[2]:
        depth = _round_up(depth, SPLIT_DEPTH)
    while depth <= space[2]:
        depths.append(depth)
        depth += UBLOCK[2]
        if depth < g.ofm[2]:
            depth = _round_up(depth, SPLIT_DEPTH)
    return depths


def _up(v: np.ndarray, m: int) -> np.ndarray:
    return -(-v // m) * m


@functools.lru_cache(maxsize=1024)  # support and lowering ask for each node, and models repeat geometries
def find(g: OpGeometry) -> BlockConfig | None:
    """The cheapest OFM block by (IFM + weight fetches) per OFM element (elementwise: by OFM elements per block),
    halved when the IFM fits twice in the block; on a tie the later candidate wins only among blocks of at most 4x4
    that cover at least as much IFM. Costs are float32 products in Regor's order (FindBlockConfig): ties decide
    the block, so the rounding has to be the same. A size that did not fit is not tried at larger depths."""
    # Every candidate is costed at once, as arrays over (depth, h, w) in the search order; float32 arrays round
    # as the float32 scalars of Regor's loop do, so the costs and their ties are the same.
    f32 = np.float32
    conv = g.kind in (KIND_CONV, KIND_DEPTHWISE)
    ew = g.kind == KIND_ELEMENTWISE
    equal_depth = g.kind != KIND_CONV
    part = g.kind == KIND_CONV and part_kernel_first(g.ifm[2], g.kernel, g.ifm_bits)
    acc_bits = 40 if g.ifm_bits == 16 and g.kind != KIND_POOL else 32
    repeats = _div_up(g.kernel[1], SUBKERNEL_MAX[1]) * _div_up(g.kernel[0], SUBKERNEL_MAX[0])
    ifm_depth_blk = _ifm_block_depth(g.ifm[2], g.ifm_bits, part)
    weight_wh = g.kernel[0] * g.kernel[1] if conv else 0
    space = tuple(_round_up(min(o, m), u) for o, m, u in zip(g.ofm, BLOCK_MAX, UBLOCK))
    depths = _depths(g, space)
    if not depths:
        return None
    # every candidate at once, in the search order (depth, then h, then w): axes (depth, h, w)
    d = np.array(depths, dtype=np.int64).reshape(-1, 1, 1)
    h = np.arange(UBLOCK[0], space[0] + 1, UBLOCK[0], dtype=np.int64).reshape(1, -1, 1)
    w = np.arange(UBLOCK[1], space[1] + 1, UBLOCK[1], dtype=np.int64).reshape(1, 1, -1)
    shape = (d.shape[0], h.shape[1], w.shape[2])
    d, h, w = (np.broadcast_to(a, shape) for a in (d, h, w))
    ih = (h - 1) * g.stride[0] + min(g.kernel[0], SUBKERNEL_MAX[0])
    iw = (w - 1) * g.stride[1] + min(g.kernel[1], SUBKERNEL_MAX[1])
    if g.upscale:
        ih, iw = -(-ih // 2) + 1, -(-iw // 2) + 1
    ih, iw = _up(ih, UBLOCK[0]), _up(iw, UBLOCK[1])
    idp = d if equal_depth else np.full(shape, ifm_depth_blk, dtype=np.int64)
    fh = np.minimum(h, g.ofm[0]) if g.ofm[0] == 1 and g.kernel[0] == 1 else h
    # the SHRAM layout (_layout)
    ifm_bytes = ih * iw * _up(idp * g.ifm_bits // 8, 8)
    ifm_banks = _up(-(-ifm_bytes // BANK_BYTES) * 2, (IFM_EW_GRANULE if ew else IFM_GRANULE)[g.ifm_bits])
    lut_start = TOTAL_BANKS - RESERVED_END_BANKS
    ib2_start = RESERVED_OUTPUT_BANKS + ifm_banks
    if ew:
        ab_start = np.full(shape, lut_start, dtype=np.int64)
        ib_end = ab_start
        fits = ib2_start + (0 if g.scalar else ifm_banks) <= ab_start
    else:
        acc_bytes = fh * w * _up(d, 8) * acc_bits // 8
        ab_start = lut_start - _up(-(-acc_bytes // BANK_BYTES) * 2, ACC_GRANULE[acc_bits])
        ib_end = ib2_start
        fits = ib_end <= ab_start
    # a size that did not fit is not tried at larger depths
    tried = np.logical_and.accumulate(fits, axis=0)
    # the cost (_cost), float32 in Regor's order
    ofm_elems = g.ofm[0] * g.ofm[1] * g.ofm[2]
    if ew:
        cost = f32(ofm_elems) / (h * w * d).astype(f32)
    else:
        full0, full1, full2 = -(-g.ofm[0] // fh), -(-g.ofm[1] // w), -(-g.ofm[2] // d)
        bh = f32(g.ofm[0]) / fh.astype(f32)
        bw = f32(g.ofm[1]) / w.astype(f32)
        bc = f32(g.ofm[2]) / d.astype(f32)
        weights = (weight_wh * g.ifm[2] * full0 * full1).astype(f32)
        if g.kind != KIND_DEPTHWISE:
            weights = weights * (bc * d.astype(f32))
        ifm_fetch = (ih * iw * g.ifm[2] * repeats).astype(f32) * bw * bh
        if not equal_depth:
            ifm_fetch = ifm_fetch * full2.astype(f32)
        cost = (ifm_fetch + weights) / f32(ofm_elems)
    ifm_elems = g.ifm[0] * g.ifm[1] * g.ifm[2]
    cost = np.where(ifm_elems < ih * iw * idp * 2, cost / f32(2), cost)
    flat = np.flatnonzero(tried.reshape(-1))
    if flat.size == 0:
        return None
    costs = cost.reshape(-1)[flat]
    low = costs.min()
    ties = flat[costs == low]
    # the first cheapest wins; a later one of the same cost only when at most 4x4 and covering at least as much
    best = int(ties[0])
    best_cover = f32(np.inf)
    for k in ties[1:].tolist():
        hk, wk = int(h.reshape(-1)[k]), int(w.reshape(-1)[k])
        if hk > 4 or wk > 4:
            continue
        cover_wh = min(g.ifm[0], int(ih.reshape(-1)[k])) * min(g.ifm[1], int(iw.reshape(-1)[k]))
        cover = f32(g.ifm[0] * g.ifm[1]) / f32(max(cover_wh, 1))
        if cover <= best_cover:
            best, best_cover = k, cover
    at = np.unravel_index(best, shape)
    return BlockConfig((int(h[at]), int(w[at]), int(d[at])), (int(ih[at]), int(iw[at]), int(idp[at])),
                       Layout(int(ib_end[at]), int(ib2_start[at]), int(ab_start[at])), part, acc_bits)
