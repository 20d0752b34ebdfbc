"""Command line tools: `python -m teflon classify|inspect|regcmd|bench`."""

from __future__ import annotations

import argparse
import sys

from teflon import targets
from teflon.cli import bench, classify, compare, inspect, regcmd

COMMANDS = {"classify": classify, "inspect": inspect, "regcmd": regcmd, "bench": bench, "compare": compare}


def add_device_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--device", default="auto",
                   help=f"auto|{'|'.join(targets.names())} (default auto: this machine's NPU, else the simulated "
                        f"{targets.FALLBACK})")
    p.add_argument("--sim", default="auto", choices=["auto", "0", "1"], help="simulated NPU: auto|0|1")
    p.add_argument("--runtime", default=None, choices=["tflite_runtime", "ai_edge_litert"],
                   help="TFLite runtime (default: tflite_runtime if installed)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m teflon", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    for name, mod in COMMANDS.items():
        p = sub.add_parser(name, help=mod.HELP, description=mod.HELP)
        p.add_argument("--model", required=True, help=".tflite model file")
        add_device_args(p)
        mod.add_args(p)
    args = parser.parse_args(argv)
    try:
        return int(COMMANDS[args.command].run(args) or 0)
    except (OSError, ValueError, RuntimeError) as exc:
        print(f"teflon {args.command}: error: {exc}", file=sys.stderr)
        return 1
