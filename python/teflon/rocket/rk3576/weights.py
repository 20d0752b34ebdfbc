"""Weight cubes for the RK3576 CNA (docs/hardware/rocket-rk3576.md, "Weight cube").

Direct convolutions use the RK3588 cube unchanged (..cube.pack_conv) [R76-GREG: identical layout]. Input
channels are padded to a multiple of 16 with zeros: the CNA only reads the DATAIN_CHANNEL real channels.

Depthwise: groups of 64 channels; inside a group tap-major (kernel row, then column); inside a tap two
bytes per channel that the MAC adds, interleaved by channel pairs: channel c's bytes at 4*(c/2) + c%2 and two
further on (measured on an RK3576 by a third party, one weight byte at a time: docs/hardware/rocket-rk3576.md
"Weight cube"). The vendor leaves the second byte 0; here the two carry w - zw (stored domain), which reaches
-255..255 for uint8 weights with a zero point, so the weight zero point needs no per-channel B term (the
depthwise coefficient group has none).
"""

from __future__ import annotations

import numpy as np

from ..cube import pack_conv_into, packed_conv_bytes
from ..geometry import FEATURE_ATOM, align

DW_GROUP = 64
PAIR_RANGE = (-255, 254)  # the sums of two int8 bytes a depthwise weight minus its zero point can take here


def split_pairs(centered: np.ndarray) -> np.ndarray:
    """int values in [-255, 254] -> (..., 2) int8 byte pairs whose sum is the value."""
    if centered.size and (centered.min() < PAIR_RANGE[0] or centered.max() > PAIR_RANGE[1]):
        raise ValueError(f"depthwise weight minus zero point outside {PAIR_RANGE[0]}..{PAIR_RANGE[1]}")
    first = np.clip(centered, -128, 127)
    return np.stack([first, centered - first], axis=-1).astype(np.int8)


def pack_depthwise(weights: np.ndarray, w_zp: int) -> np.ndarray:
    """Stored int8 depthwise weights (1, KH, KW, C) -> packed bytes, round16(C)*KH*KW*2 of them."""
    _, kh, kw, c = weights.shape
    c_p = align(c, FEATURE_ATOM)
    pairs = np.zeros((kh, kw, c_p, 2), np.int8)
    pairs[:, :, :c] = split_pairs(weights[0].astype(np.int16) - w_zp)
    # per channel pair (2p, 2p+1) the bytes first(2p), first(2p+1), second(2p), second(2p+1); c_p is even, so the
    # 64-channel groups below are still 128 consecutive bytes of a tap
    pairs = pairs.reshape(kh, kw, c_p // 2, 2, 2).transpose(0, 1, 2, 4, 3).reshape(kh, kw, c_p, 2)
    # the whole 64-channel groups, then the narrower last one (slices, not a gather of the entries that exist)
    whole = c_p // DW_GROUP * DW_GROUP
    parts = []
    if whole:
        blocks = pairs[:, :, :whole].reshape(kh, kw, whole // DW_GROUP, DW_GROUP, 2)
        parts.append(blocks.transpose(2, 0, 1, 3, 4).reshape(-1))
    if c_p > whole:
        parts.append(pairs[:, :, whole:].reshape(-1))
    return np.concatenate(parts)


def pack(weights: np.ndarray, w_zp: int, depthwise: bool) -> bytes | bytearray:
    """Packed weight bytes; `weights` stored int8 (OHWI, or (1, KH, KW, C) depthwise)."""
    if depthwise:
        return pack_depthwise(weights, w_zp).tobytes()
    return pack_chunks(weights, weights.shape[0])


def pack_chunks(weights: np.ndarray, chunk: int) -> bytearray:
    """The direct cubes of the output-channel chunks of `chunk` kernels back to back (one cube when the layer has
    one chunk), each packed in place into the buffer returned."""
    parts = [weights[oc0:oc0 + chunk] for oc0 in range(0, weights.shape[0], chunk)]
    out = bytearray(sum(packed_conv_bytes(p.shape) for p in parts))
    at = 0
    for p in parts:
        pack_conv_into(p, 0, out, at)
        at += packed_conv_bytes(p.shape)
    return out
