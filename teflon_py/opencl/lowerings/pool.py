"""AVERAGE_POOL_2D and MAX_POOL_2D (``pool.cl``, sizes as arguments: one program for all shapes)."""
from __future__ import annotations

from teflon_py.opencl.kernels import gpu_small
from teflon_py.opencl.kernels import specs as kernels
from teflon_py.opencl.kernels.specs import KernelSpec
from teflon_py.opencl.registry import OpEmit, OpTensors, register
from teflon_py.ops.common import window
from teflon_py.ops.pool import PoolAttrs, empty_window, geometry, pool_types_reason, window_reason

KERNELS = {"AVERAGE_POOL_2D": "avg_pool", "MAX_POOL_2D": "max_pool"}


def geometry_reason(attrs: PoolAttrs, tensors: OpTensors, quantized: bool = False) -> str | None:
    """The pool's checks, shared by the float and the quantized lowerings: types, a clamping
    activation, 4-D tensors, an output shape that follows from the windows; quantized pools
    also need every window to touch the input (the average would divide by zero)."""
    xt, yt = tensors.inputs[0], tensors.outputs[0]
    if quantized:
        for t in (xt, yt):
            if t.quantization is None or t.quantization.scale.size == 0:
                return f"{t.describe()} has no quantization parameters"
            if t.quantization.per_channel:
                return f"{t.describe()} is quantized per channel"
    if not attrs.activation.is_clamp:
        return f"fused activation {attrs.activation.kind.name} not supported"
    reason = pool_types_reason("AVERAGE_POOL_2D", xt.dtype, yt.dtype)
    if reason:
        return reason
    x, y = xt.shape, yt.shape
    if len(x) != 4 or len(y) != 4:
        return "input and output must be 4-D (NHWC)"
    reason = window_reason(attrs, x[1], x[2]) or kernels.index_range_reason((*attrs.strides, *attrs.filter))
    if reason:
        return reason
    g = geometry(attrs.padding, x[1], x[2], attrs.filter, attrs.strides)
    if (x[0], g.out_h, g.out_w, x[3]) != tuple(y):
        return f"output shape {list(y)} does not follow from input {list(x)} and the attributes"
    if quantized and empty_window(g, x[1], x[2]):
        return "a pooling window lies entirely in the padding"
    return None


def check_pool(attrs: PoolAttrs, tensors: OpTensors, caps: object) -> str | None:
    return geometry_reason(attrs, tensors, quantized=tensors.outputs[0].dtype.kind != "f")


def padded_windows(attrs: PoolAttrs, ih: int, iw: int, pads: kernels.Pads) -> tuple[kernels.Window, kernels.Window]:
    """The windows over an input padded by ``pads`` (a folded PAD) first, pads counted before."""
    (pt, pb), (pl, pr) = pads
    wh = window(ih + pt + pb, attrs.filter[0], attrs.strides[0], 1, attrs.padding, 0)
    ww = window(iw + pl + pr, attrs.filter[1], attrs.strides[1], 1, attrs.padding, 1)
    return kernels.Window(wh.out, wh.before + pt), kernels.Window(ww.out, ww.before + pl)


#: Work-items a pool launch aims for: a few dozen per core (PoCL pays per work-item).
POOL_ITEMS = 128


def pool_spec(kernel: str, x: tuple[int, int, int, int], attrs: PoolAttrs, clamp: kernels.Clamp,
              pads: kernels.Pads) -> KernelSpec:
    """One pool launch: a work-item per run of output pixels of a row x 16 channels, about
    ``POOL_ITEMS`` of them."""
    nb, ih, iw, c = x
    wh, ww = padded_windows(attrs, ih, iw, pads)
    (ept, epb), (epl, epr) = pads
    (fh, fw), (sh, sw) = attrs.filter, attrs.strides
    items = -(-c // 16) * nb * wh.out
    ppi = max(1, min(ww.out, ww.out * items // POOL_ITEMS))
    args = kernels.scalars(C=c, IH=ih, IW=iw, OH=wh.out, OW=ww.out, FH=fh, FW=fw,
                           SH=sh, SW=sw, PT=wh.pad, PL=ww.pad, EPT=ept, EPB=epb, EPL=epl,
                           EPR=epr, lo=float(clamp[0]), hi=float(clamp[1]), ppi=ppi)
    return KernelSpec(files=("common.cl", "pool.cl"), name=kernel, defines={},
                      global_size=(-(-c // 16), -(-ww.out // ppi), nb * wh.out), local_size=(1, 1, 1),
                      args=("input", "output", *args), scalars=args)


@register("AVERAGE_POOL_2D", "MAX_POOL_2D", check=check_pool, fuses_activation=True, folds_pad=True)
def pool_2d(ctx: OpEmit, attrs: PoolAttrs) -> None:
    x = ctx.input()
    if ctx.params.gpu:  # one output float per work-item (gpu_pool.cl)
        nb, ih, iw, c = ctx.shape(x)
        wh, ww = padded_windows(attrs, ih, iw, ctx.pads())
        spec = gpu_small.pool_gpu_spec(KERNELS[ctx.op.name], nb, c, ih, iw, wh, ww, attrs.filter, attrs.strides,
                                       ctx.pads(), ctx.clamp(), ctx.params)
    else:
        spec = pool_spec(KERNELS[ctx.op.name], ctx.shape(x), attrs, ctx.clamp(), ctx.pads())
    ctx.launch(spec, input=x, output=ctx.output())
