"""RELU and RELU6 against LiteRT's reference kernels: float, and quantized with requantization."""
from __future__ import annotations

import numpy as np
import pytest

from tests.harness import check_model, quantization, single_op

OPS = ["RELU", "RELU6"]
SHAPES = [(1,), (7, 5), (1, 4, 4, 8), (2, 3, 1, 2, 3)]

#: (input scale, input zp, output scale, output zp) for int8; uint8 adds 128 to both zero points.
QPARAMS = {
    "same": (0.05, 3, 0.05, 3),
    "zp_shift": (0.05, -20, 0.05, -128),
    "finer_out": (0.08, 10, 0.03, -100),
    "coarser_out": (0.02, -60, 0.047, -128),
    "wide": (0.3, 0, 0.011, -128),
}


def unary_model(op: str, shape: tuple, dtype: type, qin: object = None, qout: object = None) -> bytes:
    return single_op(op, [{"shape": shape, "dtype": dtype, "quant": qin}],
                     [{"shape": shape, "dtype": dtype, "quant": qout}])


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("op", OPS)
def test_float(backend: str, op: str, shape: tuple) -> None:
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(shape) * 5).astype(np.float32)  # reaches past 6 for RELU6
    check_model(unary_model(op, shape, np.float32), backend, inputs=[x])


@pytest.mark.parametrize("shape", [*SHAPES, (70, 150)], ids=str)
@pytest.mark.parametrize("op", OPS)
def test_float_gpu_family(gpu_family: str, op: str, shape: tuple) -> None:
    """The flat kernels on the GPU family's grid (several elements per work-item when large)."""
    rng = np.random.default_rng(1)
    x = (rng.standard_normal(shape) * 5).astype(np.float32)
    check_model(unary_model(op, shape, np.float32), gpu_family, inputs=[x])


@pytest.mark.parametrize("qp", list(QPARAMS))
@pytest.mark.parametrize("shape", SHAPES[1:3], ids=str)
@pytest.mark.parametrize("dtype", [np.int8, np.uint8], ids=lambda d: d.__name__)
@pytest.mark.parametrize("op", OPS)
def test_quantized(backend: str, op: str, dtype: type, shape: tuple, qp: str) -> None:
    s_in, z_in, s_out, z_out = QPARAMS[qp]
    shift = 128 if dtype == np.uint8 else 0
    model = unary_model(op, shape, dtype, quantization(s_in, z_in + shift), quantization(s_out, z_out + shift))
    check_model(model, backend)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("dtype", [np.int8, np.uint8], ids=lambda d: d.__name__)
@pytest.mark.parametrize("op", OPS)
def test_quantized_exhaustive(backend: str, op: str, dtype: type, seed: int) -> None:
    """Every input value under random input/output scales and zero points."""
    rng = np.random.default_rng(seed)
    info = np.iinfo(dtype)
    s_in, s_out = rng.uniform(0.005, 0.1, 2)
    z_in, z_out = (int(z) for z in rng.integers(info.min, info.max, 2, endpoint=True))
    model = unary_model(op, (256,), dtype, quantization(s_in, z_in), quantization(s_out, z_out))
    check_model(model, backend, inputs=[np.arange(info.min, info.max + 1).astype(dtype)])


@pytest.mark.parametrize("scales", [(0.001, 0.001), (0.0004, 0.0009)], ids=str)
@pytest.mark.parametrize("op", OPS)
def test_int16(backend: str, op: str, scales: tuple) -> None:
    model = unary_model(op, (3, 50), np.int16, quantization(scales[0]), quantization(scales[1]))
    rng = np.random.default_rng(1)
    check_model(model, backend, inputs=[rng.integers(-32768, 32767, (3, 50), endpoint=True).astype(np.int16)])
