"""OpenCL elementwise family: registry coverage, the broadcast geometry, and multi-op graphs that
the per-op tests (tests/ops, which also run on "opencl") do not build: bool and int intermediates
in the arena, bool/int constants, runtime PRELU alpha, fusion into DIV, long rows that the
kernels cut into chunks, NaN and infinity semantics, and graph I/O with and without zero-copy.
"""
from __future__ import annotations

import numpy as np
import pytest
from ai_edge_litert.interpreter import OpResolverType

import teflon_py
from teflon_py import ir, partitioner
from teflon_py.tflite import options as O
from teflon_py.tflite.builder import ModelBuilder
from teflon_py.tflite.reader import read_model
from tests.harness import check_model, quantization, run_teflon, single_op

F32, I32, BOOL = np.float32, np.int32, np.bool_

COMPARISONS = ["EQUAL", "NOT_EQUAL", "LESS", "LESS_EQUAL", "GREATER", "GREATER_EQUAL"]
#: kind -> the ops this family lowers for it
LOWERED = {
    "float32": ["DIV", "POW", "MAXIMUM", "MINIMUM", "SQUARED_DIFFERENCE", "ABS", "NEG", "EXP", "LOG", "SQRT",
                "RSQRT", "SQUARE", "SIN", "COS", "FLOOR", "CEIL", "ROUND", "SIGN", "RELU_0_TO_1", "LEAKY_RELU", "ELU",
                "GELU", "PRELU", "ATAN2", *COMPARISONS, "CAST"],
    "int32": [*COMPARISONS, "CAST", "ADD", "SUB", "MUL"],
    "bool": ["EQUAL", "NOT_EQUAL", "LOGICAL_AND", "LOGICAL_OR", "LOGICAL_NOT", "SELECT", "SELECT_V2", "CAST"],
    "int8": ["CAST", "RSQRT", "SQUARED_DIFFERENCE"],
    "uint8": ["CAST"],
}


@pytest.mark.parametrize("kind", list(LOWERED))
def test_registry_lowers_the_family(kind: str) -> None:
    pytest.importorskip("pyopencl")
    from teflon_py.opencl.lowerings import supported_ops

    missing = sorted(set(LOWERED[kind]) - supported_ops(kind))
    assert not missing, f"{kind}: not lowered: {missing}"


# -- broadcast geometry (no device) ----------------------------------------------------------------

GEOMETRY_CASES = [
    [(2, 3, 4), (4,)], [(1, 3, 1), (2, 1, 4)], [(), (2, 3)], [(2, 1, 3, 1, 2), (1, 2, 1, 4, 1)],
    [(5, 1), (1, 1), (5, 7)], [(2, 1, 1, 1, 3), (1, 2, 1, 1, 1), (1, 1, 2, 3, 1)], [(1,), (1, 1)],
    [(6, 1, 4), (6, 5, 4), (1, 5, 1)],
]


@pytest.mark.parametrize("shapes", GEOMETRY_CASES, ids=str)
def test_broadcast_geometry_indexes_like_numpy(shapes: list[tuple]) -> None:
    """Replay the kernels' index arithmetic on the collapsed geometry for every output element."""
    from teflon_py.opencl.lowerings.elementwise import OUTER_DIMS, broadcast_geometry_n

    out = np.broadcast_shapes(*shapes)
    g = broadcast_geometry_n(shapes, out)
    assert len(g.dims) == OUTER_DIMS and g.rows * g.inner == int(np.prod(out))
    r, i = np.meshgrid(np.arange(g.rows), np.arange(g.inner), indexing="ij")
    idx, q = [], r
    for d in reversed(g.dims[1:]):
        idx.append(q % d)
        q = q // d
    idx = [q, *reversed(idx)]
    rng = np.random.default_rng(0)
    for k, shape in enumerate(shapes):
        x = rng.standard_normal(shape)
        offsets = sum(ix * s for ix, s in zip(idx, g.strides[k])) + i * g.inner_strides[k]
        np.testing.assert_array_equal(x.reshape(-1)[offsets].reshape(out), np.broadcast_to(x, out))


def test_broadcast_geometry_refuses_six_dimensions() -> None:
    from teflon_py.opencl.lowerings.elementwise import broadcast_geometry_n

    with pytest.raises(ValueError, match="6 dimensions"):
        broadcast_geometry_n([(2, 1, 2, 1, 2, 1), (1, 2, 1, 2, 1, 2)], (2, 2, 2, 2, 2, 2))


# -- multi-op graphs -----------------------------------------------------------------------------

def _op(g, name: str, inputs: list[int], shape: tuple, dtype: type, options: object = None) -> int:
    y = g.add_tensor(f"{name.lower()}{len(g.graph.operations)}", shape, dtype)
    g.add_op(name, inputs, [y], options)
    return y


def test_bool_and_int_intermediates(device) -> None:
    """GREATER -> LOGICAL_NOT / SELECT_V2 / CAST chains: byte and int tensors live in the arena,
    bool graph outputs come back as NumPy bools."""
    mb = ModelBuilder()
    g = mb.main
    shape = (3, 40, 7)
    x, y = g.add_input("x", shape, F32), g.add_input("y", (40, 1), F32)
    gt = _op(g, "GREATER", [x, y], shape, BOOL)
    not_gt = _op(g, "LOGICAL_NOT", [gt], shape, BOOL)
    sel = _op(g, "SELECT_V2", [not_gt, x, y], shape, F32, O.SelectV2Options())
    as_int = _op(g, "CAST", [sel], shape, I32)
    small = _op(g, "LESS", [as_int, g.add_constant("two", np.array([2], I32))], shape, BOOL)
    both = _op(g, "LOGICAL_AND", [small, g.add_constant("mask", np.array([True, False] * 3 + [True]))], shape, BOOL)
    back = _op(g, "CAST", [both], shape, F32)
    g.mark_outputs(_op(g, "MUL", [back, x], shape, F32, O.MulOptions()), both, not_gt)
    rng = np.random.default_rng(0)
    check_model(mb.build(), "opencl", inputs=[(rng.standard_normal(shape) * 3).astype(F32),
                                              (rng.standard_normal((40, 1)) * 3).astype(F32)])


def test_constant_condition_and_operands(device) -> None:
    """bool and int32 constants are uploaded as their own bytes, not converted to float."""
    mb = ModelBuilder()
    g = mb.main
    a, b = g.add_input("a", (4, 6), F32), g.add_input("b", (4, 6), F32)
    cond = g.add_constant("cond", np.array([[True], [False], [False], [True]]))
    sel = _op(g, "SELECT_V2", [cond, a, b], (4, 6), F32, O.SelectV2Options())
    i = g.add_input("i", (4, 6), I32)
    eq = _op(g, "EQUAL", [i, g.add_constant("k", np.arange(6, dtype=I32) - 3)], (4, 6), BOOL)
    g.mark_outputs(sel, eq, _op(g, "SELECT", [eq, sel, b], (4, 6), F32, O.SelectOptions()))
    rng = np.random.default_rng(1)
    check_model(mb.build(), "opencl", inputs=[rng.standard_normal((4, 6)).astype(F32),
                                              rng.standard_normal((4, 6)).astype(F32),
                                              rng.integers(-3, 3, (4, 6)).astype(I32)])


@pytest.mark.parametrize("alpha_shape", [(3,), (1, 5, 1), (2, 1, 5, 3)], ids=str)
def test_prelu_runtime_alpha(device, alpha_shape: tuple) -> None:
    model = single_op("PRELU", [{"shape": (2, 4, 5, 3), "dtype": F32}, {"shape": alpha_shape, "dtype": F32}],
                      [{"shape": (2, 4, 5, 3), "dtype": F32}])
    check_model(model, "opencl")


def test_div_by_zero_and_a_folded_relu(device) -> None:
    """x / 0 is +-FLT_MAX and 0 / 0 NaN in TFLite; a following RELU6 folds into the DIV kernel."""
    mb = ModelBuilder()
    g = mb.main
    a, b = g.add_input("a", (5, 8), F32), g.add_input("b", (8,), F32)
    d = _op(g, "DIV", [a, b], (5, 8), F32, O.DivOptions())
    g.mark_outputs(d, _op(g, "DIV", [a, b], (5, 8), F32, O.DivOptions(fused_activation_function=ir.Activation.RELU)))
    x = np.random.default_rng(2).standard_normal((5, 8)).astype(F32)
    x[0, :3] = 0
    y = np.array([0, 0, 1, -2, 0.5, 3, -0.25, 0], F32)
    it = check_model(mb.build(), "opencl", inputs=[x, y])
    quotient = it.get_tensor(it.get_output_details()[0]["index"])
    assert np.isnan(quotient[0, 0]) and np.abs(quotient[1:, 0]).max() == np.finfo(F32).max
    mb = ModelBuilder()
    g = mb.main
    a, b = g.add_input("a", (5, 8), F32), g.add_input("b", (8,), F32)
    d = _op(g, "DIV", [a, b], (5, 8), F32, O.DivOptions(fused_activation_function=ir.Activation.RELU))
    g.mark_outputs(_op(g, "RELU6", [d], (5, 8), F32))
    model = mb.build()
    check_model(model, "opencl", inputs=[x, y])
    graph = read_model(model).main
    d = teflon_py.load_delegate("opencl")
    parts = partitioner.partition(graph, {op.index for op in graph.operations if d.check(graph, op)})
    assert d.compile(graph, parts[0]).stats["launches"] == 1


def test_nan_and_infinity(device) -> None:
    """MAXIMUM/MINIMUM keep TFLite's ternaries (a NaN in y wins), comparisons see NaN unequal."""
    mb = ModelBuilder()
    g = mb.main
    a, b = g.add_input("a", (12,), F32), g.add_input("b", (12,), F32)
    outs = [_op(g, op, [a, b], (12,), F32) for op in ("MAXIMUM", "MINIMUM", "SQUARED_DIFFERENCE")]
    outs += [_op(g, op, [a, b], (12,), BOOL) for op in COMPARISONS]
    outs += [_op(g, op, [a], (12,), F32) for op in ("ABS", "NEG", "SIGN", "FLOOR", "EXP", "SQUARE")]
    g.mark_outputs(*outs)
    nan, inf = np.nan, np.inf
    x = np.array([nan, 1, nan, inf, -inf, 0, -0.0, 2, inf, 5, -3, 1e30], F32)
    y = np.array([1, nan, nan, 1, 1, -0.0, 0, inf, inf, -inf, -3, -1e30], F32)
    check_model(mb.build(), "opencl", inputs=[x, y])


@pytest.mark.parametrize(("a", "b"), [((3, 9000), (9000,)), ((9000, 3), (3,)), ((2, 4100, 1), (1, 1, 3)),
                                      ((4, 5000), (4, 1))], ids=str)
def test_long_rows(device, a: tuple, b: tuple) -> None:
    """Rows past the 4096-element chunk and many short rows per work-item, for the binary,
    comparison, SELECT_V2 and unary kernels; operand b contiguous, broadcast, or one value per row."""
    out = np.broadcast_shapes(a, b)
    mb = ModelBuilder()
    g = mb.main
    x, y = g.add_input("x", a, F32), g.add_input("y", b, F32)
    m = _op(g, "POW", [_op(g, "ABS", [x], a, F32), y], out, F32)
    c = _op(g, "LESS_EQUAL", [x, y], out, BOOL)
    g.mark_outputs(m, _op(g, "SELECT_V2", [c, y, x], out, F32, O.SelectV2Options()))
    rng = np.random.default_rng(3)
    check_model(mb.build(), "opencl", inputs=[rng.standard_normal(a).astype(F32),
                                              rng.uniform(-2, 2, b).astype(F32)])


@pytest.mark.parametrize(("op", "options"), [
    ("LEAKY_RELU", O.LeakyReluOptions(alpha=-0.7)), ("LEAKY_RELU", O.LeakyReluOptions(alpha=3.5)),
    ("GELU", O.GeluOptions(approximate=False)), ("GELU", O.GeluOptions(approximate=True)), ("ELU", None),
], ids=str)
def test_activations_wide_range(device, op: str, options: object) -> None:
    """Inputs spanning [-12, 12], deep into erfc's and expm1's tails."""
    x = np.linspace(-12, 12, 4801).astype(F32).reshape(1, -1)
    model = single_op(op, [{"shape": x.shape, "dtype": F32}], [{"shape": x.shape, "dtype": F32}], options)
    resolver = OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES if op == "ELU" else OpResolverType.BUILTIN_REF
    check_model(model, "opencl", inputs=[x], resolver=resolver)  # ELU is not in the reference resolver


def test_copies_when_not_zero_copy(device, monkeypatch: pytest.MonkeyPatch) -> None:
    """Graph inputs and outputs of every lowered dtype through device buffers (GPU-style I/O)."""
    from teflon_py.opencl.runtime.device import DeviceContext

    monkeypatch.setattr(DeviceContext, "zero_copy", property(lambda self: False))
    mb = ModelBuilder()
    g = mb.main
    b, u, i = g.add_input("b", (9,), BOOL), g.add_input("u", (9,), np.uint8), g.add_input("i", (9,), np.int8)
    g.mark_outputs(_op(g, "CAST", [u], (9,), F32), _op(g, "CAST", [i], (9,), BOOL),
                   _op(g, "LOGICAL_NOT", [b], (9,), BOOL), _op(g, "CAST", [b], (9,), np.int8))
    check_model(mb.build(), "opencl")


def test_reasons() -> None:
    """What stays on NumPy says why."""
    cases = {
        "EQUAL: int8 tensors not supported on OpenCL yet": single_op(
            "EQUAL", [{"shape": (3,), "dtype": np.int8, "quant": quantization(0.1, 2)}] * 2,
            [{"shape": (3,), "dtype": BOOL}]),
        "CAST: int64 tensors not supported on OpenCL yet": single_op(
            "CAST", [{"shape": (3,), "dtype": np.int64}], [{"shape": (3,), "dtype": F32}]),
        "SELECT: condition [2] must match x [3, 2], be a scalar, or match its first axis": single_op(
            "SELECT", [{"shape": (2,), "dtype": BOOL}, {"shape": (3, 2), "dtype": F32}, {"shape": (3, 2), "dtype": F32}],
            [{"shape": (3, 2), "dtype": F32}], O.SelectOptions()),
        "LESS: output type float32 is not bool": single_op(
            "LESS", [{"shape": (3,), "dtype": F32}] * 2, [{"shape": (3,), "dtype": F32}]),
    }
    for reason, model in cases.items():
        graph = read_model(model).main
        assert teflon_py.load_delegate("opencl").check(graph, graph.operations[0]).reason == reason


@pytest.mark.parametrize("op", ["GELU", "TANH"])
def test_gelu_and_tanh_per_element(device, op: str) -> None:
    """The 16-lane GELU and tanh (elementwise.cl's own erfc and tanh approximations, not the
    builtins) within 2e-6 of the exact value, element by element, wherever it is a normal float,
    over [-14, 14] densely, near 0, in the tails and at +-inf, NaN and +-0; the length leaves a
    tail for the builtin path."""
    import math

    rng = np.random.default_rng(4)
    x = np.concatenate([np.linspace(-14, 14, 56003), rng.standard_normal(4000) * 1e-3,
                        np.geomspace(1e-30, 1e-3, 500), -np.geomspace(1e-30, 1e-3, 500),
                        [np.inf, -np.inf, np.nan, 0.0, -0.0, 0.625, -0.625, 9.1, -9.1, 8.25]]).astype(F32)
    options = O.GeluOptions(approximate=False) if op == "GELU" else None
    model = single_op(op, [{"shape": x.shape, "dtype": F32}], [{"shape": x.shape, "dtype": F32}], options)
    (ours,), _ = run_teflon(model, [x], "opencl")

    def exact(v: float) -> float:
        if op == "TANH":
            return math.tanh(v)
        return 0.5 * v * math.erfc(-v / math.sqrt(2)) if math.isfinite(v) else (v if v > 0 else math.nan)

    expected = np.array([exact(float(v)) if not math.isnan(v) else math.nan for v in x])
    assert np.array_equal(np.isnan(ours), np.isnan(expected))
    finite = np.isfinite(expected)
    assert np.array_equal(ours[~finite & ~np.isnan(expected)], expected[~finite & ~np.isnan(expected)])
    normal = finite & (np.abs(expected) > np.finfo(F32).tiny)
    rel = np.abs(ours[normal] - expected[normal]) / np.abs(expected[normal])
    assert rel.max() <= 2e-6, (op, float(rel.max()), float(x[normal][rel.argmax()]))
