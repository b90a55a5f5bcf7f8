"""TFLite options <-> op-layer attributes: the conv family (see ``teflon_py.ops.conv``)."""
from __future__ import annotations

import struct

from teflon_py import ir
from teflon_py.ops.common import Padding
from teflon_py.ops.conv import (
    Conv3DAttrs,
    ConvAttrs,
    DepthwiseConvAttrs,
    TransposeConvAttrs,
    TransposeConvBiasAttrs,
)
from teflon_py.tflite.options import (
    Conv2DOptions,
    Conv3DOptions,
    DepthwiseConv2DOptions,
    TransposeConvOptions,
)
from teflon_py.tflite.translate.common import activation_code, activation_of, padding_code, padding_of
from teflon_py.tflite.translate.registry import Source, parses, writes


@parses("CONV_2D")
def parse_conv_2d(src: Source) -> ConvAttrs:
    o = src.option(Conv2DOptions)
    return ConvAttrs(padding_of(src, o.padding), (int(o.stride_h), int(o.stride_w)),
                     (int(o.dilation_h_factor), int(o.dilation_w_factor)),
                     activation_of(src, o.fused_activation_function), int(o.quantized_bias_type))


@writes("CONV_2D")
def write_conv_2d(attrs: ConvAttrs, op: ir.Operation, graph: ir.Graph) -> object:
    return Conv2DOptions(padding=padding_code(attrs.padding), stride_w=attrs.strides[1], stride_h=attrs.strides[0],
                         fused_activation_function=activation_code(attrs.activation),
                         dilation_w_factor=attrs.dilations[1], dilation_h_factor=attrs.dilations[0],
                         quantized_bias_type=attrs.quantized_bias_type)


@parses("DEPTHWISE_CONV_2D")
def parse_depthwise_conv_2d(src: Source) -> DepthwiseConvAttrs:
    o = src.option(DepthwiseConv2DOptions)
    return DepthwiseConvAttrs(padding_of(src, o.padding), (int(o.stride_h), int(o.stride_w)),
                              (int(o.dilation_h_factor), int(o.dilation_w_factor)), int(o.depth_multiplier),
                              activation_of(src, o.fused_activation_function))


@writes("DEPTHWISE_CONV_2D")
def write_depthwise_conv_2d(attrs: DepthwiseConvAttrs, op: ir.Operation, graph: ir.Graph) -> object:
    return DepthwiseConv2DOptions(padding=padding_code(attrs.padding), stride_w=attrs.strides[1],
                                  stride_h=attrs.strides[0], depth_multiplier=attrs.depth_multiplier,
                                  fused_activation_function=activation_code(attrs.activation),
                                  dilation_w_factor=attrs.dilations[1], dilation_h_factor=attrs.dilations[0])


@parses("TRANSPOSE_CONV")
def parse_transpose_conv(src: Source) -> TransposeConvAttrs:
    o = src.option(TransposeConvOptions)
    return TransposeConvAttrs(padding_of(src, o.padding), (int(o.stride_h), int(o.stride_w)),
                              activation_of(src, o.fused_activation_function), int(o.quantized_bias_type))


@writes("TRANSPOSE_CONV")
def write_transpose_conv(attrs: TransposeConvAttrs, op: ir.Operation, graph: ir.Graph) -> object:
    return TransposeConvOptions(padding=padding_code(attrs.padding), stride_w=attrs.strides[1],
                                stride_h=attrs.strides[0], fused_activation_function=activation_code(attrs.activation),
                                quantized_bias_type=attrs.quantized_bias_type)


@parses("CONV_3D")
def parse_conv_3d(src: Source) -> Conv3DAttrs:
    o = src.option(Conv3DOptions)
    return Conv3DAttrs(padding_of(src, o.padding), (int(o.stride_d), int(o.stride_h), int(o.stride_w)),
                       (int(o.dilation_d_factor), int(o.dilation_h_factor), int(o.dilation_w_factor)),
                       activation_of(src, o.fused_activation_function))


@writes("CONV_3D")
def write_conv_3d(attrs: Conv3DAttrs, op: ir.Operation, graph: ir.Graph) -> object:
    (sd, sh, sw), (dd, dh, dw) = attrs.strides, attrs.dilations
    return Conv3DOptions(padding=padding_code(attrs.padding), stride_d=sd, stride_w=sw, stride_h=sh,
                         fused_activation_function=activation_code(attrs.activation),
                         dilation_d_factor=dd, dilation_w_factor=dw, dilation_h_factor=dh)


#: TfLitePadding in the MediaPipe op's raw custom options (not the schema's Padding enum).
_TFLITE_PADDING_SAME = 1


@parses("Convolution2DTransposeBias")
def parse_transpose_conv_bias(src: Source) -> TransposeConvBiasAttrs:
    """The raw TfLiteTransposeConvParams: int32 padding, stride_w, stride_h."""
    raw = src.custom_options or b""
    if len(raw) < 12:
        raise src.fail(f"custom options hold {len(raw)} bytes; TransposeConvParams needs 12")
    padding, stride_w, stride_h = struct.unpack_from("<iii", raw)
    same = padding == _TFLITE_PADDING_SAME
    return TransposeConvBiasAttrs(Padding.tf_same() if same else Padding.valid(), (stride_h, stride_w))


@writes("Convolution2DTransposeBias")
def write_transpose_conv_bias(attrs: TransposeConvBiasAttrs, op: ir.Operation, graph: ir.Graph) -> object:
    return None  # the custom options travel as the op's raw bytes
