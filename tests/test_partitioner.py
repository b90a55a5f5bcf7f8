"""The partitioner on hand-made graphs and on random DAGs, checked against independent oracles."""
from __future__ import annotations

import graphlib
from collections import deque
from collections.abc import Sequence

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from teflon_py import ir
from teflon_py.errors import ModelError
from teflon_py.partitioner import Partition, execution_plan, node_predecessors, partition, summary

Edges = list[tuple[int, int]]


# ---------------------------------------------------------------------------------------------
# Graph builders


def _tensor(index: int, name: str, *, constant: bool = False, variable: bool = False) -> ir.Tensor:
    data = np.zeros((1,), np.float32) if constant else None
    return ir.Tensor(index, name, (1,), np.dtype(np.float32), data=data, is_variable=variable)


def make_graph(num_nodes: int, edges: Edges, outputs: Sequence[int] | None = None) -> ir.Graph:
    """Node v reads tensor u (node u's output) for each edge (u, v); roots read graph input "x".

    Tensor ``num_nodes`` is the graph input, ``num_nodes + 1`` a constant every node also reads,
    next to an absent optional operand. Graph outputs default to the sinks.
    """
    x, weight = num_nodes, num_nodes + 1
    tensors = [_tensor(i, f"t{i}") for i in range(num_nodes)]
    tensors += [_tensor(x, "x"), _tensor(weight, "w", constant=True)]
    ops = []
    for v in range(num_nodes):
        preds = sorted({u for u, w in edges if w == v}) or [x]
        ops.append(ir.Operation(v, "ADD", (*preds, weight, ir.NO_TENSOR), (v,)))
    if outputs is None:
        outputs = [v for v in range(num_nodes) if all(u != v for u, _ in edges)]
    return ir.Graph(tensors, ops, (x,), tuple(outputs))


def op_graph(num_tensors: int, ops: list[tuple[str, tuple[int, ...], tuple[int, ...]]],
             variables: Sequence[int] = ()) -> ir.Graph:
    """A graph from (opcode, inputs, outputs); tensor 0 is the graph input, the rest plain."""
    tensors = [_tensor(i, f"t{i}", variable=i in variables) for i in range(num_tensors)]
    operations = [ir.Operation(i, code, ins, outs) for i, (code, ins, outs) in enumerate(ops)]
    return ir.Graph(tensors, operations, (0,), ())


def groups(parts: Sequence[Partition]) -> list[tuple[int, ...]]:
    return [p.nodes for p in parts]


# ---------------------------------------------------------------------------------------------
# Independent oracles


def check_convex(num_nodes: int, edges: Edges, parts: Sequence[Partition]) -> None:
    """Contracting every partition into one node leaves the dependency graph acyclic."""
    unit = {node: ("node", node) for node in range(num_nodes)}
    for p in parts:
        unit.update({node: ("partition", p.index) for node in p.nodes})
    sorter: graphlib.TopologicalSorter = graphlib.TopologicalSorter()
    for node in range(num_nodes):
        sorter.add(unit[node])
    for u, v in edges:
        if unit[u] != unit[v]:
            sorter.add(unit[v], unit[u])
    sorter.prepare()  # raises graphlib.CycleError on a cycle


def check_plan(num_nodes: int, edges: Edges, parts: Sequence[Partition], plan: list) -> None:
    """The plan runs each node once, partitions in list order, every edge forward."""
    members = {("partition", p.index): p.nodes for p in parts}
    position: dict[int, int] = {}
    for k, step in enumerate(plan):
        for node in members.get(step, (step[1],) if step[0] == "node" else ()):
            assert node not in position, f"node {node} runs twice"
            position[node] = k
    assert sorted(position) == list(range(num_nodes))
    assert [s for s in plan if s[0] == "partition"] == [("partition", p.index) for p in parts]
    for u, v in edges:
        assert position[u] <= position[v], f"edge {u}->{v} runs backwards"
        if position[u] == position[v]:
            assert plan[position[u]][0] == "partition"


def check_boundary(num_nodes: int, edges: Edges, graph: ir.Graph, p: Partition) -> None:
    """Inputs: tensors from outside in first-use order; outputs: what leaves or is a graph output."""
    inside = set(p.nodes)
    inputs: list[int] = []
    for v in p.nodes:
        preds = sorted({u for u, w in edges if w == v}) or [num_nodes]
        inputs += [u for u in preds if u not in inside and u not in inputs]
    leaves = [v for v in p.nodes if any(u == v and w not in inside for u, w in edges)]
    outputs = [v for v in p.nodes if v in graph.outputs or v in leaves]
    assert p.inputs == tuple(inputs)
    assert p.outputs == tuple(outputs)


def expected_keep(parts: list[tuple[int, ...]], max_partitions: int | None,
                  min_nodes: int) -> list[tuple[int, ...]]:
    """The filtering rule restated: drop small ones, keep the largest (ties: earlier), in order."""
    kept = [g for g in parts if len(g) >= min_nodes]
    while max_partitions is not None and len(kept) > max_partitions:
        smallest = min(len(g) for g in kept)
        last_small = max(k for k, g in enumerate(kept) if len(g) == smallest)
        del kept[last_small]
    return kept


def fewest_partitions(num_nodes: int, edges: Edges, supported: set[int]) -> int:
    """Brute force: the fewest partitions any valid schedule needs (0-1 BFS over done-sets)."""
    pred_mask = [0] * num_nodes
    for u, v in edges:
        pred_mask[v] |= 1 << u
    sup_mask = sum(1 << i for i in supported)
    full = (1 << num_nodes) - 1
    best = {0: 0}
    queue = deque([0])
    while queue:
        done = queue.popleft()
        cost = best[done]
        moves = [(done | 1 << i, 0) for i in range(num_nodes) if not (sup_mask | done) >> i & 1
                 and pred_mask[i] & ~done == 0]
        rest = sup_mask & ~done
        sub = rest
        while sub:
            ok = all(pred_mask[i] & ~(done | sub) == 0 for i in range(num_nodes) if sub >> i & 1)
            if ok:
                moves.append((done | sub, 1))
            sub = (sub - 1) & rest
        for state, step in moves:
            if state not in best or best[state] > cost + step:
                best[state] = cost + step
                (queue.appendleft if step == 0 else queue.append)(state)
    return best[full]


# ---------------------------------------------------------------------------------------------
# Random DAGs


@st.composite
def dags(draw: st.DrawFn, max_nodes: int = 40) -> tuple[int, Edges, ir.Graph]:
    num_nodes = draw(st.integers(1, max_nodes))
    edges: Edges = []
    for v in range(1, num_nodes):
        preds = draw(st.lists(st.integers(0, v - 1), max_size=3, unique=True))
        edges += [(u, v) for u in preds]
    sinks = [v for v in range(num_nodes) if all(u != v for u, _ in edges)]
    extra = draw(st.lists(st.integers(0, num_nodes - 1), max_size=3, unique=True))
    return num_nodes, edges, make_graph(num_nodes, edges, sorted(set(sinks) | set(extra)))


@settings(max_examples=200, deadline=None)
@given(dags(), st.data())
def test_random_dags(dag: tuple[int, Edges, ir.Graph], data: st.DataObject) -> None:
    num_nodes, edges, graph = dag
    supported = data.draw(st.sets(st.integers(0, num_nodes - 1)), label="supported")
    max_partitions = data.draw(st.none() | st.integers(0, 4), label="max_partitions")
    min_nodes = data.draw(st.integers(1, 4), label="min_nodes")

    full = partition(graph, supported)
    assert sorted(n for p in full for n in p.nodes) == sorted(supported)
    assert all(list(p.nodes) == sorted(p.nodes) for p in full)
    parts = partition(graph, supported, max_partitions=max_partitions, min_nodes=min_nodes)
    assert groups(parts) == expected_keep(groups(full), max_partitions, min_nodes)
    assert [p.index for p in parts] == list(range(len(parts)))
    for result in (full, parts):
        check_convex(num_nodes, edges, result)
        check_plan(num_nodes, edges, result, execution_plan(graph, result))
        for p in result:
            check_boundary(num_nodes, edges, graph, p)


@settings(max_examples=200, deadline=None)
@given(dags())
def test_all_supported_is_one_partition(dag: tuple[int, Edges, ir.Graph]) -> None:
    num_nodes, _, graph = dag
    parts = partition(graph, range(num_nodes))
    assert groups(parts) == [tuple(range(num_nodes))]
    assert parts[0].inputs == graph.inputs
    assert parts[0].outputs == graph.outputs


@settings(max_examples=150, deadline=None)
@given(dags(max_nodes=8), st.data())
def test_fewest_partitions_possible(dag: tuple[int, Edges, ir.Graph], data: st.DataObject) -> None:
    num_nodes, edges, graph = dag
    supported = data.draw(st.sets(st.integers(0, num_nodes - 1)), label="supported")
    assert len(partition(graph, supported)) == fewest_partitions(num_nodes, edges, supported)


# ---------------------------------------------------------------------------------------------
# Hand cases


def test_unsupported_middle_of_chain_gives_two() -> None:
    edges = [(0, 1), (1, 2), (2, 3), (3, 4)]
    graph = make_graph(5, edges)
    parts = partition(graph, {0, 1, 3, 4})
    assert groups(parts) == [(0, 1), (3, 4)]
    assert (parts[0].inputs, parts[0].outputs) == ((5,), (1,))
    assert (parts[1].inputs, parts[1].outputs) == ((2,), (4,))
    assert execution_plan(graph, parts) == [("partition", 0), ("node", 2), ("partition", 1)]
    assert summary(graph, parts) == "2 partitions claim 4 of 5 nodes; 1 runs on the fallback"


def test_diamond_with_unsupported_branch_is_split() -> None:
    # A=0 -> B=1 (unsupported) -> D=3 and A -> C=2 -> D: {A, C, D} together would be a cycle.
    edges = [(0, 1), (0, 2), (1, 3), (2, 3)]
    graph = make_graph(4, edges)
    parts = partition(graph, {0, 2, 3})
    assert groups(parts) == [(0, 2), (3,)]
    assert parts[0].outputs == (0, 2)  # A feeds B outside, C feeds D in the next partition
    assert parts[1].inputs == (1, 2)
    check_convex(4, edges, parts)
    plan = execution_plan(graph, parts)
    assert plan == [("partition", 0), ("node", 1), ("partition", 1)]


def test_unsupported_root_does_not_split_the_chain() -> None:
    # TFLite's plain alternation starting with the supported kind gives {0} and {2}.
    graph = make_graph(3, [(0, 2), (1, 2)])
    parts = partition(graph, {0, 2})
    assert groups(parts) == [(0, 2)]
    assert parts[0].inputs == (3, 1)
    assert execution_plan(graph, parts) == [("node", 1), ("partition", 0)]


def test_constants_and_absent_operands_are_not_inputs() -> None:
    graph = make_graph(2, [(0, 1)], outputs=[0, 1])
    (part,) = partition(graph, {0, 1})
    assert part.inputs == (2,)
    assert part.outputs == (0, 1)  # a graph output used inside still leaves the partition


def test_write_after_read_of_a_variable_keeps_order() -> None:
    # Node 0 reads variable 1, node 1 (unsupported) overwrites it, node 2 reads the new value.
    graph = op_graph(5, [("ADD", (0, 1), (2,)), ("ADD", (0,), (1,)), ("ADD", (1,), (3,))],
                     variables=[1])
    assert node_predecessors(graph) == [frozenset(), {0}, {1}]
    parts = partition(graph, {0, 2})
    assert groups(parts) == [(0,), (2,)]
    assert parts[0].inputs == (0, 1)
    assert execution_plan(graph, parts) == [("partition", 0), ("node", 1), ("partition", 1)]


@pytest.mark.parametrize("variable, expected", [(True, [(0,), (2,)]), (False, [(0, 2)])])
def test_in_place_variable_updates_stay_in_order(variable: bool, expected: list) -> None:
    # Stateful ops (e.g. LSTM) take their state as an input and update it in place.
    ops = [("LSTM", (0, 1), (2,)), ("LSTM", (0, 1), (3,)), ("LSTM", (0, 1), (4,))]
    graph = op_graph(5, ops, variables=[1] if variable else [])
    assert groups(partition(graph, {0, 2})) == expected


def test_resource_ops_and_side_effects_stay_in_order() -> None:
    ops = [
        ("ASSIGN_VARIABLE", (0, 1), ()),
        ("READ_VARIABLE", (0,), (2,)),
        ("ASSIGN_VARIABLE", (0, 1), ()),
        ("CUSTOM", (1,), ()),  # no outputs: a side effect
    ]
    graph = op_graph(3, ops)
    assert node_predecessors(graph) == [frozenset(), {0}, {1}, {2}]
    assert groups(partition(graph, {0, 2, 3})) == [(0,), (2, 3)]


def test_free_node_goes_where_it_costs_no_partition() -> None:
    # Node 1 reads only constants: without edges it waits for unsupported node 0 and joins 2.
    graph = op_graph(4, [("ADD", (0,), (1,)), ("ADD", (), (2,)), ("ADD", (1,), (3,))])
    graph.tensors[0] = _tensor(0, "c", constant=True)
    assert groups(partition(graph, {1, 2})) == [(1, 2)]


def test_min_nodes_and_max_partitions() -> None:
    # Supported runs of 2, 1, 3 and 2 nodes, separated by unsupported nodes 2, 4 and 8.
    graph = make_graph(11, [(i, i + 1) for i in range(10)])
    supported = {0, 1, 3, 5, 6, 7, 9, 10}
    assert groups(partition(graph, supported)) == [(0, 1), (3,), (5, 6, 7), (9, 10)]
    assert groups(partition(graph, supported, min_nodes=2)) == [(0, 1), (5, 6, 7), (9, 10)]
    parts = partition(graph, supported, max_partitions=2)
    assert groups(parts) == [(0, 1), (5, 6, 7)]  # tie between (0, 1) and (9, 10): the earlier
    assert [p.index for p in parts] == [0, 1]
    assert execution_plan(graph, parts)[-3:] == [("node", 8), ("node", 9), ("node", 10)]
    assert partition(graph, supported, max_partitions=0) == []
    assert summary(graph, parts) == "2 partitions claim 5 of 11 nodes; 6 run on the fallback"


def test_empty_graph_and_single_partition_summary() -> None:
    empty = make_graph(0, [])
    assert partition(empty, set()) == []
    assert execution_plan(empty, []) == []
    assert summary(empty, []) == "0 partitions claim 0 of 0 nodes; 0 run on the fallback"
    graph = make_graph(2, [(0, 1)])
    assert summary(graph, partition(graph, {0, 1})) == (
        "1 partition claims 2 of 2 nodes; 0 run on the fallback"
    )


def test_execution_plan_rejects_bad_partitions() -> None:
    graph = make_graph(4, [(0, 1), (0, 2), (1, 3), (2, 3)])
    with pytest.raises(ValueError, match="cycle"):
        execution_plan(graph, [Partition(0, (0, 3), (4,), (0, 3))])
    with pytest.raises(ValueError, match="two partitions"):
        execution_plan(graph, [Partition(0, (0,), (), ()), Partition(1, (0, 2), (), ())])
    with pytest.raises(ValueError, match="cycle"):  # valid partitions, but listed out of order
        execution_plan(graph, [Partition(0, (3,), (), ()), Partition(1, (0,), (), ())])


def test_bad_options_and_out_of_order_graph() -> None:
    graph = make_graph(2, [(0, 1)])
    with pytest.raises(ValueError, match="min_nodes"):
        partition(graph, {0}, min_nodes=0)
    with pytest.raises(ValueError, match="max_partitions"):
        partition(graph, {0}, max_partitions=-1)
    with pytest.raises(ValueError, match="outside the graph"):
        partition(graph, {5})
    swapped = op_graph(3, [("ADD", (1,), (2,)), ("ADD", (0,), (1,))])
    with pytest.raises(ModelError, match=r"tensor 1 't1' is read by node 0 before node 1 produces it"):
        partition(swapped, {0, 1})
