"""ir.Graphs of the single-op test models, for tests that compile without the delegate."""

from __future__ import annotations

import numpy as np

from teflon.ir import Graph, Operation, Quant, Tensor
from teflon.modelgen import ConvCase, UnaryCase, conv_params


def conv_graph(case: ConvCase) -> Graph:
    """The ir.Graph of ConvCase(...).build(): the same numbers (conv_params with the case's generator)."""
    p = conv_params(case, case.rng())
    dw = case.op == "dwconv"

    def q(qp) -> Quant:
        return Quant(np.asarray(qp.scale, np.float32), np.asarray(qp.zero_point, np.int32), int(qp.axis))

    tensors = {
        0: Tensor(0, case.dtype, case.input_shape, q(p.input_quant)),
        1: Tensor(1, case.dtype, p.weights.shape, q(p.weight_quant), p.weights),
        2: Tensor(2, "int32", p.bias.shape, q(p.bias_quant), p.bias),
        3: Tensor(3, case.dtype, case.output_shape, q(p.output_quant)),
    }
    opts: dict[str, object] = {"padding": case.padding.upper(), "stride_h": case.stride, "stride_w": case.stride,
                               "dilation_h": 1, "dilation_w": 1, "activation": "NONE"}
    if dw:
        opts["depth_multiplier"] = 1
    return Graph(tensors, [Operation(0, "DEPTHWISE_CONV_2D" if dw else "CONV_2D", [0, 1, 2], [3], opts)])


def unary_graph(case: UnaryCase) -> Graph:
    """The ir.Graph of UnaryCase(...).build(): tensors and quantization read back from the model."""
    from teflon.modelgen import operators
    from teflon.runtime import make_interpreter

    model = case.build()
    interp = make_interpreter(model, reference=True)
    tensors = {}
    for d in interp.get_tensor_details():
        scale, zp = d["quantization"]
        q = Quant(np.asarray([scale], np.float32), np.asarray([zp], np.int32))
        tensors[d["index"]] = Tensor(d["index"], np.dtype(d["dtype"]).name, tuple(int(v) for v in d["shape"]), q,
                                     name=d["name"])
    ops = []
    for i, op in enumerate(operators(model)):
        opts: dict[str, object] = {"activation": "NONE"} if op.name == "MUL" else {}
        if op.name == "LEAKY_RELU":
            opts["alpha"] = case.alpha
        ops.append(Operation(i, op.name, list(op.inputs), list(op.outputs), opts))
    return Graph(tensors, ops)
