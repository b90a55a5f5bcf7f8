"""FULLY_CONNECTED and BATCH_MATMUL on the register-blocked GEMM (``gemm.cl``), or for the GPU
kernel family on ``gpu_gemm.cl``."""
from __future__ import annotations

import numpy as np

from teflon_py import ir
from teflon_py.opencl.caps import Caps
from teflon_py.opencl.kernels import gpu_specs
from teflon_py.opencl.kernels import specs as kernels
from teflon_py.opencl.registry import OpEmit, OpTensors, register
from teflon_py.ops.conv import conv_types_reason
from teflon_py.ops.elementwise import activation_reason
from teflon_py.ops.matmul import BatchMatMulAttrs, FullyConnectedAttrs, matmul_dims, matmul_reason


def check_fully_connected(attrs: FullyConnectedAttrs, tensors: OpTensors, caps: Caps) -> str | None:
    """FULLY_CONNECTED on either path: float, or int8 / uint8 (``qconv``: LiteRT's quantization
    rules, its double-precision requantization computed exactly in integers, so any device)."""
    quantized = np.dtype(tensors.outputs[0].dtype).kind != "f"
    x, w, b, y = tensors.inputs[0], tensors.inputs[1], tensors.input(2), tensors.outputs[0]
    if quantized:
        reason = conv_types_reason(x, w, b, y)
        if reason:
            return reason
    reason = activation_reason(attrs.activation)
    if reason:
        return reason
    if attrs.weights_format != 0:
        return "shuffled weights not supported"
    if len(w.shape) != 2 or w.shape[1] == 0:
        return f"weights must be 2-D [units, depth], got {list(w.shape)}"
    units, depth = w.shape
    size = int(np.prod(x.shape, dtype=np.int64))
    if size % depth:
        return f"input of {size} values does not split into rows of depth {depth}"
    if int(np.prod(y.shape, dtype=np.int64)) != size // depth * units or (quantized and y.shape[-1] != units):
        return f"output shape {list(y.shape)} does not hold {size // depth} rows of {units} units"
    if quantized and w.quantization.per_channel and w.quantization.quantized_dimension != 0:
        return "per-channel weights must be quantized along dimension 0 (units)"
    if b is not None and b.data is not None and b.data.size != units:
        return f"bias has {b.data.size} values for {units} channels"
    return None


@register("FULLY_CONNECTED", check=check_fully_connected, constants=(1, 2), fuses_activation=True)
def fully_connected(ctx: OpEmit, attrs: FullyConnectedAttrs) -> None:
    """Rows of the flattened input times the weights' transpose; keep_num_dims only shapes the output."""
    w = ctx.constant(ctx.operand(1))
    b = ctx.operand(2)
    bias = None if b == ir.NO_TENSOR else ctx.constant(b)
    x = ctx.input()
    rows = int(np.prod(ctx.shape(x))) // w.shape[1]
    if ctx.params.gpu:
        spec = gpu_specs.fully_connected_spec(ctx.params, rows, w, bias, ctx.clamp())
    else:
        spec = kernels.fully_connected_spec(rows, w, bias, ctx.clamp(), tiles=ctx.params.tiles)
    ctx.launch(spec, input=x, output=ctx.output())


def check_batch_matmul(attrs: BatchMatMulAttrs, tensors: OpTensors, caps: Caps) -> str | None:
    a, b, y = tensors.inputs[0].shape, tensors.inputs[1].shape, tensors.outputs[0].shape
    reason = matmul_reason(attrs, tuple(a), tuple(b))
    if reason:
        return reason
    m, n, _, batch = matmul_dims(attrs, tuple(a), tuple(b))
    if tuple(y) != (*batch, m, n):
        return f"output shape {list(y)} is not {[*batch, m, n]}"
    if len(batch) > 3:
        return "more than three batch dimensions"
    return None


def batch_strides(shape: tuple[int, ...], batch: tuple[int, ...], matrix: int) -> tuple[int, int, int]:
    """Per output batch dim (padded to 3), the operand's stride in matrices x ``matrix`` (0: broadcast)."""
    dims = (1,) * (len(batch) - len(shape)) + tuple(shape)
    strides, step = [], matrix
    for d in reversed(dims):
        strides.append(step if d > 1 else 0)
        step *= d
    strides = strides[::-1]
    return tuple([0] * (3 - len(strides)) + strides)


@register("BATCH_MATMUL", check=check_batch_matmul, max_rank=5)
def batch_matmul(ctx: OpEmit, attrs: BatchMatMulAttrs) -> None:
    """Batched GEMM with broadcast batches; a runtime right operand is packed on the device first."""
    a, b = ctx.operand(0), ctx.operand(1)
    m, n, k, batch = matmul_dims(attrs, tuple(ctx.graph.tensors[a].shape), tuple(ctx.graph.tensors[b].shape))
    a_shape, b_shape = ctx.shape(a), ctx.shape(b)
    dims = tuple([1] * (3 - len(batch)) + list(batch))
    b_batches = int(np.prod(b_shape[:-2], dtype=np.int64))
    lda, ask = (1, m) if attrs.adj_x else (k, 1)
    pack_strides = (1, k) if attrs.adj_y else (n, 1)  # (k, n) strides in a raw B matrix
    b_const = ctx.constant(b)
    b_kn = None
    if b_const is not None:
        raw = np.asarray(b_const, np.float32).reshape(b_batches, *b_shape[-2:])
        b_kn = raw.transpose(0, 2, 1) if attrs.adj_y else raw
    gpu = ctx.params.gpu
    specs = gpu_specs if gpu else kernels
    extra = (ctx.params,) if gpu else ()
    tiles = {} if gpu else {"tiles": ctx.params.tiles}
    probe = specs.gemm_spec(*extra, m, n, k, None, **tiles)  # the packed size of one B
    packed = specs.packed_b_floats(probe)
    batching = kernels.Batching(dims, batch_strides(a_shape[:-2], batch, m * k),
                                batch_strides(b_shape[:-2], batch, packed))
    spec = specs.gemm_spec(*extra, m, n, k, b_kn, None, ctx.clamp(), lda=lda, ask=ask, batching=batching,
                           pack_strides=None if b_kn is not None else pack_strides, **tiles)
    if b_kn is not None:
        ctx.launch(spec, input=a, output=ctx.output())
        return
    panels = ctx.scratch(4 * packed * b_batches)
    ctx.launch(specs.pack_b_spec(*extra, spec, b_batches), input=b, output=panels)
    ctx.launch(spec, input=a, weights=panels, output=ctx.output())
