"""Single-op (and tiny multi-op) quantized .tflite models, built as bytes without TensorFlow.

Used by the op test suites and by tools that want a model of a given shape. Models are written with the
`tflite` package's flatc-generated builder functions and follow the conventions the TFLite converter uses:
buffer 0 is an empty sentinel, operator codes carry both the deprecated and the new builtin code, constant
data is 16-byte aligned, file identifier TFL3, schema version 3.

Every case is deterministic: its random numbers come from a generator seeded by the case's name, so a
test id (`conv2d-in112x112x32-oc64-k3-s2-same-u8`) fully determines the model.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import flatbuffers
import numpy as np
import tflite
from tflite.ActivationFunctionType import ActivationFunctionType
from tflite.BuiltinOperator import BuiltinOperator
from tflite.BuiltinOptions import BuiltinOptions
from tflite.Padding import Padding
from tflite.TensorType import TensorType

DType = Literal["uint8", "int8"]
PaddingName = Literal["same", "valid"]
ActivationName = Literal["none", "relu", "relu6"]

QRANGE: dict[str, tuple[int, int]] = {"uint8": (0, 255), "int8": (-128, 127)}
DTYPE_TOKEN = {"uint8": "u8", "int8": "i8"}
_TENSOR_TYPE = {
    "float32": TensorType.FLOAT32,
    "int32": TensorType.INT32,
    "uint8": TensorType.UINT8,
    "int8": TensorType.INT8,
}
_TYPE_DTYPE = {v: k for k, v in _TENSOR_TYPE.items()}
_PADDING = {"same": Padding.SAME, "valid": Padding.VALID}
_ACTIVATION = {
    "none": ActivationFunctionType.NONE,
    "relu": ActivationFunctionType.RELU,
    "relu6": ActivationFunctionType.RELU6,
}
# How many standard deviations of the accumulator the output range covers on each side.
_SPREAD_SIGMAS = 3.5
# RELU6 cases aim the largest typical real output at this value: part of the outputs clamp at 6.
_RELU6_TARGET = 8.0


# --------------------------------------------------------------------------------------------------------------
# Generic graph builder
# --------------------------------------------------------------------------------------------------------------


@dataclass(eq=False)
class QParams:
    """Affine quantization of one tensor: real = scale * (q - zero_point), per tensor or along `axis`."""

    scale: np.ndarray
    zero_point: np.ndarray
    axis: int = 0

    @classmethod
    def make(cls, scale: float | Sequence[float] | np.ndarray, zero_point: int | Sequence[int] | np.ndarray,
             axis: int = 0) -> QParams:
        s = np.atleast_1d(np.asarray(scale, dtype=np.float32))
        z = np.atleast_1d(np.asarray(zero_point, dtype=np.int64))
        if z.size == 1 and s.size > 1:
            z = np.full(s.shape, z[0], dtype=np.int64)
        if s.shape != z.shape:
            raise ValueError(f"{s.size} scales but {z.size} zero points")
        return cls(s, z, axis)

    @property
    def per_tensor(self) -> bool:
        return self.scale.size == 1


OptionsWriter = Callable[[flatbuffers.Builder], int]


@dataclass
class _TensorSpec:
    name: str
    shape: tuple[int, ...]
    dtype: str
    quant: QParams | None
    buffer: int


@dataclass
class _OpSpec:
    opcode: int
    inputs: list[int]
    outputs: list[int]
    options_type: int
    options: OptionsWriter | None


class GraphBuilder:
    """Accumulates tensors, constant buffers and operators of one subgraph, then serializes a model."""

    def __init__(self, description: str = "teflon.modelgen") -> None:
        self.description = description
        self._tensors: list[_TensorSpec] = []
        self._buffers: list[bytes] = [b""]  # buffer 0: the empty sentinel every model starts with
        self._opcodes: list[tuple[int, int]] = []  # (builtin code, version)
        self._ops: list[_OpSpec] = []

    def tensor(self, name: str, shape: Sequence[int], dtype: str, quant: QParams | None = None) -> int:
        """A non-constant tensor (graph input, output or activation)."""
        self._tensors.append(_TensorSpec(name, tuple(int(d) for d in shape), dtype, quant, 0))
        return len(self._tensors) - 1

    def constant(self, name: str, data: np.ndarray, quant: QParams | None = None) -> int:
        """A constant tensor; its bytes go into their own buffer."""
        dtype = str(data.dtype)
        if dtype not in _TENSOR_TYPE:
            raise ValueError(f"unsupported constant dtype {dtype}")
        self._buffers.append(np.ascontiguousarray(data, dtype=data.dtype.newbyteorder("<")).tobytes())
        self._tensors.append(_TensorSpec(name, tuple(data.shape), dtype, quant, len(self._buffers) - 1))
        return len(self._tensors) - 1

    def shape(self, tensor: int) -> tuple[int, ...]:
        return self._tensors[tensor].shape

    def quant(self, tensor: int) -> QParams | None:
        return self._tensors[tensor].quant

    def set_quant(self, tensor: int, quant: QParams) -> None:
        """Change a tensor's quantization (an activation's producer then writes that range; a constant keeps its
        integer values)."""
        self._tensors[tensor].quant = quant

    def dtype(self, tensor: int) -> str:
        return self._tensors[tensor].dtype

    def op(self, code: int, version: int, inputs: Sequence[int], outputs: Sequence[int],
           options_type: int = BuiltinOptions.NONE, options: OptionsWriter | None = None) -> int:
        key = (code, version)
        if key not in self._opcodes:
            self._opcodes.append(key)
        self._ops.append(_OpSpec(self._opcodes.index(key), list(inputs), list(outputs), options_type, options))
        return len(self._ops) - 1

    def build(self, inputs: Sequence[int], outputs: Sequence[int]) -> bytes:
        b = flatbuffers.Builder(4096)
        buffers = [_write_buffer(b, data) for data in self._buffers]
        tensors = [_write_tensor(b, t) for t in self._tensors]
        ops = [_write_operator(b, op) for op in self._ops]
        opcodes = [_write_opcode(b, code, version) for code, version in self._opcodes]

        sg_tensors = _offset_vector(b, tflite.SubGraphStartTensorsVector, tensors)
        sg_inputs = _int32_vector(b, tflite.SubGraphStartInputsVector, inputs)
        sg_outputs = _int32_vector(b, tflite.SubGraphStartOutputsVector, outputs)
        sg_ops = _offset_vector(b, tflite.SubGraphStartOperatorsVector, ops)
        sg_name = b.CreateString("main")
        tflite.SubGraphStart(b)
        tflite.SubGraphAddTensors(b, sg_tensors)
        tflite.SubGraphAddInputs(b, sg_inputs)
        tflite.SubGraphAddOutputs(b, sg_outputs)
        tflite.SubGraphAddOperators(b, sg_ops)
        tflite.SubGraphAddName(b, sg_name)
        subgraph = tflite.SubGraphEnd(b)

        m_opcodes = _offset_vector(b, tflite.ModelStartOperatorCodesVector, opcodes)
        m_subgraphs = _offset_vector(b, tflite.ModelStartSubgraphsVector, [subgraph])
        m_buffers = _offset_vector(b, tflite.ModelStartBuffersVector, buffers)
        m_description = b.CreateString(self.description)
        tflite.ModelStart(b)
        tflite.ModelAddVersion(b, 3)
        tflite.ModelAddOperatorCodes(b, m_opcodes)
        tflite.ModelAddSubgraphs(b, m_subgraphs)
        tflite.ModelAddDescription(b, m_description)
        tflite.ModelAddBuffers(b, m_buffers)
        b.Finish(tflite.ModelEnd(b), file_identifier=b"TFL3")
        return bytes(b.Output())


def _offset_vector(b: flatbuffers.Builder, start: Callable[[flatbuffers.Builder, int], object],
                   offsets: Sequence[int]) -> int:
    start(b, len(offsets))
    for off in reversed(offsets):
        b.PrependUOffsetTRelative(off)
    return b.EndVector()


def _int32_vector(b: flatbuffers.Builder, start: Callable[[flatbuffers.Builder, int], object],
                  values: Sequence[int]) -> int:
    start(b, len(values))
    for v in reversed(values):
        b.PrependInt32(int(v))
    return b.EndVector()


def _write_buffer(b: flatbuffers.Builder, data: bytes) -> int:
    if not data:
        tflite.BufferStart(b)
        return tflite.BufferEnd(b)
    # Constant data 16-byte aligned, as the converter writes it (kernels may read it in place).
    b.StartVector(1, len(data), 16)
    b.head = b.head - len(data)
    b.Bytes[b.head:b.head + len(data)] = data
    vec = b.EndVector()
    tflite.BufferStart(b)
    tflite.BufferAddData(b, vec)
    return tflite.BufferEnd(b)


def _write_tensor(b: flatbuffers.Builder, t: _TensorSpec) -> int:
    name = b.CreateString(t.name)
    shape = _int32_vector(b, tflite.TensorStartShapeVector, t.shape)
    quant = None
    if t.quant is not None:
        tflite.QuantizationParametersStartScaleVector(b, t.quant.scale.size)
        for s in reversed(t.quant.scale):
            b.PrependFloat32(float(s))
        scales = b.EndVector()
        tflite.QuantizationParametersStartZeroPointVector(b, t.quant.zero_point.size)
        for z in reversed(t.quant.zero_point):
            b.PrependInt64(int(z))
        zero_points = b.EndVector()
        tflite.QuantizationParametersStart(b)
        tflite.QuantizationParametersAddScale(b, scales)
        tflite.QuantizationParametersAddZeroPoint(b, zero_points)
        tflite.QuantizationParametersAddQuantizedDimension(b, t.quant.axis)
        quant = tflite.QuantizationParametersEnd(b)
    tflite.TensorStart(b)
    tflite.TensorAddShape(b, shape)
    tflite.TensorAddType(b, _TENSOR_TYPE[t.dtype])
    tflite.TensorAddBuffer(b, t.buffer)
    tflite.TensorAddName(b, name)
    if quant is not None:
        tflite.TensorAddQuantization(b, quant)
    return tflite.TensorEnd(b)


def _write_operator(b: flatbuffers.Builder, op: _OpSpec) -> int:
    inputs = _int32_vector(b, tflite.OperatorStartInputsVector, op.inputs)
    outputs = _int32_vector(b, tflite.OperatorStartOutputsVector, op.outputs)
    options = op.options(b) if op.options is not None else None
    tflite.OperatorStart(b)
    tflite.OperatorAddOpcodeIndex(b, op.opcode)
    tflite.OperatorAddInputs(b, inputs)
    tflite.OperatorAddOutputs(b, outputs)
    if options is not None:
        tflite.OperatorAddBuiltinOptionsType(b, op.options_type)
        tflite.OperatorAddBuiltinOptions(b, options)
    return tflite.OperatorEnd(b)


def _write_opcode(b: flatbuffers.Builder, code: int, version: int) -> int:
    tflite.OperatorCodeStart(b)
    tflite.OperatorCodeAddDeprecatedBuiltinCode(b, min(code, 127))
    tflite.OperatorCodeAddBuiltinCode(b, code)
    tflite.OperatorCodeAddVersion(b, version)
    return tflite.OperatorCodeEnd(b)


# --------------------------------------------------------------------------------------------------------------
# Model inspection helpers (no interpreter needed)
# --------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TensorInfo:
    index: int
    name: str
    shape: tuple[int, ...]
    dtype: str  # numpy dtype name; "" for a TensorType numpy has no name for here
    scale: float = 0.0  # per-tensor scale (the first one of a per-channel tensor); 0.0 when not quantized
    zero_point: int = 0


# Tensor types model readers name beyond the ones the builder writes.
_READ_DTYPE = {**_TYPE_DTYPE, TensorType.INT16: "int16", TensorType.INT64: "int64", TensorType.BOOL: "bool",
               TensorType.FLOAT16: "float16", TensorType.UINT32: "uint32"}


def _tensor_shape(t: tflite.Tensor) -> tuple[int, ...]:
    """A tensor's declared shape; () for a scalar (the flatbuffer then has no shape vector, and ShapeAsNumpy
    returns the integer 0 instead of an array)."""
    return tuple(int(t.Shape(i)) for i in range(t.ShapeLength()))


def _tensor_info(sg: tflite.SubGraph, index: int) -> TensorInfo:
    t = sg.Tensors(index)
    q = t.Quantization()
    scale = float(q.Scale(0)) if q is not None and q.ScaleLength() else 0.0
    zero_point = int(q.ZeroPoint(0)) if q is not None and q.ZeroPointLength() else 0
    return TensorInfo(index, t.Name().decode(), _tensor_shape(t), _READ_DTYPE.get(t.Type(), ""), scale, zero_point)


def tensor_infos(model: bytes) -> list[TensorInfo]:
    """Every tensor of the first subgraph, by tensor index."""
    sg = tflite.Model.GetRootAs(model, 0).Subgraphs(0)
    return [_tensor_info(sg, i) for i in range(sg.TensorsLength())]


def graph_inputs(model: bytes) -> list[TensorInfo]:
    """The first subgraph's input tensors as declared in the flatbuffer."""
    sg = tflite.Model.GetRootAs(model, 0).Subgraphs(0)
    infos = [_tensor_info(sg, sg.Inputs(i)) for i in range(sg.InputsLength())]
    for i, info in enumerate(infos):
        if not info.dtype:
            raise ValueError(f"input {i} has unsupported TensorType {sg.Tensors(info.index).Type()}")
    return infos


def graph_outputs(model: bytes) -> list[TensorInfo]:
    """The first subgraph's output tensors as declared in the flatbuffer."""
    sg = tflite.Model.GetRootAs(model, 0).Subgraphs(0)
    return [_tensor_info(sg, sg.Outputs(i)) for i in range(sg.OutputsLength())]


@dataclass(frozen=True)
class OperatorInfo:
    name: str  # builtin operator name, e.g. "CONV_2D"
    inputs: tuple[int, ...]  # tensor indices; -1 for an absent optional input
    outputs: tuple[int, ...]
    input_shapes: tuple[tuple[int, ...] | None, ...]  # None for an absent optional input
    output_shapes: tuple[tuple[int, ...], ...]


def operators(model: bytes) -> list[OperatorInfo]:
    """The first subgraph's operators in node order, with their tensors and shapes."""
    m = tflite.Model.GetRootAs(model, 0)
    names = {v: k for k, v in vars(BuiltinOperator).items() if not k.startswith("_")}
    sg = m.Subgraphs(0)

    def shape(t: int) -> tuple[int, ...]:
        return _tensor_shape(sg.Tensors(t))

    out = []
    for i in range(sg.OperatorsLength()):
        op = sg.Operators(i)
        oc = m.OperatorCodes(op.OpcodeIndex())
        code = max(oc.BuiltinCode(), oc.DeprecatedBuiltinCode())
        ins = tuple(int(t) for t in op.InputsAsNumpy())
        outs = tuple(int(t) for t in op.OutputsAsNumpy())
        out.append(OperatorInfo(names.get(code, f"BUILTIN_{code}"), ins, outs,
                                tuple(shape(t) if t >= 0 else None for t in ins), tuple(shape(t) for t in outs)))
    return out


def tensor_scales(model: bytes) -> dict[int, np.ndarray]:
    """Quantization scales of every quantized tensor of the first subgraph, by tensor index."""
    sg = tflite.Model.GetRootAs(model, 0).Subgraphs(0)
    scales = {}
    for i in range(sg.TensorsLength()):
        q = sg.Tensors(i).Quantization()
        if q is not None and q.ScaleLength():
            scales[i] = q.ScaleAsNumpy().astype(np.float64)
    return scales


def operator_names(model: bytes) -> list[str]:
    """Builtin operator names of the first subgraph, in node order."""
    return [op.name for op in operators(model)]


def random_inputs(model: bytes, seed: int = 0) -> list[np.ndarray]:
    """One array per graph input, uniform over the whole range of its integer type (floats: [-1, 1))."""
    rng = np.random.default_rng([seed, zlib.crc32(model)])
    arrays = []
    for info in graph_inputs(model):
        dt = np.dtype(info.dtype)
        if dt.kind in "iu":
            lim = np.iinfo(dt)
            arrays.append(rng.integers(lim.min, int(lim.max) + 1, size=info.shape, dtype=dt))
        else:
            arrays.append(rng.uniform(-1.0, 1.0, size=info.shape).astype(dt))
    return arrays


# --------------------------------------------------------------------------------------------------------------
# Convolutions
# --------------------------------------------------------------------------------------------------------------


def out_size(size: int, kernel: int, stride: int, padding: str) -> int:
    """TFLite's output extent for SAME/VALID padding (dilation 1)."""
    if padding == "same":
        return (size + stride - 1) // stride
    return (size - kernel) // stride + 1 if size >= kernel else 0


def _pad_before(size: int, kernel: int, stride: int, padding: str) -> int:
    if padding != "same":
        return 0
    total = max((out_size(size, kernel, stride, padding) - 1) * stride + kernel - size, 0)
    return total // 2


def _tap_fraction(size: int, kernel: int, stride: int, padding: str) -> float:
    """Average fraction of kernel taps that land inside the input (SAME padding reads zeros at the edges)."""
    n = out_size(size, kernel, stride, padding)
    start = np.arange(n) * stride - _pad_before(size, kernel, stride, padding)
    taps = np.clip(start + kernel, 0, size) - np.clip(start, 0, size)
    return float(taps.mean() / kernel) if n else 0.0


def _log_uniform(rng: np.random.Generator, lo: float, hi: float, size: int | None = None) -> np.ndarray:
    return np.exp(rng.uniform(math.log(lo), math.log(hi), size=size))


def case_name(parts: list[str], dtype: str, activation: str = "none", seed: int = 0) -> str:
    """`<parts>-<u8|i8>[-<activation>][-seed<n>]`: how the single-op cases name themselves (test ids)."""
    tail = [DTYPE_TOKEN[dtype]] + ([activation] if activation != "none" else []) + ([f"seed{seed}"] if seed else [])
    return "-".join([*parts, *tail])


def _fmt(v: float) -> str:
    return f"{v:.4g}"


@dataclass(frozen=True)
class ConvCase:
    """One CONV_2D or DEPTHWISE_CONV_2D (depth multiplier 1) with quantized uint8/int8 tensors.

    Quantization parameters left as None are drawn from the case's seeded generator: weights uniform over the
    full 8-bit range, random zero points, int32 bias about one accumulator standard deviation wide, and an output
    scale derived from the expected accumulator distribution so outputs spread over the 8-bit range without
    saturating. RELU/RELU6 outputs are quantized the way the TFLite converter does (zero point = qmin;
    RELU6 scale = 6/255). int8 weights are symmetric (zero point 0), as TFLite's int8 kernels require;
    `per_channel` gives int8 per-output-channel weight scales, within a factor 4 of each other unless
    `scale_spread` sets the ratio of the largest to the smallest (log-uniform between, both ends included;
    real post-training-quantized layers reach 10-30000).
    """

    op: Literal["conv2d", "dwconv"]
    in_h: int
    in_w: int
    in_c: int
    out_c: int | None = None  # conv2d only; None = in_c. Depthwise always has out_c == in_c.
    kernel: int = 3
    stride: int = 1
    padding: PaddingName = "same"
    activation: ActivationName = "none"
    dtype: DType = "uint8"
    per_channel: bool = False
    weight_zp: int | None = None
    input_zp: int | None = None
    output_zp: int | None = None
    input_scale: float | None = None
    weight_scale: float | None = None
    output_scale: float | None = None
    scale_spread: float | None = None
    seed: int = 0
    kernel_w: int | None = None  # kernel columns when not square (`kernel` is then the kernel rows)
    stride_w: int | None = None  # column stride when it differs (`stride` is then the row stride)
    spread_planes: bool = False  # scale_spread between 16-channel planes only (a plane's scales within 1.25x)
    scale_runs: int | None = None  # per-channel scales equal in runs of this many consecutive channels

    def __post_init__(self) -> None:
        if self.op not in ("conv2d", "dwconv"):
            raise ValueError(f"op must be conv2d or dwconv, not {self.op!r}")
        if self.dtype not in QRANGE:
            raise ValueError(f"dtype must be uint8 or int8, not {self.dtype!r}")
        if self.padding not in _PADDING:
            raise ValueError(f"padding must be same or valid, not {self.padding!r}")
        if self.activation not in _ACTIVATION:
            raise ValueError(f"activation must be none, relu or relu6, not {self.activation!r}")
        if self.per_channel and self.dtype != "int8":
            raise ValueError("per-channel weights are int8 only")
        if self.scale_spread is not None and (not self.per_channel or self.scale_spread < 1):
            raise ValueError("scale_spread (>= 1) needs per-channel weights")
        if self.spread_planes and self.scale_spread is None:
            raise ValueError("spread_planes needs scale_spread")
        if self.scale_runs is not None and (not self.per_channel or self.scale_runs < 1):
            raise ValueError("scale_runs (>= 1) needs per-channel weights")
        if self.dtype == "int8" and self.weight_zp not in (None, 0):
            raise ValueError("int8 weights are symmetric: TFLite's int8 kernels reject a weight zero point")
        if self.op == "dwconv" and self.out_c not in (None, self.in_c):
            raise ValueError("depthwise convolutions here have depth multiplier 1: out_c must equal in_c")
        qmin, qmax = QRANGE[self.dtype]
        for zp in (self.weight_zp, self.input_zp, self.output_zp):
            if zp is not None and not qmin <= zp <= qmax:
                raise ValueError(f"zero point {zp} outside the {self.dtype} range")
        if min(self.in_h, self.in_w, self.in_c, self.kernel, self.kw, self.stride, self.sx, self.channels_out) < 1:
            raise ValueError("sizes, kernel and stride must be positive")

    # -- geometry ----------------------------------------------------------------------------------------------
    @property
    def channels_out(self) -> int:
        return self.in_c if self.op == "dwconv" or self.out_c is None else self.out_c

    @property
    def out_h(self) -> int:
        return out_size(self.in_h, self.kernel, self.stride, self.padding)

    @property
    def kw(self) -> int:
        """Kernel columns."""
        return self.kernel if self.kernel_w is None else self.kernel_w

    @property
    def sx(self) -> int:
        """Column stride."""
        return self.stride if self.stride_w is None else self.stride_w

    @property
    def out_w(self) -> int:
        return out_size(self.in_w, self.kw, self.sx, self.padding)

    @property
    def valid(self) -> bool:
        """False when VALID padding leaves no output (kernel larger than the input)."""
        return self.out_h > 0 and self.out_w > 0

    @property
    def macs(self) -> int:
        per_output = self.kernel * self.kw * (1 if self.op == "dwconv" else self.in_c)
        return self.out_h * self.out_w * self.channels_out * per_output

    @property
    def input_shape(self) -> tuple[int, int, int, int]:
        return (1, self.in_h, self.in_w, self.in_c)

    @property
    def output_shape(self) -> tuple[int, int, int, int]:
        return (1, self.out_h, self.out_w, self.channels_out)

    @property
    def name(self) -> str:
        parts = [self.op, f"in{self.in_h}x{self.in_w}x{self.in_c}"]
        if self.op == "conv2d":
            parts.append(f"oc{self.channels_out}")
        kernel = f"k{self.kernel}" if self.kernel_w is None else f"k{self.kernel}x{self.kernel_w}"
        stride = f"s{self.stride}" if self.stride_w is None else f"s{self.stride}x{self.stride_w}"
        parts += [kernel, stride, self.padding, DTYPE_TOKEN[self.dtype] + (
            "pc" if self.per_channel else "")]
        if self.activation != "none":
            parts.append(self.activation)
        for token, value in (("wzp", self.weight_zp), ("izp", self.input_zp), ("ozp", self.output_zp)):
            if value is not None:
                parts.append(f"{token}{value}")
        if self.scale_spread is not None:
            parts.append(f"spread{'planes' if self.spread_planes else ''}{_fmt(self.scale_spread)}")
        if self.scale_runs is not None:
            parts.append(f"runs{self.scale_runs}")
        for token, scale in (("is", self.input_scale), ("ws", self.weight_scale), ("os", self.output_scale)):
            if scale is not None:
                parts.append(f"{token}{_fmt(scale)}")
        if self.seed:
            parts.append(f"seed{self.seed}")
        return "-".join(parts)

    def __str__(self) -> str:
        return self.name

    # -- model ------------------------------------------------------------------------------------------------
    def rng(self) -> np.random.Generator:
        return np.random.default_rng([self.seed, zlib.crc32(self.name.encode())])

    def build(self) -> bytes:
        """The .tflite flatbuffer of this single-op model."""
        if not self.valid:
            raise ValueError(f"{self.name}: kernel larger than the input with VALID padding")
        g = GraphBuilder(f"teflon.modelgen {self.name}")
        params = conv_params(self, self.rng())
        x = g.tensor("input", self.input_shape, self.dtype, params.input_quant)
        y = add_conv(g, self, x, params, "output")
        return g.build([x], [y])


@dataclass(eq=False)
class ConvParams:
    """The concrete numbers of one ConvCase: quantization, weights (TFLite layout) and int32 bias."""

    input_quant: QParams
    weight_quant: QParams
    output_quant: QParams
    weights: np.ndarray
    bias: np.ndarray

    @property
    def bias_quant(self) -> QParams:
        scale = self.input_quant.scale.astype(np.float64) * self.weight_quant.scale.astype(np.float64)
        return QParams.make(scale, 0, axis=0)


def conv_params(case: ConvCase, rng: np.random.Generator, input_quant: QParams | None = None) -> ConvParams:
    """Draw the case's weights, bias and quantization (explicit values in `case` win).

    `input_quant` fixes the input quantization (a convolution fed by another tensor of the graph).
    """
    qmin, qmax = QRANGE[case.dtype]
    oc, k = case.channels_out, case.kernel

    if input_quant is not None:
        in_zp, in_scale_given = int(input_quant.zero_point[0]), float(input_quant.scale[0])
    else:
        in_zp = case.input_zp if case.input_zp is not None else int(rng.integers(qmin, qmax + 1))
        in_scale_given = case.input_scale  # type: ignore[assignment]

    if case.dtype == "int8":
        w_zp = 0
    else:
        w_zp = case.weight_zp if case.weight_zp is not None else int(rng.integers(qmin, qmax + 1))
    if case.per_channel:
        base = case.weight_scale if case.weight_scale is not None else float(_log_uniform(rng, 0.002, 0.02))
        if case.scale_spread is None:
            w_scale = (base * rng.uniform(0.5, 2.0, size=oc)).astype(np.float32)
        elif case.spread_planes:  # scales clustered by 16-channel plane, as the channel groups of rk3576 need
            planes = -(-oc // 16)
            ratio = np.exp(rng.uniform(-0.5, 0.5, size=planes) * np.log(case.scale_spread))
            if planes > 1:
                ends = rng.choice(planes, 2, replace=False)
                ratio[ends] = case.scale_spread ** np.array([-0.5, 0.5])
            w_scale = (base * np.repeat(ratio, 16)[:oc] * rng.uniform(0.8, 1.0, size=oc)).astype(np.float32)
        else:
            ratio = np.exp(rng.uniform(-0.5, 0.5, size=oc) * np.log(case.scale_spread))
            if oc > 1:  # both ends of the spread present
                ends = rng.choice(oc, 2, replace=False)
                ratio[ends] = case.scale_spread ** np.array([-0.5, 0.5])
            w_scale = (base * ratio).astype(np.float32)
        if case.scale_runs is not None:  # the first scale of each run for the whole run
            w_scale = np.repeat(w_scale[::case.scale_runs], case.scale_runs)[:oc]
    else:
        w_scale = np.array([case.weight_scale if case.weight_scale is not None
                            else _log_uniform(rng, 0.002, 0.02)], dtype=np.float32)

    kw = case.kw
    w_shape = (1, k, kw, oc) if case.op == "dwconv" else (oc, k, kw, case.in_c)
    np_dtype = np.uint8 if case.dtype == "uint8" else np.int8
    weights = rng.integers(qmin, qmax + 1, size=w_shape, dtype=np_dtype)

    # Expected accumulator sum((x - x_zp) * (w - w_zp)) per output channel over uniformly random inputs.
    w_centered = weights.astype(np.int64) - w_zp
    per_channel_taps = w_centered.reshape(-1, oc) if case.op == "dwconv" else w_centered.reshape(oc, -1).T
    inside = _tap_fraction(case.in_h, k, case.stride, case.padding) * _tap_fraction(case.in_w, kw, case.sx,
                                                                                  case.padding)
    x_mean = (qmin + qmax) / 2 - in_zp
    x_var = ((qmax - qmin + 1) ** 2 - 1) / 12
    acc_mean = inside * x_mean * per_channel_taps.sum(axis=0)
    acc_std = np.sqrt(inside * x_var * (per_channel_taps.astype(np.float64) ** 2).sum(axis=0)) + 1.0

    bias_span = int(min(max(float(np.median(acc_std)), 64.0), float(1 << 24)))
    bias = rng.integers(-bias_span, bias_span + 1, size=oc).astype(np.int32)
    center = acc_mean + bias
    lo_acc = center - _SPREAD_SIGMAS * acc_std
    hi_acc = center + _SPREAD_SIGMAS * acc_std

    if in_scale_given is not None:
        in_scale = float(np.float32(in_scale_given))
    elif case.activation == "relu6" and case.output_scale is None:
        # Put the real outputs around [0, 6] so RELU6's clamp and the values below it are both exercised.
        top = float(np.max(w_scale * np.where(hi_acc > 0, hi_acc, _SPREAD_SIGMAS * acc_std)))
        in_scale = float(np.float32(_RELU6_TARGET / top))
    else:
        in_scale = float(np.float32(_log_uniform(rng, 0.004, 0.05)))

    if (case.output_scale is not None and case.weight_scale is None and not case.per_channel
            and case.activation == "none"):
        # A given output scale with a free weight scale: fit the weight scale so the outputs fill the range.
        span = max(float(np.max(hi_acc)), 0.0) - min(float(np.min(lo_acc)), 0.0)
        w_scale = np.array([case.output_scale * (qmax - qmin) / (in_scale * span)], dtype=np.float32)

    lo = float(np.min(in_scale * w_scale * lo_acc))
    hi = float(np.max(in_scale * w_scale * hi_acc))
    if case.activation == "relu6":
        out_scale, out_zp = 6.0 / 255.0, qmin
    elif case.activation == "relu":
        if hi <= 0:
            hi = float(np.max(in_scale * w_scale * _SPREAD_SIGMAS * acc_std))
        out_scale, out_zp = hi / 255.0, qmin
    else:
        lo, hi = min(lo, 0.0), max(hi, 0.0)  # the real zero must be representable, as the converter ensures
        out_scale = (hi - lo) / 255.0
        out_zp = int(np.clip(round(qmin - lo / out_scale), qmin, qmax))
    if case.output_scale is not None:
        out_scale = case.output_scale
    if case.output_zp is not None:
        out_zp = case.output_zp

    return ConvParams(
        input_quant=input_quant if input_quant is not None else QParams.make(in_scale, in_zp),
        weight_quant=QParams.make(w_scale, w_zp, axis=3 if case.op == "dwconv" else 0),
        output_quant=QParams.make(out_scale, out_zp),
        weights=weights,
        bias=bias,
    )


def add_conv(g: GraphBuilder, case: ConvCase, x: int, params: ConvParams, out_name: str) -> int:
    """Append the case's CONV_2D / DEPTHWISE_CONV_2D reading tensor `x`; returns the output tensor."""
    prefix = out_name + "/"
    w = g.constant(prefix + "weights", params.weights, params.weight_quant)
    b = g.constant(prefix + "bias", params.bias, params.bias_quant)
    y = g.tensor(out_name, case.output_shape, case.dtype, params.output_quant)
    padding, stride, act = _PADDING[case.padding], case.stride, _ACTIVATION[case.activation]
    int8 = case.dtype == "int8"
    if case.op == "conv2d":
        def options(fb: flatbuffers.Builder) -> int:
            tflite.Conv2DOptionsStart(fb)
            tflite.Conv2DOptionsAddPadding(fb, padding)
            tflite.Conv2DOptionsAddStrideW(fb, case.sx)
            tflite.Conv2DOptionsAddStrideH(fb, stride)
            tflite.Conv2DOptionsAddFusedActivationFunction(fb, act)
            tflite.Conv2DOptionsAddDilationWFactor(fb, 1)
            tflite.Conv2DOptionsAddDilationHFactor(fb, 1)
            return tflite.Conv2DOptionsEnd(fb)

        g.op(BuiltinOperator.CONV_2D, 3 if int8 else 1, [x, w, b], [y], BuiltinOptions.Conv2DOptions, options)
    else:
        def options(fb: flatbuffers.Builder) -> int:
            tflite.DepthwiseConv2DOptionsStart(fb)
            tflite.DepthwiseConv2DOptionsAddPadding(fb, padding)
            tflite.DepthwiseConv2DOptionsAddStrideW(fb, case.sx)
            tflite.DepthwiseConv2DOptionsAddStrideH(fb, stride)
            tflite.DepthwiseConv2DOptionsAddDepthMultiplier(fb, 1)
            tflite.DepthwiseConv2DOptionsAddFusedActivationFunction(fb, act)
            tflite.DepthwiseConv2DOptionsAddDilationWFactor(fb, 1)
            tflite.DepthwiseConv2DOptionsAddDilationHFactor(fb, 1)
            return tflite.DepthwiseConv2DOptionsEnd(fb)

        g.op(BuiltinOperator.DEPTHWISE_CONV_2D, 3 if int8 else 1, [x, w, b], [y],
             BuiltinOptions.DepthwiseConv2DOptions, options)
    return y


# --------------------------------------------------------------------------------------------------------------
# ADD (alone, or fed by convolutions like Mesa's add test)
# --------------------------------------------------------------------------------------------------------------


def _add_output_quant(a: QParams, b: QParams, activation: str, dtype: str) -> QParams:
    """The sum's range is the sum of the input ranges: scale = s_a + s_b, zero point where real 0 falls."""
    qmin, qmax = QRANGE[dtype]
    if activation == "relu6":
        return QParams.make(6.0 / 255.0, qmin)
    sa, sb = float(a.scale[0]), float(b.scale[0])
    lo = sa * (qmin - int(a.zero_point[0])) + sb * (qmin - int(b.zero_point[0]))
    scale = sa + sb
    if activation == "relu":
        hi = sa * (qmax - int(a.zero_point[0])) + sb * (qmax - int(b.zero_point[0]))
        return QParams.make(max(hi, scale) / 255.0, qmin)
    return QParams.make(scale, int(np.clip(round(qmin - lo / scale), qmin, qmax)))


@dataclass(frozen=True)
class AddCase:
    """ADD of two non-constant tensors of equal shape.

    producers: "inputs" = two graph inputs; "conv" = CONV_2D(input 0) + input 1; "conv2" = two CONV_2Ds of
    the same input added together (the shape of Mesa's add test model). The convolutions are kxk, stride 1,
    SAME, with out_c output channels.
    """

    in_h: int
    in_w: int
    in_c: int
    producers: Literal["inputs", "conv", "conv2"] = "inputs"
    out_c: int | None = None
    kernel: int = 1
    activation: ActivationName = "none"
    dtype: DType = "uint8"
    seed: int = 0
    op: Literal["add", "sub"] = "add"
    # the output's zero point when given (its scale then holds the whole sum, as without an activation): a fused
    # RELU then clamps inside the range instead of at its end, where the converter puts real 0
    output_zp: int | None = None

    def __post_init__(self) -> None:
        if self.op not in ("add", "sub"):
            raise ValueError(f"op must be add or sub, not {self.op!r}")
        if self.producers not in ("inputs", "conv", "conv2"):
            raise ValueError(f"producers must be inputs, conv or conv2, not {self.producers!r}")
        if self.producers == "inputs" and self.out_c not in (None, self.in_c):
            raise ValueError("a plain ADD keeps its channel count")
        if self.dtype not in QRANGE or self.activation not in _ACTIVATION:
            raise ValueError("bad dtype or activation")

    @property
    def channels_out(self) -> int:
        return self.in_c if self.out_c is None else self.out_c

    @property
    def name(self) -> str:
        head = {"inputs": self.op, "conv": f"conv-{self.op}", "conv2": f"conv2-{self.op}"}[self.producers]
        parts = [head, f"in{self.in_h}x{self.in_w}x{self.in_c}"]
        if self.producers != "inputs":
            parts += [f"oc{self.channels_out}", f"k{self.kernel}"]
        if self.output_zp is not None:
            parts.append(f"ozp{self.output_zp}")
        return case_name(parts, self.dtype, self.activation, self.seed)

    def __str__(self) -> str:
        return self.name

    @property
    def conv(self) -> ConvCase:
        # Under RELU6 the sum is quantized with scale 6/255: keep the addends on a comparable scale, otherwise
        # nearly every output saturates and one LSB of an addend is dozens of LSB of the sum.
        out_scale = 6.0 / 255.0 if self.activation == "relu6" else None
        return ConvCase("conv2d", self.in_h, self.in_w, self.in_c, self.channels_out, self.kernel, 1, "same",
                        dtype=self.dtype, output_scale=out_scale, seed=self.seed)

    @property
    def macs(self) -> int:
        return {"inputs": 0, "conv": 1, "conv2": 2}[self.producers] * self.conv.macs

    def _random_quant(self, rng: np.random.Generator) -> QParams:
        qmin, qmax = QRANGE[self.dtype]
        # Mesa's add test draws input scales from [1/128, 0.4386]; zero points anywhere in range.
        lo, hi = (3 / 255, 12 / 255) if self.activation == "relu6" else (1 / 128, 0.4386)
        return QParams.make(rng.uniform(lo, hi), int(rng.integers(qmin, qmax + 1)))

    def build(self) -> bytes:
        rng = np.random.default_rng([self.seed, zlib.crc32(self.name.encode())])
        g = GraphBuilder(f"teflon.modelgen {self.name}")
        shape = (1, self.in_h, self.in_w, self.channels_out)
        x_quant = self._random_quant(rng)
        x = g.tensor("input", (1, self.in_h, self.in_w, self.in_c), self.dtype, x_quant)
        inputs = [x]
        if self.producers == "inputs":
            a = x
            b = g.tensor("input_b", shape, self.dtype, self._random_quant(rng))
            inputs.append(b)
        else:
            conv = self.conv
            a = add_conv(g, conv, x, conv_params(conv, rng, x_quant), "conv_a")
            if self.producers == "conv":
                b = g.tensor("input_b", shape, self.dtype, self._random_quant(rng))
                inputs.append(b)
            else:
                b = add_conv(g, conv, x, conv_params(conv, rng, x_quant), "conv_b")
        out_quant = None
        if self.output_zp is not None:
            qa, qb = g.quant(a), g.quant(b)
            assert qa is not None and qb is not None
            out_quant = QParams.make(float(qa.scale[0]) + float(qb.scale[0]), self.output_zp)
        y = add_add(g, a, b, self.activation, self.op, out_quant=out_quant)
        return g.build(inputs, [y])


def add_add(g: GraphBuilder, a: int, b: int, activation: ActivationName = "none", op: Literal["add", "sub"] = "add",
            out_name: str = "output", out_quant: QParams | None = None) -> int:
    """Append an ADD (or SUB) of the equal-shaped tensors `a` and `b`, its output quantized as `out_quant` or to hold
    the sum's range (`_add_output_quant`); returns the output tensor."""
    qa, qb = g.quant(a), g.quant(b)
    assert qa is not None and qb is not None
    dtype = g.dtype(a)
    y = g.tensor(out_name, g.shape(a), dtype, out_quant or _add_output_quant(qa, qb, activation, dtype))
    act = _ACTIVATION[activation]
    version = 2 if dtype == "int8" else 1
    if op == "sub":
        def sub_options(fb: flatbuffers.Builder) -> int:
            tflite.SubOptionsStart(fb)
            tflite.SubOptionsAddFusedActivationFunction(fb, act)
            return tflite.SubOptionsEnd(fb)

        g.op(BuiltinOperator.SUB, version, [a, b], [y], BuiltinOptions.SubOptions, sub_options)
        return y

    def add_options(fb: flatbuffers.Builder) -> int:
        tflite.AddOptionsStart(fb)
        tflite.AddOptionsAddFusedActivationFunction(fb, act)
        return tflite.AddOptionsEnd(fb)

    g.op(BuiltinOperator.ADD, version, [a, b], [y], BuiltinOptions.AddOptions, add_options)
    return y


@dataclass(frozen=True)
class ConstOpCase:
    """MUL, ADD or SUB of a (1, H, W, C) map and a constant that is one value per channel (`bcast` "c", shape (C,))
    or one value (`bcast` "1", shape (1,)); "rsub" is SUB(constant, map). The output is quantized to hold the
    result's range. MAXIMUM / MINIMUM ("max", "min") keep the map's quantization for the constant and the output.
    `const` "bn": the constant is positive per channel, quantized as TFLite's converter quantizes an un-folded batch
    norm's multiplier or offset (DenseNet's): zero point at the type's minimum and its largest value at the maximum,
    so one channel is 255 steps from the zero point; the output is quantized about like the input (a normalised
    map: DenseNet's batch norms keep the scale within 0.95-1.1x), so a MUL's multiplier is about the constant's
    scale, 2^-8..2^-6, and TFLite's two roundings differ from one on up to 0.6 % of the inputs."""

    in_h: int
    in_w: int
    in_c: int
    op: Literal["mul", "add", "sub", "rsub", "max", "min"] = "mul"
    bcast: Literal["c", "1"] = "c"
    activation: ActivationName = "none"
    dtype: DType = "uint8"
    seed: int = 0
    const: Literal["random", "bn"] = "random"

    @property
    def name(self) -> str:
        return case_name([self.op, f"in{self.in_h}x{self.in_w}x{self.in_c}", f"bcast-{self.bcast}",
                          *(["bn"] if self.const == "bn" else [])], self.dtype, self.activation, self.seed)

    def __str__(self) -> str:
        return self.name

    @property
    def macs(self) -> int:
        return self.in_h * self.in_w * self.in_c if self.op == "mul" else 0

    def build(self) -> bytes:
        rng = np.random.default_rng([self.seed, zlib.crc32(self.name.encode())])
        qmin, qmax = QRANGE[self.dtype]
        g = GraphBuilder(f"teflon.modelgen {self.name}")
        xq = QParams.make(float(_log_uniform(rng, 0.004, 0.1)), int(rng.integers(qmin, qmax + 1)))
        n = self.in_c if self.bcast == "c" else 1
        cq = QParams.make(float(_log_uniform(rng, 0.002, 0.05)), int(rng.integers(qmin, qmax + 1)))
        cvals = rng.integers(qmin, qmax + 1, n).astype(self.dtype)
        if self.const == "bn":  # positive values, the largest at qmax, the zero point at qmin
            cq = QParams.make(float(_log_uniform(rng, 0.005, 0.015)), qmin)
            # a map centred near its zero point (a convolution's output): products of both signs
            xq = QParams.make(float(xq.scale[0]), qmin + 128 + int(rng.integers(-12, 13)))
            cvals = rng.integers(qmin + 50, qmin + 150, n)
            cvals[rng.integers(n)] = qmax
            cvals = cvals.astype(self.dtype)
        x = g.tensor("input", (1, self.in_h, self.in_w, self.in_c), self.dtype, xq)
        if self.op in ("max", "min"):
            c = g.constant("constant", cvals, xq)
            y = g.tensor("output", (1, self.in_h, self.in_w, self.in_c), self.dtype, xq)
            code = BuiltinOperator.MAXIMUM if self.op == "max" else BuiltinOperator.MINIMUM
            g.op(code, 2 if self.dtype == "int8" else 1, [x, c], [y])
            return g.build([x], [y])
        c = g.constant("constant", cvals, cq)
        # the result's real range over every input and constant value, for the output quantization
        xr = float(xq.scale[0]) * (np.array([qmin, qmax]) - int(xq.zero_point[0]))
        cr = float(cq.scale[0]) * (cvals.astype(np.int64) - int(cq.zero_point[0]))
        if self.op == "mul":
            ends = np.outer(xr, cr)
        else:
            ends = np.add.outer(-xr if self.op == "rsub" else xr, -cr if self.op == "sub" else cr)
        lo, hi = min(float(ends.min()), 0.0), max(float(ends.max()), 0.0)
        if self.const == "bn":  # a normalised output: about the input's scale and range (DenseNet's)
            lo, hi = (xr + float(xq.scale[0]) * np.array([-1, 1]) * rng.integers(0, 20)) * rng.uniform(0.95, 1.1)
            lo, hi = min(float(lo), 0.0), max(float(hi), 0.0)
        if self.activation != "none":
            # the clamped range, unless the activation leaves (almost) nothing of it: then the whole range
            clamped = (0.0, min(hi, 6.0) if self.activation == "relu6" else hi)
            if clamped[1] > 0.05 * (hi - lo):
                lo, hi = clamped
        scale = max(hi - lo, 1e-6) / (qmax - qmin)
        yq = QParams.make(scale, int(np.clip(round(qmin - lo / scale), qmin, qmax)))
        y = g.tensor("output", (1, self.in_h, self.in_w, self.in_c), self.dtype, yq)
        act = _ACTIVATION[self.activation]
        version = 2 if self.dtype == "int8" else 1
        code, opts_type, start, add_act, end = {
            "mul": (BuiltinOperator.MUL, BuiltinOptions.MulOptions, tflite.MulOptionsStart,
                    tflite.MulOptionsAddFusedActivationFunction, tflite.MulOptionsEnd),
            "add": (BuiltinOperator.ADD, BuiltinOptions.AddOptions, tflite.AddOptionsStart,
                    tflite.AddOptionsAddFusedActivationFunction, tflite.AddOptionsEnd),
        }.get(self.op, (BuiltinOperator.SUB, BuiltinOptions.SubOptions, tflite.SubOptionsStart,
                        tflite.SubOptionsAddFusedActivationFunction, tflite.SubOptionsEnd))

        def options(fb: flatbuffers.Builder) -> int:
            start(fb)
            add_act(fb, act)
            return end(fb)

        g.op(code, version, [c, x] if self.op == "rsub" else [x, c], [y], opts_type, options)
        return g.build([x], [y])


# --------------------------------------------------------------------------------------------------------------
# An op TFLite runs but the NPU backends never claim: AVERAGE_POOL_2D (CPU fallback tests)
# --------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PoolCase:
    """A pooling op: AVERAGE_POOL_2D ("avg"), MAX_POOL_2D ("max") or MEAN over (H, W) with keep_dims ("mean"; filter,
    stride and padding unused), optionally fed by a CONV_2D (kxk, stride 1, SAME) so a partition hands the
    convolution's output to the pool."""

    in_h: int
    in_w: int
    in_c: int
    filter: int = 2
    stride: int = 2
    padding: PaddingName = "valid"
    dtype: DType = "uint8"
    after_conv: bool = False
    conv_kernel: int = 3
    seed: int = 0
    op: Literal["avg", "max", "mean"] = "avg"
    requant: bool = False  # MEAN only: its own output scale and zero point (as real models' MEANs have)
    filter_w: int | None = None  # the window's width when it differs from its height (`filter`)
    requant_scale: float | None = None  # requant: output scale / input scale (None: drawn from 0.4-0.9)
    keep_dims: bool = True  # MEAN only: False writes a (1, C) output (Keras' GlobalAveragePooling2D)
    # MEAN only: the input's and (requant) the output's zero points instead of drawn ones (a head after a ReLU or
    # hard-swish: both at the type's lowest value, as the converter writes them)
    input_zp: int | None = None
    output_zp: int | None = None

    @property
    def kernel_w(self) -> int:
        return self.filter if self.filter_w is None else self.filter_w

    @property
    def name(self) -> str:
        head = {"avg": "avgpool", "max": "maxpool", "mean": "mean"}[self.op]
        parts = [f"conv-{head}" if self.after_conv else head, f"in{self.in_h}x{self.in_w}x{self.in_c}"]
        if self.after_conv:
            parts.append(f"ck{self.conv_kernel}")
        if self.op != "mean":
            kernel = f"k{self.filter}" if self.filter_w is None else f"k{self.filter}x{self.filter_w}"
            parts += [kernel, f"s{self.stride}", self.padding]
        if self.requant:
            parts.append("rq" if self.requant_scale is None else f"rq{self.requant_scale:g}")
        if not self.keep_dims:
            parts.append("nokeep")
        parts += [f"{t}{v}" for t, v in (("izp", self.input_zp), ("ozp", self.output_zp)) if v is not None]
        parts.append(DTYPE_TOKEN[self.dtype])
        if self.seed:
            parts.append(f"seed{self.seed}")
        return "-".join(parts)

    def __str__(self) -> str:
        return self.name

    @property
    def conv(self) -> ConvCase:
        return ConvCase("conv2d", self.in_h, self.in_w, self.in_c, self.in_c, self.conv_kernel, 1, "same",
                        dtype=self.dtype, seed=self.seed)

    @property
    def macs(self) -> int:
        return self.conv.macs if self.after_conv else 0

    def build(self) -> bytes:
        rng = np.random.default_rng([self.seed, zlib.crc32(self.name.encode())])
        qmin, qmax = QRANGE[self.dtype]
        g = GraphBuilder(f"teflon.modelgen {self.name}")
        x_quant = QParams.make(float(_log_uniform(rng, 0.004, 0.05)), int(rng.integers(qmin, qmax + 1)))
        if self.input_zp is not None:
            x_quant = QParams.make(float(x_quant.scale[0]), self.input_zp)
        x = g.tensor("input", (1, self.in_h, self.in_w, self.in_c), self.dtype, x_quant)
        src = x
        if self.after_conv:
            src = add_conv(g, self.conv, x, conv_params(self.conv, rng, x_quant), "conv")
        q = g.quant(src)
        if self.op == "mean":
            if self.requant:  # the mean's range is narrower than its input's: a smaller scale, another zero point
                ratio = float(rng.uniform(0.4, 0.9)) if self.requant_scale is None else self.requant_scale
                zp = int(rng.integers(qmin, qmax + 1))
                q = QParams.make(float(q.scale[0]) * ratio, zp if self.output_zp is None else self.output_zp)
            y = g.tensor("output", (1, 1, 1, self.in_c) if self.keep_dims else (1, self.in_c), self.dtype, q)
            add_mean_hw(g, src, y, g.constant("axes", np.array([1, 2], np.int32)), self.keep_dims)
            return g.build([x], [y])
        oh = out_size(self.in_h, self.filter, self.stride, self.padding)
        ow = out_size(self.in_w, self.kernel_w, self.stride, self.padding)
        if oh < 1 or ow < 1:
            raise ValueError(f"{self.name}: filter larger than the input with VALID padding")
        y = g.tensor("output", (1, oh, ow, self.in_c), self.dtype, q)  # pooling keeps its input's quantization
        add_pool(g, "max" if self.op == "max" else "avg", src, y, self.filter, self.kernel_w, self.stride, self.padding)
        return g.build([x], [y])


def add_pool(g: GraphBuilder, op: Literal["max", "avg"], x: int, y: int, kh: int, kw: int, stride: int,
             padding: PaddingName) -> None:
    """Append a MAX_POOL_2D or AVERAGE_POOL_2D (no fused activation) from `x` to the existing tensor `y`."""
    pad = _PADDING[padding]

    def options(fb: flatbuffers.Builder) -> int:
        tflite.Pool2DOptionsStart(fb)
        tflite.Pool2DOptionsAddPadding(fb, pad)
        tflite.Pool2DOptionsAddStrideW(fb, stride)
        tflite.Pool2DOptionsAddStrideH(fb, stride)
        tflite.Pool2DOptionsAddFilterWidth(fb, kw)
        tflite.Pool2DOptionsAddFilterHeight(fb, kh)
        tflite.Pool2DOptionsAddFusedActivationFunction(fb, ActivationFunctionType.NONE)
        return tflite.Pool2DOptionsEnd(fb)

    code = BuiltinOperator.MAX_POOL_2D if op == "max" else BuiltinOperator.AVERAGE_POOL_2D
    g.op(code, 2 if g.dtype(x) == "int8" else 1, [x], [y], BuiltinOptions.Pool2DOptions, options)


def add_mean_hw(g: GraphBuilder, x: int, y: int, axes: int, keep_dims: bool = True) -> None:
    """Append a MEAN of `x` over the constant `axes` tensor (keep_dims unless told) to the existing tensor `y`."""
    def options(fb: flatbuffers.Builder) -> int:
        tflite.ReducerOptionsStart(fb)
        tflite.ReducerOptionsAddKeepDims(fb, keep_dims)
        return tflite.ReducerOptionsEnd(fb)

    g.op(BuiltinOperator.MEAN, 2 if g.dtype(x) == "int8" else 1, [x, axes], [y], BuiltinOptions.ReducerOptions,
         options)


# --------------------------------------------------------------------------------------------------------------
# FULLY_CONNECTED, and single-tensor ops: RELU, LOGISTIC, PAD
# --------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FcCase:
    """FULLY_CONNECTED of a (1, N) input to (1, OUT) with per-tensor (or, int8 only, per-output-channel: `pc` in the
    name) weights and an int32 bias; output scale from the expected accumulator spread (as ConvCase does)."""

    in_n: int
    out_n: int
    activation: ActivationName = "none"
    dtype: DType = "uint8"
    seed: int = 0
    per_channel: bool = False
    scale_runs: int | None = None  # per-channel scales equal in runs of this many consecutive outputs
    rank4: bool = False  # the input as (1, 1, 1, N) (a flattened map, as audio and vision heads feed it)

    @property
    def name(self) -> str:
        name = case_name(["fc", f"in{self.in_n}", f"out{self.out_n}"], self.dtype, self.activation, self.seed)
        if self.per_channel:  # the dtype token gets the per-channel mark, as ConvCase's
            name = name.replace(f"-{DTYPE_TOKEN[self.dtype]}", f"-{DTYPE_TOKEN[self.dtype]}pc", 1)
        return name + (f"-runs{self.scale_runs}" if self.scale_runs is not None else "") + ("-r4" if self.rank4 else "")

    def __str__(self) -> str:
        return self.name

    @property
    def macs(self) -> int:
        return self.in_n * self.out_n

    def build(self) -> bytes:
        rng = np.random.default_rng([self.seed, zlib.crc32(self.name.encode())])
        # the conv generator already draws weights, bias and quantization for a 1x1 convolution of N channels
        conv = ConvCase("conv2d", 1, 1, self.in_n, self.out_n, 1, 1, "valid", self.activation, self.dtype,
                        seed=self.seed, per_channel=self.per_channel, scale_runs=self.scale_runs)
        p = conv_params(conv, rng)
        g = GraphBuilder(f"teflon.modelgen {self.name}")
        x = g.tensor("input", (1, 1, 1, self.in_n) if self.rank4 else (1, self.in_n), self.dtype, p.input_quant)
        w = g.constant("weights", p.weights.reshape(self.out_n, self.in_n), p.weight_quant)
        b = g.constant("bias", p.bias, p.bias_quant)
        y = g.tensor("output", (1, self.out_n), self.dtype, p.output_quant)
        act = _ACTIVATION[self.activation]

        def options(fb: flatbuffers.Builder) -> int:
            tflite.FullyConnectedOptionsStart(fb)
            tflite.FullyConnectedOptionsAddFusedActivationFunction(fb, act)
            return tflite.FullyConnectedOptionsEnd(fb)

        g.op(BuiltinOperator.FULLY_CONNECTED, 4 if self.dtype == "int8" else 1, [x, w, b], [y],
             BuiltinOptions.FullyConnectedOptions, options)
        return g.build([x], [y])


@dataclass(frozen=True)
class ElementwiseCase:
    """One RELU, LOGISTIC, PAD or RESIZE_NEAREST_NEIGHBOR (x`factor`, "resize") of an (1, H, W, C) tensor. LOGISTIC's
    output is quantized as TFLite requires (scale 1/256, zero point qmin); RELU keeps the input quantization unless
    `requant` draws another output scale; PAD keeps it and pads with `pads` = (top, bottom, left, right, front, back)
    in H, W, C (PADV2, "padv2": with the type's lowest value, as exports write the padding of a max pool); the
    resize keeps it too (`half_pixel`: TFLite's half_pixel_centers, as TF2 exports write it)."""

    op: Literal["relu", "logistic", "pad", "padv2", "resize"]
    in_h: int
    in_w: int
    in_c: int
    dtype: DType = "uint8"
    pads: tuple[int, int, int, int, int, int] = (1, 1, 1, 1, 0, 0)
    requant: bool = False
    seed: int = 0
    half_pixel: bool = False
    factor: int = 2  # resize: the scale in H and W

    @property
    def name(self) -> str:
        parts = [self.op, f"in{self.in_h}x{self.in_w}x{self.in_c}"]
        if self.op in ("pad", "padv2"):
            parts.append("p" + "".join(str(p) for p in self.pads))
        if self.op == "resize":
            parts.append(f"x{self.factor}-hp" if self.half_pixel else f"x{self.factor}")
        if self.requant:
            parts.append("rq")
        return case_name(parts, self.dtype, "none", self.seed)

    def __str__(self) -> str:
        return self.name

    @property
    def macs(self) -> int:
        return 0

    @property
    def output_shape(self) -> tuple[int, int, int, int]:
        if self.op == "resize":
            return (1, self.factor * self.in_h, self.factor * self.in_w, self.in_c)
        if self.op != "pad":
            return (1, self.in_h, self.in_w, self.in_c)
        t, b, left, r, f, k = self.pads
        return (1, self.in_h + t + b, self.in_w + left + r, self.in_c + f + k)

    def build(self) -> bytes:
        rng = np.random.default_rng([self.seed, zlib.crc32(self.name.encode())])
        qmin, qmax = QRANGE[self.dtype]
        xq = QParams.make(float(_log_uniform(rng, 0.01, 0.1)), int(rng.integers(qmin + 20, qmax - 20)))
        g = GraphBuilder(f"teflon.modelgen {self.name}")
        x = g.tensor("input", (1, self.in_h, self.in_w, self.in_c), self.dtype, xq)
        if self.op == "logistic":
            y = g.tensor("output", self.output_shape, self.dtype, QParams.make(1 / 256, qmin))
            g.op(BuiltinOperator.LOGISTIC, 2 if self.dtype == "int8" else 1, [x], [y])
        elif self.op == "relu":
            yq = xq
            if self.requant:
                yq = QParams.make(float(xq.scale[0]) * float(rng.uniform(0.5, 2.0)), int(rng.integers(qmin, qmin + 40)))
            y = g.tensor("output", self.output_shape, self.dtype, yq)
            g.op(BuiltinOperator.RELU, 2 if self.dtype == "int8" else 1, [x], [y])
        elif self.op == "resize":
            y = g.tensor("output", self.output_shape, self.dtype, xq)
            size = g.constant("size", np.array(self.output_shape[1:3], np.int32))
            half_pixel = self.half_pixel

            def options(fb: flatbuffers.Builder) -> int:
                tflite.ResizeNearestNeighborOptionsStart(fb)
                tflite.ResizeNearestNeighborOptionsAddAlignCorners(fb, False)
                tflite.ResizeNearestNeighborOptionsAddHalfPixelCenters(fb, half_pixel)
                return tflite.ResizeNearestNeighborOptionsEnd(fb)

            g.op(BuiltinOperator.RESIZE_NEAREST_NEIGHBOR, 3 if half_pixel else (2 if self.dtype == "int8" else 1),
                 [x, size], [y], BuiltinOptions.ResizeNearestNeighborOptions, options)
        else:
            y = add_pad(g, x, self.pads, low=self.op == "padv2")
        return g.build([x], [y])


def add_pad(g: GraphBuilder, x: int, pads: Sequence[int], out_name: str = "output", low: bool = False) -> int:
    """Append a PAD of the (1, H, W, C) tensor `x` by `pads` = (top, bottom, left, right, front, back) in H, W, C,
    keeping its quantization (TFLite pads with the zero point; `low`: a PADV2 with the type's lowest value instead);
    returns the output tensor."""
    _, h, w, c = g.shape(x)
    t, b, left, r, f, k = (int(p) for p in pads)
    prefix = "" if out_name == "output" else out_name + "/"  # a single-op model keeps its constant's name
    paddings = g.constant(prefix + "paddings", np.array([[0, 0], [t, b], [left, r], [f, k]], np.int32))
    y = g.tensor(out_name, (1, h + t + b, w + left + r, c + f + k), g.dtype(x), g.quant(x))
    version = 2 if g.dtype(x) == "int8" else 1
    if low:
        lowest = np.array(QRANGE[g.dtype(x)][0], g.dtype(x))
        value = g.constant(prefix + "pad_value", lowest, g.quant(x))
        g.op(BuiltinOperator.PADV2, version, [x, paddings, value], [y], BuiltinOptions.PadV2Options, _padv2_options)
        return y
    g.op(BuiltinOperator.PAD, version, [x, paddings], [y], BuiltinOptions.PadOptions, _pad_options)
    return y


def _padv2_options(fb: flatbuffers.Builder) -> int:
    tflite.PadV2OptionsStart(fb)
    return tflite.PadV2OptionsEnd(fb)


@dataclass(frozen=True)
class PadConvCase:
    """A PAD of the (1, H, W, C) input by `pads` = (top, bottom, left, right), then a VALID CONV_2D / DEPTHWISE_CONV_2D
    of the padded map (PyTorch- and Keras-exported models write explicit padding this way)."""

    op: Literal["conv2d", "dwconv"]
    in_h: int
    in_w: int
    in_c: int
    out_c: int | None = None
    kernel: int = 3
    stride: int = 2
    pads: tuple[int, int, int, int] = (0, 1, 0, 1)
    dtype: DType = "uint8"
    seed: int = 0

    @property
    def conv(self) -> ConvCase:
        t, b, left, r = self.pads
        return ConvCase(self.op, self.in_h + t + b, self.in_w + left + r, self.in_c, self.out_c, self.kernel,
                        self.stride, "valid", dtype=self.dtype, seed=self.seed)

    @property
    def name(self) -> str:
        pads = "p" + "".join(str(p) for p in self.pads)
        return self.conv.name.replace(f"in{self.conv.in_h}x{self.conv.in_w}x", f"in{self.in_h}x{self.in_w}x", 1) \
            .replace("-valid-", f"-{pads}-", 1).replace(self.op, f"pad-{self.op}", 1)

    def __str__(self) -> str:
        return self.name

    @property
    def macs(self) -> int:
        return self.conv.macs

    def build(self) -> bytes:
        rng = np.random.default_rng([self.seed, zlib.crc32(self.name.encode())])
        conv = self.conv
        params = conv_params(conv, rng)
        g = GraphBuilder(f"teflon.modelgen {self.name}")
        x = g.tensor("input", (1, self.in_h, self.in_w, self.in_c), self.dtype, params.input_quant)
        padded = add_pad(g, x, (*self.pads, 0, 0), "padded")
        y = add_conv(g, conv, padded, params, "output")
        return g.build([x], [y])


def _pad_options(fb: flatbuffers.Builder) -> int:
    tflite.PadOptionsStart(fb)
    return tflite.PadOptionsEnd(fb)


UnaryName = Literal["logistic", "tanh", "relu", "relu6", "relun1", "leakyrelu", "hardswish", "silu", "quantize",
                    "square"]
_UNARY_CODES = {
    "logistic": BuiltinOperator.LOGISTIC, "tanh": BuiltinOperator.TANH, "relu": BuiltinOperator.RELU,
    "relu6": BuiltinOperator.RELU6, "relun1": BuiltinOperator.RELU_N1_TO_1, "leakyrelu": BuiltinOperator.LEAKY_RELU,
    "hardswish": BuiltinOperator.HARD_SWISH, "quantize": BuiltinOperator.QUANTIZE,
}


@dataclass(frozen=True)
class UnaryCase:
    """One per-element unary op of an (1, H, W, C) tensor, with the quantization a converter writes: LOGISTIC
    (1/256, qmin), TANH (1/128, mid-range), the rest drawn from the seed; `silu` is LOGISTIC followed by MUL with
    the LOGISTIC's own input (TFLite's x * sigmoid(x)); `square` is MUL(x, x) (YOLOv5's `wh ** 2`) with an output
    range that holds the input's largest square. Each seed draws another input scale and zero point."""

    op: UnaryName
    in_h: int
    in_w: int
    in_c: int
    dtype: DType = "uint8"
    seed: int = 0
    rank: int = 4  # 2: a (1, C) tensor, 3: (1, W, C) (in_h, and for rank 2 in_w, must be 1)

    @property
    def name(self) -> str:
        name = case_name([self.op, f"in{self.in_h}x{self.in_w}x{self.in_c}"], self.dtype, "none", self.seed)
        return name if self.rank == 4 else f"{name}-r{self.rank}"

    def __str__(self) -> str:
        return self.name

    @property
    def macs(self) -> int:
        return 0

    @property
    def output_shape(self) -> tuple[int, ...]:
        full = (1, self.in_h, self.in_w, self.in_c)
        if self.rank < 4:
            assert all(d == 1 for d in full[1:5 - self.rank]), f"rank {self.rank} of {full}"
            return (1, *full[5 - self.rank:])
        return full

    @property
    def alpha(self) -> float:
        """LEAKY_RELU's slope (drawn from the seed)."""
        rng = np.random.default_rng([self.seed, zlib.crc32(self.name.encode()), 1])
        return float(np.float32(rng.uniform(0.01, 0.3)))

    def build(self) -> bytes:
        rng = np.random.default_rng([self.seed, zlib.crc32(self.name.encode())])
        qmin, qmax = QRANGE[self.dtype]
        mid = (qmin + qmax + 1) // 2
        in_scale = float(_log_uniform(rng, 0.01, 0.1))
        xq = QParams.make(in_scale, int(rng.integers(qmin + 20, qmax - 20)))
        g = GraphBuilder(f"teflon.modelgen {self.name}")
        shape = self.output_shape
        x = g.tensor("input", shape, self.dtype, xq)
        version = 2 if self.dtype == "int8" else 1
        if self.op in ("logistic", "silu"):
            sig = g.tensor("sigmoid" if self.op == "silu" else "output", shape, self.dtype, QParams.make(1 / 256, qmin))
            g.op(BuiltinOperator.LOGISTIC, version, [x], [sig])
            if self.op == "logistic":
                return g.build([x], [sig])
            yq = QParams.make(in_scale * float(rng.uniform(0.4, 0.9)), int(rng.integers(qmin + 10, qmin + 60)))
            y = g.tensor("output", shape, self.dtype, yq)
            operands = [x, sig] if rng.integers(2) else [sig, x]
            g.op(BuiltinOperator.MUL, version, operands, [y], BuiltinOptions.MulOptions, _mul_none_options)
            return g.build([x], [y])
        if self.op == "square":
            span = max(int(xq.zero_point[0]) - qmin, qmax - int(xq.zero_point[0])) * in_scale
            yq = QParams.make(span * span / 255 * float(rng.uniform(0.9, 1.1)), qmin)
            y = g.tensor("output", shape, self.dtype, yq)
            g.op(BuiltinOperator.MUL, version, [x, x], [y], BuiltinOptions.MulOptions, _mul_none_options)
            return g.build([x], [y])
        if self.op == "tanh":
            yq = QParams.make(1 / 128, mid)
        elif self.op == "relu6":
            yq = QParams.make(6 / 255 * float(rng.uniform(0.8, 1.2)), int(rng.integers(qmin, qmin + 10)))
        elif self.op == "relun1":
            yq = QParams.make(2 / 255 * float(rng.uniform(0.8, 1.2)), mid + int(rng.integers(-10, 10)))
        elif self.op == "hardswish":
            yq = QParams.make(in_scale * float(rng.uniform(0.5, 1.5)), int(rng.integers(qmin + 10, qmin + 60)))
        elif self.op == "quantize":  # requantization within the type
            yq = QParams.make(in_scale * float(rng.uniform(0.5, 2.0)), int(rng.integers(qmin, qmax + 1)))
        else:  # relu, leakyrelu
            yq = QParams.make(in_scale * float(rng.uniform(0.5, 2.0)), int(rng.integers(qmin, mid)))
        y = g.tensor("output", shape, self.dtype, yq)
        if self.op == "leakyrelu":
            alpha = self.alpha

            def options(fb: flatbuffers.Builder) -> int:
                tflite.LeakyReluOptionsStart(fb)
                tflite.LeakyReluOptionsAddAlpha(fb, alpha)
                return tflite.LeakyReluOptionsEnd(fb)

            g.op(BuiltinOperator.LEAKY_RELU, version, [x], [y], BuiltinOptions.LeakyReluOptions, options)
        else:
            g.op(_UNARY_CODES[self.op], 1 if self.op in ("relun1", "hardswish") else 2 if self.op == "quantize" else version,
                 [x], [y])
        return g.build([x], [y])


def _mul_none_options(fb: flatbuffers.Builder) -> int:
    tflite.MulOptionsStart(fb)
    tflite.MulOptionsAddFusedActivationFunction(fb, ActivationFunctionType.NONE)
    return tflite.MulOptionsEnd(fb)
