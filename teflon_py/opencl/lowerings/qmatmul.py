"""int8 BATCH_MATMUL on ``qmatmul.cl``: both operands runtime tensors (attention's Q.K^T and P.V)
or a constant right operand, bit-exact with LiteRT's reference kernel (and the NumPy fallback,
``teflon_py.fallback.batch_matmul``): int32 sums of zero-point-free products, one per-tensor
fixed-point multiplier, the output zero point, a clamp to int8's range (no fused activation).

A runtime right operand is first repacked on the device (``qmatmul_pack_b``: adj_y undone, its
zero point subtracted, columns padded); a constant one is packed once on the host.
"""
from __future__ import annotations

import numpy as np

from teflon_py import quant
from teflon_py.opencl.kernels import qmatmul as qk
from teflon_py.opencl.kernels import qspecs
from teflon_py.opencl.kernels.specs import Batching
from teflon_py.opencl.lowerings.matmul import batch_strides, check_batch_matmul
from teflon_py.opencl.registry import OpEmit, OpTensors, register
from teflon_py.ops.matmul import BatchMatMulAttrs, matmul_dims

#: elements an int32 index of the kernels reaches
MAX_ELEMENTS = 2**31 - 1


def check_qbatch_matmul(attrs: BatchMatMulAttrs, tensors: OpTensors, caps: object) -> str | None:
    """The float rules (shapes, adjoints, broadcast, at most 3 batch dims), then what the kernel
    computes exactly: per-tensor int8 quantization with zero points in int8's range, a multiplier
    whose left shift stays below 31, tensors an int32 index covers."""
    reason = check_batch_matmul(attrs, tensors, caps)
    if reason:
        return reason
    lhs, rhs, out = tensors.inputs[0], tensors.inputs[1], tensors.outputs[0]
    for t in (lhs, rhs, out):
        if t.quantization is None:
            return f"{t.describe()} has no quantization parameters"
        if t.quantization.per_channel:
            return f"{t.describe()} is quantized per channel; BATCH_MATMUL takes per-tensor parameters"
        if not -128 <= t.zero_point <= 127:
            return f"{t.describe()} has zero point {t.zero_point} outside int8's range"
        if int(np.prod(t.shape, dtype=np.int64)) > MAX_ELEMENTS:
            return f"{t.describe()} has more elements than an int32 index reaches"
    _, shift = quant.batch_matmul_output_multiplier(lhs, rhs, out)
    if shift > 30:
        return f"output multiplier's left shift {shift} is beyond what the int32 epilogue takes"
    return None


@register("BATCH_MATMUL", kind="int8", check=check_qbatch_matmul, max_rank=5)
def qbatch_matmul(ctx: OpEmit, attrs: BatchMatMulAttrs) -> None:
    graph, op = ctx.graph, ctx.op
    a, b = op.inputs[0], op.inputs[1]
    lt, rt, yt = graph.tensors[a], graph.tensors[b], graph.tensors[op.outputs[0]]
    a_shape, b_shape = tuple(lt.shape), tuple(rt.shape)
    m, n, k, batch = matmul_dims(attrs, a_shape, b_shape)
    multiplier, shift = quant.batch_matmul_output_multiplier(lt, rt, yt)
    lo, hi = quant.QRANGE[np.dtype(np.int8)]
    lda, ask = (1, m) if attrs.adj_x else (k, 1)
    g = qk.QMatmul(m, n, k, lda, ask, lt.zero_point, rt.zero_point, multiplier, shift, yt.zero_point, lo, hi)
    tiles = ctx.params.tiles
    np_ = qk.padded_columns(g, tiles)
    dims = tuple([1] * (3 - len(batch)) + list(batch))
    b_batches = int(np.prod(b_shape[:-2], dtype=np.int64))
    batching = Batching(dims, batch_strides(a_shape[:-2], batch, m * k),
                        batch_strides(b_shape[:-2], batch, k * np_))
    b_const = ctx.constant(b)
    if b_const is not None:
        raw = np.asarray(b_const).reshape(b_batches, *b_shape[-2:])
        spec = qk.qmatmul_spec(g, batching, tiles, qk.pack_b(g, raw.transpose(0, 2, 1) if attrs.adj_y else raw,
                                                             tiles))
        qspecs.launch(ctx, spec, input=a, output=ctx.output())
        return
    spec = qk.qmatmul_spec(g, batching, tiles)
    panels = ctx.scratch(2 * qk.panel_elements(spec, g) * b_batches)
    qspecs.launch(ctx, qk.pack_b_spec(spec, g, b_batches, attrs.adj_y), input=b, output=panels)
    qspecs.launch(ctx, spec, input=a, weights=panels, output=ctx.output())
