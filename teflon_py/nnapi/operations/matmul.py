"""FULLY_CONNECTED and BATCH_MATMUL (op layer: the TFLite ops of the same names).

FULLY_CONNECTED reads its input as [batch_size, input_size] rows whatever its rank, as the op
layer's does without ``keep_num_dims``. BATCH_MATMUL's TENSOR_INT32 form, which TFLite lacks, is
the op layer's BATCH_MATMUL on int32 (its NumPy kernel: Android's int32 accumulation, wrapping).
"""
from __future__ import annotations

import math

from teflon_py.nnapi.enums import OperandType as T
from teflon_py.nnapi.enums import OperationType as Op
from teflon_py.nnapi.lowering import Call
from teflon_py.nnapi.operations.quantized import check_bias_scale
from teflon_py.nnapi.registry import Sig, lowering, signature
from teflon_py.ops.matmul import BatchMatMulAttrs, FullyConnectedAttrs

#: the feature level that added each input type
FC_LEVELS = {T.TENSOR_FLOAT32: 1, T.TENSOR_QUANT8_ASYMM: 1, T.TENSOR_FLOAT16: 3, T.TENSOR_QUANT8_ASYMM_SIGNED: 4}
MATMUL_LEVELS = {T.TENSOR_FLOAT32: 6, T.TENSOR_FLOAT16: 6, T.TENSOR_QUANT8_ASYMM_SIGNED: 6, T.TENSOR_INT32: 6}
_QUANTIZED = (T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED)


@signature(Op.FULLY_CONNECTED)
def fully_connected_signature(s: Sig) -> None:
    """Input, weights of the same type, bias (TENSOR_INT32 for quantized inputs), FuseCode."""
    t = s.input_type(0)
    s.supported(t, FC_LEVELS)
    s.expect([t, t, T.TENSOR_INT32 if t in _QUANTIZED else t, T.INT32], [t])


@lowering(Op.FULLY_CONNECTED)
def lower_fully_connected(c: Call) -> None:
    activation = c.fuse(3)
    x, w, b = c.shape(0), c.shape(1), c.shape(2)
    if not 2 <= len(x) <= 4:
        raise c.error(f"takes an input of rank 2 to 4, got rank {len(x)}", 0)
    if len(w) != 2:
        raise c.error(f"the weights must be 2-D [num_units, input_size], got shape {list(w)}", 1)
    if list(b) != [w[0]]:
        raise c.error(f"the bias must be [{w[0]}] (num_units), got shape {list(b)}", 2)
    size = math.prod(x)
    if w[1] == 0 or size % w[1]:
        raise c.error(f"the input's {size} values do not split into rows of input_size {w[1]}", 0)
    check_bias_scale(c, 0, 1, 2)
    c.emit("FULLY_CONNECTED", FullyConnectedAttrs(activation=activation), [c.input(0), c.input(1), c.input(2)],
           [c.output(0)])


@signature(Op.BATCH_MATMUL)
def batch_matmul_signature(s: Sig) -> None:
    """Two tensors of one type, then the optional adj_x and adj_y flags."""
    t = s.input_type(0)
    s.supported(t, MATMUL_LEVELS)
    s.expect([t, t, T.BOOL, T.BOOL], [t], optional=2)


@lowering(Op.BATCH_MATMUL)
def lower_batch_matmul(c: Call) -> None:
    """Both inputs of one rank (2 to 4) and the same batch dimensions (the spec's "same batch
    size": Android's reference takes the output's batch dimensions from input 0, so it does not
    broadcast)."""
    adj_x, adj_y = bool(c.scalar(2, False)), bool(c.scalar(3, False))
    a, b = c.shape(0), c.shape(1)
    if len(a) != len(b) or not 2 <= len(a) <= 4:
        raise c.error(f"takes two inputs of one rank from 2 to 4, got ranks {len(a)} and {len(b)}", 1)
    if a[:-2] != b[:-2]:
        raise c.error(f"the batch dimensions {list(a[:-2])} and {list(b[:-2])} differ", 1)
    inner_a = a[-2] if adj_x else a[-1]
    inner_b = b[-1] if adj_y else b[-2]
    if inner_a != inner_b:
        raise c.error(f"inner dimensions {inner_a} and {inner_b} differ (matrices {list(a[-2:])} and "
                      f"{list(b[-2:])}, adj_x {adj_x}, adj_y {adj_y})", 1)
    c.emit("BATCH_MATMUL", BatchMatMulAttrs(adj_x=adj_x, adj_y=adj_y), [c.input(0), c.input(1)], [c.output(0)])
