"""RK3576 coefficient table, shift word and OUT_CVT (docs/hardware/rocket-rk3576.md, "DPU").

Per output channel the DPU computes  u = ((acc + A + B * sum_x) * C) >> 14,  then OUT_CVT.
- A: the RK3588 bias correction, bias - zxs * sum(w - zw) (coefs.bias_table without truncation), scaled by
  s_w / (s_ref * C / 2^14) so the constant part survives C's rounding (adjusted_bias);
- B: minus the stored weight zero point (direct only; depthwise weights carry w - zw themselves);
- C: per-channel multiplier: 2^14 * s_w[oc] / s_ref with s_ref the largest weight scale, so per-channel
  int8 weights share one OUT_CVT built from s_ref (exactly 2^14 for per-tensor weights).
The shift word (14 for both signs, as the vendor's live program) follows the table in the same buffer.
"""

from __future__ import annotations

import numpy as np

from . import coefs

SHIFT = 14
SHIFT_WORD = SHIFT | SHIFT << 8  # bits 0..5: shift for v >= 0, bits 8..13: for v < 0
GROUP = 8  # output channels per table group
DIRECT_GROUP_BYTES = 64  # int32 A[8], int16 B[8], int16 C[8]
DW_GROUP_BYTES = 48  # int32 A[8], int16 C[8]
TABLE_CHANNELS = 16  # the table covers the output channels rounded up to a whole 16-channel group
SHIFT_AREA = 256  # bytes reserved after the table for the shift word (the vendor's block is 256 B)
MAX_ERROR_LSB = 1.0  # largest worst-case output error the per-channel multiplier rounding may add


def multipliers(w_scales: np.ndarray) -> tuple[np.ndarray, float]:
    """(C per channel as int64, s_ref)."""
    s = np.asarray(w_scales, np.float64).reshape(-1)
    s_ref = float(s.max())
    if s_ref <= 0:
        raise ValueError("weight scales must be positive")
    c = np.maximum(np.rint(s * (1 << SHIFT) / s_ref), 1).astype(np.int64)
    return c, s_ref


def adjusted_bias(a_true: np.ndarray, w_scales: np.ndarray, c: np.ndarray, s_ref: float) -> np.ndarray:
    """A with A * C / 2^14 = a_true * s_w / s_ref to within half a unit: the constant part of every channel is
    exact whatever C's rounding (identity for per-tensor weights, where C = 2^14 and s_w = s_ref)."""
    s = np.broadcast_to(np.asarray(w_scales, np.float64).reshape(-1), c.shape)
    if np.all(c == 1 << SHIFT) and np.all(s == s_ref):
        return np.asarray(a_true, np.int64)
    a = np.rint(np.asarray(a_true, np.float64) * s / s_ref * (1 << SHIFT) / c)
    if np.any(np.abs(a) >= 1 << 31):
        raise ValueError("coefficient-table bias term overflows int32")
    return a.astype(np.int64)


def multiplier_error(w_scales: np.ndarray, c: np.ndarray, s_ref: float, sx: float, sy: float,
                     data_bound: np.ndarray) -> float:
    """Worst output error (LSB) of replacing s_w by C * s_ref / 2^14 on the data-dependent part of the
    accumulator (at most `data_bound` per channel), or over an output in the 8-bit range, whichever is
    smaller; plus the half unit of the adjusted bias."""
    s = np.asarray(w_scales, np.float64).reshape(-1)
    delta = np.abs(c * s_ref / (1 << SHIFT) - s)
    err = np.minimum(256.0 * delta / s, data_bound * delta * sx / sy) + 0.5 * c / (1 << SHIFT) * s_ref * sx / sy
    return float(err.max(initial=0.0))


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


def coefficient_buffer(table: bytes) -> bytes:
    """Table followed by the shift word (and the rest of its 256-byte block, zeroed)."""
    tail = np.zeros(SHIFT_AREA // 4, "<u4")
    tail[0] = SHIFT_WORD
    return table + tail.tobytes()


def out_cvt(in_scale: float, s_ref: float, out_scale: float) -> tuple[int, int]:
    """(OUT_CVT_SCALE, OUT_CVT_SHIFT) for the multiplier sx * s_ref / sy (no CORE truncation on RK3576)."""
    return coefs.out_cvt(np.float32(in_scale), np.float32(s_ref), np.float32(out_scale), 0)
