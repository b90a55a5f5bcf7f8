"""RESIZE_BILINEAR and RESIZE_NEAREST_NEIGHBOR against LiteRT's reference kernels.

Upscales, downscales, non-integer and 1-pixel ratios, every align_corners / half_pixel_centers
mode, batches, in float32, uint8 (float blend, truncated), int8 and int16 (integer blend),
bit-exact for the integer types.
"""

from __future__ import annotations

import numpy as np
import pytest

from teflon_py.tflite.options import ResizeBilinearOptions, ResizeNearestNeighborOptions
from tests.harness import check_model, quantization, single_op

DTYPES = [np.float32, np.uint8, np.int8, np.int16]
#: (input NHWC, output (height, width))
SHAPES = [
    ((1, 4, 4, 3), (8, 8)),
    ((2, 5, 7, 2), (9, 4)),
    ((1, 6, 6, 4), (3, 3)),
    ((1, 3, 5, 1), (7, 13)),
    ((1, 1, 4, 2), (3, 1)),
    ((1, 9, 8, 3), (5, 11)),
]
#: (align_corners, half_pixel_centers)
MODES = [(False, False), (True, False), (False, True)]


def resize_model(op: str, shape: tuple, size: tuple, dtype: type, align: bool, half: bool) -> bytes:
    q = None if dtype == np.float32 else quantization(0.05, 0 if dtype == np.int16 else 3)
    options = (ResizeBilinearOptions if op == "RESIZE_BILINEAR" else ResizeNearestNeighborOptions)(
        align_corners=align, half_pixel_centers=half
    )
    return single_op(
        op,
        [{"shape": shape, "dtype": dtype, "quant": q}, {"data": np.array(size, np.int32), "dtype": np.int32}],
        [{"shape": (shape[0], *size, shape[3]), "dtype": dtype, "quant": q}],
        options,
    )


def _id(mode: tuple) -> str:
    return {
        (False, False): "plain",
        (True, False): "align_corners",
        (False, True): "half_pixel",
        (True, True): "both",
    }[mode]


@pytest.mark.parametrize("mode", MODES, ids=_id)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape, size", SHAPES, ids=lambda v: "x".join(map(str, v)))
def test_resize_bilinear(shape: tuple, size: tuple, dtype: type, mode: tuple, backend: str) -> None:
    check_model(resize_model("RESIZE_BILINEAR", shape, size, dtype, *mode), backend)


@pytest.mark.parametrize("mode", MODES + [(True, True)], ids=_id)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape, size", SHAPES, ids=lambda v: "x".join(map(str, v)))
def test_resize_nearest_neighbor(shape: tuple, size: tuple, dtype: type, mode: tuple, backend: str) -> None:
    check_model(resize_model("RESIZE_NEAREST_NEIGHBOR", shape, size, dtype, *mode), backend)


@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.int16], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("mode", MODES, ids=_id)
def test_resize_bilinear_rounding(dtype: type, mode: tuple, backend: str) -> None:
    """Many fractional weights over every input value: where truncation and rounding part."""
    rng = np.random.default_rng(7)
    info = np.iinfo(dtype)
    shape = (1, 8, 9, 16)
    x = rng.integers(info.min, info.max, shape, endpoint=True).astype(dtype)
    check_model(resize_model("RESIZE_BILINEAR", shape, (29, 31), dtype, *mode), backend, inputs=[x])
