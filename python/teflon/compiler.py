"""Device -> its family's target: which nodes it claims, compiling a partition into a Program, showing one.

The target registry (teflon.targets) names each device's family; the family package `teflon.<family>` exposes
`target(name)` (docs/architecture.md, "Adding a family"). Nothing here knows a family or an SoC.
"""

from __future__ import annotations

import importlib
from typing import Any

from teflon import nchw_islands, targets
from teflon.ir import Graph, memo
from teflon.program import Program

# Rounds of dropping the NCHW islands a family does not claim whole (each round re-decides on a graph with fewer
# islands; real models settle in one or two).
_ISLAND_ROUNDS = 4


class CompilerUnavailable(RuntimeError):
    """The family backend for a device cannot be imported (not written yet, or broken)."""


def family(device: str) -> str:
    return targets.get(device).family


def target(device: str) -> Any:
    """The family's target object for `device` (raises ValueError for an unknown device)."""
    name = family(device)
    try:
        module = importlib.import_module(f"teflon.{name}")
    except ImportError as exc:
        raise CompilerUnavailable(f"{name} compiler unavailable ({exc})") from exc
    if not callable(getattr(module, "target", None)):
        raise CompilerUnavailable(f"{name} compiler unavailable (teflon.{name} has no target())")
    return module.target(device)


def _islands(graph: Graph, device: str, tgt: Any) -> tuple[Graph, list[nchw_islands.Island], dict]:
    """(the graph the family sees, the NCHW islands rewritten in it, the family's decisions on it): every island
    the family claims whole is rewritten (teflon.nchw_islands), the others stay as the converter wrote them."""
    def compute() -> tuple[Graph, list[nchw_islands.Island], dict]:
        chosen = [] if not getattr(tgt, "nchw_islands", False) else [
            i for i in nchw_islands.find(graph) if nchw_islands.usable(graph, i) is None]
        for _ in range(_ISLAND_ROUNDS):
            seen = nchw_islands.canonical(graph, chosen) if chosen else graph
            decisions = tgt.supported(seen)
            claimed = {n for n, d in decisions.items() if d[0]} | {n for i in chosen for n in i.transposes}
            whole = [i for i in chosen if all(decisions.get(n, (True, ""))[0] for n in i.nodes)
                     and not nchw_islands.split_by_cpu(graph, i, claimed)]
            if len(whole) == len(chosen):
                return seen, chosen, decisions
            chosen = whole
        return graph, [], tgt.supported(graph)

    return memo(graph, (__name__, "islands", device), compute)


def supported(graph: Graph, device: str) -> dict[int, tuple[bool, str]]:
    """Per node index: whether the device's backend claims it, and why not. Every node gets an answer."""
    try:
        tgt = target(device)
        _, islands, decisions = _islands(graph, device, tgt)
    except CompilerUnavailable as exc:
        return {op.index: (False, str(exc)) for op in graph.operations}
    decisions = dict(decisions)
    for isl in islands:
        for n in isl.nodes:
            why = "in place" if n not in decisions else decisions[n][1]
            decisions[n] = (True, f"NCHW island of {len(isl)} nodes run as NHWC: {why}")
    return {
        op.index: (bool(decisions[op.index][0]), str(decisions[op.index][1]))
        if op.index in decisions
        else (False, "the compiler gave no decision")
        for op in graph.operations
    }


def compile(graph: Graph, nodes: list[int], inputs: list[int], outputs: list[int], device: str,
            **options: Any) -> Program:
    """Compile the partition `nodes` (node indices) whose runtime inputs/outputs are the given tensors."""
    tgt = target(device)
    seen, islands, _ = _islands(graph, device, tgt)
    if islands:
        inside = {t for i in islands for t in i.tensors}
        crossing = sorted(inside & {*inputs, *outputs})
        if crossing:
            raise nchw_islands.NotInIsland(f"NCHW island tensor(s) {crossing} cross the partition boundary")
        kept = {op.index for op in seen.operations}
        nodes = [n for n in nodes if n in kept]
        if not nodes:
            raise nchw_islands.NotInIsland("the partition holds only an NCHW island's transposes")
    return tgt.compile(seen, nodes, inputs, outputs, **options)


def internal_tensors(graph: Graph, nodes: list[int], device: str) -> dict[int, int]:
    """Tensors the partition `nodes` computes but its program cannot hand out as outputs, each with the node whose
    output holds it: what the family folds (a PAD into its convolution, a convolution into the ADD fused into it)
    and the NCHW tensors of an island run as NHWC (held by the island's last exit transpose in the partition).
    Every other tensor the nodes produce can be a program output."""
    tgt = target(device)
    seen, islands, _ = _islands(graph, device, tgt)
    kept = {op.index for op in seen.operations}
    family = getattr(tgt, "internal_tensors", None)
    out = {} if family is None else dict(family(seen, [n for n in nodes if n in kept]))
    ops = {op.index: op for op in graph.operations}
    for isl in islands:
        exits = [n for n in sorted(isl.transposes) if n in nodes and ops[n].inputs[0] in isl.tensors]
        for n in sorted(isl.nodes & set(nodes)):
            for t in ops[n].outputs:
                if t in isl.tensors:
                    out[t] = exits[-1] if exits else n
    return out


def disassemble(program: Program) -> str:
    """The program's command streams / descriptors by register and field."""
    return target(program.device).disassemble(program)


def to_json(program: Program) -> dict[str, object]:
    """The program in the family's `regcmd --json` form."""
    return target(program.device).to_json(program)
