"""Table ops (the DPU LUT program) reading and writing channel views (views.py): SPLIT -> RELU / TANH ->
CONCATENATION -> LOGISTIC, 6x5x32 int8, delegated whole on rk3588 and byte-equal to the CPU."""

from __future__ import annotations

import flatbuffers
import numpy as np
import tflite
from tflite.BuiltinOperator import BuiltinOperator
from tflite.BuiltinOptions import BuiltinOptions

from conftest import sim_options
from teflon.modelgen import GraphBuilder, QParams, random_inputs
from teflon.reference import compare, run_cpu, run_delegate


def _model() -> bytes:
    g = GraphBuilder("teflon test split-relu-tanh-concat-logistic-in6x5x32-i8")
    half = (1, 6, 5, 16)
    x = g.tensor("input", (1, 6, 5, 32), "int8", QParams.make(0.05, 3))
    xa, xb = (g.tensor(n, half, "int8", QParams.make(0.05, 3)) for n in ("xa", "xb"))
    a, b = (g.tensor(n, half, "int8", QParams.make(1 / 128, 0)) for n in ("a", "b"))
    cat = g.tensor("cat", (1, 6, 5, 32), "int8", QParams.make(1 / 128, 0))
    y = g.tensor("output", (1, 6, 5, 32), "int8", QParams.make(1 / 256, -128))
    axis = g.constant("axis", np.array(3, np.int32))

    def split_options(fb: flatbuffers.Builder) -> int:
        tflite.SplitOptionsStart(fb)
        tflite.SplitOptionsAddNumSplits(fb, 2)
        return tflite.SplitOptionsEnd(fb)

    def concat_options(fb: flatbuffers.Builder) -> int:
        tflite.ConcatenationOptionsStart(fb)
        tflite.ConcatenationOptionsAddAxis(fb, 3)
        return tflite.ConcatenationOptionsEnd(fb)

    g.op(BuiltinOperator.SPLIT, 1, [axis, x], [xa, xb], BuiltinOptions.SplitOptions, split_options)
    g.op(BuiltinOperator.RELU, 2, [xa], [a])
    g.op(BuiltinOperator.TANH, 2, [xb], [b])
    g.op(BuiltinOperator.CONCATENATION, 1, [a, b], [cat], BuiltinOptions.ConcatenationOptions, concat_options)
    g.op(BuiltinOperator.LOGISTIC, 2, [cat], [y])
    return g.build([x], [y])


def test_table_ops_on_views(delegate_library: None) -> None:
    model = _model()
    x = random_inputs(model)
    ref = run_cpu(model, x)
    run = run_delegate(model, x, **sim_options("rk3588"))
    cmp = compare(ref, run.outputs)
    print(f"{cmp}; delegated {sorted(run.delegated)} of {len(run.ops)}")
    assert sorted(run.delegated) == list(range(len(run.ops))), run.reasons
    assert cmp.max_abs_diff == 0, cmp
