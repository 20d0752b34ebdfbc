"""Ethos-U65-256 block configuration and SHRAM layout: which OFM block an operation runs in and where the input
buffers and accumulators sit in the shared buffer (IB_END, IFM2_IB_START, AB_START).

The NPU computes an OFM block (H x W x C) at a time out of an IFM block held in SHRAM; the block must fit SHRAM
next to its accumulators. The architecture numbers (48 banks of 1 KB, 2 reserved at each end, 2x2x8 micro-blocks,
bank granules, 64x32x128 largest block, 8x8 sub-kernel) are the U65-256 row of Vela 5.2.0's
`architecture_features.py`; the layout arithmetic and the cost-ranked search over blocks follow the procedure of
its `architecture_allocator.py` (written here anew). That Vela's default Regor core makes the same choices was
inferred by comparing compiles of single-op models (docs/hardware/ethosu-compiler.md, "Block configuration").
"""

from __future__ import annotations

import math
from dataclasses import dataclass

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


def part_kernel_first(ifm_depth: int, kernel: tuple[int, int], ifm_bits: int = 8) -> bool:
    """Part-kernel-first traversal when it uses the MACs better than depth-first: depth-first pads the IFM depth
    to 32 (8-bit) per pass, part-kernel pads the depth to 8 and the kernel taps to 4."""
    if ifm_depth <= 8:
        return True
    taps = kernel[0] * kernel[1]
    depth_use = ifm_depth / _round_up(ifm_depth, 32 if ifm_bits == 8 else 16)
    part_use = ifm_depth * taps / (_round_up(ifm_depth, 8) * _round_up(taps, 4 if ifm_bits == 8 else 2))
    return part_use >= depth_use  # a tie goes to part-kernel-first (Regor; inferred from a 24-channel 3x3 compile)


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
    h = _round_up(_needed(ofm_blk[0], g.stride[0], min(g.kernel[0], SUBKERNEL_MAX[0])), UBLOCK[0])
    w = _round_up(_needed(ofm_blk[1], g.stride[1], min(g.kernel[1], SUBKERNEL_MAX[1])), UBLOCK[1])
    return (h, w, depth)


def find(g: OpGeometry) -> BlockConfig | None:
    """The cheapest OFM block by (IFM + weight fetches) per OFM element; ties go to the later candidate, among
    small (<= 4x4) blocks to the one covering more of the IFM."""
    conv = g.kind in (KIND_CONV, KIND_DEPTHWISE)
    equal_depth = g.kind != KIND_CONV
    part = conv and part_kernel_first(g.ifm[2], g.kernel, g.ifm_bits)
    acc_bits = 40 if g.ifm_bits == 16 and g.kind != KIND_POOL else 32
    repeats = _div_up(g.kernel[1], SUBKERNEL_MAX[1]) * _div_up(g.kernel[0], SUBKERNEL_MAX[0])
    ifm_depth_blk = _ifm_block_depth(g.ifm[2], g.ifm_bits, part)
    weight_wh = g.kernel[0] * g.kernel[1] if conv else 0
    space = tuple(_round_up(min(o, m), u) for o, m, u in zip(g.ofm, BLOCK_MAX, UBLOCK))
    ofm_elems = g.ofm[0] * g.ofm[1] * g.ofm[2]
    ifm_elems = g.ifm[0] * g.ifm[1] * g.ifm[2]
    if g.kind == KIND_ELEMENTWISE:  # Regor: one block over the whole OFM when it fits (inferred, docs)
        whole = tuple(_round_up(o, u) for o, u in zip(g.ofm, UBLOCK))
        if all(b <= m for b, m in zip(whole, BLOCK_MAX)):
            layout = _layout(g, whole, _ifm_block(g, whole, whole[2]), acc_bits)
            if layout is not None:
                return BlockConfig(whole, _ifm_block(g, whole, whole[2]), layout, False, acc_bits)
    best: BlockConfig | None = None
    best_cost, best_cover = math.inf, math.inf
    depth = max(UBLOCK[2], min(space[2], SPLIT_DEPTH))
    if depth < g.ofm[2]:
        depth = _round_up(depth, SPLIT_DEPTH)
    while depth <= space[2]:
        misfit: set[tuple[int, int]] = set()
        for h in range(UBLOCK[0], space[0] + 1, UBLOCK[0]):
            for w in range(UBLOCK[1], space[1] + 1, UBLOCK[1]):
                if (h, w) in misfit:
                    continue
                ofm_blk = (h, w, depth)
                ifm_blk = _ifm_block(g, ofm_blk, depth if equal_depth else ifm_depth_blk)
                fit_blk = ofm_blk
                if g.ofm[0] == 1 and g.kernel[0] == 1:  # 1-D: the accumulators of a one-row OFM (U65-256/512)
                    fit_blk = (min(h, g.ofm[0]), w, depth)
                layout = _layout(g, fit_blk, ifm_blk, acc_bits)
                if layout is None:
                    misfit.add((w, h))
                    continue
                full = [_div_up(o, b) for o, b in zip(g.ofm, ofm_blk)]
                frac = [o / b for o, b in zip(g.ofm, ofm_blk)]
                # float products associated as written: equal costs decide ties, and rounding must agree
                weights = weight_wh * g.ifm[2] * (full[1] * full[0])
                if g.kind != KIND_DEPTHWISE:
                    weights *= depth * frac[2]
                ifm_fetch = (ifm_blk[1] * ifm_blk[0]) * g.ifm[2] * repeats * (frac[1] * frac[0])
                if not equal_depth:
                    ifm_fetch *= full[2]
                if g.kind == KIND_ELEMENTWISE:
                    cost = max(ofm_elems / (h * w * depth), 1)
                else:
                    cost = (ifm_fetch + weights) / ofm_elems
                if ifm_elems < ifm_blk[0] * ifm_blk[1] * ifm_blk[2] * 2:
                    cost /= 2
                if cost > best_cost:
                    continue
                if cost == best_cost:
                    cover_h, cover_w = min(g.ifm[0], ifm_blk[0]), min(g.ifm[1], ifm_blk[1])
                    cover = g.ifm[0] * g.ifm[1] / (cover_h * cover_w)
                    if not (cover <= best_cover and h <= 4 and w <= 4):
                        continue
                    best_cover = cover
                else:
                    best_cover = math.inf
                best_cost = cost
                best = BlockConfig(ofm_blk, ifm_blk, layout, part, acc_bits)
        depth += UBLOCK[2]
        if depth < g.ofm[2]:
            depth = _round_up(depth, SPLIT_DEPTH)
    return best
