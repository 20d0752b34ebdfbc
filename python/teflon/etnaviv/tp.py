"""etnaviv TP (tensor-processing) job descriptors, and a numpy reference model of the TP engine.

A TP job is one 31-word descriptor (teflon.etnaviv.desc.TP) per TP core it uses; the cores split the work along
one image dimension and each descriptor carries its own window, sizes and base addresses. Formulas: the project's
docs/hardware/etnaviv-tp.md (from ../shared/docs/etnaviv.md §5 and the golden data). Axis names: TFLite H, W, C;
the lowered operation keeps Mesa's naming (`input_width` = H, `input_height` = W).

`mesa_compat=True` reproduces Mesa's descriptors bit for bit, including the places where Mesa uses H where W is
meant (detranspose sizes, reshuffle odd-size padding and y-split output offset) and its PAD z-padding limits;
the default mode uses the right axis, which only differs for non-square tensors (and for PAD z padding).

`tp_execute` is the reference model of what a descriptor does (the loop nest of etnaviv-tp.md §Model,
[INFERRED] from the four descriptor families that Mesa uses and that the golden files hold).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from teflon.etnaviv.desc import TP
from teflon.etnaviv.ops import KIND_TP, TP_TYPES, EtnaOp
from teflon.etnaviv.pwl import PWL_TYPES, fp21_value, tp_requant

ADDR_MASK = 0xFFFFFFFF
PWL_TILE_X = 64  # the PWL jobs' input tile (columns x rows)
PWL_TILE_Y = 16


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _defaults() -> dict[str, int]:
    """Fields every TP descriptor sets (etnaviv.md §5.2); everything else starts at 0."""
    return {
        "in_image_global_mem": 1, "out_image_global_mem": 1,
        "alu_i2f_enable": 1, "alu_f2i_enable": 1, "last": 1,
        "in_tile_x_size": 1, "in_tile_x_inc": 1,
        "out_loop_0_inc": 1, "out_loop_3_count": 1, "out_loop_4_count": 1, "out_loop_5_count": 1,
        "flat_rounding_mode": 1, "integer_rounding_mode": 1,
        "in_image_circular_buf_end_address_plus_1": 0x3FFFFFF,
        "out_image_circular_buf_end_address_plus_1": 0x3FFFFFF,
    }


@dataclass
class _Core:
    """One core's fields plus the byte offsets of its input and output from the job's base addresses."""
    fields: dict[str, int]
    in_off: int = 0
    out_off: int = 0


def _split(total: int, ncores: int) -> list[int]:
    """Per-core extents: ceil(remaining / cores left) each, the last core takes the remainder."""
    sizes, left = [], total
    for i in range(ncores):
        s = left if i == ncores - 1 else _ceil_div(left, ncores - i)
        sizes.append(s)
        left -= s
    return sizes


# ---- TRANSPOSE / DETRANSPOSE (single core) -------------------------------------------------------------------

def _transpose(op: EtnaOp) -> list[_Core]:
    """NHWC -> planar: read the NHWC buffer as x = C, y = W, z = H with 1 x W tiles (one channel along a row)."""
    h, w, c = op.input_width, op.input_height, op.input_channels
    f = _defaults() | {
        "in_image_x_size": c, "in_image_y_size": w, "in_image_z_size": h,
        "in_image_stride": c, "in_image_slice": w * c,
        "in_window_x_end": c - 1, "in_window_y_end": w - 1,
        "in_tile_y_size": w, "in_tile_y_inc": w,
        "out_loop_0_inc": 1, "out_loop_0_count": w,
        "out_loop_1_inc": h * w, "out_loop_1_count": c,
        "out_loop_2_inc": w, "out_loop_2_count": h,
        "in_zp": op.input_zero_point, "out_zp": op.input_zero_point,
    }
    return [_Core(f)]


TP_WINDOW_MAX = 0x7FFF  # the largest window end the signed 16-bit in_window_x/y_end fields hold


def _detranspose_rows(w: int, h: int, c: int) -> tuple[int, int]:
    """(row length, rows) the detranspose reads the H*W*C planar bytes as: planar rows of W (the natural view, H * C
    rows) unless that passes the 16-bit window fields; then the smallest row length dividing the bytes that fits
    both fields (the bytes are read contiguously whatever the view, and the out loops count elements:
    etnaviv-tp.md §3)."""
    n = h * w * c
    if w - 1 <= TP_WINDOW_MAX and h * c - 1 <= TP_WINDOW_MAX:
        return w, h * c
    for row in range(-(-n // (TP_WINDOW_MAX + 1)), TP_WINDOW_MAX + 2):
        if n % row == 0:
            return row, n // row
    return w, h * c  # nothing fits: the program check refuses the field


def _detranspose(op: EtnaOp, mesa_compat: bool) -> list[_Core]:
    """Planar -> NHWC: rows of the planar image (x = W, y = (c, h)) are scattered with stride C, 1x1 tiles.

    Mesa sizes the rows with its width (= H); right only for H == W, so only the compat mode does that.
    """
    h, w, c = op.input_width, op.input_height, op.input_channels
    row, rows = (h, w * c) if mesa_compat else _detranspose_rows(w, h, c)  # x extent of a read row; rows
    f = _defaults() | {
        "in_image_x_size": row, "in_image_y_size": rows, "in_image_z_size": 1,
        "in_image_stride": row, "in_image_slice": row * rows,
        "in_window_x_end": row - 1, "in_window_y_end": rows - 1,
        "in_tile_y_size": 1, "in_tile_y_inc": 1,
        "out_loop_0_inc": c, "out_loop_0_count": w,
        "out_loop_1_inc": 0, "out_loop_1_count": 1,
        "out_loop_2_inc": w * c, "out_loop_2_count": h,
        "out_loop_3_inc": 1, "out_loop_3_count": c,
        "out_loop_4_inc": h * w * c,
        "in_zp": op.input_zero_point, "out_zp": op.input_zero_point,
    }
    return [_Core(f)]


# ---- RESHUFFLE (space-to-depth for stride-2 convolutions) -----------------------------------------------------

def reshuffle_cores(op: EtnaOp, tp_core_count: int) -> int:
    """Cores Mesa uses for a reshuffle: all unless the input is small with one channel; 1 for 224/320 x 3."""
    h, c = op.input_width, op.input_channels
    if (h in (224, 320)) and c == 3:
        return 1
    return tp_core_count if (h > 8 or c > 1) else 1


def _reshuffle_split_dim(ox: int, oy: int, c: int) -> str:
    """x unless there are at least as many channels as output columns; then the largest dim (ties: later one)."""
    if c < ox:
        return "x"
    if c >= oy:
        return "z"
    return "y"


def _empty_input(f: dict[str, int]) -> bool:
    return min(f["in_image_x_size"], f["in_image_y_size"], f["in_image_z_size"]) < 1


def _reshuffle(op: EtnaOp, ncores: int, mesa_compat: bool) -> list[_Core]:
    h, w, c = op.input_width, op.input_height, op.input_channels
    oy, ox = op.output_width, op.output_height  # reshuffled rows (from H) and columns (from W)
    plane = ox * oy
    dim = _reshuffle_split_dim(ox, oy, c)
    # SAME padding before the image: 1 more for 5x5 kernels, 1 more along an odd dimension (both only on the
    # first core along the split dimension). Mesa tests H's parity for x and W's for y.
    odd_x, odd_y = (h % 2, w % 2) if mesa_compat else (w % 2, h % 2)
    k5 = int(op.weight_width == 5)
    left_out = {"x": ox, "y": oy, "z": c}[dim]
    left_in = {"x": w, "y": h, "z": c}[dim]
    cores: list[_Core] = []
    in_off = out_off = 0
    for i in range(ncores):
        size = _ceil_div(left_out, ncores - i)
        pad_x = pad_y = 0
        if op.padding_same:
            first_x, first_y = int(i == 0 or dim != "x"), int(i == 0 or dim != "y")
            pad_x = (k5 + odd_x) * first_x
            pad_y = (k5 + odd_y) * first_y
        out_x = size if dim == "x" else ox
        out_y = size if dim == "y" else oy
        last = i == ncores - 1
        in_x = (left_in if last else 2 * size - pad_x) if dim == "x" else w
        in_y = (left_in if last else 2 * size - pad_y) if dim == "y" else h
        in_z = (left_in if last else size) if dim == "z" else c
        f = _defaults() | {
            "in_image_x_size": in_x, "in_image_y_size": in_y, "in_image_z_size": in_z,
            "in_image_stride": w, "in_image_slice": w * h,
            "in_window_x_start": -pad_x, "in_window_y_start": -pad_y,
            "in_window_x_end": 2 * out_x - 1 - pad_x, "in_window_y_end": 2 * out_y - 1 - pad_y,
            "in_tile_x_size": 2 * out_x, "in_tile_x_inc": 2 * out_x,
            "in_tile_y_size": 2 * out_y, "in_tile_y_inc": 2 * out_y,
            # column parity -> channel +1 plane, column/2, row parity -> +2 planes, row/2, channel -> 4 planes
            "out_loop_0_inc": plane, "out_loop_0_count": 2,
            "out_loop_1_inc": 1, "out_loop_1_count": out_x, "out_loop_1_reset": 1,
            "out_loop_2_inc": 2 * plane, "out_loop_2_count": 2,
            "out_loop_3_inc": ox, "out_loop_3_count": out_y, "out_loop_3_reset": 1,
            "out_loop_6_inc": 4 * plane,
            "in_zp": op.input_zero_point, "out_zp": op.input_zero_point,
        }
        cores.append(_Core(f, in_off, out_off))
        if dim == "x":
            in_off, out_off, done = in_off + in_x, out_off + out_x, in_x
        elif dim == "y":
            row_pitch = oy if mesa_compat else ox  # Mesa steps output rows by its (swapped) height
            in_off, out_off, done = in_off + w * in_y, out_off + row_pitch * out_y, in_y
        else:
            in_off, out_off, done = in_off + w * h * in_z, out_off + size * (2 * out_x) * (2 * out_y), in_z
        left_out -= size
        left_in -= done
    return cores


# ---- PAD ------------------------------------------------------------------------------------------------------

def pad_cores(op: EtnaOp, tp_core_count: int) -> int:
    return 1 if op.input_width == 1 else tp_core_count


def _pad(op: EtnaOp, ncores: int, mesa_compat: bool, in_planar: bool) -> list[_Core]:
    """Constant (zero point) padding. op.pad = (H before, H after, W before, W after, C before, C after).

    x/y padding is a window reaching outside the image; z padding uses the z over-fetch of the first/last core.
    """
    h, w, c = op.input_width, op.input_height, op.input_channels
    hb, ha, wb, wa, cb, ca = op.pad
    if in_planar:  # planar data: x = W, y = H, z = C
        (x, xb, xa), (y, yb, ya), (z, zb, za) = (w, wb, wa), (h, hb, ha), (c, cb, ca)
    else:  # NHWC data: x = C, y = W, z = H
        (x, xb, xa), (y, yb, ya), (z, zb, za) = (c, cb, ca), (w, wb, wa), (h, hb, ha)
    out_x, out_y = x + xb + xa, y + yb + ya
    out_plane = out_x * out_y
    cores: list[_Core] = []
    in_off = out_off = 0
    for i, in_z in enumerate(_split(z, ncores)):
        if mesa_compat:  # Mesa: one plane at most, and only when the job has several cores
            zs = int(bool(zb)) if (i == 0 and ncores > 1) else 0
            ze = int(bool(za)) if (i == ncores - 1 and ncores > 1) else 0
        else:  # [INFERRED] the 2-bit over-fetch fields count planes; a single core fetches both ends itself
            zs = zb if i == 0 else 0
            ze = za if i == ncores - 1 else 0
        f = _defaults() | {
            "in_image_x_size": x, "in_image_y_size": y, "in_image_z_size": in_z,
            "in_image_stride": x, "in_image_slice": x * y,
            "in_window_x_start": -xb, "in_window_y_start": -yb,
            "in_window_x_end": x - 1 + xa, "in_window_y_end": y - 1 + ya,
            "in_window_z_start_overfetch": zs, "in_window_z_end_overfetch": ze,
            "in_tile_x_size": out_x, "in_tile_x_inc": out_x,
            "in_tile_y_size": out_y, "in_tile_y_inc": out_y,
            "out_loop_0_inc": 0, "out_loop_0_count": 1,
            "out_loop_1_inc": 1, "out_loop_1_count": out_x,
            "out_loop_2_inc": out_x, "out_loop_2_count": out_y,
            "out_loop_3_inc": 0, "out_loop_3_count": 1,
            "out_loop_6_inc": out_plane,
            "in_zp": op.input_zero_point, "out_zp": op.output_zero_point,
        }
        cores.append(_Core(f, in_off, out_off))
        in_off += x * y * in_z
        out_off += out_plane * (in_z + (zb if i == 0 else 0))
    return cores


# ---- RELU / ABSOLUTE / LOGISTIC (PWL lookup) --------------------------------------------------------------------

def pwl_cores(op: EtnaOp, tp_core_count: int) -> int:
    # TABLE (teflon's) follows LOGISTIC, the one Mesa PWL job whose table is not an identity [INFERRED]
    if TP_TYPES[op.tp_type] in ("RELU", "LOGISTIC", "TABLE") and op.input_width < 6:
        return 1
    return tp_core_count


def _tiled_out_loops(row: int, rows: int, tile_x: int, tile_y: int) -> dict[str, int]:
    """Out loops that place each (clipped or pooled) tile of a row-major plane `row` elements wide and `rows` high:
    column in tile, row in tile (both sized by the emitted tile: count 0), tile column, tile row, plane."""
    return {
        "out_loop_0_inc": 0, "out_loop_0_count": 1,
        "out_loop_1_inc": 1, "out_loop_1_count": 0, "out_loop_1_reset": 1,
        "out_loop_2_inc": row, "out_loop_2_count": 0, "out_loop_2_reset": 1,
        "out_loop_3_inc": tile_x, "out_loop_3_count": _ceil_div(row, tile_x),
        "out_loop_4_inc": tile_y * row, "out_loop_4_count": _ceil_div(rows, tile_y),
        "out_loop_6_inc": row * rows,
    }


def _pwl(op: EtnaOp, ncores: int, lut_addr: int) -> list[_Core]:
    """Element-wise: the data is read as x = C, y = W, z = H (layout does not matter), 64 x 16 tiles."""
    h, w, c = op.input_width, op.input_height, op.input_channels
    mult, shift = tp_requant(op)
    cores: list[_Core] = []
    in_off = out_off = 0
    for in_z in _split(h, ncores):
        f = _defaults() | {
            "in_image_x_size": c, "in_image_y_size": w, "in_image_z_size": in_z,
            "in_image_stride": c, "in_image_slice": c * w,
            "in_window_x_end": c - 1, "in_window_y_end": w - 1,
            "in_tile_x_size": PWL_TILE_X, "in_tile_x_inc": PWL_TILE_X,
            "in_tile_y_size": PWL_TILE_Y, "in_tile_y_inc": PWL_TILE_Y,
            "alu_pwl_enable": 1, "alu_load_pwl_lut": 1, "alu_load_pwl_lut_global_mem": 1,
            "alu_load_pwl_lut_address": lut_addr & ADDR_MASK, "alu_pwl_sign_support": 1,
            **_tiled_out_loops(c, w, PWL_TILE_X, PWL_TILE_Y),
            "in_zp": op.input_zero_point, "out_zp": op.output_zero_point,
            "alu_output_post_multiplier": mult, "alu_output_postshift": shift,
        }
        cores.append(_Core(f, in_off, out_off))
        in_off += c * w * in_z
        out_off += c * w * in_z
    return cores


# ---- MAXPOOL (the vendor's TP max pooling; docs/hardware/etnaviv-maxpool.md) ------------------------------------

MAXPOOL_MODE = 3  # alu_horz/vert_processing of the vendor's TP max pool [VENDOR]
MAXPOOL_TILE_X = 64  # input columns a pooling tile spans at most (the vendor's choice)


def maxpool_tiles(kx: int, sx: int, in_w: int) -> tuple[int, int]:
    """(output columns, output rows) of one pooling tile: as many columns as fit 64 input columns; 16 rows for
    narrow images, else 1 (the vendor's choice)."""
    return max(1, (MAXPOOL_TILE_X + sx - kx) // sx), 16 if in_w < MAXPOOL_TILE_X else 1


def _maxpool(op: EtnaOp, ncores: int) -> list[_Core]:
    """Planar input (x = W, y = H, z = C split over the cores); every tile of out_tile * stride + k - stride input
    columns (rows), advanced by out_tile * stride, is reduced to out_tile max values per row (column); the out loops
    place them like the PWL jobs' tiles. Padding reads as 0, the lowest stored value, so in_zp = out_zp = 0 keeps
    the ALU an identity and a SAME window's padding never wins."""
    h, w, c = op.input_width, op.input_height, op.input_channels
    oh, ow = op.output_width, op.output_height
    ky, kx, s = op.weight_width, op.weight_height, op.stride
    top, _, left, _, _, _ = op.pad
    otx, oty = maxpool_tiles(kx, s, w)
    cores: list[_Core] = []
    in_off = out_off = 0
    for in_z in _split(c, ncores):
        f = _defaults() | {
            "in_image_x_size": w, "in_image_y_size": h, "in_image_z_size": in_z,
            "in_image_stride": w, "in_image_slice": w * h,
            "in_window_x_start": -left, "in_window_y_start": -top,
            "in_window_x_end": (ow - 1) * s + kx - 1 - left, "in_window_y_end": (oh - 1) * s + ky - 1 - top,
            "in_tile_x_size": otx * s + kx - s, "in_tile_x_inc": otx * s,
            "in_tile_y_size": oty * s + ky - s, "in_tile_y_inc": oty * s,
            "alu_horz_processing": MAXPOOL_MODE, "alu_horz_proc_count": kx - 1, "alu_horz_proc_stride": s - 1,
            "alu_vert_processing": MAXPOOL_MODE, "alu_vert_proc_count": ky - 1, "alu_vert_proc_stride": s - 1,
            **_tiled_out_loops(ow, oh, otx, oty),
            "in_zp": 0, "out_zp": 0,
        }
        cores.append(_Core(f, in_off, out_off))
        in_off += w * h * in_z
        out_off += ow * oh * in_z
    return cores


# ---- UPSAMPLE (one phase of a nearest-neighbour x2 resize) --------------------------------------------------------

def _upsample(op: EtnaOp, ncores: int, in_planar: bool) -> list[_Core]:
    """A byte copy of the whole input whose out loops step by two pixels and two rows, from the phase's pixel of
    the first 2x2 block: four such jobs (phases 0..3) write every output pixel once. Planar data: x = W, y = H,
    z = C; NHWC data: x = C, y = W, z = H. z is split over the cores."""
    h, w, c = op.input_width, op.input_height, op.input_channels
    row, col = divmod(op.phase, 2)
    if in_planar:
        (x, y, z), col_inc, row_inc, base = (w, h, c), 2, 4 * w, row * 2 * w + col
    else:
        (x, y, z), col_inc, row_inc, base = (c, w, h), 1, 2 * c, (row * 2 * w + col) * c
    cores: list[_Core] = []
    in_off = 0
    out_off = base
    for in_z in _split(z, ncores):
        f = _defaults() | {
            "in_image_x_size": x, "in_image_y_size": y, "in_image_z_size": in_z,
            "in_image_stride": x, "in_image_slice": x * y,
            "in_window_x_end": x - 1, "in_window_y_end": y - 1,
            "in_tile_x_size": x, "in_tile_x_inc": x, "in_tile_y_size": y, "in_tile_y_inc": y,
            "out_loop_0_inc": 0, "out_loop_0_count": 1,
            "out_loop_1_inc": col_inc, "out_loop_1_count": x,
            "out_loop_2_inc": row_inc, "out_loop_2_count": y,
            "out_loop_3_inc": 0, "out_loop_3_count": 1,
            "out_loop_6_inc": 4 * x * y,
            "in_zp": op.input_zero_point, "out_zp": op.output_zero_point,
        }
        cores.append(_Core(f, in_off, out_off))
        in_off += x * y * in_z
        out_off += 4 * x * y * in_z
    return cores


# ---- public -----------------------------------------------------------------------------------------------------

def tp_cores_used(op: EtnaOp, tp_core_count: int) -> int:
    """How many TP cores (= descriptors) Mesa's heuristics give this job."""
    name = TP_TYPES[op.tp_type]
    if name in ("TRANSPOSE", "DETRANSPOSE"):
        return 1
    if name == "RESHUFFLE":
        return reshuffle_cores(op, tp_core_count)
    if name in ("PAD", "UPSAMPLE", "MAXPOOL"):  # split along z like PAD (the extent caps the count below)
        return pad_cores(op, tp_core_count) if name == "PAD" else tp_core_count
    return pwl_cores(op, tp_core_count)


def _split_extent(op: EtnaOp, in_planar: bool) -> int:
    """Size of the dimension a multi-core job splits (output units for the reshuffle)."""
    name = TP_TYPES[op.tp_type]
    h, c = op.input_width, op.input_channels
    if name == "RESHUFFLE":
        ox, oy = op.output_height, op.output_width
        return {"x": ox, "y": oy, "z": c}[_reshuffle_split_dim(ox, oy, c)]
    if name in ("PAD", "UPSAMPLE"):
        return c if in_planar else h
    if name == "MAXPOOL":
        return c
    return h


def tp_descriptors(op: EtnaOp, tp_core_count: int, in_addr: int, out_addr: int, lut_addr: int | None,
                   mesa_compat: bool = False, *, in_planar: bool = False) -> list[list[int]]:
    """One 31-word TP descriptor per core used by a TP job.

    in_addr / out_addr: GPU VAs of the job's input and output tensors (already including any tensor offset);
    lut_addr: VA of the 1024-word PWL LUT (RELU/ABSOLUTE/LOGISTIC/TABLE only). in_planar: PAD only — the input tensor
    holds planar data (a conv output not transposed back) rather than NHWC.
    """
    if op.type != KIND_TP:
        raise ValueError("not a TP job")
    name = TP_TYPES[op.tp_type]
    n = tp_cores_used(op, tp_core_count)
    if not mesa_compat or name in ("MAXPOOL", "UPSAMPLE"):  # never give a core an empty share (Mesa does, e.g.
        # PAD of a 3-channel planar tensor; MAXPOOL and UPSAMPLE are not Mesa's)
        n = max(1, min(n, _split_extent(op, in_planar)))
    if name == "TRANSPOSE":
        cores = _transpose(op)
    elif name == "DETRANSPOSE":
        cores = _detranspose(op, mesa_compat)
    elif name == "RESHUFFLE":
        cores = _reshuffle(op, n, mesa_compat)
        while not mesa_compat and n > 1 and any(_empty_input(c.fields) for c in cores):
            # the last core's share is only SAME padding past the image (e.g. 8x8 or 5x5 on 4 cores): Mesa gives
            # it an input of 0 or -1 columns; use fewer cores so every one reads part of the image
            n -= 1
            cores = _reshuffle(op, n, mesa_compat)
    elif name == "PAD":
        cores = _pad(op, n, mesa_compat, in_planar)
    elif name == "MAXPOOL":
        cores = _maxpool(op, n)
    elif name == "UPSAMPLE":
        cores = _upsample(op, n, in_planar)
    elif name in PWL_TYPES:
        if lut_addr is None:
            raise ValueError(f"{name} needs the PWL LUT address")
        cores = _pwl(op, n, lut_addr)
    else:  # pragma: no cover
        raise ValueError(f"unknown TP type {op.tp_type}")
    out = []
    for i, core in enumerate(cores):
        f = dict(core.fields)
        f["in_image_base_address"] = (in_addr + core.in_off) & ADDR_MASK
        f["out_image_base_address"] = (out_addr + core.out_off) & ADDR_MASK
        f["no_flush"] = int(i < len(cores) - 1)  # only the last core's descriptor flushes
        out.append(TP.pack(**f))
    return out


# ---- reference model ----------------------------------------------------------------------------------------------

def _axis_tiles(start: int, end: int, size: int, inc: int) -> tuple[np.ndarray, np.ndarray]:
    """Tile origins along one axis and each tile's length (tiles clipped at the window end). Pooling tiles overlap
    by size - inc; a tile starts while it still holds input past that overlap."""
    overlap = max(size - inc, 0)
    origins = np.arange(start, max(end + 1 - overlap, start + 1), max(inc, 1), dtype=np.int64)
    lengths = np.minimum(origins + max(size, 1), end + 1) - origins
    return origins, lengths


def _pool_window(d: dict[str, int]) -> tuple[int, int, int, int]:
    """(kx, ky, sx, sy) of the ALU's max pooling (1, 1, 1, 1 when off) [INFERRED, etnaviv-maxpool.md]."""
    if d["alu_horz_processing"] == 0 and d["alu_vert_processing"] == 0:
        return 1, 1, 1, 1
    if (d["alu_horz_processing"], d["alu_vert_processing"]) != (MAXPOOL_MODE, MAXPOOL_MODE):
        raise ValueError("horizontal/vertical processing other than max pooling is not modelled")
    return (d["alu_horz_proc_count"] + 1, d["alu_vert_proc_count"] + 1, d["alu_horz_proc_stride"] + 1,
            d["alu_vert_proc_stride"] + 1)


def _stream(d: dict[str, int]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Input coordinates (x, y, z) in processing order and each element's boundary level.

    Order: planes (z, incl. over-fetched ones), tile rows, tile columns, rows in tile, columns in tile.
    Level: 0 inside a tile row, 1 last element of a tile row, 2 last of a tile, 3 last of a plane.
    """
    kx, ky, sx, sy = _pool_window(d)
    tx0, tlx = _axis_tiles(d["in_window_x_start"], d["in_window_x_end"], d["in_tile_x_size"], d["in_tile_x_inc"])
    ty0, tly = _axis_tiles(d["in_window_y_start"], d["in_window_y_end"], d["in_tile_y_size"], d["in_tile_y_inc"])
    # a pooled tile emits one element per window (the tile itself without pooling); x, y: each window's origin
    tlx, tly = (tlx - kx) // sx + 1, (tly - ky) // sy + 1
    zs = np.arange(-d["in_window_z_start_overfetch"], d["in_image_z_size"] + d["in_window_z_end_overfetch"])
    mx, my = int(tlx.max()), int(tly.max())
    # dims: z, tile row j, tile column k, row in tile, column in tile
    z = zs[:, None, None, None, None]
    j = np.arange(len(ty0))[None, :, None, None, None]
    k = np.arange(len(tx0))[None, None, :, None, None]
    yy = np.arange(my)[None, None, None, :, None]
    xx = np.arange(mx)[None, None, None, None, :]
    shape = (len(zs), len(ty0), len(tx0), my, mx)
    valid = np.broadcast_to((yy < tly[j]) & (xx < tlx[k]), shape)
    row_end = (xx == tlx[k] - 1) & (yy < tly[j])
    tile_end = row_end & (yy == tly[j] - 1)
    plane_end = tile_end & (j == len(ty0) - 1) & (k == len(tx0) - 1)
    level = row_end.astype(np.int8) + tile_end + plane_end
    x = np.broadcast_to(tx0[k] + xx * sx, shape)[valid]
    y = np.broadcast_to(ty0[j] + yy * sy, shape)[valid]
    return x, y, np.broadcast_to(z, shape)[valid], np.broadcast_to(level, shape)[valid]


def _loop_groups(d: dict[str, int]) -> list[list[int]]:
    """Loops 0..6 cut into groups after every loop whose reset flag is set (only loops 1..3 have one)."""
    groups, cur = [], []
    for k in range(7):
        cur.append(k)
        if 1 <= k <= 3 and d[f"out_loop_{k}_reset"]:
            groups.append(cur)
            cur = []
    groups.append(cur)
    return groups


def _out_offsets(d: dict[str, int], level: np.ndarray) -> np.ndarray:
    """Output offset of each streamed element from the loop counters (etnaviv-tp.md §Model, [INFERRED]).

    Group g counts the boundaries of level >= g (level 0: every element) since the last boundary of level > g
    and spreads that count mixed-radix over its loops (count 0 = unbounded; a group's top loop wraps). Without
    reset flags there is one group: a plain mixed-radix counter over the element stream.
    """
    groups = _loop_groups(d)
    n = len(level)
    idx = np.arange(n, dtype=np.int64)
    offs = np.zeros(n, np.int64)
    for g, loops in enumerate(groups):
        inc_ev = level >= g
        cum = np.concatenate([[0], np.cumsum(inc_ev)])  # cum[e] = increments before element e
        if g < len(groups) - 1:
            reset = level >= g + 1
            start = np.maximum.accumulate(np.where(reset, idx + 1, 0))  # first element after a reset
            start = np.concatenate([[0], start[:-1]])
            v = cum[idx] - cum[start]
        else:
            v = cum[idx]
        for k in loops:  # a carry out of the group's top loop is dropped (the next boundary resets it)
            count = d[f"out_loop_{k}_count"] if k < 6 else 0  # loop 6 has no count
            if count:
                digit, v = v % count, v // count
            else:  # count 0: unbounded, takes everything left
                digit, v = v, np.zeros_like(v)
            offs += digit * d[f"out_loop_{k}_inc"]
    return offs


def _alu(d: dict[str, int], v: np.ndarray, lut: np.ndarray | None) -> np.ndarray:
    """uint8 in -> uint8 out: subtract in_zp, optional PWL lookup and rescale, add out_zp, saturate."""
    a = v.astype(np.float64) - d["in_zp"]
    if d["alu_pwl_enable"]:
        if lut is None:
            raise ValueError("PWL descriptor needs its LUT")
        a = _pwl_apply(np.asarray(lut, np.uint32), a)
        shift = d["alu_output_postshift"]
        shift = shift - 128 if shift >= 64 else shift  # signed 7-bit [INFERRED]
        a = a * (1.0 + d["alu_output_post_multiplier"] / 2.0**15) * 2.0**-shift
    return np.clip(np.rint(a) + d["out_zp"], 0, 255).astype(np.uint8)


def _pwl_apply(lut: np.ndarray, a: np.ndarray) -> np.ndarray:
    """Piece-wise linear lookup: index = top 10 bits of the fp21 input, the low 11 bits interpolate [INFERRED].

    Inputs here are small integers (|a| <= 255), exactly representable in fp21.
    """
    mag = np.abs(a)
    e = np.floor(np.log2(np.maximum(mag, 1.0))).astype(np.int64)
    mant = np.where(mag > 0, np.rint((mag / np.exp2(e) - 1.0) * 2**15), 0).astype(np.int64)
    c = np.where(mag > 0, ((e + 15) << 15) | mant, 0) | np.where(a < 0, 0x100000, 0)
    i = c >> 11
    frac = (c & 0x7FF) / 2048.0
    vals = fp21_value(lut)
    nxt = np.minimum(i + 1, len(lut) - 1)
    nxt = np.where((i == 511) | (i == 1023), i, nxt)  # no interpolation across the sign boundary
    return vals[i] + frac * (vals[nxt] - vals[i])


def tp_execute(descs: Sequence[Sequence[int]], mem: dict[int, np.ndarray], lut: np.ndarray | None = None) -> None:
    """Run TP descriptors (one job, cores in order) on `mem` = {buffer VA: uint8 array}, in place.

    Each core streams its input window (elements outside the image read as the input zero point, i.e. padding)
    through the ALU and writes each element to out_base + sum(loop index * loop inc).
    """
    def locate(addr: int) -> tuple[np.ndarray, int]:
        for base, buf in mem.items():
            if base <= addr <= base + len(buf):  # a core with nothing to read may sit at the end
                return buf, addr - base
        raise ValueError(f"address {addr:#x} outside every buffer")

    for words in descs:
        d = TP.decode(list(words))
        src, in_off = locate(d["in_image_base_address"])
        dst, out_off = locate(d["out_image_base_address"])
        x0, y0, z, level = _stream(d)
        kx, ky, _, _ = _pool_window(d)
        vals = np.zeros(len(x0), np.uint8)
        for dy in range(ky):  # the window's maximum (a single element without pooling)
            for dx in range(kx):
                x, y = x0 + dx, y0 + dy
                inside = ((x >= 0) & (x < d["in_image_x_size"]) & (y >= 0) & (y < d["in_image_y_size"])
                          & (z >= 0) & (z < d["in_image_z_size"]))
                addr = in_off + z * d["in_image_slice"] + y * d["in_image_stride"] + x
                read = np.full(len(x), d["in_zp"], np.uint8)
                read[inside] = src[addr[inside]]
                vals = read if dx == dy == 0 else np.maximum(vals, read)
        dst[out_off + _out_offsets(d, level)] = _alu(d, vals, lut)


def tp_run(descs: Sequence[Sequence[int]], in_addr: int, in_bytes: np.ndarray, out_addr: int, out_size: int,
           lut: np.ndarray | None = None) -> np.ndarray:
    """Convenience: one input and one output buffer; returns the output bytes (zero-filled before the job)."""
    mem = {in_addr: np.asarray(in_bytes, np.uint8).ravel().copy(), out_addr: np.zeros(out_size, np.uint8)}
    tp_execute(descs, mem, lut)
    return mem[out_addr]
