"""TFLite options <-> op-layer attributes: the pool family (see ``teflon_py.ops.pool``)."""
from __future__ import annotations

from teflon_py import ir
from teflon_py.ops.pool import PoolAttrs
from teflon_py.tflite.options import Pool2DOptions
from teflon_py.tflite.translate.common import activation_code, activation_of, padding_code, padding_of
from teflon_py.tflite.translate.registry import Source, parses, writes

POOLS = ("AVERAGE_POOL_2D", "MAX_POOL_2D", "L2_POOL_2D")

@parses(*POOLS)
def parse(src: Source) -> PoolAttrs:
    o = src.option(Pool2DOptions)
    return PoolAttrs((int(o.filter_height), int(o.filter_width)), (int(o.stride_h), int(o.stride_w)),
                     padding_of(src, o.padding), activation_of(src, o.fused_activation_function))


@writes(*POOLS)
def write(attrs: PoolAttrs, op: ir.Operation, graph: ir.Graph) -> object:
    return Pool2DOptions(padding=padding_code(attrs.padding), stride_w=attrs.strides[1], stride_h=attrs.strides[0],
                         filter_width=attrs.filter[1], filter_height=attrs.filter[0],
                         fused_activation_function=activation_code(attrs.activation))
