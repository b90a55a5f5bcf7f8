"""NNAPI_REQUANTIZE (``teflon_py.ops.requantize``): Android's NNAPI reference ``requantize``."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from teflon_py import quant
from teflon_py.fallback.registry import Node, register


def nnapi_requantize(q: np.ndarray, s_in: float, zp_in: int, s_out: float, zp_out: int,
                     dtype: np.dtype) -> np.ndarray:
    """``(q - zp_in) * s_in`` in float32, then ``/ s_out + zp_out`` in double, saturated to
    ``dtype``'s range and rounded half away from zero (the saturation comes first there, which
    gives the same result)."""
    real = (np.asarray(q, np.int64) - zp_in).astype(np.float32) * np.float32(s_in)
    ret = real.astype(np.float64) / np.float64(np.float32(s_out)) + zp_out
    lo, hi = quant.QRANGE[np.dtype(dtype)]
    return np.clip(quant.round_half_away(np.clip(ret, lo, hi)), lo, hi).astype(dtype)


@register("NNAPI_REQUANTIZE")
def requantize(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    """int8/uint8 -> int8/uint8 on the output's scale and zero point."""
    x, y = node.inputs[0], node.outputs[0]
    return nnapi_requantize(inputs[0], x.scale, x.zero_point, y.scale, y.zero_point, y.dtype)
