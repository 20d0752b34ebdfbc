"""Weight packing for the RK3588 CNA: regular convolutions use the shared cube (..cube, rocket.md §3.2);
depthwise (§3.3): one kernel, blocks of 64 channels, tap-major, then channel.

Vectorized: pad to whole blocks, transpose into packing order, drop the entries that do not exist.
"""

from __future__ import annotations

import numpy as np

from ..cube import WEIGHT_GROUP, kernels, pack_conv_into, packed_conv_bytes, packed_input_channels
from ..geometry import FEATURE_ATOM, align

DW_GROUP = 64  # depthwise: channels per block


def alloc_size(kh: int, kw: int, in_c: int, out_c: int, depthwise: bool) -> int:
    """Mesa's (generous) weight buffer size; the packed bytes are a prefix of it."""
    return kh * kw * kernels(out_c, depthwise) * align(max(in_c, FEATURE_ATOM), WEIGHT_GROUP) * 2


def pack_depthwise(weights: np.ndarray, w_zp: int) -> np.ndarray:
    """Pack stored int8 depthwise weights (1, KH, KW, C); returns KH*KW*IC bytes."""
    _, kh, kw, c = weights.shape
    c_p = packed_input_channels(c)
    g = -(-c_p // DW_GROUP)
    full = np.full((kh, kw, g * DW_GROUP), w_zp, np.int8)
    full[:, :, :c] = weights[0]
    blocks = full.reshape(kh, kw, g, DW_GROUP).transpose(2, 0, 1, 3)
    keep = np.arange(g * DW_GROUP).reshape(g, 1, 1, DW_GROUP) < c_p
    return blocks[np.broadcast_to(keep, blocks.shape)]


def pack(weights: np.ndarray, w_zp: int, depthwise: bool) -> bytes | bytearray:
    """The packed weight bytes (a regular convolution's are packed in place into the buffer returned)."""
    if depthwise:
        return pack_depthwise(weights, w_zp).tobytes()
    out = bytearray(packed_conv_bytes(weights.shape))
    pack_conv_into(weights, w_zp, out)
    return out
