"""Show, node by node, what the delegate claims and why not."""

from __future__ import annotations

import argparse

from teflon.cli.session import delegate_options, open_interpreter

HELP = "print every node with delegated yes/no and the reason"


def add_args(p: argparse.ArgumentParser) -> None:
    pass


def run(args: argparse.Namespace) -> int:
    session = open_interpreter(args.model, delegate_options(args), runtime=args.runtime)
    cap = session.capture
    if not cap.support:
        print("the delegate made no decisions (did it load?)")
        return 1
    delegated_total = 0
    for graph, decisions in cap.support:
        ops = {op.index: op for op in graph.operations}
        print(f"{'node':>4}  {'op':<20} {'delegated':<9}  reason")
        for index in sorted(decisions):
            ok, reason = decisions[index]
            delegated_total += ok
            kind = ops[index].kind if index in ops else "?"
            print(f"{index:>4}  {kind:<20} {'yes' if ok else 'no':<9}  {reason}")
    partitions = len(cap.programs)
    print(f"\n{delegated_total} of {sum(len(d) for _, d in cap.support)} nodes delegated in {partitions} partition(s)")
    return 0
