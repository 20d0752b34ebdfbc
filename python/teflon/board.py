"""Board-latency estimate: what an inference would take on the silicon, from what the compiled programs do.

The simulators execute every byte a board would, but their wall time says nothing about a board. On silicon an
inference costs (docs/hardware/board-model.md):

    per partition:  round trip (CPU <-> NPU: the submit ioctl's return, the fence wait's wake-up, cache
                    maintenance) + host layout conversion of the partition's inputs and outputs
                  + per submit ioctl + per kernel job + per task (kick, completion)
                  + for each counted unit: MACs at the NPU's rate and bytes at the DRAM bandwidth, overlapped

A counted unit is one row of the simulator's counters: a task on rocket (its regcmd task), the whole command
stream on etnaviv and Ethos-U (their simulators count per stream); how much of a unit's MAC and DRAM time
overlap is the table's `overlap` (1: the longer of the two; 0: their sum). MACs are the programmed geometry's (`macs`), or for an engine that skips zero
weights (the `mac_basis` of its table) the MACs whose weight is not the zero point (`macs_nz`).

The constants are data: one `BoardTable` per target in its family's package (`teflon.<family>.board.TABLES`),
each value with its public source or marked inferred / calibrated. `Stack` describes a software stack's counts
(submits, jobs, partitions) when they differ from the compiled program's: the published figures were measured on
Mesa's or the vendor's stack, and the estimate reproduces them with that stack's counts (`PUBLISHED`).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field, replace
from typing import Literal

from . import targets

Kind = Literal["published", "inferred", "calibrated"]


@dataclass(frozen=True)
class Fact:
    """One constant: its value, and where it comes from."""

    value: float
    source: str
    kind: Kind = "published"


@dataclass(frozen=True)
class BoardTable:
    """A target's constants. Rates: MACs per NPU cycle per data type, NPU clock; the fraction of that peak a
    convolution reaches (`mac_efficiency`); DRAM bandwidth as the NPU sees it (GB/s = bytes/ns); fixed costs in
    microseconds."""

    soc: str
    macs_per_cycle: dict[str, Fact]
    clock_mhz: Fact
    mac_efficiency: Fact
    dram_gbps: Fact
    sram_bytes: Fact  # on-chip buffer (rocket CBUF, Vivante VIP SRAM, Ethos-U SRAM): context, not used in the sum
    task_us: Fact
    job_us: Fact
    submit_us: Fact
    partition_us: Fact
    host_copy_gbps: Fact  # CPU layout conversion of a partition's inputs and outputs
    # how much of a unit's MAC and DRAM time overlap: 1 = the longer one alone (a unit is one task: its DMA
    # streams under its MACs), 0 = their sum (a unit that lumps many layers, some MAC-bound, some DRAM-bound)
    overlap: Fact = Fact(1.0, "a unit is one task: its DMA and MACs run concurrently", "inferred")
    mac_basis: Literal["macs", "macs_nz"] = "macs"

    def facts(self) -> dict[str, Fact]:
        out = {f"macs_per_cycle[{k}]": v for k, v in self.macs_per_cycle.items()}
        for name in ("clock_mhz", "mac_efficiency", "dram_gbps", "sram_bytes", "task_us", "job_us", "submit_us",
                     "partition_us", "host_copy_gbps", "overlap"):
            out[name] = getattr(self, name)
        return out

    def macs_per_ns(self, dtype: str = "int8") -> float:
        """Sustained MACs per nanosecond: peak per cycle x clock x efficiency."""
        if dtype not in self.macs_per_cycle:
            raise ValueError(f"{self.soc}: no MAC rate for {dtype} in the board table")
        return self.macs_per_cycle[dtype].value * self.clock_mhz.value / 1e3 * self.mac_efficiency.value


@dataclass(frozen=True)
class Unit:
    """One counted piece of work (a simulator counter row)."""

    macs: int
    bytes: int
    macs_nz: int = 0


@dataclass(frozen=True)
class PartitionLoad:
    """What one partition's program does per inference."""

    units: tuple[Unit, ...]
    tasks: int
    jobs: int  # kernel jobs
    submits: int
    io_bytes: int = 0  # host tensors converted to / from the device layout
    dtype: str = "int8"
    op_jobs: int = -1  # the program's own jobs (rocket: one per operation, or per task; Mesa's kernel jobs); -1: jobs

    @property
    def program_jobs(self) -> int:
        return self.jobs if self.op_jobs < 0 else self.op_jobs


@dataclass(frozen=True)
class Stack:
    """A software stack's counts where they differ from the compiled program's.

    submits / jobs: "compiled" (as the program says), "per_job" (one submit per kernel job), "per_task" (one per
    task), "one" (one per partition); jobs also "per_op" (a kernel job per program job: Mesa's job per operation,
    which the rocket runner merges, docs/hardware/rocket.md "Kernel jobs"). extra_partitions: partitions the stack has beyond the program's (e.g. a
    pool it leaves on the CPU splits the graph), each a round trip and a submit more, its work counted where the
    program has it. `table` overrides
    constants of the target's table (µs values, e.g. another kernel's completion poll), with their sources."""

    name: str
    submits: Literal["compiled", "per_job", "per_task", "one"] = "compiled"
    jobs: Literal["compiled", "per_task", "one", "per_op"] = "compiled"
    extra_partitions: int = 0
    table: dict[str, Fact] = field(default_factory=dict)
    note: str = ""


TEFLON = Stack("teflon", note="the program as compiled")
# item 5's "before": every kernel job submitted by its own ioctl, as the rocket runner did until submits per
# inference became one per partition (docs/PERFORMANCE.md rows of 2026-11-24: 53 submits for 54 jobs); its kernel
# jobs were then the program's jobs, one per operation
SUBMIT_PER_JOB = Stack("submit per job", jobs="per_op", submits="per_job", note="one submit ioctl per kernel job")
# before one kernel job per partition: the program's jobs (one per operation) each a kernel job, one submit
JOB_PER_OP = Stack("a job per operation", jobs="per_op", note="every program job its own kernel job (Mesa's form)")
# every task of a partition in one kernel job (one job's tasks run in order on one core, accel/rocket's SUBMIT takes
# any task count per job): what the rocket runner submits unless a partition outgrows the job timeout's share
JOB_PER_PARTITION = Stack("one job per partition", jobs="one", note="all of a partition's tasks in one kernel job")


@dataclass(frozen=True)
class PartitionEstimate:
    compute_us: float  # the units' MAC and DRAM time, overlapped
    mac_us: float  # MAC time alone (for "what matters")
    dram_us: float  # DRAM time alone
    tasks_us: float
    jobs_us: float
    submits_us: float
    round_trip_us: float  # round trip + host layout conversion

    @property
    def total_us(self) -> float:
        return self.compute_us + self.tasks_us + self.jobs_us + self.submits_us + self.round_trip_us

    @property
    def overhead_us(self) -> float:
        return self.tasks_us + self.jobs_us + self.submits_us + self.round_trip_us


@dataclass(frozen=True)
class Estimate:
    device: str
    stack: str
    partitions: tuple[PartitionEstimate, ...]

    @property
    def total_ms(self) -> float:
        return sum(p.total_us for p in self.partitions) / 1e3

    def share(self) -> dict[str, float]:
        """Fraction of the total per cost: the units' MAC and DRAM time, and each fixed cost."""
        tot = sum(p.total_us for p in self.partitions) or 1.0
        return {"compute+memory": sum(p.compute_us for p in self.partitions) / tot,
                "tasks": sum(p.tasks_us for p in self.partitions) / tot,
                "jobs": sum(p.jobs_us for p in self.partitions) / tot,
                "submits": sum(p.submits_us for p in self.partitions) / tot,
                "round trips": sum(p.round_trip_us for p in self.partitions) / tot}

    def bound(self) -> str:
        """What dominates: 'fixed costs', 'MACs' or 'DRAM'."""
        over = sum(p.overhead_us for p in self.partitions)
        mac = sum(p.mac_us for p in self.partitions)
        dram = sum(p.dram_us for p in self.partitions)
        work = sum(p.compute_us for p in self.partitions)
        if over >= work:
            return "fixed costs"
        return "MACs" if mac >= dram else "DRAM"


def table(device: str) -> BoardTable:
    """The board constants of a registry target (its family's `board.TABLES`)."""
    spec = targets.get(device)
    tables: dict[str, BoardTable] = importlib.import_module(f"teflon.{spec.family}.board").TABLES
    try:
        return tables[device]
    except KeyError:
        raise ValueError(f"no board constants for {device} in teflon.{spec.family}.board") from None


def _count(rule: str, load: PartitionLoad, compiled: int) -> int:
    return {"compiled": compiled, "per_job": load.jobs, "per_task": load.tasks, "one": 1,
            "per_op": load.program_jobs}[rule]


def estimate_partition(t: BoardTable, load: PartitionLoad) -> PartitionEstimate:
    rate = t.macs_per_ns(load.dtype) * 1e3  # MACs per µs
    bw = t.dram_gbps.value * 1e3  # bytes per µs
    mac_us = [(u.macs_nz if t.mac_basis == "macs_nz" else u.macs) / rate for u in load.units]
    dram_us = [u.bytes / bw for u in load.units]
    ov = t.overlap.value
    return PartitionEstimate(
        compute_us=sum(max(m, d) + (1 - ov) * min(m, d) for m, d in zip(mac_us, dram_us, strict=True)),
        mac_us=sum(mac_us),
        dram_us=sum(dram_us), tasks_us=load.tasks * t.task_us.value, jobs_us=load.jobs * t.job_us.value,
        submits_us=load.submits * t.submit_us.value,
        round_trip_us=t.partition_us.value + load.io_bytes / (t.host_copy_gbps.value * 1e3))


def apply_stack(loads: list[PartitionLoad], stack: Stack) -> list[PartitionLoad]:
    """The loads with the stack's counts (extra partitions carry only their round trip)."""
    out = []
    for ld in loads:
        jobs = _count(stack.jobs, ld, ld.jobs)
        ld2 = replace(ld, jobs=jobs)
        out.append(replace(ld2, submits=_count(stack.submits, ld2, ld.submits)))
    split = PartitionLoad((), 0, 0, 1)  # its operations are counted where the program has them: a submit more
    return out + [split] * stack.extra_partitions


def estimate(device: str, loads: list[PartitionLoad], stack: Stack = TEFLON,
             board: BoardTable | None = None) -> Estimate:
    t = board or table(device)
    if stack.table:
        t = replace(t, **stack.table)
    return Estimate(device, stack.name, tuple(estimate_partition(t, ld) for ld in apply_stack(loads, stack)))


# ---- inputs from a compiled model ----------------------------------------------------------------------------


def io_bytes(prog: object) -> int:
    """Host bytes of a program's partition inputs and outputs (each converted once per inference)."""
    return sum(io.h * io.w * io.c for io in getattr(prog, "io", ()))


def partition_load(counts: dict[str, int], rows: list[dict[str, int]], prog: object) -> PartitionLoad:
    """A partition's load from its family's `counters(program)` and the simulator's per-task counter rows."""
    units = tuple(Unit(r["macs"], r["feature_rd"] + r["weight_rd"] + r["bias_rd"] + r["data_wr"],
                       r.get("macs_nz", 0)) for r in rows)
    return PartitionLoad(units, counts["tasks"], counts["jobs"], counts["submits"], io_bytes(prog),
                         op_jobs=counts.get("op_jobs", -1))


def format_estimate(est: Estimate, sim_ms: float | None = None) -> list[str]:
    """Lines for the CLI: per partition and the total, beside the simulator's time where it models one."""
    lines = []
    for i, p in enumerate(est.partitions):
        lines.append(f"  partition {i}: {p.total_us / 1e3:.3f} ms (MACs {p.mac_us / 1e3:.3f}, DRAM "
                     f"{p.dram_us / 1e3:.3f}, overlapped {p.compute_us / 1e3:.3f}; tasks {p.tasks_us / 1e3:.3f}, "
                     f"jobs {p.jobs_us / 1e3:.3f}, submits {p.submits_us / 1e3:.3f}, round trip "
                     f"{p.round_trip_us / 1e3:.3f})")
    sim = f"; simulator's time model {sim_ms:.3f} ms" if sim_ms else ""
    share = ", ".join(f"{k} {100 * v:.0f} %" for k, v in est.share().items())
    lines.insert(0, f"estimated board time ({est.device}, {est.stack} stack; docs/hardware/board-model.md): "
                    f"{est.total_ms:.3f} ms per inference ({est.bound()}-bound: {share}){sim}")
    return lines


# ---- the published figures and the stacks they were measured on -------------------------------------------------

# Mesa Teflon (docs/teflon.rst): one submit per partition, its jobs per operation, and AVERAGE_POOL_2D left on the
# CPU by both its etnaviv and its rocket driver, so MobileNets run as two partitions (the pool splits off the
# logits convolution) where teflon's program has one.
MESA_POOL_ON_CPU = Stack("Mesa (pool on the CPU)", jobs="per_op", extra_partitions=1,
                         note="Mesa's counts: one submit per partition, a job per operation; AVERAGE_POOL_2D on the "
                              "CPU adds a partition")
MESA = Stack("Mesa", jobs="per_op", note="Mesa's counts equal the program's (same partitions, one submit each, a job "
                                         "per operation)")
# The vendor stacks (RKNN) chain every task of a model in one job: the PC walks the task list and interrupts once.
_CHAIN = Fact(2.0, "chained task: the PC fetches the next task's registers itself, one interrupt per job "
                   "(vendor submit, rk356x.md §2 [RELOG] static analysis)", "inferred")
_VENDOR_JOB = Fact(50.0, "vendor rknpu driver: one job committed straight to the PC, one interrupt (no drm_sched, "
                         "no per-job IOMMU attach)", "inferred")
RKNN = Stack("RKNN (one chained job)", jobs="one", submits="one", table={"task_us": _CHAIN, "job_us": _VENDOR_JOB},
             note="whole model one job of chained tasks, one submit")
RKNN_RK3576 = Stack("RKNN (one chained job)", jobs="one", submits="one",
                    table={"task_us": _CHAIN,
                           "job_us": Fact(440.0, "one completion poll + DPU retire per job [R76-GREG]")},
                    note="whole model one job of chained tasks; one completion poll")
IAV_CHAIN_800 = Stack("IAV fork (one chained job, 800 MHz)", jobs="one", submits="one",
                      table={"task_us": _CHAIN, "clock_mhz": Fact(800, "IAV runs the NPU at 800 MHz ([RELOG] T67)")},
                      note="single-interrupt whole-graph job (IAV kernel module last_int_mask)")
IAV_PER_OP_600 = Stack("IAV fork (a submit per op, 600 MHz)", jobs="per_op", submits="per_job",
                       table={"clock_mhz": Fact(600, "[RELOG] T50 at 600 MHz")},
                       note="per-op jobs, each its own submit")
RK3576_BRINGUP = Stack(
    "RK3576 bring-up kernel (a job per task, 1 ms poll)", jobs="per_task", submits="per_task",
    table={"task_us": Fact(1250.0, "stock 1 ms hrtimer completion poll: 1.1-1.4 ms per submit floor [R76-GREG] "
                                   "(rocket.md §7.3)"),
           "job_us": Fact(650.0, "calibrated: the rest of the log's 1.9 ms per job: per-job IOMMU attach/detach "
                                 "with a raw MMU reset ([R76-BLOG] S19)", "calibrated")},
    note="every task its own job and submit; the log's jobs computed nothing (all-zero output)")


@dataclass(frozen=True)
class Published:
    """A published inference time and what it was measured on."""

    device: str
    model: Literal["mobilenet_v1", "mobilenet_v2"]  # 1.0/224 uint8 (netgen's MobileNetV1; the shared V2 file)
    stack: Stack
    low_ms: float
    high_ms: float
    source: str
    note: str = ""


PUBLISHED: tuple[Published, ...] = (
    Published("a311d", "mobilenet_v1", MESA, 6.6, 6.6, "Mesa docs/teflon.rst (peers-2026.md §4a)"),
    Published("a311d", "mobilenet_v2", MESA, 6.9, 6.9, "Mesa docs/teflon.rst"),
    Published("a311d", "mobilenet_v1", MESA, 6.42, 6.42, "VeriSilicon vx-delegate, TIM-VX issue #121",
              "vendor stack, modelled with Mesa's counts"),
    Published("imx8mp", "mobilenet_v1", MESA_POOL_ON_CPU, 7.9, 7.9, "Mesa docs/teflon.rst"),
    Published("imx8mp", "mobilenet_v2", MESA_POOL_ON_CPU, 8.0, 8.0, "Mesa docs/teflon.rst"),
    Published("rk3588", "mobilenet_v1", MESA_POOL_ON_CPU, 10.68, 11.18,
              "Mesa 26.0.2 on Linux 6.18, min / avg (widgetii BENCHMARKS.md, peers-2026.md §4a)"),
    Published("rk3588", "mobilenet_v1", MESA_POOL_ON_CPU, 18.0, 18.0, "Mesa docs/teflon.rst",
              "an older Mesa than the 11.2 ms figure"),
    Published("rk3588", "mobilenet_v2", MESA_POOL_ON_CPU, 21.0, 21.0, "Mesa docs/teflon.rst",
              "the same older Mesa as its MobileNetV1 18 ms"),
    Published("rk3588", "mobilenet_v1", RKNN, 1.98, 2.87,
              "RKNN 1 core (widgetii README 1.98-2.6 ms; openrknn benchmarks.md 2.87 ms)"),
    Published("rk3588", "mobilenet_v2", RKNN, 2.22, 2.31, "RKNN model zoo, 1 core: 433.0-450.7 FPS"),
    Published("rk3576", "mobilenet_v2", RKNN_RK3576, 2.21, 2.21, "RKNN model zoo v2.0.0, 1 core: 452.3 FPS"),
    Published("rk3576", "mobilenet_v1", RK3576_BRINGUP, 79.2, 79.8,
              "RK3576 bring-up log: 252 jobs of ~1.9 ms = 6 runs in ~475 ms (rocket.md §6.1 S1, §7.3)",
              "42 jobs per run in the log, teflon's program has fewer tasks; the log's NPU computed nothing"),
    Published("rk3568", "mobilenet_v2", RKNN, 5.07, 5.5, "RKNN model zoo, RK3566/68: 197.4 / 180.7 FPS"),
    Published("rk3568", "mobilenet_v1", IAV_CHAIN_800, 5.4, 5.6, "IAV Mesa fork, [RELOG] T67 / T78 (rk356x.md §7)"),
    Published("rk3568", "mobilenet_v1", IAV_PER_OP_600, 9.0, 9.0, "IAV Mesa fork, [RELOG] T50 (rk356x.md §7)"),
    Published("rk3568", "mobilenet_v2", IAV_CHAIN_800, 6.3, 6.4, "IAV Mesa fork, [RELOG] T77 / T78"),
)
