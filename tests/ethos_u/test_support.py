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
    (mg.AddCase(8, 8, 3, producers="inputs", dtype="int8"), "Vela reshapes"),
    (mg.PoolCase(80, 2, 16, op="mean", dtype="int8"), "MEAN over 80x2"),
    (mg.ElementwiseCase("pad", 6, 6, 16, dtype="int8", pads=(1, 1, 2, 0, 1, 0)), "PAD of the batch or channel"),
], ids=["conv-stride3", "add-3ch", "mean", "pad-channels"])
def test_unclaimed_with_reason(case: sweeps.Case | mg.UnaryCase, reason: str) -> None:
    graph = tflite_graph.load(case.build())
    decisions = support.support(graph)
    assert any(not ok and reason in why for ok, why in decisions.values()), decisions


def test_lone_weightless_node_stays_on_cpu() -> None:
    """A LOGISTIC between two MULs the compiler refuses (4 channels) would be a partition of its own: it stays on the
    CPU (teflon.lone); alone in a model it is claimed."""
    n = Net("logistic_between_muls", "int8", per_channel=False)
    a, b = n.input(8, 8, 4), n.input(8, 8, 4)
    graph = tflite_graph.load(n.build([a, b], [n.mul(n.logistic(n.mul(a, b)), b)]))
    decisions = support.support(graph)
    (logistic,) = [op.index for op in graph.operations if op.kind == "LOGISTIC"]
    assert not decisions[logistic][0] and "alone between CPU nodes" in decisions[logistic][1], decisions
    alone = tflite_graph.load(mg.UnaryCase("logistic", 4, 4, 4, dtype="int8").build())
    assert all(ok for ok, _ in support.support(alone).values())
