"""NCHW islands (teflon.nchw_islands): the converter's TRANSPOSE sandwiches found, rewritten as NHWC, and left
alone where an NCHW tensor would be seen outside the island. Whole-model numbers: tests/test_netgen.py
(nchw_shufflenet-*)."""

from __future__ import annotations

import numpy as np
import pytest

import teflon
from teflon import bridge, compiler, nchw_islands, netgen
from teflon.ir import Graph
from teflon.netgen import Net
from teflon.runtime import make_interpreter

TO_NCHW, TO_NHWC = (0, 3, 1, 2), (0, 2, 3, 1)


def _graph(model: bytes, device: str = "rk3588") -> Graph:
    with bridge.capture() as cap:
        make_interpreter(model, [teflon.load_delegate(device=device, sim="1")], verify=False)
    return cap.support[0][0]


def test_shufflenet_island_is_rewritten_whole(delegate_library: None) -> None:
    g = _graph(netgen.build("nchw_shufflenet", "uint8"))
    islands = nchw_islands.find(g)
    kinds = {op.index: op.kind for op in g.operations}
    assert len(islands) == 1
    isl = islands[0]
    assert sorted(kinds[n] for n in isl.transposes) == ["TRANSPOSE"] * 6  # 3 entries, 3 exits
    seen = nchw_islands.canonical(g, islands)
    assert [op.kind for op in seen.operations].count("TRANSPOSE") == 0
    # the shuffle became a 1x1 convolution by a permutation matrix: one 1 per output channel
    shuffle = next(op for op in seen.operations if kinds[op.index] == "RESHAPE" and op.kind == "CONV_2D")
    w = seen.tensors[shuffle.inputs[1]].data
    assert w.shape == (32, 1, 1, 32) and (w.reshape(32, 32).sum(axis=1) == 1).all()
    assert sorted(np.argmax(w.reshape(32, 32), axis=1)) == list(range(32))
    # axis parameters follow the layout: CONCATENATION on axis 1 of NCHW is the channel axis of NHWC
    concat = next(op for op in seen.operations if op.kind == "CONCATENATION")
    assert concat.options["axis"] == 3
    pad = next(op for op in seen.operations if op.kind == "PAD")
    assert seen.tensors[pad.inputs[1]].data.tolist() == [[0, 0], [1, 1], [1, 1], [0, 0]]
    decisions = compiler.supported(g, "rk3588")
    assert all(decisions[n][0] and "NCHW island" in decisions[n][1] for n in isl.nodes)


def _tail_model(tail: str) -> bytes:
    n = Net(f"island-{tail}", "uint8")
    t = n.transpose(n.conv(n.input(8, 8, 3), 16, 3, 1), TO_NCHW)
    t = n.add(t, t) if tail == "add" else t
    if tail == "output":  # an NCHW graph output: TFLite's caller reads NCHW bytes
        return n.build(n.inputs, [n.transpose(t, (0, 1, 2, 3))])
    if tail == "reshape":  # a flatten of NCHW depends on the layout
        return n.build(n.inputs, [n.reshape(t, (1, 16 * 8 * 8))])
    return n.build(n.inputs, [n.conv(n.transpose(t, TO_NHWC), 8, 1)])


@pytest.mark.parametrize(("tail", "found"), [("exit", 1), ("add", 1), ("output", 0), ("reshape", 0)],
                         ids=["island-exit", "island-add-exit", "island-nchw-output", "island-nchw-flatten"])
def test_island_only_where_no_nchw_tensor_leaves_it(tail: str, found: int, delegate_library: None) -> None:
    g = _graph(_tail_model(tail))
    assert len(nchw_islands.find(g)) == found


def test_island_split_by_a_cpu_node_is_left_alone(delegate_library: None) -> None:
    g = _graph(netgen.build("nchw_shufflenet", "int8"), "rk3576")
    isl = nchw_islands.find(g)[0]
    claimed = {n for n, d in compiler.target("rk3576").supported(nchw_islands.canonical(g, [isl])).items() if d[0]}
    assert nchw_islands.split_by_cpu(g, isl, claimed | isl.transposes)
    assert not any("NCHW island" in why for _, why in compiler.supported(g, "rk3576").values())
