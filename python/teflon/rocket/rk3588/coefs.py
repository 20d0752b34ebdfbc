"""RK3588-only coefficient values: CORE_CLIP_TRUNCATE (rocket.md §3.4) and the per-channel BS stream records.
The bias table and OUT_CVT both generations share are in ..requant, the per-channel arithmetic in ..perchannel.
"""

from __future__ import annotations

import numpy as np

from ..requant import channel_sums, f32_bits

# Weight scales (float32 bit patterns) for which Mesa sets CLIP_TRUNCATE = 1 (rkt_coefs.c). Kept so
# the encoder reproduces Mesa's streams for models that hit them; see truncate_bits().
MESA_TRUNCATE_SCALES = frozenset(
    {
        0x3A88323F, 0x3C0060DE, 0x3C06022D, 0x3C1642E3, 0x3C1E3F51, 0x3C5C8AA8, 0x3C615E93, 0x3C7326A2,
        0x3C783013, 0x3D1748E6, 0x3D282992, 0x3D2E87AE, 0x3D77F5F6, 0x3A9A5956, 0x3CAEBC56,
    }
)  # fmt: skip

ACC_BITS = 32  # CORE -> DPU path width (NVDLA CACC: 34-bit int8 accumulator, clipped to 32)


def truncate_bits(w_scale: np.float32, weights: np.ndarray, depthwise: bool) -> int:
    """CORE_CLIP_TRUNCATE: right shift applied to the accumulator before the DPU.

    Mesa's table (kept for byte-compatibility) or, whichever is larger, the shift that keeps the
    worst-case MAC result of stored int8 data (|xs| <= 128) inside ACC_BITS signed bits.
    """
    t = 1 if f32_bits(w_scale) in MESA_TRUNCATE_SCALES else 0
    taps = weights.size // max(weights.shape[-1] if depthwise else weights.shape[0], 1)  # per output channel
    if 128 * 128 * taps < 1 << (ACC_BITS - 1):  # no sum of |w| can reach the bound: no pass over the weights
        return t
    # |w| of int8 read as uint8 is exact (|-128| wraps to -128, i.e. 128): no int16 copy of the weights
    w = np.abs(weights).view(np.uint8)
    per_oc = channel_sums(w.reshape(-1, w.shape[-1]), 0) if depthwise else channel_sums(w.reshape(w.shape[0], -1), 1)
    bound = int(per_oc.max(initial=0)) * 128
    need = max(bound.bit_length() + 1 - ACC_BITS, 0)  # +1: sign bit
    return max(t, need)


BS_GROUP = 8  # output channels per BS stream group (BRDMA_DATA_USE 7)


def bs_records(a: np.ndarray, ow: int, mul: np.ndarray) -> bytes:
    """The per-channel BS stream (BRDMA_DATA_USE 7): per group of 8 output channels 64 bytes, int32 ALU operands
    A[8] at 0, int16 OW operands B[8] at 32, int16 MUL operands C[8] at 48, little-endian; the last group is
    zero-filled (measured on RK3588 by a third party: docs/hardware/rocket.md "Per-channel weights")."""
    n = len(a)
    groups = -(-n // BS_GROUP)
    rec = np.zeros(groups, dtype=[("a", "<i4", BS_GROUP), ("ow", "<i2", BS_GROUP), ("mul", "<i2", BS_GROUP)])
    pad = groups * BS_GROUP - n
    rec["a"] = np.pad(np.asarray(a, np.int64), (0, pad)).reshape(groups, BS_GROUP)
    rec["ow"] = np.pad(np.full(n, ow, np.int64), (0, pad)).reshape(groups, BS_GROUP)
    rec["mul"] = np.pad(np.asarray(mul, np.int64), (0, pad)).reshape(groups, BS_GROUP)
    return rec.tobytes()
