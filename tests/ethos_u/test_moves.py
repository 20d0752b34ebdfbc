"""Data movement on the Ethos-U65 (teflon.ethosu.moves): CONCATENATION on any axis, SPLIT / SPLIT_V / SLICE /
STRIDED_SLICE, RESIZE_NEAREST_NEIGHBOR x2 and TRANSPOSE.

- against Vela 5.2.0 (--vela-compat, kick by kick; kick_oracle): the register state of every kick;
- on the simulated imx93 against TFLite's CPU kernels: a copy must be bit-exact;
- the refusals carry their reason, and a slice that is one byte range is a view next to other kicks.
"""

from __future__ import annotations

import pytest

from conftest import sim_options
from teflon import netgen
from teflon.ethosu import program, support
from teflon.modelgen import random_inputs
from teflon.reference import compare, run_cpu, run_delegate

from . import kick_oracle, sweeps, tflite_graph

VELA = pytest.mark.skipif(kick_oracle.VELA is None, reason="ethos-u-vela (5.2.0) is not installed")


@VELA
@pytest.mark.parametrize("case", sweeps.MOVES, ids=lambda c: c.name)
def test_moves_match_vela(case: sweeps.ModelCase) -> None:
    res = kick_oracle.compare(case.build())
    assert res.ok, f"{case.name}:\n  " + "\n  ".join(res.diffs)


@VELA
@pytest.mark.parametrize("case", sweeps.RESIZES, ids=lambda c: c.name)
def test_resize_matches_vela(case: sweeps.ModelCase) -> None:
    res = kick_oracle.compare(case.build())
    assert res.ok, f"{case.name}:\n  " + "\n  ".join(res.diffs)


@pytest.mark.parametrize("case", [*sweeps.MOVES, *sweeps.RESIZES, *sweeps.OWN_MOVES], ids=lambda c: c.name)
def test_moves_exact_on_simulator(case: sweeps.ModelCase, delegate_library: None) -> None:
    model = case.build()
    x = random_inputs(model)
    ref = run_cpu(model, x)
    run = run_delegate(model, x, **sim_options("imx93"))
    cmp = compare(ref, run.outputs)
    print(f"{case.name}: {cmp}; {len(run.delegated)}/{len(run.ops)} nodes")
    assert len(run.delegated) == len(run.ops), run.reasons
    assert cmp.max_abs_diff == 0 and cmp.exact_fraction == 1.0, f"{case.name}: {cmp}"


def _strided_step2() -> bytes:
    n = netgen.Net("s", "int8")
    x = n.input(6, 8, 16)
    y = n.channels(x, 0, 8, strided=True)
    model = n.build([x], [y])
    graph = tflite_graph.load(model)
    strides = graph.tensors[graph.operations[0].inputs[3]]
    assert strides.data is not None
    # the same model with step 2 on W: rewrite the strides constant's bytes in the flatbuffer
    old = strides.data.astype("<i4").tobytes()
    new = strides.data.copy()
    new[2] = 2
    return model.replace(old, new.astype("<i4").tobytes(), 1)


def _concat_requant() -> bytes:
    """A concatenation whose first input has another scale than its output."""
    model = sweeps.concat_case(3, [(4, 4, 8), (4, 4, 8)]).build()
    graph = tflite_graph.load(model)
    t = graph.tensors[graph.operations[0].inputs[0]]
    assert t.quant is not None
    scale = t.quant.scales.astype("<f4").tobytes()
    assert model.count(scale) >= 1
    return model.replace(scale, (t.quant.scales * 2).astype("<f4").tobytes(), 1)


REFUSED = {
    "transpose-0321": (lambda: sweeps.transpose_case((3, 5, 7), (0, 3, 2, 1)).build(), "not one exchange"),
    "strided-slice-step2": (_strided_step2, "step other than 1"),
    "concat-requantizes": (_concat_requant, "requantizing copy"),
}


@pytest.mark.parametrize("name", list(REFUSED))
def test_refused_with_reason(name: str) -> None:
    build, reason = REFUSED[name]
    decisions = support.support(tflite_graph.load(build()))
    assert any(not ok and reason in why for ok, why in decisions.values()), decisions


def test_split_is_a_view_next_to_a_kick() -> None:
    """A SPLIT along H (each part one byte range of the input) after an ADD: no kick of its own, the parts are the
    ADD output's bytes at their row offsets; alone in a partition it copies (one kick per part)."""
    n = netgen.Net("v", "int8")
    x, y = n.input(6, 4, 16), n.input(6, 4, 16)
    s = n.add(x, y)
    parts = n.split(s, 2, axis=1)
    graph = tflite_graph.load(n.build([x, y], parts))
    add, split = graph.operations
    c = program.lower_graph(graph, [add.index, split.index])
    assert [k.op for k in c.kicks] == ["NPU_OP_ELEMENTWISE"]
    assert [c.offsets[t] - c.offsets[add.outputs[0]] for t in split.outputs] == [0, 3 * 4 * 16]
    alone = program.lower_graph(graph, [split.index])
    assert [k.op for k in alone.kicks] == ["NPU_OP_POOL"] * 2


@pytest.mark.parametrize("shape", [(1, 2, 2, 4, 16), (1, 16, 16), (256,)], ids=["rank5", "rank3", "rank1"])
def test_output_of_any_rank_is_bound(shape: tuple[int, ...], delegate_library: None) -> None:
    """A partition output that is not an NHWC map (ADD, then RESHAPE to `shape` as the graph output) is bound as
    its packed bytes and read back exactly."""
    model = sweeps.reshape_after_add_model("int8", (4, 4, 16), shape)
    x = random_inputs(model)
    ref = run_cpu(model, x)
    run = run_delegate(model, x, **sim_options("imx93"))
    cmp = compare(ref, run.outputs)
    print(f"{shape}: {cmp}")
    assert len(run.delegated) == len(run.ops) and run.partitions == 1, run.reasons
    assert cmp.max_abs_diff == 0, cmp


@VELA
@pytest.mark.parametrize("case", sweeps.moves_held_out(5, 16), ids=lambda c: c.name)
def test_held_out_moves_match_vela(case: sweeps.ModelCase) -> None:
    res = kick_oracle.compare(case.build())
    assert res.ok, f"{case.name}:\n  " + "\n  ".join(res.diffs)
