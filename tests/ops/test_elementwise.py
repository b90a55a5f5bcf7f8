"""ADD, SUB, MUL against LiteRT's reference kernels: broadcasting, activations, dtypes, rescaling."""
from __future__ import annotations

import numpy as np
import pytest

from teflon_py import ir
from teflon_py.tflite.options import AddOptions, MulOptions, SubOptions
from tests.harness import check_model, extreme_values, quantization, single_op

OPTIONS = {"ADD": AddOptions, "SUB": SubOptions, "MUL": MulOptions}
OPS = list(OPTIONS)
ACTIVATIONS = [ir.Activation.NONE, ir.Activation.RELU, ir.Activation.RELU6, ir.Activation.RELU_N1_TO_1]

#: (input 1 shape, input 2 shape): same shape, channel vector, numpy-style and scalar-like broadcasts.
SHAPES = [
    ((2, 3, 4), (2, 3, 4)),
    ((1, 4, 4, 8), (8,)),
    ((2, 1, 3), (1, 5, 3)),
    ((3, 4), (1,)),
    ((1,), (2, 3)),
    ((1, 2, 1, 3, 1), (2, 1, 4, 1, 5)),
]

#: (scale 1, zp 1, scale 2, zp 2, output scale, output zp) with zero points given for int8; uint8
#: adds 128. Equal scales, different input scales, and an output coarser/finer than the inputs.
QPARAMS = {
    "same": (0.05, 0, 0.05, 0, 0.05, 0),
    "mixed": (0.02, -10, 0.07, 25, 0.06, -5),
    "fine_out": (0.11, 40, 0.013, -100, 0.009, 3),
}


def _qp(dtype: type, op: str, name: str) -> tuple[ir.Quantization, ir.Quantization, ir.Quantization]:
    s1, z1, s2, z2, so, zo = QPARAMS[name]
    shift = 128 if dtype == np.uint8 else 0
    if op == "MUL":  # the output grid has to cover products of the inputs' ranges
        so = s1 * s2 * 128 * so / 0.05
    return quantization(s1, z1 + shift), quantization(s2, z2 + shift), quantization(so, zo + shift)


def binary_model(op: str, shape1: tuple, shape2: tuple, dtype: type, act: ir.Activation = ir.Activation.NONE,
                 quant: tuple | None = None, **options: object) -> bytes:
    q1, q2, qo = quant or (None, None, None)
    out_shape = np.broadcast_shapes(shape1, shape2)
    return single_op(
        op,
        [{"shape": shape1, "dtype": dtype, "quant": q1}, {"shape": shape2, "dtype": dtype, "quant": q2}],
        [{"shape": out_shape, "dtype": dtype, "quant": qo}],
        OPTIONS[op](fused_activation_function=act, **options),
    )


@pytest.mark.parametrize("act", ACTIVATIONS, ids=lambda a: a.name)
@pytest.mark.parametrize("shapes", SHAPES, ids=str)
@pytest.mark.parametrize("op", OPS)
def test_float(backend: str, op: str, shapes: tuple, act: ir.Activation) -> None:
    check_model(binary_model(op, *shapes, np.float32, act), backend)


#: larger broadcasts, so the GPU grid takes several elements (or whole short rows) per work-item
GPU_SHAPES = [*SHAPES, ((64, 100), (100,)), ((2000, 3), (2000, 1)), ((3, 1, 700), (3, 5, 700))]


@pytest.mark.parametrize("shapes", GPU_SHAPES, ids=str)
@pytest.mark.parametrize("op", OPS)
def test_float_gpu_family(gpu_family: str, op: str, shapes: tuple) -> None:
    """The broadcasting kernels on the GPU family's grid (real work-groups, a few elements per
    work-item, the grid padded past the tensor), whatever the device's default."""
    act = ACTIVATIONS[(len(shapes[0]) + len(shapes[1])) % 4]
    check_model(binary_model(op, *shapes, np.float32, act), gpu_family)


@pytest.mark.parametrize("shapes", [SHAPES[1], SHAPES[5], GPU_SHAPES[-2]], ids=str)
@pytest.mark.parametrize("dtype", [np.int8, np.uint8], ids=lambda d: d.__name__)
def test_quantized_gpu_family(gpu_family: str, dtype: type, shapes: tuple) -> None:
    """The 8-bit broadcasting kernel on the GPU family's grid."""
    check_model(binary_model("ADD", *shapes, dtype, ir.Activation.RELU6, _qp(dtype, "ADD", "mixed")), gpu_family)


@pytest.mark.parametrize("act", [ir.Activation.NONE, ir.Activation.RELU6], ids=lambda a: a.name)
@pytest.mark.parametrize("qp", list(QPARAMS))
@pytest.mark.parametrize("shapes", SHAPES, ids=str)
@pytest.mark.parametrize("dtype", [np.int8, np.uint8], ids=lambda d: d.__name__)
@pytest.mark.parametrize("op", OPS)
def test_quantized(backend: str, op: str, dtype: type, shapes: tuple, qp: str, act: ir.Activation) -> None:
    check_model(binary_model(op, *shapes, dtype, act, _qp(dtype, op, qp)), backend)


@pytest.mark.parametrize("shapes", [((3, 50), (3, 50)), ((1, 7, 9, 40), (1, 1, 1, 40)), ((2, 33), (1,))], ids=str)
@pytest.mark.parametrize("dtype", [np.int8, np.uint8], ids=lambda d: d.__name__)
def test_quantized_mul_long_rows(backend: str, dtype: type, shapes: tuple) -> None:
    """MUL over rows of 16+ elements: the device's 16-lane path (qmul), both operands read
    contiguously, one broadcast per row, or a scalar."""
    check_model(binary_model("MUL", *shapes, dtype, ir.Activation.RELU6, _qp(dtype, "MUL", "mixed")), backend)


@pytest.mark.parametrize("act", [ir.Activation.RELU, ir.Activation.RELU_N1_TO_1], ids=lambda a: a.name)
@pytest.mark.parametrize("dtype", [np.int8, np.uint8], ids=lambda d: d.__name__)
@pytest.mark.parametrize("op", OPS)
def test_quantized_activations(backend: str, op: str, dtype: type, act: ir.Activation) -> None:
    check_model(binary_model(op, (2, 5, 7), (7,), dtype, act, _qp(dtype, op, "mixed")), backend)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("dtype", [np.int8, np.uint8], ids=lambda d: d.__name__)
@pytest.mark.parametrize("op", OPS)
def test_quantized_exhaustive(backend: str, op: str, dtype: type, seed: int) -> None:
    """Every pair of input values (a 256 x 256 broadcast) under random scales and zero points."""
    rng = np.random.default_rng(seed)
    info = np.iinfo(dtype)
    s1, s2 = rng.uniform(0.002, 0.2, 2)
    so = rng.uniform(0.5, 3.0) * (s1 * s2 * 128 if op == "MUL" else max(s1, s2))
    z1, z2, zo = (int(z) for z in rng.integers(info.min, info.max, 3, endpoint=True))
    quant = quantization(s1, z1), quantization(s2, z2), quantization(so, zo)
    values = np.arange(info.min, info.max + 1).astype(dtype)
    check_model(binary_model(op, (256, 1), (1, 256), dtype, quant=quant), backend,
                inputs=[values.reshape(256, 1), values.reshape(1, 256)])


@pytest.mark.parametrize("act", [ir.Activation.NONE, ir.Activation.RELU, ir.Activation.RELU6], ids=lambda a: a.name)
@pytest.mark.parametrize("shapes", [SHAPES[0], SHAPES[1], SHAPES[2]], ids=str)
@pytest.mark.parametrize("dtype", [np.int32, np.int64], ids=lambda d: d.__name__)
@pytest.mark.parametrize("op", OPS)
def test_integer(backend: str, op: str, dtype: type, shapes: tuple, act: ir.Activation) -> None:
    rng = np.random.default_rng(0)
    inputs = [rng.integers(-1000, 1000, s).astype(dtype) for s in shapes]
    check_model(binary_model(op, *shapes, dtype, act), backend, inputs=inputs)


@pytest.mark.parametrize("act", [ir.Activation.NONE, ir.Activation.RELU, ir.Activation.RELU_N1_TO_1],
                         ids=lambda a: a.name)
@pytest.mark.parametrize("op", OPS)
def test_int32_edges(backend: str, op: str, act: ir.Activation) -> None:
    """Every pair of int32 edge values (a 7 x 7 broadcast): sums, differences and products past
    int32 wrap as C's int32 arithmetic does, then the activation clamps."""
    edges = extreme_values(np.dtype(np.int32)).astype(np.int32)
    x, y = edges.reshape(-1, 1), edges
    wide = {"ADD": np.add, "SUB": np.subtract, "MUL": np.multiply}[op](x.astype(np.int64), y.astype(np.int64))
    assert np.any((wide < -(2**31)) | (wide >= 2**31)), "the case must overflow"
    check_model(binary_model(op, x.shape, y.shape, np.int32, act), backend, inputs=[x, y])


@pytest.mark.parametrize("shapes", [SHAPES[1], SHAPES[3], SHAPES[4], SHAPES[5]], ids=str)
@pytest.mark.parametrize("op", OPS)
def test_int32_broadcasts(backend: str, op: str, shapes: tuple) -> None:
    """int32 over the broadcasts test_integer leaves out (scalar-like, rank 5), values mostly at
    the type's edges, RELU6 (the fallback's integer bounds)."""
    check_model(binary_model(op, *shapes, np.int32, ir.Activation.RELU6), backend, extremes=True, seed=3)


@pytest.mark.parametrize("shapes", [SHAPES[0], SHAPES[2]], ids=str)
@pytest.mark.parametrize("op", OPS)
def test_int16_general_scales(backend: str, op: str, shapes: tuple) -> None:
    """int16 with arbitrary scales (zero points 0): the rescaling path with a 15-bit left shift."""
    quant = quantization(0.0007), quantization(0.0003), quantization(0.0011 if op != "MUL" else 0.006)
    options = {} if op == "MUL" else {"pot_scale_int16": False}
    check_model(binary_model(op, *shapes, np.int16, ir.Activation.NONE, quant, **options), backend)


#: power-of-two scales, zero points 0: (input 1 log2 scale, input 2 log2 scale, output log2 scale)
POT_SCALES = [(-12, -12, -12), (-10, -13, -10), (-15, -11, -11)]


@pytest.mark.parametrize("act", [ir.Activation.NONE, ir.Activation.RELU], ids=lambda a: a.name)
@pytest.mark.parametrize("log2_scales", POT_SCALES, ids=str)
@pytest.mark.parametrize("op", ["ADD", "SUB"])
def test_int16_pot_scales(backend: str, op: str, log2_scales: tuple, act: ir.Activation) -> None:
    """int16 with power-of-two scales: TFLite's fixed-point (LSTM) path, saturating."""
    quant = tuple(quantization(2.0 ** e) for e in log2_scales)
    check_model(binary_model(op, (4, 33), (4, 33), np.int16, act, quant), backend)


def test_mul_multiplier_in_float32(backend: str) -> None:
    """Scales whose s1 * s2 / s_out rounds differently in float32 and float64: TFLite uses float32."""
    quant = quantization(0.1075), quantization(0.1479), quantization(1.7087)
    values = np.arange(-128, 128).astype(np.int8)
    check_model(binary_model("MUL", (256, 1), (1, 256), np.int8, quant=quant), backend,
                inputs=[values.reshape(256, 1), values.reshape(1, 256)])


#: (input 1 scale, zp, output scale, zp) with input 2 at scale 0.5 + 2^-21, zp -121 + shift: input
#: 2's multiplier has exactly 10 trailing zero bits, so odd inputs hit exact rounding halves, where
#: "scale then subtract" (LiteRT 2.x) and "negate the multiplier" (older sub.cc) differ.
SUB_HALVES = [(1.0, 0, 0.03226117044687271, 109), (4.0, -43, 0.03448287025094032, 17)]


@pytest.mark.parametrize("case", SUB_HALVES, ids=str)
@pytest.mark.parametrize("dtype", [np.int8, np.uint8], ids=lambda d: d.__name__)
def test_sub_rounding_halves(backend: str, dtype: type, case: tuple) -> None:
    s1, z1, so, zo = case
    shift = 128 if dtype == np.uint8 else 0
    quant = quantization(s1, z1 + shift), quantization(0.5 + 2**-21, -121 + shift), quantization(so, zo + shift)
    values = np.arange(256).astype(np.int64) + np.iinfo(dtype).min
    values = values.astype(dtype)
    check_model(binary_model("SUB", (256, 1), (1, 256), dtype, quant=quant), backend,
                inputs=[values.reshape(256, 1), values.reshape(1, 256)])
