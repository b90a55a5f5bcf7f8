"""QUANTIZE and DEQUANTIZE against LiteRT's reference kernels: rounding, saturation, requantization."""
from __future__ import annotations

import numpy as np
import pytest

from tests.harness import check_model, quantization, single_op

SHAPES = [(7,), (2, 3, 5), (1, 4, 4, 8)]


def unary_model(op: str, shape: tuple, src: type, dst: type, qin: object = None, qout: object = None,
                data: np.ndarray | None = None) -> bytes:
    return single_op(op, [{"shape": shape, "dtype": src, "quant": qin, "data": data}],
                     [{"shape": shape, "dtype": dst, "quant": qout}])


# -- QUANTIZE from float ---------------------------------------------------------------------

#: output dtype, scale, zero point
FLOAT_TARGETS = [
    (np.int8, 0.05, -3),
    (np.int8, 0.125, 0),  # power-of-two scale: half steps divide exactly, so rounding ties happen
    (np.uint8, 0.03, 128),
    (np.uint8, 0.25, 7),
    (np.int16, 0.0002, 0),
]


@pytest.mark.parametrize("target", FLOAT_TARGETS, ids=str)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_quantize_float(backend: str, shape: tuple, target: tuple) -> None:
    dtype, scale, zp = target
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(shape) * 3).astype(np.float32)  # some values saturate
    x.reshape(-1)[::3] = (np.round(x.reshape(-1)[::3] / scale) + 0.5) * scale  # ties on the grid
    check_model(unary_model("QUANTIZE", shape, np.float32, dtype, qout=quantization(scale, zp)), backend, inputs=[x], refuses="int16 tensors")


def test_quantize_float_device_requirements() -> None:
    """QUANTIZE from float32 needs neither fp64 nor a correctly rounded float32 division (the
    kernel corrects the quotient near half-integers itself); a device that flushes subnormals only matters for scales below 2^-100 (a flushed input then could round
    to a nonzero code)."""
    from teflon_py.opencl.caps import Caps
    from teflon_py.opencl.registry import check_op
    from teflon_py.tflite.reader import read_model

    def verdict(caps: Caps, scale: float = 0.05) -> str:
        graph = read_model(unary_model("QUANTIZE", (2, 3), np.float32, np.int8, qout=quantization(scale, 1))).main
        return check_op(graph, graph.operations[0], caps).reason or ""

    assert verdict(Caps(fp64=False)) == ""
    assert verdict(Caps(fp64=False, fp32_denorms=False)) == ""
    assert verdict(Caps(fp32_correct_divide=False)) == ""
    assert "flushes float32 subnormals" in verdict(Caps(fp32_denorms=False), scale=2.0**-110)
    assert verdict(Caps(), scale=2.0**-110) == ""


@pytest.mark.parametrize("dim", [0, 3])
def test_quantize_float_per_channel(backend: str, dim: int) -> None:
    shape = (3, 2, 2, 4)
    scales = np.linspace(0.01, 0.08, shape[dim])
    zps = np.arange(shape[dim]) * 3 - 4
    model = unary_model("QUANTIZE", shape, np.float32, np.int8, qout=quantization(scales, zps, dim))
    check_model(model, backend)


# -- QUANTIZE between integer types (requantize) ---------------------------------------------

#: (input dtype, input scale, input zp) -> (output dtype, output scale, output zp)
REQUANTIZE = [
    ((np.int8, 0.05, 3), (np.int8, 0.02, -9)),
    ((np.int8, 0.05, 3), (np.int8, 0.11, 100)),
    ((np.int8, 0.05, -128), (np.uint8, 0.05, 0)),  # pure zero-point shift (TFLite's XOR 0x80 path)
    ((np.int8, 0.05, 3), (np.uint8, 0.07, 131)),
    ((np.uint8, 0.05, 128), (np.int8, 0.05, 0)),
    ((np.uint8, 0.04, 10), (np.int8, 0.013, -30)),
    ((np.uint8, 0.04, 10), (np.uint8, 0.09, 200)),
    ((np.int8, 0.05, 3), (np.int16, 0.0003, 0)),
    ((np.int16, 0.0003, 0), (np.int16, 0.0007, 0)),
    ((np.int16, 0.0003, 0), (np.int8, 0.04, -5)),
    ((np.int16, 0.0003, 0), (np.int32, 0.00001, 0)),
]


def _requantize_id(case: tuple) -> str:
    (src, *qin), (dst, *qout) = case
    return f"{src.__name__}{tuple(qin)}->{dst.__name__}{tuple(qout)}"


@pytest.mark.parametrize("case", REQUANTIZE, ids=_requantize_id)
@pytest.mark.parametrize("shape", SHAPES[1:], ids=str)
def test_requantize(backend: str, shape: tuple, case: tuple) -> None:
    (src, s_in, z_in), (dst, s_out, z_out) = case
    model = unary_model("QUANTIZE", shape, src, dst, quantization(s_in, z_in), quantization(s_out, z_out))
    check_model(model, backend, refuses="int16 tensors")


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("types", [(np.int8, np.int8), (np.int8, np.uint8), (np.uint8, np.int8), (np.uint8, np.uint8)],
                         ids=lambda t: f"{t[0].__name__}->{t[1].__name__}")
def test_requantize_exhaustive(backend: str, types: tuple, seed: int) -> None:
    """Every 8-bit input value under random scales and zero points."""
    src, dst = types
    rng = np.random.default_rng(seed)
    s_in, s_out = rng.uniform(0.003, 0.1, 2)
    z_in = int(rng.integers(*np.iinfo(src).min + np.array([0, 256])))
    z_out = int(rng.integers(*np.iinfo(dst).min + np.array([0, 256])))
    model = unary_model("QUANTIZE", (256,), src, dst, quantization(s_in, z_in), quantization(s_out, z_out))
    check_model(model, backend, inputs=[np.arange(np.iinfo(src).min, np.iinfo(src).max + 1).astype(src)])


# -- DEQUANTIZE ------------------------------------------------------------------------------

@pytest.mark.parametrize("source", [(np.int8, 0.05, -3), (np.uint8, 0.031, 131), (np.int16, 0.0002, 0)], ids=str)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_dequantize(backend: str, shape: tuple, source: tuple) -> None:
    dtype, scale, zp = source
    check_model(unary_model("DEQUANTIZE", shape, dtype, np.float32, quantization(scale, zp)), backend)


@pytest.mark.parametrize("dim", [0, 1, 3])
def test_dequantize_per_channel(backend: str, dim: int) -> None:
    """Per-channel int8 weights (symmetric, as the converter writes them), as a constant."""
    shape = (4, 3, 3, 5)
    rng = np.random.default_rng(dim)
    scales = rng.uniform(0.001, 0.05, shape[dim])
    data = rng.integers(-127, 127, shape, endpoint=True).astype(np.int8)
    model = unary_model("DEQUANTIZE", shape, np.int8, np.float32, quantization(scales, 0, dim), data=data)
    check_model(model, backend)


@pytest.mark.parametrize("constant", [True, False], ids=["constant", "input"])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_dequantize_float16(backend: str, shape: tuple, constant: bool) -> None:
    rng = np.random.default_rng(3)
    x = (rng.standard_normal(shape) * 10).astype(np.float16)
    model = unary_model("DEQUANTIZE", shape, np.float16, np.float32, data=x if constant else None)
    check_model(model, backend, inputs=None if constant else [x], refuses="only constant inputs folded at load time")
