"""Device -> its family's target: which nodes it claims, compiling a partition into a Program, showing one.

The target registry (teflon.targets) names each device's family; the family package `teflon.<family>` exposes
`target(name)` (docs/architecture.md, "Adding a family"). Nothing here knows a family or an SoC.
"""

from __future__ import annotations

import importlib
from typing import Any

from teflon import targets
from teflon.ir import Graph
from teflon.program import Program


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


def supported(graph: Graph, device: str) -> dict[int, tuple[bool, str]]:
    """Per node index: whether the device's backend claims it, and why not. Every node gets an answer."""
    try:
        decisions = target(device).supported(graph)
    except CompilerUnavailable as exc:
        return {op.index: (False, str(exc)) for op in graph.operations}
    return {
        op.index: (bool(decisions[op.index][0]), str(decisions[op.index][1]))
        if op.index in decisions
        else (False, "the compiler gave no decision")
        for op in graph.operations
    }


def compile(graph: Graph, nodes: list[int], inputs: list[int], outputs: list[int], device: str,
            **options: Any) -> Program:
    """Compile the partition `nodes` (node indices) whose runtime inputs/outputs are the given tensors."""
    return target(device).compile(graph, nodes, inputs, outputs, **options)


def internal_tensors(graph: Graph, nodes: list[int], device: str) -> dict[int, int]:
    """Tensors the partition `nodes` computes but its program cannot hand out as outputs (a PAD folded into its
    convolution, a convolution an ADD is fused into), each with the node whose output holds it; every other
    tensor the nodes produce can be a program output. Families that fold nothing have no such tensors."""
    internal = getattr(target(device), "internal_tensors", None)
    return {} if internal is None else dict(internal(graph, nodes))


def disassemble(program: Program) -> str:
    """The program's command streams / descriptors by register and field."""
    return target(program.device).disassemble(program)


def to_json(program: Program) -> dict[str, object]:
    """The program in the family's `regcmd --json` form."""
    return target(program.device).to_json(program)
