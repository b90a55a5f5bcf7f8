"""Binary elementwise ops, ADD_N, SELECT and SELECT_V2 against LiteRT's reference kernels,
over broadcast shape pairs, float32, plain integers and the quantized forms LiteRT has."""
from __future__ import annotations

import numpy as np
import pytest

import teflon_py
from teflon_py import ir
from teflon_py.errors import ModelError, TeflonError, UnsupportedError
from teflon_py.tflite import options as opts
from tests.harness import check_model, quantization, run_teflon, single_op

#: (shape a, shape b): same shape, trailing-axis broadcast, both sides broadcast, scalar, rank 5.
SHAPE_PAIRS = [((2, 3, 4), (2, 3, 4)), ((2, 3, 4), (4,)), ((1, 3, 1), (2, 1, 4)), ((), (2, 3)),
               ((2, 1, 3, 1, 2), (1, 2, 1, 4, 1))]
OPTIONS = {"DIV": opts.DivOptions(), "POW": opts.PowOptions(), "MAXIMUM": opts.MaximumMinimumOptions(),
           "MINIMUM": opts.MaximumMinimumOptions(), "SQUARED_DIFFERENCE": opts.SquaredDifferenceOptions(),
           "FLOOR_DIV": opts.FloorDivOptions(), "FLOOR_MOD": opts.FloorModOptions()}


def out_shape(a: tuple, b: tuple) -> tuple:
    return np.broadcast_shapes(a, b)


def binary_model(op: str, a: tuple, b: tuple, dtype: type, quants: tuple = (None, None, None),
                 options: object = None) -> bytes:
    return single_op(op, [{"shape": a, "dtype": dtype, "quant": quants[0]},
                          {"shape": b, "dtype": dtype, "quant": quants[1]}],
                     [{"shape": out_shape(a, b), "dtype": dtype, "quant": quants[2]}],
                     options if options is not None else OPTIONS.get(op))


def nonzero(x: np.ndarray) -> np.ndarray:
    return np.where(x == 0, 1, x).astype(x.dtype)


# -- float32 ---------------------------------------------------------------------------------------

def _float_inputs(op: str, a: tuple, b: tuple, rng: np.random.Generator) -> list[np.ndarray]:
    x = (rng.standard_normal(a) * 3).astype(np.float32)
    y = (rng.standard_normal(b) * 3).astype(np.float32)
    if op == "POW":  # positive bases keep the results real
        x, y = np.abs(x) + np.float32(0.1), np.clip(y, -3, 3)
    if op == "DIV" and y.size > 2:  # x / 0 gives +-FLT_MAX in TFLite (the activation clamp)
        y.flat[:2] = 0
        x = np.where(x == 0, 1, x).astype(np.float32)
    if op in ("FLOOR_DIV", "FLOOR_MOD"):
        y = np.where(np.abs(y) < 0.1, 0.5, y).astype(np.float32)
    if op == "MAXIMUM" and x.size == y.size:
        y.flat[::3] = x.flat[::3]  # ties
    return [x, y]


FLOAT_CASES = [(op, a, b) for op in ("DIV", "POW", "MAXIMUM", "MINIMUM", "SQUARED_DIFFERENCE", "FLOOR_DIV",
                                     "FLOOR_MOD") for a, b in SHAPE_PAIRS]
FLOAT_CASES += [("ATAN2", (2, 3, 4), (2, 3, 4)), ("ATAN2", (5,), (5,))]  # ATAN2 does not broadcast


@pytest.mark.parametrize(("op", "a", "b"), FLOAT_CASES, ids=str)
def test_float(backend: str, op: str, a: tuple, b: tuple) -> None:
    inputs = _float_inputs(op, a, b, np.random.default_rng(0))
    check_model(binary_model(op, a, b, np.float32), backend, inputs=inputs)


@pytest.mark.parametrize("act", [ir.Activation.RELU, ir.Activation.RELU6, ir.Activation.RELU_N1_TO_1],
                         ids=lambda a: a.name)
@pytest.mark.parametrize("dtype", [np.float32, np.int32], ids=lambda d: d.__name__)
def test_div_activation(backend: str, dtype: type, act: ir.Activation) -> None:
    rng = np.random.default_rng(1)
    x = (rng.standard_normal((4, 5)) * 8).astype(dtype)
    y = nonzero((rng.standard_normal((5,)) * 3).astype(dtype))
    model = binary_model("DIV", (4, 5), (5,), dtype, options=opts.DivOptions(fused_activation_function=act))
    check_model(model, backend, inputs=[x, y])


# -- plain integers ---------------------------------------------------------------------------------

def _int_inputs(op: str, dtype: type, a: tuple, b: tuple, rng: np.random.Generator) -> list[np.ndarray]:
    info = np.iinfo(dtype)
    lo, hi = max(info.min, -1000), min(info.max, 1000)
    x = rng.integers(lo, hi, a, endpoint=True).astype(dtype)
    y = rng.integers(lo, hi, b, endpoint=True).astype(dtype)
    if op == "POW":
        x = rng.integers(-9, 9, a, endpoint=True).astype(dtype)
        y = rng.integers(0, 9, b, endpoint=True).astype(dtype)  # 9^9 fits int32
    if op in ("DIV", "FLOOR_DIV", "FLOOR_MOD"):
        y = nonzero(rng.integers(-40, 40, b, endpoint=True).astype(dtype))
    if op in ("MAXIMUM", "MINIMUM", "SQUARED_DIFFERENCE") and x.size > 2:
        x.flat[:2] = [info.min, info.max]
    return [x, y]


INT_CASES = [("DIV", np.int32), ("POW", np.int32), ("SQUARED_DIFFERENCE", np.int32)] + [
    (op, t) for op in ("MAXIMUM", "MINIMUM") for t in (np.int8, np.uint8, np.int16, np.int32, np.int64)] + [
    ("FLOOR_DIV", t) for t in (np.int8, np.int16, np.int32)] + [
    ("FLOOR_MOD", t) for t in (np.int8, np.int16, np.int32, np.int64)]


@pytest.mark.parametrize(("op", "dtype"), INT_CASES, ids=str)
def test_integer(backend: str, op: str, dtype: type) -> None:
    a, b = SHAPE_PAIRS[2]
    inputs = _int_inputs(op, dtype, a, b, np.random.default_rng(2))
    check_model(binary_model(op, a, b, dtype), backend, inputs=inputs)


# -- quantized ---------------------------------------------------------------------------------------

def all_pairs(dtype: type) -> tuple[np.ndarray, np.ndarray]:
    """Every pair of 8-bit values, as a (256, 1) column and a (256,) row."""
    values = np.arange(np.iinfo(dtype).min, np.iinfo(dtype).max + 1).astype(dtype)
    return values.reshape(256, 1), values


#: (scale a, zp a, scale b, zp b, scale out, zp out) for int8; uint8 adds 128 to each zero point.
DIV_QPARAMS = {
    "unit": (0.05, 0, 0.05, 0, 0.05, 0),
    "offsets": (0.04, -30, 0.02, 50, 0.08, -10),
    "small_out": (0.1, 10, 0.5, -100, 0.01, -128),
    "random": (0.1830, 80, 0.1233, 33, 0.1473, 11),
}


@pytest.mark.parametrize("act", [ir.Activation.NONE, ir.Activation.RELU])
@pytest.mark.parametrize("qp", list(DIV_QPARAMS))
@pytest.mark.parametrize("dtype", [np.int8, np.uint8], ids=lambda d: d.__name__)
def test_div_quantized(backend: str, dtype: type, qp: str, act: ir.Activation) -> None:
    """Every numerator against every denominator but the zero point (LiteRT refuses x / 0).

    Small numerators over large denominators push TFLite's final rounding shift past 31 bits, where
    its compiled kernel wraps the shift count (a numerator at its zero point then gives zp + 1).
    """
    s1, z1, s2, z2, so, zo = DIV_QPARAMS[qp]
    shift = 128 if dtype == np.uint8 else 0
    x, y = all_pairs(dtype)
    y = y[y.astype(np.int64) != z2 + shift]
    quants = (quantization(s1, z1 + shift), quantization(s2, z2 + shift), quantization(so, zo + shift))
    model = binary_model("DIV", x.shape, y.shape, dtype, quants, opts.DivOptions(fused_activation_function=act))
    check_model(model, backend, inputs=[x, y])


@pytest.mark.parametrize("act", [ir.Activation.NONE, ir.Activation.RELU6])
@pytest.mark.parametrize(("a", "b"), [((20000,), (20000,)), ((40, 500), (500,))], ids=str)
def test_div_int16(backend: str, a: tuple, b: tuple, act: ir.Activation) -> None:
    """Many near-ties: the multiplier is derived in float32, which decides their rounding."""
    rng = np.random.default_rng(4)
    x = rng.integers(-32768, 32767, a, endpoint=True).astype(np.int16)
    y = nonzero(rng.integers(-32768, 32767, b, endpoint=True).astype(np.int16))
    quants = (quantization(8.9e-4), quantization(2.35e-4), quantization(6.27e-4))
    model = binary_model("DIV", a, b, np.int16, quants, opts.DivOptions(fused_activation_function=act))
    check_model(model, backend, inputs=[x, y])


#: (scale a, zp a, scale b, zp b, scale out, zp out) of int8 SQUARED_DIFFERENCE: equal scales, mixed,
#: b much finer than a (its multiplier tiny), an output finer than the squares (saturating)
SQDIFF_QPARAMS = [(0.05, 3, 0.05, 3, 0.2, -128), (0.03, -40, 0.07, 20, 0.1, -100), (0.1, 0, 0.02, -5, 0.5, -128),
                  (0.2, 17, 0.0004, -90, 0.02, -128)]


@pytest.mark.parametrize("qp", SQDIFF_QPARAMS, ids=str)
def test_squared_difference_int8(backend: str, qp: tuple) -> None:
    """Every pair of int8 values (a 256 x 256 broadcast)."""
    s1, z1, s2, z2, so, zo = qp
    quants = (quantization(s1, z1), quantization(s2, z2), quantization(so, zo))
    x, y = all_pairs(np.int8)
    check_model(binary_model("SQUARED_DIFFERENCE", x.shape, y.shape, np.int8, quants), backend, inputs=[x, y])


@pytest.mark.parametrize("qp", SQDIFF_QPARAMS[1:3], ids=str)
@pytest.mark.parametrize(("a", "b"), SHAPE_PAIRS, ids=str)
def test_squared_difference_int8_shapes(backend: str, a: tuple, b: tuple, qp: tuple) -> None:
    """Same shapes and the broadcasts of SHAPE_PAIRS (scalar, both sides, rank 5), random values."""
    s1, z1, s2, z2, so, zo = qp
    quants = (quantization(s1, z1), quantization(s2, z2), quantization(so, zo))
    check_model(binary_model("SQUARED_DIFFERENCE", a, b, np.int8, quants), backend, seed=5)


def test_squared_difference_int8_output_multiplier_from_one_refused() -> None:
    """An output scale so fine that the output multiplier reaches 1, which LiteRT's Prepare does
    not take: the OpenCL lowering refuses it, naming why."""
    from teflon_py.opencl.lowerings import check_op

    q = quantization(1.0, 0)
    model = binary_model("SQUARED_DIFFERENCE", (4,), (4,), np.int8, (q, q, quantization(1e-4, 0)))
    graph = teflon_py.Interpreter(model_content=model).graph
    verdict = check_op(graph, graph.operations[0], None)
    assert not verdict.supported and "output multiplier >= 1" in verdict.reason


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16], ids=lambda d: d.__name__)
@pytest.mark.parametrize("op", ["MAXIMUM", "MINIMUM"])
def test_max_min_quantized(backend: str, op: str, dtype: type) -> None:
    """Quantized tensors compare their stored values (LiteRT does not rescale)."""
    q = quantization(0.05, 0 if dtype != np.uint8 else 128)
    check_model(binary_model(op, (3, 4, 5), (4, 1), dtype, (q, q, q)), backend)


# -- ADD_N, SELECT ------------------------------------------------------------------------------------

@pytest.mark.parametrize("n", [2, 3, 5])
@pytest.mark.parametrize("dtype", [np.float32, np.int32], ids=lambda d: d.__name__)
def test_add_n(backend: str, dtype: type, n: int) -> None:
    model = single_op("ADD_N", [{"shape": (3, 4), "dtype": dtype}] * n, [{"shape": (3, 4), "dtype": dtype}],
                      opts.AddNOptions())
    check_model(model, backend)


SELECT_TYPES = [np.float32, np.int8, np.uint8, np.int16, np.int32, np.int64, np.bool_]


SELECT_CASES = [(t, (3, 4, 2)) for t in SELECT_TYPES] + [(t, c) for t in (np.float32, np.int8) for c in ((), (3,))]


@pytest.mark.parametrize(("dtype", "cond_shape"), SELECT_CASES, ids=str)
def test_select(backend: str, dtype: type, cond_shape: tuple) -> None:
    """SELECT: condition of x's shape, a scalar, or one flag per row."""
    q = quantization(0.1, 2) if dtype in (np.int8, np.uint8) else None
    model = single_op("SELECT", [{"shape": cond_shape, "dtype": np.bool_},
                                 {"shape": (3, 4, 2), "dtype": dtype, "quant": q},
                                 {"shape": (3, 4, 2), "dtype": dtype, "quant": q}],
                      [{"shape": (3, 4, 2), "dtype": dtype, "quant": q}], opts.SelectOptions())
    check_model(model, backend, refuses=("int16 tensors", "int64 tensors"))


V2_SHAPES = [((4, 1), (3, 1, 2), (2,)), ((3, 4, 2), (3, 4, 2), (3, 4, 2)), ((), (2, 3), (1, 3)),
             ((2, 1, 1, 1, 3), (1, 2, 1, 1, 1), (1, 1, 2, 3, 1))]
V2_CASES = [(t, V2_SHAPES[0]) for t in SELECT_TYPES] + [(np.float32, shapes) for shapes in V2_SHAPES[1:]]


@pytest.mark.parametrize(("dtype", "shapes"), V2_CASES, ids=str)
def test_select_v2(backend: str, dtype: type, shapes: tuple) -> None:
    """SELECT_V2: condition, x and y broadcast together (up to rank 5)."""
    c, x, y = shapes
    out = np.broadcast_shapes(c, x, y)
    model = single_op("SELECT_V2", [{"shape": c, "dtype": np.bool_}, {"shape": x, "dtype": dtype},
                                    {"shape": y, "dtype": dtype}], [{"shape": out, "dtype": dtype}],
                      opts.SelectV2Options())
    check_model(model, backend, refuses=("int16 tensors", "int64 tensors"))


@pytest.mark.parametrize(("op", "dtype", "a", "b", "error"), [("ATAN2", np.float32, (2, 3), (3,), ModelError),
                                                              ("POW", np.int8, (4,), (4,), UnsupportedError),
                                                              ("SQUARED_DIFFERENCE", np.uint8, (4,), (4,),
                                                               UnsupportedError)], ids=str)
def test_unsupported(op: str, dtype: type, a: tuple, b: tuple, error: type) -> None:
    """What LiteRT refuses, the fallback refuses too, naming the node: shapes that break the op's
    rules (ATAN2 does not broadcast) are a ModelError, types no kernel computes UnsupportedError."""
    q = quantization(0.1, 3) if dtype in (np.int8, np.uint8) else None
    model = binary_model(op, a, b, dtype, (q, q, q))
    inputs = [np.ones(a, dtype), np.ones(b, dtype)]
    with pytest.raises(error, match=f"node 0 \\({op}\\)"):
        run_teflon(model, inputs)


def test_division_by_zero_is_an_error() -> None:
    model = binary_model("FLOOR_DIV", (3,), (3,), np.int32)
    with pytest.raises(TeflonError, match=r"node 0 \(FLOOR_DIV\): division by zero"):
        run_teflon(model, [np.ones(3, np.int32), np.array([1, 0, 2], np.int32)])
