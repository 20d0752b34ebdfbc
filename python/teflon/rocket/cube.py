"""The direct-convolution weight cube, the same on RK3588 and RK3576 (rocket.md §3.2; RK3576 per the bring-up
notes, docs/hardware/rocket-rk3576.md "Weight cube").

Blocks of 32 output channels x 32 input channels; inside a block, tap-major (kernel row, then kernel column),
then output channel, then input channel. Input channels are padded to IC = align(max(ICr, 16), 16) with the
stored weight zero point (a real zero weight), so the last input-channel block may be 16 wide; output channels
are padded to an even count (pad kernels are 0) and the last output block is not padded to 32.

Vectorized: pad to whole blocks, transpose into packing order, drop the entries that do not exist.
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


def pack_conv(weights: np.ndarray, w_zp: int) -> np.ndarray:
    """Pack stored int8 OHWI weights; returns the packed int8 bytes (KH*KW*IC*align(OC,2))."""
    oc, kh, kw, ic = weights.shape
    ic_p = packed_input_channels(ic)
    oc_p = kernels(oc, False)
    g_o = -(-oc_p // WEIGHT_GROUP)
    g_i = -(-ic_p // WEIGHT_GROUP)
    full = np.zeros((g_o * WEIGHT_GROUP, kh, kw, g_i * WEIGHT_GROUP), np.int8)
    full[:oc, :, :, :ic] = weights
    full[:oc, :, :, ic:ic_p] = w_zp  # padded input channels hold a real zero weight
    # pad kernels (oc..oc_p) stay 0: their output channel is never read back
    blocks = full.reshape(g_o, WEIGHT_GROUP, kh, kw, g_i, WEIGHT_GROUP).transpose(0, 4, 2, 3, 1, 5)
    keep_o = np.arange(g_o * WEIGHT_GROUP).reshape(g_o, WEIGHT_GROUP) < oc_p
    keep_i = np.arange(g_i * WEIGHT_GROUP).reshape(g_i, WEIGHT_GROUP) < ic_p
    mask = keep_o[:, None, None, None, :, None] & keep_i[None, :, None, None, None, :]
    mask = np.broadcast_to(mask, blocks.shape)
    return blocks[mask]
