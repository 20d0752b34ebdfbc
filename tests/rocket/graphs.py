"""ir.Graphs of the single-op test models, for tests that compile without the delegate; the TFLite geometry of a
convolution (for split tests) and a task's register values by name (for vendor-word comparisons)."""

from __future__ import annotations

import numpy as np

from teflon.hw.regmap import RegMap
from teflon.ir import Graph, Operation, Quant, Tensor
from teflon.modelgen import ConvCase, UnaryCase, conv_params
from teflon.rocket.geometry import Geometry


def geometry(h: int, w: int, c: int, oc: int, k: int, s: int, padding: str, depthwise: bool = False) -> Geometry:
    """TFLite SAME/VALID geometry (SAME: top/left get the smaller half of the padding)."""
    if padding == "valid":
        oh, ow, pads = (h - k) // s + 1, (w - k) // s + 1, (0, 0, 0, 0)
    else:
        oh, ow = -(-h // s), -(-w // s)
        th, tw = max((oh - 1) * s + k - h, 0), max((ow - 1) * s + k - w, 0)
        pads = (th // 2, th - th // 2, tw // 2, tw - tw // 2)
    return Geometry(h, w, c, oh, ow, c if depthwise else oc, k, k, s, *pads, depthwise)


def register_values(rm: RegMap, words: list[int], check: bool = True) -> dict[str, int]:
    """register name -> raw value of a task's register writes (first write wins: CNA_UNDOC_1038 is written twice
    with one value); special words and the PC block left out. check=False names each word by its address only,
    without validating the value against teflon's table (a vendor DPU-only program sets bits, e.g. bit 0 of DPU
    0x400C, that teflon's table does not accept)."""
    by_address = {} if check else {(rm.unit(r.unit).write_target, r.offset): r.full_name for r in rm.registers}
    out: dict[str, int] = {}
    for w in words:
        name = rm.decode(w)[1] if check else by_address.get((w >> 48, w & 0xFFFF), "")
        if name and name not in ("SYNC", "OP_ENABLE", "NOP") and not name.startswith("PC_"):
            out.setdefault(name, (w >> 16) & 0xFFFFFFFF)
    return out


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
                               "dilation_h": 1, "dilation_w": 1, "activation": case.activation.upper()}
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


def conv_add_graph(case: ConvCase, operand_scale: float = 0.05, operand_zp: int = 3, out_scale: float = 0.08,
                   out_zp: int = -5) -> Graph:
    """conv_graph(case) followed by ADD(conv output, tensor 4), output tensor 5 (tensor 4 a graph input of the
    output's shape); zero points as stored int8 values, raised by 128 for uint8."""
    g = conv_graph(case)
    off = 128 if case.dtype == "uint8" else 0

    def q(scale: float, zp: int) -> Quant:
        return Quant(np.array([scale], np.float32), np.array([zp + off], np.int32))

    g.tensors[4] = Tensor(4, case.dtype, case.output_shape, q(operand_scale, operand_zp))
    g.tensors[5] = Tensor(5, case.dtype, case.output_shape, q(out_scale, out_zp))
    g.operations.append(Operation(1, "ADD", [3, 4], [5], {"activation": "NONE"}))
    return g
