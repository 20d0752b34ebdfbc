"""PWL (piece-wise linear) lookup tables of the etnaviv TP engine, and the TP output requantization.

The TP ALU converts each (input - input zero point) to a float, looks it up in a 1024-entry table of "fp21"
floats, multiplies by a per-job scale and adds the output zero point (docs/hardware/etnaviv-tp.md §PWL). RELU and
ABS use identity-like tables that do not depend on the quantization; LOGISTIC samples sigmoid(v * input_scale).

fp21: sign bit 20, 5-bit exponent (bits 15..19, bias 15), 15-bit mantissa (bits 0..14). Table entry i (< 512)
stands for the input whose fp21 pattern is `(i - 16) * 0x800 + 0x8000`, i.e. its top 10 bits are i: 16 entries
below the smallest normal, 480 normal entries, 16 for the inf/NaN exponent; entries 512..1023 mirror them for
negative inputs (../shared/docs/etnaviv.md §5.7; the index interpretation is [INFERRED] there).
"""

from __future__ import annotations

import numpy as np

from teflon.etnaviv.ops import KIND_TP, TP_TYPES, EtnaOp
from teflon.unary import logistic_values, sigmoid_f32

LUT_ENTRIES = 1024  # HWDB TPEngine_PwlLUTCount
HALF = 512
FP21_MAX = 0xF7FFF  # largest finite fp21: exponent 30, mantissa 0x7FFF
FP21_NEG_ZERO = 0x100000
PWL_TYPES = ("RELU", "ABSOLUTE", "LOGISTIC", "TABLE")  # TABLE: any 8-bit map (pwl_table.py), not Mesa's


def _identity_half() -> np.ndarray:
    """One 512-entry half of an identity table: each normal entry holds its own (positive) input value."""
    half = np.zeros(HALF, np.uint32)
    i = np.arange(16, 496, dtype=np.uint32)
    half[16:496] = 0x8000 + (i - 16) * 0x800
    half[496:] = FP21_MAX  # inf/NaN inputs saturate to the largest finite value
    return half


def fp21_to_f32(c: np.ndarray) -> np.ndarray:
    """fp21 patterns -> float32 (re-bias the exponent 15 -> 127 and widen the mantissa 15 -> 23 bits)."""
    c = np.asarray(c, np.uint32)
    bits = ((c & 0xFFFFF) << 8) | ((c & 0x100000) << 11)
    return (bits + np.uint32(0x38000000)).astype(np.uint32).view(np.float32)


def f32_to_fp21(f: np.ndarray) -> np.ndarray:
    """float32 -> fp21 the way the table writer rounds (etnaviv.md §5.7): half-to-even on the dropped 8 bits.

    Tiny values (below 2^-14) use an fp16-style denormal mantissa round(2^24 * |f|) — what the reference
    writer does, although fp21's own denormal unit would be 2^-29; values above the range saturate.
    """
    f = np.asarray(f, np.float32)
    bits = f.view(np.uint32).astype(np.int64)
    sign = (bits >> 31) << 20
    exp = (bits >> 23) & 0xFF
    mant = bits & 0x7FFFFF
    e = exp - 127
    # round half to even of mant / 256; a carry out of the mantissa correctly bumps the exponent
    q, r = mant >> 8, mant & 0xFF
    q = q + ((r > 0x80) | ((r == 0x80) & ((q & 1) == 1)))
    normal = ((e + 15) << 15) + q
    tiny = np.rint(np.abs(f.astype(np.float64)) * 2.0**24).astype(np.int64)  # rint: half to even
    out = np.where(e < -14, tiny, normal)
    out = np.where(e > 15, (0x1E << 15) | 0x7FFF, out)
    out = np.where(exp == 0, 0, out)  # zero and float32 denormals
    nan_or_inf = exp == 0xFF
    out = np.where(nan_or_inf, (0x1F << 15) | (mant >> 8) | (mant != 0), out)  # [INFERRED], never used here
    return (sign | out).astype(np.uint32)


def relu_lut() -> np.ndarray:
    """Identity for positive inputs, -0 for every negative input."""
    return np.concatenate([_identity_half(), np.full(HALF, FP21_NEG_ZERO, np.uint32)])


def abs_lut() -> np.ndarray:
    """Identity for positive inputs; negative inputs give their magnitude (the small ones -0)."""
    neg = _identity_half()
    neg[:16] = FP21_NEG_ZERO
    return np.concatenate([_identity_half(), neg])


def logistic_lut(input_scale: float) -> np.ndarray:
    """sigmoid(v * input_scale) sampled at each entry's input value v (v = the integer input minus zero point)."""
    s = np.float32(input_scale)
    half = np.float32(0.5)
    lut = np.empty(LUT_ENTRIES, np.uint32)
    lut[0:16] = f32_to_fp21(np.full(16, half))  # tiny positive inputs
    c_pos = 0x8000 + np.arange(480, dtype=np.uint32) * 0x800  # entries 16..495
    lut[16:496] = f32_to_fp21(sigmoid_f32(fp21_to_f32(c_pos) * s))
    lut[496:512] = f32_to_fp21(np.full(16, np.float32(1.0)))
    # Negative half: the writer starts one entry later (entry 528, the smallest negative normal, keeps 0.5).
    lut[512:529] = f32_to_fp21(np.full(17, half))
    c_neg = 0x108800 + np.arange(479, dtype=np.uint32) * 0x800  # entries 529..1007
    lut[529:1008] = f32_to_fp21(sigmoid_f32(fp21_to_f32(c_neg) * s))
    lut[1008:] = f32_to_fp21(np.zeros(16, np.float32))
    return lut


def entry_index(v: int) -> int:
    """LUT index of the integer input v: the top 10 bits of its fp21 pattern (sign, exponent, 4 mantissa bits)."""
    a = abs(v)
    if a == 0:
        return 0
    e = a.bit_length() - 1
    pattern = ((e + 15) << 15) | (((a - (1 << e)) << 15) >> e)
    return (pattern >> 11) + (HALF if v < 0 else 0)


def _logistic_targets(op: EtnaOp, v: np.ndarray) -> np.ndarray:
    """TFLite's quantized sigmoid of the integer inputs v (relative to the input zero point), stored uint8."""
    return logistic_values(v, op.input_scale, op.output_scale, op.output_zero_point, 0, 255)


def logistic_lut_fitted(op: EtnaOp) -> np.ndarray:
    """Default mode: Mesa's LOGISTIC layout, with the entries the stored inputs v (|v| <= 255) interpolate
    between chosen so the interpolated value, scaled by the job's output multiplier, rounds to TFLite's result.

    Between entries the engine interpolates linearly on the low 11 mantissa bits (the reading under which the
    identity RELU/ABS tables are exact; [INFERRED]); above |v| = 32 the entries lie 2, 4, 8 inputs apart, so
    entries sampled from the sigmoid itself leave up to ~0.5 LSB of chord error between them (~1.5 % of the
    outputs off by one). Walking outwards from |v| = 32 (entries below are exact inputs), each next entry is
    the sigmoid value moved into the interval that keeps every integer input of its segment inside its rounding
    interval (left as is when the interval is empty)."""
    lut = logistic_lut(op.input_scale)
    mult, shift = tp_requant(op)
    shift = shift - 128 if shift >= 64 else shift
    m = (1.0 + mult / 2.0**15) * 2.0**-shift  # output = round(lut value * m) + out_zp
    if not m > 0:
        return lut
    for sign in (1, -1):
        y_prev = float(fp21_value(lut[entry_index(sign * 32)]))  # entries below |v| = 32 are exact inputs
        for v0 in range(32, 256):
            h = 1 << (v0.bit_length() - 5)  # entry spacing: 2, 4, 8 in [32, 64), [64, 128), [128, 256)
            if v0 % h:
                continue
            v1 = v0 + h
            idx = entry_index(sign * v1)
            vs = np.arange(v0 + 1, v1 + 1)
            t = (vs - v0) / h
            tgt = _logistic_targets(op, sign * vs) - op.output_zero_point
            lo = np.where(tgt + op.output_zero_point <= 0, -np.inf, (tgt - 0.5 + 1e-3) / m)
            hi = np.where(tgt + op.output_zero_point >= 255, np.inf, (tgt + 0.5 - 1e-3) / m)
            y_lo = float(np.max((lo - (1 - t) * y_prev) / t))
            y_hi = float(np.min((hi - (1 - t) * y_prev) / t))
            y = float(fp21_value(lut[idx]))
            if y_lo <= y_hi:
                y = float(np.clip(y, y_lo, y_hi))
            lut[idx] = f32_to_fp21(np.float32(y))
            y_prev = float(fp21_value(lut[idx]))
    return lut


def pwl_lut(op: EtnaOp, mesa_compat: bool = True) -> np.ndarray | None:
    """The 1024 u32 LUT words of a RELU/ABSOLUTE/LOGISTIC/TABLE TP job; None for other jobs (no LUT).
    mesa_compat=False fits the LOGISTIC entries to TFLite's rounding (`logistic_lut_fitted`)."""
    if op.type != KIND_TP:
        return None
    name = TP_TYPES[op.tp_type]
    if name == "RELU":
        return relu_lut()
    if name == "ABSOLUTE":
        return abs_lut()
    if name == "LOGISTIC":
        return logistic_lut(op.input_scale) if mesa_compat else logistic_lut_fitted(op)
    if name == "TABLE":
        return op.lut
    return None


def tp_requant(op: EtnaOp) -> tuple[int, int]:
    """(alu_output_post_multiplier, alu_output_postshift as 7-bit field) of a PWL job (etnaviv.md §4, TP requant).

    The real factor is (1 + multiplier / 2^15) * 2^-shift with `shift` a signed 7-bit value [INFERRED]: LOGISTIC
    with the usual output scale 1/256 needs 2^+8, i.e. shift -8 (written 0x78).
    """
    if TP_TYPES[op.tp_type] == "TABLE":
        return 0, 0  # scale 1: the table holds the output relative to the output zero point (pwl_table.py)
    out_scale = np.float32(op.output_scale)
    num = np.float32(1.0) if TP_TYPES[op.tp_type] == "LOGISTIC" else np.float32(op.input_scale)
    with np.errstate(divide="ignore", over="ignore"):
        scale = np.float32(num / out_scale)
    bits = int(np.array(scale, np.float32).view(np.uint32))
    # round the 23-bit mantissa to 15 bits, half to even (a carry may bump the exponent, as it should)
    if bits & 0x80 and (bits & 0x7F or bits & 0x100):
        bits += 0x100
    multiplier = (bits >> 8) & 0x7FFF
    shift = (127 - ((bits >> 23) & 0xFF)) & 0x7F
    return multiplier, shift


def fp21_value(c: np.ndarray) -> np.ndarray:
    """fp21 patterns -> float64 values, zero and denormals included (for the reference model)."""
    c = np.asarray(c, np.int64)
    sign = np.where(c & 0x100000, -1.0, 1.0)
    exp = (c >> 15) & 0x1F
    mant = (c & 0x7FFF).astype(np.float64)
    normal = (1.0 + mant / 2.0**15) * np.exp2(exp.astype(np.float64) - 15)
    return sign * np.where(exp == 0, mant * 2.0**-29, normal)
