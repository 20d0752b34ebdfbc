"""Benchmark: compile time, simulated NPU invoke time, TFLite CPU time; append a row to docs/PERFORMANCE.md."""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np

from teflon.cli.session import delegate_options, open_interpreter
from teflon.runtime import interpreter_module, make_interpreter

HELP = "time compile, simulated invoke and TFLite CPU invoke; append a row to docs/PERFORMANCE.md"
# The repository's record when run from a checkout (editable install), else ./docs/PERFORMANCE.md.
_CHECKOUT = Path(__file__).resolve().parents[3]
PERF_FILE = (_CHECKOUT if (_CHECKOUT / "meson.build").is_file() else Path.cwd()) / "docs" / "PERFORMANCE.md"
HEADER = (
    "| date | machine | model | device | compile ms (first / warm) | NPU invoke ms | tasks | "
    "CPU builtin ms (tflite_runtime) | CPU default ms (ai_edge_litert) | invoke / builtin | notes |\n"
    "|---|---|---|---|---|---|---|---|---|---|---|\n"
)


def add_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--runs", type=int, default=10, help="timed invocations per configuration (median reported)")
    p.add_argument("--no-record", action="store_true", help="do not append to docs/PERFORMANCE.md")
    p.add_argument("--perf-file", default=str(PERF_FILE))
    p.add_argument("--note", default="", help="free text for the notes column")


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


def cpu_time(model: str, runtime: str, reference: bool, runs: int) -> float | None:
    try:
        interpreter_module(runtime)
    except ImportError:
        return None
    return time_invoke(make_interpreter(model, reference=reference, runtime=runtime), runs)


def program_counters(session: Any) -> dict[str, int]:
    """Tasks (rocket regcmd tasks, etnaviv NN/TP jobs), submits and weight bytes per inference, summed over the
    partitions, and the weight bytes of the same partitions compiled as Mesa would (`--mesa-compat`)."""
    from teflon.cli.regcmd import mesa_compat
    from teflon.compiler import target

    total = {"tasks": 0, "submits": 0, "weight_bytes": 0, "mesa_weight_bytes": 0}
    graph = session.capture.support[0][0] if session.capture.support else None
    for nodes, prog in session.capture.programs:
        t = target(prog.device)
        for k, v in t.counters(prog).items():
            total[k] += v
        if graph is not None:
            total["mesa_weight_bytes"] += t.counters(mesa_compat(graph, nodes, prog))["weight_bytes"]
    return total


def run(args: argparse.Namespace) -> int:
    opts = delegate_options(args)
    first = open_interpreter(args.model, opts, runtime=args.runtime)
    warm = open_interpreter(args.model, opts, runtime=args.runtime)
    counts = program_counters(warm)
    tasks = counts["tasks"]
    partitions = len(warm.capture.programs)
    npu_ms = time_invoke(warm.interpreter, args.runs)
    builtin_ms = cpu_time(args.model, "tflite_runtime", True, args.runs)
    default_ms = cpu_time(args.model, "ai_edge_litert", False, args.runs)

    def fmt(v: float | None) -> str:
        return "n/a" if v is None else f"{v:.1f}"

    ratio = f"{npu_ms / builtin_ms:.2f}" if builtin_ms else "n/a"
    print(f"model: {args.model}")
    print(f"device: {args.device} (sim={args.sim}), {partitions} partition(s), {tasks} tasks (jobs) and "
          f"{counts['submits']} submits per inference")
    weights = f"weights {counts['weight_bytes']} B (mesa-compat {counts['mesa_weight_bytes']} B)"
    print(weights)
    print(f"compile: {first.compile_ms:.1f} ms first (incl. imports), {warm.compile_ms:.1f} ms warm")
    print(f"NPU invoke: {npu_ms:.1f} ms (median of {args.runs})")
    print(f"CPU tflite_runtime builtin: {fmt(builtin_ms)} ms; ai_edge_litert default: {fmt(default_ms)} ms")
    print(f"NPU invoke / CPU builtin: {ratio}")
    if not args.no_record:
        path = Path(args.perf_file)
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists():
            path.write_text("# Performance\n\nRows appended by `python -m teflon bench`.\n\n" + HEADER)
        row = (
            f"| {datetime.date.today().isoformat()} | {machine()} | {Path(args.model).name} | {args.device} | "
            f"{first.compile_ms:.0f} / {warm.compile_ms:.0f} | {npu_ms:.1f} | {tasks} | {fmt(builtin_ms)} | "
            f"{fmt(default_ms)} | {ratio} | {partitions} partition(s), {counts['submits']} submit(s); {weights}"
            f"{'; ' + args.note if args.note else ''} |\n"
        )
        with path.open("a") as f:
            f.write(row)
        print(f"recorded in {path}")
    return 0
