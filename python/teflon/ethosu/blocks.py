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
    ib_end: int
    ib2_start: int
    ab_start: int


@dataclass(frozen=True)
class BlockConfig:
    ofm: tuple[int, int, int]  # (h, w, c)
    ifm: tuple[int, int, int]
    layout: Layout
    part_kernel: bool  # weight order: part-kernel-first (else depth-first)
    acc_bits: int = 32


@dataclass(frozen=True)
class OpGeometry:
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


def _needed(size: int, stride: int, kernel: int) -> int:
    return (size - 1) * stride + kernel


def _layout(g: OpGeometry, ofm_blk: tuple[int, int, int], ifm_blk: tuple[int, int, int], acc_bits: int) -> Layout | None:
    ew = g.kind == KIND_ELEMENTWISE
    ifm_bytes = ifm_blk[0] * ifm_blk[1] * _round_up(ifm_blk[2] * g.ifm_bits // 8, 8)
    ifm_banks = _round_up(_div_up(ifm_bytes, BANK_BYTES) * 2, (IFM_EW_GRANULE if ew else IFM_GRANULE)[g.ifm_bits])
    lut_start = TOTAL_BANKS - RESERVED_END_BANKS
    ib_end = RESERVED_OUTPUT_BANKS + ifm_banks
    ib2_start = ib_end
    ab_start = lut_start
    if not ew:
        acc_bytes = ofm_blk[0] * ofm_blk[1] * _round_up(ofm_blk[2], 8) * acc_bits // 8
        ab_start -= _round_up(_div_up(acc_bytes, BANK_BYTES) * 2, ACC_GRANULE[acc_bits])
    else:
        if ib2_start + (0 if g.scalar else ifm_banks) > ab_start:
            return None
        ib_end = ab_start
    if ib_end > ab_start:
        return None
    return Layout(ib_end, ib2_start, ab_start)


def _ifm_block(g: OpGeometry, ofm_blk: tuple[int, int, int], depth: int) -> tuple[int, int, int]:
    h = _needed(ofm_blk[0], g.stride[0], min(g.kernel[0], SUBKERNEL_MAX[0]))
    w = _needed(ofm_blk[1], g.stride[1], min(g.kernel[1], SUBKERNEL_MAX[1]))
    if g.upscale:  # half the rows and columns, plus one for a block that starts on an odd upscaled position
        h, w = _div_up(h, 2) + 1, _div_up(w, 2) + 1
    return (_round_up(h, UBLOCK[0]), _round_up(w, UBLOCK[1]), depth)


@functools.lru_cache(maxsize=1024)  # support and lowering ask for each node, and models repeat geometries
def find(g: OpGeometry) -> BlockConfig | None:
    """The cheapest OFM block by (IFM + weight fetches) per OFM element (elementwise: by OFM elements per block),
    halved when the IFM fits twice in the block; on a tie the later candidate wins only among blocks of at most 4x4
    that cover at least as much IFM. Costs are float32 products in Regor's order (FindBlockConfig): ties decide
    the block, so the rounding has to be the same. A size that did not fit is not tried at larger depths."""
    f32 = np.float32
    conv = g.kind in (KIND_CONV, KIND_DEPTHWISE)
    equal_depth = g.kind != KIND_CONV
    part = g.kind == KIND_CONV and part_kernel_first(g.ifm[2], g.kernel, g.ifm_bits)
    acc_bits = 40 if g.ifm_bits == 16 and g.kind != KIND_POOL else 32
    repeats = _div_up(g.kernel[1], SUBKERNEL_MAX[1]) * _div_up(g.kernel[0], SUBKERNEL_MAX[0])
    ifm_depth_blk = _ifm_block_depth(g.ifm[2], g.ifm_bits, part)
    weight_wh = g.kernel[0] * g.kernel[1] if conv else 0
    space = tuple(_round_up(min(o, m), u) for o, m, u in zip(g.ofm, BLOCK_MAX, UBLOCK))
    ofm_elems = g.ofm[0] * g.ofm[1] * g.ofm[2]
    ifm_elems = g.ifm[0] * g.ifm[1] * g.ifm[2]
    best: BlockConfig | None = None
    best_cost, best_cover = f32(np.inf), f32(np.inf)
    depth = max(UBLOCK[2], min(space[2], SPLIT_DEPTH))
    if depth < g.ofm[2]:
        depth = _round_up(depth, SPLIT_DEPTH)
    misfit: set[tuple[int, int]] = set()
    while depth <= space[2]:
        for h in range(UBLOCK[0], space[0] + 1, UBLOCK[0]):
            for w in range(UBLOCK[1], space[1] + 1, UBLOCK[1]):
                if (h, w) in misfit:
                    continue
                ifm_blk = _ifm_block(g, (h, w, depth), depth if equal_depth else ifm_depth_blk)
                fit = (min(h, g.ofm[0]), w, depth) if g.ofm[0] == 1 and g.kernel[0] == 1 else (h, w, depth)
                layout = _layout(g, fit, ifm_blk, acc_bits)
                if layout is None:
                    misfit.add((h, w))
                    continue
                cost = _cost(g, fit, ifm_blk, weight_wh, repeats, equal_depth, ofm_elems, (h, w, depth))
                if ifm_elems < ifm_blk[0] * ifm_blk[1] * ifm_blk[2] * 2:
                    cost = cost / f32(2)
                if cost > best_cost:
                    continue
                if cost == best_cost:
                    cover_wh = min(g.ifm[0], ifm_blk[0]) * min(g.ifm[1], ifm_blk[1])
                    cover = f32(g.ifm[0] * g.ifm[1]) / f32(max(cover_wh, 1))
                    if not (cover <= best_cover and h <= 4 and w <= 4):
                        continue
                    best_cover = cover
                else:
                    best_cover = f32(np.inf)
                best_cost = cost
                best = BlockConfig((h, w, depth), ifm_blk, layout, part, acc_bits)
        depth += UBLOCK[2]
        if depth < g.ofm[2]:
            depth = _round_up(depth, SPLIT_DEPTH)
    return best


def _cost(g: OpGeometry, blk: tuple[int, int, int], ifm_blk: tuple[int, int, int], weight_wh: int, repeats: int,
          equal_depth: bool, ofm_elems: int, searched: tuple[int, int, int]) -> np.float32:
    """Fetches per OFM element of one candidate, in float32 as Regor evaluates them."""
    f32 = np.float32
    if g.kind == KIND_ELEMENTWISE:
        return f32(ofm_elems) / f32(searched[0] * searched[1] * searched[2])
    full = [_div_up(o, b) for o, b in zip(g.ofm, blk)]
    bh, bw, bc = (f32(o) / f32(b) for o, b in zip(g.ofm, blk))
    weights = f32(weight_wh * g.ifm[2] * full[0] * full[1])
    if g.kind != KIND_DEPTHWISE:
        weights = weights * (bc * f32(blk[2]))
    ifm_fetch = f32(ifm_blk[0] * ifm_blk[1] * g.ifm[2] * repeats) * bw * bh
    if not equal_depth:
        ifm_fetch = ifm_fetch * f32(full[2])
    return (ifm_fetch + weights) / f32(ofm_elems)
