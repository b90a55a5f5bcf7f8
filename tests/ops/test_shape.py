"""RESHAPE, SQUEEZE, CONCATENATION, PAD against LiteRT's reference kernels."""
from __future__ import annotations

import numpy as np
import pytest

from teflon_py import ir
from teflon_py.tflite.builder import ModelBuilder
from teflon_py.tflite.options import ConcatenationOptions, ReshapeOptions, SqueezeOptions
from tests.harness import check_model, quantization, single_op

#: dtype -> quantization of its tensors (None for unquantized types).
DTYPES = {
    np.float32: None,
    np.int8: quantization(0.04, -7),
    np.uint8: quantization(0.04, 131),
    np.int16: quantization(0.001, 0),
    np.int32: None,
    np.int64: None,
}
dtype_ids = [d.__name__ for d in DTYPES]


# -- RESHAPE ---------------------------------------------------------------------------------

RESHAPES = [
    ((2, 3, 4), (4, 6)),
    ((2, 3, 4), (-1, 4)),
    ((1, 4, 4, 8), (1, -1)),
    ((6,), (1, 2, 1, 3)),
    ((1, 2, 3, 1, 2), (3, -1, 2, 1)),
    ((1, 1), ()),
]


@pytest.mark.parametrize("dtype", list(DTYPES), ids=dtype_ids)
@pytest.mark.parametrize("shapes", RESHAPES, ids=str)
@pytest.mark.parametrize("source", ["options", "shape_tensor", "both"])
def test_reshape(backend: str, source: str, shapes: tuple, dtype: type) -> None:
    in_shape, new_shape = shapes
    out_shape = np.empty(in_shape).reshape(new_shape).shape
    q = DTYPES[dtype]
    inputs = [{"shape": in_shape, "dtype": dtype, "quant": q}]
    options = None
    if source in ("shape_tensor", "both"):
        inputs.append({"shape": (len(new_shape),), "dtype": np.int32, "data": np.array(new_shape, np.int32)})
    if source in ("options", "both"):
        # "both": the shape operand wins; give the options a stale value to prove it
        options = ReshapeOptions(new_shape=tuple(new_shape) if source == "options" else (-1,))
    if source == "options" and new_shape == ():
        options = ReshapeOptions(new_shape=(0,))  # legacy spelling of a scalar
    model = single_op("RESHAPE", inputs, [{"shape": out_shape, "dtype": dtype, "quant": q}], options)
    check_model(model, backend)


def test_reshape_runtime_shape_operand(backend: str) -> None:
    """The new shape arrives as a graph input, known only at invoke."""
    model = single_op(
        "RESHAPE",
        [{"shape": (2, 3, 4), "dtype": np.float32}, {"shape": (3,), "dtype": np.int32}],
        [{"shape": (4, 3, 2), "dtype": np.float32}],
    )
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    check_model(model, backend, inputs=[x, np.array([4, -1, 2], np.int32)], refuses="must be a constant")


# -- SQUEEZE ---------------------------------------------------------------------------------

SQUEEZES = [
    ((1, 3, 1, 4), ()),
    ((1, 3, 1, 4), (0,)),
    ((1, 3, 1, 4), (-2,)),
    ((1, 3, 1, 4), (0, 2)),
    ((1, 3, 1, 4), (2, -4)),
    ((2, 1, 1, 5, 1), (-1, 1)),
    ((1, 1, 1), ()),
]


@pytest.mark.parametrize("dtype", list(DTYPES), ids=dtype_ids)
@pytest.mark.parametrize("case", SQUEEZES, ids=str)
def test_squeeze(backend: str, case: tuple, dtype: type) -> None:
    shape, dims = case
    axes = tuple(d % len(shape) for d in dims) if dims else None
    out_shape = np.squeeze(np.empty(shape), axis=axes).shape
    q = DTYPES[dtype]
    model = single_op("SQUEEZE", [{"shape": shape, "dtype": dtype, "quant": q}],
                      [{"shape": out_shape, "dtype": dtype, "quant": q}],
                      SqueezeOptions(squeeze_dims=tuple(dims) if dims else None))
    check_model(model, backend)


# -- CONCATENATION ---------------------------------------------------------------------------

CONCATS = [
    ([(2, 3), (2, 5)], 1),
    ([(2, 3), (4, 3), (1, 3)], 0),
    ([(1, 4, 4, 3), (1, 4, 4, 5)], 3),
    ([(1, 4, 4, 3), (1, 4, 4, 5), (1, 4, 4, 1)], -1),
    ([(1, 2, 4, 3), (1, 3, 4, 3)], -3),
    ([(2, 1, 3, 2, 2), (2, 2, 3, 2, 2)], 1),
    ([(5,), (1,), (3,)], 0),
]


def concat_model(shapes: list, axis: int, dtype: type, quants: list | None = None, out_quant: object = None,
                 act: ir.Activation = ir.Activation.NONE) -> bytes:
    quants = quants or [None] * len(shapes)
    out_shape = np.concatenate([np.empty(s) for s in shapes], axis=axis).shape
    return single_op(
        "CONCATENATION",
        [{"shape": s, "dtype": dtype, "quant": q} for s, q in zip(shapes, quants)],
        [{"shape": out_shape, "dtype": dtype, "quant": out_quant}],
        ConcatenationOptions(axis=axis, fused_activation_function=act),
    )


@pytest.mark.parametrize("dtype", list(DTYPES), ids=dtype_ids)
@pytest.mark.parametrize("case", CONCATS, ids=str)
def test_concatenation(backend: str, case: tuple, dtype: type) -> None:
    shapes, axis = case
    q = DTYPES[dtype]
    check_model(concat_model(shapes, axis, dtype, [q] * len(shapes), q), backend)


#: per-input (scale, zero point) and the output's, for uint8 inputs needing requantization
UINT8_RESCALES = [
    ([(0.04, 131), (0.02, 100), (0.1, 0)], (0.04, 131)),
    ([(0.013, 255), (0.05, 128)], (0.03, 90)),
    ([(0.5, 7), (0.0031, 200)], (0.007, 128)),
]


@pytest.mark.parametrize("rescale", UINT8_RESCALES, ids=str)
@pytest.mark.parametrize("case", CONCATS[1:4], ids=str)
def test_concatenation_uint8_rescale(backend: str, case: tuple, rescale: tuple) -> None:
    shapes, axis = case
    qs, qo = rescale
    quants = [quantization(*qs[k % len(qs)]) for k in range(len(shapes))]
    check_model(concat_model(shapes, axis, np.uint8, quants, quantization(*qo)), backend)


@pytest.mark.parametrize("seed", range(6))
def test_concatenation_uint8_rescale_exhaustive(backend: str, seed: int) -> None:
    """Every uint8 value through a random requantization (TFLite does it in float)."""
    rng = np.random.default_rng(seed)
    s_in, s_out = rng.uniform(0.002, 0.1, 2)
    z_in, z_out = (int(z) for z in rng.integers(0, 255, 2, endpoint=True))
    model = concat_model([(256,), (256,)], 0, np.uint8, [quantization(s_in, z_in), quantization(s_out, z_out)],
                         quantization(s_out, z_out))
    values = np.arange(256).astype(np.uint8)
    check_model(model, backend, inputs=[values, values[::-1].copy()])


# -- PAD -------------------------------------------------------------------------------------

PADS = [
    ((5,), [[2, 3]]),
    ((3, 4), [[1, 0], [2, 2]]),
    ((1, 4, 4, 3), [[0, 0], [1, 1], [2, 1], [0, 0]]),
    ((1, 3, 3, 2), [[1, 2], [0, 3], [0, 0], [1, 1]]),
    ((2, 1, 3, 2, 2), [[0, 1], [1, 1], [0, 0], [2, 0], [0, 1]]),
]


@pytest.mark.parametrize("paddings_dtype", [np.int32, np.int64], ids=lambda d: d.__name__)
@pytest.mark.parametrize("dtype", list(DTYPES), ids=dtype_ids)
@pytest.mark.parametrize("case", PADS, ids=str)
def test_pad(backend: str, case: tuple, dtype: type, paddings_dtype: type) -> None:
    shape, paddings = case
    q = DTYPES[dtype]
    out_shape = tuple(d + a + b for d, (a, b) in zip(shape, paddings))
    model = single_op(
        "PAD",
        [{"shape": shape, "dtype": dtype, "quant": q},
         {"shape": (len(shape), 2), "dtype": paddings_dtype, "data": paddings}],
        [{"shape": out_shape, "dtype": dtype, "quant": q}],
    )
    check_model(model, backend)


def test_pad_runtime_paddings(backend: str) -> None:
    """Paddings given as a graph input rather than a constant."""
    mb = ModelBuilder()
    g = mb.main
    x = g.add_input("x", (2, 3), np.int8, quantization=quantization(0.1, 17))
    p = g.add_input("paddings", (2, 2), np.int32)
    y = g.add_tensor("y", (4, 4), np.int8, quantization=quantization(0.1, 17))
    g.add_op("PAD", [x, p], [y])
    g.mark_outputs(y)
    inputs = [np.arange(6, dtype=np.int8).reshape(2, 3), np.array([[1, 1], [0, 1]], np.int32)]
    check_model(mb.build(), backend, inputs=inputs, refuses="must be a constant")


@pytest.mark.parametrize("op", ["RESHAPE", "SQUEEZE", "CONCATENATION"])
def test_bool(backend: str, op: str) -> None:
    """The data-movement ops carry any element type; bool is the odd one out."""
    if op == "CONCATENATION":
        model = concat_model([(1, 3, 2), (1, 3, 4)], -1, np.bool_)
    else:
        options = ReshapeOptions(new_shape=(3, -1)) if op == "RESHAPE" else SqueezeOptions()
        model = single_op(op, [{"shape": (1, 3, 2), "dtype": np.bool_}], [{"shape": (3, 2), "dtype": np.bool_}],
                          options)
    check_model(model, backend)
