"""The NNAPI conformance harness: build a model in a few lines, run it on a backend, compare.

``Spec`` writes an ``nnapi.Model`` operand by operand; ``run(model, inputs, backend)`` compiles
it for "numpy" (no delegates) or a delegate name and computes it; ``check_vs_tflite`` compares
with the same graph built as a ``.tflite`` and run by LiteRT's reference kernels
(``tests.harness``: integers bit-exact, floats within relative L2), ``check_vs`` with outputs
a test derives itself. For a delegate backend both then check the placement: an op-layer op the
backend registers a lowering for must run there, unless the test names the refusal.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest

import teflon_py
from teflon_py import nnapi
from teflon_py.nnapi import OperandType as T
from tests.harness import assert_close, check_placement, run_litert

#: NumPy dtype of each tensor type, for tests making inputs
DTYPES = {T.TENSOR_FLOAT32: np.float32, T.TENSOR_FLOAT16: np.float16, T.TENSOR_INT32: np.int32,
          T.TENSOR_QUANT8_ASYMM: np.uint8, T.TENSOR_QUANT8_ASYMM_SIGNED: np.int8, T.TENSOR_BOOL8: np.bool_,
          T.TENSOR_QUANT8_SYMM: np.int8, T.TENSOR_QUANT16_SYMM: np.int16, T.TENSOR_QUANT16_ASYMM: np.uint16,
          T.TENSOR_QUANT8_SYMM_PER_CHANNEL: np.int8}


class Spec:
    """An NNAPI model written operand by operand, finished by ``model()``."""

    def __init__(self, relaxed: bool = False) -> None:
        self.m = nnapi.Model()
        self.inputs: list[int] = []
        self.outputs: list[int] = []
        self.relaxed = relaxed

    def operand(self, type: T, dims: Sequence[int] | None = None, scale: float = 0.0, zero_point: int = 0,
                channel: tuple[Sequence[float], int] | None = None) -> int:
        i = self.m.add_operand(type, dims, scale, zero_point)
        if channel is not None:
            self.m.set_operand_symm_per_channel_quant_params(i, *channel)
        return i

    def input(self, type: T, dims: Sequence[int] | None, scale: float = 0.0, zero_point: int = 0) -> int:
        i = self.operand(type, dims, scale, zero_point)
        self.inputs.append(i)
        return i

    def output(self, type: T, dims: Sequence[int] | None, scale: float = 0.0, zero_point: int = 0) -> int:
        i = self.operand(type, dims, scale, zero_point)
        self.outputs.append(i)
        return i

    def const(self, type: T, value: Any, dims: Sequence[int] | None = None, scale: float = 0.0,
              zero_point: int = 0, channel: tuple[Sequence[float], int] | None = None) -> int:
        """A constant tensor (``dims`` default: the value's shape)."""
        arr = np.asarray(value, DTYPES[type])
        i = self.operand(type, arr.shape if dims is None else dims, scale, zero_point, channel)
        self.m.set_operand_value(i, arr)
        return i

    def scalar(self, type: T, value: Any) -> int:
        i = self.m.add_operand(type)
        self.m.set_operand_value(i, value)
        return i

    def i32(self, value: int) -> int:
        return self.scalar(T.INT32, value)

    def f32(self, value: float) -> int:
        return self.scalar(T.FLOAT32, value)

    def boolean(self, value: bool) -> int:
        return self.scalar(T.BOOL, value)

    def omitted(self, type: T, dims: Sequence[int] | None = None) -> int:
        i = self.m.add_operand(type, dims)
        self.m.set_operand_value(i, None)
        return i

    def temp(self, type: T, dims: Sequence[int] | None, scale: float = 0.0, zero_point: int = 0) -> int:
        return self.operand(type, dims, scale, zero_point)

    def op(self, op_type: nnapi.OperationType, inputs: Sequence[int], outputs: Sequence[int]) -> int:
        return self.m.add_operation(op_type, list(inputs), list(outputs))

    def model(self) -> nnapi.Model:
        self.m.identify_inputs_and_outputs(self.inputs, self.outputs)
        if self.relaxed:
            self.m.relax_computation_float32_to_float16(True)
        self.m.finish()
        return self.m


def compile_for(model: nnapi.Model, backend: str) -> nnapi.Compilation:
    c = nnapi.Compilation(model, delegates=[] if backend == "numpy" else [teflon_py.load_delegate(backend)])
    c.finish()
    return c


def run(model: nnapi.Model, inputs: Sequence[Any], backend: str = "numpy"
        ) -> tuple[list[np.ndarray], nnapi.Compilation]:
    """Compile ``model`` for ``backend``, compute it on ``inputs``; its outputs and compilation."""
    c = compile_for(model, backend)
    e = nnapi.Execution(c)
    for k, x in enumerate(inputs):
        e.set_input(k, x)
    e.compute()
    return [e.get_output(k) for k in range(len(model.outputs))], c


def check_vs(model: nnapi.Model, inputs: Sequence[Any], expected: Sequence[np.ndarray], backend: str, *,
             float_tol: float = 1e-5, elem_tol: float | None = None, refuses: str | Sequence[str] = ()
             ) -> list[np.ndarray]:
    """Compute ``model`` on ``backend`` and compare with ``expected`` (integers exactly)."""
    actual, c = run(model, inputs, backend)
    assert len(actual) == len(expected)
    for k, (a, e) in enumerate(zip(actual, expected)):
        e = e if isinstance(e, np.ndarray) else np.asarray(e, a.dtype)  # a literal takes the output's dtype
        assert_close(a, e, float_tol, f"output {k}", elem_tol=elem_tol)
    if backend != "numpy":
        check_placement(c.interpreter(), backend, refuses)
    return actual


def check_vs_tflite(model: nnapi.Model, tflite: bytes, inputs: Sequence[Any], backend: str, *,
                    float_tol: float = 1e-5, elem_tol: float | None = None,
                    refuses: str | Sequence[str] = ()) -> list[np.ndarray]:
    """Compare with LiteRT's reference kernels running ``tflite`` (the same graph written as a
    ``.tflite`` by the test) on the same inputs."""
    expected = run_litert(tflite, [np.asarray(x) for x in inputs])
    return check_vs(model, inputs, expected, backend, float_tol=float_tol, elem_tol=elem_tol, refuses=refuses)


def rng_array(rng: np.random.Generator, type: T, dims: Sequence[int]) -> np.ndarray:
    """Random test data for a tensor type: N(0, 1) floats, full-range integers, random booleans."""
    dtype = np.dtype(DTYPES[type])
    if dtype == np.bool_:
        return rng.integers(0, 2, dims).astype(bool)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        lo, hi = max(info.min, -1000), min(info.max, 1000)
        return rng.integers(lo, hi, dims, endpoint=True).astype(dtype)
    return rng.standard_normal(dims).astype(dtype)


def expect_bad_data(what: Spec | Callable[[], object], *fragments: str) -> None:
    """Finishing ``what``'s model (a Spec), or calling ``what``, must fail with BAD_DATA, its
    message holding every fragment."""
    with pytest.raises(nnapi.NNAPIError) as e:
        what.model() if isinstance(what, Spec) else what()
    assert e.value.code == nnapi.ResultCode.BAD_DATA, str(e.value)
    for f in fragments:
        assert f in str(e.value), str(e.value)
