"""Which of a rocket program's jobs share a kernel job (python/teflon/rocket/kernel_jobs.py; docs/hardware/rocket.md
"Kernel jobs"): by default a partition's jobs form one run (one drm_rocket_job per submit), `--mesa-compat` keeps
Mesa's job per operation, and a run stops before it would exceed its share of the kernel's 500 ms job timeout.
The runner's merge itself is checked end to end by every rocket suite (the simulated kernel refuses a BO listed
twice) and by tests/rocket/test_kernel_shim.py::test_partition_is_one_kernel_job (one SUBMIT of one job)."""

from __future__ import annotations

from pathlib import Path

import pytest

from teflon import board
from teflon.program import Buffer, Job, Program, Task
from teflon.rocket.kernel_jobs import JOB_TIMEOUT_MS, TIMEOUT_SHARE, join_jobs

DEVICES = ("rk3588", "rk3576", "rk3568")


@pytest.mark.parametrize("device", DEVICES)
def test_model_partition_is_one_run(device: str, shared_dir: Path, delegate_library: None) -> None:
    import program_digest as pd

    model = (shared_dir / "models" / "mobilenet_v2_1.0_224_quant.tflite").read_bytes()
    programs = pd.delegate_programs(model, device)
    assert programs
    for _, prog in programs:
        assert len(prog.jobs) > 20
        assert [j.join for j in prog.jobs] == [False] + [True] * (len(prog.jobs) - 1)


def test_mesa_compat_keeps_a_job_per_operation(delegate_library: None) -> None:
    import program_digest as pd
    from teflon import compiler

    graphs = list(pd.golden_graphs())
    if not graphs:
        pytest.skip("../shared not found")
    _, graph = graphs[0]
    prog = compiler.compile(graph, [0], [0], [3], "rk3588", mesa_compat=True)
    assert not any(j.join for j in prog.jobs)


def _program(ntasks: list[int]) -> Program:
    prog = Program(device="rk3576")
    for k, n in enumerate(ntasks):
        prog.add_buffer(Buffer(f"op{k}.regcmd", 1088 * n, b"\0" * 8))
    prog.jobs = [Job([Task(f"op{k}.regcmd", 1088 * i, 1040) for i in range(n)], [], []) for k, n in enumerate(ntasks)]
    return prog


@pytest.mark.parametrize("per_job", [1, 100, 300])
def test_run_stays_under_the_job_timeout(per_job: int) -> None:
    """RK3576's per-task completion poll (440 µs): jobs of `per_job` tasks join while their run stays within the
    share of the timeout; a job over it alone keeps a kernel job of its own."""
    task_us = board.table("rk3576").task_us.value
    budget = JOB_TIMEOUT_MS * 1e3 * TIMEOUT_SHARE
    prog = join_jobs(_program([per_job] * 12), "rk3576")
    per_run = max(1, int(budget // (per_job * task_us)))
    assert [j.join for j in prog.jobs] == [k % per_run != 0 for k in range(12)]
    for k in range(12):  # every run's estimate within the budget (a lone job may exceed it)
        run = sum(1 for j in prog.jobs[k - k % per_run:k + 1])
        assert run == 1 or run * per_job * task_us <= budget
