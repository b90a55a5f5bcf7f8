"""The conv family of the op layer: TFLite translators round-trip, and inference gives the output
shapes and rejects broken models."""
from __future__ import annotations

import numpy as np
import pytest

from teflon_py import ir, ops
from teflon_py.errors import ModelError
from teflon_py.ops.common import Act, FusedActivation, Padding
from teflon_py.ops.conv import (
    Conv3DAttrs,
    ConvAttrs,
    DepthwiseConvAttrs,
    TransposeConvAttrs,
    TransposeConvBiasAttrs,
)
from teflon_py.ops.matmul import BatchMatMulAttrs, FullyConnectedAttrs
from teflon_py.tflite import options as O
from teflon_py.tflite.reader import read_model
from tests.harness import single_op

F32 = np.float32


def _op(model_bytes: bytes) -> tuple[ir.Graph, ir.Operation]:
    g = read_model(model_bytes).main
    return g, g.operations[0]


def _roundtrip(model_bytes: bytes) -> tuple[ir.Operation, ir.Operation]:
    from teflon_py.tflite.builder import write_model

    m = read_model(model_bytes)
    again = read_model(write_model(m))
    return m.main.operations[0], again.main.operations[0]


def _conv(x: tuple, w: tuple, out: tuple, padding=ir.Padding.SAME, s=(1, 1), d=(1, 1),
          act=ir.Activation.NONE) -> bytes:
    opts = O.Conv2DOptions(padding=padding, stride_h=s[0], stride_w=s[1], dilation_h_factor=d[0],
                           dilation_w_factor=d[1], fused_activation_function=act)
    ins = [{"shape": x, "dtype": F32}, {"data": np.zeros(w, F32)}, {"data": np.zeros(w[0], F32)}]
    return single_op("CONV_2D", ins, [{"shape": out, "dtype": F32}], opts)


def _depthwise(x: tuple, w: tuple, out: tuple, padding=ir.Padding.SAME, s=(1, 1), d=(1, 1), dm=1,
               act=ir.Activation.NONE) -> bytes:
    opts = O.DepthwiseConv2DOptions(padding=padding, stride_h=s[0], stride_w=s[1], dilation_h_factor=d[0],
                                    dilation_w_factor=d[1], depth_multiplier=dm, fused_activation_function=act)
    ins = [{"shape": x, "dtype": F32}, {"data": np.zeros(w, F32)}]
    return single_op("DEPTHWISE_CONV_2D", ins, [{"shape": out, "dtype": F32}], opts)


def test_conv_parse_and_roundtrip() -> None:
    a, b = _roundtrip(_conv((1, 8, 8, 3), (4, 3, 3, 3), (1, 4, 3, 4), s=(2, 3), d=(1, 2), act=ir.Activation.RELU6))
    assert a.attrs == ConvAttrs(Padding.tf_same(), (2, 3), (1, 2), FusedActivation.of(Act.RELU6))
    assert b.attrs == a.attrs
    a, b = _roundtrip(_depthwise((1, 8, 8, 3), (1, 3, 3, 6), (1, 6, 6, 6), ir.Padding.VALID, dm=2,
                                 act=ir.Activation.RELU))
    assert a.attrs == DepthwiseConvAttrs(Padding.valid(), (1, 1), (1, 1), 2, FusedActivation.of(Act.RELU))
    assert b.attrs == a.attrs


@pytest.mark.parametrize("padding,x,w,s,d,out", [
    (ir.Padding.SAME, (2, 7, 9, 3), (5, 3, 3, 3), (2, 2), (1, 1), (2, 4, 5, 5)),
    (ir.Padding.VALID, (1, 7, 9, 3), (5, 3, 2, 3), (2, 3), (1, 1), (1, 3, 3, 5)),
    (ir.Padding.VALID, (1, 9, 9, 4), (6, 3, 3, 2), (1, 1), (2, 2), (1, 5, 5, 6)),  # grouped, dilated
])
def test_conv_infer(padding, x, w, s, d, out) -> None:
    g, op = _op(_conv(x, w, out, padding, s, d))
    (meta,) = ops.infer(g, op)
    assert meta.shape == out and meta.dtype == np.float32


def test_depthwise_infer() -> None:
    g, op = _op(_depthwise((1, 6, 6, 2), (1, 3, 3, 6), (1, 3, 3, 6), s=(2, 2), dm=3))
    (meta,) = ops.infer(g, op)
    assert meta.shape == (1, 3, 3, 6)


def test_conv_infer_rejects() -> None:
    g, op = _op(_conv((1, 4, 4, 3), (2, 5, 5, 3), (1, 1, 1, 2), ir.Padding.VALID))
    with pytest.raises(ModelError, match=r"node 0 \(CONV_2D\): a 5x5 window does not fit"):
        ops.infer(g, op)
    g, op = _op(_conv((1, 4, 4, 3), (2, 1, 1, 3), (1, 4, 4, 2), s=(0, 1)))
    with pytest.raises(ModelError, match=r"node 0 \(CONV_2D\): strides \(0, 1\) .*must be positive"):
        ops.infer(g, op)
    g, op = _op(_conv((1, 4, 4, 3), (2, 1, 1, 2), (1, 4, 4, 2)))
    with pytest.raises(ModelError, match=r"node 0 \(CONV_2D\): .*do not form groups"):
        ops.infer(g, op)
    g, op = _op(_depthwise((1, 4, 4, 2), (1, 1, 1, 6), (1, 4, 4, 6), dm=2))
    with pytest.raises(ModelError, match=r"node 0 \(DEPTHWISE_CONV_2D\): depth_multiplier 2"):
        ops.infer(g, op)


def _fc(x: tuple, w: tuple, out: tuple, keep: bool = False, act=ir.Activation.NONE) -> bytes:
    opts = O.FullyConnectedOptions(fused_activation_function=act, keep_num_dims=keep)
    ins = [{"shape": x, "dtype": F32}, {"data": np.zeros(w, F32)}]
    return single_op("FULLY_CONNECTED", ins, [{"shape": out, "dtype": F32}], opts)


def _bmm(a: tuple, b: tuple, out: tuple, adj_x: bool = False, adj_y: bool = False) -> bytes:
    ins = [{"shape": a, "dtype": F32}, {"shape": b, "dtype": F32}]
    return single_op("BATCH_MATMUL", ins, [{"shape": out, "dtype": F32}], O.BatchMatMulOptions(adj_x=adj_x, adj_y=adj_y))


def test_matmul_parse_and_roundtrip() -> None:
    a, b = _roundtrip(_fc((2, 3, 4), (5, 4), (2, 3, 5), keep=True, act=ir.Activation.RELU))
    assert a.attrs == FullyConnectedAttrs(FusedActivation.of(Act.RELU), keep_num_dims=True)
    assert b.attrs == a.attrs
    a, b = _roundtrip(_bmm((2, 4, 3), (3, 5), (2, 3, 5), adj_x=True))
    assert a.attrs == BatchMatMulAttrs(adj_x=True) and b.attrs == a.attrs


@pytest.mark.parametrize("x,w,keep,out", [
    ((2, 3, 4), (5, 4), False, (6, 5)),
    ((2, 3, 4), (5, 4), True, (2, 3, 5)),
    ((1, 12), (7, 6), False, (2, 7)),
])
def test_fc_infer(x, w, keep, out) -> None:
    g, op = _op(_fc(x, w, out, keep))
    (meta,) = ops.infer(g, op)
    assert meta.shape == out


@pytest.mark.parametrize("a,b,adj_x,adj_y,out", [
    ((2, 3, 4), (4, 5), False, False, (2, 3, 5)),
    ((1, 4, 3), (2, 5, 4), True, True, (2, 3, 5)),
])
def test_batch_matmul_infer(a, b, adj_x, adj_y, out) -> None:
    g, op = _op(_bmm(a, b, out, adj_x, adj_y))
    (meta,) = ops.infer(g, op)
    assert meta.shape == out


def test_matmul_infer_rejects() -> None:
    g, op = _op(_fc((2, 5), (3, 4), (2, 3)))
    with pytest.raises(ModelError, match=r"node 0 \(FULLY_CONNECTED\): .*rows of depth 4"):
        ops.infer(g, op)
    g, op = _op(_bmm((2, 3, 4), (3, 5), (2, 3, 5)))
    with pytest.raises(ModelError, match=r"node 0 \(BATCH_MATMUL\): inner dimensions"):
        ops.infer(g, op)
    g, op = _op(_bmm((2, 3, 4), (3, 4, 5), (3, 3, 5)))
    with pytest.raises(ModelError, match=r"node 0 \(BATCH_MATMUL\): batch dimensions .* do not broadcast"):
        ops.infer(g, op)


def _transpose(shape: tuple, w: tuple, x: tuple, padding=ir.Padding.SAME, s=(2, 2), act=ir.Activation.NONE) -> bytes:
    opts = O.TransposeConvOptions(padding=padding, stride_h=s[0], stride_w=s[1], fused_activation_function=act)
    ins = [{"data": np.array(shape, np.int32)}, {"data": np.zeros(w, F32)}, {"shape": x, "dtype": F32}]
    return single_op("TRANSPOSE_CONV", ins, [{"shape": shape, "dtype": F32}], opts)


def test_transpose_conv_roundtrip_and_infer() -> None:
    model = _transpose((1, 8, 8, 5), (5, 3, 3, 3), (1, 4, 4, 3), act=ir.Activation.RELU)
    a, b = _roundtrip(model)
    assert a.attrs == TransposeConvAttrs(Padding.tf_same(), (2, 2), FusedActivation.of(Act.RELU))
    assert b.attrs == a.attrs
    g, op = _op(model)
    (meta,) = ops.infer(g, op)
    assert meta.shape == (1, 8, 8, 5)
    g, op = _op(_transpose((1, 8, 8, 5), (5, 3, 3, 2), (1, 4, 4, 3)))
    with pytest.raises(ModelError, match=r"node 0 \(TRANSPOSE_CONV\): output shape .* does not fit"):
        ops.infer(g, op)
    g, op = _op(_transpose((1, 8, 8, 5), (5, 3, 3, 3), (1, 4, 4, 3), s=(0, 2)))
    with pytest.raises(ModelError, match=r"node 0 \(TRANSPOSE_CONV\): strides \(0, 2\) must be positive"):
        ops.infer(g, op)


def _conv3d(x: tuple, w: tuple, out: tuple, padding=ir.Padding.VALID, s=(1, 1, 1), d=(1, 1, 1)) -> bytes:
    opts = O.Conv3DOptions(padding=padding, stride_d=s[0], stride_h=s[1], stride_w=s[2], dilation_d_factor=d[0],
                           dilation_h_factor=d[1], dilation_w_factor=d[2], fused_activation_function=ir.Activation.RELU)
    ins = [{"shape": x, "dtype": F32}, {"data": np.zeros(w, F32)}]
    return single_op("CONV_3D", ins, [{"shape": out, "dtype": F32}], opts)


def test_conv3d_roundtrip_and_infer() -> None:
    model = _conv3d((1, 5, 6, 7, 2), (3, 3, 2, 2, 4), (1, 2, 4, 3, 4), s=(2, 1, 2))
    a, b = _roundtrip(model)
    assert a.attrs == Conv3DAttrs(Padding.valid(), (2, 1, 2), (1, 1, 1), FusedActivation.of(Act.RELU))
    assert b.attrs == a.attrs
    g, op = _op(model)
    (meta,) = ops.infer(g, op)
    assert meta.shape == (1, 2, 4, 3, 4)
    g, op = _op(_conv3d((1, 5, 6, 7, 3), (3, 3, 2, 2, 4), (1, 3, 5, 6, 4)))
    with pytest.raises(ModelError, match=r"node 0 \(CONV_3D\): input has 3 channels"):
        ops.infer(g, op)


def test_transpose_conv_bias_parse_and_infer() -> None:
    from tests.ops.test_transpose_conv import _mediapipe_model

    model = _mediapipe_model((1, 4, 4, 3), np.zeros((5, 4, 4, 3), F32), np.zeros(5, F32), 1, (2, 2), (8, 8))
    a, b = _roundtrip(model)
    assert a.attrs == TransposeConvBiasAttrs(Padding.tf_same(), (2, 2)) and b.attrs == a.attrs
    assert b.custom_options == a.custom_options
    g, op = _op(model)
    (meta,) = ops.infer(g, op)
    assert meta.shape == (1, 8, 8, 5)
    bad = _mediapipe_model((1, 4, 4, 3), np.zeros((5, 4, 4, 2), F32), np.zeros(5, F32), 1, (2, 2), (8, 8))
    g, op = _op(bad)
    with pytest.raises(ModelError, match=r"node 0 \(Convolution2DTransposeBias\): .*do not fit"):
        ops.infer(g, op)
