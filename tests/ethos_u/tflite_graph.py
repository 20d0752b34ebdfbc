"""A .tflite model (first subgraph) as the teflon IR graph the delegate would hand the compiler: tensors with their
quantization and constant data, operations with their options named as teflon.ir.decode_options names them.
For tests that call the Ethos-U compiler directly, without the C delegate."""

from __future__ import annotations

import numpy as np
import tflite
from tflite.BuiltinOperator import BuiltinOperator

from teflon.ir import ACTIVATION, PADDING, Graph, Operation, Quant, Tensor, op_name

_DTYPES = {0: "float32", 2: "int32", 3: "uint8", 4: "int64", 7: "int16", 9: "int8"}


def _options(kind: str, op: tflite.Operator) -> dict[str, object]:
    table = op.BuiltinOptions()
    if table is None:
        return {}
    cls = {"CONV_2D": tflite.Conv2DOptions, "DEPTHWISE_CONV_2D": tflite.DepthwiseConv2DOptions,
           "ADD": tflite.AddOptions, "SUB": tflite.SubOptions, "MUL": tflite.MulOptions,
           "FULLY_CONNECTED": tflite.FullyConnectedOptions, "AVERAGE_POOL_2D": tflite.Pool2DOptions,
           "MAX_POOL_2D": tflite.Pool2DOptions, "CONCATENATION": tflite.ConcatenationOptions,
           "LEAKY_RELU": tflite.LeakyReluOptions, "RESIZE_NEAREST_NEIGHBOR": tflite.ResizeNearestNeighborOptions,
           "STRIDED_SLICE": tflite.StridedSliceOptions, "SOFTMAX": tflite.SoftmaxOptions}.get(kind)
    if cls is None:
        return {}
    o = cls()
    o.Init(table.Bytes, table.Pos)
    out: dict[str, object] = {}
    if hasattr(o, "Padding"):
        out["padding"] = PADDING[{0: 1, 1: 2}[o.Padding()]]  # schema SAME=0, VALID=1
    for name in ("StrideW", "StrideH", "DilationWFactor", "DilationHFactor", "DepthMultiplier", "FilterWidth",
                 "FilterHeight", "Axis"):
        if hasattr(o, name):
            key = {"StrideW": "stride_w", "StrideH": "stride_h", "DilationWFactor": "dilation_w",
                   "DilationHFactor": "dilation_h", "DepthMultiplier": "depth_multiplier",
                   "FilterWidth": "filter_w", "FilterHeight": "filter_h", "Axis": "axis"}[name]
            out[key] = int(getattr(o, name)())
    for name, key in (("AlignCorners", "align_corners"), ("HalfPixelCenters", "half_pixel_centers"),
                      ("BeginMask", "begin_mask"), ("EndMask", "end_mask"), ("EllipsisMask", "ellipsis_mask"),
                      ("NewAxisMask", "new_axis_mask"), ("ShrinkAxisMask", "shrink_axis_mask")):
        if hasattr(o, name):
            out[key] = int(getattr(o, name)())
    if hasattr(o, "Alpha"):
        out["alpha"] = float(o.Alpha())
    if hasattr(o, "Beta"):
        out["beta"] = float(o.Beta())
    if hasattr(o, "FusedActivationFunction"):
        out["activation"] = ACTIVATION.get(int(o.FusedActivationFunction()), "UNKNOWN")
    return out


def load(model: bytes) -> Graph:
    m = tflite.Model.GetRootAs(model, 0)
    sg = m.Subgraphs(0)
    tensors: dict[int, Tensor] = {}
    for i in range(sg.TensorsLength()):
        t = sg.Tensors(i)
        dtype = _DTYPES.get(t.Type(), f"type{t.Type()}")
        shape = tuple(int(t.Shape(k)) for k in range(t.ShapeLength()))
        q = t.Quantization()
        quant = None
        if q is not None and q.ScaleLength():
            quant = Quant(q.ScaleAsNumpy().astype(np.float32), q.ZeroPointAsNumpy().astype(np.int32),
                          int(q.QuantizedDimension()))
        buf = m.Buffers(t.Buffer())
        data = None
        if buf is not None and buf.DataLength():
            data = np.frombuffer(buf.DataAsNumpy().tobytes(), np.dtype(dtype).newbyteorder("<")).astype(dtype)
            data = data.reshape(shape)
        tensors[i] = Tensor(index=i, dtype=dtype, shape=shape, quant=quant, data=data, name=t.Name().decode())
    names = {v: k for k, v in vars(BuiltinOperator).items() if not k.startswith("_")}
    ops = []
    for i in range(sg.OperatorsLength()):
        op = sg.Operators(i)
        oc = m.OperatorCodes(op.OpcodeIndex())
        code = max(oc.BuiltinCode(), oc.DeprecatedBuiltinCode())
        kind = op_name(code) if code in names else f"BUILTIN_{code}"
        ops.append(Operation(index=i, kind=kind, inputs=[int(x) for x in op.InputsAsNumpy()],
                             outputs=[int(x) for x in op.OutputsAsNumpy()], options=_options(kind, op),
                             builtin_code=code))
    return Graph(tensors=tensors, operations=ops)


def io(model: bytes) -> tuple[list[int], list[int]]:
    sg = tflite.Model.GetRootAs(model, 0).Subgraphs(0)
    return [int(x) for x in sg.InputsAsNumpy()], [int(x) for x in sg.OutputsAsNumpy()]
