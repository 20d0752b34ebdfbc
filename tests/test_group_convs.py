"""Grouped convolutions (SPLIT -> one CONV_2D per part -> CONCATENATION) merged into one block-diagonal convolution
(teflon.group_convs) on rocket: the whole group runs on the NPU in one partition, with the CPU's numbers."""

from __future__ import annotations

import numpy as np
import pytest

import teflon
from teflon import bridge, group_convs, netgen
from teflon.ir import Graph
from teflon.modelgen import random_inputs
from teflon.reference import compare, run_cpu, run_delegate
from teflon.runtime import make_interpreter

DEVICES = ["rk3588", "rk3576"]


def _graph(model: bytes, device: str = "rk3588") -> Graph:
    with bridge.capture() as cap:
        make_interpreter(model, [teflon.load_delegate(device=device, sim="1")], verify=False)
    return cap.support[0][0]


def test_groups_found_and_merged(delegate_library: None) -> None:
    g = _graph(netgen.group_conv("int8"))
    found = group_convs.find(g)
    assert [len(x.convs) for x in found] == [8, 4]
    merged, done = group_convs.rewrite(g, found)
    assert done == found
    kinds = [op.kind for op in merged.operations]
    assert "SPLIT" not in kinds and "CONCATENATION" not in kinds
    for grp in found:
        conv = next(op for op in merged.operations if op.index == grp.concat)
        w = merged.tensors[conv.inputs[1]]
        branch = [g.tensors[next(o for o in g.operations if o.index == n).inputs[1]] for n in grp.convs]
        assert w.shape[0] == sum(b.shape[0] for b in branch) and w.shape[3] == sum(b.shape[3] for b in branch)
        # block diagonal: outside its group an output channel's weights are its zero point (0 for int8)
        oc, ic = branch[0].shape[0], branch[0].shape[3]
        assert np.array_equal(w.data[:oc, :, :, :ic], branch[0].data)
        assert not np.any(w.data[:oc, :, :, ic:])


def test_group_not_merged_when_a_part_is_read_elsewhere(delegate_library: None) -> None:
    n = netgen.Net("group_shared", "int8")
    x = n.input(8, 8, 24)
    parts = n.split(x, 2)
    y = n.concat([n.conv(p, 16, 1) for p in parts])
    g = _graph(n.build([x], [y, n.conv(parts[0], 8, 1)]))
    assert group_convs.find(g) == []


def test_uint8_branches_of_different_weight_quantizations_stay_apart(delegate_library: None) -> None:
    """uint8 convolutions have one weight zero point: branches that differ cannot share one block-diagonal tensor."""
    g = _graph(netgen.group_conv("uint8"))
    found = group_convs.find(g)
    assert found and group_convs.rewrite(g, found)[1] == []


@pytest.mark.parametrize("device", DEVICES)
def test_group_conv_runs_in_one_partition(device: str, delegate_library: None) -> None:
    dtype = "int8"
    model = netgen.group_conv(dtype)
    x = random_inputs(model)
    run = run_delegate(model, x, device=device, sim="1")
    left = [i for i in range(len(run.ops)) if i not in run.delegated]
    assert run.partitions == 1 and not left, run.describe(left)
    for ref, out in zip(run_cpu(model, x), run.outputs, strict=True):
        cmp = compare(ref, out)
        print(f"group_conv-{dtype}-{device}: {cmp}")
        # six convolutions in a row (per-channel int8: TFLite's double rounding, docs/hardware/rocket.md)
        assert cmp.max_abs_diff <= 2 and cmp.within_model_lsb >= 0.995, cmp
