"""NNAPI_REQUANTIZE: an 8-bit tensor moved onto another scale and zero point the way Android's NNAPI
reference implementation does it (``requantize`` in its OperationsUtils), which SELECT, MAXIMUM and
MINIMUM apply to quantized inputs whose parameters differ from the output's.

It differs from TFLite's integer QUANTIZE (a fixed-point multiplier, the zero point added after
rounding): the real value ``(q - zp_in) * s_in`` is a float32 product, the division by ``s_out``
and the addition of ``zp_out`` happen in double, and the sum is saturated, then rounded half away
from zero. Output: the input's shape, the declared 8-bit type.
"""
from __future__ import annotations

import numpy as np

from teflon_py.ops.common import NoAttrs
from teflon_py.ops.registry import Inputs, Meta, define

EIGHT_BIT = (np.dtype(np.int8), np.dtype(np.uint8))


@define("NNAPI_REQUANTIZE", attrs=NoAttrs)
def infer_requantize(attrs: NoAttrs, ins: Inputs) -> list[Meta]:
    """The input's shape; both tensors 8-bit and quantized per tensor."""
    x = ins[0]
    if x is None:
        raise ins.error("input 0 is missing")
    y = ins.outputs[0]
    for what, t in (("input", x), ("output", y)):
        if np.dtype(t.dtype) not in EIGHT_BIT:
            raise ins.error(f"{what} type {t.dtype} must be int8 or uint8")
        q = t.quantization
        if q is None or q.scale.size != 1:
            raise ins.error(f"{what} {t.describe()} needs one scale and zero point")
    return [Meta(tuple(x.shape), np.dtype(y.dtype))]
