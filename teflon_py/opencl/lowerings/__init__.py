"""The op families' OpenCL lowerings. Importing this package fills the registry
(``teflon_py.opencl.registry``) in a fixed order: the float families first, then the quantized
ones, which claim the (op, kind) pairs the float families leave free."""
from teflon_py.opencl.lowerings import (  # noqa: F401  (each module registers its lowerings)  # noqa: F401,I001
    compare,
    constant,
    conv,
    dynamic_quant,
    elementwise,
    intmath,
    lstm,
    math,
    matmul,
    movement,
    pool,
    qconv,
    qelementwise,
    qmatmul,
    qreduce,
    qtranspose_conv,
    reduce,
    resize,
    shape,
    transpose_conv,
)
from teflon_py.opencl.registry import LOWERINGS, check_op, lowering_for, supported_ops

SUPPORTED_OPS = supported_ops("float32")

__all__ = ["LOWERINGS", "SUPPORTED_OPS", "check_op", "lowering_for", "supported_ops"]
