"""The Ethos-U55/U65 scale/bias records (what NPU_SET_SCALE_BASE / NPU_SET_SCALE_LENGTH point at).

docs/hardware/ethosu-weights.md §4. One 10-byte record per output channel, little-endian:
bytes 0-4 the 40-bit signed bias, bytes 5-8 the 32-bit unsigned multiplier, byte 9 bits 0-5 the shift
(bits 6-7 zero). Vela 5.2.0 ethosu/vela/weight_compressor.py encode_bias; Mesa ethosu_coefs.c
encode_bias_scale_u65. The output of channel c is then about (acc + bias) * multiplier / 2**shift.
"""

from __future__ import annotations

import numpy as np

RECORD_BYTES = 10
BIAS_BITS = 40
SHIFT_BITS = 6
ALIGN = 16  # the records of a kick-off start 16-byte aligned (Mesa ethosu_coefs.c, Vela api.py)


def pack_records(bias: np.ndarray, multiplier: np.ndarray, shift: np.ndarray, *, align: bool = False) -> bytes:
    """Per-channel (bias, multiplier, shift) -> the records, back to back (zero-padded to 16 bytes if align)."""
    b = np.asarray(bias, dtype=np.int64).reshape(-1)
    m = np.asarray(multiplier, dtype=np.int64).reshape(-1)
    s = np.asarray(shift, dtype=np.int64).reshape(-1)
    if not (b.shape == m.shape == s.shape):
        raise ValueError("bias, multiplier and shift need one value per channel each")
    if ((b < -(1 << (BIAS_BITS - 1))) | (b >= 1 << (BIAS_BITS - 1))).any():
        raise ValueError("bias outside the signed 40-bit range")
    if ((m < 0) | (m >= 1 << 32)).any():
        raise ValueError("multiplier outside the unsigned 32-bit range")
    if ((s < 0) | (s >= 1 << SHIFT_BITS)).any():
        raise ValueError("shift outside 0..63")
    # the low five bytes of the little-endian int64 are the 40-bit two's complement bias
    rec = np.empty((b.size, RECORD_BYTES), dtype=np.uint8)
    rec[:, 0:5] = b.astype("<i8").view(np.uint8).reshape(-1, 8)[:, :5]
    rec[:, 5:9] = m.astype("<u4").view(np.uint8).reshape(-1, 4)
    rec[:, 9] = s
    data = rec.tobytes()
    return data + bytes((-len(data)) % ALIGN) if align else data


def unpack_records(data: bytes, channels: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The first `channels` records of `data` -> (bias int64, multiplier int64, shift int64)."""
    if len(data) < channels * RECORD_BYTES:
        raise ValueError(f"{len(data)} bytes hold fewer than {channels} scale records")
    rec = np.frombuffer(bytes(data[: channels * RECORD_BYTES]), dtype=np.uint8).reshape(channels, RECORD_BYTES)
    weights = np.uint64(1) << (np.arange(5, dtype=np.uint64) * np.uint64(8))
    raw_bias = (rec[:, 0:5].astype(np.uint64) * weights).sum(axis=1).astype(np.int64)
    bias = np.where(raw_bias >= 1 << (BIAS_BITS - 1), raw_bias - (1 << BIAS_BITS), raw_bias)
    multiplier = (rec[:, 5:9].astype(np.uint64) * weights[:4]).sum(axis=1).astype(np.int64)
    return bias, multiplier, (rec[:, 9] & 0x3F).astype(np.int64)


def quantize_scale(scale: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Real per-channel scales -> (multiplier, shift) with scale = multiplier / 2**shift: the significand of
    frexp in Q31 (rounded half away from zero) and shift = 31 - exponent; a shift outside 0..63 gives the
    zero scale (0, 16). Vela 5.2.0 ethosu/vela/scaling.py quantise_scale."""
    s = np.asarray(scale, dtype=np.float64).reshape(-1)
    significand, exponent = np.frexp(s)
    q31 = significand * float(1 << 31)
    multiplier = (np.sign(q31) * np.floor(np.abs(q31) + 0.5)).astype(np.int64)
    shift = 31 - exponent.astype(np.int64)
    bad = (shift < 0) | (shift >= 1 << SHIFT_BITS)
    return np.where(bad, 0, multiplier), np.where(bad, 16, shift)


def conv_scale(input_scale: float, weight_scales: np.ndarray, output_scale: float, *,
               fully_connected: bool = False) -> np.ndarray:
    """The per-channel real rescale input_scale * weight_scale[c] / output_scale as Vela 5.2.0 computes it
    (inferred by probing, docs/hardware/ethosu-weights.md §4): in float64 from the float32 scales, except a
    FULLY_CONNECTED with one weight scale, where the product input_scale * weight_scale is float32."""
    w = np.asarray(weight_scales, dtype=np.float32).reshape(-1)
    if fully_connected and w.size == 1:
        return (np.float32(input_scale) * w).astype(np.float64) / np.float64(np.float32(output_scale))
    return np.float64(np.float32(input_scale)) * w.astype(np.float64) / np.float64(np.float32(output_scale))
