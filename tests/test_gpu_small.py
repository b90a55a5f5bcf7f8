"""The GPU family's launch geometry for the small generic kernels (``gpu_small.regrid``) and the
depthwise grid: whole work-groups covering every element, enough work-items, CPU-only splits left
alone. (The kernels' results on these grids: the ``*_gpu_family`` op tests.)"""
from __future__ import annotations

import math

import numpy as np
import pytest

from teflon_py.opencl.kernels import depthwise_specs, gpu_small, movement_plan
from teflon_py.opencl.kernels import specs as kernels
from teflon_py.opencl.lowerings import elementwise, reduce
from teflon_py.opencl.params import KernelParams

LLVMPIPE = KernelParams(family="gpu", min_items=2048, small_wg=64, compute_units=8)


def covers(spec: kernels.KernelSpec) -> None:
    """Global sizes are whole work-groups of at most the device's size."""
    assert len(spec.local_size) == len(spec.global_size)
    assert all(g % lo == 0 for g, lo in zip(spec.global_size, spec.local_size))
    assert math.prod(spec.local_size) <= LLVMPIPE.small_wg


@pytest.mark.parametrize("shapes", [((1, 48, 48, 16),) * 3, ((2000, 3), (2000, 1), (2000, 3)),
                                    ((64, 100), (100,), (64, 100)), ((1,), (1,), (1,))], ids=str)
def test_broadcast_grid(shapes: tuple) -> None:
    spec = gpu_small.regrid(elementwise.binary_spec("add", *shapes, (0.0, 6.0)), LLVMPIPE)
    covers(spec)
    s = {k: int(v) for k, v in spec.scalars.items()}
    gx, gy = spec.global_size
    assert gx * s["chunk"] >= s["inner"] and gy * s["rpi"] >= s["rows"]  # every element has an item
    assert s["chunk"] <= gpu_small.SMALL_CHUNK or s["chunk"] == s["inner"]
    total = s["rows"] * s["inner"]
    assert -(-s["inner"] // s["chunk"]) * -(-s["rows"] // s["rpi"]) >= min(total, LLVMPIPE.min_items)


@pytest.mark.parametrize("n", [1, 100, 75264, 10**6])
def test_flat_grid(n: int) -> None:
    spec = gpu_small.regrid(elementwise.unary_spec("clip", n, (0.0, 6.0)), LLVMPIPE)
    covers(spec)
    chunk = int(spec.scalars["chunk"])
    assert spec.global_size[0] * chunk >= n and 1 <= chunk <= gpu_small.SMALL_CHUNK
    assert spec.local_size[0] > 1 or n == 1


def test_reduce_and_copy_grids() -> None:
    spec = gpu_small.regrid(reduce.reduce_spec((1, 3, 3, 1280), [1, 2], "mean"), LLVMPIPE)
    covers(spec)
    assert int(spec.scalars["opi"]) == 1 and spec.global_size[0] >= 1280 and spec.local_size[0] == 64
    dims = [(1, 0, 0), (1, 0, 0), (1, 0, 0), (50, 40, 120), (40, 1, 1)]
    spec = gpu_small.regrid(movement_plan.copy_spec("u32", dims, 0, 0), LLVMPIPE)
    covers(spec)
    assert spec.global_size[0] * int(spec.scalars["chunk"]) >= 40 and spec.global_size[1] >= 50


def test_other_splits_untouched() -> None:
    """A spec outside the small kernels' splits, or one whose grid was already changed, stays."""
    dw = depthwise_specs.depthwise_spec((1, 8, 8, 16), np.ones((1, 3, 3, 16), np.float32), None)
    assert gpu_small.regrid(dw, LLVMPIPE) is dw
    once = gpu_small.regrid(elementwise.unary_spec("clip", 75264, (0.0, 6.0)), LLVMPIPE)
    assert gpu_small.regrid(once, LLVMPIPE) is once


@pytest.mark.parametrize("stride", [1, 2])
@pytest.mark.parametrize("shape", [(2, 13, 11, 40), (1, 112, 112, 32), (1, 7, 7, 64)], ids=str)
def test_depthwise_grid(stride: int, shape: tuple) -> None:
    """Whole work-groups over every (channel, patch); the biggest patch that leaves enough
    work-items (a quarter of min_items), smaller ones for small layers."""
    nb, ih, iw, c = shape
    spec = gpu_small.depthwise_gpu_spec(shape, np.ones((1, 3, 3, c), np.float32), None, stride=(stride, stride),
                                        params=LLVMPIPE)
    covers(spec)
    oh, ow = -(-ih // stride), -(-iw // stride)
    px, rh = (int(t) for t in spec.function.split("_v1p")[1].split("r"))
    tiles = gpu_small.DEPTHWISE_GPU_TILES[stride]
    items = {t: c * nb * -(-oh // t[1]) * -(-ow // t[0]) for t in tiles}
    k = tiles.index((px, rh))
    assert all(items[t] < LLVMPIPE.min_items // 4 for t in tiles[:k])
    assert items[(px, rh)] >= LLVMPIPE.min_items // 4 or k == len(tiles) - 1
    assert (px, rh) == tiles[0] or ih < 112
    assert spec.global_size[0] >= c and spec.global_size[1] >= -(-ow // px)
    assert spec.global_size[2] == nb * -(-oh // rh)
