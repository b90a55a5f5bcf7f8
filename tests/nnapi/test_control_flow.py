"""IF and WHILE (feature level 4) from the spec's text: IF runs the referenced model its
condition picks; WHILE runs its body while its condition model says true, with input-output,
state-only and input-only values (m, k, n inferred from the body's counts), and stops with
MISSED_DEADLINE_TRANSIENT past its loop timeout. Expected values are derived in the tests."""
from __future__ import annotations

import numpy as np
import pytest

from teflon_py import nnapi
from teflon_py.nnapi import NNAPIError, OperationType, ResultCode
from teflon_py.nnapi import OperandType as T
from tests.nnapi.harness import Spec, check_vs, compile_for

F32 = T.TENSOR_FLOAT32


def _binary(op: OperationType, t: T = F32, dims=(2,)) -> nnapi.Model:
    s = Spec()
    a, b = s.input(t, list(dims)), s.input(t, list(dims))
    y = s.output(t, list(dims))
    s.op(op, [a, b, s.i32(0)], [y])
    return s.model()


def _ref(s: Spec, model: nnapi.Model) -> int:
    i = s.operand(T.MODEL)
    s.m.set_operand_value_from_model(i, model)
    return i


@pytest.mark.parametrize("t", [F32, T.TENSOR_FLOAT16])
@pytest.mark.parametrize("cond", [True, False])
def test_if_runs_the_chosen_model(backend: str, t: T, cond: bool) -> None:
    s = Spec()
    c = s.input(T.TENSOR_BOOL8, [1])
    a, b = s.input(t, [2]), s.input(t, [2])
    y = s.output(t, [2])
    s.op(OperationType.IF, [c, _ref(s, _binary(OperationType.ADD, t)), _ref(s, _binary(OperationType.MUL, t)), a, b],
         [y])
    x1, x2 = np.array([2.0, 3.0]), np.array([4.0, -5.0])
    want = (x1 + x2) if cond else (x1 * x2)
    dtype = np.float16 if t == T.TENSOR_FLOAT16 else np.float32
    check_vs(s.model(), [np.array([cond]), x1.astype(dtype), x2.astype(dtype)], [want.astype(dtype)], backend)


def _counter_models() -> tuple[nnapi.Model, nnapi.Model]:
    """cond(i, acc, limit) = i < limit; body(i, acc, limit) = (i + 1, acc * 2): m = 1 (i),
    k = 1 (acc, state only), n = 1 (limit, input only)."""
    cond = Spec()
    i, acc, limit = cond.input(F32, [1]), cond.input(F32, [1]), cond.input(F32, [1])
    out = cond.output(T.TENSOR_BOOL8, [1])
    cond.op(OperationType.LESS, [i, limit], [out])
    body = Spec()
    i, acc, limit = body.input(F32, [1]), body.input(F32, [1]), body.input(F32, [1])
    i2, acc2 = body.output(F32, [1]), body.output(F32, [1])
    body.op(OperationType.ADD, [i, body.const(F32, [1.0]), body.i32(0)], [i2])
    body.op(OperationType.MUL, [acc, body.const(F32, [2.0]), body.i32(0)], [acc2])
    return cond.model(), body.model()


def _while_model(cond: nnapi.Model, body: nnapi.Model) -> nnapi.Model:
    s = Spec()
    i, acc, limit = s.input(F32, [1]), s.input(F32, [1]), s.input(F32, [1])
    y = s.output(F32, [1])
    s.op(OperationType.WHILE, [_ref(s, cond), _ref(s, body), i, acc, limit], [y])
    return s.model()


@pytest.mark.parametrize(("start", "limit"), [(0.0, 5.0), (3.0, 3.0), (-2.5, 1.0)])
def test_while_counts(backend: str, start: float, limit: float) -> None:
    model = _while_model(*_counter_models())
    i = start
    while i < limit:  # the loop, written out: the input-output value is the counter
        i += 1.0
    check_vs(model, [np.array([start], np.float32), np.array([1.0], np.float32), np.array([limit], np.float32)],
             [np.array([i], np.float32)], backend)


def test_while_past_its_loop_timeout() -> None:
    cond, body = _counter_models()
    c = compile_for(_while_model(cond, body), "numpy")
    e = nnapi.Execution(c)
    e.set_loop_timeout(1_000_000)  # 1 ms
    for k, v in enumerate((0.0, 1.0, 1e9)):
        e.set_input(k, np.array([v], np.float32))
    with pytest.raises(NNAPIError, match="past its 0.001 s limit") as err:
        e.compute()
    assert err.value.code == ResultCode.MISSED_DEADLINE_TRANSIENT


def test_referenced_models_must_match_the_operation() -> None:
    s = Spec()
    c = s.input(T.TENSOR_BOOL8, [1])
    a = s.input(F32, [2])
    y = s.output(F32, [2])
    s.op(OperationType.IF, [c, _ref(s, _binary(OperationType.ADD)), _ref(s, _binary(OperationType.MUL)), a], [y])
    with pytest.raises(NNAPIError, match=r"operation 0 \(IF\): input 1: the then model takes 2 inputs") as err:
        s.model()
    assert err.value.code == ResultCode.BAD_DATA
    s = Spec()
    c = s.input(T.TENSOR_BOOL8, [1])
    a, b = s.input(T.TENSOR_INT32, [2]), s.input(T.TENSOR_INT32, [2])
    y = s.output(T.TENSOR_INT32, [2])
    s.op(OperationType.IF, [c, _ref(s, _binary(OperationType.ADD)), _ref(s, _binary(OperationType.MUL)), a, b], [y])
    with pytest.raises(NNAPIError, match="then model input 0: operand 0 .TENSOR_FLOAT32 .2.. .* differs from"):
        s.model()


def test_a_referenced_model_must_be_finished() -> None:
    s = Spec()
    i = s.operand(T.MODEL)
    with pytest.raises(NNAPIError, match="the referenced model is not finished") as err:
        s.m.set_operand_value_from_model(i, nnapi.Model())
    assert err.value.code == ResultCode.BAD_STATE
