"""Small whole networks with the structure of published detection, segmentation and pose models, built with
teflon.modelgen's graph builder (no TensorFlow).

They stand in for the real models the rocket coverage goal is judged on (YOLOv5/8/11-class detectors,
SSD-MobileNet heads, DeepLabV3's ASPP): the same operators in the same arrangements, at a size the simulator runs
in a second. `NETS` names each builder; `build(name, dtype)` returns the .tflite bytes. Weights and quantization
are drawn deterministically from the net's name: uint8 models are per-tensor (the TF1 converter's form), int8
models have per-output-channel weight scales (what TensorFlow 2 and PyTorch exporters write).

Ranges are calibrated as a post-training quantizer does: every op also runs in float on a calibration input
(uniform over the input's range, as the tests feed), and its output is quantized over the values it reached
(weights and biases are the drawn integers, read as reals). The conventions of the converter hold: an op that only moves data (SPLIT, MAX_POOL_2D, RESHAPE,
RESIZE_NEAREST_NEIGHBOR, AVERAGE_POOL_2D) keeps its input's parameters; LOGISTIC writes scale 1/256 with zero point
qmin; ADD, MUL and MEAN get an output range that holds their result; CONCATENATION's inputs and output share one
range that holds them all (TFLite's int8 kernel requires it; a graph input among them imposes its own): the tensors
feeding it take that range back to the ops that requantize (their producers write it).
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Sequence

import flatbuffers
import numpy as np
import tflite
from tflite.ActivationFunctionType import ActivationFunctionType
from tflite.BuiltinOperator import BuiltinOperator
from tflite.BuiltinOptions import BuiltinOptions

from .modelgen import (
    QRANGE,
    ActivationName,
    ConvCase,
    ConvParams,
    DType,
    GraphBuilder,
    PaddingName,
    QParams,
    add_add,
    add_conv,
    add_mean_hw,
    add_pool,
    conv_params,
    out_size,
)

ACTIVATION_STD = 2.0  # standard deviation of every convolution's pre-activation output on the calibration input


class Net:
    """A graph under construction: every method appends operators and returns the new tensor(s)."""

    def __init__(self, name: str, dtype: DType, per_channel: bool | None = None) -> None:
        """`per_channel`: int8 convolutions with per-output-channel weight scales (default: every int8 net)."""
        self.name = name
        self.dtype = dtype
        self.per_channel = dtype == "int8" if per_channel is None else per_channel
        self.g = GraphBuilder(f"teflon.netgen {name}-{dtype}")
        self.rng = np.random.default_rng(zlib.crc32(f"{name}-{dtype}".encode()))
        self._n = 0
        self.inputs: list[int] = []
        self.probe: dict[int, np.ndarray] = {}  # tensor -> its float values on the calibration input
        self._convs: list[tuple[int, int, int]] = []  # (input, weights, bias) tensors of every convolution
        self._group: dict[int, int] = {}  # tensor -> a representative of the tensors that must share its quant

    # -- tensors that share quantization (union-find) ---------------------------------------------------------------
    def _root(self, t: int) -> int:
        while self._group.get(t, t) != t:
            t = self._group[t]
        return t

    def _share(self, a: int, b: int) -> None:
        self._group[self._root(b)] = self._root(a)

    def _set_group_quant(self, t: int, q: QParams) -> None:
        root = self._root(t)
        for u in {root, *self._group}:
            if self._root(u) == root:
                self.g.set_quant(u, q)

    # -- helpers -------------------------------------------------------------------------------------------------
    def _name(self, what: str) -> str:
        self._n += 1
        return f"{what}{self._n}"

    def _version(self) -> int:
        return 2 if self.dtype == "int8" else 1

    def _calibrated(self, t: int, values: np.ndarray) -> int:
        """Record the float values tensor `t` takes on the calibration input."""
        self.probe[t] = values.astype(np.float32)
        return t

    def _observed(self, values: np.ndarray) -> QParams:
        return self._quant_for(float(values.min()), float(values.max()))

    def _quant_for(self, lo: float, hi: float) -> QParams:
        """Parameters covering [lo, hi] with real 0 representable."""
        lo, hi = min(lo, 0.0), max(hi, 0.0)
        qmin, qmax = QRANGE[self.dtype]
        scale = max(hi - lo, 1e-6) / (qmax - qmin)
        return QParams.make(scale, int(np.clip(round(qmin - lo / scale), qmin, qmax)))

    def _like(self, x: int, shape: Sequence[int], what: str) -> int:
        """A tensor that keeps `x`'s quantization (written by an op that only moves data)."""
        y = self.g.tensor(self._name(what), shape, self.dtype, self.g.quant(x))
        self._share(x, y)
        return y

    def _ints(self, values: Sequence[int]) -> int:
        return self.g.constant(self._name("const"), np.asarray(values, np.int32))

    # -- graph pieces --------------------------------------------------------------------------------------------
    def input(self, h: int, w: int, c: int) -> int:
        qmin, qmax = QRANGE[self.dtype]
        q = QParams.make(1 / 128, (qmin + qmax + 1) // 2)
        x = self.g.tensor("input", (1, h, w, c), self.dtype, q)
        self.inputs.append(x)
        ints = self.rng.integers(qmin, qmax + 1, size=(1, h, w, c))
        return self._calibrated(x, (ints - int(q.zero_point[0])) * float(q.scale[0]))

    def conv(self, x: int, oc: int, k: int = 3, s: int = 1, act: ActivationName = "none",
             depthwise: bool = False) -> int:
        """A convolution whose weight scale is set so its pre-activation output has a standard deviation of
        ACTIVATION_STD on the calibration input (trained networks keep activations in a few units; random weights
        would grow them layer by layer)."""
        _, h, w, c = self.g.shape(x)
        case = ConvCase("dwconv" if depthwise else "conv2d", h, w, c, None if depthwise else oc, k, s, "same",
                        act, self.dtype, per_channel=self.per_channel, seed=int(self.rng.integers(1 << 30)))
        params = conv_params(case, case.rng(), self.g.quant(x))
        values = _conv_float(self.probe[x], params, case)
        factor = ACTIVATION_STD / max(float(values.std()), 1e-6)
        wq = params.weight_quant
        params.weight_quant = QParams.make(wq.scale * np.float32(factor), wq.zero_point, wq.axis)
        values = values * factor
        if act == "relu":
            values = np.maximum(values, 0)
        elif act == "relu6":
            values = np.clip(values, 0, 6)
        if act != "relu6":  # RELU6 outputs keep the converter's 6/255 scale
            params.output_quant = self._observed(values)
        y = add_conv(self.g, case, x, params, self._name("conv"))
        self._convs.append((x, y - 2, y - 1))  # add_conv writes weights, bias, output in this order
        return self._calibrated(y, values)

    def logistic(self, x: int) -> int:
        qmin = QRANGE[self.dtype][0]
        y = self.g.tensor(self._name("sigmoid"), self.g.shape(x), self.dtype, QParams.make(1 / 256, qmin))
        self.g.op(BuiltinOperator.LOGISTIC, self._version(), [x], [y])
        return self._calibrated(y, 1 / (1 + np.exp(-self.probe[x])))

    def mul(self, a: int, b: int) -> int:
        values = self.probe[a] * self.probe[b]
        y = self.g.tensor(self._name("mul"), self.g.shape(a), self.dtype, self._observed(values))
        self.g.op(BuiltinOperator.MUL, self._version(), [a, b], [y], BuiltinOptions.MulOptions, _mul_options)
        return self._calibrated(y, values)

    def silu(self, x: int) -> int:
        """x * sigmoid(x) as TFLite writes it: LOGISTIC, then MUL with the LOGISTIC's own input."""
        return self.mul(x, self.logistic(x))

    def conv_silu(self, x: int, oc: int, k: int = 3, s: int = 1) -> int:
        return self.silu(self.conv(x, oc, k, s))

    def add(self, a: int, b: int, act: ActivationName = "none", sub: bool = False) -> int:
        values = self.probe[a] - self.probe[b] if sub else self.probe[a] + self.probe[b]
        if act != "none":
            values = np.clip(values, 0, 6 if act == "relu6" else None)
        y = add_add(self.g, a, b, act, "sub" if sub else "add", out_name=self._name("sub" if sub else "add"))
        if act != "relu6":
            self.g.set_quant(y, self._observed(values))
        return self._calibrated(y, values)

    def concat(self, xs: Sequence[int], axis: int = 3) -> int:
        shapes = [self.g.shape(x) for x in xs]
        shape = list(shapes[0])
        shape[axis] = sum(s[axis] for s in shapes)
        values = np.concatenate([self.probe[x] for x in xs], axis=axis)
        fixed = [x for x in xs if x in self.inputs]  # a graph input keeps its range: the others take it
        q = self.g.quant(fixed[0]) if fixed else self._observed(values)
        assert q is not None
        y = self._calibrated(self.g.tensor(self._name("concat"), shape, self.dtype, q), values)
        for x in xs:
            if x not in fixed:
                self._share(y, x)
        self._set_group_quant(y, q)

        def options(fb: flatbuffers.Builder) -> int:
            tflite.ConcatenationOptionsStart(fb)
            tflite.ConcatenationOptionsAddAxis(fb, axis)
            tflite.ConcatenationOptionsAddFusedActivationFunction(fb, ActivationFunctionType.NONE)
            return tflite.ConcatenationOptionsEnd(fb)

        self.g.op(BuiltinOperator.CONCATENATION, self._version(), list(xs), [y],
                  BuiltinOptions.ConcatenationOptions, options)
        return y

    def split(self, x: int, n: int, axis: int = 3) -> list[int]:
        shape = list(self.g.shape(x))
        if shape[axis] % n:
            raise ValueError(f"{shape[axis]} does not split into {n}")
        shape[axis] //= n
        ys = [self._like(x, shape, "split") for _ in range(n)]
        for y, part in zip(ys, np.split(self.probe[x], n, axis=axis), strict=True):
            self._calibrated(y, part)

        def options(fb: flatbuffers.Builder) -> int:
            tflite.SplitOptionsStart(fb)
            tflite.SplitOptionsAddNumSplits(fb, n)
            return tflite.SplitOptionsEnd(fb)

        self.g.op(BuiltinOperator.SPLIT, self._version(), [self._ints([axis]), x], ys, BuiltinOptions.SplitOptions,
                  options)
        return ys

    def split_v(self, x: int, sizes: Sequence[int], axis: int = 3) -> list[int]:
        """SPLIT_V into parts of the given sizes along `axis`."""
        shape = list(self.g.shape(x))
        if sum(sizes) != shape[axis]:
            raise ValueError(f"{list(sizes)} does not split {shape[axis]}")
        ys, at = [], 0
        for size in sizes:
            part = [*shape[:axis], size, *shape[axis + 1:]]
            y = self._like(x, part, "splitv")
            self._calibrated(y, np.take(self.probe[x], range(at, at + size), axis=axis))
            ys.append(y)
            at += size

        def options(fb: flatbuffers.Builder) -> int:
            tflite.SplitVOptionsStart(fb)
            tflite.SplitVOptionsAddNumSplits(fb, len(sizes))
            return tflite.SplitVOptionsEnd(fb)

        self.g.op(BuiltinOperator.SPLIT_V, self._version(), [x, self._ints(sizes), self._ints([axis])], ys,
                  BuiltinOptions.SplitVOptions, options)
        return ys

    def squeeze(self, x: int, dims: Sequence[int]) -> int:
        """SQUEEZE of the given size-1 axes."""
        shape = [d for i, d in enumerate(self.g.shape(x)) if i not in dims]
        y = self._like(x, shape, "squeeze")

        def options(fb: flatbuffers.Builder) -> int:
            vec = _int32_vector(fb, tflite.SqueezeOptionsStartSqueezeDimsVector, dims)
            tflite.SqueezeOptionsStart(fb)
            tflite.SqueezeOptionsAddSqueezeDims(fb, vec)
            return tflite.SqueezeOptionsEnd(fb)

        self.g.op(BuiltinOperator.SQUEEZE, 1, [x], [y], BuiltinOptions.SqueezeOptions, options)
        return self._calibrated(y, self.probe[x].reshape(shape))

    def expand_dims(self, x: int, axis: int) -> int:
        shape = list(self.g.shape(x))
        shape.insert(axis, 1)
        y = self._like(x, shape, "expand")

        def options(fb: flatbuffers.Builder) -> int:
            tflite.ExpandDimsOptionsStart(fb)
            return tflite.ExpandDimsOptionsEnd(fb)

        self.g.op(BuiltinOperator.EXPAND_DIMS, 1, [x, self._ints([axis])], [y], BuiltinOptions.ExpandDimsOptions,
                  options)
        return self._calibrated(y, self.probe[x].reshape(shape))

    def channels(self, x: int, first: int, count: int, strided: bool = False) -> int:
        """Channels first..first+count-1 of x: a SLICE, or a STRIDED_SLICE (begin/end masks on the whole axes)."""
        shape = list(self.g.shape(x))
        y = self._like(x, (*shape[:-1], count), "slice")
        rank = len(shape)
        if strided:
            begin = self._ints([0] * (rank - 1) + [first])
            end = self._ints([0] * (rank - 1) + [first + count])
            mask = (1 << (rank - 1)) - 1

            def options(fb: flatbuffers.Builder) -> int:
                tflite.StridedSliceOptionsStart(fb)
                tflite.StridedSliceOptionsAddBeginMask(fb, mask)
                tflite.StridedSliceOptionsAddEndMask(fb, mask)
                return tflite.StridedSliceOptionsEnd(fb)

            self.g.op(BuiltinOperator.STRIDED_SLICE, self._version(), [x, begin, end, self._ints([1] * rank)], [y],
                      BuiltinOptions.StridedSliceOptions, options)
        else:
            self.g.op(BuiltinOperator.SLICE, self._version(),
                      [x, self._ints([0] * (rank - 1) + [first]), self._ints([-1] * (rank - 1) + [count])], [y])
        return self._calibrated(y, self.probe[x][..., first:first + count])

    def pool(self, x: int, kind: str, k: int, s: int, padding: PaddingName = "same") -> int:
        _, h, w, c = self.g.shape(x)
        y = self._like(x, (1, out_size(h, k, s, padding), out_size(w, k, s, padding), c), kind)
        add_pool(self.g, "max" if kind == "maxpool" else "avg", x, y, k, k, s, padding)
        return self._calibrated(y, _pool_float(self.probe[x], kind, k, s, padding))

    def resize_nearest(self, x: int, factor: int) -> int:
        _, h, w, c = self.g.shape(x)
        y = self._like(x, (1, h * factor, w * factor, c), "resize")
        self.g.op(BuiltinOperator.RESIZE_NEAREST_NEIGHBOR, self._version(), [x, self._ints([h * factor, w * factor])],
                  [y], BuiltinOptions.ResizeNearestNeighborOptions, _resize_options)
        return self._calibrated(y, self.probe[x].repeat(factor, axis=1).repeat(factor, axis=2))

    def reshape(self, x: int, shape: Sequence[int]) -> int:
        y = self._like(x, shape, "reshape")
        dims = [int(d) for d in shape]

        def options(fb: flatbuffers.Builder) -> int:
            vec = _int32_vector(fb, tflite.ReshapeOptionsStartNewShapeVector, dims)
            tflite.ReshapeOptionsStart(fb)
            tflite.ReshapeOptionsAddNewShape(fb, vec)
            return tflite.ReshapeOptionsEnd(fb)

        self.g.op(BuiltinOperator.RESHAPE, 1, [x, self._ints(dims)], [y], BuiltinOptions.ReshapeOptions, options)
        return self._calibrated(y, self.probe[x].reshape(dims))

    def transpose(self, x: int, perm: Sequence[int]) -> int:
        values = self.probe[x].transpose(perm)
        y = self._like(x, values.shape, "transpose")
        self.g.op(BuiltinOperator.TRANSPOSE, self._version(), [x, self._ints(perm)], [y])
        return self._calibrated(y, values)

    def pad(self, x: int, pads: Sequence[tuple[int, int]]) -> int:
        """PAD with the input's zero point (a real 0), as converters write an explicit convolution padding."""
        values = np.pad(self.probe[x], pads)
        y = self._like(x, values.shape, "pad")
        amounts = self.g.constant(self._name("pads"), np.asarray(pads, np.int32).reshape(-1, 2))
        self.g.op(BuiltinOperator.PAD, self._version(), [x, amounts], [y])
        return self._calibrated(y, values)

    def channel_shuffle(self, x: int, groups: int) -> int:
        """ShuffleNet's channel shuffle on an NCHW tensor as converters write it: RESHAPE to (1, g, C/g, H, W),
        TRANSPOSE (0, 2, 1, 3, 4), RESHAPE back."""
        _, c, h, w = self.g.shape(x)
        t = self.transpose(self.reshape(x, (1, groups, c // groups, h, w)), (0, 2, 1, 3, 4))
        return self.reshape(t, (1, c, h, w))

    def mean_hw(self, x: int) -> int:
        _, _, _, c = self.g.shape(x)
        values = self.probe[x].mean(axis=(1, 2), keepdims=True)
        y = self.g.tensor(self._name("mean"), (1, 1, 1, c), self.dtype, self._observed(values))
        add_mean_hw(self.g, x, y, self._ints([1, 2]))
        return self._calibrated(y, values)

    def build(self, inputs: Sequence[int], outputs: Sequence[int]) -> bytes:
        # a concatenation may have widened a convolution's input range after the convolution was added: its bias
        # scale must stay input scale x weight scale (TFLite checks it)
        for x, w, b in self._convs:
            qx, qw = self.g.quant(x), self.g.quant(w)
            assert qx is not None and qw is not None
            self.g.set_quant(b, QParams.make(qx.scale.astype(np.float64) * qw.scale.astype(np.float64), 0))
        return self.g.build(inputs, outputs)


def _windows(x: np.ndarray, k: int, s: int, padding: PaddingName, fill: float) -> np.ndarray:
    """(1, OH, OW, C, k, k) windows of an NHWC array, SAME padding filled with `fill`."""
    _, h, w, _ = x.shape
    oh, ow = out_size(h, k, s, padding), out_size(w, k, s, padding)
    ph, pw = max((oh - 1) * s + k - h, 0), max((ow - 1) * s + k - w, 0)
    xp = np.pad(x, ((0, 0), (ph // 2, ph - ph // 2), (pw // 2, pw - pw // 2), (0, 0)), constant_values=fill)
    return np.lib.stride_tricks.sliding_window_view(xp, (k, k), axis=(1, 2))[:, ::s, ::s][:, :oh, :ow]


def _conv_float(x: np.ndarray, p: ConvParams, case: ConvCase) -> np.ndarray:
    """The convolution in float on dequantized weights (SAME padding with real zeros, as the quantized op pads
    with the input zero point)."""
    wq = p.weight_quant
    w = (p.weights.astype(np.float32) - wq.zero_point.astype(np.float32).reshape(-1, 1, 1, 1)
         if case.op == "conv2d" else p.weights.astype(np.float32) - wq.zero_point.astype(np.float32))
    if case.op == "conv2d":
        w = w * wq.scale.reshape(-1, 1, 1, 1)
    else:
        w = w * wq.scale
    bias = p.bias.astype(np.float32) * (p.input_quant.scale * wq.scale).astype(np.float32)
    win = _windows(x, case.kernel, case.stride, case.padding, 0.0)  # (1, OH, OW, C, kh, kw)
    if case.op == "dwconv":
        return np.einsum("nhwcij,ijc->nhwc", win, w[0]) + bias
    return np.einsum("nhwcij,oijc->nhwo", win, w) + bias


def _pool_float(x: np.ndarray, kind: str, k: int, s: int, padding: PaddingName) -> np.ndarray:
    if kind == "maxpool":
        return _windows(x, k, s, padding, -np.inf).max(axis=(4, 5))
    ones = np.ones_like(x[..., :1])
    return _windows(x, k, s, padding, 0.0).sum(axis=(4, 5)) / _windows(ones, k, s, padding, 0.0).sum(axis=(4, 5))


def _int32_vector(fb: flatbuffers.Builder, start: Callable[[flatbuffers.Builder, int], object],
                  values: Sequence[int]) -> int:
    """An options table's int32 vector (flatbuffers are built back to front)."""
    start(fb, len(values))
    for v in reversed(values):
        fb.PrependInt32(int(v))
    return fb.EndVector()


def _mul_options(fb: flatbuffers.Builder) -> int:
    tflite.MulOptionsStart(fb)
    tflite.MulOptionsAddFusedActivationFunction(fb, ActivationFunctionType.NONE)
    return tflite.MulOptionsEnd(fb)


def _resize_options(fb: flatbuffers.Builder) -> int:
    tflite.ResizeNearestNeighborOptionsStart(fb)
    tflite.ResizeNearestNeighborOptionsAddAlignCorners(fb, False)
    tflite.ResizeNearestNeighborOptionsAddHalfPixelCenters(fb, False)
    return tflite.ResizeNearestNeighborOptionsEnd(fb)


def yolo(dtype: DType) -> bytes:
    """A YOLOv8-class detector in miniature: conv+SiLU stem, a C2f block (SPLIT, bottleneck with ADD,
    CONCATENATION), SPPF (a chain of three 5x5 stride-1 MAX_POOL_2D, CONCATENATION), an upsampling path
    (RESIZE_NEAREST_NEIGHBOR x2, CONCATENATION) and a head (conv, RESHAPE, LOGISTIC on the class scores)."""
    n = Net("yolo", dtype)
    x = n.input(64, 64, 3)
    t = n.conv_silu(x, 16, 3, 2)                       # 32x32x16
    t = n.conv_silu(t, 32, 3, 2)                       # 16x16x32
    t = n.conv_silu(t, 32, 1)
    a, b = n.split(t, 2)                               # C2f: 2 x 16x16x16
    r = n.conv_silu(n.conv_silu(b, 16, 3), 16, 3)
    c2f = n.conv_silu(n.concat([a, b, n.add(b, r)]), 32, 1)
    p = n.conv_silu(c2f, 64, 3, 2)                     # 8x8x64
    s = n.conv_silu(p, 32, 1)                          # SPPF
    m1 = n.pool(s, "maxpool", 5, 1)
    m2 = n.pool(m1, "maxpool", 5, 1)
    m3 = n.pool(m2, "maxpool", 5, 1)
    p = n.conv_silu(n.concat([s, m1, m2, m3]), 64, 1)
    up = n.resize_nearest(p, 2)                        # 16x16x64
    f = n.conv_silu(n.concat([up, c2f]), 32, 1)
    box = n.reshape(n.conv(f, 4, 1), (1, 256, 4))
    cls = n.logistic(n.reshape(n.conv(f, 8, 1), (1, 256, 8)))
    return n.build([x], [box, cls])


def ssd(dtype: DType) -> bytes:
    """An SSD-MobileNet head in miniature: a depthwise-separable backbone with fused RELU6, box and class
    convolutions at two scales, RESHAPE to (1, anchors, k), CONCATENATION over the scales, LOGISTIC on the scores."""
    n = Net("ssd", dtype)
    x = n.input(64, 64, 3)
    t = n.conv(x, 16, 3, 2, "relu6")                   # 32x32x16
    t = n.conv(n.conv(t, 16, 3, 1, "relu6", depthwise=True), 32, 1, 1, "relu6")
    t = n.conv(n.conv(t, 32, 3, 2, "relu6", depthwise=True), 64, 1, 1, "relu6")  # 16x16x64
    f1 = t
    t = n.conv(n.conv(t, 64, 3, 2, "relu6", depthwise=True), 64, 1, 1, "relu6")  # 8x8x64
    f2 = t
    boxes, scores = [], []
    for f in (f1, f2):
        _, h, w, _ = n.g.shape(f)
        boxes.append(n.reshape(n.conv(f, 3 * 4, 1), (1, h * w * 3, 4)))
        scores.append(n.reshape(n.conv(f, 3 * 6, 1), (1, h * w * 3, 6)))
    return n.build([x], [n.concat(boxes, axis=1), n.logistic(n.concat(scores, axis=1))])


def deeplab(dtype: DType) -> bytes:
    """DeepLabV3's ASPP in miniature: a backbone to 16x16, three parallel branches (1x1 conv, 3x3 conv, image
    pooling = global AVERAGE_POOL_2D, 1x1 conv, RESIZE_NEAREST_NEIGHBOR back to 16x16), CONCATENATION, a 1x1
    projection ADDed to the backbone feature, per-class logits upsampled x2."""
    n = Net("deeplab", dtype)
    x = n.input(64, 64, 3)
    t = n.conv(x, 16, 3, 2, "relu")                    # 32x32x16
    t = n.conv(n.conv(t, 16, 3, 2, "relu", depthwise=True), 32, 1, 1, "relu")  # 16x16x32
    b1 = n.conv(t, 32, 1, 1, "relu")
    b2 = n.conv(t, 32, 3, 1, "relu")
    g = n.conv(n.pool(t, "avgpool", 16, 16, "valid"), 32, 1, 1, "relu")
    b3 = n.resize_nearest(g, 16)
    proj = n.conv(n.concat([b1, b2, b3]), 32, 1)
    y = n.conv(n.add(proj, t, "relu"), 8, 1)
    return n.build([x], [n.resize_nearest(y, 2)])


def movenet(dtype: DType) -> bytes:
    """A pose model in miniature (MoveNet-style): a depthwise-separable backbone, squeeze-excite global context
    (MEAN over H, W, a 1x1 conv and LOGISTIC whose per-channel result MULtiplies the feature map, broadcast),
    keypoint heatmaps through LOGISTIC."""
    n = Net("movenet", dtype)
    x = n.input(64, 64, 3)
    t = n.conv(x, 16, 3, 2, "relu6")                   # 32x32x16
    t = n.conv(n.conv(t, 16, 3, 2, "relu6", depthwise=True), 32, 1, 1, "relu6")  # 16x16x32
    se = n.logistic(n.conv(n.mean_hw(t), 32, 1))
    t = n.mul(t, se)
    heat = n.logistic(n.conv(t, 17, 1))
    return n.build([x], [heat])


def nchw_shufflenet(dtype: DType) -> bytes:
    """A PyTorch/ONNX export in miniature (teflon.nchw_islands): every convolution between a TRANSPOSE to NHWC
    and one back to NCHW, and the glue on NCHW tensors in between: RELU, an explicit PAD, a channel shuffle,
    SPLIT and CONCATENATION on axis 1, a residual ADD."""
    n = Net("nchw_shufflenet", dtype)
    to_nchw, to_nhwc = (0, 3, 1, 2), (0, 2, 3, 1)
    x = n.input(32, 32, 3)
    t = n.transpose(n.conv(x, 32, 3, 2), to_nchw)            # (1, 32, 16, 16)
    t = n.channel_shuffle(t, 2)
    a, b = n.split(t, 2, axis=1)
    b = n.transpose(n.conv(n.transpose(b, to_nhwc), 16, 1, 1, "relu"), to_nchw)
    t = n.concat([a, b], axis=1)
    t = n.add(t, n.transpose(n.conv(n.transpose(t, to_nhwc), 32, 1), to_nchw))
    t = n.pad(t, [(0, 0), (0, 0), (1, 1), (1, 1)])
    y = n.conv(n.transpose(t, to_nhwc), 32, 3, 1, depthwise=True)  # SAME on the padded map: a VALID-sized result
    return n.build([x], [y])


def box_decode(dtype: DType, anchors: int = 8400) -> bytes:
    """A YOLOv8 box decode: the 1x4xN distance map split into two 1x2xN halves (lt, rb), whose sum (the centre,
    times 2) and difference (the size) are taken, with a LOGISTIC on the sum. One tensor feeds an ADD and a SUB as
    the first operand of one and the second of the other (the operand pairing the etnaviv NN add reads from one
    buffer)."""
    n = Net("box_decode", dtype, per_channel=False)
    x = n.input(1, 4, anchors)
    lt, rb = n.split(x, 2, axis=2)
    centre = n.add(lt, rb)
    size = n.add(rb, lt, sub=True)
    return n.build([x], [n.logistic(centre), size])


def residual_projection(dtype: DType, size: int = 129) -> bytes:
    """DeepLabV3 (MobileNetV2 0.5)'s 1x1 projection at 129x129x12 whose output feeds both the next block's
    expansion conv and the residual ADD after it, as the ADD's second operand (on a311d the first operand's
    producer writes planes past its 12 channels, onto the second: docs/hardware/etnaviv-nn.md)."""
    n = Net("residual_projection", dtype, per_channel=False)
    x = n.input(size, size, 8)
    proj = n.conv(x, 12, 1)
    expand = n.conv(proj, 72, 1, 1, "relu6")
    inner = n.conv(n.conv(expand, 72, 3, 1, "relu6", depthwise=True), 12, 1)
    return n.build([x], [n.add(inner, proj)])


def group_conv(dtype: DType, size: int = 20) -> bytes:
    """ShuffleNet V1's grouped convolutions as its converter writes them: SPLIT into 8 parts of 12 channels, a 1x1
    CONV_2D per part, CONCATENATION of the 8 outputs (45 channels each); then 4 groups of a 3x3 convolution."""
    n = Net("group_conv", dtype)
    x = n.input(size, size, 24)
    t = n.conv(x, 96, 1)
    t = n.concat([n.conv(p, 45, 1) for p in n.split(t, 8)])
    t = n.conv(t, 48, 1, act="relu")
    y = n.concat([n.conv(p, 12, 3) for p in n.split(t, 4)])
    return n.build([x], [y])


def silu_chain(dtype: DType, size: int = 112) -> bytes:
    """YOLO11n's conv -> LOGISTIC -> MUL (SiLU) chain at 112x112x16, twice."""
    n = Net("silu_chain", dtype, per_channel=False)
    x = n.input(size, size, 3)
    return n.build([x], [n.conv_silu(n.conv_silu(x, 16, 3), 16, 3)])


def mobilenet_v1(dtype: DType) -> bytes:
    """MobileNetV1 1.0 224 at full size, random weights: the network the published board timings are for (Mesa's
    docs/teflon.rst, the vendor stacks; docs/PERFORMANCE.md "Board estimate"); what runs is the layer shapes."""
    n = Net("mobilenet_v1", dtype)
    x = n.input(224, 224, 3)
    t = n.conv(x, 32, 3, 2, "relu6")
    for oc, s in ((64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2), *[(512, 1)] * 5, (1024, 2), (1024, 1)):
        t = n.conv(n.conv(t, 0, 3, s, "relu6", depthwise=True), oc, 1, 1, "relu6")
    t = n.pool(t, "avgpool", 7, 1, "valid")
    logits = n.conv(t, 1001, 1)
    return n.build([x], [n.reshape(logits, (1, 1001))])


NETS: dict[str, Callable[[DType], bytes]] = {"yolo": yolo, "ssd": ssd, "deeplab": deeplab, "movenet": movenet,
                                             "nchw_shufflenet": nchw_shufflenet}
# Full-size networks for timing (bench, the board estimate), not for the conformance sweeps
BENCH_NETS: dict[str, Callable[[DType], bytes]] = {"mobilenet_v1": mobilenet_v1}
# Single structures of real models that went wrong on a target (tests/etnaviv/test_program_check.py)
STRUCTURES: dict[str, Callable[[DType], bytes]] = {"box_decode": box_decode,
                                                    "residual_projection": residual_projection,
                                                    "silu_chain": silu_chain}


def build(name: str, dtype: DType) -> bytes:
    builders = {**NETS, **STRUCTURES, **BENCH_NETS}
    if name not in builders:
        raise ValueError(f"unknown net {name!r} (one of {', '.join(builders)})")
    return builders[name](dtype)


__all__ = ["BENCH_NETS", "NETS", "STRUCTURES", "Net", "box_decode", "build", "deeplab", "group_conv", "mobilenet_v1",
           "movenet", "nchw_shufflenet", "residual_projection", "silu_chain", "ssd", "yolo"]
