"""CONV_3D against LiteRT's reference kernel (float32, the only type LiteRT computes it in).

Strides, dilations, SAME with odd total padding, VALID, batches, with and without bias, each
fused activation.
"""

from __future__ import annotations

import numpy as np
import pytest

from teflon_py import ir
from teflon_py.tflite.options import Conv3DOptions
from tests.harness import check_model, single_op

SAME, VALID = ir.Padding.SAME, ir.Padding.VALID
ACTIVATIONS = [ir.Activation.NONE, ir.Activation.RELU, ir.Activation.RELU6, ir.Activation.RELU_N1_TO_1]

#: (input NDHWC, filter (kd, kh, kw), out channels, strides (d, h, w), dilations (d, h, w), padding)
CASES = [
    ((1, 4, 5, 5, 3), (2, 3, 3), 4, (1, 1, 1), (1, 1, 1), SAME),
    ((2, 5, 6, 4, 2), (3, 3, 2), 3, (2, 2, 1), (1, 1, 1), SAME),
    ((1, 6, 6, 6, 2), (2, 2, 2), 5, (2, 2, 2), (1, 1, 1), VALID),
    ((1, 7, 7, 5, 3), (3, 2, 2), 2, (1, 2, 1), (2, 1, 2), SAME),
    ((1, 3, 4, 5, 4), (1, 1, 1), 6, (1, 1, 1), (1, 1, 1), VALID),
    ((1, 5, 5, 5, 1), (3, 3, 3), 2, (1, 1, 1), (1, 2, 1), VALID),
]


def _out_size(padding: ir.Padding, size: int, k: int, s: int, d: int) -> int:
    """TFLite's ComputeOutSize, written out independently of the kernel."""
    eff = (k - 1) * d + 1
    return -(-size // s) if padding == SAME else (size - eff) // s + 1


def conv3d_model(case: tuple, bias: str, act: ir.Activation, seed: int) -> bytes:
    """``bias``: "bias" (a constant), "absent" (the optional slot holds -1) or "none" (two inputs)."""
    shape, k, oc, strides, dilations, padding = case
    rng = np.random.default_rng(seed)
    c = shape[4]
    w = (rng.standard_normal((*k, c, oc)) / np.sqrt(np.prod(k) * c)).astype(np.float32)
    out = (
        shape[0],
        *(_out_size(padding, n, kk, s, d) for n, kk, s, d in zip(shape[1:4], k, strides, dilations)),
        oc,
    )
    ins = [{"shape": shape, "dtype": np.float32}, {"data": w, "dtype": np.float32}]
    if bias == "bias":
        ins.append({"data": (0.5 * rng.standard_normal(oc)).astype(np.float32), "dtype": np.float32})
    elif bias == "absent":
        ins.append({"none": True})
    options = Conv3DOptions(
        padding=padding,
        stride_d=strides[0],
        stride_h=strides[1],
        stride_w=strides[2],
        dilation_d_factor=dilations[0],
        dilation_h_factor=dilations[1],
        dilation_w_factor=dilations[2],
        fused_activation_function=act,
    )
    return single_op("CONV_3D", ins, [{"shape": out, "dtype": np.float32}], options)


@pytest.mark.parametrize("bias", ["bias", "absent", "none"])
@pytest.mark.parametrize(
    "case", CASES, ids=lambda c: f"{'x'.join(map(str, c[0]))}-k{c[1]}-s{c[3]}-d{c[4]}-{c[5].name}"
)
def test_conv_3d(case: tuple, bias: str, backend: str) -> None:
    k = CASES.index(case)
    act = ACTIVATIONS[(k + len(bias)) % len(ACTIVATIONS)]
    check_model(conv3d_model(case, bias, act, k), backend)


@pytest.mark.parametrize("act", ACTIVATIONS[1:], ids=lambda a: a.name)
def test_conv_3d_activations(act: ir.Activation, backend: str) -> None:
    check_model(conv3d_model(CASES[1], "bias", act, 9), backend)
