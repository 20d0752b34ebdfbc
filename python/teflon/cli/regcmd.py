"""Dump the compiled program: command streams / descriptors by named field, or the family's JSON form."""

from __future__ import annotations

import argparse
import json
import sys

from teflon.cli.session import delegate_options, open_interpreter
from teflon.ir import Graph
from teflon.program import Program

HELP = "write the compiled program as JSON (--json) or pretty-print its register streams"


def add_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", dest="json_out", default=None, help="write the program JSON here ('-' = stdout)")
    p.add_argument("--mesa-compat", action="store_true",
                   help="recompile every delegated partition the way Mesa encodes it, byte for byte where the "
                        "default deliberately differs")
    p.add_argument("--vela-compat", action="store_true",
                   help="ethosu: recompile every delegated partition with Vela 5.2.0's choices (its operation "
                        "splits), so the register state at each kick compares with Vela's default compile")


def _prefix_buffers(node: object, prefix: str) -> None:
    """Rename every "buffer" reference inside a family's JSON document."""
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "buffer" and isinstance(v, str):
                node[k] = prefix + v
            else:
                _prefix_buffers(v, prefix)
    elif isinstance(node, list):
        for v in node:
            _prefix_buffers(v, prefix)


def merged_json(device: str, programs: list[Program]) -> dict[str, object]:
    """One JSON document for all partitions (the family's form: rocket "operations", etnaviv "jobs"); buffer names
    get a partition prefix when there are several."""
    from teflon.compiler import to_json

    merged: dict[str, object] = {"device": device}
    buffers: dict[str, str] = {}
    for i, prog in enumerate(programs):
        doc = to_json(prog)
        prefix = f"p{i}/" if len(programs) > 1 else ""
        for key, value in doc.items():
            if key == "buffers":
                buffers.update({prefix + name: data for name, data in value.items()})  # type: ignore[union-attr]
            elif isinstance(value, list):
                _prefix_buffers(value, prefix)
                merged.setdefault(key, []).extend(value)  # type: ignore[union-attr]
            elif len(programs) == 1 and key != "device":
                merged[key] = value  # one partition: its own top-level form (ethosu: "regions", "sram_size")
    merged["buffers"] = buffers
    return merged


def pretty(programs: list[Program], out) -> None:
    from teflon.compiler import disassemble

    for pi, prog in enumerate(programs):
        print(f"# partition {pi}", file=out)
        print(disassemble(prog), file=out)


def mesa_compat(graph: Graph, nodes: list[int], prog: Program, option: str = "mesa_compat") -> Program:
    """The partition compiled again with the family's Mesa-compatible (or, option="vela_compat", Vela-compatible)
    choices (same inputs and outputs)."""
    from teflon.compiler import compile as compile_partition

    inputs = [io.tensor for io in prog.io if io.direction == "in"]
    outputs = [io.tensor for io in prog.io if io.direction == "out"]
    return compile_partition(graph, nodes, inputs, outputs, prog.device, **{option: True})


def compile_only(args: argparse.Namespace) -> list[Program] | None:
    """A device whose generation lists the nodes its encoder writes (rk3568: it writes pools it does not claim): the
    model's graph as the delegate hands it over (captured on the fallback simulator), every node its encoder writes
    compiled as a partition of its own. None for a device without such a list."""
    from teflon import compiler, targets

    if args.device not in targets.names():
        return None
    encodable = getattr(compiler.target(args.device), "encodable", None)
    if encodable is None:
        return None
    session = open_interpreter(args.model, {**delegate_options(args), "device": targets.FALLBACK, "sim": "1"},
                               runtime=args.runtime)
    graph = session.capture.support[0][0]
    nodes = encodable(graph)
    if nodes is None:
        return None
    print(f"teflon regcmd: {args.device}: {len(nodes)} encodable node(s), each compiled as its own partition (the "
          "form Rockchip's single-layer programs are compared in)", file=sys.stderr)
    programs = []
    for n in nodes:
        op = next(o for o in graph.operations if o.index == n)
        inputs = [t for t in op.inputs if t >= 0 and not graph.tensors[t].is_constant]
        programs.append(compiler.compile(graph, [n], inputs, list(op.outputs), args.device))
    return programs


def run(args: argparse.Namespace) -> int:
    programs = compile_only(args)
    if programs is not None:
        return emit(args, programs)
    session = open_interpreter(args.model, delegate_options(args), runtime=args.runtime)
    programs = [prog for _, prog in session.capture.programs]
    for option in ("mesa_compat", "vela_compat"):
        if getattr(args, option, False):
            programs = [mesa_compat(session.capture.support[0][0], nodes, prog, option)
                        for nodes, prog in session.capture.programs]
    return emit(args, programs)


def emit(args: argparse.Namespace, programs: list[Program]) -> int:
    if not programs:
        print("nothing was delegated; no program to show", file=sys.stderr)
        return 1
    if args.json_out is None:
        pretty(programs, sys.stdout)
        return 0
    doc = merged_json(programs[0].device, programs)
    if args.json_out == "-":
        json.dump(doc, sys.stdout, indent=1)
    else:
        with open(args.json_out, "w") as f:
            json.dump(doc, f, indent=1)
        what = "jobs" if "jobs" in doc else "operations"
        print(f"wrote {args.json_out}: {len(doc[what])} {what}")  # type: ignore[arg-type]
    return 0
