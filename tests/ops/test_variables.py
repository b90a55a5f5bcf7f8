"""Resource variables (VAR_HANDLE, READ_VARIABLE, ASSIGN_VARIABLE with CALL_ONCE) and variable
tensors: state kept across invokes, compared invoke by invoke with LiteRT's reference kernels."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import flatbuffers
import numpy as np
import pytest
from ai_edge_litert.interpreter import Interpreter as LiteRTInterpreter
from ai_edge_litert.interpreter import OpResolverType

import teflon_py
from teflon_py.errors import TeflonError
from teflon_py.fallback import register_custom_op
from teflon_py.tflite import options as opts
from teflon_py.tflite.reader import FILE_IDENTIFIER
from teflon_py.tflite.schema import fb
from tests.harness import ModelBuilder, assert_close, quantization

# -- a script of invokes, run on both interpreters ---------------------------------------------
#: A step: a list of input arrays (set them, invoke, record the outputs); "reset"
#: (reset_all_variables); ("set", tensor index, array); ("resize", input position, shape).
Step = Any


def _play(it: Any, steps: Sequence[Step]) -> list[list[np.ndarray]]:
    """Run ``steps`` on an allocated interpreter; the outputs of every invoke."""
    results = []
    for step in steps:
        if isinstance(step, str) and step == "reset":
            it.reset_all_variables()
        elif isinstance(step, tuple) and step[0] == "set":
            it.set_tensor(step[1], step[2])
        elif isinstance(step, tuple) and step[0] == "resize":
            it.resize_tensor_input(it.get_input_details()[step[1]]["index"], list(step[2]))
            it.allocate_tensors()
        else:
            for d, x in zip(it.get_input_details(), step):
                it.set_tensor(d["index"], x)
            it.invoke()
            results.append([np.asarray(it.get_tensor(d["index"])) for d in it.get_output_details()])
    return results


def compare_invokes(model: bytes, backend: str, steps: Sequence[Step],
                    float_tol: float = 1e-5) -> list[list[np.ndarray]]:
    """Play ``steps`` on LiteRT (BUILTIN_REF) and on teflon-py; every invoke's outputs must match."""
    lite = LiteRTInterpreter(model_content=model, experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
    lite.allocate_tensors()
    expected = _play(lite, steps)
    delegates = [] if backend == "numpy" else [teflon_py.load_delegate(backend)]
    ours = teflon_py.Interpreter(model_content=model, experimental_delegates=delegates)
    ours.allocate_tensors()
    actual = _play(ours, steps)
    assert len(actual) == len(expected)
    for k, (outs, refs) in enumerate(zip(actual, expected)):
        for j, (a, e) in enumerate(zip(outs, refs)):
            assert_close(a, e, float_tol, f"invoke {k} output {j}")
    return expected


def with_resource_handles(model: bytes) -> bytes:
    """The model with every VAR_HANDLE output typed RESOURCE, as the converter writes it."""
    m = fb.ModelT.InitFromPackedBuf(model, 0)
    var_handle = {k for k, oc in enumerate(m.operatorCodes) if oc.builtinCode == fb.BuiltinOperator.VAR_HANDLE}
    for sg in m.subgraphs:
        for op in sg.operators:
            if op.opcodeIndex in var_handle:
                sg.tensors[op.outputs[0]].type = fb.TensorType.RESOURCE
    builder = flatbuffers.Builder(1024)
    builder.Finish(m.Pack(builder), file_identifier=FILE_IDENTIFIER)
    return bytes(builder.Output())


# -- models ------------------------------------------------------------------------------------

def _handle(g: Any, name: str, container: str = "") -> int:
    h = g.add_tensor(f"{name}_handle", [], np.int32)
    g.add_op("VAR_HANDLE", [], [h], opts.VarHandleOptions(container=container, shared_name=name))
    return h


def _add_init_graph(mb: ModelBuilder, name: str, value: np.ndarray) -> int:
    """A subgraph without inputs or outputs that assigns ``value`` to variable ``name``."""
    init = mb.add_graph(f"init_{name}")
    init.add_op("ASSIGN_VARIABLE", [_handle(init, name), init.add_constant("init", value)], [])
    return init.graph.index


def accumulator_model(shape: Sequence[int], dtype: Any, init: np.ndarray, step: Any = None) -> bytes:
    """out = v + x; v = out (+ step): CALL_ONCE sets v = init, then every invoke adds its input."""
    mb = ModelBuilder()
    g = mb.main
    x = g.add_input("x", shape, dtype)
    index = _add_init_graph(mb, "acc", init)
    g.add_op("CALL_ONCE", [], [], opts.CallOnceOptions(init_subgraph_index=index))
    h = _handle(g, "acc")
    v = g.add_tensor("v", shape, dtype)
    out = g.add_tensor("out", shape, dtype)
    g.add_op("READ_VARIABLE", [h], [v])
    g.add_op("ADD", [v, x], [out], opts.AddOptions())
    new = out
    if step is not None:
        new = g.add_tensor("new", shape, dtype)
        g.add_op("ADD", [out, g.add_constant("step", np.asarray(step, dtype))], [new], opts.AddOptions())
    g.add_op("ASSIGN_VARIABLE", [h, new], [])
    g.mark_outputs(out)
    return mb.build()


SHAPES = [(2, 3), (4,), (1, 2, 2, 3)]


@pytest.mark.parametrize("resource_type", [False, True], ids=["int32_handle", "resource_handle"])
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
@pytest.mark.parametrize("shape", SHAPES)
def test_call_once_initialises_variable_updated_across_invokes(shape, dtype, resource_type, backend):
    rng = np.random.default_rng(len(shape))
    init = (rng.standard_normal(shape) * 10).astype(dtype)
    model = accumulator_model(shape, dtype, init)
    if resource_type:
        model = with_resource_handles(model)
    steps = [[(rng.standard_normal(shape) * 10).astype(dtype)] for _ in range(3)]
    outs = compare_invokes(model, backend, steps)
    assert not np.array_equal(outs[0][0], outs[2][0])  # the state really moved


def test_reset_all_variables_keeps_resource_variables(backend):
    """LiteRT's reset_all_variables zeroes variable tensors only: resources and CALL_ONCE stay."""
    model = accumulator_model((3,), np.float32, np.array([1, 2, 3], np.float32))
    x = np.array([10, 20, 30], np.float32)
    outs = compare_invokes(model, backend, [[x], [x], "reset", [x], "reset", "reset", [x]])
    np.testing.assert_array_equal(outs[-1][0], [41, 82, 123])


def test_resize_keeps_resource_variables_and_probe_has_no_side_effects(backend):
    """Re-allocation after a resize keeps the resources; planning the new shapes changes nothing."""
    model = accumulator_model((3,), np.float32, np.array([1, 2, 3], np.float32), step=np.float32(100))
    x3, x1 = np.array([1, 2, 3], np.float32), np.array([5], np.float32)
    compare_invokes(model, backend, [[x3], [x3], ("resize", 0, (1,)), [x1], [x1]])


def test_resource_ids_and_variables_shared_by_name(backend):
    """Ids number (container, shared_name) pairs model-wide in TFLite's order; same name, same variable."""
    mb = ModelBuilder()
    g = mb.main
    x = g.add_input("x", [2], np.float32)
    a_index = _add_init_graph(mb, "a", np.array([1, 2], np.float32))
    b_index = _add_init_graph(mb, "b", np.array([100, 200], np.float32))
    g.add_op("CALL_ONCE", [], [], opts.CallOnceOptions(init_subgraph_index=b_index))
    g.add_op("CALL_ONCE", [], [], opts.CallOnceOptions(init_subgraph_index=a_index))
    hb = _handle(g, "b")
    hc = _handle(g, "b", container="other")  # a different resource than "b"
    ha = _handle(g, "a")
    va, vb, s = (g.add_tensor(n, [2], np.float32) for n in ("va", "vb", "s"))
    g.add_op("READ_VARIABLE", [ha], [va])
    g.add_op("READ_VARIABLE", [hb], [vb])
    g.add_op("ADD", [va, vb], [s], opts.AddOptions())
    g.add_op("ASSIGN_VARIABLE", [hc, s], [])
    sum_x = g.add_tensor("sum_x", [2], np.float32)
    g.add_op("ADD", [s, x], [sum_x], opts.AddOptions())
    g.add_op("ASSIGN_VARIABLE", [hb, sum_x], [])
    g.mark_outputs(sum_x, ha, hb, hc)
    x0 = np.array([0.5, -1], np.float32)
    outs = compare_invokes(mb.build(), backend, [[x0], [x0], [x0]])
    assert [int(o) for o in outs[0][1:]] == [2, 0, 1]  # numbered as read, not as run


def test_variable_updated_inside_while_body(backend):
    """A WHILE body reads and assigns a variable its caller initialised: one store for all subgraphs."""
    mb = ModelBuilder()
    g = mb.main
    i0 = g.add_input("i0", [], np.int32)
    x = g.add_input("x", [2], np.float32)
    init = _add_init_graph(mb, "v", np.array([0, 1], np.float32))
    cond = mb.add_graph("cond")
    ci, _ = cond.add_input("i", [], np.int32), cond.add_input("x", [2], np.float32)
    less = cond.add_tensor("less", [], np.bool_)
    cond.add_op("LESS", [ci, cond.add_constant("limit", np.int32(4))], [less])
    cond.mark_outputs(less)
    body = mb.add_graph("body")
    bi, bx = body.add_input("i", [], np.int32), body.add_input("x", [2], np.float32)
    bh = _handle(body, "v")
    bv, bs, bi1 = body.add_tensor("v", [2], np.float32), body.add_tensor("s", [2], np.float32), \
        body.add_tensor("i1", [], np.int32)
    body.add_op("READ_VARIABLE", [bh], [bv])
    body.add_op("ADD", [bv, bx], [bs], opts.AddOptions())
    body.add_op("ASSIGN_VARIABLE", [bh, bs], [])
    body.add_op("ADD", [bi, body.add_constant("one", np.int32(1))], [bi1], opts.AddOptions())
    body.mark_outputs(bi1, bx)
    g.add_op("CALL_ONCE", [], [], opts.CallOnceOptions(init_subgraph_index=init))
    wi, wx = g.add_tensor("wi", [], np.int32), g.add_tensor("wx", [2], np.float32)
    g.add_op("WHILE", [i0, x], [wi, wx], opts.WhileOptions(cond_subgraph_index=cond.graph.index,
                                                            body_subgraph_index=body.graph.index))
    h = _handle(g, "v")
    v = g.add_tensor("v", [2], np.float32)
    g.add_op("READ_VARIABLE", [h], [v])
    g.mark_outputs(v, wi)
    x0 = np.array([1, 10], np.float32)
    outs = compare_invokes(mb.build(), backend, [[np.int32(0), x0], [np.int32(2), x0], [np.int32(9), x0]])
    np.testing.assert_array_equal(outs[-1][0], [6, 61])


def test_read_before_assign_fails_like_litert():
    mb = ModelBuilder()
    g = mb.main
    x = g.add_input("x", [2], np.float32)
    v, out = g.add_tensor("v", [2], np.float32), g.add_tensor("out", [2], np.float32)
    g.add_op("READ_VARIABLE", [_handle(g, "never")], [v])
    g.add_op("ADD", [v, x], [out], opts.AddOptions())
    g.mark_outputs(out)
    model = mb.build()
    lite = LiteRTInterpreter(model_content=model, experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
    lite.allocate_tensors()
    with pytest.raises(RuntimeError):
        lite.invoke()
    ours = teflon_py.Interpreter(model_content=model)
    ours.allocate_tensors()
    with pytest.raises(TeflonError, match=r"node 1 \(READ_VARIABLE\): resource variable 0 is read before any ASSIGN_VARIABLE"):
        ours.invoke()


# -- variable tensors (is_variable) --------------------------------------------------------------

def variable_tensor_model(dtype: Any, quant: Any = None) -> tuple[bytes, int]:
    """y = x + state, state a variable tensor: (model, state's tensor index)."""
    mb = ModelBuilder()
    g = mb.main
    x = g.add_input("x", [2, 3], dtype, quantization=quant)
    state = g.add_tensor("state", [2, 3], dtype, quantization=quant, is_variable=True)
    y = g.add_tensor("y", [2, 3], dtype, quantization=quant)
    g.add_op("ADD", [x, state], [y], opts.AddOptions())
    g.mark_outputs(y)
    return mb.build(), state


@pytest.mark.parametrize("dtype", ["float32", "int8"])
def test_variable_tensor_keeps_its_value_until_reset(dtype, backend):
    """A variable tensor keeps what was written to it across invokes; reset gives 0 (int8: zero point)."""
    rng = np.random.default_rng(1)
    if dtype == "int8":
        model, state = variable_tensor_model(np.int8, quantization(0.05, -7))
        x = rng.integers(-60, 60, (2, 3)).astype(np.int8)
        value = rng.integers(-60, 60, (2, 3)).astype(np.int8)
    else:
        model, state = variable_tensor_model(np.float32)
        x = rng.standard_normal((2, 3)).astype(np.float32)
        value = rng.standard_normal((2, 3)).astype(np.float32)
    compare_invokes(model, backend, [[x], ("set", state, value), [x], [x], "reset", [x]])


def _counter_kernel(node: Any, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    """Test custom op: out = state + x, then state = out (the LSTM pattern: state is a variable input)."""
    out = inputs[1] + inputs[0]
    node.context.assign(node.op.inputs[1], out)
    return out


register_custom_op("TEFLON_TEST_COUNTER", _counter_kernel)


def _counter_graph(g: Any, x: int) -> int:
    state = g.add_tensor("state", [3], np.float32, is_variable=True)
    out = g.add_tensor("count", [3], np.float32)
    g.add_op("CUSTOM", [x, state], [out], custom_code="TEFLON_TEST_COUNTER")
    return out


def test_assigned_variable_tensor_persists_across_invokes_and_resets():
    """``node.context.assign`` on a variable tensor: kept across invokes, zeroed by reset_all_variables."""
    mb = ModelBuilder()
    x = mb.main.add_input("x", [3], np.float32)
    mb.main.mark_outputs(_counter_graph(mb.main, x))
    it = teflon_py.Interpreter(model_content=mb.build())
    it.allocate_tensors()
    x0 = np.array([1, 2, 3], np.float32)
    outs = _play(it, [[x0], [x0], [x0], "reset", [x0]])
    np.testing.assert_array_equal([o[0] for o in outs], [x0, 2 * x0, 3 * x0, x0])


def test_variable_tensor_in_a_while_body_persists_and_resets():
    """Control-flow subgraphs keep their executors: their variable tensors persist and reset too."""
    mb = ModelBuilder()
    g = mb.main
    i0, x = g.add_input("i0", [], np.int32), g.add_input("x", [3], np.float32)
    cond = mb.add_graph("cond")
    ci, _ = cond.add_input("i", [], np.int32), cond.add_input("x", [3], np.float32)
    less = cond.add_tensor("less", [], np.bool_)
    cond.add_op("LESS", [ci, cond.add_constant("limit", np.int32(2))], [less])
    cond.mark_outputs(less)
    body = mb.add_graph("body")
    bi, bx = body.add_input("i", [], np.int32), body.add_input("x", [3], np.float32)
    bi1 = body.add_tensor("i1", [], np.int32)
    body.add_op("ADD", [bi, body.add_constant("one", np.int32(1))], [bi1], opts.AddOptions())
    body.mark_outputs(bi1, _counter_graph(body, bx))
    wi, wx = g.add_tensor("wi", [], np.int32), g.add_tensor("wx", [3], np.float32)
    g.add_op("WHILE", [i0, x], [wi, wx], opts.WhileOptions(cond_subgraph_index=1, body_subgraph_index=2))
    g.mark_outputs(wx)
    it = teflon_py.Interpreter(model_content=mb.build())
    it.allocate_tensors()
    x0 = np.array([1, 0, 0], np.float32)
    # each invoke: two iterations, x <- state + x, state <- x; state carries over
    outs = [o[0][0] for o in _play(it, [[np.int32(0), x0], [np.int32(0), x0], "reset", [np.int32(0), x0]])]
    assert outs == [2, 6, 2]
