"""Exact 256-entry tables of TFLite's per-element unary ops on int8/uint8 tensors.

An op that maps each element through a function of that element alone gives, on an 8-bit tensor, a function
of one of 256 values: its whole behaviour is a table. These tables are what TFLite 2.14's builtin CPU kernels
compute (tensorflow/lite/kernels/activations.cc, mul.cc and the reference/optimized kernels they call), with the
same float32 or fixed-point steps, so an NPU that looks each input up in such a table is exact by construction:

- LOGISTIC, TANH: the kernel's own lookup table (PopulateLookupTable): dequantize in float32, the float
  function, times the float32 inverse output scale, std::round, plus the output zero point, clamped.
- RELU, RELU6, RELU_N1_TO_1: requantize (QuantizeMultiplier of the float32 scale ratio,
  MultiplyByQuantizedMultiplier), clamp to the activation range (output zero point + roundf(limit / scale)).
- LEAKY_RELU: two multipliers, scale_in * alpha / scale_out for negative inputs and scale_in / scale_out for the
  others (float32 arithmetic, then QuantizeMultiplier).
- HARD_SWISH: the integer path (reference_ops::HardSwish): 16-bit fixed point with a "reluish" multiplier and an
  output multiplier, both rounded from Q31 to Q15.
- QUANTIZE of an 8-bit tensor (requantization, optimized_ops::Requantize): MultiplyByQuantizedMultiplier of
  (x - zx) by the double ratio of the float32 scales, plus the output zero point, clamped to the output type.
- ADD / SUB / MUL / MAXIMUM / MINIMUM with one operand a single constant value (`const_table`): the two-input
  kernels' arithmetic with the constant's value for every input (add_values; MAXIMUM/MINIMUM compare the raw
  quantized values, as the kernels do).
- SILU: LOGISTIC followed by a MUL of the LOGISTIC's own input with its output (how TFLite writes x*sigmoid(x));
  the table is the two steps: the LOGISTIC table, then MUL's requantization of (x - zx) * (l - zl).

Tables are indexed by the input value minus the type's minimum (index 0 is -128 for int8, 0 for uint8) and hold
the output values (int64). tests/test_unary.py runs every table against the installed runtimes byte for byte.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from teflon.fixedpoint import (
    downscale_multiplier_to_int16,
    multiply_by_quantized_multiplier,
    quantize_multiplier,
    rounding_divide_by_pot,
    saturating_left_shift16,
    sdhm16,
    srdhm16,
    srdhm32,
)
from teflon.ir import Graph, Operation

QRANGE = {"uint8": (0, 255), "int8": (-128, 127)}

# The ops with a table, as TFLite names them; SILU is the LOGISTIC + MUL pair (see silu_mul).
TABLE_KINDS = ("LOGISTIC", "TANH", "RELU", "RELU6", "RELU_N1_TO_1", "LEAKY_RELU", "HARD_SWISH", "QUANTIZE")
ACTIVATION_LIMITS = {"NONE": (None, None), "RELU": (0.0, None), "RELU6": (0.0, 6.0), "RELU_N1_TO_1": (-1.0, 1.0)}


@dataclass(frozen=True)
class QuantParams:
    """One per-tensor affine quantization as the runtime stores it (float32 scale, int zero point)."""

    scale: np.float32
    zero_point: int


def input_values(dtype: str) -> np.ndarray:
    """The 256 input values in table order."""
    lo, hi = QRANGE[dtype]
    return np.arange(lo, hi + 1, dtype=np.int64)


def sigmoid_f32(x: np.ndarray) -> np.ndarray:
    """1.0f / (1.0f + expf(-x)) with float32 rounding after each step (expf taken as correctly rounded)."""
    x = np.asarray(x, np.float32)
    with np.errstate(over="ignore"):  # exp(-x) beyond float32 -> inf -> sigmoid 0, as in float32 arithmetic
        e = np.exp(-x.astype(np.float64)).astype(np.float32)
        d = (np.float32(1.0) + e).astype(np.float32)
        return (np.float32(1.0) / d).astype(np.float32)


def tanh_f32(x: np.ndarray) -> np.ndarray:
    """tanhf, taken as correctly rounded."""
    return np.tanh(np.asarray(x, np.float32).astype(np.float64)).astype(np.float32)


def _round_f32(x: np.ndarray) -> np.ndarray:
    """std::round on float32 values: halves away from zero."""
    x = np.asarray(x, np.float32)
    return (np.sign(x) * np.floor(np.abs(x) + np.float32(0.5))).astype(np.float32)


def float_lut(v_rel: np.ndarray, fn_f32, in_scale: float, out_scale: float, out_zp: int,
              qmin: int, qmax: int) -> np.ndarray:
    """PopulateLookupTable for inputs v_rel = value - input zero point: fn(in_scale * v) / out_scale, rounded."""
    deq = (np.float32(in_scale) * np.asarray(v_rel, np.int64).astype(np.float32)).astype(np.float32)
    inverse = np.float32(np.float32(1.0) / np.float32(out_scale))
    rescaled = _round_f32((fn_f32(deq) * inverse).astype(np.float32))
    q = (rescaled + np.float32(out_zp)).astype(np.float32).astype(np.int64)
    return np.clip(q, qmin, qmax)


def logistic_values(v_rel: np.ndarray, in_scale: float, out_scale: float, out_zp: int,
                    qmin: int, qmax: int) -> np.ndarray:
    """TFLite's quantized LOGISTIC of the inputs v_rel (relative to the input zero point), as output values."""
    return float_lut(v_rel, sigmoid_f32, in_scale, out_scale, out_zp, qmin, qmax)


def activation_range(activation: str, out: QuantParams, dtype: str) -> tuple[int, int]:
    """CalculateActivationRangeQuantized / QuantizedReluX: zero point + round(limit / scale) (float32), within
    the type's range."""
    qmin, qmax = QRANGE[dtype]
    lo_f, hi_f = ACTIVATION_LIMITS[activation]

    def q(f: float) -> int:
        r = _round_f32(np.float32(np.float32(f) / np.float32(out.scale)))
        return out.zero_point + int(r)

    lo = qmin if lo_f is None else max(qmin, q(lo_f))
    hi = qmax if hi_f is None else min(qmax, q(hi_f))
    return lo, hi


def _requant(x: np.ndarray, multiplier_f32: np.float32, out_zp: int) -> np.ndarray:
    m, shift = quantize_multiplier(float(multiplier_f32))
    return out_zp + multiply_by_quantized_multiplier(x, m, shift)


def relu_table(activation: str, dtype: str, inp: QuantParams, out: QuantParams) -> np.ndarray:
    """RELU / RELU6 / RELU_N1_TO_1 (optimized_ops::ReluX)."""
    v = input_values(dtype)
    y = _requant(v - inp.zero_point, np.float32(inp.scale) / np.float32(out.scale), out.zero_point)
    lo, hi = activation_range(activation, out, dtype)
    return np.clip(y, lo, hi)


def leaky_relu_table(dtype: str, inp: QuantParams, out: QuantParams, alpha: float) -> np.ndarray:
    """LEAKY_RELU (QuantizeLeakyRelu): the identity multiplier for inputs >= zero point, the alpha one below."""
    v = input_values(dtype) - inp.zero_point
    s_in, s_out = np.float32(inp.scale), np.float32(out.scale)
    ident = _requant(v, np.float32(s_in / s_out), out.zero_point)
    neg = _requant(v, np.float32(np.float32(s_in * np.float32(alpha)) / s_out), out.zero_point)
    return np.clip(np.where(v >= 0, ident, neg), *QRANGE[dtype])


def hard_swish_params(inp: QuantParams, out: QuantParams) -> tuple[int, int, int, int] | None:
    """(output multiplier Q15, its exponent, reluish multiplier Q15, its exponent) as HardSwishPrepare derives
    them; None where the runtime refuses the tensor pair (output multiplier exponent > 0)."""
    hires = np.float32(np.float32(1.0 / 128.0) * np.float32(inp.scale))
    out_m, out_e = quantize_multiplier(float(np.float32(hires / np.float32(out.scale))))
    rel_m, rel_e = quantize_multiplier(float(np.float32(hires / np.float32(3.0 / 32768.0))))
    if out_e > 0:
        return None
    return downscale_multiplier_to_int16(out_m), out_e, downscale_multiplier_to_int16(rel_m), rel_e


def hard_swish_table(dtype: str, inp: QuantParams, out: QuantParams) -> np.ndarray:
    """HARD_SWISH on 8-bit tensors: reference_ops::HardSwish's 16-bit fixed-point steps."""
    params = hard_swish_params(inp, out)
    if params is None:
        raise ValueError("HARD_SWISH output multiplier above 1: the runtime refuses this quantization")
    out_m, out_e, rel_m, rel_e = params
    v = input_values(dtype) - inp.zero_point
    hires = v * (1 << 7)  # |v| <= 255: fits int16
    preshift = srdhm16(hires, out_m)
    reluish = hires
    if rel_e > 0:
        reluish = saturating_left_shift16(reluish, rel_e - 1)
    reluish = srdhm16(reluish, rel_m)
    if rel_e > 0:
        reluish = saturating_left_shift16(reluish, 1)
    if rel_e < 0:
        reluish = rounding_divide_by_pot(reluish, -rel_e)
    reluish = (reluish + (1 << 15)) >> 1
    y = rounding_divide_by_pot(sdhm16(reluish, preshift), -out_e) + out.zero_point
    return np.clip(y, *QRANGE[dtype])


def logistic_table(dtype: str, inp: QuantParams, out: QuantParams) -> np.ndarray:
    qmin, qmax = QRANGE[dtype]
    return logistic_values(input_values(dtype) - inp.zero_point, inp.scale, out.scale, out.zero_point, qmin, qmax)


def tanh_table(dtype: str, inp: QuantParams, out: QuantParams) -> np.ndarray:
    qmin, qmax = QRANGE[dtype]
    return float_lut(input_values(dtype) - inp.zero_point, tanh_f32, inp.scale, out.scale, out.zero_point,
                     qmin, qmax)


def mul_table(dtype: str, a_values: np.ndarray, a: QuantParams, b_values: np.ndarray, b: QuantParams,
              out: QuantParams, activation: str = "NONE") -> np.ndarray:
    """MUL of two 8-bit operands, element by element (optimized_integer_ops::Mul / optimized_ops::Mul)."""
    m = np.float32(np.float32(np.float32(a.scale) * np.float32(b.scale)) / np.float32(out.scale))
    prod = (np.asarray(a_values, np.int64) - a.zero_point) * (np.asarray(b_values, np.int64) - b.zero_point)
    y = _requant(prod, m, out.zero_point)
    return np.clip(y, *activation_range(activation, out, dtype))


def quantize_table(in_dtype: str, out_dtype: str, inp: QuantParams, out: QuantParams) -> np.ndarray:
    """QUANTIZE of an 8-bit tensor into another 8-bit quantization (kernels/quantize.cc: the scale ratio in double)."""
    m, shift = quantize_multiplier(float(inp.scale) / float(out.scale))
    y = out.zero_point + multiply_by_quantized_multiplier(input_values(in_dtype) - inp.zero_point, m, shift)
    return np.clip(y, *QRANGE[out_dtype])


def requantizes(graph: Graph, op: Operation) -> bool:
    """A QUANTIZE from an 8-bit type to itself that changes the values (scale or zero point): a table op. Any other
    QUANTIZE is a conversion or a relabelling of the same bytes, which is not a table op's business."""
    if op.kind != "QUANTIZE" or len(op.inputs) != 1 or len(op.outputs) != 1:
        return False
    x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
    if x.dtype not in QRANGE or y.dtype != x.dtype:
        return False
    qx, qy = _qp(graph, x.index), _qp(graph, y.index)
    return qx is not None and qy is not None and qx != qy


def add_values(a_values: np.ndarray, a: QuantParams, b_values: np.ndarray, b: QuantParams, out: QuantParams,
               sign_a: int = 1, sign_b: int = 1) -> np.ndarray:
    """TFLite 2.14's quantized ADD (sign_a = sign_b = 1) or SUB (one of them -1) of 8-bit operands, element by
    element (broadcasting as numpy does), unclamped: both inputs shifted left by 20 and scaled by s / (2 max s)
    with a rounding multiplier each, summed, scaled by 2 max s / (2^20 s_out), plus the output zero point
    (kernels/add.cc, sub.cc; the ratios in double)."""
    left = 20  # left_shift for 8-bit inputs
    twice = 2 * max(float(np.float32(a.scale)), float(np.float32(b.scale)))

    def scaled(q: np.ndarray, qp: QuantParams, sign: int) -> np.ndarray:
        # SUB negates the subtrahend's multiplier (kernels/sub.cc), not its scaled value: the rounding of a tie differs
        m, shift = quantize_multiplier(float(np.float32(qp.scale)) / twice)
        return rounding_divide_by_pot(srdhm32((np.asarray(q, np.int64) - qp.zero_point) * (1 << left), sign * m),
                                      -shift)

    mo, so = quantize_multiplier(twice / ((1 << left) * float(np.float32(out.scale))))
    raw = scaled(a_values, a, sign_a) + scaled(b_values, b, sign_b)
    return rounding_divide_by_pot(srdhm32(raw, mo), -so) + out.zero_point


CONST_KINDS = ("ADD", "SUB", "MUL", "MAXIMUM", "MINIMUM")


def const_table(kind: str, dtype: str, inp: QuantParams, c_value: int, c: QuantParams, out: QuantParams,
                activation: str = "NONE", const_first: bool = False) -> np.ndarray:
    """`kind` (CONST_KINDS) of the 8-bit tensor and one constant quantized value (`const_first`: the constant
    is the first operand, which only SUB cares about)."""
    x = input_values(dtype)
    cv = np.full_like(x, c_value)
    if kind == "MAXIMUM":
        return np.maximum(x, cv)
    if kind == "MINIMUM":
        return np.minimum(x, cv)
    if kind == "MUL":
        return mul_table(dtype, x, inp, cv, c, out, activation)
    sx, sc = (1, 1) if kind == "ADD" else ((-1, 1) if const_first else (1, -1))
    return np.clip(add_values(x, inp, cv, c, out, sx, sc), *activation_range(activation, out, dtype))


def silu_table(dtype: str, inp: QuantParams, sig: QuantParams, out: QuantParams, activation: str = "NONE"
               ) -> np.ndarray:
    """MUL(x, LOGISTIC(x)): the LOGISTIC table, then MUL's requantization."""
    x = input_values(dtype)
    return mul_table(dtype, x, inp, logistic_table(dtype, inp, sig), sig, out, activation)


def table(kind: str, dtype: str, inp: QuantParams, out: QuantParams, alpha: float = 0.0) -> np.ndarray:
    """The table of one op kind of TABLE_KINDS (see the module doc)."""
    if dtype not in QRANGE:
        raise ValueError(f"no 8-bit table for {dtype}")
    if kind == "LOGISTIC":
        return logistic_table(dtype, inp, out)
    if kind == "TANH":
        return tanh_table(dtype, inp, out)
    if kind in ("RELU", "RELU6", "RELU_N1_TO_1"):
        return relu_table(kind, dtype, inp, out)
    if kind == "LEAKY_RELU":
        return leaky_relu_table(dtype, inp, out, alpha)
    if kind == "HARD_SWISH":
        return hard_swish_table(dtype, inp, out)
    if kind == "QUANTIZE":
        return quantize_table(dtype, dtype, inp, out)
    raise ValueError(f"{kind} has no table")


# --------------------------------------------------------------------------------------------------------------
# The ops of a graph
# --------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class UnaryOp:
    """One table op of a graph: `ops` are the TFLite nodes it covers (LOGISTIC + MUL for SILU)."""

    kind: str  # a TABLE_KINDS name or "SILU"
    dtype: str
    input: int  # tensor index
    output: int
    ops: tuple[int, ...]
    table: np.ndarray  # 256 output values, indexed by input value - type minimum


def _qp(graph: Graph, t: int) -> QuantParams | None:
    q = graph.tensors[t].quant
    if q is None or not q.per_tensor:
        return None
    return QuantParams(np.float32(q.scale), q.zero_point)


def silu_mul(graph: Graph, logistic: Operation) -> Operation | None:
    """The MUL that makes a LOGISTIC a SiLU: the LOGISTIC output's only consumer, multiplying it by the
    LOGISTIC's own input (either operand order), and the LOGISTIC output is no graph output of its own."""
    if logistic.kind != "LOGISTIC":
        return None
    x, s = logistic.inputs[0], logistic.outputs[0]
    users = graph.consumers(s)
    if len(users) != 1 or users[0].kind != "MUL" or len(users[0].inputs) != 2:
        return None
    mul = users[0]
    if sorted(mul.inputs) != sorted([x, s]) or x == s:
        return None
    if graph.tensors[mul.outputs[0]].shape != graph.tensors[x].shape:
        return None
    return mul


def silu_logistic(graph: Graph, mul: Operation) -> Operation | None:
    """The LOGISTIC a MUL completes into a SiLU (see silu_mul), or None."""
    if mul.kind != "MUL":
        return None
    for t in mul.inputs:
        prod = graph.producer(t)
        if prod is not None and silu_mul(graph, prod) is mul:
            return prod
    return None


def unary_op(graph: Graph, op: Operation, alpha: float | None = None) -> UnaryOp | str:
    """The table op starting at `op` (a LOGISTIC of a SiLU pair becomes SILU), or the reason it has none."""
    kind = op.kind
    if kind not in TABLE_KINDS:
        return f"{kind} is not a per-element table op"
    x, y = op.inputs[0], op.outputs[0]
    dtype = graph.tensors[x].dtype
    if dtype not in QRANGE or graph.tensors[y].dtype != dtype:
        return f"{kind} on {dtype}: only uint8 and int8 tensors have a 256-entry table"
    inp, out = _qp(graph, x), _qp(graph, y)
    if inp is None or out is None:
        return f"{kind}: input and output need one per-tensor quantization"
    if kind == "LEAKY_RELU":
        a = op.options.get("alpha", alpha)
        if a is None:
            return "LEAKY_RELU: alpha not available"
        return UnaryOp(kind, dtype, x, y, (op.index,), table(kind, dtype, inp, out, float(a)))  # type: ignore[arg-type]
    if kind == "HARD_SWISH" and hard_swish_params(inp, out) is None:
        return "HARD_SWISH: output multiplier above 1 (the runtime refuses this quantization)"
    if kind == "LOGISTIC":
        mul = silu_mul(graph, op)
        if mul is not None:
            mout = _qp(graph, mul.outputs[0])
            if mout is None or graph.tensors[mul.outputs[0]].dtype != dtype:
                return "SiLU MUL: output needs one per-tensor quantization of the input type"
            act = str(mul.options.get("activation", "NONE"))
            if act not in ACTIVATION_LIMITS:
                return f"SiLU MUL with fused {act}"
            t = silu_table(dtype, inp, out, mout, act)
            return UnaryOp("SILU", dtype, x, mul.outputs[0], (op.index, mul.index), t)
    return UnaryOp(kind, dtype, x, y, (op.index,), table(kind, dtype, inp, out))
