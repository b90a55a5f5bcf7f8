"""FULLY_CONNECTED and BATCH_MATMUL on the register-blocked GEMM (``gemm.cl``)."""
from __future__ import annotations

import numpy as np

from teflon_py import ir
from teflon_py.opencl.kernels import specs as kernels
from teflon_py.opencl.registry import EmitContext, activation_reason, lowering, options
from teflon_py.tflite.options import BatchMatMulOptions, FullyConnectedOptions


def check_fully_connected(graph: ir.Graph, op: ir.Operation) -> str | None:
    opts = options(op, FullyConnectedOptions)
    if opts.weights_format != 0:
        return "shuffled weights not supported"
    reason = activation_reason(opts.fused_activation_function)
    if reason:
        return reason
    x, w, y = graph.tensors[op.inputs[0]], graph.tensors[op.inputs[1]], graph.tensors[op.outputs[0]]
    if len(w.shape) != 2:
        return f"weights must be 2-D, got {list(w.shape)}"
    n, k = w.shape
    size = int(np.prod(x.shape))
    if size % k:
        return f"input of {size} values is not a whole number of rows of depth {k}"
    if int(np.prod(y.shape)) != size // k * n:
        return f"output shape {list(y.shape)} does not fit {size // k} rows of {n}"
    if len(op.inputs) > 2 and op.inputs[2] != ir.NO_TENSOR and graph.tensors[op.inputs[2]].data.size != n:
        return "bias size differs from the number of units"
    return None


@lowering("FULLY_CONNECTED", check=check_fully_connected, constants=(1, 2), fuses_activation=True)
def fully_connected(ctx: EmitContext, op: ir.Operation) -> None:
    """Rows of the flattened input times the weights' transpose; keep_num_dims only shapes the output."""
    w = ctx.constant(op.inputs[1])
    bias = ctx.constant(op.inputs[2]) if len(op.inputs) > 2 else None
    x = ctx.input(op)
    rows = int(np.prod(ctx.shape(x))) // w.shape[1]
    spec = kernels.fully_connected_spec(rows, w, bias, ctx.clamp(op))
    ctx.launch(spec, input=x, output=ctx.output(op))


def _matmul_dims(graph: ir.Graph, op: ir.Operation) -> tuple[int, int, int, tuple[int, ...]]:
    """(M, N, K, broadcast batch shape) of a BATCH_MATMUL; ValueError when the shapes disagree."""
    opts = options(op, BatchMatMulOptions)
    a, b = graph.tensors[op.inputs[0]].shape, graph.tensors[op.inputs[1]].shape
    if len(a) < 2 or len(b) < 2:
        raise ValueError("operands must have rank 2 or more")
    m, ka = (a[-1], a[-2]) if opts.adj_x else (a[-2], a[-1])
    kb, n = (b[-1], b[-2]) if opts.adj_y else (b[-2], b[-1])
    if ka != kb:
        raise ValueError(f"inner dimensions {ka} and {kb} differ")
    batch = tuple(np.broadcast_shapes(tuple(a[:-2]), tuple(b[:-2])))
    return m, n, ka, batch


def check_batch_matmul(graph: ir.Graph, op: ir.Operation) -> str | None:
    try:
        m, n, _, batch = _matmul_dims(graph, op)
    except ValueError as e:
        return str(e)
    if tuple(graph.tensors[op.outputs[0]].shape) != (*batch, m, n):
        return f"output shape {list(graph.tensors[op.outputs[0]].shape)} is not {[*batch, m, n]}"
    if len(batch) > 3:
        return "more than three batch dimensions"
    return None


def _batch_strides(shape: tuple[int, ...], batch: tuple[int, ...], matrix: int) -> tuple[int, int, int]:
    """Per output batch dim (padded to 3), the operand's stride in matrices x ``matrix`` (0: broadcast)."""
    dims = (1,) * (len(batch) - len(shape)) + tuple(shape)
    strides, step = [], matrix
    for d in reversed(dims):
        strides.append(step if d > 1 else 0)
        step *= d
    strides = strides[::-1]
    return tuple([0] * (3 - len(strides)) + strides)


@lowering("BATCH_MATMUL", check=check_batch_matmul, max_rank=5)
def batch_matmul(ctx: EmitContext, op: ir.Operation) -> None:
    """Batched GEMM with broadcast batches; a runtime right operand is packed on the device first."""
    opts = options(op, BatchMatMulOptions)
    m, n, k, batch = _matmul_dims(ctx.graph, op)
    a, b = op.inputs[0], op.inputs[1]
    a_shape, b_shape = ctx.shape(a), ctx.shape(b)
    dims = tuple([1] * (3 - len(batch)) + list(batch))
    b_batches = int(np.prod(b_shape[:-2], dtype=np.int64))
    lda, ask = (1, m) if opts.adj_x else (k, 1)
    pack_strides = (1, k) if opts.adj_y else (n, 1)  # (k, n) strides in a raw B matrix
    b_const = ctx.constant(b)
    b_kn = None
    if b_const is not None:
        raw = np.asarray(b_const, np.float32).reshape(b_batches, *b_shape[-2:])
        b_kn = raw.transpose(0, 2, 1) if opts.adj_y else raw
    probe = kernels.gemm_spec(m, n, k, None)  # the packed size of one B
    packed = kernels.packed_b_floats(probe)
    batching = kernels.Batching(dims, _batch_strides(a_shape[:-2], batch, m * k),
                                _batch_strides(b_shape[:-2], batch, packed))
    spec = kernels.gemm_spec(m, n, k, b_kn, None, ctx.clamp(op), lda=lda, ask=ask, batching=batching,
                             pack_strides=None if b_kn is not None else pack_strides)
    if b_kn is not None:
        ctx.launch(spec, input=a, output=ctx.output(op))
        return
    panels = ctx.scratch(4 * packed * b_batches)
    ctx.launch(kernels.pack_b_spec(spec, b_batches), input=b, output=panels)
    ctx.launch(spec, input=a, weights=panels, output=ctx.output(op))
