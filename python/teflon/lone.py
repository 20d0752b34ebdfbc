"""Cheap NPU nodes that would be a partition of their own stay on the CPU (shared by the families' support).

A claimed node with no weights worth moving (a pool, a table, an element-wise operation, a copy) whose nearest
producers and readers are all CPU nodes (or claimed nodes reached only through CPU nodes) would form a partition by
itself: a CPU <-> NPU round trip, and on some families layout conversions, for less work than the CPU does in place.
`drop_lone_cheap` turns such claims into CPU decisions with that reason; a model made of such a node alone keeps it
(it has no producer or no reader). Views (nodes that move no byte on the NPU) are looked through. A family may
extend the rule to small groups of such nodes joined to each other (`group_limit`): etnaviv does for pairs, whose
partition pays the same conversions and round trip for two passes the CPU makes over a map.
"""

from __future__ import annotations

from collections.abc import Collection

from teflon.ir import Graph, Operation

LONE_REASON = ("{kind} alone between CPU nodes: a partition of its own would cost more (layout conversions, a "
               "CPU <-> NPU round trip) than the CPU spends on it")
GROUP_REASON = ("{kind} in a group of {n} nodes without weights between CPU nodes: a partition of their own would cost "
                "more (layout conversions, a CPU <-> NPU round trip) than the CPU spends on them")


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


def cheap_group(graph: Graph, op: Operation, claimed: set[int], cheap_kinds: Collection[str],
                view_kinds: Collection[str], limit: int) -> tuple[list[Operation], bool, bool, bool] | None:
    """The claimed `cheap_kinds` nodes joined to `op` (a producer or reader through views, with no path through a
    CPU node between the two, which would keep them apart), or None when there are more than `limit` of them; with
    whether the group has a producer outside it, a reader outside it, and a claimed node outside it joined to it."""
    group, todo, seen = [op], [op], {op.index}
    outside: list[tuple[Operation, bool, bool]] = []  # (neighbour, is a producer, joined)
    while todo:
        cur = todo.pop()
        edges = [(n, n.index, cur.index, True) for n in op_neighbours(graph, cur, False, view_kinds)] + \
            [(n, cur.index, n.index, False) for n in op_neighbours(graph, cur, True, view_kinds)]
        for n, src, dst, producer in edges:
            if n.index in seen:
                continue
            joined = n.index in claimed and not via_cpu(graph, src, dst, claimed)
            if not (joined and n.kind in cheap_kinds):
                outside.append((n, producer, joined))
                continue
            seen.add(n.index)
            group.append(n)
            todo.append(n)
            if len(group) > limit:
                return None
    # a neighbour seen from one member may be joined to another: it belongs to the group, not outside it
    outside = [(n, producer, joined) for n, producer, joined in outside if n.index not in seen]
    return (group, any(producer for _, producer, _ in outside), any(not producer for _, producer, _ in outside),
            any(joined for _, _, joined in outside))


def drop_lone_cheap(graph: Graph, result: dict[int, tuple[bool, str]], cheap_kinds: Collection[str],
                    view_kinds: Collection[str], group_limit: int = 1) -> dict[int, tuple[bool, str]]:
    """A group of at most `group_limit` connected claimed nodes of `cheap_kinds` that would share a partition with
    no other claimed node (every nearest producer and reader outside the group is a CPU node, or a claimed one
    reached only through CPU nodes; at least one of each) stays on the CPU. Repeated until stable."""
    changed = True
    while changed:
        changed = False
        claimed = {i for i, (ok, _) in result.items() if ok}
        for op in graph.operations:
            if op.kind not in cheap_kinds or op.index not in claimed:
                continue
            found = cheap_group(graph, op, claimed, cheap_kinds, view_kinds, group_limit)
            if found is None:
                continue
            group, has_producer, has_reader, joins = found
            if has_producer and has_reader and not joins:
                for g in group:
                    result[g.index] = (False, LONE_REASON.format(kind=g.kind) if len(group) == 1 else
                                       GROUP_REASON.format(kind=g.kind, n=len(group)))
                claimed -= {g.index for g in group}
                changed = True
    return result
