"""Which operations the Ethos-U65 compiler claims: everything it lowers is claimed, everything else carries the
specific reason (no Vela needed)."""

from __future__ import annotations

import pytest

from teflon import modelgen as mg
from teflon.ethosu import support
from teflon.netgen import Net

from . import sweeps, tflite_graph


@pytest.mark.parametrize("case", sweeps.SWEEP[::4], ids=lambda c: c.name)
def test_sweep_ops_are_claimed(case: sweeps.Case) -> None:
    """Every sweep operation is claimed (an element-wise op with a one-value constant too: the default compile
    repeats the value per channel, lower.scalar_as_channels)."""
    graph = tflite_graph.load(case.build())
    for ok, why in support.support(graph).values():
        assert ok, (case.name, why)


@pytest.mark.parametrize(("case", "reason"), [
    (mg.ConvCase("conv2d", 12, 12, 8, 8, kernel=3, stride=3, padding="same", dtype="int8"), "stride 3x3"),
    (mg.PoolCase(80, 2, 16, op="mean", dtype="int8"), "MEAN over 80x2"),
    (mg.ElementwiseCase("pad", 6, 6, 16, dtype="int8", pads=(1, 1, 2, 0, 1, 0)), "PAD of the batch or channel"),
], ids=["conv-stride3", "mean", "pad-channels"])
def test_unclaimed_with_reason(case: sweeps.Case | mg.UnaryCase, reason: str) -> None:
    graph = tflite_graph.load(case.build())
    decisions = support.support(graph)
    assert any(not ok and reason in why for ok, why in decisions.values()), decisions


@pytest.mark.parametrize("case", [mg.AddCase(8, 8, 3, producers="inputs", dtype="int8"),
                                  mg.ConstOpCase(6, 5, 1, op="mul", bcast="1", dtype="uint8")], ids=lambda c: c.name)
def test_elementwise_on_fewer_than_8_channels_is_claimed(case: sweeps.Case) -> None:
    """Element-wise operations of any depth are claimed (docs/hardware/ethosu-compiler.md "Element-wise operations
    on fewer than 8 channels"); the default compile runs them in their own shape."""
    graph = tflite_graph.load(case.build())
    assert all(ok for ok, _ in support.support(graph).values())


def test_lone_weightless_node_stays_on_cpu() -> None:
    """A LOGISTIC between a SQUEEZE and an EXPAND_DIMS (neither lowered) would be a partition of its own: it stays
    on the CPU (teflon.lone); alone in a model it is claimed."""
    n = Net("logistic_between_squeeze_and_expand", "int8", per_channel=False)
    a = n.input(8, 8, 4)
    graph = tflite_graph.load(n.build([a], [n.expand_dims(n.logistic(n.squeeze(a, (0,))), 0)]))
    decisions = support.support(graph)
    (logistic,) = [op.index for op in graph.operations if op.kind == "LOGISTIC"]
    assert not decisions[logistic][0] and "alone between CPU nodes" in decisions[logistic][1], decisions
    alone = tflite_graph.load(mg.UnaryCase("logistic", 4, 4, 4, dtype="int8").build())
    assert all(ok for ok, _ in support.support(alone).values())


@pytest.mark.parametrize("shape", [(1, 10), (1, 28, 28), (5, 3, 16), (1, 2, 2, 8)], ids=lambda s: "x".join(map(str, s)))
def test_low_rank_maps_are_read_with_ones_prepended(shape: tuple[int, ...]) -> None:
    """A rank-1..3 tensor (or batch-1 rank 4) is read as Vela reads it: ones prepended up to rank 4."""
    g = mg.GraphBuilder("quantize")
    x = g.tensor("x", shape, "int8", mg.QParams.make(0.02, 3))
    y = g.tensor("y", shape, "uint8", mg.QParams.make(0.03, 130))
    g.op(mg.BuiltinOperator.QUANTIZE, 2, [x], [y])
    graph = tflite_graph.load(g.build([x], [y]))
    assert support.support(graph) == {0: (True, "")}
    full = (1, 1, 1, *shape)[-4:]
    assert support.nhwc(graph.tensors[0]) == full[1:]


def test_batch_above_one_is_refused() -> None:
    g = mg.GraphBuilder("quantize")
    x = g.tensor("x", (2, 4, 4, 8), "int8", mg.QParams.make(0.02, 3))
    y = g.tensor("y", (2, 4, 4, 8), "uint8", mg.QParams.make(0.03, 130))
    g.op(mg.BuiltinOperator.QUANTIZE, 2, [x], [y])
    ok, why = support.support(tflite_graph.load(g.build([x], [y])))[0]
    assert not ok and "batch 1" in why, why


def test_softmax_rows_beyond_511_are_refused() -> None:
    """Rows of 512 or more: the reference arithmetic Vela lowers overflows its final shift once the exponentials
    sum to 512 (TFLite's builtin kernel then gives ~0, the reference kernel garbage)."""
    from . import op_sweeps

    for shape, claimed in (((1, 511), True), ((1, 1000), False)):
        ok, why = support.support(tflite_graph.load(op_sweeps.softmax_model(shape, "int8")))[0]
        assert ok == claimed, (shape, why)
        assert claimed or "rows of up to 511" in why, why
