"""The pool / reduce / normalization / resize families of the op layer: TFLite translators
round-trip, and inference gives the output shapes and rejects broken models."""
from __future__ import annotations

import numpy as np
import pytest

from teflon_py import ir, ops
from teflon_py.errors import ModelError
from teflon_py.ops.common import Act, FusedActivation, Padding
from teflon_py.ops.normalization import L2NormAttrs, LRNAttrs, SoftmaxAttrs
from teflon_py.ops.pool import PoolAttrs
from teflon_py.ops.reduce import ArgAttrs, CumsumAttrs, ReduceAttrs
from teflon_py.ops.resize import ResizeAttrs
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
    with pytest.raises(ModelError, match=r"node 0 \(AVERAGE_POOL_2D\): filter 5x5 does not fit"):
        ops.infer(g, op)
    g, op = _op(_pool("AVERAGE_POOL_2D", (1, 4, 4, 1), (1, 4, 4, 1), s=(0, 1)))
    with pytest.raises(ModelError, match=r"node 0 \(AVERAGE_POOL_2D\): .*must be positive"):
        ops.infer(g, op)
    g, op = _op(_pool("L2_POOL_2D", (1, 4, 4, 1), (1, 2, 2, 1), dtype=np.int8))
    with pytest.raises(ModelError, match=r"node 0 \(L2_POOL_2D\): .*float32 only"):
        ops.infer(g, op)


def test_reduce_attrs_and_infer() -> None:
    axes = {"data": np.array([-1, 1, 3], np.int32)}
    model = single_op("SUM", [{"shape": (2, 3, 4, 5), "dtype": np.float32}, axes],
                      [{"shape": (2, 4, 1, 1), "dtype": np.float32}], O.ReducerOptions(keep_dims=True))
    a, b = _roundtrip(model)
    assert a.attrs == ReduceAttrs((3, 1), True) and b.attrs == a.attrs
    g, op = _op(model)
    (meta,) = ops.infer(g, op)
    assert meta.shape == (2, 1, 4, 1)
    runtime = single_op("MEAN", [{"shape": (2, 3), "dtype": np.float32}, {"shape": (1,), "dtype": np.int32}],
                        [{"shape": (2,), "dtype": np.float32}], O.ReducerOptions())
    g, op = _op(runtime)
    assert op.attrs.axes is None and ops.infer(g, op)[0].shape is None
    bad = single_op("REDUCE_MAX", [{"shape": (2, 3), "dtype": np.float32}, {"data": np.array([2], np.int32)}],
                    [{"shape": (2,), "dtype": np.float32}], O.ReducerOptions())
    g, op = _op(bad)
    with pytest.raises(ModelError, match=r"node 0 \(REDUCE_MAX\): axis 2 is out of range"):
        ops.infer(g, op)


def test_arg_and_cumsum_attrs() -> None:
    model = single_op("ARG_MAX", [{"shape": (2, 3, 4), "dtype": np.float32}, {"data": np.array([-2], np.int32)}],
                      [{"shape": (2, 4), "dtype": np.int32}], O.ArgMaxOptions(output_type=2))
    a, b = _roundtrip(model)
    assert a.attrs == ArgAttrs(1, np.dtype(np.int32)) and b.attrs == a.attrs
    g, op = _op(model)
    assert ops.infer(g, op)[0].shape == (2, 4)
    model = single_op("CUMSUM", [{"shape": (2, 3), "dtype": np.float32}, {"data": np.array(0, np.int32)}],
                      [{"shape": (2, 3), "dtype": np.float32}], O.CumsumOptions(exclusive=True, reverse=False))
    a, b = _roundtrip(model)
    assert a.attrs == CumsumAttrs(0, True, False) and b.attrs == a.attrs


def test_normalization_attrs_and_infer() -> None:
    model = single_op("SOFTMAX", [{"shape": (2, 5), "dtype": np.float32}], [{"shape": (2, 5), "dtype": np.float32}],
                      O.SoftmaxOptions(beta=0.5))
    a, b = _roundtrip(model)
    assert a.attrs == SoftmaxAttrs(0.5) and b.attrs == a.attrs
    g, op = _op(model)
    assert ops.infer(g, op)[0].shape == (2, 5)
    model = single_op("LOCAL_RESPONSE_NORMALIZATION", [{"shape": (1, 2, 2, 8), "dtype": np.float32}],
                      [{"shape": (1, 2, 2, 8), "dtype": np.float32}],
                      O.LocalResponseNormalizationOptions(radius=2, bias=1.0, alpha=0.5, beta=0.75))
    a, b = _roundtrip(model)
    assert a.attrs == LRNAttrs(2, 1.0, 0.5, 0.75) and b.attrs == a.attrs
    model = single_op("L2_NORMALIZATION", [{"shape": (1, 2, 2, 2, 8), "dtype": np.float32}],
                      [{"shape": (1, 2, 2, 2, 8), "dtype": np.float32}], O.L2NormOptions())
    g, op = _op(model)
    assert op.attrs == L2NormAttrs()
    with pytest.raises(ModelError, match=r"node 0 \(L2_NORMALIZATION\): input rank 5"):
        ops.infer(g, op)


def test_resize_attrs_and_infer() -> None:
    model = single_op("RESIZE_BILINEAR", [{"shape": (1, 4, 4, 3), "dtype": np.float32},
                                          {"data": np.array([8, 6], np.int32)}],
                      [{"shape": (1, 8, 6, 3), "dtype": np.float32}],
                      O.ResizeBilinearOptions(align_corners=False, half_pixel_centers=True))
    a, b = _roundtrip(model)
    assert a.attrs == ResizeAttrs(False, True) and b.attrs == a.attrs
    g, op = _op(model)
    assert ops.infer(g, op)[0].shape == (1, 8, 6, 3)
    both = single_op("RESIZE_BILINEAR", [{"shape": (1, 4, 4, 3), "dtype": np.float32},
                                         {"data": np.array([8, 6], np.int32)}],
                     [{"shape": (1, 8, 6, 3), "dtype": np.float32}],
                     O.ResizeBilinearOptions(align_corners=True, half_pixel_centers=True))
    g, op = _op(both)
    with pytest.raises(ModelError, match=r"node 0 \(RESIZE_BILINEAR\): .*cannot both"):
        ops.infer(g, op)
