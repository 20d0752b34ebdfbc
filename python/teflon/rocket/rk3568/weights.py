"""RK3568 weight packing (docs/hardware/rk3568.md §3 "Weights"): the stored int8 bytes (w - 0x80) in the CNA's order.

Regular convolution [IAV RELOG T43, T53, T56]: kernels in groups of 16; inside a group the input channels in
slices of 32, and inside a slice every tap, then every kernel of the group, then the slice's channels. Input
channels are padded to in_channels() (8 up to 8, else a multiple of 16); a partial last slice or kernel group is
packed compact (no padding to 32 channels / 16 kernels). Padding channels hold the stored weight zero point, so
that w - zw is 0 there [GOLD: padding_bytes of the vendor's weight vectors, 3 files].

Depthwise [IAV T47/T66; GOLD; TOOLKIT]: per group of 32 channels, every tap, then the group's channels; a partial
last group takes 8, 16 or 32 channels (layout.dw_channels), padded with the stored weight zero point.
"""

from __future__ import annotations

import numpy as np

from .layout import DW_GROUP, dw_channels, in_channels

KERNEL_GROUP = 16
IC_SLICE = 32


def pack_conv(weights: np.ndarray, zp: int) -> bytes:
    """OHWI stored int8 weights (stored zero point `zp`) -> the CNA's byte order."""
    oc, kh, kw, ic = weights.shape
    cp = in_channels(ic)
    w = np.full((oc, kh * kw, cp), zp, np.int8)
    w[:, :, :ic] = weights.reshape(oc, kh * kw, ic)
    parts = []
    for g0 in range(0, oc, KERNEL_GROUP):
        grp = w[g0:g0 + KERNEL_GROUP]  # (k, taps, cp)
        for s0 in range(0, cp, IC_SLICE):
            parts.append(grp[:, :, s0:s0 + IC_SLICE].transpose(1, 0, 2).reshape(-1))  # [tap][k][ic]
    return np.concatenate(parts).tobytes()


def pack_depthwise(weights: np.ndarray, zp: int) -> bytes:
    """(1, KH, KW, C) stored int8 weights -> [group of 32][tap][channel], the last group compact."""
    _, kh, kw, c = weights.shape
    cp = dw_channels(c)
    w = np.full((kh * kw, cp), zp, np.int8)
    w[:, :c] = weights.reshape(kh * kw, c)
    return b"".join(w[:, g0:g0 + DW_GROUP].tobytes() for g0 in range(0, cp, DW_GROUP))
