"""Show, node by node, what the delegate claims and why not; what keeps nodes on the CPU; the partition graph."""

from __future__ import annotations

import argparse
import re
from collections import Counter
from pathlib import Path

from teflon.cli.session import delegate_options, open_interpreter
from teflon.ir import Graph

HELP = "print every node with delegated yes/no and the reason, and the reasons for CPU nodes grouped"

NPU_COLOUR = "#9ad29a"
CPU_COLOUR = "#f2b8b0"
FAILED_COLOUR = "#f5d08a"  # claimed, but its partition did not compile: on the CPU after all
SHORT_REASON = 40


def add_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dot", metavar="FILE", help="write the partition graph for Graphviz (dot -Tsvg FILE)")


def reason_pattern(reason: str) -> str:
    """A reason with its standalone numbers replaced by N, so "(32 scales)" and "(96 scales)" group together."""
    return re.sub(r"\b\d+\b", "N", reason)


def cpu_reasons(graph: Graph, decisions: dict[int, tuple[bool, str]],
                failed: dict[int, str]) -> list[tuple[int, str, Counter[str]]]:
    """(count, reason, op kinds) per distinct reason a node stays on the CPU, most frequent first."""
    kinds = {op.index: op.kind for op in graph.operations}
    groups: dict[str, Counter[str]] = {}
    for node, (ok, reason) in decisions.items():
        if ok and node not in failed:
            continue
        why = reason_pattern(reason) if not ok else f"claimed, but its partition did not compile: {failed[node]}"
        groups.setdefault(why, Counter())[kinds.get(node, "?")] += 1
    rows = [(sum(c.values()), why, c) for why, c in groups.items()]
    return sorted(rows, key=lambda r: (-r[0], r[1]))


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _short(reason: str) -> str:
    return reason if len(reason) <= SHORT_REASON else reason[: SHORT_REASON - 1].rstrip() + "…"


def to_dot(graph: Graph, decisions: dict[int, tuple[bool, str]], partitions: list[list[int]],
           failed: dict[int, str], title: str = "teflon") -> str:
    """A Graphviz digraph: one node per op (filled by where it runs), a cluster per partition, tensor edges."""
    producer = {t: op.index for op in graph.operations for t in op.outputs}
    consumed = {t for op in graph.operations for t in op.inputs}

    def op_node(index: int, indent: str) -> str:
        op = next(o for o in graph.operations if o.index == index)
        ok, reason = decisions.get(index, (False, "no decision"))
        if ok and index not in failed:
            label, colour, tip = f"{index} {op.kind}", NPU_COLOUR, reason
        else:
            why = reason if not ok else f"partition did not compile: {failed[index]}"
            label, colour, tip = f"{index} {op.kind}\n{_short(why)}", CPU_COLOUR if not ok else FAILED_COLOUR, why
        return f"{indent}n{index} [label={_quote(label)}, fillcolor={_quote(colour)}, tooltip={_quote(tip)}];"

    lines = [f"digraph {_quote(title)} {{", "  rankdir=TB;",
             '  node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=10];',
             '  edge [fontname="Helvetica", fontsize=8];']
    in_partition: set[int] = set()
    for k, nodes in enumerate(partitions):
        lines.append(f"  subgraph cluster_p{k} {{")
        lines.append(f"    label={_quote(f'partition {k} (NPU, {len(nodes)} nodes)')}; style=dashed;")
        lines.extend(op_node(n, "    ") for n in nodes)
        lines.append("  }")
        in_partition.update(nodes)
    lines.extend(op_node(op.index, "  ") for op in graph.operations if op.index not in in_partition)

    def shape(t: int) -> str:
        return "x".join(str(d) for d in graph.tensors[t].shape) if t in graph.tensors else "?"

    declared: set[int] = set()

    def tensor_node(t: int, role: str) -> None:
        if t not in declared:
            declared.add(t)
            lines.append(f"  t{t} [shape=plaintext, style=\"\", label={_quote(f'{role} {shape(t)}')}];")

    for op in graph.operations:
        for t in op.inputs:
            if t < 0 or t not in graph.tensors or graph.tensors[t].data is not None:
                continue  # weights and biases are not edges
            if t in producer:
                lines.append(f"  n{producer[t]} -> n{op.index} [label={_quote(shape(t))}];")
            else:
                tensor_node(t, "input")
                lines.append(f"  t{t} -> n{op.index};")
        for t in op.outputs:
            if t not in consumed:
                tensor_node(t, "output")
                lines.append(f"  n{op.index} -> t{t};")
    lines.append("}")
    return "\n".join(lines) + "\n"


def run(args: argparse.Namespace) -> int:
    session = open_interpreter(args.model, delegate_options(args), runtime=args.runtime)
    cap = session.capture
    if not cap.support:
        print("the delegate made no decisions (did it load?)")
        return 1
    failed = {n: msg for nodes, msg in cap.failures for n in nodes}
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
    for graph, decisions in cap.support:
        groups = cpu_reasons(graph, decisions, failed)
        if groups:
            print("\nleft on the CPU (nodes, reason, [ops]):")
        for count, why, kinds in groups:  # '*' first: a summary line never reads as a node row
            print(f"  * {count:>3}  {why}  [{', '.join(f'{k} {n}' for k, n in kinds.most_common())}]")
    if args.dot:
        graph, decisions = cap.support[0]
        Path(args.dot).write_text(to_dot(graph, decisions, [nodes for nodes, _ in cap.programs], failed,
                                         Path(args.model).stem))
        print(f"\npartition graph written to {args.dot}")
    return 0
