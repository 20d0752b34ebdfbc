"""The etnaviv NN job descriptor (34 words), shared by the v7 and v8 paths (etnaviv.md §2, §4, §6).

`nn_descriptor(op, chip, coef_cache_size, coef_address, in_address, out_address)` turns one lowered NN
`EtnaOp` into descriptor words through `teflon.etnaviv.desc.NN_V7` / `NN_V8`; the per-version differences
live in `nn_v7` / `nn_v8`.

Axes. The `EtnaOp` keeps Mesa's naming: `input_width` is the TFLite H (image rows, hardware y) and
`input_height` the TFLite W (columns, hardware x); `weight_width` is the kernel's row count (TFLite kh) and
`weight_height` its column count (kw). The descriptor's x axis is W. Mesa writes the image sizes on the right
axes but uses its unswapped width for the tile width, the kernel x size and the SAME offsets; with square
tensors and kernels that is invisible. `mesa_compat=True` reproduces Mesa exactly; the default computes every
quantity on the hardware axis it belongs to (docs/hardware/etnaviv-nn.md lists each difference).
"""

from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType

from . import nn_v7, nn_v8
from .chips import Chip
from .ops import KIND_NN, EtnaOp
from .requant import conv_scale
from .tiling import Tiling, compute_tiling, image_cache_size, sram_cache

_VERSIONS: dict[int, ModuleType] = {7: nn_v7, 8: nn_v8}

POOLING_NONE = 0
POOLING_FIRST_PIXEL = 3
FC_FACTOR_MAX = 15  # largest kernel x / y the FC factorisation uses (4-bit kernel size fields)
IMAGE_SIZE_MAX = 8191  # 13-bit in/out image x/y sizes
OFFSET_MIN = -8  # 4-bit two's complement input offsets


class DescriptorError(ValueError):
    """The lowered operation cannot be expressed in an NN descriptor; the message says why."""


def version_module(chip: Chip) -> ModuleType:
    try:
        return _VERSIONS[chip.version]
    except KeyError:
        raise DescriptorError(f"NN path version {chip.version} not supported (7 or 8)") from None


def fc_factors(n: int) -> tuple[int, int, int]:
    """N = x*y*z with x the largest divisor of N <= 15, y the largest divisor of N/x <= 15 (etnaviv.md §1.3)."""
    x = max(d for d in range(1, FC_FACTOR_MAX + 1) if n % d == 0)
    y = max(d for d in range(1, FC_FACTOR_MAX + 1) if (n // x) % d == 0)
    return x, y, n // (x * y)


def v7_add_view_width(plane: int) -> int:
    """Rows of the v7 addition's 2-channel view for an H*W plane (etnaviv.md §1.3)."""
    for wd in (128, 64, 32):
        if plane % wd == 0:
            return wd
    return max(d for d in range(1, 64) if plane % d == 0)


@dataclass(frozen=True)
class NNGeometry:
    """Sizes on the hardware axes (x = columns, y = rows, z = channels), before pooling doubling."""

    in_x: int
    in_y: int
    in_z: int
    out_x: int
    out_y: int
    out_z: int
    kernel_xy_size: int  # the descriptor's kernel x field
    kernel_y_size: int
    pool: bool
    offset_x: int  # signed input start offsets (SAME padding)
    offset_y: int
    tiling: Tiling
    image_cache_size: int


def _mesa_offset(op: EtnaOp, kernel: int, x_size: int) -> int:
    """Mesa's SAME start offset (one value for both axes, etnaviv.md §2.3)."""
    if not op.padding_same:
        return 0
    if op.stride == 1 and kernel > 2:
        return -1 if kernel < 5 else -2
    if op.stride == 2 and 2 < kernel <= x_size and (
            x_size < 5 or (op.depthwise and (kernel == 5 or x_size == 5))):
        return -1 if (x_size <= 5 and kernel < 5) or (x_size > 5 and kernel >= 5) else -2
    return 0


def _same_offset(in_size: int, out_size: int, kernel: int, stride: int) -> int:
    """-(TFLite SAME padding before the first pixel) along one axis."""
    total = max((out_size - 1) * stride + kernel - in_size, 0)
    return -(total // 2)


def _sizes(op: EtnaOp, chip: Chip, mesa_compat: bool) -> tuple[int, ...]:
    """(in_x, in_y, in_z, out_x, out_y, out_z, kernel x, kernel y) on the hardware axes."""
    if op.fully_connected:
        n = op.input_width * op.input_height * op.input_channels
        fx, fy, fz = fc_factors(n)
        return fx, fy, fz, 1, 1, op.output_channels, fx, fy
    if op.addition and chip.version == 7:
        plane = op.input_width * op.input_height
        wd = v7_add_view_width(plane)
        cols = plane * op.input_channels // wd
        return cols, wd, 2, cols, wd, 1, 2, 2
    if mesa_compat:
        kx, ky = op.weight_width, op.weight_height
    else:
        kx, ky = op.weight_height, op.weight_width
    return (op.input_height, op.input_width, op.input_channels,
            op.output_height, op.output_width, op.output_channels, kx, ky)


def nn_geometry(op: EtnaOp, chip: Chip, mesa_compat: bool = False) -> NNGeometry:
    """Sizes, kernel fields, SAME offsets, tiling and image cache size of an NN job."""
    if op.type != KIND_NN:
        raise DescriptorError("not an NN job")
    in_x, in_y, in_z, out_x, out_y, out_z, kx, ky = _sizes(op, chip, mesa_compat)
    pool = bool(op.pooling_first_pixel)
    f = 2 if pool else 1
    oc_tiles = 1 if (op.addition and chip.version == 7) else out_z
    if mesa_compat:
        # Mesa's frame: tile width over its unswapped width (hardware y), kernel "height" for both extents.
        tiling = compute_tiling(chip, out_y * f, out_x * f, ky, ky, kx == 1, op.stride, oc_tiles)
        img = image_cache_size(tiling.superblocks, tiling.tile_w, tiling.tile_h, kx, kx, in_z)
        off = _mesa_offset(op, kx, in_x)
        off_x = off_y = off
    else:
        tiling = compute_tiling(chip, out_x * f, out_y * f, kx, ky, kx == 1, op.stride, oc_tiles)
        img = image_cache_size(tiling.superblocks, tiling.tile_w, tiling.tile_h, kx, ky, in_z)
        # A reshuffled stride-2 conv (stride 2 without pooling) is already padded by the TP job.
        reshuffled = op.stride > 1 and not pool
        if op.padding_same and not reshuffled and not op.fully_connected and not op.addition:
            s = 2 if pool else 1
            off_x = _same_offset(in_x, out_x, kx, s)
            off_y = _same_offset(in_y, out_y, ky, s)
        else:
            off_x = off_y = 0
    for name, v in (("input x", in_x), ("input y", in_y), ("output x", out_x * f), ("output y", out_y * f)):
        if not 1 <= v <= IMAGE_SIZE_MAX:
            raise DescriptorError(f"{name} size {v} outside 1..{IMAGE_SIZE_MAX}")
    if min(off_x, off_y) < OFFSET_MIN:
        raise DescriptorError(f"SAME padding needs input offset {min(off_x, off_y)} (4-bit field, >= {OFFSET_MIN})")
    return NNGeometry(in_x, in_y, in_z, out_x, out_y, out_z, kx, ky, pool, off_x, off_y, tiling, img)


def nn_fields(op: EtnaOp, chip: Chip, coef_cache_size: int, coef_address: int, in_address: int,
              out_address: int, mesa_compat: bool = False) -> dict[str, int]:
    """Named descriptor field values (the input of `DescTable.pack`)."""
    mod = version_module(chip)
    g = nn_geometry(op, chip, mesa_compat)
    if coef_address % 64:
        raise DescriptorError(f"coefficient address {coef_address:#x} is not 64-byte aligned")
    f = 2 if g.pool else 1
    cache = sram_cache(chip, coef_cache_size, g.image_cache_size, g.out_z, mesa_compat)
    fields: dict[str, int] = {
        "layer_type": 0,
        "kernel_xy_size": g.kernel_xy_size,
        "kernel_z_size": g.in_z,
        "kernels_per_core": g.tiling.kernels_per_core,
        "pooling": POOLING_FIRST_PIXEL if g.pool else POOLING_NONE,
        "pooling_xy_size": 0 if g.pool else 1,
        "nn_layer_flush": 1,
        "in_image_x_size": g.in_x,
        "in_image_y_size": g.in_y,
        "in_image_x_offset": g.offset_x,
        "in_image_y_offset": g.offset_y,
        "relu": int(op.relu),
        "out_image_x_size": g.out_x * f,
        "out_image_y_size": g.out_y * f,
        "out_image_z_size": g.out_z,
        "rounding_mode": 1,
        "out_image_tile_x_size": g.tiling.tile_w,
        "out_image_tile_y_size": g.tiling.tile_h,
        "kernel_address": coef_address >> 6,
        "in_image_address": in_address,
        "out_image_address": out_address,
        "image_caching_mode": cache.image_caching_mode,
        "kernel_caching_mode": cache.kernel_caching_mode,
        "kernel_pattern_msb": cache.kernel_pattern_msb,
        "kernel_y_size": g.kernel_y_size,
        "out_image_y_stride": g.out_y,
        "kernel_pattern_low": cache.kernel_pattern_low,
        "kernel_pattern_high": cache.kernel_pattern_high,
        "kernel_cache_start_address": cache.kernel_cache_start_address,
        "kernel_cache_end_address": cache.kernel_cache_end_address,
        "image_cache_start_address": cache.image_cache_start_address,
        "image_cache_end_address": cache.image_cache_end_address,
        "in_image_border_const": op.input_zero_point,
        "in_image_x_stride": g.in_x,
        "in_image_y_stride": g.in_y,
        "out_image_x_stride": g.out_x,
        "out_image_circular_buf_end_addr_plus_1": 0x3FFFFFF,
        "in_image_circular_buf_end_addr_plus_1": 0x3FFFFFF,
        "coef_zero_point": op.weight_zero_point,
        "out_zero_point": op.output_zero_point,
        "further3": 0x03FFFFFF,
        "further4": 0x7F800000,
        "further5": 0xFF800000,
    }
    negative = g.offset_x < 0 or g.offset_y < 0
    if mesa_compat:
        scale = float(conv_scale(op.input_scale, op.weight_scale, op.output_scale))
    else:  # as TFLite derives its multiplier: in double from the float32 scales
        scale = float(op.input_scale) * float(op.weight_scale) / float(op.output_scale)
    return mod.version_fields(fields, scale, op.depthwise, negative, nearest=not mesa_compat)


def nn_descriptor(op: EtnaOp, chip: Chip, coef_cache_size: int, coef_address: int, in_address: int,
                  out_address: int, mesa_compat: bool = False) -> list[int]:
    """The 34 descriptor words of one NN job.

    coef_cache_size: coefficient bytes the SRAM kernel cache must hold (v7: the largest 64-aligned per-core
    stream times the cores used; v8: the used length of the coefficient buffer, bias table included).
    Addresses are 32-bit GPU virtual addresses (input/output already include the tensor's byte offset).
    """
    mod = version_module(chip)
    fields = nn_fields(op, chip, coef_cache_size, coef_address, in_address, out_address, mesa_compat)
    return mod.TABLE.pack(**fields)
