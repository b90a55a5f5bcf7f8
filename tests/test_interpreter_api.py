"""LiteRT's Python API, unchanged: the same script bodies run on ``ai_edge_litert.interpreter``
and on ``teflon_py``, and must see the same detail dicts, outputs, shapes and error types."""
from __future__ import annotations

import functools
import types
from collections.abc import Callable
from typing import Any

import ai_edge_litert.interpreter as litert
import numpy as np
import pytest

import teflon_py
from teflon_py import ir, zoo
from teflon_py.tflite import options as O
from teflon_py.tflite.builder import ModelBuilder, quantization
from tests.echo_delegate import EchoDelegate
from tests.harness import assert_close

APIS: dict[str, types.ModuleType] = {"litert": litert, "teflon": teflon_py}
#: passed to both: LiteRT then uses its reference kernels, teflon-py ignores it (as any option it lacks)
REF = {"experimental_op_resolver_type": litert.OpResolverType.BUILTIN_REF}
FLOAT_TOL = 1e-4


# -- models -----------------------------------------------------------------------------------------
def dynamic_batch_model() -> bytes:
    """x[-1,4,4,2] + const -> RELU -> CONV_2D 3x3 -> z; signature 'serving_default' {x} -> {z}."""
    mb = ModelBuilder()
    g = mb.main
    x = g.add_input("x", (1, 4, 4, 2), np.float32, shape_signature=(-1, 4, 4, 2))
    c = g.add_constant("c", np.linspace(-1, 1, 32, dtype=np.float32).reshape(1, 4, 4, 2))
    y = g.add_tensor("y", (1, 4, 4, 2), np.float32)
    g.add_op("ADD", [x, c], [y], O.AddOptions(fused_activation_function=ir.Activation.RELU))
    rng = np.random.default_rng(3)
    w = g.add_constant("w", rng.standard_normal((3, 3, 3, 2)).astype(np.float32))
    b = g.add_constant("b", rng.standard_normal(3).astype(np.float32))
    z = g.add_tensor("z", (1, 4, 4, 3), np.float32)
    g.add_op("CONV_2D", [y, w, b], [z], O.Conv2DOptions(padding=ir.Padding.SAME, stride_w=1, stride_h=1,
                                                        dilation_w_factor=1, dilation_h_factor=1))
    g.mark_outputs(z)
    mb.add_signature("serving_default", {"x": x}, {"z": z})
    return mb.build()


def variables_model() -> bytes:
    """Variable tensors (int8 with zero point 5, float32) read by ADDs."""
    mb = ModelBuilder()
    g = mb.main
    q = quantization(0.5, 5)
    x = g.add_input("x", (2, 3), np.int8, quantization=q)
    v = g.add_tensor("state_q", (2, 3), np.int8, quantization=q, is_variable=True)
    y = g.add_tensor("y", (2, 3), np.int8, quantization=quantization(0.75, -3))
    g.add_op("ADD", [x, v], [y], O.AddOptions())
    f = g.add_input("f", (3,), np.float32)
    w = g.add_tensor("state_f", (3,), np.float32, is_variable=True)
    o = g.add_tensor("o", (3,), np.float32)
    g.add_op("ADD", [f, w], [o], O.AddOptions())
    g.mark_outputs(y, o)
    return mb.build()


def two_signatures_model() -> bytes:
    """Signature 'relu' on subgraph 0 and 'add' (two named inputs) on subgraph 1."""
    mb = ModelBuilder()
    g = mb.main
    x = g.add_input("x", (2, 3), np.float32)
    y = g.add_tensor("y", (2, 3), np.float32)
    g.add_op("RELU", [x], [y])
    g.mark_outputs(y)
    mb.add_signature("relu", {"x": x}, {"y": y})
    s = mb.add_graph("adder")
    a = s.add_input("a", (4,), np.float32)
    b = s.add_input("b", (4,), np.float32)
    c = s.add_tensor("c", (4,), np.float32)
    s.add_op("ADD", [a, b], [c], O.AddOptions())
    s.mark_outputs(c)
    mb.add_signature("add", {"zeta": a, "alpha": b}, {"sum": c}, graph=1)
    return mb.build()


MODELS: dict[str, Callable[[], bytes]] = {
    "demo-float": zoo.demo,
    "demo-int8": functools.partial(zoo.demo, dtype="int8"),
    "demo-uint8-io": functools.partial(zoo.demo, dtype="int8", io="uint8"),
    "demo-float-io": functools.partial(zoo.demo, dtype="int8", io="float32"),
    "mobilenet_v2-int8": functools.partial(zoo.mobilenet_v2, 64, 0.35, 20, dtype="int8"),
    "dynamic-batch": dynamic_batch_model,
    "variables": variables_model,
    "two-signatures": two_signatures_model,
}


@functools.cache
def model_bytes(name: str) -> bytes:
    return MODELS[name]()


def random_inputs(details: list[dict[str, Any]], seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = []
    for d in details:
        dtype, shape = np.dtype(d["dtype"]), tuple(d["shape"])
        if dtype.kind == "f":
            out.append(rng.uniform(-1, 1, shape).astype(dtype))
        else:
            info = np.iinfo(dtype)
            out.append(rng.integers(info.min, info.max, shape, endpoint=True).astype(dtype))
    return out


def assert_same(ours: Any, theirs: Any, where: str = "details") -> None:
    """Same structure, same value types (NumPy dtypes included), same values."""
    if isinstance(theirs, np.ndarray):
        assert isinstance(ours, np.ndarray), f"{where}: {type(ours)} is not an ndarray"
        assert ours.dtype == theirs.dtype, f"{where}: dtype {ours.dtype} != LiteRT's {theirs.dtype}"
        np.testing.assert_array_equal(ours, theirs, err_msg=where)
    elif isinstance(theirs, dict):
        assert isinstance(ours, dict) and list(ours) == list(theirs), f"{where}: keys {list(ours)} != {list(theirs)}"
        for k in theirs:
            assert_same(ours[k], theirs[k], f"{where}[{k!r}]")
    elif isinstance(theirs, (list, tuple)):
        assert type(ours) is type(theirs), f"{where}: {type(ours)} != LiteRT's {type(theirs)}"
        assert len(ours) == len(theirs), f"{where}: {len(ours)} items, LiteRT has {len(theirs)}"
        for k, (a, b) in enumerate(zip(ours, theirs)):
            assert_same(a, b, f"{where}[{k}]")
    else:
        assert type(ours) is type(theirs), f"{where}: type {type(ours)} != LiteRT's {type(theirs)}"
        assert ours == theirs, f"{where}: {ours!r} != LiteRT's {theirs!r}"


def both(fn: Callable[[types.ModuleType], Any]) -> tuple[Any, Any]:
    """(teflon-py's result, LiteRT's result) of the same script body."""
    return fn(teflon_py), fn(litert)


# -- the script every LiteRT user writes -------------------------------------------------------------
def classify(mod: types.ModuleType, model_path: str, seed: int = 0) -> dict[str, Any]:
    """Load from a path, read details, quantize a float image if needed, run, dequantize, top-5."""
    interpreter = mod.Interpreter(model_path=model_path, num_threads=2, **REF)
    interpreter.allocate_tensors()
    input_details = interpreter.get_input_details()
    output_details = interpreter.get_output_details()
    image = np.random.default_rng(seed).uniform(-1, 1, input_details[0]["shape"]).astype(np.float32)
    if input_details[0]["dtype"] != np.float32:
        scale, zero_point = input_details[0]["quantization"]
        info = np.iinfo(input_details[0]["dtype"])
        image = np.clip(np.round(image / scale) + zero_point, info.min, info.max).astype(input_details[0]["dtype"])
    interpreter.set_tensor(input_details[0]["index"], image)
    interpreter.invoke()
    raw = interpreter.get_tensor(output_details[0]["index"])
    probs = raw.astype(np.float32)
    if output_details[0]["dtype"] != np.float32:
        scale, zero_point = output_details[0]["quantization"]
        probs = scale * (probs - zero_point)
    return {"inputs": input_details, "outputs": output_details, "raw": raw,
            "top5": np.argsort(-probs[0], kind="stable")[:5]}


@pytest.mark.parametrize("api", list(APIS))
def test_the_same_script_body_runs_on_either_module(tmp_path, api: str) -> None:
    """The body below is LiteRT tutorial code; only the module handed to it changes."""
    path = tmp_path / "model.tflite"
    path.write_bytes(model_bytes("demo-uint8-io"))
    result = classify(APIS[api], str(path))
    assert result["raw"].shape == (1, 10) and result["raw"].dtype == np.uint8
    scale, zero_point = result["outputs"][0]["quantization"]
    assert abs(scale * (result["raw"].astype(np.float32) - zero_point).sum() - 1.0) < 0.05  # probabilities


@pytest.mark.parametrize("name", ["demo-float", "demo-int8", "demo-uint8-io", "demo-float-io", "mobilenet_v2-int8"])
def test_litert_script_runs_unchanged(tmp_path, name: str) -> None:
    path = tmp_path / "model.tflite"
    path.write_bytes(model_bytes(name))
    ours, theirs = both(lambda mod: classify(mod, str(path)))
    assert_same(ours["inputs"], theirs["inputs"], "input details")
    assert_same(ours["outputs"], theirs["outputs"], "output details")
    assert_close(ours["raw"], theirs["raw"], FLOAT_TOL)
    if theirs["raw"].dtype != np.float32:
        np.testing.assert_array_equal(ours["top5"], theirs["top5"])


@pytest.mark.parametrize("name", list(MODELS))
def test_tensor_details_match_litert(name: str) -> None:
    def details(mod: types.ModuleType) -> Any:
        it = mod.Interpreter(model_content=model_bytes(name), **REF)
        before = it.get_tensor_details()
        it.allocate_tensors()
        return (before, it.get_tensor_details(), it.get_input_details(), it.get_output_details(),
                it.get_signature_list(), it.num_subgraphs())

    ours, theirs = both(details)
    # after allocation LiteRT also lists its kernels' scratch tensors (unnamed, after the model's)
    n = len(ours[0])
    assert all(d["name"] == "" for d in theirs[1][n:])
    assert_same(ours, (theirs[0], theirs[1][:n], *theirs[2:]))


def test_tensor_details_of_a_second_subgraph() -> None:
    ours, theirs = both(lambda mod: mod.Interpreter(model_content=model_bytes("two-signatures"))
                        .get_tensor_details(subgraph_index=1))
    assert_same(ours, theirs)


@pytest.mark.parametrize("name", ["demo-float", "demo-int8"])
def test_tensor_views_and_copies(name: str) -> None:
    """``tensor()`` gives writable views (write an input in place); ``get_tensor`` gives copies."""

    def script(mod: types.ModuleType) -> list[np.ndarray]:
        it = mod.Interpreter(model_content=model_bytes(name), **REF)
        it.allocate_tensors()
        inp, out = it.get_input_details()[0], it.get_output_details()[0]
        x = random_inputs([inp], seed=7)[0]
        view = it.tensor(inp["index"])
        view()[...] = x
        it.invoke()
        first = it.tensor(out["index"])().copy()
        copy = it.get_tensor(out["index"])
        copy[...] = 0
        again = it.get_tensor(out["index"])
        view().fill(0)
        it.invoke()
        return [first, again, it.get_tensor(out["index"])]

    ours, theirs = both(script)
    for k, (a, b) in enumerate(zip(ours, theirs)):
        assert_close(a, b, FLOAT_TOL, f"result {k}")
    assert_close(ours[0], ours[1], 0.0)


# -- resizing ---------------------------------------------------------------------------------------
RESIZES = {"batch2": (2, None), "48px": (1, 48), "batch3-40px": (3, 40)}
RESIZE_CASES = [(name, shape) for name in ["demo-float", "demo-int8", "dynamic-batch"] for shape in RESIZES
                if name != "dynamic-batch" or RESIZES[shape][1] is None]  # its constant operand fixes H, W


@pytest.mark.parametrize("name,new_shape", RESIZE_CASES)
def test_resize_then_allocate_recomputes_every_shape(name: str, new_shape: str) -> None:
    batch, size = RESIZES[new_shape]

    def script(mod: types.ModuleType) -> Any:
        it = mod.Interpreter(model_content=model_bytes(name), **REF)
        it.allocate_tensors()
        inp = it.get_input_details()[0]
        shape = [batch, *(inp["shape"][1:] if size is None else (size, size, inp["shape"][3]))]
        it.resize_tensor_input(inp["index"], shape)
        pending = (it.get_input_details(), it.get_output_details())
        it.allocate_tensors()
        (x,) = random_inputs(it.get_input_details(), seed=1)
        it.set_tensor(inp["index"], x)
        it.invoke()
        outs = [it.get_tensor(d["index"]) for d in it.get_output_details()]
        shapes = [(d["name"], d["shape"]) for d in it.get_tensor_details() if d["name"]]  # no scratch
        return pending, it.get_input_details(), it.get_output_details(), shapes, outs

    ours, theirs = both(script)
    assert_same(ours[:4], theirs[:4])
    for a, b in zip(ours[4], theirs[4]):
        assert_close(a, b, FLOAT_TOL)


def test_strict_resize_changes_only_unknown_dimensions() -> None:
    def script(mod: types.ModuleType) -> Any:
        it = mod.Interpreter(model_content=model_bytes("dynamic-batch"), **REF)
        it.resize_tensor_input(0, [3, 4, 4, 2], strict=True)
        it.allocate_tensors()
        x = np.random.default_rng(2).standard_normal((3, 4, 4, 2)).astype(np.float32)
        it.set_tensor(0, x)
        it.invoke()
        return it.get_output_details(), it.get_tensor(it.get_output_details()[0]["index"])

    ours, theirs = both(script)
    assert_same(ours[0], theirs[0])
    assert_close(ours[1], theirs[1], FLOAT_TOL)


def test_resize_is_kept_across_allocations_and_can_be_undone() -> None:
    it = teflon_py.Interpreter(model_content=model_bytes("demo-float"))
    it.resize_tensor_input(0, [2, 32, 32, 3])
    it.allocate_tensors()
    it.allocate_tensors()  # a no-op: nothing changed
    assert list(it.get_output_details()[0]["shape"]) == [2, 10]
    it.resize_tensor_input(0, [1, 32, 32, 3])
    it.allocate_tensors()
    assert list(it.get_output_details()[0]["shape"]) == [1, 10]
    assert it.graph.tensors[it.get_output_details()[0]["index"]].shape == (1, 10)


def test_resize_plans_delegates_for_the_new_shapes() -> None:
    delegate = EchoDelegate()
    it = teflon_py.Interpreter(model_content=model_bytes("demo-float"), experimental_delegates=[delegate])
    it.resize_tensor_input(0, [2, 40, 40, 3])
    it.allocate_tensors()
    assert delegate.compiled and delegate.compiled[0][0] == (2, 40, 40, 3)
    it.set_tensor(0, random_inputs(it.get_input_details())[0])
    it.invoke()
    ref = teflon_py.Interpreter(model_content=model_bytes("demo-float"))
    ref.resize_tensor_input(0, [2, 40, 40, 3])
    ref.allocate_tensors()
    ref.set_tensor(0, random_inputs(ref.get_input_details())[0])
    ref.invoke()
    out = it.get_output_details()[0]["index"]
    assert_close(it.get_tensor(out), ref.get_tensor(out), 1e-6)


# -- signatures -------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["demo-float", "demo-uint8-io", "dynamic-batch"])
def test_signature_runner(name: str) -> None:
    def script(mod: types.ModuleType) -> Any:
        it = mod.Interpreter(model_content=model_bytes(name), **REF)
        runner = it.get_signature_runner()
        (key,) = runner.get_input_details()
        d = runner.get_input_details()[key]
        (x,) = random_inputs([d], seed=4)
        first = runner(**{key: x})
        batch = np.concatenate([x, x[:, ::-1]], axis=0)  # a batch of 2: the runner resizes
        second = runner(**{key: batch})
        return runner.get_input_details(), runner.get_output_details(), first, second, it.get_input_details()

    ours, theirs = both(script)
    assert_same(ours[0], theirs[0])
    assert_same(ours[1], theirs[1])
    assert_same(ours[4], theirs[4])
    for k in (2, 3):
        assert list(ours[k]) == list(theirs[k])
        for out in theirs[k]:
            assert_close(ours[k][out], theirs[k][out], FLOAT_TOL, out)


def test_signature_runner_on_a_second_subgraph() -> None:
    def script(mod: types.ModuleType) -> Any:
        it = mod.Interpreter(model_content=model_bytes("two-signatures"), **REF)
        add = it.get_signature_runner("add")
        relu = it.get_signature_runner("relu")
        a, b = np.arange(4, dtype=np.float32), np.full(4, 0.5, np.float32)
        x = np.array([[-1, 2, -3], [4, -5, 6]], np.float32)
        return (it.get_signature_list(), add.get_input_details(), add(zeta=a, alpha=b), relu(x=x),
                it.get_tensor(2, subgraph_index=1))

    ours, theirs = both(script)
    assert_same(ours, theirs)


# -- variables --------------------------------------------------------------------------------------
def test_variables_start_at_zero_point_and_reset() -> None:
    def script(mod: types.ModuleType) -> Any:
        it = mod.Interpreter(model_content=model_bytes("variables"), **REF)
        it.allocate_tensors()
        names = {d["name"]: d["index"] for d in it.get_tensor_details()}
        fresh = [it.get_tensor(names["state_q"]), it.get_tensor(names["state_f"])]
        it.set_tensor(names["state_q"], np.full((2, 3), 9, np.int8))
        it.set_tensor(names["state_f"], np.ones(3, np.float32))
        x, f = random_inputs(it.get_input_details())
        it.set_tensor(names["x"], x)
        it.set_tensor(names["f"], f)
        it.invoke()
        with_state = [it.get_tensor(d["index"]) for d in it.get_output_details()]
        it.reset_all_variables()
        reset = [it.get_tensor(names["state_q"]), it.get_tensor(names["state_f"])]
        it.invoke()
        after = [it.get_tensor(d["index"]) for d in it.get_output_details()]
        return fresh, with_state, reset, after

    ours, theirs = both(script)
    np.testing.assert_array_equal(theirs[0][0], np.full((2, 3), 5, np.int8))  # LiteRT's own behaviour
    assert_same(ours, theirs)


# -- errors: the same exception types as LiteRT -----------------------------------------------------
def _fresh(name: str = "demo-float", allocate: bool = True) -> Callable[[types.ModuleType], Any]:
    def make(mod: types.ModuleType) -> Any:
        it = mod.Interpreter(model_content=model_bytes(name), **REF)
        if allocate:
            it.allocate_tensors()
        return it
    return make


ERRORS: dict[str, tuple[Callable[[types.ModuleType], Any], Callable[[Any], Any]]] = {
    "invoke-before-allocate": (_fresh(allocate=False), lambda it: it.invoke()),
    "get-before-allocate": (_fresh(allocate=False), lambda it: it.get_tensor(0)),
    "set-wrong-dtype": (_fresh(), lambda it: it.set_tensor(0, np.zeros((1, 32, 32, 3), np.float64))),
    "set-wrong-shape": (_fresh(), lambda it: it.set_tensor(0, np.zeros((1, 32, 31, 3), np.float32))),
    "set-wrong-rank": (_fresh(), lambda it: it.set_tensor(0, np.zeros((32, 32, 3), np.float32))),
    "set-list-of-ints": (_fresh(), lambda it: it.set_tensor(0, [[1, 2]])),
    "set-bad-index": (_fresh(), lambda it: it.set_tensor(10_000, np.zeros(1, np.float32))),
    "get-bad-index": (_fresh(), lambda it: it.get_tensor(10_000)),
    "get-bad-subgraph": (_fresh(), lambda it: it.get_tensor(0, subgraph_index=4)),
    "details-bad-subgraph": (_fresh(), lambda it: it.get_tensor_details(subgraph_index=4)),
    "resize-constant": (_fresh(), lambda it: it.resize_tensor_input(
        next(d["index"] for d in it.get_tensor_details() if d["name"] == "conv1/weights"), [1])),
    "resize-strict-fixed-dim": (_fresh(), lambda it: it.resize_tensor_input(0, [2, 32, 32, 3], strict=True)),
    "invoke-after-resize": (_fresh(), lambda it: (it.resize_tensor_input(0, [2, 32, 32, 3]), it.invoke())),
    "allocate-after-bad-resize": (_fresh("dynamic-batch"), lambda it: (it.resize_tensor_input(0, [1, 5, 5, 2]),
                                                                      it.allocate_tensors())),
    "runner-bad-key": (_fresh(), lambda it: it.get_signature_runner("nope")),
    "runner-missing-input": (_fresh(), lambda it: it.get_signature_runner()()),
    "runner-bad-name": (_fresh(), lambda it: it.get_signature_runner()(image=np.zeros((1, 32, 32, 3), np.float32))),
    "runner-bad-dtype": (_fresh(), lambda it: it.get_signature_runner()(input=np.zeros((1, 32, 32, 3), np.int8))),
    "runner-none-of-two": (_fresh("two-signatures"), lambda it: it.get_signature_runner()),
    "runner-none-of-zero": (_fresh("variables"), lambda it: it.get_signature_runner()),
}


@pytest.mark.parametrize("case", list(ERRORS))
def test_errors_have_litert_types(case: str) -> None:
    make, action = ERRORS[case]
    raised = {}
    for api, mod in APIS.items():
        it = make(mod)
        with pytest.raises(Exception) as info:
            action(it)
        raised[api] = info.value
    assert isinstance(raised["teflon"], type(raised["litert"])), (
        f"teflon-py raised {type(raised['teflon']).__name__} ({raised['teflon']}), "
        f"LiteRT {type(raised['litert']).__name__} ({raised['litert']})"
    )
    assert str(raised["teflon"]), "error without a message"


CONSTRUCTOR_ERRORS: dict[str, dict[str, Any]] = {
    "no-model": {},
    "both": {"model_path": "x.tflite", "model_content": b"TFL3"},
    "missing-file": {"model_path": "/nonexistent/model.tflite"},
    "not-a-model": {"model_content": b"\x00" * 64},
    "threads-zero": {"model_content": b"", "num_threads": 0},
    "threads-not-int": {"model_content": b"", "num_threads": "2"},
}


@pytest.mark.parametrize("case", list(CONSTRUCTOR_ERRORS))
def test_constructor_errors_have_litert_types(case: str) -> None:
    kwargs = dict(CONSTRUCTOR_ERRORS[case])
    if kwargs.get("model_content") == b"":
        kwargs["model_content"] = model_bytes("demo-float")
    raised = {}
    for api, mod in APIS.items():
        with pytest.raises(Exception) as info:
            mod.Interpreter(**kwargs)
        raised[api] = info.value
    assert isinstance(raised["teflon"], type(raised["litert"])), (raised["teflon"], raised["litert"])


def test_set_tensor_messages_say_what_is_wrong() -> None:
    it = teflon_py.Interpreter(model_content=model_bytes("demo-float"))
    it.allocate_tensors()
    with pytest.raises(ValueError, match="Got value of type FLOAT64 but expected type FLOAT32 for input 0, name: input"):
        it.set_tensor(0, np.zeros((1, 32, 32, 3)))
    with pytest.raises(ValueError, match=r"Got shape \[1, 32, 31, 3\] but expected \[1, 32, 32, 3\]"):
        it.set_tensor(0, np.zeros((1, 32, 31, 3), np.float32))
    with pytest.raises(RuntimeError, match="allocate_tensors"):
        teflon_py.Interpreter(model_content=model_bytes("demo-float")).invoke()


# -- teflon-py's own additions ------------------------------------------------------------------------
def test_placements_partitions_and_debug_table(monkeypatch, capsys) -> None:
    monkeypatch.setenv("TEFLON_DEBUG", "1")
    it = teflon_py.Interpreter(model_content=model_bytes("demo-float"),
                               experimental_delegates=[EchoDelegate(["CONV_2D", "DEPTHWISE_CONV_2D", "ADD"])])
    it.allocate_tensors()
    table = capsys.readouterr().err
    ops = [op.name for op in it.graph.operations]
    placements = it.placements()
    assert len(placements) == len(ops)
    for op, p in zip(ops, placements):
        if op in ("CONV_2D", "DEPTHWISE_CONV_2D", "ADD"):
            assert p.backend == "echo" and p.partition is not None and p.reason is None
        else:
            assert p.backend == "numpy" and p.partition is None and "echo runs only" in p.reason
    parts = it.partitions()
    assert [p["index"] for p in parts] == list(range(len(parts)))
    assert sorted(n for p in parts for n in p["nodes"]) == [i for i, op in enumerate(ops) if op != "MEAN"
                                                            and op not in ("FULLY_CONNECTED", "SOFTMAX")]
    assert "DEPTHWISE_CONV_2D" in table and "echo runs only" in table and "on the fallback" in table
    it.set_tensor(0, random_inputs(it.get_input_details())[0])
    it.invoke()
    ref = teflon_py.Interpreter(model_content=model_bytes("demo-float"))
    ref.allocate_tensors()
    ref.set_tensor(0, random_inputs(ref.get_input_details())[0])
    ref.invoke()
    out = it.get_output_details()[0]["index"]
    assert_close(it.get_tensor(out), ref.get_tensor(out), 1e-6)


def test_foreign_delegate_objects_are_refused() -> None:
    with pytest.raises(TypeError, match="teflon_py.load_delegate"):
        teflon_py.Interpreter(model_content=model_bytes("demo-float"), experimental_delegates=[object()])


def test_intermediate_tensors_are_readable_after_invoke() -> None:
    """Unlike LiteRT (which needs experimental_preserve_all_tensors), every tensor stays readable."""
    it = teflon_py.Interpreter(model_content=model_bytes("demo-float"))
    it.allocate_tensors()
    it.set_tensor(0, random_inputs(it.get_input_details())[0])
    it.invoke()
    for d in it.get_tensor_details():
        assert it.get_tensor(d["index"]).shape == tuple(d["shape"])


def test_resize_marks_data_dependent_shapes_dynamic_and_settles_them_at_invoke() -> None:
    """After a resize, shapes come from the op layer's inference; WHERE's output depends on the
    data, so it is dynamic (-1) until invoke settles it."""
    from teflon_py.tflite.builder import ModelBuilder

    mb = ModelBuilder()
    g = mb.main
    x = g.add_input("x", (4,), np.float32)
    zero = g.add_constant("zero", np.zeros((1,), np.float32))
    positive = g.add_tensor("positive", (4,), np.bool_)
    where = g.add_tensor("where", (2, 1), np.int64)
    g.add_op("GREATER", [x, zero], [positive])
    g.add_op("WHERE", [positive], [where])
    g.mark_outputs(positive, where)
    it = teflon_py.Interpreter(model_content=mb.build())
    it.resize_tensor_input(it.get_input_details()[0]["index"], [6])
    it.allocate_tensors()
    shapes = {d["name"]: tuple(d["shape"]) for d in it.get_tensor_details()}
    assert shapes["positive"] == (6,) and shapes["where"] == (-1, -1)
    value = np.array([1, -1, 2, 3, -4, 5], np.float32)
    it.set_tensor(it.get_input_details()[0]["index"], value)
    it.invoke()
    out = {d["name"]: d["index"] for d in it.get_output_details()}
    np.testing.assert_array_equal(it.get_tensor(out["where"]), np.argwhere(value > 0))
