"""TFLite options <-> op-layer attributes: the normalization family (see ``teflon_py.ops.normalization``)."""
from __future__ import annotations

from teflon_py import ir
from teflon_py.errors import UnsupportedError
from teflon_py.ops.common import NoAttrs
from teflon_py.ops.normalization import L2NormAttrs, LRNAttrs, SoftmaxAttrs
from teflon_py.tflite.options import (
    L2NormOptions,
    LocalResponseNormalizationOptions,
    LogSoftmaxOptions,
    SoftmaxOptions,
)
from teflon_py.tflite.translate.common import activation_code, activation_of
from teflon_py.tflite.translate.registry import Source, parses, writes


@parses("SOFTMAX")
def parse_softmax(src: Source) -> SoftmaxAttrs:
    return SoftmaxAttrs(float(src.option(SoftmaxOptions).beta))


@writes("SOFTMAX")
def write_softmax(attrs: SoftmaxAttrs, op: ir.Operation, graph: ir.Graph) -> object:
    return SoftmaxOptions(beta=attrs.beta)


@parses("LOG_SOFTMAX")
def parse_log_softmax(src: Source) -> NoAttrs:
    return NoAttrs()


@writes("LOG_SOFTMAX")
def write_log_softmax(attrs: NoAttrs, op: ir.Operation, graph: ir.Graph) -> object:
    return LogSoftmaxOptions()


@parses("L2_NORMALIZATION")
def parse_l2_norm(src: Source) -> L2NormAttrs:
    return L2NormAttrs(activation_of(src, src.option(L2NormOptions).fused_activation_function))


@writes("L2_NORMALIZATION")
def write_l2_norm(attrs: L2NormAttrs, op: ir.Operation, graph: ir.Graph) -> object:
    return L2NormOptions(fused_activation_function=activation_code(attrs.activation))


@parses("LOCAL_RESPONSE_NORMALIZATION")
def parse_lrn(src: Source) -> LRNAttrs:
    o = src.option(LocalResponseNormalizationOptions)
    return LRNAttrs(int(o.radius), float(o.bias), float(o.alpha), float(o.beta))


@writes("LOCAL_RESPONSE_NORMALIZATION")
def write_lrn(attrs: LRNAttrs, op: ir.Operation, graph: ir.Graph) -> object:
    if attrs.inclusive:  # TFLite's options cannot say it: its reference kernel's window is shorter
        raise UnsupportedError(f"{op.describe()}: an inclusive LRN window has no TFLite options")
    return LocalResponseNormalizationOptions(radius=attrs.radius, bias=attrs.bias, alpha=attrs.alpha, beta=attrs.beta)
