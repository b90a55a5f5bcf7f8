"""TRANSPOSE_CONV against LiteRT's reference kernels, and MediaPipe's Convolution2DTransposeBias.

Every geometry (strides, SAME/VALID, output shapes TFLite accepts beyond the natural ones,
batches, kernels smaller and larger than the stride) runs in float32, int8 with per-tensor and
per-channel weights, uint8 with a nonzero weight zero point and int16 activations with int8
weights (int64 bias); bias present or absent and fused activations cycle over the grid. LiteRT
does not ship the MediaPipe op: it is checked against its documented derivation, LiteRT's
builtin TRANSPOSE_CONV with VALID padding over the uncropped output, cropped by MediaPipe's
padding, plus the bias.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np
import pytest

from teflon_py import ir, quant
from teflon_py.tflite.builder import ModelBuilder
from teflon_py.tflite.options import TransposeConvOptions
from tests.harness import assert_close, check_model, quantization, run_litert, run_teflon, single_op

SAME, VALID = ir.Padding.SAME, ir.Padding.VALID
ACTIVATIONS = [ir.Activation.NONE, ir.Activation.RELU, ir.Activation.RELU6, ir.Activation.RELU_N1_TO_1]
MODES = ["float32", "int8", "int8_per_channel", "uint8", "int16"]

#: (input dtype, weight dtype, bias dtype, input (scale, zp), weight zp, output zp) per quantized mode
QUANT = {
    "int8": (np.int8, np.int8, np.int32, (0.03, -7), 0, 5),
    "int8_per_channel": (np.int8, np.int8, np.int32, (0.03, -7), 0, 5),
    "uint8": (np.uint8, np.uint8, np.int32, (0.03, 121), 131, 133),
    "int16": (np.int16, np.int8, np.int64, (0.0005, 0), 0, 0),
}


@dataclass(frozen=True)
class Case:
    """Input NHWC ``x``, kernel ``k``, ``out`` channels, strides, padding, extra output rows/cols."""

    x: tuple[int, int, int, int]
    k: tuple[int, int]
    out: int
    stride: tuple[int, int]
    padding: ir.Padding
    extra: tuple[int, int] = (0, 0)

    def __str__(self) -> str:
        return (
            f"x{'x'.join(map(str, self.x))}-k{self.k[0]}x{self.k[1]}-o{self.out}"
            f"-s{self.stride[0]}{self.stride[1]}-{self.padding.name}-e{self.extra[0]}{self.extra[1]}"
        )

    def out_hw(self) -> tuple[int, int]:
        """The natural output size (SAME: in * stride; VALID: (in - 1) * stride + k) plus ``extra``."""
        dims = []
        for size, k, s, e in zip(self.x[1:3], self.k, self.stride, self.extra):
            dims.append((size * s if self.padding == SAME else (size - 1) * s + k) + e)
        return dims[0], dims[1]


CASES = [
    Case((1, 5, 5, 3), (3, 3), 4, (2, 2), SAME),
    Case((2, 4, 6, 5), (4, 4), 3, (2, 2), SAME),
    Case((1, 4, 3, 4), (3, 2), 6, (1, 2), VALID),
    Case((1, 3, 4, 2), (2, 3), 5, (3, 2), VALID),  # stride wider than the kernel: gaps
    Case((1, 6, 5, 3), (3, 3), 2, (2, 2), SAME, (-1, -1)),  # odd output: 2*in - 1
    Case((1, 3, 3, 4), (3, 3), 3, (2, 1), VALID, (1, 0)),  # a last row no input reaches
    Case((1, 7, 7, 8), (1, 1), 16, (1, 1), SAME),
]


def _reduction(case: Case) -> float:
    """Average number of (input pixel, channel) terms one output sums."""
    return case.x[3] * case.k[0] * case.k[1] / (case.stride[0] * case.stride[1])


def transpose_conv_model(case: Case, mode: str, bias: bool | str, act: ir.Activation, seed: int,
                         zero_points: tuple[int, int] | None = None) -> bytes:
    """A one-op TRANSPOSE_CONV model with realistic weights, bias and quantization for ``mode``.

    ``bias``: True (a constant), False (three inputs) or "absent" (a fourth slot holding -1);
    ``zero_points``: (input, output) zero points instead of ``QUANT``'s.
    """
    rng = np.random.default_rng(seed)
    n, _, _, c = case.x
    oh, ow = case.out_hw()
    wshape = (case.out, case.k[0], case.k[1], c)
    opts = TransposeConvOptions(
        padding=case.padding, stride_h=case.stride[0], stride_w=case.stride[1], fused_activation_function=act
    )
    shape_op = {"data": np.array([n, oh, ow, case.out], np.int32), "dtype": np.int32}
    red = _reduction(case)
    if mode == "float32":
        w = (rng.standard_normal(wshape) / np.sqrt(red)).astype(np.float32)
        ins = [shape_op, {"data": w, "dtype": np.float32}, {"shape": case.x, "dtype": np.float32}]
        if bias == "absent":
            ins.append({"none": True})
        elif bias:
            ins.append(
                {"data": (0.5 * rng.standard_normal(case.out)).astype(np.float32), "dtype": np.float32}
            )
        return single_op("TRANSPOSE_CONV", ins, [{"shape": (n, oh, ow, case.out), "dtype": np.float32}], opts)
    xdt, wdt, bdt, (in_scale, in_zp), w_zp, out_zp = QUANT[mode]
    if zero_points is not None:
        in_zp, out_zp = zero_points
    per_channel = mode in ("int8_per_channel", "int16")
    qmin, qmax = quant.QRANGE[np.dtype(wdt)]
    w = rng.integers(qmin + (wdt == np.int8), qmax, wshape, endpoint=True).astype(wdt)
    w_scale = 0.004 * (rng.uniform(0.5, 2.0, case.out) if per_channel else np.ones(1))
    x_spread = 74.0 if xdt != np.int16 else 18918.0  # std of full-range harness inputs around zp
    acc_std = np.sqrt(red) * x_spread * 74.0
    omin, omax = quant.QRANGE[np.dtype(xdt)]
    out_scale = float(acc_std * in_scale * w_scale.max() / ((omax - omin) / 2 / 3.5))  # +-3.5 std
    ins = [
        shape_op,
        {"data": w, "dtype": wdt, "quant": quantization(w_scale, w_zp, 0)},
        {"shape": case.x, "dtype": xdt, "quant": quantization(in_scale, in_zp)},
    ]
    if bias == "absent":
        ins.append({"none": True})
    elif bias:
        b = np.round(rng.normal(0, acc_std / 2, case.out)).astype(bdt)
        b_scale = in_scale * w_scale.astype(np.float32)
        ins.append(
            {"data": b, "dtype": bdt, "quant": quantization(b_scale if per_channel else b_scale[0], 0)}
        )
    outs = [{"shape": (n, oh, ow, case.out), "dtype": xdt, "quant": quantization(out_scale, out_zp)}]
    return single_op("TRANSPOSE_CONV", ins, outs, opts)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", CASES, ids=str)
def test_transpose_conv(case: Case, mode: str, backend: str) -> None:
    k = CASES.index(case)
    act = ACTIVATIONS[(k + MODES.index(mode)) % len(ACTIVATIONS)]
    check_model(transpose_conv_model(case, mode, bias=k % 3 != 1, act=act, seed=k), backend)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("act", ACTIVATIONS[1:], ids=lambda a: a.name)
def test_transpose_conv_activations(act: ir.Activation, mode: str, backend: str) -> None:
    check_model(transpose_conv_model(CASES[0], mode, bias=True, act=act, seed=11), backend)


@pytest.mark.parametrize("mode", ["float32", "int8_per_channel", "int16"])
def test_transpose_conv_absent_bias_slot(mode: str, backend: str) -> None:
    """Four inputs whose optional bias slot holds -1 (the grid covers the three-input form)."""
    model = transpose_conv_model(CASES[1], mode, bias="absent", act=ir.Activation.RELU, seed=3)
    check_model(model, backend)


#: 8-bit geometries beyond ``CASES``: stride 1 (the int8 convolution with the kernel flipped) with
#: SAME and VALID padding, strides 1 x 2 (the gather kernel) on an odd output width, odd channel
#: counts, a UNet decoder's 2x2 stride-2 upsampling
INT8_CASES = [
    Case((1, 6, 5, 5), (3, 3), 19, (1, 1), SAME),
    Case((1, 4, 5, 3), (3, 2), 7, (1, 1), VALID),
    Case((1, 5, 4, 3), (3, 1), 5, (1, 2), SAME, (0, -1)),
    Case((1, 5, 4, 7), (3, 3), 21, (2, 2), SAME),
    Case((2, 3, 4, 6), (2, 2), 33, (2, 2), VALID),
    Case((1, 4, 3, 5), (4, 3), 9, (2, 3), SAME, (-1, -2)),
]
#: (input, output) zero points at the types' edges, per 8-bit mode
EDGE_ZERO_POINTS = {
    "int8": [(-128, 127), (127, -128), (0, -128)],
    "uint8": [(0, 255), (255, 0), (128, 3)],
}


@pytest.mark.parametrize("mode", ["int8", "int8_per_channel", "uint8"])
@pytest.mark.parametrize("case", INT8_CASES, ids=str)
def test_transpose_conv_8bit(case: Case, mode: str, backend: str) -> None:
    """Bit-exact with LiteRT on inputs drawn from the type's edges; zero points at the edges,
    bias and activations by turns."""
    k = INT8_CASES.index(case)
    m = ["int8", "int8_per_channel", "uint8"].index(mode)
    zps = EDGE_ZERO_POINTS["uint8" if mode == "uint8" else "int8"][(k + m) % 3]
    # RELU by turns, where the output zero point leaves it a range (at the top edge all is clamped)
    act = ir.Activation.RELU if (k + m) % 2 and zps[1] < 100 else ir.Activation.NONE
    model = transpose_conv_model(case, mode, bias=(k + m) % 2 == 0, act=act, seed=20 + k, zero_points=zps)
    check_model(model, backend, seed=k, extremes=True)


# -- MediaPipe's Convolution2DTransposeBias ---------------------------------------------------------

#: TfLitePadding values in the op's raw custom options
_TFLITE_SAME, _TFLITE_VALID = 1, 2


def _mediapipe_model(
    x_shape: tuple,
    w: np.ndarray,
    b: np.ndarray,
    padding: int,
    stride: tuple[int, int],
    out_hw: tuple[int, int],
) -> bytes:
    mb = ModelBuilder()
    g = mb.main
    x = g.add_input("input", x_shape, np.float32)
    wt = g.add_constant("weights", w)
    bt = g.add_constant("bias", b)
    out = g.add_tensor("output", (x_shape[0], *out_hw, w.shape[0]), np.float32)
    options = struct.pack("<iii", padding, stride[1], stride[0])
    g.add_op("CUSTOM", [x, wt, bt], [out], custom_code="Convolution2DTransposeBias", custom_options=options)
    g.mark_outputs(out)
    return mb.build()


MEDIAPIPE_CASES = [
    ((1, 4, 4, 3), (4, 4), 5, (2, 2), _TFLITE_SAME),
    ((2, 5, 3, 4), (3, 3), 2, (2, 2), _TFLITE_SAME),
    ((1, 3, 4, 2), (2, 3), 3, (3, 1), _TFLITE_SAME),
    ((1, 4, 5, 3), (3, 2), 4, (2, 2), _TFLITE_VALID),
]


@pytest.mark.parametrize("x_shape, k, oc, stride, padding", MEDIAPIPE_CASES)
def test_convolution_2d_transpose_bias(
    x_shape: tuple, k: tuple, oc: int, stride: tuple, padding: int, backend: str
) -> None:
    """Equals LiteRT's VALID TRANSPOSE_CONV over the full (uncropped) output, cropped, plus bias."""
    rng = np.random.default_rng(sum(x_shape) + oc)
    n, h, wd, c = x_shape
    w = (rng.standard_normal((oc, *k, c)) / np.sqrt(c * k[0] * k[1])).astype(np.float32)
    b = rng.standard_normal(oc).astype(np.float32)
    x = rng.standard_normal(x_shape).astype(np.float32)
    # MediaPipe's geometry (transpose_conv_bias.cc), written out independently of the kernel
    totals = [
        max(0, kk - (size - 1) % s - 1) if padding == _TFLITE_SAME else 0
        for kk, size, s in zip(k, (h, wd), stride)
    ]
    out_hw = tuple(s * (size - 1) + kk - t for kk, size, s, t in zip(k, (h, wd), stride, totals))
    full_hw = tuple(s * (size - 1) + kk for kk, size, s in zip(k, (h, wd), stride))
    builtin = single_op(
        "TRANSPOSE_CONV",
        [
            {"data": np.array([n, *full_hw, oc], np.int32), "dtype": np.int32},
            {"data": w, "dtype": np.float32},
            {"shape": x_shape, "dtype": np.float32},
        ],
        [{"shape": (n, *full_hw, oc), "dtype": np.float32}],
        TransposeConvOptions(padding=VALID, stride_h=stride[0], stride_w=stride[1]),
    )
    full = run_litert(builtin, [x])[0]
    top, left = totals[0] // 2, totals[1] // 2
    expected = full[:, top : top + out_hw[0], left : left + out_hw[1]] + b
    actual, _ = run_teflon(_mediapipe_model(x_shape, w, b, padding, stride, out_hw), [x], backend)
    assert_close(actual[0], expected, 1e-5)


# -- requantization probe ---------------------------------------------------------------------------

#: scales whose float32 product in * w differs from the double one in the multiplier's last bits,
#: and accumulators (held by the bias) that the two multipliers requantize differently
PROBE_SCALES = (0.0123, 0.000457, 0.049)
PROBE_ACC = (675579, -675579)


@pytest.mark.parametrize("dtype", [np.int8, np.uint8], ids=lambda d: np.dtype(d).name)
def test_transpose_conv_multiplier_probe(dtype: type, backend: str) -> None:
    """int8 derives the multiplier from the double product of the scales, uint8 from the float32
    one (PopulateConvolutionQuantizationParams, as CONV_2D): the pixel whose input equals the zero
    point accumulates exactly the bias, where the two candidates differ."""
    si, sw, so = PROBE_SCALES
    zx, zw = (0, 0) if dtype == np.int8 else (128, 128)
    candidates = []
    for product in (
        np.float64(np.float32(si)) * np.float64(np.float32(sw)),
        np.float64(np.float32(si) * np.float32(sw)),
    ):
        m, s = quant.quantize_multiplier(product / np.float64(np.float32(so)))
        candidates.append(quant.multiply_by_quantized_multiplier(np.array(PROBE_ACC), m, s))
    assert not np.array_equal(*candidates), "the probe must separate the two derivations"
    w = (np.array([[127, 1], [127, 1]]) + zw).astype(dtype).reshape(2, 1, 1, 2)
    model = single_op(
        "TRANSPOSE_CONV",
        [
            {"data": np.array([1, 4, 4, 2], np.int32), "dtype": np.int32},
            {"data": w, "dtype": dtype, "quant": quantization(sw, zw)},
            {"shape": (1, 4, 4, 2), "dtype": dtype, "quant": quantization(si, zx)},
            {"data": np.array(PROBE_ACC, np.int32), "dtype": np.int32, "quant": quantization(si * sw, 0)},
        ],
        [{"shape": (1, 4, 4, 2), "dtype": dtype, "quant": quantization(so, zx)}],
        TransposeConvOptions(padding=VALID, stride_h=1, stride_w=1),
    )
    rng = np.random.default_rng(5)
    x = rng.integers(zx - 20, zx + 20, (1, 4, 4, 2)).astype(dtype)
    x[0, 0, 0] = zx
    check_model(model, backend, inputs=[x])
