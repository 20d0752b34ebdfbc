"""A pool / table / element-wise node that would share its partition with no other NPU node stays on the CPU on
etnaviv (teflon.lone.drop_lone_cheap): alone between CPU nodes it would cost a partition's layout
conversions and a CPU <-> NPU round trip for less work than the CPU does in place. The same node as a model of its
own, or next to NPU work, runs on the NPU. Ids: `a311d-logistic-between-muls-u8`."""

from __future__ import annotations

import pytest

from conftest import device_cases
from teflon import targets
from teflon.modelgen import random_inputs
from teflon.netgen import Net
from teflon.reference import compare, run_cpu, run_delegate

DEVICES = [t.name for t in targets.of_family("etnaviv")]


def _between_muls(dtype: str) -> bytes:
    """MUL of two maps (the CPU's on etnaviv) -> LOGISTIC -> MUL of two maps."""
    n = Net("logistic_between_muls", dtype, per_channel=False)  # type: ignore[arg-type]
    a, b = n.input(8, 8, 8), n.input(8, 8, 8)
    return n.build([a, b], [n.mul(n.logistic(n.mul(a, b)), b)])


def _group_between_muls(dtype: str, size: int) -> bytes:
    """MUL of two maps -> `size` cheap nodes (LOGISTIC, ADD of a map, LOGISTIC, ...) -> MUL of two maps."""
    n = Net(f"group{size}_between_muls", dtype, per_channel=False)  # type: ignore[arg-type]
    a, b = n.input(8, 8, 8), n.input(8, 8, 8)
    y = n.mul(a, b)
    for i in range(size):
        y = n.logistic(y) if i % 2 == 0 else n.add(y, b)
    return n.build([a, b], [n.mul(y, b)])


def _alone(dtype: str) -> bytes:
    n = Net("logistic_alone", dtype, per_channel=False)  # type: ignore[arg-type]
    x = n.input(8, 8, 8)
    return n.build([x], [n.logistic(x)])


@pytest.mark.usefixtures("delegate_library")
@pytest.mark.parametrize(("device", "dtype"), device_cases(DEVICES, ["uint8", "int8"]))
def test_lone_node_stays_on_cpu(device: str, dtype: str) -> None:
    model = _between_muls(dtype)
    x = random_inputs(model, seed=0)
    run = run_delegate(model, x, device=device, sim="1")
    assert not run.delegated, run.describe(sorted(run.delegated))
    assert any("alone between CPU nodes" in r for r in run.reasons.values()), run.reasons
    assert compare(run_cpu(model, x), run.outputs).max_abs_diff == 0


@pytest.mark.usefixtures("delegate_library")
@pytest.mark.parametrize(("device", "dtype"), device_cases(DEVICES, ["uint8", "int8"]))
def test_node_alone_in_its_model_runs_on_npu(device: str, dtype: str) -> None:
    model = _alone(dtype)
    run = run_delegate(model, random_inputs(model, seed=0), device=device, sim="1")
    assert run.delegated == frozenset({0})


@pytest.mark.usefixtures("delegate_library")
@pytest.mark.parametrize(("device", "dtype"), device_cases(DEVICES, ["uint8", "int8"]))
def test_lone_pair_stays_on_cpu(device: str, dtype: str) -> None:
    """Two cheap nodes together between CPU nodes (etnaviv's CHEAP_GROUP_LIMIT) stay on the CPU; three run on the
    NPU as one partition."""
    model = _group_between_muls(dtype, 2)
    x = random_inputs(model, seed=0)
    run = run_delegate(model, x, device=device, sim="1")
    assert not run.delegated, run.describe(sorted(run.delegated))
    assert any("in a group of 2 nodes" in r for r in run.reasons.values()), run.reasons
    assert compare(run_cpu(model, x), run.outputs).max_abs_diff == 0
    model = _group_between_muls(dtype, 3)
    run = run_delegate(model, random_inputs(model, seed=0), device=device, sim="1")
    assert len(run.delegated) == 3 and run.partitions == 1, run.describe(sorted(run.delegated))
