"""Simulated NPU performance counters per partition, node and task, beside the compulsory traffic.

The counters come from the delegate's own runner (teflon.native) running the programs the delegate compiled for
the model, on random input: the simulator counts every byte where a unit reaches device memory (features and
weights read, bias / BS / EW operands read (etnaviv: PWL tables; its bias is part of the coefficient buffer
read as weights), output written) and the MACs of each task. The compulsory traffic
of a layer is what any schedule must move: each weight byte, each input byte and each output byte once (from the
graph's tensors); ratio = moved / compulsory.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from teflon import board
from teflon.cli.session import Session, delegate_options, open_interpreter, sim_mode
from teflon.ir import Graph
from teflon.program import Program

HELP = "print the simulated NPU's per-task counters (bytes read/written, MACs) beside the compulsory traffic"
BYTES = ("feature_rd", "weight_rd", "bias_rd", "data_wr")


def add_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print the profile as JSON")
    p.add_argument("--tasks", action="store_true", help="also print every task's counters")


@dataclass
class Layer:
    """One compiled operation (one or more fused graph nodes) and what its tasks moved."""

    partition: int
    nodes: list[int]
    kind: str
    shape: list[int]
    tasks: list[dict[str, int]]
    moved: dict[str, int]
    compulsory: dict[str, int]  # weights, input, output
    weight_bytes: int  # distinct packed weight bytes of the operation (what one load moves)
    weights_fit: bool | None  # the weights fit the on-chip buffer (None: the family has no such check)

    @property
    def moved_bytes(self) -> int:
        return sum(self.moved[k] for k in BYTES)

    @property
    def compulsory_bytes(self) -> int:
        return sum(self.compulsory.values())

    @property
    def weight_reread(self) -> int:
        """Weight bytes read from DRAM beyond one load of the operation's weights."""
        return max(0, self.moved["weight_rd"] - self.weight_bytes)


@dataclass
class Profile:
    layers: list[Layer] = field(default_factory=list)
    other: list[dict[str, int]] = field(default_factory=list)  # tasks no operation record names
    npu_ns: int = 0  # simulated NPU time of one inference, summed over the partitions (each: first submit to end)
    cores: int = 1  # the delegate option the programs ran with
    loads: list[board.PartitionLoad] = field(default_factory=list)  # per partition, the board estimate's input
    device: str = ""

    def board_estimate(self, stack: board.Stack = board.TEFLON) -> board.Estimate | None:
        """The estimated board time of the partitions (None without a device, or when nothing was counted: a
        real NPU leaves the counters 0)."""
        if not self.device or not any(u.macs or u.bytes for ld in self.loads for u in ld.units):
            return None
        return board.estimate(self.device, self.loads, stack)

    def totals(self) -> dict[str, int]:
        tasks = [t for layer in self.layers for t in layer.tasks] + self.other
        out = {k: sum(t[k] for t in tasks) for k in (*BYTES, "macs")}
        out["moved"] = sum(out[k] for k in BYTES)
        out["compulsory"] = sum(layer.compulsory_bytes for layer in self.layers)
        return out

    def ratio(self) -> float:
        t = self.totals()
        return t["moved"] / t["compulsory"] if t["compulsory"] else 0.0


def _nbytes(graph: Graph, t: int) -> int:
    tensor = graph.tensors[t]
    return int(np.prod(tensor.shape, dtype=np.int64)) * np.dtype(tensor.dtype).itemsize


def compulsory(graph: Graph, nodes: list[int]) -> tuple[dict[str, int], list[int]]:
    """Weights (every constant operand), inputs and outputs of the fused `nodes`, each byte once; and the shape of
    the last output."""
    ops = [op for op in graph.operations if op.index in set(nodes)]
    produced = {t for op in ops for t in op.outputs}
    consumed = {t for op in ops for t in op.inputs}
    ins = {t for op in ops for t in op.inputs if t >= 0 and t not in produced}
    outs = [t for op in ops for t in op.outputs if t not in consumed]
    weights = sum(_nbytes(graph, t) for t in ins if graph.tensors[t].is_constant)
    inputs = sum(_nbytes(graph, t) for t in ins if not graph.tensors[t].is_constant)
    shape = list(graph.tensors[outs[-1]].shape) if outs else []
    return {"weights": weights, "input": inputs, "output": sum(_nbytes(graph, t) for t in outs)}, shape


def weight_bytes(prog: Program, tasks: list[Any]) -> int:
    """Packed weight bytes of the buffers the tasks' relocations point at (`*.weights`): one load's worth."""
    ranges = [(t.buffer, t.offset, t.offset + t.nbytes) for t in tasks]
    names = {r.target for r in prog.relocs if r.target.endswith(".weights")
             and any(r.buffer == b and lo <= r.offset < hi for b, lo, hi in ranges)}
    return sum(len(prog.buffer(n).data or b"") for n in names)


def profile_program(graph: Graph, nodes: list[int], prog: Program, partition: int, sim: bool | None = True,
                    seed: int = 0, cores: int = 1) -> Profile:
    """Run `prog` (compiled for `nodes`) once on random inputs through teflon.native and attribute each task's
    counters to its operation."""
    from teflon import compiler
    from teflon.native import Device, Runner

    rng = np.random.default_rng(seed)
    with Device(prog.device, sim=sim, cores=cores) as dev:
        runner = Runner(dev, prog)
        inputs = {b.tensor: rng.integers(0, 256, size=b.shape, dtype=np.uint8).view(b.dtype)
                  for b in runner.bindings if b.direction == "in"}
        runner.run(inputs)
        counters = runner.task_counters()
        npu_ns, _lanes = runner.npu_time()
        runner.close()
    order = [t for job in prog.jobs for t in job.tasks]
    index = {id(t): i for i, t in enumerate(order)}
    target = compiler.target(prog.device)
    fit_limit = getattr(target, "cbuf_weight_bytes", None)
    limit = fit_limit() if fit_limit else None
    out = Profile(npu_ns=npu_ns, cores=cores, device=prog.device,
                  loads=[board.partition_load(target.counters(prog), counters, prog)])
    named: set[int] = set()
    if not any(op.nodes for op in prog.operations):
        # the family's records name no graph nodes (etnaviv: one command stream for the whole partition): one
        # line for the partition, its compulsory traffic summed node by node
        need = [compulsory(graph, [n])[0] for n in nodes]
        tasks = list(counters)
        named.update(range(len(counters)))
        moved = {k: sum(t[k] for t in tasks) for k in (*BYTES, "macs", "ns")}
        total = {k: sum(n[k] for n in need) for k in ("weights", "input", "output")}
        # the family's own count of its packed weight bytes (etnaviv: the coefficient buffers)
        out.layers.append(Layer(partition, list(nodes), "partition", [], tasks, moved, total,
                                int(target.counters(prog)["weight_bytes"]), None))
    for op in prog.operations if any(op.nodes for op in prog.operations) else []:
        # a task shared by several records counts once, for the first
        ids = [index[id(t)] for t in op.tasks if id(t) in index and index[id(t)] not in named]
        named.update(ids)
        tasks = [counters[i] for i in ids]
        need, shape = compulsory(graph, op.nodes)
        wb = weight_bytes(prog, op.tasks)
        moved = {k: sum(t[k] for t in tasks) for k in (*BYTES, "macs", "ns")}
        out.layers.append(Layer(partition, list(op.nodes), op.kind, shape, tasks, moved, need, wb,
                                None if limit is None else wb <= limit))
    out.other = [c for i, c in enumerate(counters) if i not in named]
    return out


def profile_session(session: Session, sim: bool | None = True) -> Profile:
    """Every partition the delegate compiled for the session's model."""
    graph = session.capture.support[0][0]
    cores = int((session.options or {}).get("cores", "1"))
    out = Profile(cores=cores)
    for k, (nodes, prog) in enumerate(session.capture.programs):
        p = profile_program(graph, nodes, prog, k, sim, cores=cores)
        out.layers += p.layers
        out.other += p.other
        out.npu_ns += p.npu_ns
        out.loads += p.loads
        out.device = p.device
    return out


def _row(cells: list[object]) -> str:
    widths = (4, 14, 24, 16, 10, 10, 10, 10, 12, 12, 6)
    return "  ".join(str(c).rjust(w) for c, w in zip(cells, widths, strict=False))


def print_profile(p: Profile, show_tasks: bool) -> None:
    print(_row(["part", "nodes", "op", "output", "feat rd", "wt rd", "bias rd", "written", "MACs", "compulsory",
                "ratio"]))
    for layer in p.layers:
        nodes = ",".join(map(str, layer.nodes))
        ratio = layer.moved_bytes / layer.compulsory_bytes if layer.compulsory_bytes else 0.0
        m = layer.moved
        flag = f"  weights re-read: {layer.weight_reread} B" if layer.weight_reread and layer.weights_fit else ""
        print(_row([layer.partition, nodes, layer.kind[:24], "x".join(map(str, layer.shape)), m["feature_rd"],
                    m["weight_rd"], m["bias_rd"], m["data_wr"], m["macs"], layer.compulsory_bytes,
                    f"{ratio:.2f}"]) + flag)
        for i, t in enumerate(layer.tasks if show_tasks else []):
            print(_row(["", f"task {i + 1}", "", "", t["feature_rd"], t["weight_rd"], t["bias_rd"], t["data_wr"],
                        t["macs"], "", ""]))
    t = p.totals()
    print(f"total: features read {t['feature_rd']} B, weights read {t['weight_rd']} B, bias/EW read {t['bias_rd']} B, "
          f"written {t['data_wr']} B, MACs {t['macs']}")
    print(f"moved {t['moved']} B, compulsory {t['compulsory']} B, traffic ratio {p.ratio():.3f}")
    if p.npu_ns:
        print(f"simulated NPU time {p.npu_ns / 1e6:.3f} ms per inference on {p.cores} core(s) (the simulator's time "
              "model, docs/hardware/rocket-sim.md)")
    est = p.board_estimate()
    if est is not None:
        print("\n".join(board.format_estimate(est, p.npu_ns / 1e6 if p.npu_ns else None)))
    if all(layer.weights_fit is None for layer in p.layers):
        # etnaviv: no on-chip weight limit is modelled, so nothing says whether a second read was avoidable
        print("layers re-reading weights that fit the on-chip buffer: n/a (no on-chip weight limit for this device)")
        return
    reread = [layer for layer in p.layers if layer.weights_fit and layer.weight_reread]
    print(f"layers re-reading weights that fit the on-chip buffer: {len(reread)}"
          + (" (nodes " + "; ".join(",".join(map(str, layer.nodes)) for layer in reread) + ")" if reread else ""))


def run(args: argparse.Namespace) -> int:
    session = open_interpreter(args.model, delegate_options(args), runtime=args.runtime)
    if not session.partitions:
        print("nothing delegated: the whole model runs on the CPU")
        return 0
    p = profile_session(session, sim_mode(args.sim))
    if args.json:
        est = p.board_estimate()
        board_json = None if est is None else {
            "stack": est.stack, "total_ms": est.total_ms, "bound": est.bound(),
            "partitions": [{**asdict(q), "total_us": q.total_us} for q in est.partitions]}
        print(json.dumps({"layers": [asdict(layer) for layer in p.layers], "other": p.other, "totals": p.totals(),
                          "ratio": p.ratio(), "npu_ns": p.npu_ns, "cores": p.cores, "board": board_json}, indent=1))
    else:
        print(session.describe())
        print_profile(p, args.tasks)
    return 0
