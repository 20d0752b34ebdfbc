"""Nodes whose tensors are views of one device buffer (python/teflon/rocket/views.py): RESHAPE / SQUEEZE /
shift-only QUANTIZE (the output is the input's buffer) and channel CONCATENATION / SPLIT (the parts are 16-channel
planes of one buffer). Claimed only next to NPU work, where every NPU reader sees the layout it expects; no byte
moves, so a model's results are the convolutions' own (within 1 LSB of the CPU)."""

from __future__ import annotations

import numpy as np
import pytest
from tflite.BuiltinOperator import BuiltinOperator

from conftest import sim_options
from teflon import targets
from teflon.modelgen import GraphBuilder, QParams, random_inputs
from teflon.netgen import Net
from teflon.reference import compare, run_cpu, run_delegate
from teflon.rocket.views import VIEW_KINDS

# rk3568 runs only the reshapes its encoder writes in place (test_rk3568_reshapes below; docs/hardware/rk3568.md §6)
DEVICES = [t.name for t in targets.of_family("rocket") if t.drivable and t.generation != "rk3568"]


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


def _quantize_between_cpu(h: int, w: int, c: int) -> bytes:
    """uint8 input -> shift-only QUANTIZE to int8 -> x; MUL(x, x) (two maps: on the CPU) -> SUB(x^2, x) (NPU): the
    SUB reads x directly and through the CPU's MUL, so the QUANTIZE is a partition of its own with no job, whose
    output is its input's buffer (Zero-DCE's head)."""
    n = Net(f"quantize-between-cpu-{h}x{w}x{c}", "int8", per_channel=False)
    g: GraphBuilder = n.g
    u = g.tensor("image", (1, h, w, c), "uint8", QParams.make(1 / 255, 0))
    x = g.tensor("input", (1, h, w, c), "int8", QParams.make(1 / 255, -128))
    g.op(BuiltinOperator.QUANTIZE, 1, [u], [x])
    n.probe[x] = np.random.default_rng(1).integers(0, 256, size=(1, h, w, c)) / 255
    return n.build([u], [n.add(n.mul(x, x), x, sub=True)])


def _split_concat(dtype: str) -> bytes:
    """conv -> SPLIT 32 = 16 + 16 -> a conv on each half -> CONCATENATION of the two -> conv: parts read and written
    by the NPU. (A split part is a view of one buffer only: a concatenation copies it in, see _c2f.)"""
    n = Net("views-split-concat", dtype, per_channel=False)  # type: ignore[arg-type]
    x = n.input(8, 8, 8)
    a, b = n.split(n.conv(x, 32, 1), 2)
    y = n.concat([n.conv(b, 16, 3), n.conv(a, 32, 1)])
    return n.build([x], [n.conv(y, 16, 1)])


def _host_parts(dtype: str) -> bytes:
    """CONCATENATION of the graph input (written by the host into the first planes) and a conv of it, read by a
    conv; and a SPLIT whose parts are graph outputs (the host reads each from its planes)."""
    n = Net("views-host-parts", dtype, per_channel=False)  # type: ignore[arg-type]
    x = n.input(6, 6, 16)
    y = n.conv(n.concat([x, n.conv(x, 8, 3)]), 48, 1)
    p, q, r = n.split(y, 3)
    return n.build([x], [p, q, r])


def _unaligned(dtype: str) -> bytes:
    """CONCATENATION whose first part has 24 channels: the second part would not start on a 16-channel plane."""
    n = Net("views-unaligned", dtype, per_channel=False)  # type: ignore[arg-type]
    x = n.input(4, 4, 8)
    return n.build([x], [n.conv(n.concat([n.conv(x, 24, 1), n.conv(x, 16, 1)]), 8, 1)])


def _split_add_concat(dtype: str) -> bytes:
    """conv -> SPLIT 32 = 16 + 16; conv(a) + b, an ADD fused into conv(a) whose operand is the second split part (a
    view: its holder's address plus one plane); the fused output is a CONCATENATION part (written at its plane)."""
    n = Net("views-split-add-concat", dtype, per_channel=False)  # type: ignore[arg-type]
    x = n.input(8, 8, 8)
    a, b = n.split(n.conv(x, 32, 1), 2)
    y = n.concat([n.conv(b, 16, 3), n.add(n.conv(a, 16, 1), b)])
    return n.build([x], [n.conv(y, 16, 1)])


def _c2f(dtype: str) -> bytes:
    """A YOLOv8 C2f-like block: conv -> SPLIT 32 = 16 + 16 -> conv on the second half -> CONCATENATION of both halves
    and the conv's output -> conv. The split parts are views of the split's buffer, so the concatenation copies them
    into its own planes (1x1 depthwise copies, exact) and takes the conv's output as a view."""
    n = Net("views-c2f", dtype, per_channel=False)  # type: ignore[arg-type]
    x = n.input(8, 8, 8)
    a, b = n.split(n.conv(x, 32, 1), 2)
    y = n.concat([a, b, n.conv(b, 16, 3)])
    # a second concatenation copying parts of different shapes (16 and 32 channels): one copy each, no shared streams
    p, q = n.split(n.conv(x, 64, 1), 2)
    z = n.concat([a, p])
    return n.build([x], [n.conv(y, 16, 1), n.conv(z, 16, 1), n.conv(q, 8, 1)])


def _slices(dtype: str) -> bytes:
    """conv -> SLICE of channels 16..39 and STRIDED_SLICE of channels 0..15 (views at their planes) -> a conv each ->
    CONCATENATION; and a SLICE from channel 8 (not a plane start: on the CPU)."""
    n = Net("views-slices", dtype, per_channel=False)  # type: ignore[arg-type]
    x = n.input(8, 8, 8)
    t = n.conv(x, 48, 1)
    a, b = n.channels(t, 16, 24), n.channels(t, 0, 16, strided=True)
    y = n.concat([n.conv(b, 16, 3), n.conv(a, 16, 1)])
    return n.build([x], [n.conv(y, 16, 1), n.conv(n.channels(t, 8, 8), 8, 1)])


CASES = {
    "slices": (_slices, {"SLICE": True, "STRIDED_SLICE": True, "CONCATENATION": True}),
    "c2f-split-copied-into-concat": (_c2f, {"SPLIT": True, "CONCATENATION": True}),
    "split-add-concat": (_split_add_concat, {"SPLIT": True, "CONCATENATION": True, "ADD": True}),
    "split-concat": (_split_concat, {"SPLIT": True, "CONCATENATION": True}),
    "host-parts": (_host_parts, {"SPLIT": True, "CONCATENATION": True}),
    "concat-unaligned": (_unaligned, {"CONCATENATION": False}),
    "conv-reshape-out": (_conv_reshape, {"RESHAPE": True}),
    "classifier-reshape-conv": (_classifier, {"RESHAPE": True}),
    "conv-reshape-relayout": (_relayout, {"RESHAPE": False}),
}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", ["uint8", "int8"])
@pytest.mark.parametrize("case", list(CASES))
def test_views(case: str, dtype: str, device: str, delegate_library: None, monkeypatch: pytest.MonkeyPatch) -> None:
    build, expect = CASES[case]
    _check(build(dtype), device, expect, monkeypatch)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(("shift", "claimed"), [(-128, True), (-120, False)], ids=["shift-only", "requantize"])
def test_quantize_u8_to_i8(shift: int, claimed: bool, device: str, delegate_library: None,
                           monkeypatch: pytest.MonkeyPatch) -> None:
    _check(_quantize_input(shift), device, {"QUANTIZE": claimed}, monkeypatch)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shape", [(4, 6, 3), (5, 7, 16)], ids=lambda s: "in{}x{}x{}".format(*s))
def test_quantize_view_partition_alone(shape: tuple[int, int, int], device: str, delegate_library: None) -> None:
    """A shift-only QUANTIZE whose partition holds no job still hands its input back (the input is uploaded although
    no job reads it: an output binding does)."""
    model = _quantize_between_cpu(*shape)
    x = random_inputs(model)
    run = run_delegate(model, x, **sim_options(device))
    cmp = compare(run_cpu(model, x), run.outputs)
    print(f"{device}: {cmp}; {len(run.delegated)}/{len(run.ops)} nodes in {run.partitions} partition(s); "
          f"CPU: {run.reasons}")
    assert set(run.nodes_of("QUANTIZE")) <= run.delegated and set(run.nodes_of("SUB")) <= run.delegated
    assert run.partitions == 2, run.partitions
    assert cmp.within(1, 0.995), str(cmp)


def _without_views(monkeypatch: pytest.MonkeyPatch, model: bytes, x: list[np.ndarray], device: str) -> list[np.ndarray]:
    """The delegate's outputs with every view node left to the CPU (each convolution then reads and writes buffers
    of its own, the host moves the bytes)."""
    from teflon.rocket.rk3576 import support as s76
    from teflon.rocket.rk3588 import support as s88

    def refuse(graph, decisions, host_written=frozenset()):  # type: ignore[no-untyped-def]
        return {op.index: (False, "views off (test)") for op in graph.operations if op.kind in VIEW_KINDS}

    with monkeypatch.context() as m:
        m.setattr(s88, "claims", refuse)
        m.setattr(s76, "claims", refuse)
        return run_delegate(model, x, **sim_options(device)).outputs


def _check(model: bytes, device: str, expect: dict[str, bool], monkeypatch: pytest.MonkeyPatch) -> None:
    """The view nodes claimed as `expect` says, every convolution delegated, and the outputs byte-identical to a run
    with the view nodes on the CPU (a view moves no byte); the comparison with the CPU is printed."""
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
    assert cmp.within_model_lsb >= 0.995, str(cmp)
    plain = _without_views(monkeypatch, model, x, device)
    same = compare(plain, run.outputs)
    assert same.max_abs_diff == 0, f"views change the results: {same}"


RK3568_CASES = ("conv-reshape-out", "classifier-reshape-conv", "conv-reshape-relayout")


@pytest.mark.parametrize("dtype", ["uint8", "int8"])
@pytest.mark.parametrize("case", RK3568_CASES)
def test_rk3568_reshapes(case: str, dtype: str, delegate_library: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """rk3568 has no views, but a RESHAPE / SQUEEZE that keeps the channels and the pixels of a tensor one of its
    operations writes for it alone is that operation's output (rocket/rk3568 `aliased`): claimed in the same cases as
    rk3588's aliases, and byte-identical to the run that leaves it on the CPU."""
    from teflon.rocket.rk3568 import support

    build, expect = CASES[case]
    model = build(dtype)
    x = random_inputs(model)
    run = run_delegate(model, x, device="rk3568", sim="1")
    cmp = compare(run_cpu(model, x), run.outputs)
    print(f"rk3568: {cmp}; {len(run.delegated)}/{len(run.ops)} nodes in {run.partitions} partition(s)")
    taken = [i for i in run.nodes_of("RESHAPE") if i in run.delegated]
    assert bool(taken) == expect["RESHAPE"], run.reasons
    assert not run.undelegated("CONV_2D"), run.reasons
    assert cmp.within_model_lsb >= 0.995, str(cmp)
    with monkeypatch.context() as m:
        m.setattr(support, "ALIAS_KINDS", ())
        plain = run_delegate(model, x, device="rk3568", sim="1")
    assert not [i for i in plain.nodes_of("RESHAPE") if i in plain.delegated]
    assert compare(plain.outputs, run.outputs).max_abs_diff == 0
