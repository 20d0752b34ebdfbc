"""Dump the compiled program: command streams / descriptors by named field, or the family's JSON form."""

from __future__ import annotations

import argparse
import json
import sys

from teflon.cli.session import delegate_options, open_interpreter
from teflon.program import Program

HELP = "write the compiled program as JSON (--json) or pretty-print its register streams"


def add_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", dest="json_out", default=None, help="write the program JSON here ('-' = stdout)")


def merged_json(device: str, programs: list[Program]) -> dict[str, object]:
    """One JSON document for all partitions; buffer names get a partition prefix when there are several."""
    from teflon.compiler import to_json

    ops: list[object] = []
    buffers: dict[str, str] = {}
    for i, prog in enumerate(programs):
        doc = to_json(prog)
        prefix = f"p{i}/" if len(programs) > 1 else ""
        for op in doc["operations"]:  # type: ignore[union-attr]
            for task in op["tasks"]:
                for r in task["relocs"]:
                    r["buffer"] = prefix + r["buffer"]
            ops.append(op)
        for name, data in doc["buffers"].items():  # type: ignore[union-attr]
            buffers[prefix + name] = data
    return {"device": device, "operations": ops, "buffers": buffers}


def pretty(programs: list[Program], out) -> None:
    from teflon.compiler import disassemble

    for pi, prog in enumerate(programs):
        print(f"# partition {pi}", file=out)
        print(disassemble(prog), file=out)


def run(args: argparse.Namespace) -> int:
    session = open_interpreter(args.model, delegate_options(args), runtime=args.runtime)
    programs = [prog for _, prog in session.capture.programs]
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
        print(f"wrote {args.json_out}: {len(doc['operations'])} operations")  # type: ignore[arg-type]
    return 0
