"""NN tiling, superblocks, kernels per core and the on-chip SRAM cache fields (etnaviv.md §6).

These are the blob-derived heuristics Mesa uses; they are expressed here in a neutral "tile frame":
`tile_w` is the tile extent along the axis the tile width runs over, `tile_h` the other one, and the caller
says which kernel extent goes with which (etnaviv.nn decides per mode: Mesa's mixed H/W frame or the
hardware x/y axes, see docs/hardware/etnaviv-nn.md).
"""

from __future__ import annotations

from dataclasses import dataclass

from .chips import Chip

MAX_TILE_WIDTH = 64
SRAM_RESERVED = 0x800  # first SRAM bytes: default image window (kernel cache starts here) [INFERRED]
KERNEL_CACHE_MIN_END = 0xA00

CACHE_NONE = 0
CACHE_FULL = 1
CACHE_PARTIAL = 2

# Kernel "pattern" (which kernels stay resident) for partial kernel caching, by output channel count:
# (min out z, pattern_msb, pattern_low, pattern_high). Values from Mesa/the blob; meaning unknown.
_PARTIAL_PATTERNS = (
    (1024, 0x13, 0x00080000, 0x00000000),
    (512, 0x3D, 0x00000000, 0x2AAAAAA0),
    (256, 0x3E, 0xFFFFAAAA, 0x7FFFFFFF),
    (160, 0x06, 0x0000007E, 0x00000000),
    (0, 0x3F, 0xFFFFFFFE, 0xFFFFFFFF),
)


class TilingError(ValueError):
    pass


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


def _align(v: int, a: int) -> int:
    return _ceil(v, a) * a


@dataclass(frozen=True)
class Tiling:
    tile_w: int
    tile_h: int
    interleave: int
    superblocks: int
    kernels_per_core: int


def interleave_mode(version: int, tile_w: int, k_w: int) -> int:
    t = k_w - 1 + tile_w
    if t > 36:
        return 1
    if version == 7:
        base = 1 if tile_w > 32 else 2 if tile_w > 16 else 4 if tile_w > 8 else 8
        return min(base, 4) if t > 18 else min(base, 2)
    if tile_w > 32:
        return 1
    if tile_w > 16:
        return 2
    return 2 if t > 18 else 4


def compute_tiling(chip: Chip, ext_w: int, ext_h: int, k_w: int, k_h: int, pointwise: bool, stride: int,
                   out_channels: int) -> Tiling:
    """Tile size, superblock count and kernels per core.

    ext_w / ext_h: output extents the tile width / height run over (already doubled for first-pixel pooling);
    k_w / k_h: kernel extents along them; pointwise: the superblock rule for 1-wide kernels;
    out_channels: output channels as distributed over the cores (1 for the v7 addition).
    """
    v = chip.version
    depth, accum, cores = chip.nn_input_buffer_depth, chip.nn_accum_buffer_depth, chip.nn_core_count
    tile_w = min(ext_w, MAX_TILE_WIDTH)
    im = interleave_mode(v, tile_w, k_w)
    tile_h = min(depth * im - k_h + 1, im * accum, ext_h)
    if v == 8:
        tile_h = min(tile_h, 4)  # Mesa: best measured on MobileDet (a TODO there)
    if stride > 1 and tile_h % 2:
        tile_h -= 1
    tile_h = max(tile_h, 1)

    kpc_total = _ceil(out_channels, cores)
    if v == 7:
        f = (accum * im) // tile_h
        if pointwise:
            f = min(f, accum // 3)
        f = min(f, kpc_total, 127)
    else:
        if pointwise:
            f = accum // _ceil(tile_h, im)
        else:
            ts = _ceil(_ceil(tile_h * tile_w, stride), 64)
            f = accum // (ts * stride)
        f = min(f, accum * 6 // 9, kpc_total, 127)
    if f <= 0:
        raise TilingError(f"no kernel fits the accumulation buffer (tile {tile_w}x{tile_h}, stride {stride})")
    k2 = _ceil(out_channels, cores * f)
    nk = _ceil(out_channels, k2 * cores)
    superblocks = _ceil(kpc_total, nk)
    return Tiling(tile_w, tile_h, im, superblocks, _ceil(kpc_total, superblocks))


@dataclass(frozen=True)
class SramCache:
    image_caching_mode: int
    kernel_caching_mode: int
    kernel_pattern_msb: int
    kernel_pattern_low: int
    kernel_pattern_high: int
    kernel_cache_start_address: int
    kernel_cache_end_address: int
    image_cache_start_address: int
    image_cache_end_address: int


def image_cache_size(superblocks: int, tile_x: int, tile_y: int, k_x: int, k_y: int, in_channels: int) -> int:
    """Bytes of input tile kept in SRAM across superblocks (0 with a single superblock)."""
    if superblocks == 1:
        return 0
    return _align(_align((tile_x + k_x - 1) * (tile_y + k_y - 1), 16) * in_channels, 128)


def sram_cache(chip: Chip, coef_cache_size: int, image_size: int, out_channels: int,
               mesa_compat: bool = True) -> SramCache:
    """Kernel / image caching fields. `coef_cache_size`: the coefficient bytes the tiler counts (v7: largest
    per-core stream, 64-aligned, times the cores used; v8: the whole used coefficient buffer).
    `mesa_compat=False` replaces Mesa's kernel cache end of 0 (image cache larger than the SRAM) by the SRAM
    end, the value of the other branch that disables the image cache (docs/hardware/etnaviv-nn.md §3.2)."""
    sram = chip.on_chip_sram_size
    start = SRAM_RESERVED
    msb = low = high = 0
    if start + coef_cache_size + image_size < sram:
        kmode = CACHE_FULL
        kend = max(min(_align(start + coef_cache_size, 128), sram), KERNEL_CACHE_MIN_END)
    else:
        kmode = CACHE_PARTIAL
        _, msb, low, high = next(p for p in _PARTIAL_PATTERNS if out_channels >= p[0])
        if start + coef_cache_size >= sram:
            kend, image_size = sram, 0
        elif image_size > sram:
            # Mesa leaves the kernel end at 0 here (an empty range 0x800..0; kept with mesa_compat)
            kend, image_size = (0 if mesa_compat else sram), 0
        else:
            kend = sram - image_size
    if image_size == 0:
        imode, istart, iend = CACHE_NONE, 0, SRAM_RESERVED
    elif image_size >= SRAM_RESERVED:
        imode, istart = CACHE_FULL, kend
        iend = min(istart + image_size, sram)
    else:
        imode, istart, iend = CACHE_FULL, 0, SRAM_RESERVED
    return SramCache(imode, kmode, msb, low, high, start, kend, istart, iend)
