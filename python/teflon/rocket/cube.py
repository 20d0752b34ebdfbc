"""The direct-convolution weight cube, the same on RK3588 and RK3576 (rocket.md §3.2; RK3576 per the bring-up
notes, docs/hardware/rocket-rk3576.md "Weight cube").

Blocks of 32 output channels x 32 input channels; inside a block, tap-major (kernel row, then kernel column),
then output channel, then input channel. Input channels are padded to IC = align(max(ICr, 16), 16) with the
stored weight zero point (a real zero weight), so the last input-channel block may be 16 wide; output channels
are padded to an even count (pad kernels are 0) and the last output block is not padded to 32.

Vectorized: pad the channels, then transpose the whole 32-wide blocks and the narrower last block of each axis
into packing order separately (plain strided copies, no gather of the entries that exist).
"""

from __future__ import annotations

import numpy as np

from .geometry import FEATURE_ATOM, align

WEIGHT_GROUP = 32  # channels per input/output block


def packed_input_channels(in_c: int) -> int:
    """IC programmed in DATAIN_CHANNEL / WEIGHT_BYTES_PER_KERNEL."""
    return align(max(in_c, FEATURE_ATOM), FEATURE_ATOM)


def kernels(out_c: int, depthwise: bool) -> int:
    """WEIGHT_KERNELS: output channels padded to even, 1 for depthwise."""
    return 1 if depthwise else align(out_c, 2)


def _view(a: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """`a` reshaped without a copy (raises if that is impossible): the packers write through it."""
    v = a.view()
    v.shape = shape
    return v


def _pack_block_rows(w: np.ndarray, rows: int, out: np.ndarray) -> None:
    """Output-channel blocks of `rows` channels each (w: (blocks * rows, KH, KW, IC)) -> `out`, one row of packed
    bytes per block: its whole 32-wide input-channel blocks, then the narrower last one; inside each, tap-major,
    then output channel, then input channel. One strided copy per part, straight into the packed buffer."""
    n, kh, kw, ic = w.shape
    blocks = n // rows
    whole = ic // WEIGHT_GROUP * WEIGHT_GROUP
    dst = _view(out, (blocks, rows * kh * kw * ic))
    split = rows * kh * kw * whole
    if whole:
        cube = w[:, :, :, :whole].reshape(blocks, rows, kh, kw, whole // WEIGHT_GROUP, WEIGHT_GROUP)
        _view(dst[:, :split], (blocks, whole // WEIGHT_GROUP, kh, kw, rows, WEIGHT_GROUP))[...] = \
            cube.transpose(0, 4, 2, 3, 1, 5)
    if ic > whole:
        cube = w[:, :, :, whole:].reshape(blocks, rows, kh, kw, ic - whole)
        _view(dst[:, split:], (blocks, kh, kw, rows, ic - whole))[...] = cube.transpose(0, 2, 3, 1, 4)


def packed_conv_bytes(shape: tuple[int, ...]) -> int:
    """Bytes of the packed cube of stored OHWI weights of `shape` (KH*KW*IC*align(OC,2))."""
    oc, kh, kw, ic = shape
    return kernels(oc, False) * kh * kw * packed_input_channels(ic)


def pack_conv_into(weights: np.ndarray, w_zp: int, out: bytearray, at: int = 0) -> None:
    """pack_conv written straight into `out` from byte `at` (a weight buffer assembled in place: no copy of the
    packed bytes into a bytes object)."""
    n = packed_conv_bytes(weights.shape)
    pack_conv(weights, w_zp, np.frombuffer(out, np.int8, n, at))


def pack_conv(weights: np.ndarray, w_zp: int, out: np.ndarray | None = None) -> np.ndarray:
    """Pack stored int8 OHWI weights; returns the packed int8 bytes (KH*KW*IC*align(OC,2)), in `out` when given
    (int8, that many entries)."""
    oc, kh, kw, ic = weights.shape
    ic_p = packed_input_channels(ic)
    oc_p = kernels(oc, False)
    full = weights
    if (oc_p, ic_p) != (oc, ic):
        full = np.zeros((oc_p, kh, kw, ic_p), np.int8)
        full[:oc, :, :, :ic] = weights
        full[:oc, :, :, ic:] = w_zp  # padded input channels hold a real zero weight
        # pad kernels (oc..oc_p) stay 0: their output channel is never read back
    if out is None:
        out = np.empty(oc_p * kh * kw * ic_p, np.int8)
    whole = oc_p // WEIGHT_GROUP * WEIGHT_GROUP
    if whole:
        _pack_block_rows(full[:whole], WEIGHT_GROUP, out[:whole * kh * kw * ic_p])
    if oc_p > whole:
        _pack_block_rows(full[whole:], oc_p - whole, out[whole * kh * kw * ic_p:])
    return out
