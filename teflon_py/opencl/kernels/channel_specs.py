"""Host side of ``channels.cl``: per-channel maps of a flat NHWC tensor (a 1x1 depthwise
convolution, a PRELU with constant slopes, or the first followed by the second or by a folded
HARD_SWISH or swish), with the
per-channel values tiled to ``lcm(C, 16)`` so every 16-value vector takes whole vectors."""
from __future__ import annotations

import math

import numpy as np

from teflon_py.opencl.kernels import specs as kernels
from teflon_py.opencl.kernels.specs import KernelSpec

FILES = ("common.cl", "channels.cl")


def tiled(values: np.ndarray, channels: int) -> np.ndarray:
    """``values`` (one per channel) repeated to ``lcm(channels, 16)`` float32s."""
    period = math.lcm(channels, 16)
    return np.ascontiguousarray(np.tile(np.asarray(values, np.float32).reshape(channels), period // channels))


def channel_map_spec(n: int, channels: int, *, weights: np.ndarray | None = None, bias: np.ndarray | None = None,
                     slopes: np.ndarray | None = None, clamp: kernels.Clamp = kernels.UNBOUNDED,
                     prelu_clamp: kernels.Clamp = kernels.UNBOUNDED, post_act: str | None = None) -> KernelSpec:
    """``channel_map`` over ``n`` floats of ``channels`` channels: ``x * weights + bias`` clamped
    to ``clamp`` (when ``weights`` is given; bias defaults to 0), then the PRELU ``slopes``
    clamped to ``prelu_clamp`` (when given), or instead the folded ``post_act`` (a HARD_SWISH or
    swish, ``specs.post_code``)."""
    if weights is None and slopes is None and post_act is None:
        raise ValueError("channel_map needs weights, slopes or an activation")
    zeros = np.zeros(channels, np.float32)
    chunk = max(16, kernels.row_blocks(1, n)[2] // 16 * 16)  # whole vectors a work-item
    pieces = -(-n // chunk)
    args = kernels.scalars(n=n, chunk=chunk, L=math.lcm(channels, 16), affine=int(weights is not None),
                           post=kernels.post_code(slopes, post_act), lo=float(clamp[0]), hi=float(clamp[1]),
                           plo=float(prelu_clamp[0]), phi=float(prelu_clamp[1]))
    constants = {"w": tiled(zeros if weights is None else weights, channels),
                 "b": tiled(zeros if bias is None else bias, channels),
                 "a": tiled(zeros if slopes is None else slopes, channels)}
    return KernelSpec(files=FILES, name="channel_map", defines={}, global_size=(pieces,), local_size=(1,),
                      args=("input", "w", "b", "a", "output", *args), constants=constants, scalars=args,
                      flops=2 * n if weights is not None else 0)
