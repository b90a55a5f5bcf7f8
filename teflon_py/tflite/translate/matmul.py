"""TFLite options <-> op-layer attributes: the matmul family (see ``teflon_py.ops.matmul``)."""
from __future__ import annotations

from teflon_py import ir
from teflon_py.ops.matmul import BatchMatMulAttrs, FullyConnectedAttrs
from teflon_py.tflite.options import BatchMatMulOptions, FullyConnectedOptions
from teflon_py.tflite.translate.common import activation_code, activation_of
from teflon_py.tflite.translate.registry import Source, parses, writes


@parses("FULLY_CONNECTED")
def parse_fully_connected(src: Source) -> FullyConnectedAttrs:
    o = src.option(FullyConnectedOptions)
    return FullyConnectedAttrs(activation_of(src, o.fused_activation_function), int(o.weights_format),
                               bool(o.keep_num_dims), bool(o.asymmetric_quantize_inputs),
                               int(o.quantized_bias_type))


@writes("FULLY_CONNECTED")
def write_fully_connected(attrs: FullyConnectedAttrs, op: ir.Operation, graph: ir.Graph) -> object:
    return FullyConnectedOptions(fused_activation_function=activation_code(attrs.activation),
                                 weights_format=attrs.weights_format, keep_num_dims=attrs.keep_num_dims,
                                 asymmetric_quantize_inputs=attrs.asymmetric_quantize_inputs,
                                 quantized_bias_type=attrs.quantized_bias_type)


@parses("BATCH_MATMUL")
def parse_batch_matmul(src: Source) -> BatchMatMulAttrs:
    o = src.option(BatchMatMulOptions)
    return BatchMatMulAttrs(bool(o.adj_x), bool(o.adj_y), bool(o.asymmetric_quantize_inputs))


@writes("BATCH_MATMUL")
def write_batch_matmul(attrs: BatchMatMulAttrs, op: ir.Operation, graph: ir.Graph) -> object:
    return BatchMatMulOptions(adj_x=attrs.adj_x, adj_y=attrs.adj_y,
                              asymmetric_quantize_inputs=attrs.asymmetric_quantize_inputs)
