"""MUL, ADD and SUB of a feature map and a constant that is one value or one value per channel (broadcast over H, W):
a 1x1 depthwise convolution, whose requantization is then the one every convolution has.

- MUL(x, c): weights k·(c - zc) per channel, a per-channel bias and one OUT_CVT, chosen over every input value so
  that the DPU's single rounding lands where TFLite's MultiplyByQuantizedMultiplier lands (it rounds twice, which
  a plain requantization misses on up to a few tens of % of a fan-in-1 op's outputs when the multiplier is
  large); claimed when they agree on at least MIN_SHARE of the (input value, channel) pairs.
- ADD(x, c) / SUB(x, c) / SUB(c, x): a copy of x with weight ±k (k = COPY_WEIGHT first, identity_add.py) and the
  constant in the per-channel bias, chosen the same way against TFLite's ADD/SUB arithmetic (tflite_add).

The fused activation (RELU/RELU6 inside the output range) uses the DPU clamp like any convolution's.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from .. import unary
from ..fixedpoint import multiply_by_quantized_multiplier, quantize_multiplier
from ..ir import Graph, Operation, Tensor
from .average import channel_biases, cvt_pairs
from .identity_add import COPY_WEIGHT, SINGLE_CHANNEL
from .operations import RocketConv
from .quantization import LoweringError, activation_bounds, quantized, stored_bytes, stored_offset, tensor_quant
from .rounding import shift_even

CONST_KINDS = ("MUL", "ADD", "SUB")


def constant_operand(graph: Graph, op: Operation) -> tuple[Tensor, Tensor, bool] | None:
    """(the map, the constant, constant first) of a MUL/ADD/SUB with exactly one constant input, else None."""
    if op.kind not in CONST_KINDS or len(op.inputs) != 2:
        return None
    a, b = (graph.tensors[t] for t in op.inputs)
    if a.is_constant == b.is_constant:
        return None
    return (b, a, True) if a.is_constant else (a, b, False)


def is_const_elementwise(graph: Graph, op: Operation) -> bool:
    return constant_operand(graph, op) is not None


def _per_channel(c: Tensor, channels: int) -> np.ndarray:
    """The constant's quantized values broadcast to one per channel (LoweringError for any other broadcast)."""
    shape = [int(d) for d in c.shape]
    if any(d != 1 for d in shape[:-1]) or (shape and shape[-1] not in (1, channels)):
        raise LoweringError(f"constant of shape {tuple(shape)} is not one value or one per channel ({channels})")
    data = np.asarray(c.data).reshape(-1)
    return np.broadcast_to(data, (channels,)) if data.size == 1 else data


# w - zw of a depthwise weight that every generation takes: one stored int8 weight and zero point reach -255..255
# (rk3588, rk3568); rk3576's byte pairs (rk3576/weights.py) reach -255..254 and take 255 as 3 x 85 through the
# per-channel multiplier (rk3576/encoder.py `split_weights`), which divides that channel's bias by 3 too
WEIGHT_RANGE = (-255, 255)
PAIR_MAX = 254
WIDE_GAIN = 3
# Claimed when the plan matches TFLite on at least this share of every (input value, channel) pair: the single-op
# contract's exact rate, reached by construction
MIN_SHARE = 0.995
# Copy weights tried for ADD / SUB (a larger one makes the bias a finer shift of the rounding thresholds)
COPY_WEIGHTS = (COPY_WEIGHT, 96, 64, 32, 16, 8, 4, 2, 1)

Quant = tuple[float, int]


@dataclass(frozen=True)
class Plan:
    """Per channel weight w and bias b, and one OUT_CVT: the DPU's stored output for stored input xs is
    clip(shift_even((w·xs + b)·scale, shift) + zys) with zys the stored output zero point (OUT_CVT's offset;
    average.dpu_average's arithmetic); `share`: the fraction of (input value, channel) pairs on which it equals
    TFLite's result."""

    weights: np.ndarray
    biases: np.ndarray
    scale: int
    shift: int
    share: float
    bs: tuple[np.ndarray, int] | None = None  # a multiplier stage before OUT_CVT (two_rounding_plan)


def _inputs(dtype: str) -> np.ndarray:
    """Every quantized input value, in stored order (stored -128..127)."""
    return np.arange(-128, 128, dtype=np.int64) + stored_offset(dtype)


def _f32(v: float) -> float:
    return float(np.float32(v))


def tflite_mul(dtype: str, values: np.ndarray, x: Quant, c: Quant, y: Quant, bounds: tuple[int, int]) -> np.ndarray:
    """TFLite 2.14's MUL of every input value by each channel's constant value, in the stored domain (channels x
    256): MultiplyByQuantizedMultiplier((x - zx)·(c - zc), sx·sc/sy in double) + zy, clamped to the activation's
    stored bounds; checked against tflite_runtime (tests/rocket/test_const_elementwise.py)."""
    m, shift = quantize_multiplier(_f32(x[0]) * _f32(c[0]) / _f32(y[0]))
    prod = np.outer(values - c[1], _inputs(dtype) - x[1])
    return np.clip(multiply_by_quantized_multiplier(prod, m, shift) + y[1] - stored_offset(dtype), *bounds)


def tflite_add(dtype: str, values: np.ndarray, x: Quant, c: Quant, y: Quant, bounds: tuple[int, int], sign_x: int,
               sign_c: int) -> np.ndarray:
    """TFLite 2.14's quantized ADD (sign_x = sign_c = 1) or SUB (one of them -1) of every input value and each
    channel's constant value, stored domain (channels x 256): teflon.unary.add_values; checked against
    tflite_runtime (tests/rocket/test_const_elementwise.py)."""
    qx, qc, qy = (unary.QuantParams(np.float32(q[0]), q[1]) for q in (x, c, y))
    out = unary.add_values(_inputs(dtype)[None, :], qx, np.asarray(values, np.int64)[:, None], qc, qy, sign_x, sign_c)
    return np.clip(out - stored_offset(dtype), *bounds)


def fit_plan(want: np.ndarray, candidates: Iterable[tuple[np.ndarray, Fraction]], zys: int,
             bounds: tuple[int, int]) -> Plan | None:
    """The candidate (per-channel weights w, output steps per unit of w·xs) with one OUT_CVT near that ratio and
    per-channel biases that match `want` (stored outputs, channels x 256) on the most (input, channel) pairs; the
    first exact one, else the best. OUT_CVT adds the stored output zero point zys, so the plan maps onto the output
    minus it and the DPU's ReLU at 0 (before OUT_CVT) is TFLite's clamp at the zero point."""
    want = want - zys
    bounds = (bounds[0] - zys, bounds[1] - zys)
    xs = np.arange(-128, 128, dtype=np.int64)
    best: Plan | None = None
    for w, ratio in candidates:
        steps = np.where(w > PAIR_MAX, WIDE_GAIN, 1)  # a weight above the pairs' reach: a bias it divides
        for scale, shift in cvt_pairs(ratio):
            biases, served = channel_biases(xs, want, w, scale, shift, bounds, steps)
            plan = Plan(w, biases, scale, shift, served / want.size)
            if best is None or plan.share > best.share:
                best = plan
            if plan.share == 1.0:
                return plan
    return best


def _fraction(v: float) -> Fraction:
    return Fraction(_f32(v))


def mul_plan(dtype: str, values: np.ndarray, x: Quant, c: Quant, y: Quant, bounds: tuple[int, int]) -> Plan | None:
    """MUL: weights k·(c - zc) over k from the largest whose weights (with 0) span at most 255 — one weight zero point
    keeps them stored int8 — and stay within PAIR_MAX, down to 1 (k = 1 takes the whole WEIGHT_RANGE)."""
    d = values - c[1]
    if d.max(initial=0) > WEIGHT_RANGE[1] or d.min(initial=0) < WEIGHT_RANGE[0]:
        raise LoweringError(f"MUL by a constant {int(d.max()) if d.max() > 0 else int(d.min())} steps from its zero "
                            f"point: a weight minus its zero point is {WEIGHT_RANGE[0]}..{WEIGHT_RANGE[1]}")
    spread = int(d.max(initial=0)) - min(int(d.min(initial=0)), 0)
    top = max(1, min(255 // max(1, spread), PAIR_MAX // max(1, int(np.abs(d).max(initial=0)))))
    ratio = _fraction(x[0]) * _fraction(c[0]) / _fraction(y[0])
    return fit_plan(tflite_mul(dtype, values, x, c, y, bounds), ((k * d, ratio / k) for k in range(top, 0, -1)),
                    y[1] - stored_offset(dtype), bounds)


# The multiplier stage of two_rounding_plan: C keeps BS_BITS bits of TFLite's 31-bit multiplier (C <= C_MAX, the int16
# field), fewer when a wide weight's channel multiplies its C by WIDE_GAIN (rk3576); OUT_CVT's scale is one unit
# above 2^14, which turns its ties-to-even into TFLite's half away from zero (below)
BS_BITS = (15, 14, 13)
C_MAX = (1 << 15) - 1
CVT_ONE = 1 << 14


def two_rounding_plan(dtype: str, values: np.ndarray, x: Quant, c: Quant, y: Quant,
                      bounds: tuple[int, int]) -> Plan | None:
    """MUL rounded twice, as TFLite rounds it: weights c - zc, bias -zxs·(c - zc) (so v = (x - zx)(c - zc), TFLite's
    product, exactly), the multiplier stage u = shift_even(v·C, sh) with C ~ M0 / 2^(31 - sh) (per channel the one
    of floor / ceil that matches more inputs), TFLite's first rounding (SRDHM, to 2^-e output LSB); then OUT_CVT
    (2^14 + 1) / 2^(14 + e), TFLite's rounding shift by e: u is an integer, so the extra 2^-14 of the scale moves
    exactly the ties away from zero while |u| < 2^14 (beyond, the output saturates; the share counts every input
    anyway). None when TFLite's multiplier shifts left (one
    rounding: mul_plan covers it) or no shift keeps C inside its field."""
    m0, shift = quantize_multiplier(_f32(x[0]) * _f32(c[0]) / _f32(y[0]))
    e = -shift
    d = values - c[1]
    if e <= 0 or m0 == 0:
        return None
    gain = WIDE_GAIN if d.max(initial=0) > PAIR_MAX else 1
    sh = next((b for b in BS_BITS if math.ceil(m0 / (1 << (31 - b))) * gain <= C_MAX), None)
    if sh is None:
        return None
    want = tflite_mul(dtype, values, x, c, y, bounds)
    zys = y[1] - stored_offset(dtype)
    xs = _inputs(dtype) - stored_offset(dtype)  # stored -128..127
    zxs = x[1] - stored_offset(dtype)
    prod = np.outer(d, xs - zxs)
    if np.abs(np.outer(d, [-128 - zxs, 127 - zxs])).max() * C_MAX >= 1 << (31 + sh):
        return None
    lo = m0 >> (31 - sh)
    best_c = np.full(len(d), lo, np.int64)
    served = np.full(len(d), -1, np.int64)
    for mul in (lo, lo + 1):
        u = shift_even(prod * mul, sh)
        out = np.clip(shift_even(u * (CVT_ONE + 1), 14 + e) + zys, *bounds)
        hits = (out == want).sum(axis=1)
        better = hits > served
        best_c[better], served[better] = mul, hits[better]
    return Plan(d.astype(np.int64), -zxs * d.astype(np.int64), CVT_ONE + 1, 14 + e, float(served.sum() / want.size),
                (best_c, sh))


def add_plan(dtype: str, values: np.ndarray, x: Quant, c: Quant, y: Quant, bounds: tuple[int, int], sign_x: int,
             sign_c: int) -> Plan | None:
    """ADD / SUB: a copy of the input with weight sign_x·k (COPY_WEIGHTS in order); the constant lands in the
    biases."""
    want = tflite_add(dtype, values, x, c, y, bounds, sign_x, sign_c)
    ratio = _fraction(x[0]) / _fraction(y[0])
    n = len(values)
    return fit_plan(want, ((np.full(n, sign_x * k, np.int64), ratio / k) for k in COPY_WEIGHTS),
                    y[1] - stored_offset(dtype), bounds)


def lower_const_elementwise(graph: Graph, op: Operation, per_channel: bool = False, clamp: bool = False) -> RocketConv:
    """The 1x1 depthwise convolution of a MUL/ADD/SUB with a constant (see the module docstring), or LoweringError."""
    del per_channel  # the constant has one scale
    found = constant_operand(graph, op)
    if found is None or len(op.outputs) != 1:
        raise LoweringError(f"{op.kind} without exactly one constant input")
    x, c, const_first = found
    y = graph.tensors[op.outputs[0]]
    if not x.dtype == c.dtype == y.dtype or x.dtype not in ("uint8", "int8"):
        raise LoweringError(f"{op.kind} types {x.dtype}, {c.dtype} -> {y.dtype} (uint8 or int8, all equal)")
    if len(x.shape) != 4 or x.shape[0] != 1 or tuple(y.shape) != tuple(x.shape):
        raise LoweringError(f"{op.kind} of {x.shape} -> {y.shape} (4-D NHWC, batch 1, no broadcast of the map)")
    _, h, w, ch = (int(d) for d in x.shape)
    if ch == 1:
        raise LoweringError(f"{op.kind} of a single-channel map: {SINGLE_CHANNEL}")
    (sx, zx), (sc, zc), (sy, zy) = tensor_quant(x, "input"), tensor_quant(c, "constant"), tensor_quant(y, "output")
    values = _per_channel(c, ch).astype(np.int64)
    act = str(op.options.get("activation", "NONE"))
    lo, hi = activation_bounds(act, y.dtype, sy, zy, clamp)
    off = stored_offset(x.dtype)
    bounds = (-128 if lo is None else lo - off, 127 if hi is None else hi - off)
    quants = ((float(sx), zx), (float(sc), zc), (float(sy), zy))
    if op.kind == "MUL":
        plan = mul_plan(x.dtype, values, *quants, bounds)
        if (plan is None or plan.share < MIN_SHARE) and hi is None:
            # one rounding falls short: round twice, as TFLite does (no upper clamp: where RELU6's bound sits
            # relative to the multiplier stage is not known on every generation)
            twice = two_rounding_plan(x.dtype, values, *quants, bounds)
            if twice is not None and (plan is None or twice.share > plan.share):
                plan = twice
    else:
        sign_x, sign_c = (-1, 1) if op.kind == "SUB" and const_first else (1, -1) if op.kind == "SUB" else (1, 1)
        plan = add_plan(x.dtype, values, *quants, bounds, sign_x, sign_c)
    if plan is None or plan.share < MIN_SHARE:
        share = "no OUT_CVT in range" if plan is None else f"{100 * plan.share:.2f} %"
        raise LoweringError(f"{op.kind} with a constant: the closest DPU requantization matches TFLite's (which rounds "
                            f"twice) on {share} of the input x constant values (< {100 * MIN_SHARE:g} %, "
                            "docs/hardware/rocket.md)")
    # stored weights ws = w + zws inside int8 with one zero point zws (the weights span at most 255)
    w_zp = int(np.clip(0, -128 - plan.weights.min(), 127 - plan.weights.max()))
    wq = quantized(plan.weights + w_zp, x.dtype).reshape(1, 1, 1, ch)
    # bias b + zxs·w: the encoder folds -zxs·w in (bias_table), leaving v = w·xs + b
    bias = (plan.biases + (zx - off) * plan.weights).astype(np.int32)
    return RocketConv(
        nodes=[op.index], kind=op.kind, input_tensor=x.index, output_tensor=y.index, dtype=x.dtype,
        in_h=h, in_w=w, in_c=ch, out_h=h, out_w=w, out_c=ch, kh=1, kw=1, stride=1,
        pad_top=0, pad_bottom=0, pad_left=0, pad_right=0, depthwise=True, in_zp=zx - off, out_zp=zy - off, w_zp=w_zp,
        in_scale=sx, out_scale=sy, w_scale=np.float32(plan.scale / (1 << plan.shift)), weights=stored_bytes(wq, off),
        weights_q=wq, bias=bias, cvt=(plan.scale, plan.shift), bs=plan.bs, activation=act,
        act_min=None if lo is None else lo - off, act_max=None if hi is None else hi - off)


__all__ = ["CONST_KINDS", "MIN_SHARE", "Plan", "add_plan", "constant_operand", "fit_plan", "is_const_elementwise",
           "lower_const_elementwise", "mul_plan", "tflite_add", "tflite_mul", "two_rounding_plan"]
