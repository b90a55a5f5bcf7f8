"""CONV_2D and DEPTHWISE_CONV_2D against LiteRT's reference kernels.

Every geometry (strides, dilations, SAME/VALID with odd total padding, batches, depth
multipliers, groups) runs in float32, int8 with per-tensor and per-channel weights, and uint8
with a nonzero weight zero point; activations cycle over the grid and get their own full cross.
The requantization probes build accumulators that land where LiteRT's candidate requantizations
(double vs float32 scale product, gemmlowp double rounding vs single rounding, fixed point vs
double-precision scaling) round differently, so only the right one passes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytest

from teflon_py import ir, quant
from teflon_py.tflite.options import Conv2DOptions, DepthwiseConv2DOptions, FullyConnectedOptions
from tests.harness import check_model, quantization, single_op

ACTIVATIONS = [ir.Activation.NONE, ir.Activation.RELU, ir.Activation.RELU6, ir.Activation.RELU_N1_TO_1]
#: float32; int8 activations with per-tensor or per-channel int8 weights; uint8 (per-tensor, zp != 0)
MODES = ["float32", "int8", "int8_per_channel", "uint8"]
SAME, VALID = ir.Padding.SAME, ir.Padding.VALID

#: activation (zero point), weight and output quantization of each 8-bit type.
INPUT_Q = {np.int8: (0.03, -7), np.uint8: (0.03, 121)}
WEIGHT_ZP = {np.int8: 0, np.uint8: 131}
OUTPUT_ZP = {np.int8: 5, np.uint8: 133}
#: std of a uniform full-range 8-bit value around its zero point (harness inputs, our weights)
SPREAD = 74.0


@dataclass(frozen=True)
class Case:
    """One convolution geometry; ``out`` channels, kernel ``k`` (kh, kw), depthwise ``mult``."""

    x: tuple[int, int, int, int]
    k: tuple[int, int]
    out: int
    stride: tuple[int, int] = (1, 1)
    dilation: tuple[int, int] = (1, 1)
    padding: ir.Padding = SAME

    def __str__(self) -> str:
        (sh, sw), (dh, dw) = self.stride, self.dilation
        shape = "x".join(map(str, self.x))
        return f"x{shape}-k{self.k[0]}x{self.k[1]}-o{self.out}-s{sh}{sw}-d{dh}{dw}-{self.padding.name}"


def out_hw(case: Case) -> tuple[int, int]:
    """Output height and width by TFLite's ComputeOutSize (written out here, independent of conv.py)."""
    dims = []
    for size, k, s, d in zip(case.x[1:3], case.k, case.stride, case.dilation):
        eff = (k - 1) * d + 1
        dims.append(-(-size // s) if case.padding == SAME else (size - eff) // s + 1)
    return dims[0], dims[1]


def quantized_operands(
    dtype: type,
    weights_shape: tuple,
    channels: int,
    reduction: int,
    dim: int,
    per_channel: bool,
    rng: np.random.Generator,
    bias: bool = True,
) -> tuple:
    """Random 8-bit weights, int32 bias and realistic quantization: outputs spread, rarely saturate.

    The output scale covers about +-3.5 standard deviations of the accumulator (``reduction``
    products of two values spread like ``SPREAD`` around their zero points).
    """
    in_scale, in_zp = INPUT_Q[dtype]
    qmin, qmax = quant.QRANGE[np.dtype(dtype)]
    w_zp = WEIGHT_ZP[dtype]
    lo = qmin + 1 if dtype == np.int8 else qmin  # symmetric int8 weights: [-127, 127]
    weights = rng.integers(lo, qmax, weights_shape, endpoint=True).astype(dtype)
    w_scale = 0.004 * (rng.uniform(0.5, 2.0, channels) if per_channel else np.ones(1))
    acc_std = np.sqrt(reduction) * SPREAD * SPREAD
    out_scale = float(acc_std * in_scale * w_scale.max() / 36.0)
    bias_scale = in_scale * w_scale.astype(np.float32)
    operands = [
        {"shape": None, "dtype": dtype, "quant": quantization(in_scale, in_zp)},
        {"data": weights, "dtype": dtype, "quant": quantization(w_scale, w_zp, dim)},
    ]
    if bias:
        b = np.round(rng.normal(0, acc_std / 2, channels)).astype(np.int32)
        operands.append(
            {
                "data": b,
                "dtype": np.int32,
                "quant": quantization(bias_scale if per_channel else bias_scale[0], 0),
            }
        )
    return operands, quantization(out_scale, OUTPUT_ZP[dtype])


def float_operands(
    weights_shape: tuple, channels: int, reduction: int, rng: np.random.Generator, bias: bool = True
) -> tuple:
    """Random float32 weights scaled by 1/sqrt(reduction) and a float32 bias."""
    w = (rng.standard_normal(weights_shape) / np.sqrt(reduction)).astype(np.float32)
    operands = [{"shape": None, "dtype": np.float32}, {"data": w, "dtype": np.float32}]
    if bias:
        operands.append(
            {"data": (0.5 * rng.standard_normal(channels)).astype(np.float32), "dtype": np.float32}
        )
    return operands, None


def operands(
    mode: str, weights_shape: tuple, channels: int, reduction: int, dim: int, seed: int, bias: bool = True
) -> tuple:
    """(input/weight/bias operand dicts, output quantization, dtype) for ``mode``."""
    rng = np.random.default_rng(seed)
    if mode == "float32":
        return (*float_operands(weights_shape, channels, reduction, rng, bias), np.float32)
    dtype = np.uint8 if mode == "uint8" else np.int8
    ops, out_q = quantized_operands(
        dtype, weights_shape, channels, reduction, dim, mode == "int8_per_channel", rng, bias
    )
    return ops, out_q, dtype


def conv_model(case: Case, mode: str, act: ir.Activation, seed: int = 0, groups: int = 1) -> bytes:
    """A CONV_2D model for ``case`` (weights of depth C/groups)."""
    kh, kw = case.k
    depth = case.x[3] // groups
    ins, out_q, dtype = operands(mode, (case.out, kh, kw, depth), case.out, kh * kw * depth, 0, seed)
    ins[0]["shape"] = case.x
    opts = Conv2DOptions(
        padding=case.padding,
        stride_h=case.stride[0],
        stride_w=case.stride[1],
        dilation_h_factor=case.dilation[0],
        dilation_w_factor=case.dilation[1],
        fused_activation_function=act,
    )
    out_shape = (case.x[0], *out_hw(case), case.out)
    return single_op("CONV_2D", ins, [{"shape": out_shape, "dtype": dtype, "quant": out_q}], opts)


def depthwise_model(case: Case, mode: str, act: ir.Activation, seed: int = 0, bias: bool = True) -> bytes:
    """A DEPTHWISE_CONV_2D model for ``case`` (depth multiplier = out / input channels)."""
    kh, kw = case.k
    ins, out_q, dtype = operands(mode, (1, kh, kw, case.out), case.out, kh * kw, 3, seed, bias)
    ins[0]["shape"] = case.x
    opts = DepthwiseConv2DOptions(
        padding=case.padding,
        stride_h=case.stride[0],
        stride_w=case.stride[1],
        dilation_h_factor=case.dilation[0],
        dilation_w_factor=case.dilation[1],
        depth_multiplier=case.out // case.x[3],
        fused_activation_function=act,
    )
    out_shape = (case.x[0], *out_hw(case), case.out)
    return single_op("DEPTHWISE_CONV_2D", ins, [{"shape": out_shape, "dtype": dtype, "quant": out_q}], opts)


CONV_CASES = [
    Case((1, 8, 8, 3), (3, 3), 4),
    Case((2, 8, 8, 5), (3, 3), 6, stride=(2, 2)),  # total padding 1: the odd row goes after
    Case((1, 9, 7, 3), (3, 3), 4, stride=(2, 2)),  # even padding in H, odd in W
    Case((1, 10, 10, 4), (3, 3), 8, dilation=(2, 2)),
    Case((1, 12, 11, 3), (3, 3), 4, stride=(2, 2), dilation=(2, 2)),
    Case((1, 11, 9, 3), (5, 3), 4, stride=(2, 1), padding=VALID),
    Case((2, 6, 6, 8), (1, 1), 16, padding=VALID),  # pointwise
    Case((1, 8, 8, 4), (1, 1), 6, stride=(2, 2), padding=VALID),
    Case((1, 7, 7, 2), (2, 2), 3),  # even kernel: total padding 1
    Case((1, 9, 9, 3), (4, 4), 4, dilation=(1, 2), padding=VALID),
    Case((1, 3, 3, 16), (3, 3), 8, padding=VALID),  # a single output pixel
    Case((2, 3, 3, 8), (3, 3), 70, padding=VALID),  # a window over the whole input: a GEMV per image
    Case((1, 4, 4, 130), (3, 3), 4, padding=VALID),  # K = 1170: uint8 accumulates in float64
]

#: fewer than 16 output channels (the cpu family's conv2d_narrow.cl: 8-channel panels, blocks of 8
#: pixels within an output row): a second, shifted panel for 12, zero-padded lanes below 8, rows
#: wider than a block (a shifted last block) and narrower (OW < 8), batches, taps in the padding
NARROW_CASES = [
    Case((2, 9, 19, 3), (3, 3), 8, stride=(2, 2)),  # hand_recrop's stem: OW 10, the second block shifted
    Case((1, 10, 20, 8), (2, 2), 8, stride=(2, 2), padding=VALID),  # hand_recrop's 2x2 downsampling
    Case((1, 12, 17, 5), (3, 3), 12),
    Case((2, 8, 30, 7), (3, 3), 12, stride=(2, 2), padding=VALID),
    Case((2, 7, 9, 6), (3, 3), 4, padding=VALID),  # OW 7: fewer pixels than a block
    Case((1, 11, 10, 4), (5, 3), 1, stride=(1, 2)),
    Case((1, 9, 9, 5), (3, 3), 8, dilation=(2, 2)),
    Case((3, 5, 16, 2), (3, 3), 4, stride=(2, 1)),
]


DEPTHWISE_CASES = [
    Case((1, 8, 8, 4), (3, 3), 4),
    Case((2, 8, 8, 3), (3, 3), 6, stride=(2, 2)),  # multiplier 2, odd total padding
    Case((1, 10, 10, 4), (3, 3), 4, dilation=(2, 2)),
    Case((1, 9, 11, 2), (5, 3), 4, stride=(2, 2), padding=VALID),
    Case((1, 7, 7, 6), (2, 2), 6),
    Case((1, 12, 12, 3), (3, 3), 6, stride=(2, 2), dilation=(2, 2), padding=VALID),
    Case((2, 5, 6, 8), (3, 3), 16, stride=(1, 2)),
    Case((1, 6, 6, 5), (1, 1), 5, padding=VALID),
    Case((2, 9, 7, 8), (1, 1), 8),  # 1x1 at stride 1: a per-channel map of the flat tensor
    Case((1, 5, 7, 24), (1, 1), 24, stride=(2, 2)),  # 1x1 strided: the general kernels
    Case((1, 11, 10, 4), (3, 3), 4, stride=(2, 2), padding=VALID),  # BlazeFace's 4-channel head
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("index", range(len(CONV_CASES)), ids=lambda i: str(CONV_CASES[i]))
def test_conv_2d(backend: str, index: int, mode: str) -> None:
    check_model(conv_model(CONV_CASES[index], mode, ACTIVATIONS[index % 4], seed=index), backend, seed=index)


@pytest.mark.parametrize("index", range(len(NARROW_CASES)), ids=lambda i: str(NARROW_CASES[i]))
def test_conv_2d_narrow(backend: str, index: int) -> None:
    check_model(conv_model(NARROW_CASES[index], "float32", ACTIVATIONS[index % 4], seed=40 + index), backend,
                seed=index)


@pytest.mark.parametrize("index", range(len(CONV_CASES)), ids=lambda i: str(CONV_CASES[i]))
def test_conv_2d_gpu_family(gpu_family: str, index: int) -> None:
    """The float cases on the GPU-style kernels (gpu_gemm.cl), whatever the device's default."""
    check_model(conv_model(CONV_CASES[index], "float32", ACTIVATIONS[index % 4], seed=index), gpu_family, seed=index)


@pytest.mark.parametrize("case", [Case((1, 9, 10, 7), (3, 3), 37, padding=VALID), Case((3, 5, 5, 6), (1, 1), 42),
                                  Case((1, 9, 10, 8), (3, 3), 13), Case((3, 5, 5, 6), (1, 1), 9),
                                  Case((1, 6, 6, 5), (3, 3), 3, stride=(2, 2)), Case((2, 4, 3, 6), (1, 1), 2)],
                         ids=str)
def test_conv_2d_gpu_family_edges(gpu_family: str, case: Case) -> None:
    """Ragged GPU tiles: pixel counts off the 4-row tile, channels off the 4-wide groups (wide
    and narrow layers), as GEMM for 1x1 and as the convolution otherwise, and a lone float4
    group (<= 4 channels)."""
    check_model(conv_model(case, "float32", ir.Activation.RELU6, seed=3), gpu_family)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("act", ACTIVATIONS, ids=lambda a: a.name)
def test_conv_2d_activations(backend: str, act: ir.Activation, mode: str) -> None:
    check_model(conv_model(Case((1, 6, 6, 4), (3, 3), 8, stride=(2, 2)), mode, act, seed=int(act)), backend)


@pytest.mark.parametrize("mode", [m for m in MODES if m != "uint8"])  # LiteRT: float32 and int8 only
@pytest.mark.parametrize("groups", [2, 4])
def test_conv_2d_grouped(backend: str, groups: int, mode: str) -> None:
    check_model(
        conv_model(Case((1, 7, 7, 8), (3, 3), 12), mode, ir.Activation.RELU, seed=groups, groups=groups),
        backend,
        refuses="grouped convolution",
    )


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("index", range(len(DEPTHWISE_CASES)), ids=lambda i: str(DEPTHWISE_CASES[i]))
def test_depthwise_conv_2d(backend: str, index: int, mode: str) -> None:
    check_model(
        depthwise_model(DEPTHWISE_CASES[index], mode, ACTIVATIONS[index % 4], seed=index), backend, seed=index
    )


@pytest.mark.parametrize("index", range(len(DEPTHWISE_CASES)), ids=lambda i: str(DEPTHWISE_CASES[i]))
def test_depthwise_conv_2d_gpu_family(gpu_family: str, index: int) -> None:
    """The float cases on the GPU-style kernels (gpu_depthwise.cl), whatever the device's default."""
    check_model(depthwise_model(DEPTHWISE_CASES[index], "float32", ACTIVATIONS[index % 4], seed=index), gpu_family,
                seed=index)


@pytest.mark.parametrize("case", [Case((1, 9, 10, 7), (5, 5), 7), Case((2, 11, 9, 12), (5, 5), 12, stride=(2, 2)),
                                  Case((3, 7, 6, 40), (3, 3), 40), Case((1, 13, 5, 3), (3, 3), 3, stride=(2, 2),
                                                                        padding=VALID)],
                         ids=str)
def test_depthwise_conv_2d_gpu_family_edges(gpu_family: str, case: Case) -> None:
    """The fast GPU kernels (square 3x3 / 5x5 filters, equal strides) on ragged pixel patches:
    rows and columns off the patch, batches, channels past one work-group."""
    check_model(depthwise_model(case, "float32", ir.Activation.RELU6, seed=5), gpu_family)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("act", ACTIVATIONS, ids=lambda a: a.name)
def test_depthwise_conv_2d_activations(backend: str, act: ir.Activation, mode: str) -> None:
    check_model(
        depthwise_model(Case((1, 6, 6, 3), (3, 3), 6, stride=(2, 2)), mode, act, seed=int(act)), backend
    )


@pytest.mark.parametrize("mode", MODES)
def test_depthwise_conv_2d_no_bias(backend: str, mode: str) -> None:
    check_model(depthwise_model(Case((2, 7, 7, 4), (3, 3), 8), mode, ir.Activation.NONE, bias=False), backend)


def test_depthwise_int8_ignores_weight_zero_points(backend: str) -> None:
    """LiteRT's int8 depthwise kernel never reads the weights' zero points (it accepts nonzero ones)."""
    rng = np.random.default_rng(7)
    w = rng.integers(-127, 127, (1, 3, 3, 4), endpoint=True).astype(np.int8)
    ins = [
        {"shape": (1, 5, 5, 4), "dtype": np.int8, "quant": quantization(0.03, -7)},
        {"data": w, "dtype": np.int8, "quant": quantization([0.004, 0.005, 0.003, 0.004], [3, -2, 0, 9], 3)},
        {
            "data": rng.integers(-2000, 2000, 4).astype(np.int32),
            "dtype": np.int32,
            "quant": quantization(np.float32(0.03) * np.float32([0.004, 0.005, 0.003, 0.004])),
        },
    ]
    model = single_op(
        "DEPTHWISE_CONV_2D",
        ins,
        [{"shape": (1, 5, 5, 4), "dtype": np.int8, "quant": quantization(0.05, 1)}],
        DepthwiseConv2DOptions(padding=SAME, stride_h=1, stride_w=1, depth_multiplier=1),
    )
    check_model(model, backend)


# -- requantization probes: accumulators where plausible requantizations disagree ------------------

#: accumulator offsets tried around each probe point (one output pixel per offset)
PROBE_OFFSETS = np.arange(-6, 7)
#: |output - zero point| bound of the probes: well inside the 8-bit range, so nothing clamps
PROBE_RANGE = 100

#: accumulators of one channel -> requantized outputs (before the zero point)
Requant = Callable[[np.ndarray], np.ndarray]


def real_scales(si: float, sw: np.ndarray, so: float, float32_product: bool) -> np.ndarray:
    """in * w / out as TFLite evaluates it: double throughout, or the float32 product in* w first."""
    si, sw, so = np.float32(si), np.asarray(sw, np.float32), np.float32(so)
    if float32_product:
        return (si * sw).astype(np.float64) / np.float64(so)
    return np.float64(si) * sw.astype(np.float64) / np.float64(so)


def fixed_point(real: float, single_rounding: bool = False) -> Requant:
    """MultiplyByQuantizedMultiplier with the multiplier of ``real``: gemmlowp's double rounding,
    or the single rounding ``(acc * m + 2^(30 - s)) >> (31 - s)`` of TFLITE_SINGLE_ROUNDING / ruy."""
    m, s = (int(v) for v in quant.quantize_multiplier(real))
    if single_rounding:
        return lambda acc: (np.asarray(acc, np.int64) * m + (1 << (30 - s))) >> (31 - s)
    return lambda acc: quant.multiply_by_quantized_multiplier(acc, m, s)


def double_scaling(real: float) -> Requant:
    """C's ``round(double(acc) * real)``: halves away from zero (written with trunc, not quant.py)."""

    def requant(acc: np.ndarray) -> np.ndarray:
        v = np.asarray(acc, np.int64).astype(np.float64) * real
        t = np.trunc(v)
        return (t + np.sign(v) * (np.abs(v - t) >= 0.5)).astype(np.int64)

    return requant


def separating_accumulator(
    right: Requant, wrong: Requant, real: float, rng: np.random.Generator
) -> int | None:
    """An accumulator whose output differs between ``right`` and ``wrong``, or None.

    Candidates: the accumulators nearest to every rounding boundary (k + 1/2) / real within the
    probe range, where any two requantizations part first, plus random large ones.
    """
    halves = np.arange(-PROBE_RANGE, PROBE_RANGE) + 0.5
    near = (np.round(halves / real).astype(np.int64)[:, None] + np.arange(-2, 3)).ravel()
    limit = int(PROBE_RANGE / real)
    far = rng.integers(limit // 2, limit, 1 << 16) * rng.choice([-1, 1], 1 << 16)
    candidates = np.concatenate([near, far])
    hits = candidates[right(candidates) != wrong(candidates)]
    return int(hits[0]) if hits.size else None


def probe_scales(
    rng: np.random.Generator, channels: int, per_channel: bool
) -> tuple[float, np.ndarray, float]:
    """Scales (in, weights, out) whose double and float32 products give different multipliers."""
    while True:
        si = float(np.float32(rng.uniform(0.01, 0.1)))
        sw = rng.uniform(2e-5, 8e-5, channels if per_channel else 1).astype(np.float32)
        so = float(np.float32(si * float(sw.max()) * 2**20 * rng.uniform(0.5, 1)))
        double = quant.quantize_multiplier(real_scales(si, sw, so, False))[0]
        single = quant.quantize_multiplier(real_scales(si, sw, so, True))[0]
        if np.all(double != single):
            return si, sw, so


def candidates(op: str, dtype: type, reals: dict[bool, float]) -> tuple[Requant, list[Requant]]:
    """(LiteRT's requantization, the plausible wrong ones) of one channel; ``reals`` by float32 product.

    Convolutions: fixed point with gemmlowp rounding, from the double product (int8) or the float32
    product (uint8). FULLY_CONNECTED: ``round(acc * real)`` in double, from the double product.
    """
    if op == "FULLY_CONNECTED":
        right = double_scaling(reals[False])
        return right, [fixed_point(reals[False]), fixed_point(reals[True]), fixed_point(reals[False], True)]
    product = dtype == np.uint8
    return fixed_point(reals[product]), [fixed_point(reals[not product]), fixed_point(reals[product], True)]


def probe_biases(
    op: str, dtype: type, si: float, sw: np.ndarray, so: float, channels: int, rng: np.random.Generator
) -> tuple[np.ndarray, bool]:
    """Per-channel probe accumulators, each separating LiteRT's requantization from a wrong one
    (a different one per channel, in turn); True when every wrong one is separated somewhere."""
    reals = {p: np.broadcast_to(real_scales(si, sw, so, p), (channels,)) for p in (False, True)}
    bias = np.zeros(channels, np.int32)
    separated: set[int] = set()
    for c in range(channels):
        right, wrongs = candidates(op, dtype, {p: float(reals[p][c]) for p in reals})
        for k in sorted(range(len(wrongs)), key=lambda k: (k in separated, (k - c) % len(wrongs))):
            acc = separating_accumulator(right, wrongs[k], float(reals[False][c]), rng)
            if acc is not None:
                bias[c] = acc
                separated.add(k)
                break
    return bias, len(separated) == len(wrongs)


def probe_model(
    op: str, dtype: type, per_channel: bool, seed: int, channels: int = 8
) -> tuple[bytes, np.ndarray]:
    """A 1x1 CONV_2D / DEPTHWISE_CONV_2D (or FULLY_CONNECTED) whose accumulators sit on probe points.

    Weights are ``zero point + 1`` and input ``zero point + d``, so channel c's accumulator is
    ``bias_c + d``: the bias puts it where LiteRT's requantization and a wrong one (a different one
    per channel, in turn) disagree; the offsets d probe around that point.
    """
    rng = np.random.default_rng(seed)
    for _ in range(20):  # redraw scales until every wrong requantization is separated somewhere
        si, sw, so = probe_scales(rng, channels, per_channel)
        bias, separated = probe_biases(op, dtype, si, sw, so, channels, rng)
        if separated:
            break
    else:
        raise AssertionError("no probe separates every wrong requantization from LiteRT's")
    zx, zw, zo = INPUT_Q[dtype][1], WEIGHT_ZP[dtype], OUTPUT_ZP[dtype]
    n = PROBE_OFFSETS.size
    wq = quantization(sw if per_channel else sw[0], zw, 3 if op == "DEPTHWISE_CONV_2D" else 0)
    bq = quantization(np.float32(si) * sw if per_channel else np.float32(si) * sw[0])
    if op == "FULLY_CONNECTED":
        x_shape, w_shape, out_shape, opts = (n, 1), (channels, 1), (n, channels), FullyConnectedOptions()
        x = (zx + PROBE_OFFSETS).reshape(n, 1)
    elif op == "CONV_2D":
        x_shape, w_shape, out_shape = (1, 1, n, 1), (channels, 1, 1, 1), (1, 1, n, channels)
        opts = Conv2DOptions(padding=VALID, stride_h=1, stride_w=1)
        x = (zx + PROBE_OFFSETS).reshape(x_shape)
    else:
        x_shape, w_shape, out_shape = (1, 1, n, channels), (1, 1, 1, channels), (1, 1, n, channels)
        opts = DepthwiseConv2DOptions(padding=VALID, stride_h=1, stride_w=1, depth_multiplier=1)
        x = np.broadcast_to((zx + PROBE_OFFSETS)[:, None], (n, channels)).reshape(x_shape)
    ins = [
        {"shape": x_shape, "dtype": dtype, "quant": quantization(si, zx)},
        {"data": np.full(w_shape, zw + 1, dtype), "dtype": dtype, "quant": wq},
        {"data": bias, "dtype": np.int32, "quant": bq},
    ]
    model = single_op(op, ins, [{"shape": out_shape, "dtype": dtype, "quant": quantization(so, zo)}], opts)
    return model, np.ascontiguousarray(x, dtype)


PROBES = [
    ("CONV_2D", np.int8, False),
    ("CONV_2D", np.int8, True),
    ("CONV_2D", np.uint8, False),
    ("DEPTHWISE_CONV_2D", np.int8, False),
    ("DEPTHWISE_CONV_2D", np.int8, True),
    ("DEPTHWISE_CONV_2D", np.uint8, False),
]


@pytest.mark.parametrize(
    "op, dtype, per_channel",
    PROBES,
    ids=[f"{o}-{np.dtype(d).name}-{'pc' if p else 'pt'}" for o, d, p in PROBES],
)
def test_requantization_rounding(backend: str, op: str, dtype: type, per_channel: bool) -> None:
    model, x = probe_model(op, dtype, per_channel, seed=PROBES.index((op, dtype, per_channel)))
    check_model(model, backend, inputs=[x])
