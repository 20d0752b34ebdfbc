"""Which operations the Ethos-U65 compiler claims: everything it lowers is claimed, everything else carries the
specific reason (no Vela needed)."""

from __future__ import annotations

import pytest

from teflon import modelgen as mg
from teflon.ethosu import support

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
