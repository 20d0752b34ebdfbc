"""Command line tools: `python -m teflon classify|inspect|regcmd|bench|compare|profile|doctor|board`."""

from __future__ import annotations

import argparse
import os
import sys

import teflon
from teflon import targets
from teflon.cli import bench, board, classify, compare, doctor, inspect, profile, regcmd
from teflon.cli.session import key_value

COMMANDS = {"classify": classify, "inspect": inspect, "regcmd": regcmd, "bench": bench, "compare": compare,
            "profile": profile}


def add_device_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--device", default="auto",
                   help=f"auto|{'|'.join(targets.names())} (default auto: this machine's NPU, else the simulated "
                        f"{targets.FALLBACK})")
    p.add_argument("--sim", default="auto", choices=["auto", "0", "1"], help="simulated NPU: auto|0|1")
    p.add_argument("--runtime", default=None, choices=["tflite_runtime", "ai_edge_litert"],
                   help="TFLite runtime (default: tflite_runtime if installed)")
    p.add_argument("-o", "--option", action="append", type=key_value, default=[], metavar="KEY=VALUE",
                   help="any delegate option (repeatable; checked by teflon.load_delegate), e.g. -o debug=1")


def _quiet_closed_stdout() -> None:
    """The reader of stdout went away (`... | head -1`): send what is still buffered nowhere, so neither the
    command nor the interpreter's final flush reports a broken pipe."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m teflon", description=__doc__)
    parser.add_argument("--version", action="version", version=f"teflon {teflon.__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, mod in COMMANDS.items():
        p = sub.add_parser(name, help=mod.HELP, description=mod.HELP)
        p.add_argument("--model", required=True, help=".tflite model file")
        add_device_args(p)
        mod.add_args(p)
    # doctor checks the machine: no model needed, no device arguments (it asks for device=auto)
    doctor.add_args(sub.add_parser("doctor", help=doctor.HELP, description=doctor.HELP))
    # board prints the board-latency model: its own models, no device arguments
    board.add_args(sub.add_parser("board", help=board.HELP, description=board.HELP))
    args = parser.parse_args(argv)
    try:
        if args.command in ("doctor", "board"):
            rc = (doctor if args.command == "doctor" else board).run(args)
            sys.stdout.flush()
            return rc
        # Before any runtime sees the file: tflite_runtime 2.14 crashes on a truncated model instead of refusing it.
        teflon.verify_model(args.model)
        rc = int(COMMANDS[args.command].run(args) or 0)
        sys.stdout.flush()
        return rc
    except BrokenPipeError:
        _quiet_closed_stdout()
        return 0
    except (OSError, ValueError, RuntimeError, ImportError) as exc:
        message = "; ".join(line for line in str(exc).splitlines() if line.strip()) or type(exc).__name__
        print(f"teflon {args.command}: error: {message}", file=sys.stderr)
        return 1
