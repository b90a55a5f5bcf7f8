"""XNNPACK's float32 requantization (``ops.common.Requantization.FLOAT32``, what ExecuTorch's
int8 programs compute) on CONV_2D, DEPTHWISE_CONV_2D and FULLY_CONNECTED (and MEAN, at the end): on every backend the
outputs equal an independent rendering of the rule (the exact integer accumulator, from the
TFLite-rule model's own arithmetic, then ``float32(acc) * float32(s_in * s_w / s_out)``, clamped,
halves to even), and the OpenCL delegate runs the nodes. LiteRT computes TFLite's rule, so its
outputs may differ by one step where the two roundings part; more is a bug."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import teflon_py
from teflon_py import ir
from teflon_py.executor import GraphExecutor
from teflon_py.ops.common import Requantization
from teflon_py.tflite.reader import read_model
from tests.harness import quantization, random_input, run_litert
from tests.ops.test_conv import CONV_CASES, DEPTHWISE_CASES, conv_model, depthwise_model
from tests.ops.test_fully_connected import CASES as FC_CASES
from tests.ops.test_fully_connected import fc_model
from tests.ops.test_reduce import mean_model

ACTS = [ir.Activation.NONE, ir.Activation.RELU6]


def _float32_rule(model: bytes) -> ir.Model:
    m = read_model(model)
    g = m.main
    g.operations = [dataclasses.replace(op, attrs=dataclasses.replace(op.attrs, requantization=Requantization.FLOAT32))
                    for op in g.operations]
    return m


def _run(model: ir.Model, inputs: list[np.ndarray], backend: str) -> tuple[np.ndarray, GraphExecutor]:
    delegates = [] if backend == "numpy" else [teflon_py.load_delegate(backend)]
    g = model.main
    ex = GraphExecutor(model, g, delegates)
    for t, x in zip(g.inputs, inputs):
        ex.values[t] = x
    ex.run()
    return ex.values[g.outputs[0]], ex


def _accumulators(model: bytes, inputs: list[np.ndarray]) -> np.ndarray:
    """The exact int32 accumulators of the op's (single) output: the float32 model with the same
    integer values (x - zp_x, w - zp_w, bias as stored) computes them exactly in float64."""
    m = read_model(model)
    g, op = m.main, m.main.operations[0]
    x, w = g.tensors[op.inputs[0]], g.tensors[op.inputs[1]]
    xs = (inputs[0].astype(np.float64) - x.zero_point)
    ws = w.data.astype(np.float64)
    if w.quantization.zero_point.size == 1:
        ws = ws - int(w.quantization.zero_point[0])
    b = g.tensors[op.inputs[2]].data.astype(np.float64) if len(op.inputs) > 2 and op.inputs[2] >= 0 else None
    return _float64_kernel(op.name, op.attrs, xs, ws, b)


def _float64_kernel(name: str, a: object, x: np.ndarray, w: np.ndarray, b: np.ndarray | None) -> np.ndarray:
    """The op's sums in float64 (exact for these sizes), by plain NumPy loops of our own."""
    if name == "FULLY_CONNECTED":
        rows = x.reshape(-1, w.shape[1])
        acc = rows @ w.T
        return acc + (b if b is not None else 0)
    from teflon_py.ops.common import window

    n, ih, iw, c = x.shape
    kh, kw = w.shape[1], w.shape[2]
    wh = window(ih, kh, a.strides[0], a.dilations[0], a.padding, 0)
    ww = window(iw, kw, a.strides[1], a.dilations[1], a.padding, 1)
    xp = np.pad(x, ((0, 0), (wh.before, wh.after + kh * a.dilations[0]), (ww.before, ww.after + kw * a.dilations[1]),
                    (0, 0)))
    depthwise = name == "DEPTHWISE_CONV_2D"
    oc = w.shape[3] if depthwise else w.shape[0]
    out = np.zeros((n, wh.out, ww.out, oc))
    for i in range(kh):
        for j in range(kw):
            patch = xp[:, i * a.dilations[0]: i * a.dilations[0] + wh.out * a.strides[0]: a.strides[0],
                       j * a.dilations[1]: j * a.dilations[1] + ww.out * a.strides[1]: a.strides[1], :]
            if depthwise:
                out += np.repeat(patch, oc // c, axis=3) * w[0, i, j, :]
            else:
                out += patch @ w[:, i, j, :].T
    return out + (b if b is not None else 0)


def _expected(model: bytes, inputs: list[np.ndarray]) -> np.ndarray:
    m = read_model(model)
    g, op = m.main, m.main.operations[0]
    x, w, y = g.tensors[op.inputs[0]], g.tensors[op.inputs[1]], g.tensors[op.outputs[0]]
    acc = _accumulators(model, inputs).astype(np.int64).astype(np.int32)
    scale = (np.float32(x.scale) * w.quantization.scale.astype(np.float32) / np.float32(y.scale)).astype(np.float32)
    lo, hi = op.attrs.activation.range(y.dtype, y.scale, y.zero_point)
    v = acc.astype(np.float32) * scale
    v = np.minimum(np.maximum(v, np.float32(lo - y.zero_point)), np.float32(hi - y.zero_point))
    return (np.rint(v).astype(np.int64) + y.zero_point).astype(y.dtype)


def _check(model: bytes, backend: str, seed: int) -> None:
    from ai_edge_litert.interpreter import Interpreter as LiteRT

    rng = np.random.default_rng(seed)
    inputs = [random_input(d, rng) for d in LiteRT(model_content=model).get_input_details()]
    ours, ex = _run(_float32_rule(model), inputs, backend)
    expected = _expected(model, inputs)
    diff = np.flatnonzero(ours.reshape(-1) != expected.reshape(-1))
    assert diff.size == 0, f"{diff.size} of {ours.size} differ from the float32 rule; first at {diff[0]}"
    litert = run_litert(model, inputs)[0]
    assert np.abs(ours.astype(np.int64) - litert).max() <= 1
    if backend != "numpy":
        assert [p.backend for p in ex.placements] == [backend], ex.placements


@pytest.mark.parametrize("mode", ["int8", "int8_per_channel"])
@pytest.mark.parametrize("index", range(0, len(CONV_CASES), 2), ids=lambda i: str(CONV_CASES[i]))
def test_conv_2d(backend: str, index: int, mode: str) -> None:
    _check(conv_model(CONV_CASES[index], mode, ACTS[index % 2], seed=index), backend, index)


@pytest.mark.parametrize("mode", ["int8", "int8_per_channel"])
@pytest.mark.parametrize("index", range(len(DEPTHWISE_CASES)), ids=lambda i: str(DEPTHWISE_CASES[i]))
def test_depthwise_conv_2d(backend: str, index: int, mode: str) -> None:
    _check(depthwise_model(DEPTHWISE_CASES[index], mode, ACTS[index % 2], seed=index), backend, index)


@pytest.mark.parametrize("mode", ["int8", "int8_per_channel"])
@pytest.mark.parametrize("index", range(len(FC_CASES)), ids=lambda i: f"{FC_CASES[i][0]}-u{FC_CASES[i][1]}")
def test_fully_connected(backend: str, index: int, mode: str) -> None:
    _check(fc_model(*FC_CASES[index], mode, ACTS[index % 2], seed=index), backend, index)


def test_fully_connected_no_bias(backend: str) -> None:
    _check(fc_model((2, 3, 12), 6, 12, True, "int8_per_channel", ir.Activation.NONE, bias=False), backend, 3)


@pytest.mark.parametrize("shape,axes", [((1, 5, 6, 4), [1, 2]), ((2, 4, 5, 20), [1, 2]), ((1, 9, 7, 48), [1, 2]),
                                        ((1, 3, 33, 40), [2])], ids=["4ch", "20ch", "48ch", "over-w"])
def test_mean(backend: str, shape: tuple, axes: list) -> None:
    """XNNPACK's global average pooling rule: the wrapping int32 sum less count * zero point, times
    float32(s_in / (s_out * count)), clamped, halves to even; 16+ channels after the axes run
    OpenCL's 16-wide qmean_mid, fewer the one-output-per-step qmean."""
    xq, yq = quantization(0.05, -3), quantization(0.011, 7)
    model = mean_model(shape, axes, True, np.int8, xq, yq)
    x = np.random.default_rng(len(axes) + shape[-1]).integers(-128, 128, shape).astype(np.int8)
    ours, ex = _run(_float32_rule(model), [x], backend)
    count = int(np.prod([shape[a] for a in axes]))
    sums = x.astype(np.int64).sum(axis=tuple(axes), keepdims=True) - (-3) * count
    scale = np.float32(np.float32(0.05) / (np.float32(0.011) * np.float32(count)))
    v = np.clip(sums.astype(np.float32) * scale, np.float32(-128 - 7), np.float32(127 - 7))
    np.testing.assert_array_equal(ours, (np.rint(v).astype(np.int64) + 7).astype(np.int8))
    if backend != "numpy":
        assert [p.backend for p in ex.placements] == [backend], ex.placements


@pytest.mark.parametrize("producer, act", [("conv", "swish"), ("depthwise", "hard_swish"), ("fc", "logistic"),
                                           ("conv", "tanh")])
def test_activation_table_after_the_float32_rule(device, producer: str, act: str) -> None:
    """An 8-bit activation folded into a producer that requantizes by XNNPACK's float32 rule (the
    table after q_requantize_float16, as ExecuTorch's int8 programs would run it): the OpenCL
    partition, activations folded, equals the NumPy fallback running every op apart."""
    from tests.test_opencl_quantized import table_block

    m = read_model(table_block(producer, act, np.int8))
    g = m.main
    g.operations = [dataclasses.replace(op, attrs=dataclasses.replace(op.attrs, requantization=Requantization.FLOAT32))
                    if hasattr(op.attrs, "requantization") else op for op in g.operations]
    x = np.random.default_rng(3).integers(-128, 128, g.tensors[g.inputs[0]].shape).astype(np.int8)
    ours, ex = _run(m, [x], "opencl")
    numpy, _ = _run(m, [x], "numpy")
    np.testing.assert_array_equal(ours, numpy)
    assert {(p.backend, p.partition) for p in ex.placements} == {("opencl", 0)}, ex.placements
    (step,) = [s for s in ex.steps if getattr(s, "compiled", None) is not None]
    acts = {op.index for op in g.operations if op.name in ("LOGISTIC", "TANH", "HARD_SWISH", "MUL")}
    assert acts <= set(step.compiled.stats["folded"])
