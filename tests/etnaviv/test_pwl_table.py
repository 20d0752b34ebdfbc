"""The TP TABLE job (etnaviv/pwl_table.py, lower_unary.py; docs/hardware/etnaviv-tp.md §6a): the fitted table against
teflon.unary's TFLite tables, the fit's own ALU model against the TP reference model (tp_run), the input zero point
the fit moves, and the SiLU pair's LOGISTIC without a job of its own (default mode) or with Mesa's (compat)."""

from __future__ import annotations

import numpy as np
import pytest

from teflon import unary
from teflon.etnaviv.chips import CHIPS
from teflon.etnaviv.lower import lower, lower_graph, support
from teflon.etnaviv.ops import KIND_TP, TP_TYPES, EtnaOp
from teflon.etnaviv.pwl import pwl_lut
from teflon.etnaviv.pwl_table import _fit, fit_table, hw_outputs
from teflon.etnaviv.tp import tp_descriptors, tp_run
from teflon.ir import Graph, Operation, Quant, Tensor

IN_VA, OUT_VA, LUT_VA = 0x10000, 0x80000, 0xF0000
QP = unary.QuantParams


def _target(kind: str, dtype: str) -> tuple[np.ndarray, int, int]:
    """(stored target, stored input zero point, stored output zero point) of one op on one type."""
    shift = 128 if dtype == "int8" else 0
    qmin, _ = unary.QRANGE[dtype]
    inp = QP(np.float32(0.047), qmin + 150)
    out = {"TANH": QP(np.float32(1 / 128), qmin + 128), "RELU_N1_TO_1": QP(np.float32(2 / 255), qmin + 128),
           "RELU6": QP(np.float32(6 / 255), qmin)}.get(kind, QP(np.float32(0.031), qmin + 40))
    t = unary.table(kind, dtype, inp, out, alpha=0.1)
    return t + shift, inp.zero_point + shift, out.zero_point + shift


@pytest.mark.parametrize("dtype", ["uint8", "int8"])
@pytest.mark.parametrize("kind", ["TANH", "HARD_SWISH", "LEAKY_RELU", "RELU6", "RELU_N1_TO_1", "LOGISTIC"])
def test_fit_exact(kind: str, dtype: str) -> None:
    """Every stored input gives TFLite's output under the fit's ALU model."""
    target, zi, zo = _target(kind, dtype)
    fit = fit_table(target, zi, zo)
    assert fit.exact == 1.0, fit
    assert np.array_equal(hw_outputs(fit.lut, fit.in_zp, zo), target)


def test_zero_point_moved_onto_a_clamp() -> None:
    """MINIMUM with a constant 203 inputs above the zero point: the bend lies inside a segment of 8 inputs, which
    no line rounds right (4 inputs off with the tensor's zero point); centred on the bend the table is exact."""
    target = np.minimum(unary.input_values("uint8"), 20 + 203)
    assert _fit(target, 20, 0).exact < 1.0
    fit = fit_table(target, 20, 0)
    assert fit.exact == 1.0 and fit.in_zp == 223


@pytest.mark.parametrize("h,w,c", [(7, 9, 20), (1, 1, 256), (16, 16, 64)])
def test_reference_model_agrees(h: int, w: int, c: int) -> None:
    """The TP reference model (descriptors + tp_run) computes what the fit assumed, on every core split."""
    target, zi, zo = _target("HARD_SWISH", "int8")
    fit = fit_table(target, zi, zo)
    op = EtnaOp(type=KIND_TP, tp_type=TP_TYPES.index("TABLE"), input_width=h, input_height=w, input_channels=c,
                input_zero_point=fit.in_zp, output_width=h, output_height=w, output_channels=c,
                output_zero_point=zo, input_scale=0.047, output_scale=0.031, lut=fit.lut)
    x = np.random.default_rng(0).integers(0, 256, h * w * c).astype(np.uint8)
    for cores in (3, 4):
        descs = tp_descriptors(op, cores, IN_VA, OUT_VA, LUT_VA)
        out = tp_run(descs, IN_VA, x, OUT_VA, x.size, pwl_lut(op))
        assert np.array_equal(out, target[x])


def _silu_graph(extra_reader: bool) -> Graph:
    q = Quant(scales=np.array([0.05], np.float32), zero_points=np.array([-20], np.int64))
    qs = Quant(scales=np.array([1 / 256], np.float32), zero_points=np.array([-128], np.int64))
    qy = Quant(scales=np.array([0.03], np.float32), zero_points=np.array([-100], np.int64))
    shape = (1, 8, 8, 16)
    t = {0: Tensor(0, "int8", shape, q), 1: Tensor(1, "int8", shape, qs), 2: Tensor(2, "int8", shape, qy),
         3: Tensor(3, "int8", shape, qs)}
    ops = [Operation(0, "LOGISTIC", [0], [1]), Operation(1, "MUL", [1, 0], [2], {"activation": "NONE"})]
    if extra_reader:
        ops.append(Operation(2, "RELU", [1], [3]))
    return Graph(t, ops)


@pytest.mark.parametrize("extra_reader", [False, True])
def test_silu_pair(extra_reader: bool) -> None:
    """Default mode: one TABLE job reading x for the MUL; the LOGISTIC keeps its job only when something else reads
    the sigmoid. Mesa compat: the LOGISTIC always keeps Mesa's job."""
    g = _silu_graph(extra_reader)
    chip = CHIPS["a311d"]
    nodes = [op.index for op in g.operations]
    assert all(ok for ok, _ in support(g, chip).values())
    jobs = [(j.tp_name, j.input_tensor, j.output_tensor) for j in lower_graph(g, nodes, chip) if j.type == KIND_TP]
    table = [j for j in jobs if j[0] == "TABLE"]
    assert table and table[0][1:] == (0, 2)
    assert any(j[0] == "LOGISTIC" for j in jobs) == extra_reader
    compat = [j.tp_name for j in lower_graph(g, nodes, chip, mesa_compat=True)]
    assert "LOGISTIC" in compat


def test_silu_sigmoid_requested_as_output() -> None:
    """A sigmoid the runtime binds as a partition output (a graph output also read by the MUL) keeps its job."""
    g = _silu_graph(False)
    nodes = [op.index for op in g.operations]
    jobs = lower(g, nodes, CHIPS["a311d"], outputs=[1, 2]).jobs
    assert [j.tp_name for j in jobs if j.type == KIND_TP].count("LOGISTIC") == 1
