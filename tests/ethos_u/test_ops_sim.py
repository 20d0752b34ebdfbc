"""teflon's own Ethos-U65 compile of the op sweep (tests/ethos_u/op_sweeps.py) on the simulated NPU (device imx93)
against TFLite's reference kernels: every node delegated, and the output exactly TFLite's (the hardware's
arithmetic as simulated gives TFLite's rounding; the rule of the suites is <= 1 LSB and >= 99.5 % exact, these ops
are held to 0 LSB). A one-value constant operand runs as a per-channel constant (lower.scalar_as_channels); a
uint8 MEAN whose output offset is negative stays on the CPU (lower.lower_mean_builtin)."""

from __future__ import annotations

import pytest

from teflon.ethosu import program, stream, support
from teflon.modelgen import random_inputs
from teflon.reference import compare, run_cpu, run_delegate

from . import op_sweeps, tflite_graph

OPTIONS = {"device": "imx93", "sim": "1"}


@pytest.mark.parametrize("case", op_sweeps.OPS + op_sweeps.held_out(5, 6), ids=lambda c: c.name)
def test_op_on_simulator_is_exact(case: op_sweeps.Case, delegate_library: None) -> None:
    model = case.build()
    inputs = random_inputs(model, seed=0)
    ref = run_cpu(model, inputs)
    run = run_delegate(model, inputs, **OPTIONS)
    cmp = compare(ref, run.outputs)
    print(f"{case.name} on imx93: {cmp}; delegated {len(run.delegated)}/{len(run.ops)} nodes")
    if any("does not fit" in why for why in run.reasons.values()):  # a uint8 MEAN's negative output offset
        assert not run.delegated
    else:
        assert len(run.delegated) == len(run.ops), f"{case.name}: not delegated: {run.reasons}"
    assert cmp.max_abs_diff == 0, f"{case.name}: {cmp}"


@pytest.mark.parametrize("case", op_sweeps.OPS, ids=lambda c: c.name)
def test_op_stream_is_in_range(case: op_sweeps.Case) -> None:
    """The default compile's words decode strictly (every field inside the command set's values and ranges)."""
    model = case.build()
    graph = tflite_graph.load(model)
    claimed = [i for i, (ok, _) in support.support(graph).items() if ok]
    if not claimed:
        pytest.skip("not claimed")
    c = program.lower_graph(graph, claimed)
    assert c.kicks and not stream.check(c.words)
