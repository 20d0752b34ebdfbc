"""Dump the compiled program: register streams (named fields) or JSON."""

from __future__ import annotations

import argparse
import json
import struct
import sys

from teflon.cli.session import delegate_options, open_interpreter
from teflon.program import Program

HELP = "write the compiled program as JSON (--json) or pretty-print its register streams"


def add_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", dest="json_out", default=None, help="write the program JSON here ('-' = stdout)")


def merged_json(device: str, programs: list[Program]) -> dict[str, object]:
    """One JSON document for all partitions; buffer names get a partition prefix when there are several."""
    ops: list[object] = []
    buffers: dict[str, str] = {}
    for i, prog in enumerate(programs):
        doc = prog.to_json()
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
    from teflon.compiler import regmap_for

    for pi, prog in enumerate(programs):
        regmap = regmap_for(prog.device)
        for op in prog.operations:
            print(f"# partition {pi} operation {op.kind} nodes {op.nodes} {op.info}", file=out)
            for ti, t in enumerate(op.tasks):
                data = prog.buffer(t.buffer).data or b""
                words = struct.unpack_from(f"<{t.count}Q", data, t.offset)
                print(f"## task {ti}: {t.count} words at {t.buffer}+0x{t.offset:x}", file=out)
                print(regmap.format_stream(list(words)), file=out)


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
