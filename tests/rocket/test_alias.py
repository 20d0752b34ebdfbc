"""RESHAPE / SQUEEZE / shift-only QUANTIZE on the rocket NPU as aliases of their input's device buffer
(python/teflon/rocket/alias.py): claimed only next to NPU work and where every NPU reader sees the same layout;
the results equal the CPU's exactly (no byte moves)."""

from __future__ import annotations

import numpy as np
import pytest
from tflite.BuiltinOperator import BuiltinOperator

from conftest import sim_options
from teflon import targets
from teflon.modelgen import GraphBuilder, QParams, random_inputs
from teflon.netgen import Net
from teflon.reference import compare, run_cpu, run_delegate

DEVICES = [t.name for t in targets.of_family("rocket")]


def _conv_reshape(dtype: str) -> bytes:
    """conv 4x4x8 -> 32 channels -> RESHAPE (1, 16, 32) -> graph output (the host reads the alias)."""
    n = Net("alias-conv-reshape", dtype, per_channel=False)  # type: ignore[arg-type]
    x = n.input(4, 4, 8)
    return n.build([x], [n.reshape(n.conv(x, 32, 3), (1, 16, 32))])


def _classifier(dtype: str) -> bytes:
    """A classifier's tail: conv to (1, 1, 1, 24) -> RESHAPE (1, 24) -> RESHAPE (1, 1, 1, 24) -> conv (an NPU
    reader of the same layout, through a chain of aliases) -> (1, 1, 1, 10) -> RESHAPE (1, 10) read by the host."""
    n = Net("alias-classifier", dtype, per_channel=False)  # type: ignore[arg-type]
    x = n.input(1, 1, 8)
    v = n.reshape(n.conv(x, 24, 1), (1, 24))
    logits = n.conv(n.reshape(v, (1, 1, 1, 24)), 10, 1)
    return n.build([x], [n.reshape(logits, (1, 10))])


def _relayout(dtype: str) -> bytes:
    """conv (1, 4, 4, 16) -> RESHAPE (1, 4, 8, 8) -> conv: the second conv would read other channel groups."""
    n = Net("alias-relayout", dtype, per_channel=False)  # type: ignore[arg-type]
    x = n.input(4, 4, 8)
    return n.build([x], [n.conv(n.reshape(n.conv(x, 16, 1), (1, 4, 8, 8)), 8, 1)])


def _quantize_input(zero_point_shift: int) -> bytes:
    """uint8 input -> QUANTIZE to int8 (same scale, zero point moved by `zero_point_shift`) -> int8 conv."""
    n = Net("alias-quantize", "int8", per_channel=False)
    g: GraphBuilder = n.g
    u = g.tensor("image", (1, 6, 6, 8), "uint8", QParams.make(1 / 128, 128))
    x = g.tensor("input", (1, 6, 6, 8), "int8", QParams.make(1 / 128, 128 + zero_point_shift))
    g.op(BuiltinOperator.QUANTIZE, 1, [u], [x])
    rng = np.random.default_rng(1)
    n.probe[x] = (rng.integers(-128, 128, size=(1, 6, 6, 8)) - (128 + zero_point_shift)) / 128
    return n.build([u], [n.conv(x, 16, 3)])


CASES = {
    "conv-reshape-out": (_conv_reshape, {"RESHAPE": True}),
    "classifier-reshape-conv": (_classifier, {"RESHAPE": True}),
    "conv-reshape-relayout": (_relayout, {"RESHAPE": False}),
}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", ["uint8", "int8"])
@pytest.mark.parametrize("case", list(CASES))
def test_alias(case: str, dtype: str, device: str, delegate_library: None) -> None:
    build, expect = CASES[case]
    model = build(dtype)
    _check(model, device, expect)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(("shift", "claimed"), [(-128, True), (-120, False)], ids=["shift-only", "requantize"])
def test_quantize_u8_to_i8(shift: int, claimed: bool, device: str, delegate_library: None) -> None:
    _check(_quantize_input(shift), device, {"QUANTIZE": claimed})


def _check(model: bytes, device: str, expect: dict[str, bool]) -> None:
    x = random_inputs(model)
    ref = run_cpu(model, x)
    run = run_delegate(model, x, **sim_options(device))
    cmp = compare(ref, run.outputs)
    print(f"{device}: {cmp}; {len(run.delegated)}/{len(run.ops)} nodes in {run.partitions} partition(s); "
          f"CPU: {run.reasons}")
    for kind, claimed in expect.items():
        nodes = run.nodes_of(kind)
        assert nodes
        taken = [i for i in nodes if i in run.delegated]
        assert bool(taken) == claimed, f"{kind}: delegated {taken} of {nodes}; reasons {run.reasons}"
    convs = run.undelegated("CONV_2D")
    assert not convs, f"convolutions left on the CPU: {run.describe(convs)}"
    assert cmp.max_abs_diff <= 1 and cmp.within(1, 0.995), str(cmp)
