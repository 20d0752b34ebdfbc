"""Which of a rocket program's jobs share a kernel job (`Job.join`; docs/hardware/rocket.md "Kernel jobs").

The program's jobs stay what the encoders make them (one per operation, or one per task where weights stream:
Mesa's form, the units the runner levels over cores). accel/rocket runs a job's tasks in order on one core and
pays its per-job costs (scheduler run, fence, IOMMU attach/detach, runtime PM) once per job, so the runner submits
each run of joined jobs as one kernel job. A run ends where it would exceed a share of the kernel's job timeout by
the board estimate (drm_sched times out a whole job, not a task): a partition too long for one job takes several.
`--mesa-compat` keeps Mesa's job per operation.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..program import Job, Program

# accel/rocket rocket_job.c JOB_TIMEOUT_MS: drm_sched's timeout for one job, after which the core is reset
JOB_TIMEOUT_MS = 500
# a kernel job is estimated at no more than this share of the timeout (the estimate is a guide to ~20 %, the
# constants are effective values: docs/hardware/board-model.md §6)
TIMEOUT_SHARE = 0.25


def _estimates_us(prog: Program, device: str) -> list[float]:
    """Each job's board estimate: its tasks' fixed cost, its share of its operation's MACs, and the bytes of the
    buffers it lists and of its operation's weights, each at the target's rate."""
    from .. import board

    t = board.table(device)
    sizes = {b.name: b.size for b in prog.buffers}
    op_of = {id(task): op for op in prog.operations for task in op.tasks}
    out = []
    for job in prog.jobs:
        macs = 0.0
        weights = set()
        for task in job.tasks:
            op = op_of.get(id(task))
            if op is not None and op.tasks:
                macs += float(op.info.get("macs", 0) or 0) / len(op.tasks)  # type: ignore[arg-type]
            weights.add(task.buffer.removesuffix(".regcmd") + ".weights")
        nbytes = sum(sizes.get(n, 0) for n in {*job.in_buffers, *job.out_buffers, *weights})
        out.append(len(job.tasks) * t.task_us.value + macs / t.macs_per_ns() / 1e3 + nbytes / t.dram_gbps.value / 1e3)
    return out


def join_jobs(prog: Program, device: str, mesa_compat: bool = False) -> Program:
    """Marks each job that joins the kernel job before it (in place; returns `prog`)."""
    jobs: list[Job] = prog.jobs
    if mesa_compat or len(jobs) < 2:
        return prog
    try:
        estimates = _estimates_us(prog, device)
    except ValueError:  # no board constants for the target: no estimate to bound a run by, keep a job per operation
        return prog
    budget = JOB_TIMEOUT_MS * 1e3 * TIMEOUT_SHARE
    run = 0.0
    for i, (job, us) in enumerate(zip(jobs, estimates)):
        job.join = i > 0 and run + us <= budget
        run = run + us if job.join else us
    return prog
