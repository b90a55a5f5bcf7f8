"""MEAN against LiteRT's reference kernels: float32, int8, uint8; axes, negative axes, keep_dims."""
from __future__ import annotations

import numpy as np
import pytest

from teflon_py.tflite import options
from tests.harness import check_model, quantization, single_op

#: (input shape, axes)
CASES = [
    ((7,), [0]),
    ((4, 6), [1]),
    ((4, 6), [-2]),
    ((4, 6), [0, 1]),
    ((2, 5, 6), [1]),
    ((2, 5, 6), [0, 2]),
    ((2, 5, 6), [-1, 0]),
    ((2, 6, 5, 8), [1, 2]),
    ((2, 6, 5, 8), [2, 1]),
    ((1, 7, 7, 16), [-3, -2]),
    ((2, 3, 4, 5), [3]),
    ((2, 3, 4, 5), [0, 3]),
    ((2, 3, 4, 5), [1, 2, 3]),
    ((2, 3, 4, 5), [0, 1, 2, 3]),
    ((2, 3, 4, 5), [2, 2]),
    ((1, 1, 33, 40), [2]),
    ((2, 4, 4, 20), [1, 2]),  # a mean over H and W with >= 16 channels: OpenCL's vectorised path
]
#: dtype -> [(input quantization, output quantization)]: same, finer and coarser output grids
QUANTS = {
    np.int8: [(quantization(0.05, -3), quantization(0.05, -3)),
              (quantization(0.05, -3), quantization(0.011, 7)),
              (quantization(0.02, 10), quantization(0.07, -20))],
    np.uint8: [(quantization(0.04, 131), quantization(0.04, 131)),
               (quantization(0.04, 131), quantization(0.009, 120)),
               (quantization(0.03, 100), quantization(0.1, 140))],
}


def reduced(shape: tuple, axes: list, keep_dims: bool) -> tuple:
    norm = {a % len(shape) for a in axes}
    return tuple(1 if i in norm else d for i, d in enumerate(shape) if keep_dims or i not in norm)


def mean_model(shape: tuple, axes: list, keep_dims: bool, dtype: type, qin=None, qout=None) -> bytes:
    return single_op("MEAN", [{"shape": shape, "dtype": dtype, "quant": qin}, {"data": np.array(axes, np.int32)}],
                     [{"shape": reduced(shape, axes, keep_dims), "dtype": dtype, "quant": qout}],
                     options.ReducerOptions(keep_dims=keep_dims))


CASE_IDS = [f"{'x'.join(map(str, s))}-ax{'_'.join(map(str, a))}" for s, a in CASES]


@pytest.mark.parametrize("keep_dims", [True, False], ids=["keep", "drop"])
@pytest.mark.parametrize("shape,axes", CASES, ids=CASE_IDS)
def test_mean_float(backend: str, shape: tuple, axes: list, keep_dims: bool) -> None:
    check_model(mean_model(shape, axes, keep_dims, np.float32), backend, seed=len(shape) + len(axes))


@pytest.mark.parametrize("shape,axes", [*CASES, ((1, 3, 3, 1280), [1, 2])], ids=[*CASE_IDS, "mobilenet"])
def test_mean_float_gpu_family(gpu_family: str, shape: tuple, axes: list) -> None:
    """MEAN on the GPU family: one output per work-item, real work-groups."""
    check_model(mean_model(shape, axes, True, np.float32), gpu_family, seed=len(shape) + len(axes))


@pytest.mark.parametrize("quants", [0, 1, 2], ids=["same", "finer", "coarser"])
@pytest.mark.parametrize("dtype", [np.int8, np.uint8], ids=["i8", "u8"])
@pytest.mark.parametrize("keep_dims", [True, False], ids=["keep", "drop"])
@pytest.mark.parametrize("shape,axes", CASES, ids=CASE_IDS)
def test_mean_quantized(backend: str, shape: tuple, axes: list, keep_dims: bool, dtype: type, quants: int) -> None:
    qin, qout = QUANTS[dtype][quants]
    check_model(mean_model(shape, axes, keep_dims, dtype, qin, qout), backend, seed=quants)
