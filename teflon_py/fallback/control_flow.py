"""WHILE, IF and CALL_ONCE: ops that run other subgraphs of the model, as TFLite's kernels do.

They run subgraphs through the executor (``node.context.run_subgraph``), always on NumPy. Values
cross subgraph boundaries by reference (no kernel writes an array in place) and the op's outputs
are copies, as TFLite copies tensors between subgraphs. A subgraph's outputs may change shape
from call to call: a WHILE whose body grows a tensor works, its outputs take the last shapes. A
WHILE stops with ``LoopLimitError`` past its iteration cap or ``ModelState.loop_timeout``
(``teflon_py.run_limits``).
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from teflon_py import ir, run_limits
from teflon_py.errors import LoopLimitError
from teflon_py.fallback.registry import Node, register


def _subgraph(node: Node, index: int) -> ir.Graph:
    """The model's subgraph ``index``, checked to exist and not to be the op's own graph."""
    graphs = node.context.model.graphs
    if not 0 <= index < len(graphs):
        raise node.error(f"subgraph index {index} out of range (model has {len(graphs)})")
    if index == node.graph.index:
        raise node.error(f"subgraph {index} is the graph the op is in (recursion)")
    return graphs[index]


def _check_arity(node: Node, index: int, role: str, inputs: int, outputs: int) -> None:
    """TFLite's Prepare checks: the subgraph takes ``inputs`` tensors and gives ``outputs``."""
    g = _subgraph(node, index)
    if len(g.inputs) != inputs or len(g.outputs) != outputs:
        raise node.invalid(
            f"{role} subgraph {index} has {len(g.inputs)} inputs and {len(g.outputs)} outputs, "
            f"expected {inputs} and {outputs}"
        )


def _truth(node: Node, cond: np.ndarray, what: str) -> bool:
    """A condition's value: a bool tensor of one element (a scalar or shape [1])."""
    if cond.dtype != np.bool_ or cond.size != 1:
        raise node.invalid(f"{what} must be one bool, got {cond.dtype} of shape {list(cond.shape)}")
    return bool(cond.reshape(-1)[0])


def _present(node: Node, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
    if any(x is None for x in inputs):
        raise node.invalid("optional (absent) operands are not allowed")
    return list(inputs)


@register("WHILE")
def while_(node: Node, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
    """Run the body subgraph on the loop values while the cond subgraph returns true."""
    cond, body = node.attrs.cond_subgraph_index, node.attrs.body_subgraph_index
    n = len(inputs)
    if len(node.outputs) != n:
        raise node.invalid(f"{len(node.outputs)} outputs for {n} inputs (WHILE returns its loop values)")
    if cond == body:
        raise node.invalid(f"cond and body are the same subgraph {cond}")
    _check_arity(node, cond, "cond", n, 1)
    _check_arity(node, body, "body", n, n)
    run = node.context.run_subgraph
    values = _present(node, inputs)
    limit = node.context.state.loop_timeout
    deadline = run_limits.Deadline(limit)
    cap = run_limits.max_iterations()
    iterations = 0
    while _truth(node, run(cond, values)[0], f"the output of cond subgraph {cond}"):
        if cap is not None and iterations >= cap:
            raise LoopLimitError(f"{node.op.describe()}: the loop ran {cap} iterations, its cap "
                                 f"({run_limits.ITERATIONS_ENV})")
        values = run(body, values)
        iterations += 1
        if deadline.expired():
            raise LoopLimitError(f"{node.op.describe()}: the loop ran past its {limit:g} s limit "
                                 f"({iterations} iterations)")
    return [np.array(v, copy=True) for v in values]


@register("IF")
def if_(node: Node, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
    """Run the then or else subgraph on inputs[1:], chosen by the bool inputs[0]."""
    if not inputs:
        raise node.error("IF needs a condition input")
    then, else_ = node.attrs.then_subgraph_index, node.attrs.else_subgraph_index
    for role, index in (("then", then), ("else", else_)):
        _check_arity(node, index, role, len(inputs) - 1, len(node.outputs))
    branch = then if _truth(node, inputs[0], "the condition") else else_
    outs = node.context.run_subgraph(branch, _present(node, inputs[1:]))
    return [np.array(v, copy=True) for v in outs]


@register("CALL_ONCE")
def call_once(node: Node, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
    """Run the init subgraph the first time any CALL_ONCE names it in this interpreter's life."""
    index = node.attrs.init_subgraph_index
    state = node.context.state
    if index in state.initialized:
        return []
    if inputs or node.outputs:
        raise node.error("CALL_ONCE takes no inputs and gives no outputs")
    _check_arity(node, index, "init", 0, 0)
    node.context.run_subgraph(index, [])
    state.initialized.add(index)
    return []
