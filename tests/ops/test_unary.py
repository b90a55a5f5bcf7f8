"""Unary elementwise ops, PRELU, CAST and ZEROS_LIKE against LiteRT's reference kernels.

Quantized 8-bit cases feed every input value at once (the ops are tables or per-value formulas),
under random scales and zero points whose output range covers the op's real outputs; int16 cases
feed random values plus the extremes. CEIL, ROUND and ELU are absent from LiteRT's reference op
resolver, so they are checked against its builtin kernels with the default delegate off.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from ai_edge_litert.interpreter import OpResolverType

import teflon_py
from teflon_py.errors import TeflonError, UnsupportedError
from teflon_py.tflite import options as opts
from tests.harness import ModelBuilder, check_model, quantization, run_litert, run_teflon, single_op

SHAPES = [(7, 5), (1, 4, 4, 3)]
NOT_IN_REFERENCE_RESOLVER = {"CEIL", "ROUND", "ELU"}


def unary_model(op: str, shape: tuple, dtype: type, qin: object = None, qout: object = None,
                options: object = None, out_dtype: type | None = None) -> bytes:
    return single_op(op, [{"shape": shape, "dtype": dtype, "quant": qin}],
                     [{"shape": shape, "dtype": out_dtype or dtype, "quant": qout}], options)


def check(op: str, model: bytes, backend: str, inputs: list[np.ndarray], refuses: str | tuple[str, ...] = ()) -> None:
    """check_model against the reference kernels, or LiteRT's builtin ones where the reference lacks the op."""
    resolver = (OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES if op in NOT_IN_REFERENCE_RESOLVER
                else OpResolverType.BUILTIN_REF)
    check_model(model, backend, inputs=inputs, resolver=resolver, refuses=refuses)


# -- float32 ---------------------------------------------------------------------------------------

def _gelu(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * np.array([math.erfc(-v / math.sqrt(2)) for v in x.ravel()]).reshape(x.shape)


#: op -> (options, input generator from a N(0, 1) sample)
FLOAT_OPS = {
    "ABS": (None, lambda z: z * 3),
    "NEG": (None, lambda z: z * 3),
    "EXP": (None, lambda z: z * 4),
    "LOG": (None, lambda z: np.abs(z) * 3),  # (NaN outputs would trip the harness: NaN != NaN)
    "SQRT": (None, lambda z: np.abs(z) * 3),
    "RSQRT": (None, lambda z: np.abs(z) * 3),
    "SQUARE": (None, lambda z: z * 3),
    "SIN": (None, lambda z: z * 6),
    "COS": (None, lambda z: z * 6),
    "FLOOR": (None, lambda z: z * 3),
    "CEIL": (None, lambda z: z * 3),
    "ROUND": (None, lambda z: np.round(z * 6) / 2),  # many exact halves: ties go to even
    "SIGN": (None, lambda z: np.where(np.abs(z) < 0.3, 0, z)),
    "TANH": (None, lambda z: z * 3),
    "RELU_N1_TO_1": (None, lambda z: z * 2),
    "RELU_0_TO_1": (None, lambda z: z * 2),
    "LEAKY_RELU": (opts.LeakyReluOptions(alpha=0.2), lambda z: z * 3),
    "ELU": (None, lambda z: z * 3),
    "GELU": (opts.GeluOptions(approximate=False), lambda z: z * 4),
    "GELU_APPROX": (opts.GeluOptions(approximate=True), lambda z: z * 4),
    "ZEROS_LIKE": (None, lambda z: z),
}


@pytest.mark.parametrize("name", list(FLOAT_OPS))
def test_float(backend: str, name: str) -> None:
    options, make = FLOAT_OPS[name]
    shape = SHAPES[len(name) % 2]
    op = name.removesuffix("_APPROX")
    x = make(np.random.default_rng(0).standard_normal(shape)).astype(np.float32)
    check(op, unary_model(op, shape, np.float32, options=options), backend, [x])


def test_erfc_matches_libm() -> None:
    from teflon_py.fallback.unary import erfc
    x = np.linspace(-6, 12, 4001)
    expected = np.array([math.erfc(v) for v in x])
    np.testing.assert_allclose(erfc(x), expected, rtol=1e-11, atol=0)


# -- plain integers and bool ---------------------------------------------------------------------

@pytest.mark.parametrize(("op", "dtype"), [
    ("ABS", np.int32), ("ABS", np.int16), ("NEG", np.int8), ("NEG", np.int16), ("NEG", np.int32),
    ("NEG", np.int64), ("SIGN", np.int32), ("ZEROS_LIKE", np.int32), ("ZEROS_LIKE", np.int64),
    ("LOGICAL_NOT", np.bool_),
], ids=str)
def test_integer(backend: str, op: str, dtype: type) -> None:
    rng = np.random.default_rng(1)
    if dtype == np.bool_:
        x = rng.integers(0, 2, (6, 7)).astype(bool)
    else:
        info = np.iinfo(dtype)
        x = rng.integers(max(info.min, -1000), min(info.max, 1000), (6, 7), endpoint=True).astype(dtype)
        x.flat[:3] = [info.min, info.max, 0]  # wrap-around of -min, abs(min)
    check_model(unary_model(op, x.shape, dtype), backend, inputs=[x])


# -- quantized ---------------------------------------------------------------------------------------

def _real_fn(name: str, alpha: float = 0.2) -> callable:
    return {
        "ABS": np.abs, "EXP": np.exp, "LOG": lambda v: np.log(np.maximum(v, 1e-3)),
        "SQRT": lambda v: np.sqrt(np.maximum(v, 0)), "RSQRT": lambda v: 1 / np.sqrt(np.maximum(v, 0.05)),
        "TANH": np.tanh, "RELU_N1_TO_1": lambda v: np.clip(v, -1, 1), "RELU_0_TO_1": lambda v: np.clip(v, 0, 1),
        "LEAKY_RELU": lambda v: np.where(v > 0, v, alpha * v), "ELU": lambda v: np.where(v < 0, np.expm1(v), v),
        "GELU": _gelu, "GELU_APPROX": _gelu,
    }[name]


def random_qparams(name: str, dtype: type, rng: np.random.Generator, *, symmetric: bool = False,
                   non_negative: bool = False, alpha: float = 0.2) -> tuple:
    """Input (scale, zp) at random; output (scale, zp) covering the op's real outputs, jittered."""
    info = np.iinfo(dtype)
    if symmetric:
        s_in, z_in = float(rng.uniform(2, 8) / info.max), 0
    else:
        s_in = float(rng.uniform(0.01, 0.08))
        lo = (info.min + info.max) // 2 if non_negative else info.min
        z_in = int(rng.integers(lo, (info.min + info.max) // 2 + 60 if not non_negative else info.max - 60))
    grid = s_in * (np.linspace(info.min, info.max, 513) - z_in)
    real = _real_fn(name, alpha)(grid)
    lo_r, hi_r = float(min(real.min(), 0)), float(max(real.max(), 0))
    if symmetric:
        return (s_in, 0), (max(abs(lo_r), hi_r) / info.max * float(rng.uniform(0.7, 1.3)), 0)
    s_out = (hi_r - lo_r) / (info.max - info.min) * float(rng.uniform(0.7, 1.3))
    z_out = int(np.clip(round(info.min - lo_r / s_out), info.min, info.max))
    return (s_in, z_in), (s_out, z_out)


def all_values(dtype: type, rng: np.random.Generator, low: int | None = None) -> np.ndarray:
    """Every 8-bit value (from ``low``), or random int16 values plus both extremes."""
    info = np.iinfo(dtype)
    low = info.min if low is None else low
    if info.bits == 8:
        return np.arange(low, info.max + 1).astype(dtype)
    x = rng.integers(low, info.max, 1000, endpoint=True)
    x[:2] = [low, info.max]
    return x.astype(dtype)


QUANTIZED = [
    ("ABS", np.int8), ("ABS", np.int16), ("EXP", np.int8), ("EXP", np.int16), ("LOG", np.int8),
    ("LOG", np.int16), ("SQRT", np.int8), ("SQRT", np.int16), ("RSQRT", np.int8), ("RSQRT", np.int16),
    ("TANH", np.int8), ("TANH", np.uint8), ("RELU_N1_TO_1", np.int8), ("RELU_N1_TO_1", np.uint8),
    ("RELU_0_TO_1", np.int8), ("RELU_0_TO_1", np.uint8), ("LEAKY_RELU", np.int8),
    ("LEAKY_RELU", np.uint8), ("LEAKY_RELU", np.int16), ("ELU", np.int8), ("GELU", np.int8),
    ("GELU", np.uint8), ("GELU", np.int16), ("GELU_APPROX", np.int8), ("GELU_APPROX", np.uint8),
    ("GELU_APPROX", np.int16),
]
#: int16 kernels that need zero points 0; ops defined only for inputs >= the zero point.
SYMMETRIC_INT16 = {"ABS", "EXP", "LOG", "SQRT", "RSQRT", "LEAKY_RELU"}
NON_NEGATIVE = {"SQRT", "RSQRT"}


@pytest.mark.parametrize("seed", range(2))
@pytest.mark.parametrize(("name", "dtype"), QUANTIZED, ids=str)
def test_quantized(backend: str, name: str, dtype: type, seed: int) -> None:
    rng = np.random.default_rng(seed)
    op = name.removesuffix("_APPROX")
    options = {"LEAKY_RELU": opts.LeakyReluOptions(alpha=0.2), "GELU": opts.GeluOptions(approximate=name != op)}.get(op)
    symmetric = dtype == np.int16 and name in SYMMETRIC_INT16
    (s_in, z_in), (s_out, z_out) = random_qparams(name, dtype, rng, symmetric=symmetric,
                                                  non_negative=name in NON_NEGATIVE)
    if name == "ABS" and seed == 0:
        s_out, z_out = s_in, (z_out if dtype == np.int8 else 0)  # equal scales: no rescaling
    refuses: tuple[str, ...] = ()
    if name == "RSQRT" and dtype == np.int8:
        if seed == 0:
            z_in = -128  # a range from 0: runs on OpenCL
        else:  # codes below the zero point exist (the inputs avoid them): OpenCL refuses
            refuses = ("codes below its zero point",)
    x = all_values(dtype, rng, low=z_in if name in NON_NEGATIVE else None)
    model = unary_model(op, x.shape, dtype, quantization(s_in, z_in), quantization(s_out, z_out), options)
    check(op, model, backend, [x], refuses)


#: (input scale, output scale, output zero point), the input zero point -128 (a real range from 0,
#: as RSQRT's inputs have): coarse and fine inputs, outputs that saturate at 127 near zero.
RSQRT_INT8 = [(0.02, 0.028, -128), (0.5, 0.006, -128), (0.003, 0.1, -20)]


@pytest.mark.parametrize(("s_in", "s_out", "z_out"), RSQRT_INT8, ids=str)
def test_rsqrt_int8_all_values(backend: str, s_in: float, s_out: float, z_out: int) -> None:
    """int8 RSQRT on all 256 input values in one tensor (LiteRT's fixed-point inverse sqrt)."""
    x = np.arange(-128, 128).astype(np.int8).reshape(4, 64)
    model = unary_model("RSQRT", x.shape, np.int8, quantization(s_in, -128), quantization(s_out, z_out))
    check_model(model, backend, inputs=[x])


def test_rsqrt_int8_below_zero_point(backend: str) -> None:
    """Inputs below the zero point: LiteRT fails the invoke and so does the fallback; OpenCL (whose
    kernels cannot fail an invoke) refuses such an input's RSQRT, so the fallback raises there too."""
    model = unary_model("RSQRT", (256,), np.int8, quantization(0.02, 10), quantization(0.05, -128))
    x = np.arange(-128, 128).astype(np.int8)
    if backend != "numpy":
        it = teflon_py.Interpreter(model_content=model, experimental_delegates=[teflon_py.load_delegate(backend)])
        it.allocate_tensors()
        (place,) = it.placements()
        assert place.backend != backend and "codes below its zero point 10 are negative" in (place.reason or "")
    with pytest.raises(TeflonError, match="only defined for positive values"):
        run_teflon(model, [x], backend)
    expected = run_litert(model, [np.maximum(x, 10)])[0]  # valid inputs: the fallback computes them
    out, _ = run_teflon(model, [np.maximum(x, 10)], backend)
    np.testing.assert_array_equal(out[0], expected)


@pytest.mark.parametrize("alpha", [-0.3, 0.0, 1.7])
@pytest.mark.parametrize("dtype", [np.int8, np.int16], ids=lambda d: d.__name__)
def test_leaky_relu_alpha(backend: str, dtype: type, alpha: float) -> None:
    rng = np.random.default_rng(5)
    (s_in, z_in), (s_out, z_out) = random_qparams("LEAKY_RELU", dtype, rng, alpha=alpha,
                                                  symmetric=dtype == np.int16)
    x = all_values(dtype, rng)
    model = unary_model("LEAKY_RELU", x.shape, dtype, quantization(s_in, z_in), quantization(s_out, z_out),
                        opts.LeakyReluOptions(alpha=alpha))
    check_model(model, backend, inputs=[x])


@pytest.mark.parametrize("in_scale", [2.0**-12, 2.0**-11, 0.0003, 2.0**-9], ids=str)
def test_tanh_int16(backend: str, in_scale: float) -> None:
    model = unary_model("TANH", (1000,), np.int16, quantization(in_scale), quantization(2.0**-15))
    check_model(model, backend, inputs=[all_values(np.int16, np.random.default_rng(2))])


def test_exp_int8_overflowing_table(backend: str) -> None:
    """Table entries far past qmax, up to float32 infinity: LUTPopulate saturates them all."""
    model = unary_model("EXP", (1, 256), np.int8, quantization(0.2, -100), quantization(0.05, -128))
    check_model(model, backend, inputs=[np.arange(-128, 128).astype(np.int8).reshape(1, 256)])


# -- PRELU -------------------------------------------------------------------------------------------

PRELU_ALPHA_SHAPES = [(3,), (1, 1, 3), (4, 1, 3), (2, 4, 4, 3)]


@pytest.mark.parametrize("alpha_shape", PRELU_ALPHA_SHAPES, ids=str)
def test_prelu_float(backend: str, alpha_shape: tuple) -> None:
    rng = np.random.default_rng(3)
    alpha = rng.uniform(-0.5, 1.5, alpha_shape).astype(np.float32)
    model = single_op("PRELU", [{"shape": (2, 4, 4, 3), "dtype": np.float32}, {"data": alpha, "dtype": np.float32}],
                      [{"shape": (2, 4, 4, 3), "dtype": np.float32}])
    check_model(model, backend, inputs=[(rng.standard_normal((2, 4, 4, 3)) * 3).astype(np.float32)])


@pytest.mark.parametrize("shape", [(1, 5, 7, 8), (2, 3, 5, 24), (1, 3, 3, 5), (1, 2, 2, 1)], ids=str)
def test_prelu_float_per_channel(backend: str, shape: tuple) -> None:
    """Constant per-channel slopes over channel counts that divide 16, exceed it or neither, with a
    tail below 16 values and a RELU6 after (which folds into the PRELU)."""
    rng = np.random.default_rng(5)
    mb = ModelBuilder()
    g = mb.main
    x = g.add_input("x", shape, np.float32)
    a = g.add_constant("alpha", rng.uniform(-0.5, 1.5, (1, 1, shape[-1])).astype(np.float32))
    y = g.add_tensor("y", shape, np.float32)
    g.add_op("PRELU", [x, a], [y])
    z = g.add_tensor("z", shape, np.float32)
    g.add_op("RELU6", [y], [z])
    g.mark_outputs(z)
    check_model(mb.build(), backend, inputs=[(rng.standard_normal(shape) * 4).astype(np.float32)])


@pytest.mark.parametrize("alpha_shape", PRELU_ALPHA_SHAPES[1:3], ids=str)
@pytest.mark.parametrize(("dtype", "alpha_dtype"), [(np.int8, np.int8), (np.uint8, np.uint8), (np.int16, np.int8)],
                         ids=str)
def test_prelu_quantized(backend: str, dtype: type, alpha_dtype: type, alpha_shape: tuple) -> None:
    rng = np.random.default_rng(4)
    info, ainfo = np.iinfo(dtype), np.iinfo(alpha_dtype)
    z_in = 0 if dtype == np.int16 else int(rng.integers(info.min + 50, info.max - 50))
    s_in = 4.0 / info.max if dtype == np.int16 else 0.03
    z_alpha = int(rng.integers(ainfo.min, ainfo.max))
    s_alpha = 1.0 / 150
    alpha = rng.integers(ainfo.min, ainfo.max, alpha_shape, endpoint=True).astype(alpha_dtype)
    z_out = 0 if dtype == np.int16 else int(rng.integers(info.min + 50, info.max - 50))
    model = single_op("PRELU", [{"shape": (2, 4, 4, 3), "dtype": dtype, "quant": quantization(s_in, z_in)},
                                {"data": alpha, "dtype": alpha_dtype, "quant": quantization(s_alpha, z_alpha)}],
                      [{"shape": (2, 4, 4, 3), "dtype": dtype, "quant": quantization(s_in * 1.3, z_out)}])
    x = rng.integers(info.min, info.max, (2, 4, 4, 3), endpoint=True).astype(dtype)
    check_model(model, backend, inputs=[x])


# -- CAST --------------------------------------------------------------------------------------------

CAST_TYPES = [np.float32, np.float16, np.int8, np.uint8, np.int16, np.int32, np.int64, np.bool_]


def _cast_input(dtype: type, rng: np.random.Generator, nan: bool) -> np.ndarray:
    if dtype == np.bool_:
        return rng.integers(0, 2, 40).astype(bool)
    if np.dtype(dtype).kind == "f":
        x = np.concatenate([rng.standard_normal(24) * 200, [0.5, -0.5, 2.5, -2.7, 1e10, -1e10, np.nan, np.inf,
                                                            -np.inf, 300.0, -129.9, 255.9, 70000.0, -0.0, 65504.0, 1e-8]])
        if not nan:  # (a NaN output would trip the harness: NaN != NaN)
            x[np.isnan(x)] = 1.5
        with np.errstate(over="ignore"):
            return x.astype(dtype)
    info = np.iinfo(dtype)
    x = rng.integers(info.min, info.max, 40, endpoint=True)
    x[:4] = [info.min, info.max, 0, 1]
    return x.astype(dtype)


CAST_PAIRS = [(a, b) for a in CAST_TYPES for b in CAST_TYPES if a != b]
CAST_PAIRS += [(np.float64, t) for t in (np.float32, np.int32, np.int64, np.uint8)] + [(np.int32, np.float64)]


@pytest.mark.parametrize(("src", "dst"), CAST_PAIRS, ids=lambda d: d.__name__)
def test_cast(backend: str, src: type, dst: type) -> None:
    model = unary_model("CAST", (40,), src, out_dtype=dst)
    x = _cast_input(src, np.random.default_rng(6), nan=np.dtype(dst).kind != "f")
    check_model(model, backend, inputs=[x], refuses=("float16 casts to and from float32 only", "float64 tensors",
                                                  "int16 tensors", "int64 tensors"))


def test_unsupported() -> None:
    """Combinations LiteRT refuses (or computes wrongly: it reads an int16 PRELU alpha as int8 bytes)."""
    q = quantization(0.05, 3)
    cases = [
        (unary_model("ABS", (4,), np.uint8, q, q), np.ones(4, np.uint8), r"ABS\): type uint8"),
        (unary_model("SQUARE", (4,), np.int8, q, q), np.ones(4, np.int8), r"SQUARE\): type int8"),
        (single_op("PRELU", [{"shape": (4,), "dtype": np.int16, "quant": quantization(0.01)},
                             {"data": np.ones(4, np.int16), "dtype": np.int16, "quant": quantization(0.01)}],
                   [{"shape": (4,), "dtype": np.int16, "quant": quantization(0.01)}]), np.ones(4, np.int16),
         r"PRELU\): alpha type int16"),
    ]
    for model, x, message in cases:
        with pytest.raises(UnsupportedError, match=r"node 0 \(" + message):
            run_teflon(model, [x])
