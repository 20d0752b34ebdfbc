"""teflon's own Ethos-U65 compile of the op sweep (tests/ethos_u/op_sweeps.py) on the simulated NPU (device imx93)
against TFLite's reference kernels: every node delegated, and the output exactly TFLite's (the hardware's
arithmetic as simulated gives TFLite's rounding; the rule of the suites is <= 1 LSB and >= 99.5 % exact, these ops
are held to 0 LSB). A one-value constant operand runs as a per-channel constant (lower.scalar_as_channels); a
uint8 MEAN whose output offset is negative stays on the CPU (lower.lower_mean_builtin). Element-wise operations on
fewer than 8 channels run as they are, including those Vela would reshape (op_sweeps.SMALL_DEPTH_RESHAPED)."""

from __future__ import annotations

import numpy as np
import pytest

from teflon.ethosu import program, stream, support
from teflon.modelgen import graph_inputs, random_inputs
from teflon.reference import compare, run_cpu, run_delegate

from . import op_sweeps, tflite_graph

OPTIONS = {"device": "imx93", "sim": "1"}


@pytest.mark.parametrize("case", op_sweeps.OPS + op_sweeps.SMALL_DEPTH_RESHAPED + op_sweeps.held_out(5, 6),
                         ids=lambda c: c.name)
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


@pytest.mark.parametrize("case", op_sweeps.OPS + op_sweeps.SMALL_DEPTH_RESHAPED, ids=lambda c: c.name)
def test_op_stream_is_in_range(case: op_sweeps.Case) -> None:
    """The default compile's words decode strictly (every field inside the command set's values and ranges)."""
    model = case.build()
    graph = tflite_graph.load(model)
    claimed = [i for i, (ok, _) in support.support(graph).items() if ok]
    if not claimed:
        pytest.skip("not claimed")
    c = program.lower_graph(graph, claimed)
    assert c.kicks and not stream.check(c.words)


def _flat_input(model: bytes, seed: int) -> list[np.ndarray]:
    """Inputs within a few steps of each other: many exponentials near 1, the sums large (the stress case of the
    reference arithmetic's final shift)."""
    rng = np.random.default_rng(seed)
    out = []
    for t in graph_inputs(model):
        lo, hi = (-128, 127) if t.dtype == "int8" else (0, 255)
        c = int(rng.integers(lo + 8, hi - 8))
        out.append(rng.integers(c - 4, c + 5, t.shape).astype(t.dtype))
    return out


@pytest.mark.parametrize("case", op_sweeps.SOFTMAX, ids=lambda c: c.name)
def test_softmax_on_simulator_matches_builtin(case: op_sweeps.ModelCase, delegate_library: None) -> None:
    """SOFTMAX (Vela's kick sequence, the reference kernel's arithmetic) against TFLite's builtin kernel, on random
    and on flat inputs: within 1 LSB and >= 99.5 % exact (measured: exact)."""
    model = case.build()
    for kind, inputs in (("random", random_inputs(model, seed=0)), ("flat", _flat_input(model, 1))):
        ref = run_cpu(model, inputs)
        run = run_delegate(model, inputs, **OPTIONS)
        cmp = compare(ref, run.outputs)
        print(f"{case.name} ({kind} input) on imx93: {cmp}; delegated {len(run.delegated)}/{len(run.ops)} nodes")
        assert len(run.delegated) == len(run.ops), f"{case.name}: not delegated: {run.reasons}"
        assert cmp.max_abs_diff <= 1 and cmp.exact_fraction >= 0.995, f"{case.name} ({kind}): {cmp}"


@pytest.mark.parametrize("case", op_sweeps.SOFTMAX[::3], ids=lambda c: c.name)
def test_softmax_stream_is_in_range(case: op_sweeps.ModelCase) -> None:
    graph = tflite_graph.load(case.build())
    c = program.lower_graph(graph, [0])
    assert len(c.kicks) == 27 and not stream.check(c.words)
