"""The pool / reduce / normalization / resize families of the op layer: TFLite translators
round-trip, and inference gives the output shapes and rejects broken models."""
from __future__ import annotations

import numpy as np
import pytest

from teflon_py import ir, ops
from teflon_py.errors import ModelError
from teflon_py.ops.common import Act, FusedActivation, Padding
from teflon_py.ops.pool import PoolAttrs
from teflon_py.tflite import options as O
from teflon_py.tflite.reader import read_model
from tests.harness import single_op


def _op(model_bytes: bytes) -> tuple[ir.Graph, ir.Operation]:
    g = read_model(model_bytes).main
    return g, g.operations[0]


def _roundtrip(model_bytes: bytes) -> tuple[ir.Operation, ir.Operation]:
    from teflon_py.tflite.builder import write_model

    m = read_model(model_bytes)
    again = read_model(write_model(m))
    return m.main.operations[0], again.main.operations[0]


def _pool(op: str, shape: tuple, out: tuple, padding: ir.Padding = ir.Padding.SAME, f=(2, 2), s=(2, 2),
          act: ir.Activation = ir.Activation.NONE, dtype=np.float32) -> bytes:
    opts = O.Pool2DOptions(padding=padding, stride_w=s[1], stride_h=s[0], filter_width=f[1], filter_height=f[0],
                           fused_activation_function=act)
    return single_op(op, [{"shape": shape, "dtype": dtype}], [{"shape": out, "dtype": dtype}], opts)


@pytest.mark.parametrize("op", ["AVERAGE_POOL_2D", "MAX_POOL_2D", "L2_POOL_2D"])
def test_pool_parse_and_roundtrip(op: str) -> None:
    model = _pool(op, (1, 5, 7, 3), (1, 3, 4, 3), act=ir.Activation.RELU6, f=(3, 2), s=(2, 2))
    a, b = _roundtrip(model)
    assert a.attrs == PoolAttrs((3, 2), (2, 2), Padding.tf_same(), FusedActivation.of(Act.RELU6))
    assert b.attrs == a.attrs
    valid = _op(_pool(op, (1, 5, 7, 3), (1, 2, 3, 3), ir.Padding.VALID))[1]
    assert valid.attrs.padding == Padding.valid()


@pytest.mark.parametrize("padding,shape,f,s,out", [
    (ir.Padding.SAME, (2, 5, 7, 3), (3, 3), (2, 2), (2, 3, 4, 3)),
    (ir.Padding.VALID, (1, 5, 7, 3), (3, 2), (2, 3), (1, 2, 2, 3)),
    (ir.Padding.VALID, (1, 4, 4, 1), (4, 4), (1, 1), (1, 1, 1, 1)),
])
def test_pool_infer(padding: ir.Padding, shape: tuple, f: tuple, s: tuple, out: tuple) -> None:
    g, op = _op(_pool("MAX_POOL_2D", shape, out, padding, f, s))
    (meta,) = ops.infer(g, op)
    assert meta.shape == out and meta.dtype == np.float32


def test_pool_infer_rejects() -> None:
    g, op = _op(_pool("AVERAGE_POOL_2D", (1, 4, 4, 1), (1, 1, 1, 1), ir.Padding.VALID, (5, 5), (1, 1)))
    with pytest.raises(ModelError, match="does not fit"):
        ops.infer(g, op)
    g, op = _op(_pool("AVERAGE_POOL_2D", (1, 4, 4, 1), (1, 4, 4, 1), s=(0, 1)))
    with pytest.raises(ModelError, match="must be positive"):
        ops.infer(g, op)
    g, op = _op(_pool("L2_POOL_2D", (1, 4, 4, 1), (1, 2, 2, 1), dtype=np.int8))
    with pytest.raises(ModelError, match="float32 only"):
        ops.infer(g, op)
