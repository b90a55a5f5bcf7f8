"""Split a graph into convex subgraphs of supported nodes, ordered so they can run interleaved.

Same guarantees as TFLite's ``PartitionGraphIntoIndependentNodeSubsets``, found the same way and
then improved on:

* **Dependencies** (``node_predecessors``): data edges through tensors, read-after-write,
  write-after-read and write-after-write in program order. A variable tensor (``is_variable``)
  is updated in place by the stateful ops that take it as an input, so every node touching it
  is read *and* write: all of them stay in program order. Ops on resources by handle
  (``RESOURCE_OPS``: variables, hash tables, ``CALL_ONCE``) and nodes without outputs (pure
  side effects) form one more chain in program order. A node with outputs but no tensor edges
  is free: it runs wherever its kind's phase first comes. Every edge points forward in the
  graph's operation order, so that order is always a valid one.
* **Growing** (``_phases``): as TFLite does, run every node whose dependencies are satisfied and
  that is of the current kind (supported or not), repeatedly, until none is ready; then switch
  kind. Each supported phase becomes one partition. A partition is convex by construction: a
  node joins only when all its predecessors have run, so no path can leave the partition and
  come back into it.
* **Better than TFLite**: the greedy run is done twice, starting once with the supported and
  once with the unsupported kind, and the run with fewer partitions wins (ties: the larger
  partitions, then supported first). Each phase of a greedy run takes everything the best
  schedule could take at that point, so the better of the two starts has the fewest partitions
  possible — e.g. an unsupported root that feeds the middle of a supported chain no longer splits
  the chain.

Then partitions under ``min_nodes`` are dropped and, with ``max_partitions``, only the largest
are kept; the nodes of dropped partitions run on the fallback, where the partition would have run.
"""
from __future__ import annotations

import heapq
from collections.abc import Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from teflon_py.errors import ModelError

if TYPE_CHECKING:
    from teflon_py import ir

#: An absent optional input (``ir.NO_TENSOR``; repeated so this package needs no NumPy import).
NO_TENSOR = -1

#: Ops that reach state through a resource handle: kept in program order with each other.
RESOURCE_OPS = frozenset(
    {
        "VAR_HANDLE",
        "READ_VARIABLE",
        "ASSIGN_VARIABLE",
        "HASHTABLE",
        "HASHTABLE_FIND",
        "HASHTABLE_IMPORT",
        "HASHTABLE_SIZE",
        "CALL_ONCE",
        "WHILE",  # their subgraphs may read and assign resource variables
        "IF",
    }
)

#: One step of an execution plan: ``("partition", Partition.index)`` or ``("node", op index)``.
Step = tuple[str, int]


@dataclass(frozen=True)
class Partition:
    """A convex set of supported nodes that one delegate runs as a whole."""

    index: int  # position in the list ``partition`` returns
    nodes: tuple[int, ...]  # operation indices, in the graph's execution order
    inputs: tuple[int, ...]  # non-constant tensors read inside but not produced inside; first use
    outputs: tuple[int, ...]  # tensors produced inside, read outside or graph outputs


def partition(
    graph: ir.Graph,
    supported: Collection[int],
    *,
    max_partitions: int | None = None,
    min_nodes: int = 1,
) -> list[Partition]:
    """Group the ``supported`` nodes of ``graph`` into as few convex partitions as possible.

    Partitions with fewer than ``min_nodes`` nodes are dropped; then at most ``max_partitions``
    are kept, the largest (ties: the earlier). The list order is a valid execution order.
    """
    _check_options(graph, supported, max_partitions, min_nodes)
    preds = node_predecessors(graph)
    groups = _best_grouping(preds, set(supported))
    groups = _keep(groups, max_partitions, min_nodes)
    consumers = _consumers(graph)
    return [_make_partition(graph, k, nodes, consumers) for k, nodes in enumerate(groups)]


def node_predecessors(graph: ir.Graph) -> list[frozenset[int]]:
    """For each node, the nodes that must run before it (see the module docstring)."""
    preds: list[set[int]] = [set() for _ in graph.operations]
    writer: dict[int, int] = {}  # tensor -> last node that wrote it
    readers: dict[int, list[int]] = {}  # tensor -> nodes that read it since that write
    last_effect: int | None = None
    for i, op in enumerate(graph.operations):
        for t in _reads(graph, op):
            if t in writer:
                preds[i].add(writer[t])
            readers.setdefault(t, []).append(i)
        for t in _writes(graph, op):
            _check_read_before_write(graph, t, i, writer, readers)
            preds[i].update(readers.pop(t, ()))
            if t in writer:
                preds[i].add(writer[t])
            writer[t] = i
        if op.opcode in RESOURCE_OPS or not op.outputs:
            if last_effect is not None:
                preds[i].add(last_effect)
            last_effect = i
        preds[i].discard(i)
    return [frozenset(p) for p in preds]


def execution_plan(graph: ir.Graph, partitions: Sequence[Partition]) -> list[Step]:
    """Every partition (in list order) and every other node once, in a valid order.

    Raises ValueError when partitions overlap or cannot run in their list order (not convex).
    """
    owner = _owners(graph, partitions)
    units: list[Step] = [("partition", p.index) for p in partitions]
    units += [("node", i) for i in range(len(graph.operations)) if i not in owner]
    unit_of = {step: k for k, step in enumerate(units)}

    def unit(node: int) -> int:
        return owner[node] if node in owner else unit_of[("node", node)]

    preds: list[set[int]] = [set() for _ in units]
    for node, node_preds in enumerate(node_predecessors(graph)):
        preds[unit(node)].update(unit(p) for p in node_preds)
    for k in range(1, len(partitions)):
        preds[k].add(k - 1)  # keep the partitions in list order
    for k, unit_preds in enumerate(preds):
        unit_preds.discard(k)
    first = [p.nodes[0] if p.nodes else -1 for p in partitions]
    first += [i for _, i in units[len(partitions):]]
    order = _topological(preds, first)
    if len(order) < len(units):
        raise ValueError("partitions are not convex or out of order: their plan has a cycle")
    return [units[k] for k in order]


def summary(graph: ir.Graph, partitions: Sequence[Partition]) -> str:
    """One line: how many nodes the partitions claim and how many run on the fallback."""
    claimed = sum(len(p.nodes) for p in partitions)
    total = len(graph.operations)
    count = len(partitions)
    parts = f"{count} partition claims" if count == 1 else f"{count} partitions claim"
    rest = total - claimed
    runs = "runs" if rest == 1 else "run"
    return f"{parts} {claimed} of {total} nodes; {rest} {runs} on the fallback"


def _check_options(
    graph: ir.Graph, supported: Collection[int], max_partitions: int | None, min_nodes: int
) -> None:
    """Reject options that cannot mean anything, naming the value at fault."""
    if min_nodes < 1:
        raise ValueError(f"min_nodes must be at least 1, got {min_nodes}")
    if max_partitions is not None and max_partitions < 0:
        raise ValueError(f"max_partitions must be None or at least 0, got {max_partitions}")
    bad = [i for i in supported if not 0 <= i < len(graph.operations)]
    if bad:
        raise ValueError(f"supported names nodes {sorted(bad)} outside the graph")


def _reads(graph: ir.Graph, op: ir.Operation) -> list[int]:
    """The non-constant tensors ``op`` reads, each once, in operand order."""
    seen: list[int] = []
    for t in op.inputs:
        if t != NO_TENSOR and graph.tensors[t].data is None and t not in seen:
            seen.append(t)
    return seen


def _writes(graph: ir.Graph, op: ir.Operation) -> list[int]:
    """The tensors ``op`` writes: its outputs, and the variables it updates in place."""
    in_place = [t for t in _reads(graph, op) if graph.tensors[t].is_variable]
    return list(dict.fromkeys([*op.outputs, *in_place]))


def _check_read_before_write(
    graph: ir.Graph, t: int, node: int, writer: dict[int, int], readers: dict[int, list[int]]
) -> None:
    """A plain tensor read before its first write means the operations are out of order."""
    early = readers.get(t)
    if t in writer or not early or t in graph.inputs or graph.tensors[t].is_variable:
        return
    raise ModelError(
        f"{graph.tensors[t].describe()} is read by node {early[0]} before node {node} "
        f"produces it: the operations are not in execution order"
    )


def _successors(preds: Sequence[Iterable[int]]) -> list[list[int]]:
    succs: list[list[int]] = [[] for _ in preds]
    for node, node_preds in enumerate(preds):
        for p in node_preds:
            succs[p].append(node)
    return succs


def _phases(
    preds: Sequence[frozenset[int]], supported: set[int], start_supported: bool
) -> list[list[int]]:
    """Greedy alternation: the supported phases (sorted nodes) of one run from one start kind."""
    succs = _successors(preds)
    missing = [len(p) for p in preds]
    ready: dict[bool, list[int]] = {True: [], False: []}
    for node, count in enumerate(missing):
        if count == 0:
            ready[node in supported].append(node)  # ascending, hence already a heap
    groups: list[list[int]] = []
    kind = start_supported
    while ready[True] or ready[False]:
        taken = list(_drain(ready, kind, succs, missing, supported))
        if kind and taken:
            groups.append(sorted(taken))
        kind = not kind
    return groups


def _drain(
    ready: dict[bool, list[int]],
    kind: bool,
    succs: list[list[int]],
    missing: list[int],
    supported: set[int],
) -> Iterator[int]:
    """Run ready nodes of ``kind`` until none is left, releasing their successors."""
    heap = ready[kind]
    while heap:
        node = heapq.heappop(heap)
        yield node
        for s in succs[node]:
            missing[s] -= 1
            if missing[s] == 0:
                heapq.heappush(ready[s in supported], s)


def _best_grouping(preds: Sequence[frozenset[int]], supported: set[int]) -> list[list[int]]:
    """The better of the two greedy runs: fewer partitions, then larger ones, then supported first."""

    def score(start: bool) -> tuple[int, list[int], bool]:
        groups = runs[start]
        return len(groups), sorted(-len(g) for g in groups), not start

    runs = {start: _phases(preds, supported, start) for start in (True, False)}
    return runs[min(runs, key=score)]


def _keep(groups: list[list[int]], max_partitions: int | None, min_nodes: int) -> list[list[int]]:
    """Drop groups under ``min_nodes``, then keep the ``max_partitions`` largest, in order."""
    groups = [g for g in groups if len(g) >= min_nodes]
    if max_partitions is None or len(groups) <= max_partitions:
        return groups
    largest = sorted(range(len(groups)), key=lambda k: (-len(groups[k]), k))[:max_partitions]
    return [groups[k] for k in sorted(largest)]


def _consumers(graph: ir.Graph) -> dict[int, set[int]]:
    """Tensor -> the nodes that read it."""
    consumers: dict[int, set[int]] = {}
    for i, op in enumerate(graph.operations):
        for t in _reads(graph, op):
            consumers.setdefault(t, set()).add(i)
    return consumers


def _make_partition(
    graph: ir.Graph, index: int, nodes: list[int], consumers: dict[int, set[int]]
) -> Partition:
    """A partition of ``nodes`` with its boundary tensors."""
    inside = set(nodes)
    ops = [graph.operations[i] for i in nodes]
    produced = {t for op in ops for t in op.outputs}
    inputs = [t for op in ops for t in _reads(graph, op) if t not in produced]
    graph_outputs = set(graph.outputs)
    outputs = [
        t
        for op in ops
        for t in op.outputs
        if t != NO_TENSOR and (t in graph_outputs or consumers.get(t, set()) - inside)
    ]
    return Partition(
        index=index,
        nodes=tuple(nodes),
        inputs=tuple(dict.fromkeys(inputs)),
        outputs=tuple(dict.fromkeys(outputs)),
    )


def _owners(graph: ir.Graph, partitions: Sequence[Partition]) -> dict[int, int]:
    """Node -> position of the partition that claims it; overlaps are an error."""
    owner: dict[int, int] = {}
    for k, p in enumerate(partitions):
        for node in p.nodes:
            if not 0 <= node < len(graph.operations):
                raise ValueError(f"partition {p.index} names node {node} outside the graph")
            if node in owner:
                raise ValueError(f"node {node} is in two partitions: {partitions[owner[node]].index}, {p.index}")
            owner[node] = k
    return owner


def _topological(preds: list[set[int]], keys: list[int]) -> list[int]:
    """Kahn's algorithm, lowest key first; a result shorter than ``preds`` means a cycle."""
    succs = _successors(preds)
    missing = [len(p) for p in preds]
    heap = [(keys[k], k) for k, count in enumerate(missing) if count == 0]
    heapq.heapify(heap)
    order: list[int] = []
    while heap:
        _, k = heapq.heappop(heap)
        order.append(k)
        for s in succs[k]:
            missing[s] -= 1
            if missing[s] == 0:
                heapq.heappush(heap, (keys[s], s))
    return order
