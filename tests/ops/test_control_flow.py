"""WHILE and IF (subgraphs run by an op) against LiteRT's reference kernels: counters, tensor
accumulators, bodies whose outputs grow every iteration, branches, nesting, repeated invokes."""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import teflon_py
from teflon_py.errors import TeflonError
from teflon_py.tflite import options as opts
from teflon_py.tflite.builder import GraphBuilder
from tests.harness import ModelBuilder, check_model, quantization
from tests.ops.test_variables import compare_invokes


def _while(g: GraphBuilder, inputs: list[int], cond: GraphBuilder, body: GraphBuilder,
           shapes: list[tuple], dtypes: list[Any], **kw: Any) -> list[int]:
    """Append a WHILE over ``inputs``; its output tensors."""
    outs = [g.add_tensor(f"while_out{k}", s, d, **kw.get(f"out{k}", {})) for k, (s, d) in enumerate(zip(shapes, dtypes))]
    g.add_op("WHILE", inputs, outs, opts.WhileOptions(cond_subgraph_index=cond.graph.index,
                                                      body_subgraph_index=body.graph.index))
    return outs


def _less_than(mb: ModelBuilder, limit: int, loop_vars: list[tuple], position: int = 0) -> GraphBuilder:
    """A cond subgraph: loop var ``position`` (int32 scalar) < ``limit``."""
    cond = mb.add_graph("cond")
    ins = [cond.add_input(f"v{k}", s, d, **kw) for k, (s, d, kw) in enumerate(loop_vars)]
    less = cond.add_tensor("less", [], np.bool_)
    cond.add_op("LESS", [ins[position], cond.add_constant("limit", np.int32(limit))], [less])
    cond.mark_outputs(less)
    return cond


def _increment(body: GraphBuilder, i: int) -> int:
    i1 = body.add_tensor("i1", [], np.int32)
    body.add_op("ADD", [i, body.add_constant("one", np.int32(1))], [i1], opts.AddOptions())
    return i1


# -- a counter -----------------------------------------------------------------------------------

def counter_model() -> bytes:
    """(i, n) -> while i < n: i += 1; the body passes n through unchanged."""
    mb = ModelBuilder()
    g = mb.main
    i0, n = g.add_input("i0", [], np.int32), g.add_input("n", [], np.int32)
    cond = mb.add_graph("cond")
    ci, cn = cond.add_input("i", [], np.int32), cond.add_input("n", [], np.int32)
    less = cond.add_tensor("less", [], np.bool_)
    cond.add_op("LESS", [ci, cn], [less])
    cond.mark_outputs(less)
    body = mb.add_graph("body")
    bi, bn = body.add_input("i", [], np.int32), body.add_input("n", [], np.int32)
    body.mark_outputs(_increment(body, bi), bn)
    g.mark_outputs(*_while(g, [i0, n], cond, body, [(), ()], [np.int32, np.int32]))
    return mb.build()


@pytest.mark.parametrize("start,limit", [(0, 5), (3, 5), (7, 5), (-4, 20), (5, 5)])
def test_while_counter(start, limit, backend):
    it = check_model(counter_model(), backend, inputs=[np.int32(start), np.int32(limit)])
    assert int(it.get_tensor(it.get_output_details()[0]["index"])) == max(start, limit)


def test_while_repeated_invokes_do_not_leak_state(backend):
    """The cached subgraph executors start from the op's inputs every time."""
    steps = [[np.int32(a), np.int32(b)] for a, b in [(0, 3), (10, 2), (1, 9), (0, 0)]]
    compare_invokes(counter_model(), backend, steps)


# -- a tensor accumulator ------------------------------------------------------------------------

def accumulate_model(shape: tuple, dtype: Any, quant: Any = None, iterations: int = 4) -> bytes:
    """(i, acc, x) -> while i < iterations: acc = acc * 2 + x (MUL, ADD in the body)."""
    q = {"quantization": quant} if quant is not None else {}
    mb = ModelBuilder()
    g = mb.main
    i0 = g.add_constant("i0", np.int32(0))
    acc0, x = g.add_input("acc0", shape, dtype, **q), g.add_input("x", shape, dtype, **q)
    loop_vars = [((), np.int32, {}), (shape, dtype, q), (shape, dtype, q)]
    cond = _less_than(mb, iterations, loop_vars)
    body = mb.add_graph("body")
    bi, bacc, bx = (body.add_input(f"v{k}", s, d, **kw) for k, (s, d, kw) in enumerate(loop_vars))
    two = body.add_constant("two", np.asarray(2, dtype), **({"quantization": quantization(1.0, 0)} if quant else {}))
    doubled, nxt = body.add_tensor("doubled", shape, dtype, **q), body.add_tensor("next", shape, dtype, **q)
    body.add_op("MUL", [bacc, two], [doubled], opts.MulOptions())
    body.add_op("ADD", [doubled, bx], [nxt], opts.AddOptions())
    body.mark_outputs(_increment(body, bi), nxt, bx)
    outs = _while(g, [i0, acc0, x], cond, body, [(), shape, shape], [np.int32, dtype, dtype],
                  out1=q, out2=q)
    g.mark_outputs(outs[1], outs[0])
    return mb.build()


@pytest.mark.parametrize("shape", [(3,), (2, 3), (1, 4, 4, 2)])
@pytest.mark.parametrize("dtype", ["float32", "int32", "int8"])
def test_while_accumulates_a_tensor(shape, dtype, backend):
    rng = np.random.default_rng(sum(shape))
    if dtype == "int8":
        model = accumulate_model(shape, np.int8, quantization(0.5, 3), iterations=3)  # |acc| stays < 32
        inputs = [rng.integers(-3, 10, shape).astype(np.int8), rng.integers(-1, 6, shape).astype(np.int8)]
    elif dtype == "int32":
        model = accumulate_model(shape, np.int32)
        inputs = [rng.integers(-1000, 1000, shape).astype(np.int32) for _ in range(2)]
    else:
        model = accumulate_model(shape, np.float32)
        inputs = [rng.standard_normal(shape).astype(np.float32) for _ in range(2)]
    check_model(model, backend, inputs=inputs)


# -- a body whose outputs grow -------------------------------------------------------------------

def growing_model(width: int, iterations: int) -> bytes:
    """(i, s) -> while i < iterations: s = concat(s, s * 2 + 1, axis=-1): s doubles in width."""
    mb = ModelBuilder()
    g = mb.main
    i0 = g.add_input("i0", [], np.int32)
    s0 = g.add_input("s0", [1, width], np.float32, shape_signature=[1, -1])
    dyn = {"shape_signature": [1, -1]}
    loop_vars = [((), np.int32, {}), ((1, width), np.float32, dyn)]
    cond = _less_than(mb, iterations, loop_vars)
    body = mb.add_graph("body")
    bi = body.add_input("i", [], np.int32)
    bs = body.add_input("s", [1, width], np.float32, **dyn)
    doubled, shifted = (body.add_tensor(n, [1, width], np.float32, **dyn) for n in ("doubled", "shifted"))
    body.add_op("MUL", [bs, body.add_constant("two", np.float32(2))], [doubled], opts.MulOptions())
    body.add_op("ADD", [doubled, body.add_constant("one", np.float32(1))], [shifted], opts.AddOptions())
    grown = body.add_tensor("grown", [1, 2 * width], np.float32, **dyn)
    body.add_op("CONCATENATION", [bs, shifted], [grown], opts.ConcatenationOptions(axis=-1))
    body.mark_outputs(_increment(body, bi), grown)
    outs = _while(g, [i0, s0], cond, body, [(), (1, width)], [np.int32, np.float32], out1=dyn)
    g.mark_outputs(outs[1], outs[0])
    return mb.build()


@pytest.mark.parametrize("width,iterations,start", [(2, 3, 0), (3, 1, 0), (1, 5, 0), (2, 3, 3)])
def test_while_body_output_grows(width, iterations, start, backend):
    rng = np.random.default_rng(width)
    s0 = rng.standard_normal((1, width)).astype(np.float32)
    it = check_model(growing_model(width, iterations), backend, inputs=[np.int32(start), s0])
    out = it.get_tensor(it.get_output_details()[0]["index"])
    assert out.shape == (1, width << max(iterations - start, 0))


def test_while_growth_restarts_each_invoke(backend):
    rng = np.random.default_rng(5)
    s0 = rng.standard_normal((1, 2)).astype(np.float32)
    compare_invokes(growing_model(2, 3), backend, [[np.int32(0), s0], [np.int32(2), s0], [np.int32(1), s0]])


# -- IF ------------------------------------------------------------------------------------------

def if_model(shape: tuple, dtype: Any, grow_then: bool = False) -> bytes:
    """IF(c, x, y): then = x * y + 1, else = x - y; with ``grow_then`` then = concat(x, y, axis 0)."""
    mb = ModelBuilder()
    g = mb.main
    c = g.add_input("c", [1], np.bool_)
    x, y = g.add_input("x", shape, dtype), g.add_input("y", shape, dtype)
    then = mb.add_graph("then")
    tx, ty = then.add_input("x", shape, dtype), then.add_input("y", shape, dtype)
    if grow_then:
        out_then = then.add_tensor("cat", (2 * shape[0],) + shape[1:], dtype)
        then.add_op("CONCATENATION", [tx, ty], [out_then], opts.ConcatenationOptions(axis=0))
    else:
        prod, out_then = then.add_tensor("prod", shape, dtype), then.add_tensor("plus", shape, dtype)
        then.add_op("MUL", [tx, ty], [prod], opts.MulOptions())
        then.add_op("ADD", [prod, then.add_constant("one", np.asarray(1, dtype))], [out_then], opts.AddOptions())
    then.mark_outputs(out_then)
    els = mb.add_graph("else")
    ex, ey = els.add_input("x", shape, dtype), els.add_input("y", shape, dtype)
    diff = els.add_tensor("diff", shape, dtype)
    els.add_op("SUB", [ex, ey], [diff], opts.SubOptions())
    els.mark_outputs(diff)
    out = g.add_tensor("out", shape, dtype)
    g.add_op("IF", [c, x, y], [out], opts.IfOptions(then_subgraph_index=then.graph.index,
                                                    else_subgraph_index=els.graph.index))
    g.mark_outputs(out)
    return mb.build()


@pytest.mark.parametrize("grow_then", [False, True], ids=["same_shapes", "then_grows"])
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
@pytest.mark.parametrize("shape", [(3,), (2, 4), (2, 2, 3)])
@pytest.mark.parametrize("cond", [True, False])
def test_if_chooses_a_branch(cond, shape, dtype, grow_then, backend):
    rng = np.random.default_rng(len(shape))
    xs = [(rng.standard_normal(shape) * 100).astype(dtype) for _ in range(2)]
    check_model(if_model(shape, dtype, grow_then), backend, inputs=[np.array([cond]), *xs])


def test_if_switches_branches_between_invokes(backend):
    rng = np.random.default_rng(2)
    xs = [rng.standard_normal((2, 3)).astype(np.float32) for _ in range(2)]
    steps = [[np.array([c]), *xs] for c in (True, False, False, True)]
    compare_invokes(if_model((2, 3), np.float32, grow_then=True), backend, steps)


# -- nesting -------------------------------------------------------------------------------------

def test_if_nested_in_while_body(backend):
    """(i, acc, x) -> while i < 5: acc = (i < 2) ? acc + x : acc * x; subgraphs three deep."""
    shape = (2, 3)
    mb = ModelBuilder()
    g = mb.main
    i0, acc0, x = g.add_input("i0", [], np.int32), g.add_input("acc0", shape, np.float32), \
        g.add_input("x", shape, np.float32)
    loop_vars = [((), np.int32, {}), (shape, np.float32, {}), (shape, np.float32, {})]
    cond = _less_than(mb, 5, loop_vars)
    body = mb.add_graph("body")
    then, els = mb.add_graph("then"), mb.add_graph("else")
    for branch, op in ((then, "ADD"), (els, "MUL")):
        a, b = branch.add_input("a", shape, np.float32), branch.add_input("b", shape, np.float32)
        r = branch.add_tensor("r", shape, np.float32)
        branch.add_op(op, [a, b], [r], opts.AddOptions() if op == "ADD" else opts.MulOptions())
        branch.mark_outputs(r)
    bi, bacc, bx = (body.add_input(f"v{k}", s, d) for k, (s, d, _) in enumerate(loop_vars))
    small = body.add_tensor("small", [], np.bool_)
    body.add_op("LESS", [bi, body.add_constant("two", np.int32(2))], [small])
    nxt = body.add_tensor("next", shape, np.float32)
    body.add_op("IF", [small, bacc, bx], [nxt], opts.IfOptions(then_subgraph_index=then.graph.index,
                                                               else_subgraph_index=els.graph.index))
    body.mark_outputs(_increment(body, bi), nxt, bx)
    outs = _while(g, [i0, acc0, x], cond, body, [(), shape, shape], [np.int32] + [np.float32] * 2)
    g.mark_outputs(outs[1])
    rng = np.random.default_rng(3)
    acc, xv = (rng.standard_normal(shape).astype(np.float32) for _ in range(2))
    compare_invokes(mb.build(), backend, [[np.int32(k), acc, xv] for k in (0, 1, 3, 6)])


def test_unknown_op_in_a_subgraph_fails_at_allocation():
    """Subgraphs that control flow names are planned with the graph that names them."""
    mb = ModelBuilder()
    g = mb.main
    c, x = g.add_input("c", [1], np.bool_), g.add_input("x", [2], np.float32)
    branches = []
    for name in ("then", "else"):
        b = mb.add_graph(name)
        bx, out = b.add_input("x", [2], np.float32), b.add_tensor("out", [2], np.float32)
        if name == "then":
            b.add_op("ABS", [bx], [out])
        else:
            b.add_op("CUSTOM", [bx], [out], custom_code="NO_SUCH_OP")
        b.mark_outputs(out)
        branches.append(b.graph.index)
    out = g.add_tensor("out", [2], np.float32)
    g.add_op("IF", [c, x], [out], opts.IfOptions(then_subgraph_index=branches[0], else_subgraph_index=branches[1]))
    g.mark_outputs(out)
    it = teflon_py.Interpreter(model_content=mb.build())
    with pytest.raises(TeflonError, match=r"node 0 \(NO_SUCH_OP\): custom op NO_SUCH_OP has no NumPy fallback"):
        it.allocate_tensors()


def _self_calling_while() -> bytes:
    """A WHILE whose body is the graph it sits in (TFLite forbids recursion)."""
    mb = ModelBuilder()
    g = mb.main
    i = g.add_input("i", [], np.int32)
    cond = _less_than(mb, 3, [((), np.int32, {})])
    g.mark_outputs(*_while(g, [i], cond, g, [()], [np.int32]))
    return mb.build()


def _int_condition_if() -> bytes:
    """An IF whose condition is int32 (TFLite takes only bool)."""
    mb = ModelBuilder()
    g = mb.main
    c, x = g.add_input("c", [1], np.int32), g.add_input("x", [2], np.float32)
    branch = mb.add_graph("branch")
    branch.mark_outputs(branch.add_input("x", [2], np.float32))
    out = g.add_tensor("out", [2], np.float32)
    g.add_op("IF", [c, x], [out], opts.IfOptions(then_subgraph_index=1, else_subgraph_index=1))
    g.mark_outputs(out)
    return mb.build()


@pytest.mark.parametrize("make,message", [(_self_calling_while, r"node 0 \(WHILE\): .*recursion"), (_int_condition_if, r"node 0 \(IF\): .*one bool")])
def test_malformed_control_flow_raises(make, message):
    it = teflon_py.Interpreter(model_content=make())
    it.allocate_tensors()
    with pytest.raises(TeflonError, match=message):
        it.invoke()
