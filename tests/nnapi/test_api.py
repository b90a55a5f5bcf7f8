"""The NNAPI API itself: enums, operand rules, the model / compilation / execution state machine,
unspecified dimensions, values read from inputs, optional inputs, output buffers, placements.
Every refusal is an ``NNAPIError`` with the code NNAPI's runtime returns at that call."""
from __future__ import annotations

import numpy as np
import pytest

import teflon_py
from teflon_py import nnapi
from teflon_py.nnapi import FuseCode, NNAPIError, OperationType, PaddingCode, ResultCode
from teflon_py.nnapi import OperandType as T
from tests.nnapi.harness import Spec, run

BAD_DATA, BAD_STATE = ResultCode.BAD_DATA, ResultCode.BAD_STATE


def raises(code: ResultCode, match: str = ""):
    """pytest.raises for an NNAPIError with ``code`` and a message containing ``match``."""

    class _Check:
        def __enter__(self):
            self.ctx = pytest.raises(NNAPIError)
            self.info = self.ctx.__enter__()
            return self.info

        def __exit__(self, *exc):
            handled = self.ctx.__exit__(*exc)
            assert self.info.value.code == code, f"{self.info.value.code.name} != {code.name}: {self.info.value}"
            assert match in str(self.info.value), f"{match!r} not in {str(self.info.value)!r}"
            return handled

    return _Check()


def add_model(dims=(2, 2), fuse: int | None = 0, out_dims=None) -> tuple[nnapi.Model, list[int]]:
    """a + b with FuseCode ``fuse`` (None: the fuse code is a model input), unfinished."""
    m = nnapi.Model()
    a = m.add_operand(T.TENSOR_FLOAT32, list(dims))
    b = m.add_operand(T.TENSOR_FLOAT32, list(dims))
    f = m.add_operand(T.INT32)
    if fuse is not None:
        m.set_operand_value(f, fuse)
    y = m.add_operand(T.TENSOR_FLOAT32, list(dims if out_dims is None else out_dims))
    m.add_operation(OperationType.ADD, [a, b, f], [y])
    m.identify_inputs_and_outputs([a, b] + ([] if fuse is not None else [f]), [y])
    return m, [a, b, f, y]


# -- enums ------------------------------------------------------------------------------------

def test_enums_carry_the_spec_codes_and_ndk_names() -> None:
    assert T.TENSOR_QUANT8_ASYMM_SIGNED == 14 and T.MODEL == 15 and T.TENSOR_QUANT8_SYMM_PER_CHANNEL == 11
    assert OperationType.CONV_2D == 3 and OperationType.RESIZE_NEAREST_NEIGHBOR == 94
    assert OperationType.REVERSE == 105 and len({int(o) for o in OperationType}) == 106
    assert FuseCode.FUSED_RELU6 == FuseCode.RELU6 == 3
    assert PaddingCode.PADDING_SAME == PaddingCode.SAME == 1 and PaddingCode.VALID == 2
    assert nnapi.Preference.FAST_SINGLE_ANSWER == nnapi.Preference.PREFER_FAST_SINGLE_ANSWER == 1
    assert nnapi.Priority.HIGH == 110
    assert ResultCode.BAD_DATA == 4 and ResultCode.OUTPUT_INSUFFICIENT_SIZE == 8


def test_every_operation_of_the_spec_is_registered() -> None:
    from teflon_py.nnapi.registry import OPERATIONS

    missing = [o.name for o in OperationType if o not in OPERATIONS or OPERATIONS[o].lower is None
               or OPERATIONS[o].signature is None]
    assert not missing, f"operations without a signature and lowering: {missing}"


# -- operands ---------------------------------------------------------------------------------

@pytest.mark.parametrize(("args", "match"), [
    ((T.INT32, [1]), "scalar type INT32 takes no dimensions"),
    ((T.TENSOR_QUANT8_ASYMM, [2], 0.0, 0), "needs a scale > 0"),
    ((T.TENSOR_QUANT8_ASYMM, [2], 0.5, 256), "zero point 256 is outside [0, 255]"),
    ((T.TENSOR_QUANT8_ASYMM_SIGNED, [2], 0.5, 128), "zero point 128 is outside [-128, 127]"),
    ((T.TENSOR_QUANT8_SYMM, [2], 0.5, 1), "zero point 1 is outside [0, 0]"),
    ((T.TENSOR_QUANT16_ASYMM, [2], 0.5, 70000), "outside [0, 65535]"),
    ((T.TENSOR_QUANT8_SYMM_PER_CHANNEL, [2], 0.5, 0), "takes scale 0 and zero point 0"),
    ((T.TENSOR_FLOAT32, [2], 0.5, 0), "takes scale 0 and zero point 0"),
    ((T.TENSOR_FLOAT32, [2, -1]), "must not be negative"),
    ((99, [2]), "99 is not an OperandType"),
])
def test_add_operand_rules(args, match) -> None:
    with raises(BAD_DATA, match):
        nnapi.Model().add_operand(*args)


def test_operand_values() -> None:
    m = nnapi.Model()
    t = m.add_operand(T.TENSOR_FLOAT32, [2, 2])
    with raises(BAD_DATA, "holds 4 elements, got 3"):
        m.set_operand_value(t, [1.0, 2.0, 3.0])
    m.set_operand_value(t, np.arange(4, dtype=np.float32))  # a flat value fills the dimensions
    assert m.operands[t].value.shape == (2, 2)
    u = m.add_operand(T.TENSOR_FLOAT32, [0, 2])
    with raises(BAD_DATA, "a constant's dimensions must all be known"):
        m.set_operand_value(u, np.zeros((1, 2), np.float32))
    q = m.add_operand(T.TENSOR_QUANT8_ASYMM, [2], 0.5, 1)
    with raises(BAD_DATA, "the float64 values given do not fit"):
        m.set_operand_value(q, [1.5, 2.0])
    i = m.add_operand(T.INT32)
    with raises(BAD_DATA, "takes one scalar"):
        m.set_operand_value(i, [1, 2])
    with raises(BAD_DATA, "is not an operand index"):
        m.set_operand_value(17, 1)
    sub = m.add_operand(T.MODEL)
    with raises(BAD_DATA, "use set_operand_value_from_model"):
        m.set_operand_value(sub, 1)


def test_per_channel_quant_params() -> None:
    m = nnapi.Model()
    w = m.add_operand(T.TENSOR_QUANT8_SYMM_PER_CHANNEL, [3, 1, 1, 2])
    f = m.add_operand(T.TENSOR_FLOAT32, [3])
    with raises(BAD_DATA, "is not TENSOR_QUANT8_SYMM_PER_CHANNEL"):
        m.set_operand_symm_per_channel_quant_params(f, [1.0, 1.0, 1.0], 0)
    with raises(BAD_DATA, "2 scales for channel dimension 0 of size 3"):
        m.set_operand_symm_per_channel_quant_params(w, [1.0, 1.0], 0)
    with raises(BAD_DATA, "channel dimension 4 is outside"):
        m.set_operand_symm_per_channel_quant_params(w, [1.0, 1.0, 1.0], 4)
    with raises(BAD_DATA, "every scale must be > 0"):
        m.set_operand_symm_per_channel_quant_params(w, [1.0, 0.0, 1.0], 0)
    m.set_operand_symm_per_channel_quant_params(w, [0.5, 0.25, 1.0], 0)
    assert m.operands[w].quantization().per_channel


# -- operations and the model's state -----------------------------------------------------------

def test_add_operation_checks_counts_and_types_at_once() -> None:
    m = nnapi.Model()
    a = m.add_operand(T.TENSOR_FLOAT32, [2])
    i = m.add_operand(T.INT32)
    q = m.add_operand(T.TENSOR_QUANT8_ASYMM, [2], 0.5, 0)
    y = m.add_operand(T.TENSOR_FLOAT32, [2])
    with raises(BAD_DATA, "operation 0 (ADD): takes 3 inputs, got 2"):
        m.add_operation(OperationType.ADD, [a, a], [y])
    with raises(BAD_DATA, "operation 0 (ADD): input 1 has type TENSOR_QUANT8_ASYMM, the operation takes "
                          "TENSOR_FLOAT32 there"):
        m.add_operation(OperationType.ADD, [a, q, i], [y])
    with raises(BAD_DATA, "input 0 of type INT32 is not supported"):
        m.add_operation(OperationType.ADD, [i, a, i], [y])
    with raises(BAD_DATA, "is not an OperationType"):
        m.add_operation(1234, [a, a, i], [y])
    with raises(BAD_DATA, "is not an operand index"):
        m.add_operation(OperationType.ADD, [a, a, 99], [y])
    m.set_operand_value(i, 0)
    with raises(BAD_DATA, "output 0 is operand 1 (INT32 []), a constant"):
        m.add_operation(OperationType.ADD, [a, a, i], [i])
    assert m.add_operation(OperationType.ADD, [a, a, i], [y]) == 0


def test_model_state_machine() -> None:
    m, (a, b, f, y) = add_model()
    m.finish()
    with raises(BAD_STATE, "finish: the model is finished"):
        m.finish()
    for call, args in ((m.add_operand, (T.INT32,)), (m.set_operand_value, (f, 1)),
                       (m.add_operation, (OperationType.ADD, [a, b, f], [y])),
                       (m.identify_inputs_and_outputs, ([a], [y])),
                       (m.relax_computation_float32_to_float16, (True,))):
        with raises(BAD_STATE, "the model is finished"):
            call(*args)


def test_finish_checks_the_graph() -> None:
    m = nnapi.Model()
    with raises(BAD_DATA, "identify_inputs_and_outputs was not called"):
        m.finish()
    m2 = nnapi.Model()
    x = m2.add_operand(T.TENSOR_FLOAT32, [2])
    z = m2.add_operand(T.TENSOR_FLOAT32, [2])
    t = m2.add_operand(T.TENSOR_FLOAT32, [2])
    f2 = m2.add_operand(T.INT32)
    m2.set_operand_value(f2, 0)
    m2.add_operation(OperationType.ADD, [x, t, f2], [z])
    m2.add_operation(OperationType.ADD, [x, z, f2], [t])
    m2.identify_inputs_and_outputs([x], [z])
    with raises(BAD_DATA, "the operations form a cycle"):
        m2.finish()
    m3 = nnapi.Model()
    x = m3.add_operand(T.TENSOR_FLOAT32, [2])
    z = m3.add_operand(T.TENSOR_FLOAT32, [2])
    f3 = m3.add_operand(T.INT32)
    m3.set_operand_value(f3, 0)
    m3.add_operation(OperationType.ADD, [x, x, f3], [z])
    m3.add_operation(OperationType.MUL, [x, x, f3], [z])
    m3.identify_inputs_and_outputs([x], [z])
    with raises(BAD_DATA, "operand 1 is computed by operation 0 (ADD) and by operation 1 (MUL)"):
        m3.finish()
    m4 = nnapi.Model()
    x = m4.add_operand(T.TENSOR_FLOAT32, [2])
    w = m4.add_operand(T.TENSOR_FLOAT32, [2])
    m4.identify_inputs_and_outputs([x], [w])
    with raises(BAD_DATA, "output 0 (operand 1 (TENSOR_FLOAT32 [2])) is computed by no operation"):
        m4.finish()


def test_identify_refuses_constants_and_overlaps() -> None:
    m, (a, _, f, y) = add_model()
    with raises(BAD_DATA, "input 0 is operand 2 (INT32 []), which has a value"):
        m.identify_inputs_and_outputs([f], [y])
    with raises(BAD_DATA, "operand 0 is both an input and an output"):
        m.identify_inputs_and_outputs([a], [a])


def test_finish_applies_the_operations_rules() -> None:
    m, _ = add_model(fuse=7)
    with raises(BAD_DATA, "operation 0 (ADD): input 2: 7 is not a FuseCode"):
        m.finish()
    m, _ = add_model(out_dims=(2, 3))
    with raises(BAD_DATA, "operation 0 (ADD): output 0: the model declares dimensions [2, 3], the operation "
                          "computes [2, 2]"):
        m.finish()


# -- compilation and execution ------------------------------------------------------------------

def test_compilation_state_machine() -> None:
    m, _ = add_model()
    with raises(BAD_STATE, "the model is not finished"):
        nnapi.Compilation(m)
    m.finish()
    c = nnapi.Compilation(m)
    with raises(BAD_DATA, "is not a Preference"):
        c.set_preference(7)
    c.set_preference(nnapi.Preference.SUSTAINED_SPEED)
    c.set_priority(nnapi.Priority.LOW)
    with raises(BAD_STATE, "the compilation is not finished"):
        nnapi.Execution(c)
    c.finish()
    with raises(BAD_STATE, "the compilation is finished"):
        c.finish()
    with raises(BAD_STATE, "the compilation is finished"):
        c.set_preference(nnapi.Preference.LOW_POWER)


def test_execution_state_machine() -> None:
    m, _ = add_model()
    m.finish()
    c = nnapi.Compilation(m)
    c.finish()
    e = nnapi.Execution(c)
    x = np.array([[1.0, -2.0], [3.0, 4.0]], np.float32)
    e.set_input(0, x)
    with raises(BAD_STATE, "compute: input 1 is not set"):
        e.compute()
    with raises(BAD_DATA, "set_input: 2 is not a model input position"):
        e.set_input(2, x)
    with raises(BAD_DATA, "holds 4 elements, got 3"):
        e.set_input(1, np.ones(3, np.float32))
    with raises(BAD_STATE, "the execution has not computed"):
        e.get_output(0)
    e.set_input(1, x)
    e.compute()
    np.testing.assert_array_equal(e.get_output(0), x + x)
    assert e.get_output_operand_dimensions(0) == [2, 2] and e.get_output_operand_rank(0) == 2
    with raises(BAD_STATE, "the execution has run"):
        e.compute()
    with raises(BAD_STATE, "the execution has run"):
        e.set_input(0, x)


def test_a_reusable_execution_runs_again() -> None:
    m, _ = add_model()
    m.finish()
    c = nnapi.Compilation(m)
    c.finish()
    e = nnapi.Execution(c)
    e.set_reusable(True)
    for k in range(3):
        x = np.full((2, 2), k, np.float32)
        e.set_input(0, x)
        e.set_input(1, x)
        e.compute()
        np.testing.assert_array_equal(e.get_output(0), 2 * x)
    assert len(c._prepared) == 1  # the plan made at finish serves every execution


def test_output_buffer_too_small() -> None:
    m, _ = add_model()
    m.finish()
    c = nnapi.Compilation(m)
    c.finish()
    e = nnapi.Execution(c)
    e.set_input(0, np.ones((2, 2), np.float32))
    e.set_input(1, np.ones((2, 2), np.float32))
    e.set_output(0, np.zeros(3, np.float32))
    with raises(ResultCode.OUTPUT_INSUFFICIENT_SIZE, "output 0 needs 4 elements of float32"):
        e.compute()
    assert e.get_output_operand_dimensions(0) == [2, 2]
    buf = np.zeros((2, 2), np.float32)
    e2 = nnapi.Execution(c)
    e2.set_input(0, np.ones((2, 2), np.float32))
    e2.set_input(1, np.ones((2, 2), np.float32))
    e2.set_output(0, buf)
    e2.compute()
    np.testing.assert_array_equal(buf, np.full((2, 2), 2.0, np.float32))


def test_unspecified_dimensions_are_resolved_per_execution(backend: str) -> None:
    m, _ = add_model(dims=(0, 2), out_dims=(0, 0))
    m.finish()
    assert m.static_lowering is None
    c = nnapi.Compilation(m, delegates=[] if backend == "numpy" else [teflon_py.load_delegate(backend)])
    c.finish()
    for rows in (1, 5, 1):
        e = nnapi.Execution(c)
        x = np.arange(rows * 2, dtype=np.float32).reshape(rows, 2)
        e.set_input(0, x)
        e.set_input(1, x)
        e.compute()
        np.testing.assert_array_equal(e.get_output(0), x + x)
        assert e.get_output_operand_dimensions(0) == [rows, 2]
    assert len(c._prepared) == 2  # one plan per distinct shape
    e = nnapi.Execution(c)
    with raises(BAD_DATA, "does not admit an array of shape (3, 3)"):
        e.set_input(0, np.ones((3, 3), np.float32))


def test_a_scalar_given_at_execution_specialises_the_graph() -> None:
    m, _ = add_model(fuse=None)
    m.finish()
    assert m.static_lowering is None  # the graph depends on the fuse code's value
    c = nnapi.Compilation(m)
    c.finish()
    x = np.array([[-3.0, 0.5], [2.0, 7.0]], np.float32)
    for fuse, want in ((FuseCode.NONE, 2 * x), (FuseCode.RELU1, np.clip(2 * x, -1, 1)), (FuseCode.NONE, 2 * x)):
        outs, _ = run(m, [x, x, np.int32(fuse)])
        np.testing.assert_array_equal(outs[0], want)
        e = nnapi.Execution(c)
        e.set_input(0, x)
        e.set_input(1, x)
        e.set_input(2, int(fuse))
        e.compute()
        np.testing.assert_array_equal(e.get_output(0), want)
    assert len(c._prepared) == 2
    e = nnapi.Execution(c)
    e.set_input(0, x)
    e.set_input(1, x)
    e.set_input(2, 9)
    with raises(ResultCode.OP_FAILED, "9 is not a FuseCode"):
        e.compute()


def test_omitted_optional_input_at_execution() -> None:
    """CONV_2D's layout flag as a model input: omitted means NHWC, true means NCHW."""
    s = Spec()
    x = s.input(T.TENSOR_FLOAT32, [1, 2, 2, 2])
    w = s.const(T.TENSOR_FLOAT32, np.ones((1, 1, 1, 2)))
    b = s.const(T.TENSOR_FLOAT32, [0.5])
    layout = s.input(T.BOOL, None)
    y = s.output(T.TENSOR_FLOAT32, [1, 0, 0, 0])
    s.op(OperationType.CONV_2D, [x, w, b, s.i32(PaddingCode.VALID), s.i32(1), s.i32(1), s.i32(0), layout], [y])
    m = s.model()
    data = np.arange(8, dtype=np.float32).reshape(1, 2, 2, 2)
    nhwc, _ = run(m, [data, None])
    np.testing.assert_array_equal(nhwc[0], data.sum(axis=3, keepdims=True) + 0.5)
    nchw = run(m, [data.transpose(0, 3, 1, 2)[:, :, :, :].copy(), True])[0][0]
    np.testing.assert_array_equal(nchw, (data.sum(axis=3, keepdims=True) + 0.5).transpose(0, 3, 1, 2))


def test_placements_and_debug_table(backend: str, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    monkeypatch.setenv("TEFLON_DEBUG", "1")
    m, _ = add_model()
    m.finish()
    c = nnapi.Compilation(m, delegates=[] if backend == "numpy" else [teflon_py.load_delegate(backend)])
    c.finish()
    rows = c.placements()
    assert len(rows) == 1 and [p.backend for p in rows[0]] == [backend]
    assert "<nnapi model>" in capsys.readouterr().err
    assert nnapi.supported_operations(m, [] if backend == "numpy" else [teflon_py.load_delegate(backend)]) == \
        [backend != "numpy"]


def test_relaxed_float32_computes_in_float32() -> None:
    s = Spec(relaxed=True)
    a = s.input(T.TENSOR_FLOAT32, [2])
    y = s.output(T.TENSOR_FLOAT32, [2])
    s.op(OperationType.ADD, [a, s.const(T.TENSOR_FLOAT32, [1e-4, 1e-4]), s.i32(0)], [y])
    m = s.model()
    assert m.relaxed
    out = run(m, [np.array([1.0, 2.0], np.float32)])[0][0]
    np.testing.assert_array_equal(out, np.array([1.0, 2.0], np.float32) + np.float32(1e-4))
