"""Device -> NPU family backend: which nodes it claims, and compiling a partition into a Program.

Each family package (teflon.rocket, later teflon.etnaviv) exposes
    supported(graph, device) -> dict[node_index, (bool, reason)]
    compile(graph, nodes, inputs, outputs, device) -> Program
"""

from __future__ import annotations

import importlib
from types import ModuleType

from teflon.ir import Graph
from teflon.program import Program

FAMILIES: dict[str, str] = {"rk3588": "rocket", "rk3576": "rocket", "a311d": "etnaviv", "imx8mp": "etnaviv"}


class CompilerUnavailable(RuntimeError):
    """The family backend for a device cannot be imported (not written yet, or broken)."""


def family(device: str) -> str:
    try:
        return FAMILIES[device]
    except KeyError:
        raise ValueError(f"unknown device {device!r}; expected one of {', '.join(FAMILIES)}") from None


def backend(device: str) -> ModuleType:
    name = family(device)
    try:
        module = importlib.import_module(f"teflon.{name}")
    except ImportError as exc:
        raise CompilerUnavailable(f"{name} compiler unavailable ({exc})") from exc
    missing = [f for f in ("supported", "compile") if not callable(getattr(module, f, None))]
    if missing:
        raise CompilerUnavailable(f"{name} compiler unavailable (teflon.{name} has no {' or '.join(missing)})")
    return module


def supported(graph: Graph, device: str) -> dict[int, tuple[bool, str]]:
    """Per node index: whether the device's backend claims it, and why not. Every node gets an answer."""
    try:
        decisions = backend(device).supported(graph, device)
    except CompilerUnavailable as exc:
        return {op.index: (False, str(exc)) for op in graph.operations}
    return {
        op.index: (bool(decisions[op.index][0]), str(decisions[op.index][1]))
        if op.index in decisions
        else (False, "the compiler gave no decision")
        for op in graph.operations
    }


def compile(graph: Graph, nodes: list[int], inputs: list[int], outputs: list[int], device: str,
            **options: object) -> Program:
    """Compile the partition `nodes` (node indices) whose runtime inputs/outputs are the given tensors."""
    return backend(device).compile(graph, nodes, inputs, outputs, device, **options)


def regmap_for(device: str) -> object:
    """The register table (pack/decode/pretty-print) the device's command streams use."""
    return backend(device).regmap_for(device)
