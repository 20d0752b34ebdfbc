"""The board-latency model's arithmetic (teflon.board), not its accuracy: hand-computed small cases, the stacks'
count rules, monotonicity in every input and constant, every registry target's table complete with sources, and
the estimate `profile` prints for a compiled convolution.
Ids: `overlap-1`, `rk3588-conv2d-in8x8x16-oc32-k3-s1-same-u8`.
"""

from __future__ import annotations

import json
from dataclasses import fields, replace

import pytest

from teflon import board, targets
from teflon.board import BoardTable, Fact, PartitionLoad, Stack, Unit
from teflon.cli import main
from teflon.modelgen import ConvCase


def _table(**kw: object) -> BoardTable:
    """Round numbers: 100 MACs/cycle x 1000 MHz x 0.5 = 50 MACs/ns; 2 bytes/ns; fixed costs 1/10/100/1000 µs."""
    base = BoardTable(
        soc="test", macs_per_cycle={"int8": Fact(100, "test")}, clock_mhz=Fact(1000, "test"),
        mac_efficiency=Fact(0.5, "test"), dram_gbps=Fact(2.0, "test"), sram_bytes=Fact(1024, "test"),
        task_us=Fact(1.0, "test"), job_us=Fact(10.0, "test"), submit_us=Fact(100.0, "test"),
        partition_us=Fact(1000.0, "test"), host_copy_gbps=Fact(1.0, "test"))
    return replace(base, **kw)  # type: ignore[arg-type]


# 50 000 MACs = 1 µs at 50 MACs/ns; 6 000 bytes = 3 µs at 2 bytes/ns; 3 000 I/O bytes = 3 µs at 1 GB/s
LOAD = PartitionLoad((Unit(macs=50_000, bytes=6_000, macs_nz=25_000), Unit(macs=200_000, bytes=2_000)),
                     tasks=4, jobs=2, submits=1, io_bytes=3_000)


@pytest.mark.parametrize("overlap, compute", [(1.0, 3.0 + 4.0), (0.0, 4.0 + 5.0), (0.5, 3.5 + 4.5)],
                         ids=["overlap-1", "overlap-0", "overlap-0.5"])
def test_hand_computed_partition(overlap: float, compute: float) -> None:
    t = _table(overlap=Fact(overlap, "test"))
    p = board.estimate("rk3588", [LOAD], board=t).partitions[0]
    # unit 1: MACs 1 µs, DRAM 3 µs; unit 2: MACs 4 µs, DRAM 1 µs
    assert p.mac_us == pytest.approx(5.0) and p.dram_us == pytest.approx(4.0)
    assert p.compute_us == pytest.approx(compute)
    assert (p.tasks_us, p.jobs_us, p.submits_us) == pytest.approx((4.0, 20.0, 100.0))
    assert p.round_trip_us == pytest.approx(1003.0)
    assert p.total_us == pytest.approx(compute + 4 + 20 + 100 + 1003)


def test_nonzero_mac_basis() -> None:
    t = _table(mac_basis="macs_nz")
    p = board.estimate("a311d", [LOAD], board=t).partitions[0]
    assert p.mac_us == pytest.approx(25_000 / 50_000)  # the second unit counts no non-zero MACs


@pytest.mark.parametrize("stack, counts", [
    (board.TEFLON, (4, 2, 1)), (board.SUBMIT_PER_JOB, (4, 2, 2)), (Stack("t", submits="per_task"), (4, 2, 4)),
    (Stack("t", jobs="per_task", submits="per_job"), (4, 4, 4)), (board.JOB_PER_PARTITION, (4, 1, 1)),
], ids=["compiled", "submit-per-job", "submit-per-task", "job-and-submit-per-task", "one-job"])
def test_stack_counts(stack: Stack, counts: tuple[int, int, int]) -> None:
    (ld,) = board.apply_stack([LOAD], stack)
    assert (ld.tasks, ld.jobs, ld.submits) == counts and ld.units == LOAD.units


def test_extra_partitions_and_table_overrides() -> None:
    t = _table()
    stack = Stack("t", extra_partitions=2, table={"task_us": Fact(3.0, "test")})
    est = board.estimate("rk3588", [LOAD], stack, board=t)
    base = board.estimate("rk3588", [LOAD], board=t)
    # each extra partition: its round trip and one submit (its operations are counted in the program's)
    assert len(est.partitions) == 3 and est.partitions[1].total_us == pytest.approx(1000.0 + 100.0)
    assert est.total_ms * 1e3 == pytest.approx(base.total_ms * 1e3 + 2 * 1100.0 + 4 * (3.0 - 1.0))


@pytest.mark.parametrize("what", ["macs", "bytes", "tasks", "jobs", "submits", "io_bytes"])
def test_more_work_never_costs_less(what: str) -> None:
    t = _table(overlap=Fact(1.0, "test"))
    if what in ("macs", "bytes"):
        more = replace(LOAD, units=tuple(replace(u, **{what: getattr(u, what) * 3}) for u in LOAD.units))
    else:
        more = replace(LOAD, **{what: getattr(LOAD, what) * 3})
    a = board.estimate("rk3588", [LOAD], board=t).total_ms
    b = board.estimate("rk3588", [more], board=t).total_ms
    assert b >= a and (b > a or what in ("macs",))  # unit 1 is DRAM-bound: its MACs can hide


@pytest.mark.parametrize("name", ["clock_mhz", "mac_efficiency", "dram_gbps", "host_copy_gbps"])
def test_faster_hardware_never_costs_more(name: str) -> None:
    t = _table()
    faster = replace(t, **{name: Fact(getattr(t, name).value * 2, "test")})
    assert board.estimate("rk3588", [LOAD], board=faster).total_ms < board.estimate("rk3588", [LOAD], board=t).total_ms


def test_every_target_has_a_complete_table() -> None:
    for name in targets.names():
        t = board.table(name)
        assert t.soc in (name, "rk3568"), name  # rk3566 shares rk3568's NPU
        assert "int8" in t.macs_per_cycle and t.mac_basis in ("macs", "macs_nz")
        facts = t.facts()
        assert set(facts) >= {f.name for f in fields(BoardTable) if f.name not in ("soc", "macs_per_cycle",
                                                                                  "mac_basis")}
        for key, fact in facts.items():
            assert fact.source.strip() and fact.kind in ("published", "inferred", "calibrated"), (name, key)
            assert fact.value >= 0, (name, key)
        for rate in ("clock_mhz", "mac_efficiency", "dram_gbps", "host_copy_gbps"):
            assert getattr(t, rate).value > 0, (name, rate)
        assert 0 < t.mac_efficiency.value <= 1 and 0 <= t.overlap.value <= 1


def test_published_figures_name_targets_and_constants() -> None:
    keys = {f.name for f in fields(BoardTable)}
    for pub in board.PUBLISHED:
        targets.get(pub.device)
        assert 0 < pub.low_ms <= pub.high_ms and pub.source
        assert set(pub.stack.table) <= keys, pub.stack.name


def test_table_lookup_of_an_unknown_device_or_type() -> None:
    with pytest.raises(ValueError, match="unknown device"):
        board.table("nosuch")
    with pytest.raises(ValueError, match="no MAC rate for int16"):
        board.estimate("rk3588", [replace(LOAD, dtype="int16")], board=_table())


def test_partition_load_from_counter_rows() -> None:
    rows = [{"feature_rd": 1, "weight_rd": 2, "bias_rd": 3, "data_wr": 4, "macs": 10, "macs_nz": 7},
            {"feature_rd": 5, "weight_rd": 0, "bias_rd": 0, "data_wr": 5, "macs": 20}]
    ld = board.partition_load({"tasks": 2, "jobs": 1, "submits": 1}, rows, object())
    assert ld.units == (Unit(10, 10, 7), Unit(20, 10, 0)) and (ld.tasks, ld.jobs, ld.submits, ld.io_bytes) == (
        2, 1, 1, 0)


@pytest.mark.usefixtures("delegate_library")
@pytest.mark.parametrize("device", ["rk3588", "a311d"])
def test_profile_estimates_a_compiled_convolution(device: str, capsys: pytest.CaptureFixture[str],
                                                   tmp_path: object) -> None:
    from pathlib import Path

    case = ConvCase("conv2d", 8, 8, 16, 32, 3, 1, "same")
    model = Path(str(tmp_path)) / f"{case.name}.tflite"
    model.write_bytes(case.build())
    assert main(["profile", "--model", str(model), "--device", device, "--sim", "1"]) == 0
    out = capsys.readouterr().out
    assert f"estimated board time ({device}, teflon stack;" in out and "  partition 0:" in out, out
    assert main(["profile", "--model", str(model), "--device", device, "--sim", "1", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)["board"]
    assert doc["stack"] == "teflon" and len(doc["partitions"]) == 1
    assert doc["total_ms"] == pytest.approx(doc["partitions"][0]["total_us"] / 1e3) and doc["total_ms"] > 0


def test_board_constants_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["board", "--constants"]) == 0
    out = capsys.readouterr().out
    for name in targets.names():
        assert f"| {name} |" in out
