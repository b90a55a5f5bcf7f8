"""Float ops fed NaN and +-inf where LiteRT's reference kernels define the result: the same NaN
positions and the same infinities on every backend (``assert_close`` compares both, and the finite
rest within the usual bounds). An op with a fused activation clamps to it with LiteRT's
CalculateActivationRange, whose unbounded sides are -FLT_MAX / FLT_MAX: such an op (ADD, MUL,
pools, convolutions...) turns +-inf into +-FLT_MAX even with no activation, and keeps NaN."""
from __future__ import annotations

import numpy as np
import pytest
from ai_edge_litert.interpreter import OpResolverType

from teflon_py import ir
from teflon_py.tflite import options as O
from tests.harness import check_model, single_op
from tests.ops.test_unary import NOT_IN_REFERENCE_RESOLVER

F32 = np.float32
SPECIALS = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e38, -1e38, 3.5, -2.25, 0.5, -0.5, 6.5, -1.5, 1e-40],
                    F32)


def specials(shape: tuple, seed: int = 0) -> np.ndarray:
    """Mostly special values (NaN, +-inf, +-0, near-overflow, halves, a denormal), some N(0, 3)."""
    rng = np.random.default_rng(seed)
    picked = rng.choice(SPECIALS, shape)
    return np.where(rng.random(shape) < 0.7, picked, 3 * rng.standard_normal(shape)).astype(F32)


UNARY = ["RELU", "RELU6", "RELU_N1_TO_1", "RELU_0_TO_1", "TANH", "LOGISTIC", "ABS", "NEG", "FLOOR", "CEIL",
         "ROUND", "SQUARE", "EXP", "SQRT", "RSQRT", "LOG", "SIN", "COS", "HARD_SWISH", "ELU", "SIGN"]


@pytest.mark.parametrize("op", UNARY)
def test_unary(backend: str, op: str) -> None:
    model = single_op(op, [{"shape": (6, 20), "dtype": F32}], [{"shape": (6, 20), "dtype": F32}])
    resolver = (OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES if op in NOT_IN_REFERENCE_RESOLVER
                else OpResolverType.BUILTIN_REF)
    check_model(model, backend, inputs=[specials((6, 20))], resolver=resolver)


BINARY = {"ADD": O.AddOptions(), "SUB": O.SubOptions(), "MUL": O.MulOptions(), "DIV": O.DivOptions(),
          "MAXIMUM": O.MaximumMinimumOptions(), "MINIMUM": O.MaximumMinimumOptions(),
          "SQUARED_DIFFERENCE": O.SquaredDifferenceOptions()}


@pytest.mark.parametrize("shapes", [((6, 20), (6, 20)), ((6, 20), (20,))], ids=["same", "broadcast"])
@pytest.mark.parametrize("op", list(BINARY))
def test_binary(backend: str, op: str, shapes: tuple) -> None:
    a, b = shapes
    model = single_op(op, [{"shape": a, "dtype": F32}, {"shape": b, "dtype": F32}],
                      [{"shape": np.broadcast_shapes(a, b), "dtype": F32}], BINARY[op])
    check_model(model, backend, inputs=[specials(a, 1), specials(b, 2)])


@pytest.mark.parametrize("act", [ir.Activation.RELU, ir.Activation.RELU6], ids=lambda a: a.name)
@pytest.mark.parametrize("op", ["ADD", "MUL"])
def test_binary_fused_activation(backend: str, op: str, act: ir.Activation) -> None:
    options = type(BINARY[op])(fused_activation_function=act)
    model = single_op(op, [{"shape": (6, 20), "dtype": F32}] * 2, [{"shape": (6, 20), "dtype": F32}], options)
    check_model(model, backend, inputs=[specials((6, 20), 3), specials((6, 20), 4)])


@pytest.mark.parametrize("op", ["MAX_POOL_2D", "AVERAGE_POOL_2D"])
def test_pools(backend: str, op: str) -> None:
    opts = O.Pool2DOptions(padding=ir.Padding.VALID, stride_w=2, stride_h=2, filter_width=2, filter_height=2)
    model = single_op(op, [{"shape": (1, 6, 6, 4), "dtype": F32}], [{"shape": (1, 3, 3, 4), "dtype": F32}], opts)
    check_model(model, backend, inputs=[specials((1, 6, 6, 4), 5)])


@pytest.mark.parametrize("act", [ir.Activation.NONE, ir.Activation.RELU], ids=lambda a: a.name)
@pytest.mark.parametrize("op", ["CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED"])
def test_float_convolutions(backend: str, op: str, act: ir.Activation) -> None:
    """A few NaN / inf inputs among finite ones: NaN where a window reads one (or inf * 0), +-FLT_MAX
    where it sums infinities of one sign."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal((1, 5, 5, 4)).astype(F32)
    x.reshape(-1)[[3, 17, 42, 77]] = [np.nan, np.inf, -np.inf, np.inf]
    w_shape = {"CONV_2D": (3, 3, 3, 4), "DEPTHWISE_CONV_2D": (1, 3, 3, 4), "FULLY_CONNECTED": (6, 4)}[op]
    w = (0.5 + rng.random(w_shape)).astype(F32)  # positive, never zero: the signs of inf survive
    b = rng.standard_normal(w_shape[-1] if op == "DEPTHWISE_CONV_2D" else w_shape[0]).astype(F32)
    if op == "FULLY_CONNECTED":
        options, out = O.FullyConnectedOptions(fused_activation_function=act), (25, 6)
    elif op == "CONV_2D":
        options, out = O.Conv2DOptions(padding=ir.Padding.SAME, stride_w=1, stride_h=1,
                                       fused_activation_function=act), (1, 5, 5, 3)
    else:
        options, out = O.DepthwiseConv2DOptions(padding=ir.Padding.SAME, stride_w=1, stride_h=1,
                                                depth_multiplier=1, fused_activation_function=act), (1, 5, 5, 4)
    model = single_op(op, [{"shape": (1, 5, 5, 4), "dtype": F32}, {"data": w, "dtype": F32},
                           {"data": b, "dtype": F32}], [{"shape": out, "dtype": F32}], options)
    check_model(model, backend, inputs=[x])


def test_float_transpose_conv(backend: str) -> None:
    """TRANSPOSE_CONV with NaN / inf inputs (positive weights keep the infinities' signs)."""
    rng = np.random.default_rng(8)
    x = rng.standard_normal((1, 4, 4, 3)).astype(F32)
    x.reshape(-1)[[2, 20, 33]] = [np.nan, np.inf, -np.inf]
    w = (0.5 + rng.random((2, 3, 3, 3))).astype(F32)
    model = single_op("TRANSPOSE_CONV", [{"data": np.array([1, 8, 8, 2], np.int32), "dtype": np.int32},
                                         {"data": w, "dtype": F32}, {"shape": (1, 4, 4, 3), "dtype": F32}],
                      [{"shape": (1, 8, 8, 2), "dtype": F32}],
                      O.TransposeConvOptions(padding=ir.Padding.SAME, stride_w=2, stride_h=2))
    check_model(model, backend, inputs=[x])
