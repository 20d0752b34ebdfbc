"""Device -> its family's target: which nodes it claims, compiling a partition into a Program, showing one.

The target registry (teflon.targets) names each device's family; the family package `teflon.<family>` exposes
`target(name)` (docs/architecture.md, "Adding a family"). Nothing here knows a family or an SoC.
"""

from __future__ import annotations

import importlib
from dataclasses import replace
from typing import Any

from teflon import group_convs, nchw_islands, targets
from teflon.ir import Graph, memo
from teflon.program import HOST_NCHW, HOST_NHWC, IOBinding, Program

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
    """(the graph the family sees, the NCHW islands rewritten in it, the family's decisions on it). An island
    node the family leaves on the CPU runs as the converter wrote it: the NCHW tensors it shares with the NPU
    cross the partition boundary in NCHW order (the bindings' host order, `_island_bindings`)."""
    seen, chosen, _ = _rewrites(graph, device, tgt)
    return seen, chosen, memo(graph, (__name__, "decisions", device), lambda: tgt.supported(seen))


def _rewrites(graph: Graph, device: str, tgt: Any) -> tuple[Graph, list[nchw_islands.Island], list[group_convs.Group]]:
    """(the graph the family sees, its NCHW islands, its merged grouped convolutions): the islands rewritten as
    NHWC (teflon.nchw_islands), then the grouped convolutions merged (teflon.group_convs), each where the family
    opts in (its target's `nchw_islands` / `group_convs`)."""
    def compute() -> tuple[Graph, list[nchw_islands.Island], list[group_convs.Group]]:
        chosen = [] if not getattr(tgt, "nchw_islands", False) else [
            i for i in nchw_islands.find(graph) if nchw_islands.usable(graph, i) is None]
        seen = nchw_islands.canonical(graph, chosen) if chosen else graph
        found = group_convs.find(seen) if getattr(tgt, "group_convs", False) else []
        seen, groups = group_convs.rewrite(seen, found) if found else (seen, [])
        return seen, chosen, groups

    return memo(graph, (__name__, "rewrites", device), compute)


def _merged_groups(graph: Graph, device: str, tgt: Any) -> list[group_convs.Group]:
    """The grouped convolutions merged in the family's view of `graph`."""
    return _rewrites(graph, device, tgt)[2]


def _transpose_claimed(graph: Graph, node: int, decisions: dict) -> bool:
    """An island's entry or exit goes with the NPU when a neighbour runs there (it moves no byte on the NPU; on
    its own it would be a partition of nothing)."""
    op = next(o for o in graph.operations if o.index == node)
    near = [graph.producer(op.inputs[0]), *graph.consumers(op.outputs[0])]
    return any(nb is not None and decisions.get(nb.index, (False, ""))[0] for nb in near)


def supported(graph: Graph, device: str) -> dict[int, tuple[bool, str]]:
    """Per node index: whether the device's backend claims it, and why not. Every node gets an answer."""
    try:
        tgt = target(device)
        _, islands, decisions = _islands(graph, device, tgt)
    except CompilerUnavailable as exc:
        return {op.index: (False, str(exc)) for op in graph.operations}
    decisions = dict(decisions)
    for grp in _merged_groups(graph, device, tgt):
        claimed, why = decisions.get(grp.concat, (False, "the compiler gave no decision"))
        for n in grp.nodes:
            why_n = f"group convolution of {len(grp.convs)} groups, one convolution (node {grp.concat}): {why}"
            decisions[n] = (claimed, why_n)
    for isl in islands:
        for n in isl.nodes:
            if n in decisions:
                claimed, why = decisions[n]
            else:  # an entry, an exit, or the shuffle's TRANSPOSE/RESHAPE (views of the shuffle's convolution)
                claimed = _transpose_claimed(graph, n, decisions)
                why = "moves no byte" if claimed else ("an NCHW island's entry, exit or shuffle view: it moves no "
                                                       "byte, and no neighbour runs on the NPU")
            decisions[n] = (claimed, f"NCHW island of {len(isl)} nodes run as NHWC: {why}" if claimed else why)
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
    hidden = group_convs.hidden_tensors(_merged_groups(graph, device, tgt))
    if any(t in hidden for t in (*inputs, *outputs)):
        raise ValueError("a grouped convolution's inner tensor crosses the partition boundary")
    kept = {op.index for op in seen.operations}
    nodes = [n for n in nodes if n in kept]
    if not islands:
        return tgt.compile(seen, nodes, inputs, outputs, **options)
    if not nodes:
        raise nchw_islands.NotInIsland("the partition holds only an NCHW island's transposes")
    sub = nchw_islands.substitutions(graph, islands)
    prog = tgt.compile(seen, nodes, list(dict.fromkeys(sub.get(t, t) for t in inputs)),
                       list(dict.fromkeys(sub.get(t, t) for t in outputs)), **options)
    prog.io = _island_bindings(prog.io, inputs, outputs, sub, {t for i in islands for t in i.tensors})
    return prog


def _island_bindings(io: list[IOBinding], inputs: list[int], outputs: list[int], sub: dict[int, int],
                     nchw: set[int]) -> list[IOBinding]:
    """The program's bindings (made for the canonical graph's tensors) for the partition's own tensors: an NCHW
    island tensor that crosses the boundary is its NHWC twin's device copy read or written in NCHW order."""
    out: list[IOBinding] = []
    for b in io:
        own = [t for t in (inputs if b.direction == "in" else outputs) if sub.get(t, t) == b.tensor]
        if b.direction == "in":  # one copy in: the NHWC tensor where the partition has both
            own = sorted(own, key=lambda t: t in nchw)[:1]
        out.extend(replace(b, tensor=t, host_order=HOST_NCHW if t in nchw else HOST_NHWC) for t in own or [b.tensor])
    return out


def internal_tensors(graph: Graph, nodes: list[int], device: str) -> dict[int, int]:
    """Tensors the partition `nodes` computes but its program cannot hand out as outputs, each with the node whose
    output holds it: what the family folds (a PAD into its convolution, a convolution into the ADD fused into it),
    a grouped convolution's parts and branch outputs (teflon.group_convs), and in an NCHW island the tensors of a
    channel shuffle (one convolution writes its result). An island's other
    NCHW tensors can be outputs (in NCHW order, `_island_bindings`)."""
    tgt = target(device)
    seen, islands, _ = _islands(graph, device, tgt)
    kept = {op.index for op in seen.operations}
    family = getattr(tgt, "internal_tensors", None)
    inner = {} if family is None else dict(family(seen, [n for n in nodes if n in kept]))
    inner.update({t: n for t, n in group_convs.hidden_tensors(_merged_groups(graph, device, tgt)).items()
                  if n in nodes})
    if not islands:
        return inner
    sub = nchw_islands.substitutions(graph, islands)
    out = dict(inner)
    for op in graph.operations:
        if op.index in nodes:
            out.update({t: inner[sub[t]] for t in op.outputs if sub.get(t) in inner})
    out.update({t: n for t, n in nchw_islands.hidden_tensors(graph, islands).items() if n in nodes})
    return out


def disassemble(program: Program) -> str:
    """The program's command streams / descriptors by register and field."""
    return target(program.device).disassemble(program)


def to_json(program: Program) -> dict[str, object]:
    """The program in the family's `regcmd --json` form."""
    return target(program.device).to_json(program)
