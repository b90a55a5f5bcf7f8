"""The OpenCL delegate: its registry and checks, fusion, aliasing, the arena, and fallback on failure.

Op-by-op numerics run in tests/ops (every op test also runs on "opencl"); these tests look at
what the delegate builds for small multi-op graphs, each compared with LiteRT's reference kernels.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import teflon_py
from teflon_py import ir, partitioner
from teflon_py.errors import BackendError
from teflon_py.tflite import options as O
from teflon_py.tflite.builder import ModelBuilder, quantization
from teflon_py.tflite.reader import read_model
from tests.harness import check_model, compare_with_litert, relative_l2, run_litert, single_op

pytest.importorskip("pyopencl")

#: The float32 ops the delegate must lower (the issue's list).
#: The float-model op set of the OpenCL issue (the TFLite GPU delegate's), as (op, data dtype).
FLOAT32_OPS = [
    "CONV_2D", "DEPTHWISE_CONV_2D", "TRANSPOSE_CONV", "Convolution2DTransposeBias", "FULLY_CONNECTED",
    "BATCH_MATMUL", "ADD", "SUB", "MUL", "DIV", "POW", "MAXIMUM", "MINIMUM", "SQUARED_DIFFERENCE",
    "ABS", "NEG", "EXP", "LOG", "SQRT", "RSQRT", "SQUARE", "SIN", "COS", "FLOOR", "SIGN", "TANH",
    "LOGISTIC", "RELU", "RELU6", "RELU_N1_TO_1", "RELU_0_TO_1", "LEAKY_RELU", "ELU", "PRELU",
    "HARD_SWISH", "GELU", "AVERAGE_POOL_2D", "MAX_POOL_2D", "MEAN", "SUM", "REDUCE_MAX", "REDUCE_MIN",
    "REDUCE_PROD", "SOFTMAX", "LOG_SOFTMAX", "CUMSUM", "CONCATENATION", "SPLIT", "SPLIT_V", "PACK",
    "UNPACK", "RESHAPE", "SQUEEZE", "EXPAND_DIMS", "TRANSPOSE", "PAD", "PADV2", "MIRROR_PAD", "SLICE",
    "STRIDED_SLICE", "TILE", "GATHER", "EQUAL", "NOT_EQUAL", "LESS", "LESS_EQUAL",
    "GREATER", "GREATER_EQUAL", "CAST", "RESIZE_BILINEAR", "RESIZE_NEAREST_NEIGHBOR",
    "DEPTH_TO_SPACE", "SPACE_TO_DEPTH", "DENSIFY",
]
#: ops whose data operand in a float model is not float32: bool conditions, float16 weights, indices
OTHER_KIND_OPS = [("LOGICAL_AND", "bool"), ("LOGICAL_OR", "bool"), ("LOGICAL_NOT", "bool"),
                  ("SELECT", "bool"), ("SELECT_V2", "bool"), ("DEQUANTIZE", "float16"), ("ONE_HOT", "int32")]
SAME, VALID = ir.Padding.SAME, ir.Padding.VALID
F32 = np.float32


def test_registry_claims_every_float32_op() -> None:
    from teflon_py.opencl.lowerings import SUPPORTED_OPS, supported_ops

    missing = [op for op in FLOAT32_OPS if op not in SUPPORTED_OPS]
    missing += [(op, kind) for op, kind in OTHER_KIND_OPS if op not in supported_ops(kind)]
    assert not missing, f"not lowered: {missing}"


# -- model builders ------------------------------------------------------------------------------

def rng_weights(shape: tuple, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) / np.sqrt(np.prod(shape[1:]))).astype(F32)


def conv(g, x: int, shape_out: tuple, k: int = 3, stride: int = 1, padding=SAME, act=ir.Activation.NONE,
         seed: int = 0, name: str = "conv") -> int:
    c = g.graph.tensors[x].shape[3]
    oc = shape_out[3]
    w = g.add_constant(f"{name}/w", rng_weights((oc, k, k, c), seed))
    b = g.add_constant(f"{name}/b", np.linspace(-0.5, 0.5, oc).astype(F32))
    y = g.add_tensor(name, shape_out, F32)
    g.add_op("CONV_2D", [x, w, b], [y], O.Conv2DOptions(padding=padding, stride_w=stride, stride_h=stride,
                                                        fused_activation_function=act))
    return y


def unary(g, op: str, x: int, name: str, options: object = None) -> int:
    y = g.add_tensor(name, g.graph.tensors[x].shape, F32)
    g.add_op(op, [x], [y], options)
    return y


def compile_model(model: bytes, **options: object):
    """Read ``model``, partition what the delegate claims, compile the first partition."""
    graph = read_model(model).main
    d = teflon_py.load_delegate("opencl", options)
    supported = {op.index for op in graph.operations if d.check(graph, op)}
    parts = partitioner.partition(graph, supported)
    return graph, parts, d.compile(graph, parts[0])


def run_compiled(model: bytes, inputs: list[np.ndarray] | None = None, seed: int = 0):
    """Compile the model's single partition, run it, compare with LiteRT; return the compiled partition."""
    graph, parts, compiled = compile_model(model)
    assert len(parts) == 1 and len(parts[0].nodes) == len(graph.operations)
    if inputs is None:
        rng = np.random.default_rng(seed)
        inputs = [rng.standard_normal(graph.tensors[i].shape).astype(F32) for i in graph.inputs]
    outs = compiled.invoke(inputs)
    for a, e in zip(outs, run_litert(model, inputs)):
        assert a.shape == e.shape
        assert relative_l2(a, e) <= 1e-5
    return compiled


# -- check: reasons, purity, options ---------------------------------------------------------------

def _reason(model: bytes) -> str | None:
    graph = read_model(model).main
    return teflon_py.load_delegate("opencl").check(graph, graph.operations[0]).reason


def test_check_reasons_name_the_op_and_the_cause() -> None:
    q = quantization
    int16_add = single_op("ADD", [{"shape": (1, 4), "dtype": np.int16, "quant": q(0.1, 0)},
                                  {"shape": (1, 4), "dtype": np.int16, "quant": q(0.1, 0)}],
                          [{"shape": (1, 4), "dtype": np.int16, "quant": q(0.1, 0)}], O.AddOptions())
    assert _reason(int16_add) == "ADD: int16 tensors not supported on OpenCL yet"
    runtime_filter = single_op("CONV_2D", [{"shape": (1, 4, 4, 2), "dtype": F32}, {"shape": (3, 1, 1, 2), "dtype": F32}],
                               [{"shape": (1, 4, 4, 3), "dtype": F32}], O.Conv2DOptions(stride_w=1, stride_h=1))
    assert _reason(runtime_filter).startswith("CONV_2D: operand 1") and "constant" in _reason(runtime_filter)
    grouped = single_op("CONV_2D", [{"shape": (1, 4, 4, 4), "dtype": F32}, {"data": np.ones((2, 1, 1, 2), F32)}],
                        [{"shape": (1, 4, 4, 2), "dtype": F32}], O.Conv2DOptions(stride_w=1, stride_h=1))
    assert "grouped convolution" in _reason(grouped)
    tanh_add = single_op("ADD", [{"shape": (3,), "dtype": F32}, {"shape": (3,), "dtype": F32}],
                         [{"shape": (3,), "dtype": F32}], O.AddOptions(fused_activation_function=ir.Activation.TANH))
    assert _reason(tanh_add) == "ADD: fused activation TANH not supported"
    floor_div = single_op("FLOOR_DIV", [{"shape": (3,), "dtype": F32}, {"shape": (3,), "dtype": F32}],
                          [{"shape": (3,), "dtype": F32}])
    assert _reason(floor_div) == "FLOOR_DIV: not lowered for OpenCL yet"
    rank6 = single_op("MEAN", [{"shape": (1, 2, 1, 2, 1, 2), "dtype": F32}, {"data": np.array([1], np.int32)}],
                      [{"shape": (1, 1, 2, 1, 2), "dtype": F32}], O.ReducerOptions())
    assert "rank 6" in _reason(rank6)


def test_check_is_pure(monkeypatch: pytest.MonkeyPatch) -> None:
    """check() decides from the graph and the chosen device's capabilities alone: no context, no
    program, no buffer."""
    from teflon_py.opencl.runtime import device as dev

    def no_device(*a, **k):
        raise AssertionError("check() touched the device")

    monkeypatch.setattr(dev, "get_context", no_device)
    model = read_model(single_op("ADD", [{"shape": (3,), "dtype": F32}, {"shape": (3,), "dtype": F32}],
                                 [{"shape": (3,), "dtype": F32}], O.AddOptions()))
    d = teflon_py.load_delegate("opencl")
    assert d.check(model.main, model.main.operations[0])
    assert d.device_name is None
    bogus = teflon_py.load_delegate("opencl", {"device": "no-such-device"})
    with pytest.raises(teflon_py.BackendError, match="no OpenCL device matches 'no-such-device'"):
        bogus.check(model.main, model.main.operations[0])


def test_options_are_validated() -> None:
    with pytest.raises(ValueError, match="precision 'fp16' is not supported"):
        teflon_py.load_delegate("opencl", {"precision": "fp16"})
    with pytest.raises(ValueError, match="unknown OpenCL delegate option"):
        teflon_py.load_delegate("opencl", {"threads": 4})
    with pytest.raises(ValueError, match="max_partitions must be an integer"):
        teflon_py.load_delegate("opencl", {"max_partitions": "many"})
    d = teflon_py.load_delegate("opencl", {"max_partitions": "2", "min_nodes": "3", "precision": "FP32"})
    assert (d.max_partitions, d.min_nodes, d.precision) == (2, 3, "fp32")


# -- fusion --------------------------------------------------------------------------------------

def test_relu_chain_folds_into_conv(device) -> None:
    mb = ModelBuilder()
    g = mb.main
    x = g.add_input("x", (1, 9, 9, 5), F32)
    y = conv(g, x, (1, 9, 9, 20))
    y = unary(g, "RELU", y, "relu")
    y = unary(g, "RELU_N1_TO_1", y, "relu_n1")
    g.mark_outputs(y)
    compiled = run_compiled(mb.build())
    assert compiled.stats["launches"] == 1
    assert compiled.stats["folded"] == [1, 2]


@pytest.mark.parametrize("op", ["ADD", "MUL"])
def test_relu6_folds_into_binary(device, op: str) -> None:
    mb = ModelBuilder()
    g = mb.main
    a, b = g.add_input("a", (2, 5, 7), F32), g.add_input("b", (7,), F32)
    y = g.add_tensor("y", (2, 5, 7), F32)
    g.add_op(op, [a, b], [y], O.AddOptions(fused_activation_function=ir.Activation.RELU) if op == "ADD"
             else O.MulOptions())
    g.mark_outputs(unary(g, "RELU6", y, "relu6"))
    rng = np.random.default_rng(3)
    compiled = run_compiled(mb.build(), [4 * rng.standard_normal((2, 5, 7)).astype(F32),
                                         4 * rng.standard_normal(7).astype(F32)])
    assert compiled.stats["launches"] == 1


def test_relu_does_not_fold_when_its_input_is_read_elsewhere(device) -> None:
    mb = ModelBuilder()
    g = mb.main
    x = g.add_input("x", (1, 6, 6, 4), F32)
    y = conv(g, x, (1, 6, 6, 8))
    r = unary(g, "RELU", y, "relu")
    s = unary(g, "LOGISTIC", y, "logistic")
    g.mark_outputs(r, s)
    assert run_compiled(mb.build()).stats["launches"] == 3
    mb = ModelBuilder()
    g = mb.main
    x = g.add_input("x", (1, 6, 6, 4), F32)
    y = conv(g, x, (1, 6, 6, 8))
    g.mark_outputs(y, unary(g, "RELU", y, "relu"))  # the conv output is a graph output itself
    assert run_compiled(mb.build()).stats["launches"] == 2


def pad_then(op: str, shape: tuple, paddings: list, padding: ir.Padding, k: int = 3, stride: int = 1) -> bytes:
    """PAD (constant paddings) followed by ``op`` (a conv, depthwise or pool) on its output."""
    mb = ModelBuilder()
    g = mb.main
    x = g.add_input("x", shape, F32)
    padded = tuple(d + a + b for d, (a, b) in zip(shape, paddings))
    p = g.add_tensor("padded", padded, F32)
    g.add_op("PAD", [x, g.add_constant("paddings", np.array(paddings, np.int32))], [p])

    def out(size: int) -> int:
        return -(-size // stride) if padding == SAME else (size - k) // stride + 1

    oh, ow = out(padded[1]), out(padded[2])
    c = padded[3]
    if op == "CONV_2D":
        y = conv(g, p, (1, oh, ow, 6), k=k, stride=stride, padding=padding)
    elif op == "DEPTHWISE_CONV_2D":
        y = g.add_tensor("y", (1, oh, ow, c), F32)
        g.add_op(op, [p, g.add_constant("w", rng_weights((1, k, k, c))), g.add_constant("b", np.zeros(c, F32))], [y],
                 O.DepthwiseConv2DOptions(padding=padding, stride_w=stride, stride_h=stride, depth_multiplier=1))
    else:
        y = g.add_tensor("y", (1, oh, ow, c), F32)
        g.add_op(op, [p], [y], O.Pool2DOptions(padding=padding, stride_w=stride, stride_h=stride, filter_width=k,
                                                filter_height=k))
    g.mark_outputs(y)
    return mb.build()


@pytest.mark.parametrize("padding", [SAME, VALID], ids=["same", "valid"])
@pytest.mark.parametrize("op", ["CONV_2D", "DEPTHWISE_CONV_2D", "AVERAGE_POOL_2D", "MAX_POOL_2D"])
def test_pad_folds_into_consumer(device, op: str, padding: ir.Padding) -> None:
    """The explicit zeros count as values (also for pools), TFLite's own padding does not."""
    model = pad_then(op, (1, 7, 8, 5), [[0, 0], [1, 2], [2, 0], [0, 0]], padding, stride=2 if op == "CONV_2D" else 1)
    x = np.random.default_rng(1).standard_normal((1, 7, 8, 5)).astype(F32) - 1.0  # mostly negative: max vs 0
    compiled = run_compiled(model, [x])
    assert compiled.stats["launches"] == 1 and compiled.stats["folded"] == [0]


def test_pad_on_channels_stays_a_kernel(device) -> None:
    model = pad_then("MAX_POOL_2D", (1, 5, 5, 3), [[0, 0], [1, 1], [0, 0], [1, 0]], VALID)
    assert run_compiled(model).stats["launches"] == 2


# -- aliases and the arena -------------------------------------------------------------------------

def test_reshape_squeeze_expand_dims_are_aliases(device) -> None:
    mb = ModelBuilder()
    g = mb.main
    x = g.add_input("x", (1, 4, 4, 6), F32)
    y = conv(g, x, (1, 4, 4, 8), k=1)
    r = g.add_tensor("flat", (1, 128), F32)
    g.add_op("RESHAPE", [y, g.add_constant("shape", np.array([1, 128], np.int32))], [r],
             O.ReshapeOptions(new_shape=(1, 128)))
    e = g.add_tensor("expanded", (1, 1, 128), F32)
    g.add_op("EXPAND_DIMS", [r, g.add_constant("axis", np.array([1], np.int32))], [e])
    s = g.add_tensor("squeezed", (1, 128), F32)
    g.add_op("SQUEEZE", [e], [s], O.SqueezeOptions(squeeze_dims=(1,)))
    z = g.add_tensor("fc", (1, 10), F32)
    g.add_op("FULLY_CONNECTED", [s, g.add_constant("fc/w", rng_weights((10, 128))), ir.NO_TENSOR], [z],
             O.FullyConnectedOptions())
    g.mark_outputs(z)
    compiled = run_compiled(mb.build())
    assert compiled.stats["launches"] == 2 and compiled.stats["aliases"] == 3


def test_alias_of_an_input_is_copied_to_the_output(device) -> None:
    model = single_op("RESHAPE", [{"shape": (2, 3, 4), "dtype": F32}], [{"shape": (6, 4), "dtype": F32}],
                      O.ReshapeOptions(new_shape=(6, 4)))
    x = np.arange(24, dtype=F32).reshape(2, 3, 4)
    compiled = run_compiled(model, [x])
    assert compiled.stats["launches"] == 1
    out = compiled.invoke([x])[0]
    assert not np.shares_memory(out, x) and np.array_equal(out, x.reshape(6, 4))


def test_arena_reuses_memory_along_a_chain(device) -> None:
    mb = ModelBuilder()
    g = mb.main
    shape = (1, 16, 16, 32)  # 32 KiB per tensor
    y = x = g.add_input("x", shape, F32)
    for k in range(8):
        z = g.add_tensor(f"t{k}", shape, F32)
        g.add_op("ADD" if k % 2 else "MUL", [y, x], [z], O.AddOptions() if k % 2 else O.MulOptions())
        y = z
    g.mark_outputs(y)
    compiled = run_compiled(mb.build(), [np.full(shape, 0.5, F32)])
    assert compiled.stats["launches"] == 8
    assert compiled.stats["arena_bytes"] <= 2 * 4 * int(np.prod(shape))  # 7 intermediates in 2 slots


def test_inputs_are_read_not_written_and_outputs_are_fresh(device) -> None:
    model = single_op("SOFTMAX", [{"shape": (2, 10), "dtype": F32}], [{"shape": (2, 10), "dtype": F32}],
                      O.SoftmaxOptions(beta=1.0))
    _, _, compiled = compile_model(model)
    x = np.random.default_rng(0).standard_normal((2, 10)).astype(F32)
    before = x.copy()
    y1 = compiled.invoke([x])[0]
    y2 = compiled.invoke([2 * x])[0]
    assert np.array_equal(x, before) and not np.shares_memory(y1, y2)
    assert not np.allclose(y1, y2)


def test_small_ops_share_one_program(device) -> None:
    """Elementwise, pool and reduce kernels take sizes as arguments: new shapes build nothing."""
    from teflon_py.opencl.runtime import programs

    def model(shape: tuple) -> bytes:
        return single_op("SUB", [{"shape": shape, "dtype": F32}, {"shape": shape[-1:], "dtype": F32}],
                         [{"shape": shape, "dtype": F32}], O.SubOptions(fused_activation_function=ir.Activation.RELU6))

    check_model(model((2, 3, 4)), "opencl")
    before = len(programs._memo)
    for shape in [(5, 7), (3, 1, 9), (1, 4, 4, 17)]:
        check_model(model(shape), "opencl")
    assert len(programs._memo) == before


@pytest.mark.parametrize("case", [
    ((2, 3, 5), (5, 4), False, False, True),  # constant RHS shared by the batches
    ((2, 5, 3), (2, 5, 4), True, False, False),  # runtime RHS: packed on the device
    ((3, 1, 6, 2), (2, 7, 6), True, True, False),  # broadcast batches, both adjoints
    ((1, 2, 4, 9), (3, 1, 4, 9), False, True, True),  # constant RHS per batch, adj_y
], ids=str)
def test_batch_matmul(device, case: tuple) -> None:
    lhs, rhs, adj_x, adj_y, const = case
    rows, cols = (lhs[-1] if adj_x else lhs[-2]), (rhs[-2] if adj_y else rhs[-1])
    out = (*np.broadcast_shapes(lhs[:-2], rhs[:-2]), rows, cols)
    r = {"shape": rhs, "dtype": F32}
    if const:
        r["data"] = np.random.default_rng(5).standard_normal(rhs).astype(F32)
    model = single_op("BATCH_MATMUL", [{"shape": lhs, "dtype": F32}, r], [{"shape": out, "dtype": F32}],
                      O.BatchMatMulOptions(adj_x=adj_x, adj_y=adj_y))
    compiled = run_compiled(model)
    assert compiled.stats["launches"] == (1 if const else 2)


# -- several partitions, limits -------------------------------------------------------------------

def two_partition_model() -> bytes:
    """conv -> FLOOR_DIV (not lowered) -> conv: two OpenCL partitions around one NumPy node."""
    mb = ModelBuilder()
    g = mb.main
    x = g.add_input("x", (1, 6, 6, 3), F32)
    y = conv(g, x, (1, 6, 6, 8), act=ir.Activation.RELU, name="c1")
    d = g.add_tensor("div", (1, 6, 6, 8), F32)
    g.add_op("FLOOR_DIV", [y, g.add_constant("two", np.array([2.0], F32))], [d], O.FloorDivOptions())
    g.mark_outputs(conv(g, d, (1, 3, 3, 4), stride=2, name="c2"))
    return mb.build()


def test_mixed_placement_runs_both_partitions(device) -> None:
    it = check_model(two_partition_model(), "opencl")
    assert [p["nodes"] for p in it.partitions()] == [[0], [2]]
    assert [p.backend for p in it.placements()] == ["opencl", "numpy", "opencl"]


def test_max_partitions_option(device) -> None:
    it = check_model(two_partition_model(), "opencl", options={"max_partitions": 1}, refuses="over the partition limit")
    assert len(it.partitions()) == 1


# -- failures fall back to NumPy --------------------------------------------------------------------

def test_broken_kernel_falls_back_to_numpy(device, monkeypatch: pytest.MonkeyPatch, tmp_path, lenient) -> None:
    from teflon_py.opencl.runtime import programs

    real = programs.load_source
    monkeypatch.setattr(programs, "load_source",
                        lambda name: real(name) + ("\n#error deliberately broken\n" if name == "reduce.cl" else ""))
    model = single_op("SOFTMAX", [{"shape": (3, 7), "dtype": F32}], [{"shape": (3, 7), "dtype": F32}],
                      O.SoftmaxOptions(beta=1.0))
    with pytest.warns(RuntimeWarning, match="(?s)failed to build.*deliberately broken"):
        it = compare_with_litert(model, "opencl", options={"cache_dir": str(tmp_path)})
    assert [p.backend for p in it.placements()] == ["numpy"]
    with pytest.raises(BackendError, match="deliberately broken"):
        compile_model(model, cache_dir=str(tmp_path))


def test_run_failure_falls_back_to_numpy(device, monkeypatch: pytest.MonkeyPatch, lenient) -> None:
    import pyopencl as cl

    model = single_op("TANH", [{"shape": (4, 5), "dtype": F32}], [{"shape": (4, 5), "dtype": F32}])
    it = teflon_py.Interpreter(model_content=model, experimental_delegates=[teflon_py.load_delegate("opencl")])
    it.allocate_tensors()
    assert [p.backend for p in it.placements()] == ["opencl"]

    def fail(*a, **k):
        raise cl.RuntimeError("clEnqueueNDRangeKernel failed: OUT_OF_RESOURCES (forced by the test)")

    monkeypatch.setattr(cl, "enqueue_nd_range_kernel", fail)
    x = np.linspace(-3, 3, 20, dtype=F32).reshape(4, 5)
    it.set_tensor(it.get_input_details()[0]["index"], x)
    with pytest.warns(RuntimeWarning, match="(?s)failed to run.*forced by the test"):
        it.invoke()
    np.testing.assert_allclose(it.get_tensor(it.get_output_details()[0]["index"]), np.tanh(x), rtol=1e-6)
    assert [p.backend for p in it.placements()] == ["numpy"]


def test_missing_device_falls_back_to_numpy(lenient) -> None:
    model = single_op("RELU", [{"shape": (5,), "dtype": F32}], [{"shape": (5,), "dtype": F32}])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        it = compare_with_litert(model, "opencl", options={"device": "no-such-device"})
    assert any("opencl is unavailable, running on NumPy: no OpenCL device matches" in str(w.message) for w in caught)
    assert [p.backend for p in it.placements()] == ["numpy"]
