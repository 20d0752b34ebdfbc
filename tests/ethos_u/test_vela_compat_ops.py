"""teflon's --vela-compat compile against Vela 5.2.0 (live) for MAXIMUM / MINIMUM, two-map broadcast ADD / SUB /
MUL, HARD_SWISH, the standalone RELU variants and QUANTIZE (tests/ethos_u/op_sweeps.py): the register state at
every kick, placement aside, and the LUT bytes (tests/ethos_u/kick_oracle.py)."""

from __future__ import annotations

import pytest

from teflon.ethosu import lower, program, softmax, support
from teflon.ethosu.regs import KICKS, U65

from . import kick_oracle, op_sweeps, tflite_graph, vela_oracle

if kick_oracle.VELA is None:
    pytest.skip("ethos-u-vela (5.2.0) is not installed", allow_module_level=True)


def _check(case: op_sweeps.Case) -> None:
    res = kick_oracle.compare(case.build())
    diffs = res.diffs
    if getattr(case, "op", None) == "mean":  # the sums' region only (op_sweeps.MEAN_SUMS)
        diffs = [d for d in diffs if d not in ("kick 0 OFM_REGION: teflon {'region': 1} vela {'region': 2}",
                                               "kick 1 IFM_REGION: teflon {'region': 1} vela {'region': 2}")]
    assert not diffs and res.kicks[0] == res.kicks[1], f"{case.name}:\n  " + "\n  ".join(diffs)


@pytest.mark.parametrize("case", op_sweeps.OPS, ids=lambda c: c.name)
def test_ops_match_vela(case: op_sweeps.Case) -> None:
    _check(case)


@pytest.mark.parametrize("case", op_sweeps.held_out(5, 6), ids=lambda c: c.name)
def test_ops_held_out_match_vela(case: op_sweeps.Case) -> None:
    _check(case)


@pytest.mark.slow
@pytest.mark.parametrize("case", op_sweeps.held_out(13, 80), ids=lambda c: c.name)
def test_ops_held_out_large_match_vela(case: op_sweeps.Case) -> None:
    _check(case)



@pytest.mark.parametrize("case", op_sweeps.SMALL_DEPTH_RESHAPED, ids=lambda c: c.name)
def test_small_depth_of_one_shape_is_reshaped_by_vela_and_refused_by_vela_compat(case: op_sweeps.Case) -> None:
    """Fewer than 8 channels, more than 16 values, operands of one shape (or one input): Vela's kick has another
    OFM shape than the map's (lower.vela_reshapes), which --vela-compat does not model: it refuses the operation
    with that reason, while the default compile claims it (test_ops_sim runs it exact)."""
    model = case.build()
    graph = tflite_graph.load(model)
    op = graph.operations[0]
    shape = graph.tensors[op.outputs[0]].shape
    (kick, st), = U65.state_at_kicks(vela_oracle.compile_raw(model).words, KICKS)
    vela_shape = tuple(st[f"NPU_SET_OFM_{d}_M1"] + 1 for d in ("HEIGHT", "WIDTH", "DEPTH"))
    print(f"{case.name}: {tuple(shape[-3:])} -> Vela {vela_shape}")
    assert kick in ("NPU_OP_ELEMENTWISE", "NPU_OP_POOL") and vela_shape != tuple(shape[-3:])
    assert support.support(graph)[op.index][0]
    with pytest.raises(lower.LoweringError, match="Vela reshapes such an operation"):
        program.lower_graph(graph, [op.index], vela_compat=True)


@pytest.mark.parametrize("case", op_sweeps.SOFTMAX[:6], ids=lambda c: c.name)
def test_softmax_exp_table_and_kicks_match_vela(case: op_sweeps.ModelCase) -> None:
    """The exponential LUT (1024 bytes, the start of Vela's read-only blob) is byte-equal to Vela's, and the kick
    sequence has Vela's operations in Vela's order (27 kicks; Vela adds a no-op ADD of a zero map before the last).
    The register state differs in layout: docs/hardware/ethosu-compiler.md "SOFTMAX"."""
    model = case.build()
    graph = tflite_graph.load(model)
    s = support.spec(graph, graph.operations[0])
    assert isinstance(s, softmax.SoftmaxSpec)
    vela = vela_oracle.compile_raw(model)
    assert vela.read_only[:1024] == s.table
    ours = [(n, st.get(n)) for n, st in U65.state_at_kicks(program.lower_graph(graph, [0]).words, KICKS)]
    theirs = [(n, st.get(n)) for n, st in U65.state_at_kicks(vela.words, KICKS)]
    assert ours == theirs[:-2] + theirs[-1:], (ours, theirs)  # the default compile has no zero ADD


SOFTMAX_EQUAL = [c for c in op_sweeps.SOFTMAX if c.name.split("-")[1] in ("in1x10", "in1x2", "in4x10", "in1x1x1x100")]


@pytest.mark.parametrize("case", SOFTMAX_EQUAL, ids=lambda c: c.name)
def test_softmax_state_matches_vela(case: op_sweeps.ModelCase) -> None:
    """--vela-compat SOFTMAX: Vela's register state at all 28 kicks, the scratch maps' region aside (Vela keeps
    them in its fast-memory scratch, region 2; teflon in the arena). Rows of more than one OFM block (Vela's
    partial BLOCKDEP) and maps Vela lays out otherwise (several H rows, thousands of rows) differ: see
    docs/hardware/ethosu-compiler.md "SOFTMAX"."""
    res = kick_oracle.compare(case.build())
    diffs = [d for d in res.diffs if "_REGION" not in d]
    assert not diffs and res.kicks[0] == res.kicks[1], f"{case.name}:\n  " + "\n  ".join(diffs)
