"""Cheap NPU nodes that would be a partition of their own stay on the CPU (shared by the families' support).

A claimed node with no weights worth moving (a pool, a table, an element-wise operation, a copy) whose nearest
producers and readers are all CPU nodes (or claimed nodes reached only through CPU nodes) would form a partition by
itself: a CPU <-> NPU round trip, and on some families layout conversions, for less work than the CPU does in place.
`drop_lone_cheap` turns such claims into CPU decisions with that reason; a model made of such a node alone keeps it
(it has no producer or no reader). Views (nodes that move no byte on the NPU) are looked through.
"""

from __future__ import annotations

from collections.abc import Collection

from teflon.ir import Graph, Operation

LONE_REASON = ("{kind} alone between CPU nodes: a partition of its own would cost more (layout conversions, a "
               "CPU <-> NPU round trip) than the CPU spends on it")


def op_neighbours(graph: Graph, op: Operation, forward: bool, view_kinds: Collection[str]) -> list[Operation]:
    """The nearest non-view nodes that feed (forward False) or read (forward True) `op`, looking through views."""
    out: list[Operation] = []
    todo, seen = [op], {op.index}
    while todo:
        cur = todo.pop()
        nxt = ([c for t in cur.outputs for c in graph.consumers(t)] if forward else
               [p for p in (graph.producer(t) for t in cur.inputs if t >= 0) if p is not None])
        for n in nxt:
            if n.index in seen:
                continue
            seen.add(n.index)
            (todo if n.kind in view_kinds else out).append(n)
    return out


def via_cpu(graph: Graph, src: int, dst: int, claimed: set[int]) -> bool:
    """Whether some path from node `src` to node `dst` passes through a node outside `claimed` (nodes are in
    execution order, so such a path only visits nodes between the two)."""
    by_index = {op.index: op for op in graph.operations}
    seen: set[tuple[int, bool]] = set()
    todo = [(src, False)]
    while todo:
        n, cpu = todo.pop()
        for t in by_index[n].outputs:
            for c in graph.consumers(t):
                if c.index == dst:
                    if cpu:
                        return True
                    continue
                state = (c.index, cpu or c.index not in claimed)
                if c.index < dst and state not in seen:
                    seen.add(state)
                    todo.append(state)
    return False


def drop_lone_cheap(graph: Graph, result: dict[int, tuple[bool, str]], cheap_kinds: Collection[str],
                    view_kinds: Collection[str]) -> dict[int, tuple[bool, str]]:
    """A claimed node of `cheap_kinds` that would share a partition with no other claimed node (every nearest
    producer and reader is a CPU node, or a claimed one reached only through CPU nodes; at least one of each) stays
    on the CPU. Repeated until stable."""
    changed = True
    while changed:
        changed = False
        claimed = {i for i, (ok, _) in result.items() if ok}
        for op in graph.operations:
            if op.kind not in cheap_kinds or op.index not in claimed:
                continue
            before = op_neighbours(graph, op, False, view_kinds)
            after = op_neighbours(graph, op, True, view_kinds)
            joins = any(p.index in claimed and not via_cpu(graph, p.index, op.index, claimed) for p in before) or \
                any(c.index in claimed and not via_cpu(graph, op.index, c.index, claimed) for c in after)
            if before and after and not joins:
                result[op.index] = (False, LONE_REASON.format(kind=op.kind))
                claimed.discard(op.index)
                changed = True
    return result
