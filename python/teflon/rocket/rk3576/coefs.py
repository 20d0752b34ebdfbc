"""RK3576 coefficient table and shift word (docs/hardware/rocket-rk3576.md, "DPU"); the per-channel
arithmetic (multipliers, bias rescaling, shift, error bound, OUT_CVT) is ..perchannel, shared with RK3588.

Per output channel the DPU computes  u = round((acc + A + B * sum_x) * C / 2^sh)  (to nearest, ties to even:
rounding.shift_even),  then OUT_CVT.
- B: minus the stored weight zero point (direct only; depthwise weights carry w - zw themselves);
- C: the channel's weight scale relative to the layer's: C = round(2^q * s_w / s_one), where s_one is the
  weight scale C = 2^q stands for. Per-tensor weights: q = 14, C = 2^14 (the vendor's Q14, an exact
  identity with shift 14). Per-channel weights: q = 15 and the largest scale gets C = 32767 (the int16
  field's top), which halves C's rounding error against the vendor's Q14 (C <= 2^14);
- A: the RK3588 bias correction, bias - zxs * sum(w - zw) (..requant.bias_table without truncation), with the
  model's bias scaled by s_w / (s_one * C / 2^q) so that it survives C's rounding (adjusted_bias);
- sh (the shift word, one shift for both signs, stored after the table in the same buffer): 14 for
  per-tensor weights, the vendor's value. Per-channel layers use the smallest shift for which v * C >> sh
  provably stays inside int32 (bs_shift): u then keeps q - sh fractional bits, which OUT_CVT (built from
  s_one * 2^(sh - q)) removes with its one rounding. With sh = q, u would be rounded to whole accumulator
  units of the largest-scale channel: up to half an output LSB when sx * s_ref / sy approaches 1
  (tf2_mobilenet_v2_1.0_224_ptq's first depthwise layer: 0.44).
"""

from __future__ import annotations

import numpy as np

from ..perchannel import SHIFT

GROUP = 8  # output channels per table group
DIRECT_GROUP_BYTES = 64  # int32 A[8], int16 B[8], int16 C[8]
DW_GROUP_BYTES = 48  # int32 A[8], int16 C[8]
TABLE_CHANNELS = 16  # the table covers the output channels rounded up to a whole 16-channel group
SHIFT_AREA = 256  # bytes reserved after the table for the shift word (the vendor's block is 256 B)


def shift_word(shift: int) -> int:
    """The 32-bit shift word: bits 0..5 the shift of values >= 0, bits 8..13 of values < 0 [R76-GREG]."""
    if not 0 <= shift < 64:
        raise ValueError(f"coefficient shift {shift} outside 0..63")
    return shift | shift << 8


def coefficient_table(a: np.ndarray, b: int, c: np.ndarray, depthwise: bool) -> bytes:
    """Groups of 8 channels: A int32[8], (direct) B int16[8], C int16[8]; padded channels A=B=0, C=2^14."""
    n = -(-len(a) // TABLE_CHANNELS) * TABLE_CHANNELS
    groups = n // GROUP
    aa = np.zeros(n, "<i4")
    aa[: len(a)] = a
    cc = np.full(n, 1 << SHIFT, "<i2")
    cc[: len(c)] = c
    parts = [aa.reshape(groups, GROUP).view(np.uint8)]
    if not depthwise:
        bb = np.zeros(n, "<i2")
        bb[: len(a)] = b
        parts.append(bb.reshape(groups, GROUP).view(np.uint8))
    parts.append(cc.reshape(groups, GROUP).view(np.uint8))
    return np.concatenate(parts, axis=1).tobytes()


def coefficient_buffer(table: bytes, shift: int) -> bytes:
    """Table followed by the shift word (and the rest of its 256-byte block, zeroed)."""
    tail = np.zeros(SHIFT_AREA // 4, "<u4")
    tail[0] = shift_word(shift)
    return table + tail.tobytes()
