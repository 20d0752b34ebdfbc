"""Which TFLite operations the Ethos-U65 compiler claims, and each one's NPU description (teflon.ethosu.lower specs).

`support(graph)` answers {operation index: (claimed, reason)}: an operation is claimed only for the parameter ranges
lowered here and checked against Vela (tests/ethos_u/test_vela_compat.py); everything else keeps a specific reason.
`spec(graph, op)` gives the lowering input of a claimed operation (feature maps at offset 0: the program places them).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from teflon import hw_facts, lone, unary
from teflon.ethosu import lower, moves, quant, softmax
from teflon.ethosu.lower import (
    ConvSpec,
    EltSpec,
    FeatureMap,
    LoweringError,
    LutSpec,
    MeanSpec,
    PadSpec,
    PoolSpec,
    RescaleSpec,
)
from teflon.ir import Graph, Operation, Tensor, memo

ACTIVATIONS = ("NONE", "RELU", "RELU6")  # the ones checked against Vela
MAX_DIM = 65536  # the *_M1 registers are 16 bits
MAX_STRIDE = 2  # strides beyond 2 are not checked against Vela here
MAX_KERNEL = 8  # one sub-kernel: larger kernels are decomposed by Vela, not here
Spec = ConvSpec | PoolSpec | EltSpec | LutSpec | RescaleSpec | PadSpec | MeanSpec | moves.MoveSpec | softmax.SoftmaxSpec
LUT_FUNCTIONS = {"LOGISTIC": quant.sigmoid, "TANH": np.tanh}


class Unsupported(LoweringError):
    pass


def _fm(t: Tensor, shape: tuple[int, int, int] | None = None) -> FeatureMap:
    if t.dtype not in ("int8", "uint8"):
        raise Unsupported(f"tensor {t.index} is {t.dtype}: int8/uint8 feature maps only")
    if t.quant is None:
        raise Unsupported(f"tensor {t.index} is not quantized")
    if not t.quant.per_tensor:
        raise Unsupported(f"tensor {t.index}: per-channel activation quantization")
    if shape is None:
        shape = nhwc(t)
    if max(shape) > MAX_DIM:
        raise Unsupported(f"tensor {t.index} shape {shape} exceeds the 16-bit size registers")
    return FeatureMap(shape, t.dtype, t.quant.zero_point, float(t.quant.scale))


def nhwc(t: Tensor) -> tuple[int, int, int]:
    """The (H, W, C) a tensor of rank 1 to 4 (batch 1) is read as: ones prepended up to rank 4, as Vela reshapes
    every feature map (a (1, 28, 28) map is 1x28x28, a (1, 10) vector 1x1x10; checked against its compiles)."""
    s = t.shape
    if not 1 <= len(s) <= 4 or (len(s) == 4 and s[0] != 1):
        raise Unsupported(f"tensor {t.index} shape {s}: NHWC with batch 1 (or rank 1 to 3) only")
    return moves.packed_hwc(s)


def _activation(op: Operation) -> str:
    act = str(op.options.get("activation", "NONE"))
    if act not in ACTIVATIONS:
        raise Unsupported(f"fused activation {act}")
    return act


def _weights(graph: Graph, op: Operation) -> tuple[Tensor, np.ndarray, np.ndarray]:
    w = graph.tensors[op.inputs[1]]
    if w.data is None or w.quant is None:
        raise Unsupported("weights are not a quantized constant")
    if w.dtype not in ("int8", "uint8"):
        raise Unsupported(f"{w.dtype} weights")
    n = w.shape[0] if op.kind != "DEPTHWISE_CONV_2D" else w.shape[-1]
    scales = np.broadcast_to(w.quant.scales.astype(np.float32), (n,)).copy()
    zps = np.broadcast_to(w.quant.zero_points.astype(np.int64), (n,))
    if len(w.quant.scales) not in (1, n):
        raise Unsupported("weight quantization is neither per-tensor nor per-output-channel")
    return w, scales, zps


def _minus_zero_points(data: np.ndarray, zps: np.ndarray) -> np.ndarray:
    """8-bit weights minus their 8-bit zero points (broadcast), as int16, which holds every difference: one
    pass (numpy subtracts in int16 straight from the 8-bit values; a cast first, then a subtraction of two int16
    arrays, took 10 to 50 times longer)."""
    return np.subtract(data, zps.astype(np.int16), dtype=np.int16)


def _bias(graph: Graph, op: Operation, n: int) -> np.ndarray:
    if len(op.inputs) < 3 or op.inputs[2] < 0:
        return np.zeros(n, np.int64)
    b = graph.tensors[op.inputs[2]]
    if b.data is None or b.dtype not in ("int32", "int64"):
        raise Unsupported("bias is not an int32 constant")
    return b.data.reshape(-1).astype(np.int64)


SOC = "imx93"  # the SoC of the Ethos-U65 teflon drives (hardware-facts reports name it)


def natural_double() -> bool:
    """Whether a TEFLON_HW_FACTS report proved on the i.MX93 that NATURAL rounding rounds twice (board-facts.md
    fact 7, `double`): then CONV_2D and FULLY_CONNECTED use it, matching TFLite's optimized x86 int8 kernels
    (docs/hardware/ethosu-sim.md, "The builtin reference's rounding"); never by default."""
    return hw_facts.proved(SOC, "eu_natural") == "double"


def _conv(graph: Graph, op: Operation) -> ConvSpec:
    ifm = _fm(graph.tensors[op.inputs[0]])
    ofm = _fm(graph.tensors[op.outputs[0]])
    if (op.options.get("dilation_h", 1), op.options.get("dilation_w", 1)) != (1, 1):
        raise Unsupported("dilated convolution")
    sy, sx = int(op.options.get("stride_h", 1)), int(op.options.get("stride_w", 1))
    if not (1 <= sy <= MAX_STRIDE and 1 <= sx <= MAX_STRIDE):
        raise Unsupported(f"stride {sy}x{sx}: 1..{MAX_STRIDE} only")
    w, scales, zps = _weights(graph, op)
    depthwise = op.kind == "DEPTHWISE_CONV_2D"
    data = w.data
    if depthwise:
        if int(op.options.get("depth_multiplier", 1)) != 1 or w.shape[-1] != ifm.shape[2]:
            raise Unsupported("depthwise with a depth multiplier other than 1")
        data = data.reshape(w.shape[1], w.shape[2], w.shape[3]).transpose(2, 0, 1)[..., None]
    elif data.shape[3] != ifm.shape[2]:
        raise Unsupported("grouped convolution")
    weights = _minus_zero_points(data, zps.reshape(-1, 1, 1, 1))
    kh, kw = weights.shape[1:3]
    if kh > MAX_KERNEL or kw > MAX_KERNEL:
        raise Unsupported(f"kernel {kh}x{kw}: up to {MAX_KERNEL}x{MAX_KERNEL} only")
    pad = str(op.options.get("padding", "SAME"))
    if pad not in ("SAME", "VALID"):
        raise Unsupported(f"padding {pad}")
    return ConvSpec(ifm, ofm, weights, _bias(graph, op, weights.shape[0]), scales, (sy, sx), pad == "SAME",
                    _activation(op), depthwise, float_product=ifm.dtype != "int8",
                    natural=not depthwise and ifm.dtype == "int8" and natural_double())


def _fc(graph: Graph, op: Operation) -> ConvSpec:
    x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
    w, scales, zps = _weights(graph, op)
    if len(w.shape) != 2:
        raise Unsupported(f"weights of shape {w.shape}")
    n, k = w.shape
    if int(np.prod(x.shape)) != k or x.shape[-1] != k:  # (1, K), (1, 1, 1, K): one row, as Vela reads it
        raise Unsupported(f"input {x.shape}: one row of {k} only")
    ifm = _fm(x, (1, 1, k))
    ofm = _fm(y, (1, 1, n))
    weights = _minus_zero_points(w.data, zps.reshape(-1, 1)).reshape(n, 1, 1, k)
    per_channel = len(w.quant.scales) > 1
    return ConvSpec(ifm, ofm, weights, _bias(graph, op, n), scales, (1, 1), False, _activation(op),
                    float_product=ifm.dtype != "int8" or not per_channel,
                    natural=ifm.dtype == "int8" and natural_double())


def _pool(graph: Graph, op: Operation) -> PoolSpec:
    ifm = _fm(graph.tensors[op.inputs[0]])
    ofm = _fm(graph.tensors[op.outputs[0]])
    if ifm.dtype != ofm.dtype:
        raise Unsupported("pool changes the type")
    kh, kw = int(op.options.get("filter_h", 1)), int(op.options.get("filter_w", 1))
    sy, sx = int(op.options.get("stride_h", 1)), int(op.options.get("stride_w", 1))
    kind = "max" if op.kind == "MAX_POOL_2D" else "avg"
    same = str(op.options.get("padding", "VALID")) == "SAME"
    ey, ex = lower.effective_stride((sy, sx), ofm.shape)  # a stride along a one-output axis is never applied
    if not _pool_kernel_ok(kind, same, kh, kw) or not (1 <= ey <= MAX_STRIDE and 1 <= ex <= MAX_STRIDE):
        raise Unsupported(f"pool {kh}x{kw} stride {sy}x{sx}")
    if ifm.scale != ofm.scale or ifm.zero_point != ofm.zero_point:
        raise Unsupported("pool that requantizes (not checked against Vela)")
    return PoolSpec(ifm, ofm, kind, (kh, kw), (sy, sx), same, _activation(op))


# Pool windows beyond one 8x8 sub-kernel: Vela takes a VALID average pool or any max pool up to 256 rows and 256 x 256
# taps in one kick (its supported-operator checks, tflite_supported_operators.py: filter_height_range,
# filter_product_range; a SAME average pool stays within 8x8), checked against its compiles by the op sweep.
POOL_MAX_HEIGHT = 256
POOL_MAX_TAPS = 256 * 256


def _pool_kernel_ok(kind: str, same: bool, kh: int, kw: int) -> bool:
    if kh <= MAX_KERNEL and kw <= MAX_KERNEL:
        return True
    if kind == "avg" and same:
        return False
    return kh <= POOL_MAX_HEIGHT and kh * kw <= POOL_MAX_TAPS


def _eltwise(graph: Graph, op: Operation) -> EltSpec:
    return lower.elementwise_spec(graph, op, _fm, _activation(op))


def _same_quant(a: FeatureMap, b: FeatureMap) -> bool:
    return a.dtype == b.dtype and a.zero_point == b.zero_point and np.float32(a.scale) == np.float32(b.scale)


def _reshape(graph: Graph, op: Operation) -> PoolSpec:
    """A RESHAPE on its own: a copy of the bytes (inside a partition it would be a view)."""
    x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
    # an NHWC map keeps its shape (as Vela copies it); any other tensor is copied as its packed bytes
    ifm = _fm(x) if len(x.shape) == 4 and x.shape[0] == 1 else _fm(x, moves.packed_hwc(x.shape))
    if int(np.prod(y.shape)) != int(np.prod(x.shape)):
        raise Unsupported("RESHAPE changes the element count")
    ofm = _fm(y, ifm.shape)
    if not _same_quant(ifm, ofm):
        raise Unsupported("RESHAPE that requantizes")
    return lower.copy_spec(ifm, ofm)


def _lut(graph: Graph, op: Operation) -> LutSpec:
    ifm = _fm(graph.tensors[op.inputs[0]])
    ofm = _fm(graph.tensors[op.outputs[0]])
    if ifm.dtype != ofm.dtype or ifm.shape != ofm.shape:
        raise Unsupported(f"{op.kind} that changes type or shape")
    if op.kind == "HARD_SWISH":
        return LutSpec(ifm, ofm, _hard_swish_table(ifm, ofm))
    if op.kind == "LEAKY_RELU":
        table = quant.leaky_relu_lut(ifm.dtype, ifm.scale, ifm.zero_point, ofm.scale, ofm.zero_point,
                                     float(op.options.get("alpha", 0.2)))  # type: ignore[arg-type]
    else:
        table = quant.lut8(ifm.dtype, ifm.scale, ifm.zero_point, ofm.scale, ofm.zero_point, LUT_FUNCTIONS[op.kind])
    return LutSpec(ifm, ofm, table)


def _hard_swish_table(ifm: FeatureMap, ofm: FeatureMap) -> bytes:
    """Vela's HARD_SWISH table is TFLite's fixed-point kernel (reference_ops::HardSwish) on each of the 256
    inputs: teflon.unary's table, byte-equal to Vela's (docs/hardware/ethosu-compiler.md)."""
    qi = unary.QuantParams(np.float32(ifm.scale), ifm.zero_point)
    qo = unary.QuantParams(np.float32(ofm.scale), ofm.zero_point)
    if unary.hard_swish_params(qi, qo) is None:
        raise Unsupported("HARD_SWISH: output multiplier above 1 (the runtime refuses this quantization)")
    return unary.hard_swish_table(ifm.dtype, qi, qo).astype(ifm.dtype).tobytes()


# Standalone clamps: the activation Vela's rescaling pool clamps to (teflon.ethosu.quant.activation_range names),
# with RELU_0_TO_1's range handled here.
RESCALE_CLAMPS = {"RELU": "RELU", "RELU6": "RELU6", "RELU_N1_TO_1": "RELU_N1_TO_1", "RELU_0_TO_1": "RELU_0_TO_1",
                  "QUANTIZE": "NONE"}


def _rescale(graph: Graph, op: Operation) -> RescaleSpec:
    """A RELU variant or an 8-bit QUANTIZE alone: Vela's requantizing 1x1 AVERAGE pool. The scale s_in / s_out is
    float32 for the RELUs (TFLite's ReluX prepares it so) and double for QUANTIZE (kernels/quantize.cc); both are
    Vela's multipliers (checked by the sweep)."""
    x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
    ifm = _fm(x)
    ofm = _fm(y)
    if ifm.shape != ofm.shape:
        raise Unsupported(f"{op.kind} that changes the shape")
    if op.kind != "QUANTIZE" and ifm.dtype != ofm.dtype:
        raise Unsupported(f"{op.kind} that changes the type")
    si, so = np.float32(ifm.scale), np.float32(ofm.scale)
    ratio = float(si) / float(so) if op.kind == "QUANTIZE" else float(np.float32(si / so))
    try:
        scale = quant.quantise(ratio)
    except ValueError as e:
        raise Unsupported(f"{op.kind}: {e}") from e
    act = RESCALE_CLAMPS[op.kind]
    if act == "RELU_0_TO_1":
        lo, hi = quant.activation_range(ofm.dtype, ofm.scale, ofm.zero_point, "RELU")
        hi = min(hi, quant.quantize_value(1.0, ofm.scale, ofm.zero_point))
    else:
        lo, hi = quant.activation_range(ofm.dtype, ofm.scale, ofm.zero_point, act)
    if lo > hi:
        raise Unsupported(f"{op.kind}: the clamp range is empty in the output quantization")
    return RescaleSpec(ifm, ofm, scale, (lo, hi))


def _pad(graph: Graph, op: Operation) -> PadSpec:
    """PAD of an NHWC map in H and W (TFLite pads a quantized map with its output zero point)."""
    x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
    ifm, ofm = _fm(x), _fm(y)
    if not _same_quant(ifm, ofm):
        raise Unsupported("PAD that requantizes")
    p = graph.tensors[op.inputs[1]]
    if p.data is None or p.data.size != 8:
        raise Unsupported("PAD amounts are not a constant of 4 x 2")
    amounts = p.data.reshape(4, 2).astype(np.int64)
    if amounts[0].any() or amounts[3].any() or (amounts < 0).any():
        raise Unsupported("PAD of the batch or channel axis: H and W only")
    (t, b), (left, r) = amounts[1].tolist(), amounts[2].tolist()
    h, w, c = ifm.shape
    if ofm.shape != (h + t + b, w + left + r, c):
        raise Unsupported(f"PAD output {ofm.shape} does not match the amounts")
    return PadSpec(ifm, ofm, (t, b, left, r))


# Vela sums a MEAN in one depthwise kick up to 64 rows and 4096 elements (convert_mean_to_depthwise_conv's
# max_height / max_kernel_size); beyond, it splits or reshapes (not modelled).
MEAN_MAX_HEIGHT = 64
MEAN_MAX_ELEMENTS = 4096


def _mean(graph: Graph, op: Operation) -> MeanSpec:
    """MEAN over H and W of an NHWC map (keep_dims or not): Vela's depthwise sum and 32-bit MUL (lower.MeanSpec)."""
    x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
    if len(x.shape) != 4:
        raise Unsupported(f"MEAN of a rank-{len(x.shape)} tensor: NHWC maps only")
    ifm = _fm(x)
    axes = graph.tensors[op.inputs[1]].data
    if axes is None or sorted(int(a) % 4 for a in np.asarray(axes).reshape(-1)) != [1, 2]:
        raise Unsupported("MEAN over axes other than H and W")
    h, w, c = ifm.shape
    if int(np.prod(y.shape)) != c:
        raise Unsupported(f"MEAN output {y.shape}")
    ofm = _fm(y, (1, 1, c))
    if ofm.dtype != ifm.dtype:
        raise Unsupported("MEAN that changes the type")
    if h > MEAN_MAX_HEIGHT or h * w > MEAN_MAX_ELEMENTS or h * w < 2:
        raise Unsupported(f"MEAN over {h}x{w}: 2 to {MEAN_MAX_ELEMENTS} elements in up to {MEAN_MAX_HEIGHT} rows only")
    if len(y.shape) != 4:  # TFLite computes MEAN without keep_dims with other (reference) arithmetic
        raise Unsupported("MEAN without keep_dims (TFLite's reference arithmetic, not modelled)")
    k, shift = lower.mean_scale(ifm.scale, ofm.scale, h * w)
    real_scale, bias = lower.mean_builtin_params(ifm.scale, ifm.zero_point, ofm.scale, h * w, ofm.zero_point)
    sums = FeatureMap((1, 1, c), "int8", 0, 1.0)
    return MeanSpec(ifm, ofm, sums, k, shift, real_scale, bias)


def _softmax(graph: Graph, op: Operation) -> softmax.SoftmaxSpec:
    """SOFTMAX over the innermost axis of an 8-bit map: Vela's kick sequence (teflon.ethosu.softmax), which computes
    TFLite's reference 8-bit softmax. TFLite requires the output quantization 1/256 with the type's minimum as
    zero point."""
    x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
    h, w, c = nhwc(x)
    ifm = _fm(x, (1, h * w, c))
    ofm = _fm(y, (1, h * w, c))
    if ifm.dtype != ofm.dtype or y.shape != x.shape:
        raise Unsupported("SOFTMAX that changes the type or shape")
    if np.float32(ofm.scale) != np.float32(1 / 256) or ofm.zero_point != quant.activation_range(ofm.dtype, 1.0, 0,
                                                                                                 "NONE")[0]:
        raise Unsupported("SOFTMAX output quantization other than 1/256 from the type's minimum")
    if c > softmax.MAX_ROW:
        raise Unsupported(f"SOFTMAX over rows of {c}: the reference arithmetic Vela lowers overflows its final shift "
                          f"once the exponentials sum to 512 (TFLite's builtin kernel does not): rows of up to "
                          f"{softmax.MAX_ROW} only")
    table = softmax.exp_table(float(op.options.get("beta", 1.0)), ifm.scale)  # type: ignore[arg-type]
    return softmax.SoftmaxSpec(ifm, ofm, table, FeatureMap((1, 1, 1), "int8", 0, 1.0))


def _moves(graph: Graph, op: Operation) -> moves.MoveSpec:
    build = {"CONCATENATION": moves.concat, "SPLIT": moves.split, "SPLIT_V": moves.split, "SLICE": moves.slice_,
             "STRIDED_SLICE": moves.slice_, "RESIZE_NEAREST_NEIGHBOR": moves.resize_nearest,
             "TRANSPOSE": moves.transpose}[op.kind]
    return build(graph, op, _fm)


HANDLERS = {"CONV_2D": _conv, "DEPTHWISE_CONV_2D": _conv, "FULLY_CONNECTED": _fc, "MAX_POOL_2D": _pool,
            "AVERAGE_POOL_2D": _pool, "ADD": _eltwise, "SUB": _eltwise, "MUL": _eltwise, "RESHAPE": _reshape,
            "LOGISTIC": _lut, "TANH": _lut,
            "LEAKY_RELU": _lut}
HANDLERS.update({"MAXIMUM": _eltwise, "MINIMUM": _eltwise, "HARD_SWISH": _lut, "RELU": _rescale, "RELU6": _rescale,
                 "RELU_N1_TO_1": _rescale, "RELU_0_TO_1": _rescale, "QUANTIZE": _rescale, "PAD": _pad,
                 "MEAN": _mean, "SOFTMAX": _softmax})
# data movement (teflon.ethosu.moves)
HANDLERS.update(dict.fromkeys(("CONCATENATION", "SPLIT", "SPLIT_V", "SLICE", "STRIDED_SLICE",
                               "RESIZE_NEAREST_NEIGHBOR", "TRANSPOSE"), _moves))


def spec(graph: Graph, op: Operation) -> Spec:
    handler = HANDLERS.get(op.kind)
    if handler is None:
        raise Unsupported(f"{op.kind} is not lowered for the Ethos-U65")
    # once per graph: the support decision and the partition's compile ask for the same operation (a refused
    # operation raises every time; only specs are kept)
    return memo(graph, (__name__, "spec", op.index), lambda: _with_records(handler(graph, op)))


def _with_records(s: Spec) -> Spec:
    """A convolution's spec with its scale records, which both of its lowerings (support decision, compile) use."""
    if not isinstance(s, ConvSpec) or s.records is not None:
        return s
    return replace(s, records=quant.conv_scale_records(s.bias, s.ifm.scale, s.weight_scales, s.ofm.scale,
                                                       s.float_product))


# Operations with no weights: alone between CPU nodes each would be a partition of its own (teflon.lone). RESHAPE
# is a view in the default compile (program.lower_graph): looked through.
CHEAP_KINDS = frozenset(("AVERAGE_POOL_2D", "MAX_POOL_2D", "ADD", "SUB", "MUL", "MAXIMUM", "MINIMUM", "LOGISTIC",
                         "TANH", "LEAKY_RELU", "HARD_SWISH", "RELU", "RELU6", "RELU_N1_TO_1", "RELU_0_TO_1",
                         "QUANTIZE", "PAD", "MEAN", "CONCATENATION", "SOFTMAX"))
VIEW_KINDS = ("RESHAPE",)


def lower_spec(s: Spec, vela_compat: bool = False) -> list[lower.Kick]:
    """The kicks of one operation's spec: data movement (moves), SOFTMAX (softmax), or lower.lower for the rest;
    the one dispatch the support decision and the compile share."""
    if isinstance(s, moves.MoveSpec):
        return moves.lower_moves(s)
    if isinstance(s, softmax.SoftmaxSpec):
        return softmax.lower_softmax(s, vela_compat)
    return lower.lower(s, vela_compat)


def support(graph: Graph) -> dict[int, tuple[bool, str]]:
    out: dict[int, tuple[bool, str]] = {}
    for op in graph.operations:
        try:
            lower_spec(spec(graph, op))
        except LoweringError as e:
            out[op.index] = (False, str(e))
        else:
            out[op.index] = (True, "")
    return lone.drop_lone_cheap(graph, out, CHEAP_KINDS, VIEW_KINDS)
