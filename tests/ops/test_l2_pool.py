"""L2_POOL_2D against LiteRT's reference kernel (float32, the only type LiteRT computes it in).

Filters larger and smaller than the strides, SAME windows clipped at every edge, VALID, batches,
and each fused activation.
"""

from __future__ import annotations

import numpy as np
import pytest

from teflon_py import ir
from teflon_py.tflite.options import Pool2DOptions
from tests.harness import check_model, single_op

SAME, VALID = ir.Padding.SAME, ir.Padding.VALID
ACTIVATIONS = [ir.Activation.NONE, ir.Activation.RELU, ir.Activation.RELU6, ir.Activation.RELU_N1_TO_1]

#: (input NHWC, (filter h, w), (stride h, w), padding)
CASES = [
    ((1, 8, 8, 3), (2, 2), (2, 2), VALID),
    ((2, 7, 9, 4), (3, 3), (2, 2), SAME),
    ((1, 5, 6, 2), (3, 2), (1, 1), SAME),
    ((1, 9, 7, 5), (4, 3), (3, 2), SAME),
    ((1, 6, 6, 1), (6, 6), (1, 1), VALID),
    ((1, 4, 10, 3), (1, 3), (1, 3), VALID),
]


def out_size(padding: ir.Padding, size: int, k: int, stride: int) -> int:
    """TFLite's ComputeOutSize, written out independently of the kernel."""
    return -(-size // stride) if padding == SAME else (size - k) // stride + 1


@pytest.mark.parametrize("act", ACTIVATIONS, ids=lambda a: a.name)
@pytest.mark.parametrize(
    "case", CASES, ids=lambda c: f"{'x'.join(map(str, c[0]))}-f{c[1]}-s{c[2]}-{c[3].name}"
)
def test_l2_pool_2d(case: tuple, act: ir.Activation, backend: str) -> None:
    shape, (fh, fw), (sh, sw), padding = case
    out = (shape[0], out_size(padding, shape[1], fh, sh), out_size(padding, shape[2], fw, sw), shape[3])
    options = Pool2DOptions(
        padding=padding,
        stride_h=sh,
        stride_w=sw,
        filter_height=fh,
        filter_width=fw,
        fused_activation_function=act,
    )
    model = single_op(
        "L2_POOL_2D", [{"shape": shape, "dtype": np.float32}], [{"shape": out, "dtype": np.float32}], options
    )
    check_model(model, backend)
