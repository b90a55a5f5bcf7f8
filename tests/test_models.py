"""Whole networks from ``teflon_py.zoo`` against LiteRT's reference kernels, on every backend.

int8 / uint8 outputs bit-exact, float32 within relative L2 1e-4 (the whole-model bound). Also: the
zoo is deterministic, its int8 models are calibrated (no saturation, close to the float model).
"""
from __future__ import annotations

import functools

import numpy as np
import pytest

import teflon_py
from teflon_py import zoo
from tests.harness import check_model, relative_l2

pytestmark = pytest.mark.model

MODEL_TOL = 1e-4
VARIANTS = {  # id -> (dtype, io)
    "float32": ("float32", None),
    "int8": ("int8", "int8"),
    "int8-uint8io": ("int8", "uint8"),
    "int8-floatio": ("int8", "float32"),
}


@functools.cache
def build(name: str, variant: str, size: int | None = None, alpha: float | None = None) -> bytes:
    dtype, io = VARIANTS[variant]
    kwargs = {} if size is None else {"input_size": size}
    if alpha is not None:
        kwargs["alpha"] = alpha
    return zoo.build(name, dtype=dtype, io=io, **kwargs)


@pytest.mark.parametrize("variant", list(VARIANTS))
@pytest.mark.parametrize("name", ["demo", "mobilenet_v1", "mobilenet_v2"])
def test_zoo_network_matches_litert(backend: str, name: str, variant: str) -> None:
    it = check_model(build(name, variant), backend, float_tol=MODEL_TOL)
    assert_delegated(it, backend)


@pytest.mark.parametrize("variant", ["float32", "int8"])
@pytest.mark.parametrize("name", ["mobilenet_v1", "mobilenet_v2"])
def test_full_size_network_matches_litert(backend: str, name: str, variant: str) -> None:
    """The 224x224, width 1.0 networks that ``teflon-py bench`` times."""
    it = check_model(build(name, variant, 224, 1.0), backend, float_tol=MODEL_TOL, seed=1)
    assert_delegated(it, backend)


def assert_delegated(it, backend: str) -> None:
    """On a delegate, every node of a zoo network runs there, as one partition."""
    if backend == "numpy":
        return
    placements = it.placements()
    assert [p.backend for p in placements] == [backend] * len(placements), placements
    assert len(it.partitions()) == 1


def test_zoo_is_deterministic() -> None:
    assert zoo.mobilenet_v2(dtype="int8") == build("mobilenet_v2", "int8")
    assert zoo.demo() == zoo.demo()
    assert zoo.demo(seed=1) != zoo.demo()


def test_architectures() -> None:
    def ops(model: bytes) -> list[str]:
        return [op.opcode for op in teflon_py.Interpreter(model_content=model).model.main.operations]

    v1 = ops(build("mobilenet_v1", "float32", 224, 1.0))
    assert v1.count("DEPTHWISE_CONV_2D") == 13 and v1.count("CONV_2D") == 14
    assert v1[-4:] == ["AVERAGE_POOL_2D", "RESHAPE", "FULLY_CONNECTED", "SOFTMAX"]
    v2 = ops(build("mobilenet_v2", "float32", 224, 1.0))
    assert v2.count("DEPTHWISE_CONV_2D") == 17 and v2.count("ADD") == 10 and v2.count("CONV_2D") == 35
    assert v2[-3:] == ["MEAN", "FULLY_CONNECTED", "SOFTMAX"]
    edges = ops(build("mobilenet_v2", "int8-floatio"))
    assert edges[0] == "QUANTIZE" and edges[-1] == "DEQUANTIZE"
    it = teflon_py.Interpreter(model_content=build("mobilenet_v1", "int8", 224, 1.0))
    (out,) = it.get_output_details()
    assert list(out["shape"]) == [1, 1000] and it.get_input_details()[0]["dtype"] == np.int8
    weights = next(d for d in it.get_tensor_details() if d["name"] == "block1/pointwise/weights")
    assert weights["quantization_parameters"]["scales"].size == 64  # per-channel


def _run(model: bytes, image: np.ndarray) -> teflon_py.Interpreter:
    it = teflon_py.Interpreter(model_content=model)
    it.allocate_tensors()
    it.set_tensor(it.get_input_details()[0]["index"], image)
    it.invoke()
    return it


@pytest.mark.parametrize("name", ["mobilenet_v1", "mobilenet_v2"])
def test_int8_models_are_calibrated(name: str) -> None:
    """No int8 activation saturates at the top of its range; the int8 twin tracks the float model."""
    rng = np.random.default_rng(42)
    image = rng.uniform(-1, 1, (1, 96, 96, 3)).astype(np.float32)
    q = _run(build(name, "int8-floatio"), image)
    for d in q.get_tensor_details():
        if d["dtype"] == np.int8 and not d["name"].endswith(("weights", "probabilities")):
            top = np.mean(q.get_tensor(d["index"]) == 127)
            assert top < 0.01, f"{d['name']}: {top:.1%} of values saturate at 127"
    f = _run(build(name, "float32"), image)
    p_q = q.get_tensor(q.get_output_details()[0]["index"])[0]
    p_f = f.get_tensor(f.get_output_details()[0]["index"])[0]
    assert np.argmax(p_q) == np.argmax(p_f)
    logits_q = next(d for d in q.get_tensor_details() if d["name"] == "logits")
    logits_f = next(d for d in f.get_tensor_details() if d["name"] == "logits")
    scale, zero_point = logits_q["quantization"]
    real = scale * (q.get_tensor(logits_q["index"]).astype(np.float32) - zero_point)
    err = relative_l2(real, f.get_tensor(logits_f["index"]))
    assert err < 0.1, f"int8 logits are {err:.1%} (relative L2) off the float model's"
