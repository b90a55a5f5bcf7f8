"""FULLY_CONNECTED against LiteRT's reference kernels.

Inputs of rank 2 to 4 flattened into rows of the weights' depth (which need not be the last
dimension), ``keep_num_dims`` both ways, batches, optional bias, constant and runtime weights, in
float32, int8 (per-tensor and per-channel weights) and uint8, with every fused activation.
"""

from __future__ import annotations

import numpy as np
import pytest

import teflon_py
from teflon_py import ir
from teflon_py.errors import UnsupportedError
from teflon_py.tflite.options import FullyConnectedOptions
from tests.harness import assert_close, check_model, quantization, run_litert, run_teflon, single_op
from tests.ops.test_conv import ACTIVATIONS, MODES, operands, probe_model

#: (input shape, units, weight depth, keep_num_dims)
CASES = [
    ((3, 16), 8, 16, False),
    ((1, 32), 10, 32, False),
    ((2, 3, 10), 5, 10, True),
    ((2, 3, 10), 5, 10, False),  # rows = 6
    ((2, 2, 2, 6), 7, 12, False),  # depth spans two dimensions: rows = 4
    ((2, 2, 3, 4), 7, 4, True),
    ((1, 1, 1, 40), 3, 40, True),
    ((4, 1, 24), 6, 8, False),  # rows = 12, depth smaller than the last dimension
    ((1, 40), 100, 40, False),  # one row, many units: the row tile repeating its one row, partial last panel
]


def fc_model(
    x_shape: tuple,
    units: int,
    depth: int,
    keep: bool,
    mode: str,
    act: ir.Activation,
    seed: int = 0,
    bias: bool = True,
) -> bytes:
    """A FULLY_CONNECTED model with constant [units, depth] weights."""
    ins, out_q, dtype = operands(mode, (units, depth), units, depth, 0, seed, bias)
    ins[0]["shape"] = x_shape
    rows = int(np.prod(x_shape)) // depth
    out_shape = (*x_shape[:-1], units) if keep else (rows, units)
    opts = FullyConnectedOptions(fused_activation_function=act, keep_num_dims=keep)
    return single_op("FULLY_CONNECTED", ins, [{"shape": out_shape, "dtype": dtype, "quant": out_q}], opts)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    "index", range(len(CASES)), ids=lambda i: f"{CASES[i][0]}-u{CASES[i][1]}-keep{CASES[i][3]}"
)
def test_fully_connected(backend: str, index: int, mode: str) -> None:
    check_model(fc_model(*CASES[index], mode, ACTIVATIONS[index % 4], seed=index), backend, seed=index)


@pytest.mark.parametrize(
    "index", range(len(CASES)), ids=lambda i: f"{CASES[i][0]}-u{CASES[i][1]}-keep{CASES[i][3]}"
)
def test_fully_connected_gpu_family(gpu_family: str, index: int) -> None:
    """The float cases on the GPU-style GEMM (one-row and 4-row tiles), whatever the device's default."""
    check_model(fc_model(*CASES[index], "float32", ACTIVATIONS[index % 4], seed=index), gpu_family, seed=index)


@pytest.mark.parametrize("x_shape, units", [((1, 300), 1000), ((1, 20), 3), ((7, 33), 70)], ids=str)
def test_fully_connected_gpu_family_edges(gpu_family: str, x_shape: tuple, units: int) -> None:
    """A classifier head (one row, wide), a lone float4 of units, ragged rows and units."""
    check_model(fc_model(x_shape, units, x_shape[1], False, "float32", ir.Activation.NONE, seed=2), gpu_family)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("act", ACTIVATIONS, ids=lambda a: a.name)
def test_fully_connected_activations(backend: str, act: ir.Activation, mode: str) -> None:
    check_model(fc_model((5, 20), 9, 20, False, mode, act, seed=int(act)), backend)


@pytest.mark.parametrize("mode", MODES)
def test_fully_connected_no_bias(backend: str, mode: str) -> None:
    check_model(fc_model((2, 3, 12), 6, 12, True, mode, ir.Activation.NONE, bias=False), backend)


@pytest.mark.parametrize("bias", [True, False])
def test_fully_connected_runtime_weights(backend: str, bias: bool) -> None:
    """Weights (and bias) fed as graph inputs: one interpreter, two draws, nothing memoised from values."""
    ins = [{"shape": (4, 6), "dtype": np.float32}, {"shape": (3, 6), "dtype": np.float32}]
    if bias:
        ins.append({"shape": (3,), "dtype": np.float32})
    model = single_op(
        "FULLY_CONNECTED", ins, [{"shape": (4, 3), "dtype": np.float32}], FullyConnectedOptions()
    )
    delegates = [] if backend == "numpy" else [teflon_py.load_delegate(backend)]
    it = teflon_py.Interpreter(model_content=model, experimental_delegates=delegates)
    it.allocate_tensors()
    rng = np.random.default_rng(5)
    for _ in range(2):
        inputs = [rng.standard_normal(d["shape"]).astype(np.float32) for d in it.get_input_details()]
        for d, x in zip(it.get_input_details(), inputs):
            it.set_tensor(d["index"], x)
        it.invoke()
        assert_close(it.get_tensor(it.get_output_details()[0]["index"]), run_litert(model, inputs)[0], 1e-5)


@pytest.mark.parametrize("mode", MODES)
def test_fully_connected_wide(backend: str, mode: str) -> None:
    """Depth 1100: uint8's accumulation bound passes 2^24, so the exact float64 matmul path runs."""
    check_model(fc_model((2, 1100), 4, 1100, False, mode, ir.Activation.NONE, seed=9), backend)


def test_hybrid_weights_are_unsupported() -> None:
    """float32 input with int8 weights (LiteRT's hybrid kernel) is refused by name, not miscomputed."""
    w = np.ones((3, 6), np.int8)
    model = single_op(
        "FULLY_CONNECTED",
        [{"shape": (2, 6), "dtype": np.float32}, {"data": w, "dtype": np.int8, "quant": quantization(0.1)}],
        [{"shape": (2, 3), "dtype": np.float32}],
        FullyConnectedOptions(),
    )
    with pytest.raises(UnsupportedError, match=r"node 0 \(FULLY_CONNECTED\): hybrid"):
        run_teflon(model, [np.ones((2, 6), np.float32)])


@pytest.mark.parametrize("per_channel", [False, True], ids=["per_tensor", "per_channel"])
def test_int8_weight_zero_points(backend: str, per_channel: bool) -> None:
    """LiteRT subtracts a per-tensor int8 weight zero point, and ignores per-channel ones."""
    rng = np.random.default_rng(3)
    w = rng.integers(-120, 120, (4, 10), endpoint=True).astype(np.int8)
    scales = [0.004, 0.005, 0.003, 0.004] if per_channel else 0.004
    zero_points = [5, -3, 0, 9] if per_channel else 5
    bias_scale = np.float32(0.03) * np.float32(scales)
    ins = [
        {"shape": (3, 10), "dtype": np.int8, "quant": quantization(0.03, -7)},
        {"data": w, "dtype": np.int8, "quant": quantization(scales, zero_points, 0)},
        {
            "data": rng.integers(-2000, 2000, 4).astype(np.int32),
            "dtype": np.int32,
            "quant": quantization(bias_scale),
        },
    ]
    model = single_op(
        "FULLY_CONNECTED",
        ins,
        [{"shape": (3, 4), "dtype": np.int8, "quant": quantization(0.2, 1)}],
        FullyConnectedOptions(),
    )
    check_model(model, backend)


PROBES = [(np.int8, False), (np.int8, True), (np.uint8, False)]


@pytest.mark.parametrize("dtype, per_channel", PROBES, ids=["int8-pt", "int8-pc", "uint8-pt"])
def test_requantization_rounding(backend: str, dtype: type, per_channel: bool) -> None:
    """LiteRT's reference FC rounds double(acc) * double scale; no fixed-point multiplier matches."""
    model, x = probe_model(
        "FULLY_CONNECTED", dtype, per_channel, seed=10 + PROBES.index((dtype, per_channel))
    )
    check_model(model, backend, inputs=[x])


# -- where the double product's own rounding decides --------------------------------------------
#
# LiteRT's reference rounds double(acc) * scale, scale = double(in) * double(w) / double(out).
# Each (weight scale, accumulator, h) below, with NEAR_TIE_SCALES' input and output scales, has
# an exact product just below h + 1/2 that the double multiplication rounds onto h + 1/2, so C's
# round gives h + 1 where exact arithmetic (or any single rounding) gives h: only an integer
# requantization that reproduces the double rounding matches LiteRT there. Found by a search over
# float32 weight scales near 2^-13 (accumulators near 2^29 .. 2^30); each is re-verified below.
NEAR_TIE_SCALES = (0.00213, 0.731)
NEAR_TIES = [
    (0.00011721500050043687, 335243284, 114), (9.179929475067183e-05, 323381042, 86),
    (4.3970860133413225e-05, 745377371, 95), (9.613298607291654e-05, 276673181, 77),
    (4.2761475924635306e-05, 870792831, 108), (6.407911860151216e-05, 693571170, 129),
    (4.102759703528136e-05, 1083256941, 129), (0.00010667175229173154, 416637285, 129),
    (8.544074808014557e-05, 347447234, 86), (4.186436490272172e-05, 553346362, 67),
    (8.5787549323868e-05, 346042658, 86),
]


def test_near_ties_are_decided_by_the_double_rounding() -> None:
    from fractions import Fraction

    si, so = (np.float64(np.float32(v)) for v in NEAR_TIE_SCALES)
    for sw, acc, h in NEAR_TIES:
        scale = si * np.float64(np.float32(sw)) / so
        assert Fraction(acc) * Fraction(float(scale)) < Fraction(2 * h + 1, 2)  # exact: rounds to h
        assert float(acc) * float(scale) == h + 0.5  # double: a tie, rounds to h + 1


@pytest.mark.parametrize("dtype", [np.int8, np.uint8])
def test_requantization_near_ties(backend: str, dtype: type) -> None:
    """Accumulators on the near-ties (and one either side), per channel for int8, per tensor for
    uint8 (one near-tie per model, each in turn): bit-exact with LiteRT."""
    si, so = NEAR_TIE_SCALES
    zx, zo = (-7, -5) if dtype == np.int8 else (121, 3)
    offsets = np.arange(-2, 3)
    x = (zx + offsets).reshape(-1, 1).astype(dtype)
    cases = [NEAR_TIES] if dtype == np.int8 else [[t] for t in NEAR_TIES[:4]]
    for ties in cases:
        sw = np.array([t[0] for t in ties], np.float32)
        units = len(ties)
        if dtype == np.int8:
            w, wq = np.ones((units, 1), dtype), quantization(sw, 0, 0)
        else:
            w, wq = np.full((units, 1), 132, dtype), quantization(sw[0], 131)
        ins = [
            {"shape": x.shape, "dtype": dtype, "quant": quantization(si, zx)},
            {"data": w, "dtype": dtype, "quant": wq},
            {"data": np.array([t[1] for t in ties], np.int32), "dtype": np.int32,
             "quant": quantization(np.float32(si) * (sw if dtype == np.int8 else sw[0]))},
        ]
        model = single_op("FULLY_CONNECTED", ins, [{"shape": (x.shape[0], units), "dtype": dtype,
                                                    "quant": quantization(so, zo)}], FullyConnectedOptions())
        expected = run_litert(model, [x])[0]
        assert np.array_equal(expected[2].astype(int) - zo, [t[2] + 1 for t in ties])  # LiteRT: h + 1
        check_model(model, backend, inputs=[x])


@pytest.mark.parametrize("mode", ["int8", "int8_per_channel", "uint8"])
def test_quantized_fc_needs_no_fp64(mode: str) -> None:
    """A device without cl_khr_fp64 (most mobile GPUs, rusticl) still takes quantized FC: its
    requantization is integer arithmetic, and neither kernel source it compiles uses double."""
    import re

    from teflon_py.opencl.caps import Caps
    from teflon_py.opencl.registry import check_op
    from teflon_py.opencl.runtime.programs import load_source
    from teflon_py.tflite.reader import read_model

    graph = read_model(fc_model((3, 16), 8, 16, False, mode, ir.Activation.RELU)).main
    verdict = check_op(graph, graph.operations[0], Caps(name="a device without fp64", fp64=False))
    assert verdict.supported, verdict.reason
    for name in ("quant.cl", "qconv.cl"):
        code = re.sub(r"//[^\n]*", "", load_source(name))
        assert not re.search(r"\bdouble\b|cl_khr_fp64", code), name
