"""MUL / ADD / SUB with a constant on the rocket NPUs (python/teflon/rocket/const_elementwise.py): the TFLite
arithmetic the requantization plans are fitted to must be the runtime's own, value for value; the op sweeps
(tests/rocket/test_ops.py `test_const`) check the programs on the simulators."""

from __future__ import annotations

import numpy as np
import pytest

from teflon.modelgen import ConstOpCase, random_inputs
from teflon.reference import run_cpu
from teflon.rocket.const_elementwise import tflite_add, tflite_mul
from teflon.runtime import make_interpreter

CASES = [ConstOpCase(7, 7, 16, op, bcast, act, dtype, seed)
         for op in ("mul", "add", "sub", "rsub") for bcast in ("c", "1") for act in ("none", "relu6")
         for dtype in ("uint8", "int8") for seed in (0, 1)]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_reference_arithmetic_is_the_runtime(case: ConstOpCase) -> None:
    model = case.build()
    interp = make_interpreter(model)
    tensors = {d["name"]: d for d in interp.get_tensor_details()}
    x, c, y = (tuple(tensors[n]["quantization"]) for n in ("input", "constant", "output"))
    values = np.broadcast_to(interp.get_tensor(tensors["constant"]["index"]).astype(np.int64).reshape(-1),
                             (case.in_c,))
    qmin = 0 if case.dtype == "uint8" else -128
    off = 128 if case.dtype == "uint8" else 0
    lo = max(qmin, int(y[1])) - off if case.activation != "none" else -128
    hi = min(qmin + 255, int(y[1]) + round(6.0 / float(np.float32(y[0])))) - off if case.activation == "relu6" else 127
    if case.op == "mul":
        table = tflite_mul(case.dtype, values, x, c, y, (lo, hi))
    else:
        signs = {"add": (1, 1), "sub": (1, -1), "rsub": (-1, 1)}[case.op]
        table = tflite_add(case.dtype, values, x, c, y, (lo, hi), *signs)
    for seed in range(3):
        xin = random_inputs(model, seed=seed)[0].astype(np.int64).reshape(-1, case.in_c)
        want = run_cpu(model, [xin.reshape(1, case.in_h, case.in_w, case.in_c).astype(case.dtype)])[0]
        got = table[np.arange(case.in_c)[None, :], xin - qmin] + off
        assert np.array_equal(got, want.astype(np.int64).reshape(-1, case.in_c)), case.name


@pytest.mark.parametrize("dtype", ["uint8", "int8"])
def test_batch_norm_weight_255(dtype: str) -> None:
    """A batch norm's constant (zero point at the minimum, one value at the maximum) gives one weight of 255: its
    bias is fitted to a multiple of WIDE_GAIN, and rk3576 runs it as 85 with a gain of 3 that gives back the same
    u = 255·xs + b for every input (the coefficient stage's exact arithmetic)."""
    from teflon.ir import Graph, Operation, Quant, Tensor
    from teflon.rocket.const_elementwise import PAIR_MAX, WIDE_GAIN, lower_const_elementwise
    from teflon.rocket.rk3576.encoder import GAIN_SHIFT, split_weights
    from teflon.rocket.rounding import shift_even

    case = ConstOpCase(8, 8, 48, "mul", dtype=dtype, const="bn")
    interp = make_interpreter(case.build(), reference=True)
    tensors = {}
    for d in interp.get_tensor_details():
        scale, zp = d["quantization"]
        data = interp.get_tensor(d["index"]) if d["name"] == "constant" else None
        tensors[d["index"]] = Tensor(d["index"], np.dtype(d["dtype"]).name, tuple(int(v) for v in d["shape"]),
                                     Quant(np.asarray([scale], np.float32), np.asarray([zp], np.int32)), data,
                                     d["name"])
    by_name = {t.name: t.index for t in tensors.values()}
    graph = Graph(tensors, [Operation(0, "MUL", [by_name["input"], by_name["constant"]], [by_name["output"]],
                                      {"activation": "NONE"})])
    conv = lower_const_elementwise(graph, graph.operations[0])
    centered = conv.weights_q.astype(np.int64).reshape(-1) - conv.w_zp_q
    wide = centered > PAIR_MAX
    assert wide.sum() >= 1 and (centered[wide] == 255).all()
    split, gains = split_weights(conv)
    assert gains is not None and (gains[wide] == WIDE_GAIN).all() and (gains[~wide] == 1).all()
    xs = np.arange(-128, 128, dtype=np.int64)[:, None]
    a = np.asarray(conv.bias, np.int64) - conv.in_zp * centered  # requant.bias_table's A, untruncated
    a_split = np.asarray(split.bias, np.int64) - conv.in_zp * (centered // gains)
    u = shift_even((xs * (centered // gains) + a_split) * (gains << GAIN_SHIFT), GAIN_SHIFT)
    assert np.array_equal(u, xs * centered + a)
