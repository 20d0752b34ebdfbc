"""Benchmark: compile time, NPU invoke time, TFLite CPU time; with --record, a row in docs/PERFORMANCE.md."""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from teflon.cli.session import delegate_options, open_interpreter, positive_int
from teflon.runtime import cpu_kernels_label, interpreter_module, make_interpreter

HELP = ("time compile, NPU invoke and TFLite CPU invoke; with --record, append a row to docs/PERFORMANCE.md")
# The repository's record when run from a checkout (editable install), else ./docs/PERFORMANCE.md.
_CHECKOUT = Path(__file__).resolve().parents[3]
PERF_FILE = (_CHECKOUT if (_CHECKOUT / "meson.build").is_file() else Path.cwd()) / "docs" / "PERFORMANCE.md"
HEADER = (
    "| date | machine | model | device | compile ms (first / warm) | NPU invoke ms | tasks | "
    "CPU builtin ms (tflite_runtime) | CPU default ms (ai_edge_litert) | invoke / builtin | CPU threads | "
    "NPU bytes moved | compulsory bytes | traffic ratio | notes |\n"
    "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n"
)
NOTHING_DELEGATED = "nothing delegated: the whole model runs on the CPU"


def add_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--runs", type=positive_int, default=10,
                   help="timed invocations per configuration, at least 1 (median reported)")
    p.add_argument("--record", action="store_true", help="append a row to --perf-file (docs/PERFORMANCE.md)")
    p.add_argument("--perf-file", default=str(PERF_FILE), help=f"where --record appends (default {PERF_FILE})")
    p.add_argument("--note", default="", help="free text for the notes column")
    p.add_argument("--cores", type=positive_int, default=None,
                   help="the delegate option cores: NPU cores the programs' independent jobs may be spread over "
                        "(rk3588 1-3, rk3576 1-2; default the delegate's, 1)")
    p.add_argument("--threads", type=positive_int, default=1,
                   help="threads of the TFLite CPU runtimes (the CPU columns and the CPU nodes of the NPU run)")


# Warm compile: the median over this many interpreters built after the first, in the same process. One build is
# a single sample of a shared VM's noise (±50 % between two builds in a row); the median is the figure to compare.
WARM_BUILDS = 5


def warm_compile(args: argparse.Namespace, opts: dict[str, str]) -> tuple[Any, float]:
    """(the last of WARM_BUILDS interpreters built after the first, the median of their compile times in ms)."""
    times = []
    warm = None
    for _ in range(WARM_BUILDS):
        warm = None  # the previous interpreter goes before the next is built, as in a process that reloads a model
        warm = open_interpreter(args.model, opts, runtime=args.runtime, num_threads=args.threads)
        times.append(warm.compile_ms)
    return warm, statistics.median(times)


def time_invoke(interp, runs: int) -> float:
    inp = interp.get_input_details()[0]
    rng = np.random.default_rng(0)
    info = np.iinfo(inp["dtype"]) if np.issubdtype(inp["dtype"], np.integer) else None
    data = (rng.integers(info.min, info.max + 1, size=inp["shape"]) if info else rng.random(inp["shape"]))
    interp.set_tensor(inp["index"], data.astype(inp["dtype"]))
    interp.invoke()  # warm-up
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        interp.invoke()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} cores"


def current_bytecode() -> None:
    """Bring the teflon package's bytecode up to date (only changed modules are compiled). An installed package
    carries its bytecode (pip compiles it at install); an editable install never writes any (meson-python's
    loader does not, nor does Python under PYTHONDONTWRITEBYTECODE), so the first Prepare of every process would
    otherwise include compiling the compiler's source (about 60 ms for MobileNetV2's modules on the bench
    machine), a cost no installed teflon has. A package directory that cannot be written is left as it is."""
    import compileall

    import teflon

    compileall.compile_dir(Path(teflon.__file__).parent, quiet=2)


def cpu_time(model: str, runtime: str, reference: bool, runs: int, threads: int = 1) -> tuple[float, str] | None:
    """Median invoke time on the CPU and what ran it, or None when `runtime` is not installed."""
    try:
        interpreter_module(runtime)
    except ImportError:
        return None
    interp = make_interpreter(model, reference=reference, runtime=runtime, num_threads=threads,
                              verify=False)  # verified once by the CLI entry point
    return time_invoke(interp, runs), cpu_kernels_label(interp, runtime)


# One process building one interpreter with the delegate: the time from Interpreter() to allocate_tensors() done,
# which is the delegate's Prepare (compile, or read the program cache) plus the runtime's own model loading.
_PROCESS = """
import sys, time
import teflon
from teflon.runtime import make_interpreter
model, runtime, opts = sys.argv[1], sys.argv[2] or None, dict(a.split("=", 1) for a in sys.argv[3:])
teflon.verify_model(model)
delegate = teflon.load_delegate(runtime=runtime, **opts)
t0 = time.perf_counter()
make_interpreter(model, [delegate], runtime=runtime, verify=False)
print(f"{(time.perf_counter() - t0) * 1e3:.3f}")
"""


@dataclass(frozen=True)
class ProcessTiming:
    """One fresh process building one interpreter: the construction's wall time, and out of the delegate's debug
    lines the compile part (support decision + each partition's program, compiled or read from the cache) and
    the load part (programs into device memory, the same work either way)."""

    interpreter_ms: float
    compile_ms: float
    load_ms: float


_SUPPORT_MS = re.compile(r"^teflon: support decisions (?:made|read from the cache) in ([\d.]+) ms$", re.MULTILINE)
_PARTITION_MS = re.compile(r"^teflon: partition \d+ \(\d+ nodes\): program .* in ([\d.]+) ms, loaded in ([\d.]+) ms$",
                           re.MULTILINE)


def _process_timing(model: str, opts: dict[str, str], runtime: str | None) -> ProcessTiming:
    cmd = [sys.executable, "-c", _PROCESS, model, runtime or "",
           *(f"{k}={v}" for k, v in {**opts, "debug": "1"}.items())]
    env = {k: v for k, v in os.environ.items() if k != "TEFLON_DEBUG"}
    r = subprocess.run(cmd, check=False, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        raise RuntimeError(f"the compile-timing process failed: {(r.stderr.strip().splitlines() or ['?'])[-1]}")
    parts = [(float(a), float(b)) for a, b in _PARTITION_MS.findall(r.stderr)]
    support = sum(float(v) for v in _SUPPORT_MS.findall(r.stderr))
    return ProcessTiming(float(r.stdout.strip().splitlines()[-1]), support + sum(a for a, _ in parts),
                         sum(b for _, b in parts))


def cache_timing(model: str, opts: dict[str, str], runtime: str | None) -> tuple[ProcessTiming, ProcessTiming]:
    """A fresh process with an empty cache_dir, then the next fresh process, which reads that cache: what a user
    sees on the first and the second start of a model."""
    with tempfile.TemporaryDirectory(prefix="teflon-bench-cache-") as cache:
        cached = {**opts, "cache_dir": cache}
        return _process_timing(model, cached, runtime), _process_timing(model, cached, runtime)


def program_counters(session: Any) -> dict[str, int | None]:
    """Tasks (rocket regcmd tasks, etnaviv NN/TP jobs), kernel jobs, submit ioctls and weight bytes per inference,
    summed over the partitions, and the weight bytes of the same partitions compiled as Mesa would (`--mesa-compat`); None for
    those when a partition holds what Mesa refuses (e.g. etnaviv per-channel weights)."""
    from teflon.cli.regcmd import mesa_compat
    from teflon.compiler import target

    total: dict[str, int] = {"tasks": 0, "jobs": 0, "submits": 0, "weight_bytes": 0}
    mesa: int | None = 0
    graph = session.capture.support[0][0] if session.capture.support else None
    for nodes, prog in session.capture.programs:
        t = target(prog.device)
        for k, v in t.counters(prog).items():
            total[k] = total.get(k, 0) + v
        if graph is not None and mesa is not None:
            try:
                mesa += t.counters(mesa_compat(graph, nodes, prog))["weight_bytes"]
            except ValueError:  # Mesa's choices cannot compile this partition
                mesa = None
    return {**total, "mesa_weight_bytes": mesa}


def fmt(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.1f}"


@dataclass(frozen=True)
class Traffic:
    """One inference's bytes from the simulator's counters (teflon profile), the simulator's own NPU time, and the
    board estimate; "n/a" where the device counts nothing (a real NPU, or a family without simulated counters)."""

    moved: str
    compulsory: str
    ratio: str
    sim_ms: str
    board: Any  # teflon.board.Estimate, or None


def traffic(session: Any, sim: str) -> Traffic:
    from teflon.cli.profile import profile_session
    from teflon.cli.session import sim_mode

    p = profile_session(session, sim_mode(sim))
    t = p.totals()
    npu = f"{p.npu_ns / 1e6:.3f}" if p.npu_ns else "n/a"
    est = p.board_estimate()  # None on a real NPU: it counts nothing to estimate from
    if not t["moved"]:
        return Traffic("n/a", str(t["compulsory"]), "n/a", npu, est)
    return Traffic(str(t["moved"]), str(t["compulsory"]), f"{t['moved'] / t['compulsory']:.3f}", npu, est)


def _append_row(path: Path, row: str) -> None:
    """Append `row` under the current HEADER: a file whose last table has another header (older columns) gets a
    new table, so every row lines up with its own header."""
    if not path.exists():
        path.write_text("# Performance\n\nRows appended by `python -m teflon bench --record`.\n\n" + HEADER)
    headers = [line for line in path.read_text().splitlines() if line.startswith("| date |")]
    with path.open("a") as f:
        if not headers or headers[-1] + "\n" != HEADER.splitlines(keepends=True)[0]:
            f.write("\n" + HEADER)
        f.write(row)


def run(args: argparse.Namespace) -> int:
    current_bytecode()  # the compile timings below are those of an installed package (see current_bytecode)
    opts = delegate_options(args)
    if args.cores is not None:
        opts = {**opts, "cores": str(args.cores)}
    first = open_interpreter(args.model, opts, runtime=args.runtime, num_threads=args.threads)
    warm, warm_ms = warm_compile(args, opts)
    partitions = warm.partitions
    builtin = cpu_time(args.model, "tflite_runtime", True, args.runs, args.threads)
    default = cpu_time(args.model, "ai_edge_litert", False, args.runs, args.threads)
    builtin_ms = builtin[0] if builtin else None
    default_ms = default[0] if default else None
    print(f"model: {args.model}")
    notes: list[str] = []
    if partitions:
        counts = program_counters(warm)
        tasks = str(counts["tasks"])
        devices = ", ".join(sorted({prog.device for _, prog in warm.capture.programs}))
        npu_ms: float | None = time_invoke(warm.interpreter, args.runs)
        cache = cache_timing(args.model, opts, args.runtime)
        mesa = counts["mesa_weight_bytes"]
        weights = (f"weights {counts['weight_bytes']} B (mesa-compat "
                   f"{'n/a: Mesa refuses a partition' if mesa is None else f'{mesa} B'})")
        print(f"device: {devices} ({warm.npu_kind()} NPU), {partitions} partition(s), {tasks} tasks, "
              f"{counts['jobs']} kernel jobs in {counts['submits']} submit ioctl(s) per inference")
        print(weights)
        print(f"compile: {first.compile_ms:.1f} ms first (incl. imports), {warm_ms:.1f} ms warm (median of "
              f"{WARM_BUILDS} interpreters)")
        cold, hot = cache
        print(f"compile in a fresh process: {cold.compile_ms:.1f} ms cold (empty cache), {hot.compile_ms:.1f} ms from "
              f"the cache ({100 * hot.compile_ms / cold.compile_ms:.0f} %); building the interpreter: "
              f"{cold.interpreter_ms:.1f} / {hot.interpreter_ms:.1f} ms (loading the programs into device memory "
              f"{cold.load_ms:.1f} / {hot.load_ms:.1f} ms)")
        print(f"NPU invoke: {npu_ms:.1f} ms (median of {args.runs}; CPU nodes on {warm.cpu_kernels()})")
        tr = traffic(warm, args.sim)
        moved, compulsory, traffic_ratio, npu_sim_ms = tr.moved, tr.compulsory, tr.ratio, tr.sim_ms
        print(f"NPU traffic per inference: {moved} B moved, {compulsory} B compulsory, ratio {traffic_ratio}")
        print(f"simulated NPU time per inference: {npu_sim_ms} ms on {opts.get('cores', '1')} core(s) (the "
              "simulator's time model, not host time)")
        if tr.board is not None:
            from teflon.board import format_estimate

            print("\n".join(format_estimate(tr.board)))
        if opts.get("cores", "1") != "1":
            notes.append(f"cores={opts['cores']}, simulated NPU {npu_sim_ms} ms")
        notes.append(f"{partitions} partition(s), {counts['submits']} submit(s); {weights}")
        if tr.board is not None:
            notes.append(f"board estimate {tr.board.total_ms:.2f} ms ({tr.board.bound()}-bound)")
        notes.append(f"fresh-process compile {cold.compile_ms:.0f} ms cold, {hot.compile_ms:.0f} ms from cache "
                     f"(interpreter {cold.interpreter_ms:.0f} / {hot.interpreter_ms:.0f} ms)")
    else:
        devices, tasks, npu_ms = args.device, "0", None
        moved, compulsory, traffic_ratio = "n/a", "n/a", "n/a"
        print(NOTHING_DELEGATED)
        notes.append(NOTHING_DELEGATED)
    ratio = f"{npu_ms / builtin_ms:.2f}" if npu_ms is not None and builtin_ms else "n/a"
    for result, runtime in ((builtin, "tflite_runtime"), (default, "ai_edge_litert")):
        print(f"CPU {result[1]}: {result[0]:.1f} ms ({args.threads} thread(s))" if result
              else f"CPU {runtime}: not installed")
    if npu_ms is not None:
        print(f"NPU invoke / CPU builtin: {ratio}")
    if args.record:
        path = Path(args.perf_file)
        path.parent.mkdir(parents=True, exist_ok=True)
        if args.note:
            notes.append(args.note)
        compile_ms = f"{first.compile_ms:.0f} / {warm_ms:.0f}"
        row = (
            f"| {datetime.date.today().isoformat()} | {machine()} | {Path(args.model).name} | {devices} | "
            f"{compile_ms} | {fmt(npu_ms)} | {tasks} | {fmt(builtin_ms)} | {fmt(default_ms)} | {ratio} | "
            f"{args.threads} | {moved} | {compulsory} | {traffic_ratio} | {'; '.join(notes)} |\n"
        )
        _append_row(path, row)
        print(f"recorded in {path}")
    return 0
