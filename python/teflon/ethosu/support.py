"""Which TFLite operations the Ethos-U65 compiler claims, and each one's NPU description (teflon.ethosu.lower specs).

`support(graph)` answers {operation index: (claimed, reason)}: an operation is claimed only for the parameter ranges
lowered here and checked against Vela (tests/ethos_u/test_vela_compat.py); everything else keeps a specific reason.
`spec(graph, op)` gives the lowering input of a claimed operation (feature maps at offset 0: the program places them).
"""

from __future__ import annotations

import numpy as np

from teflon.ethosu import lower, moves, quant
from teflon.ethosu.lower import ConvSpec, EltSpec, FeatureMap, LoweringError, LutSpec, PoolSpec
from teflon.ir import Graph, Operation, Tensor

ACTIVATIONS = ("NONE", "RELU", "RELU6")  # the ones checked against Vela
MAX_DIM = 65536  # the *_M1 registers are 16 bits
MAX_STRIDE = 2  # strides beyond 2 are not checked against Vela here
MAX_KERNEL = 8  # one sub-kernel: larger kernels are decomposed by Vela, not here
Spec = ConvSpec | PoolSpec | EltSpec | LutSpec | moves.MoveSpec
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
        s = t.shape
        if len(s) != 4 or s[0] != 1:
            raise Unsupported(f"tensor {t.index} shape {s}: NHWC with batch 1 only")
        shape = (s[1], s[2], s[3])
    if max(shape) > MAX_DIM:
        raise Unsupported(f"tensor {t.index} shape {shape} exceeds the 16-bit size registers")
    return FeatureMap(shape, t.dtype, t.quant.zero_point, float(t.quant.scale))


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


def _bias(graph: Graph, op: Operation, n: int) -> np.ndarray:
    if len(op.inputs) < 3 or op.inputs[2] < 0:
        return np.zeros(n, np.int64)
    b = graph.tensors[op.inputs[2]]
    if b.data is None or b.dtype not in ("int32", "int64"):
        raise Unsupported("bias is not an int32 constant")
    return b.data.reshape(-1).astype(np.int64)


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
    data = w.data.astype(np.int64)
    if depthwise:
        if int(op.options.get("depth_multiplier", 1)) != 1 or w.shape[-1] != ifm.shape[2]:
            raise Unsupported("depthwise with a depth multiplier other than 1")
        data = data.reshape(w.shape[1], w.shape[2], w.shape[3]).transpose(2, 0, 1)[..., None]
    elif data.shape[3] != ifm.shape[2]:
        raise Unsupported("grouped convolution")
    weights = data - zps.reshape(-1, 1, 1, 1)
    kh, kw = weights.shape[1:3]
    if kh > MAX_KERNEL or kw > MAX_KERNEL:
        raise Unsupported(f"kernel {kh}x{kw}: up to {MAX_KERNEL}x{MAX_KERNEL} only")
    pad = str(op.options.get("padding", "SAME"))
    if pad not in ("SAME", "VALID"):
        raise Unsupported(f"padding {pad}")
    return ConvSpec(ifm, ofm, weights, _bias(graph, op, weights.shape[0]), scales, (sy, sx), pad == "SAME",
                    _activation(op), depthwise, float_product=ifm.dtype != "int8")


def _fc(graph: Graph, op: Operation) -> ConvSpec:
    x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
    w, scales, zps = _weights(graph, op)
    if len(w.shape) != 2:
        raise Unsupported(f"weights of shape {w.shape}")
    n, k = w.shape
    if int(np.prod(x.shape)) != k or len(x.shape) != 2 or x.shape[0] != 1:
        raise Unsupported(f"input {x.shape}: one row of {k} only")
    ifm = _fm(x, (1, 1, k))
    ofm = _fm(y, (1, 1, n))
    weights = (w.data.astype(np.int64) - zps.reshape(-1, 1)).reshape(n, 1, 1, k)
    per_channel = len(w.quant.scales) > 1
    return ConvSpec(ifm, ofm, weights, _bias(graph, op, n), scales, (1, 1), False, _activation(op),
                    float_product=ifm.dtype != "int8" or not per_channel)


def _pool(graph: Graph, op: Operation) -> PoolSpec:
    ifm = _fm(graph.tensors[op.inputs[0]])
    ofm = _fm(graph.tensors[op.outputs[0]])
    if ifm.dtype != ofm.dtype:
        raise Unsupported("pool changes the type")
    kh, kw = int(op.options.get("filter_h", 1)), int(op.options.get("filter_w", 1))
    sy, sx = int(op.options.get("stride_h", 1)), int(op.options.get("stride_w", 1))
    if kh > MAX_KERNEL or kw > MAX_KERNEL or not (1 <= sy <= MAX_STRIDE and 1 <= sx <= MAX_STRIDE):
        raise Unsupported(f"pool {kh}x{kw} stride {sy}x{sx}")
    kind = "max" if op.kind == "MAX_POOL_2D" else "avg"
    if ifm.scale != ofm.scale or ifm.zero_point != ofm.zero_point:
        raise Unsupported("pool that requantizes (not checked against Vela)")
    return PoolSpec(ifm, ofm, kind, (kh, kw), (sy, sx), str(op.options.get("padding", "VALID")) == "SAME",
                    _activation(op))


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
    if op.kind == "LEAKY_RELU":
        table = quant.leaky_relu_lut(ifm.dtype, ifm.scale, ifm.zero_point, ofm.scale, ofm.zero_point,
                                     float(op.options.get("alpha", 0.2)))  # type: ignore[arg-type]
    else:
        table = quant.lut8(ifm.dtype, ifm.scale, ifm.zero_point, ofm.scale, ofm.zero_point, LUT_FUNCTIONS[op.kind])
    return LutSpec(ifm, ofm, table)


def _moves(graph: Graph, op: Operation) -> moves.MoveSpec:
    build = {"CONCATENATION": moves.concat, "SPLIT": moves.split, "SPLIT_V": moves.split, "SLICE": moves.slice_,
             "STRIDED_SLICE": moves.slice_, "RESIZE_NEAREST_NEIGHBOR": moves.resize_nearest,
             "TRANSPOSE": moves.transpose}[op.kind]
    return build(graph, op, _fm)


HANDLERS = {"CONV_2D": _conv, "DEPTHWISE_CONV_2D": _conv, "FULLY_CONNECTED": _fc, "MAX_POOL_2D": _pool,
            "AVERAGE_POOL_2D": _pool, "ADD": _eltwise, "SUB": _eltwise, "MUL": _eltwise, "RESHAPE": _reshape,
            "LOGISTIC": _lut, "TANH": _lut,
            "LEAKY_RELU": _lut}
# data movement (teflon.ethosu.moves)
HANDLERS.update(dict.fromkeys(("CONCATENATION", "SPLIT", "SPLIT_V", "SLICE", "STRIDED_SLICE",
                               "RESIZE_NEAREST_NEIGHBOR", "TRANSPOSE"), _moves))


def spec(graph: Graph, op: Operation) -> Spec:
    handler = HANDLERS.get(op.kind)
    if handler is None:
        raise Unsupported(f"{op.kind} is not lowered for the Ethos-U65")
    return handler(graph, op)


# A one-value constant operand is an IFM2 scalar (IFM2_BROADCAST 0x80). Linux's command-stream validator recognises
# a scalar only by the U85's encoding (8) and refuses a U65 stream whose IFM2 was never set (ethosu_gem.c as read in
# docs/hardware/ethosu-kernel.md; the simulated kernel applies the same rule), so such a kick would be refused at
# invoke; it stays on the CPU until the stream can satisfy both the hardware and that validator.
SCALAR_REASON = ("{kind} with a one-value constant: the U65 IFM2 scalar that Vela encodes is refused by Linux's "
                 "command-stream validator (docs/hardware/ethosu-kernel.md)")


def support(graph: Graph) -> dict[int, tuple[bool, str]]:
    out: dict[int, tuple[bool, str]] = {}
    for op in graph.operations:
        try:
            s = spec(graph, op)
            lower.lower(s)
        except LoweringError as e:
            out[op.index] = (False, str(e))
        else:
            scalar = isinstance(s, EltSpec) and s.scalar is not None
            out[op.index] = (False, SCALAR_REASON.format(kind=op.kind)) if scalar else (True, "")
    return out
