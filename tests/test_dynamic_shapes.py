"""Graphs whose tensor sizes can change at invoke (a Keras model with a dynamic batch writes SHAPE -> ... -> RESHAPE
with a computed shape) load with the delegate on every family and run: the nodes that touch such a tensor stay on
the CPU, the rest is delegated, and the output is the CPU's. Before, TFLite refused the delegate of a static-only
family outright (a bare RuntimeError while building the interpreter), and the Ethos-U family claimed a node whose
input was later resized (a prepare error). Ids: `conv-shape-reshape-conv-a311d`.
"""

from __future__ import annotations

import flatbuffers
import numpy as np
import pytest
import tflite
from tflite.BuiltinOperator import BuiltinOperator
from tflite.BuiltinOptions import BuiltinOptions

from conftest import sim_options
from teflon import targets
from teflon.modelgen import ConvCase, GraphBuilder, add_conv, conv_params, random_inputs
from teflon.reference import compare, run_cpu, run_delegate

DEVICES = [t.name for t in targets.drivable_generations()]


def _shape_options(fb: flatbuffers.Builder) -> int:
    tflite.ShapeOptionsStart(fb)
    tflite.ShapeOptionsAddOutType(fb, tflite.TensorType.INT32)
    return tflite.ShapeOptionsEnd(fb)


def dynamic_reshape_model(dtype: str) -> bytes:
    """conv -> RESHAPE(its output, SHAPE(its output)) -> conv: the reshape's shape is computed, so its output and
    everything after it may change size at invoke (TFLite marks the reshape's output dynamic)."""
    first = ConvCase("conv2d", 8, 8, 16, 16, kernel=3, stride=1, padding="same", dtype=dtype)
    second = ConvCase("conv2d", 8, 8, 16, 8, kernel=1, stride=1, padding="same", dtype=dtype)
    rng = np.random.default_rng(3)
    g = GraphBuilder()
    p1 = conv_params(first, rng)
    x = g.tensor("input", first.input_shape, dtype, p1.input_quant)
    y = add_conv(g, first, x, p1, "conv1")
    shape = g.tensor("conv1/shape", (4,), "int32")
    g.op(BuiltinOperator.SHAPE, 1, [y], [shape], BuiltinOptions.ShapeOptions, _shape_options)
    r = g.tensor("reshaped", first.output_shape, dtype, g.quant(y))
    g.op(BuiltinOperator.RESHAPE, 1, [y, shape], [r])
    p2 = conv_params(second, rng, input_quant=g.quant(y))
    z = add_conv(g, second, r, p2, "output")
    return g.build([x], [z])


@pytest.mark.usefixtures("delegate_library")
@pytest.mark.parametrize("device", DEVICES, ids=[f"conv-shape-reshape-conv-{d}" for d in DEVICES])
def test_dynamic_reshape_loads_and_runs(device: str) -> None:
    dtype = "int8" if targets.get(device).family == "ethosu" else "uint8"
    model = dynamic_reshape_model(dtype)
    inputs = random_inputs(model, seed=0)
    ref = run_cpu(model, inputs)
    run = run_delegate(model, inputs, **sim_options(device))
    cmp = compare(ref, run.outputs)
    print(f"{device}: delegated {sorted(run.delegated)} of {list(run.ops)}; {cmp}")
    assert run.ops.index("RESHAPE") not in run.delegated
    assert len(run.ops) - 1 not in run.delegated, "the conv after the dynamic reshape must stay on the CPU"
    assert 0 in run.delegated, "the conv before the dynamic reshape is static: it should be delegated"
    assert cmp.max_abs_diff <= 1 and cmp.exact_fraction >= 0.995, str(cmp)
