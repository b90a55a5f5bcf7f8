"""int8 / uint8 AVERAGE_POOL_2D, MAX_POOL_2D, MEAN and SOFTMAX on OpenCL (``qreduce.cl``, one
program for every shape): LiteRT's reference arithmetic, with the requantization constants and
softmax's exponential tables derived on the host by the fallback's own helpers.
"""
from __future__ import annotations

import numpy as np

from teflon_py import quant
from teflon_py.fallback import reduce as fallback_reduce
from teflon_py.fallback import softmax as fallback_softmax
from teflon_py.fallback.registry import Node
from teflon_py.opencl.kernels import qspecs as qkernels
from teflon_py.opencl.kernels import specs as kernels
from teflon_py.opencl.kernels.qspecs import flip
from teflon_py.opencl.kernels.specs import KernelSpec
from teflon_py.opencl.lowerings import pool as float_pool
from teflon_py.opencl.lowerings import reduce as float_reduce
from teflon_py.opencl.registry import OpEmit, register
from teflon_py.opencl.runtime.programs import template
from teflon_py.ops.common import Requantization
from teflon_py.ops.normalization import SoftmaxAttrs, softmax_scaling
from teflon_py.ops.pool import PoolAttrs, geometry
from teflon_py.ops.reduce import ReduceAttrs

#: qreduce.cl as a template with no macros: a partition's int8 reductions join its other integer
#: template kernels (qdepthwise.cl's) in one program, one front-end compile fewer (MobileNetV2
#: int8: 4 programs -> 3, the two probe children still busy on two at once). The float
#: reduce.cl stays apart: merged, MobileNetV2 float32 would have one program, which one child
#: builds while the other waits (2.16-2.33 s cold instead of 1.91-2.20).
FILES = ("quant.cl", template("qreduce.cl"))
KINDS = ("int8", "uint8")
POOLS = {"AVERAGE_POOL_2D": "qavg_pool", "MAX_POOL_2D": "qmax_pool"}


# -- pools -----------------------------------------------------------------------------------------

@register(*POOLS, kind="int8", check=float_pool.check_pool)
@register(*POOLS, kind="uint8", check=float_pool.check_pool)
def pool_2d(ctx: OpEmit, attrs: PoolAttrs) -> None:
    """One work-item per output pixel x 16 channels; the output's grid only sets the clamp."""
    x, yt = ctx.operand(0), ctx.graph.tensors[ctx.op.outputs[0]]
    nb, ih, iw, c = ctx.shape(x)
    g = geometry(attrs.padding, ih, iw, attrs.filter, attrs.strides)
    lo, hi = attrs.activation.range(yt.dtype, yt.scale, yt.zero_point)
    args = kernels.scalars(C=c, IH=ih, IW=iw, OH=g.out_h, OW=g.out_w, FH=g.filter_h,
                           FW=g.filter_w, SH=g.stride_h, SW=g.stride_w, PT=g.pad_h, PL=g.pad_w,
                           flip=flip(yt.dtype), lo=int(lo), hi=int(hi))
    spec = KernelSpec(files=FILES, name=POOLS[ctx.op.name], defines={},
                      global_size=(-(-c // 16), g.out_w, nb * g.out_h), local_size=(1, 1, 1),
                      args=("input", "output", *args), scalars=args)
    qkernels.launch(ctx, spec, input=x, output=ctx.output())


# -- MEAN ------------------------------------------------------------------------------------------

@register("MEAN", kind="int8", check=float_reduce.check_mean, params=(1,))
@register("MEAN", kind="uint8", check=float_reduce.check_mean, params=(1,))
def mean(ctx: OpEmit, attrs: ReduceAttrs) -> None:
    """``qmean_mid`` over consecutive axes with 16+ values after them (16 outputs a vector, the
    float MEAN's ``mean_mid_geometry``); else ``qmean``: kept x reduced index spaces (each padded
    to four dims) as strides into the input."""
    graph, op = ctx.graph, ctx.op
    xt, yt = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
    shape, axes = ctx.shape(op.inputs[0]), float_reduce.mean_axes(attrs)
    strides = [int(np.prod(shape[i + 1:], dtype=np.int64)) for i in range(len(shape))]
    dims = list(zip(shape, strides))
    kept = [(1, 0)] * (4 - len(shape) + len(axes)) + [ds for i, ds in enumerate(dims) if i not in axes]
    red = [(1, 0)] * (4 - len(axes)) + [ds for i, ds in enumerate(dims) if i in axes]
    n_out = int(np.prod([d for d, _ in kept]))
    count = int(np.prod([d for d, _ in red]))
    qmin, qmax = quant.QRANGE[np.dtype(yt.dtype)]
    defines: dict = {}
    if attrs.requantization == Requantization.FLOAT32:  # XNNPACK's rule: a float scale, no m/shift
        defines["REQ_FLOAT"] = True
        m, shift = 0, 0
        requant = {"scale32": float(quant.float32_mean_scale(xt.scale, yt.scale, count))}
    else:
        m, shift = fallback_reduce.mean_multiplier(Node.of(graph, op), count)
        requant = {}
    geometry = float_reduce.mean_mid_geometry(shape, axes)
    if geometry is not None:  # 16 outputs at a time (qmean_mid)
        n, inner, bpi, global_size = geometry
        args = kernels.scalars(n=n, inner=inner, bpi=bpi, count=count, in_zp=xt.zero_point, m=m, shift=shift,
                               out_zp=yt.zero_point, qmin=qmin, qmax=qmax, flip=flip(xt.dtype), **requant)
        spec = KernelSpec(files=FILES, name="qmean", defines=defines, global_size=global_size, local_size=(1,),
                          args=("input", "output", *args), scalars=args, entry="qmean_mid")
        qkernels.launch(ctx, spec, input=op.inputs[0], output=ctx.output())
        return
    opi = max(1, min(64, 4096 // max(count, 1)))
    args = kernels.scalars(n_out=n_out, opi=opi, k1=kept[1][0], k2=kept[2][0], k3=kept[3][0],
                           **{f"ks{i}": s for i, (_, s) in enumerate(kept)},
                           **{f"r{i}": d for i, (d, _) in enumerate(red)},
                           **{f"rs{i}": s for i, (_, s) in enumerate(red)}, count=count, in_zp=xt.zero_point,
                           m=m, shift=shift, out_zp=yt.zero_point, qmin=qmin, qmax=qmax, flip=flip(xt.dtype),
                           **requant)
    spec = KernelSpec(files=FILES, name="qmean", defines=defines, global_size=(-(-n_out // opi),), local_size=(1,),
                      args=("input", "output", *args), scalars=args)
    qkernels.launch(ctx, spec, input=op.inputs[0], output=ctx.output())


# -- SOFTMAX ---------------------------------------------------------------------------------------

def softmax_tables(beta: float, input_scale: float) -> tuple[np.ndarray, np.ndarray, int]:
    """(Q0 exp, Q12 term, diff_min) for every row-maximum distance d = max - x in [0, 255], as
    ``fallback.softmax.softmax_quantized`` computes them per element."""
    multiplier, left_shift, diff_min = softmax_scaling(beta, input_scale)
    diff = -np.arange(256, dtype=np.int64)
    used = diff >= diff_min
    scaled = quant.multiply_by_quantized_multiplier_greater_than_one(np.where(used, diff, 0), multiplier,
                                                                     left_shift)
    exp = quant.exp_on_negative_values(scaled, fallback_softmax.SCALED_DIFF_INTEGER_BITS)
    terms = np.where(used, quant.rescale(exp, 0, fallback_softmax.ACCUMULATION_INTEGER_BITS), 0)
    return exp.astype(np.int32), terms.astype(np.int32), int(diff_min)


@register("SOFTMAX", kind="int8", check=float_reduce.check_softmax, max_rank=None)
@register("SOFTMAX", kind="uint8", check=float_reduce.check_softmax, max_rank=None)
def softmax(ctx: OpEmit, attrs: SoftmaxAttrs) -> None:
    """One row per work-item: max, sum of table terms, GetReciprocal, scaled table exps."""
    x, yt = ctx.operand(0), ctx.graph.tensors[ctx.op.outputs[0]]
    exps, terms, diff_min = softmax_tables(attrs.beta, ctx.graph.tensors[x].scale)
    shape = ctx.shape(x)
    qmin, qmax = quant.QRANGE[np.dtype(yt.dtype)]
    args = kernels.scalars(depth=shape[-1], flip=flip(yt.dtype), diff_min=diff_min, qmin=qmin, qmax=qmax)
    rows = int(np.prod(shape[:-1], dtype=np.int64))
    spec = KernelSpec(files=FILES, name="qsoftmax", defines={}, global_size=(rows,), local_size=(1,),
                      args=("input", "output", "exps", "terms", *args),
                      constants={"exps": exps, "terms": terms}, scalars=args)
    qkernels.launch(ctx, spec, input=x, output=ctx.output())


