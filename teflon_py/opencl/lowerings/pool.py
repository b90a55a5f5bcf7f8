"""AVERAGE_POOL_2D and MAX_POOL_2D (``pool.cl``, sizes as arguments: one program for all shapes)."""
from __future__ import annotations

from teflon_py import ir
from teflon_py.opencl.kernels import specs as kernels
from teflon_py.opencl.kernels.specs import KernelSpec
from teflon_py.opencl.registry import EmitContext, activation_reason, lowering, options
from teflon_py.tflite.options import Pool2DOptions

KERNELS = {"AVERAGE_POOL_2D": "avg_pool", "MAX_POOL_2D": "max_pool"}


def check_pool(graph: ir.Graph, op: ir.Operation) -> str | None:
    opts = options(op, Pool2DOptions)
    if min(opts.stride_h, opts.stride_w, opts.filter_height, opts.filter_width) < 1:
        return "strides and filter sizes must be at least 1"
    reason = activation_reason(opts.fused_activation_function)
    if reason:
        return reason
    x, y = graph.tensors[op.inputs[0]].shape, graph.tensors[op.outputs[0]].shape
    if len(x) != 4 or len(y) != 4:
        return "input and output must be 4-D (NHWC)"
    wh = kernels.window(x[1], opts.filter_height, opts.stride_h, 1, opts.padding)
    ww = kernels.window(x[2], opts.filter_width, opts.stride_w, 1, opts.padding)
    if (x[0], wh.out, ww.out, x[3]) != tuple(y) or min(wh.out, ww.out) < 1:
        return f"output shape {list(y)} does not follow from input {list(x)} and the options"
    return None


def pool_spec(kernel: str, x: tuple[int, int, int, int], opts: Pool2DOptions, clamp: kernels.Clamp,
              pads: kernels.Pads) -> KernelSpec:
    """One pool launch: a work-item per output pixel x 16 channels."""
    nb, ih, iw, c = x
    wh, ww = kernels.padded_windows(ih, iw, opts.filter_height, opts.filter_width, (opts.stride_h, opts.stride_w),
                                    (1, 1), opts.padding, pads)
    (ept, epb), (epl, epr) = pads
    args = kernels.scalars(C=c, IH=ih, IW=iw, OH=wh.out, OW=ww.out, FH=opts.filter_height, FW=opts.filter_width,
                           SH=opts.stride_h, SW=opts.stride_w, PT=wh.pad, PL=ww.pad, EPT=ept, EPB=epb, EPL=epl,
                           EPR=epr, lo=float(clamp[0]), hi=float(clamp[1]))
    return KernelSpec(files=("common.cl", "pool.cl"), name=kernel, defines={},
                      global_size=(-(-c // 16), ww.out, nb * wh.out), local_size=(1, 1, 1),
                      args=("input", "output", *args), scalars=args)


@lowering("AVERAGE_POOL_2D", "MAX_POOL_2D", check=check_pool, fuses_activation=True, folds_pad=True)
def pool_2d(ctx: EmitContext, op: ir.Operation) -> None:
    x = ctx.input(op)
    spec = pool_spec(KERNELS[op.name], ctx.shape(x), options(op, Pool2DOptions), ctx.clamp(op), ctx.pads(op))
    ctx.launch(spec, input=x, output=ctx.output(op))
