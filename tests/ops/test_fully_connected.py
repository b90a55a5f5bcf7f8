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
    ((1, 40), 100, 40, False),  # one row, many units: OpenCL's GEMV kernel, partial last block
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
