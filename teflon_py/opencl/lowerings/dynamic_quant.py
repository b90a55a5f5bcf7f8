"""XNNPACK's qd8 on OpenCL (``qd8.cl``): DYNAMIC_QUANTIZE (per-row int8 chosen at run time) and
DYNAMIC_FULLY_CONNECTED over its output, both bit-identical to the NumPy fallback
(``teflon_py.quant.dynamic``, ``fallback.dynamic_quant``): float32 operations in the fallback's
order with correctly rounded division and subnormals kept (``Caps.exact_fp32_reason``), and an
exact integer accumulator."""
from __future__ import annotations

import math

import numpy as np

from teflon_py import ir
from teflon_py.opencl.caps import Caps
from teflon_py.opencl.kernels import packing
from teflon_py.opencl.kernels import specs as kernels
from teflon_py.opencl.kernels.specs import KernelSpec
from teflon_py.opencl.registry import OpEmit, OpTensors, register
from teflon_py.ops.elementwise import activation_reason
from teflon_py.ops.matmul import DynamicQuantizeAttrs, FullyConnectedAttrs, dynamic_rows

FILES = ("qd8.cl",)
#: the build option every qd8 program needs: x / y exactly as NumPy's float32 division
EXACT_DIVIDE = ("-cl-fp32-correctly-rounded-divide-sqrt",)
INT32_MAX = (1 << 31) - 1
#: rows of DYNAMIC_FULLY_CONNECTED per work-item (x 16 units)
ROWS_PER_ITEM = 4


def _size(shape: tuple[int, ...]) -> int:
    return int(np.prod(shape, dtype=np.int64))


# -- DYNAMIC_QUANTIZE ------------------------------------------------------------------------------

def check_dynamic_quantize(attrs: DynamicQuantizeAttrs, tensors: OpTensors, caps: Caps) -> str | None:
    if _size(tensors.inputs[0].shape) > INT32_MAX:
        return "more than 2^31 - 1 values"
    return caps.exact_fp32_reason(divide=True)


@register("DYNAMIC_QUANTIZE", dtypes=("float32", "int8"), check=check_dynamic_quantize, max_rank=None)
def dynamic_quantize(ctx: OpEmit, attrs: DynamicQuantizeAttrs) -> None:
    """One work-item per row: its range, scale and zero point, then its values."""
    x = ctx.input()
    shape = ctx.shape(x)
    rows = dynamic_rows(attrs, shape)
    args = kernels.scalars(rows=rows, depth=_size(shape) // rows)
    spec = KernelSpec(files=FILES, name="qd8_quantize", defines={}, global_size=(rows,), local_size=(1,),
                      args=("input", "output", "output1", *args), scalars=args, options=EXACT_DIVIDE)
    ctx.launch(spec, input=x, output=ctx.output(0), output1=ctx.output(1))


# -- DYNAMIC_FULLY_CONNECTED -----------------------------------------------------------------------

def zero_point_free_weights(w: ir.Tensor) -> np.ndarray:
    """The int64 [units, depth] weights less their (per-tensor or per-unit) zero point."""
    zp = np.asarray(w.quantization.zero_point, np.int64).reshape(-1, 1)
    return np.asarray(w.data, np.int64) - zp


def check_dynamic_fully_connected(attrs: FullyConnectedAttrs, tensors: OpTensors, caps: Caps) -> str | None:
    q, w, y = tensors.inputs[0], tensors.inputs[2], tensors.outputs[0]
    reason = activation_reason(attrs.activation)
    if reason:
        return reason
    if attrs.weights_format != 0:
        return "shuffled weights not supported"
    units, depth = w.shape
    wq = w.quantization
    if wq.scale.size not in (1, units) or wq.zero_point.size not in (1, units):
        return f"weights need one scale and zero point, or one per unit ({units}), got {wq.scale.size}"
    if wq.per_channel and wq.quantized_dimension != 0:
        return "per-channel weights must be quantized along dimension 0 (units)"
    wz = zero_point_free_weights(w)
    if wz.min(initial=0) < -(1 << 15) or wz.max(initial=0) > (1 << 15) - 1:
        return "weights less their zero point do not fit int16"
    if 128 * int(np.abs(wz).sum(axis=1).max(initial=0)) > INT32_MAX:
        return "the weights' int32 accumulator could overflow (128 x sum of |w - zero point| per unit > 2^31 - 1)"
    if max(_size(q.shape), _size(y.shape), packing.round_up(units, 16) * depth) > INT32_MAX:
        return "more than 2^31 - 1 values"
    return caps.exact_fp32_reason()


@register("DYNAMIC_FULLY_CONNECTED", kind="int8", dtypes=("int8", "float32"),
          check=check_dynamic_fully_connected, constants=(2,), max_rank=None, fuses_activation=True)
def dynamic_fully_connected(ctx: OpEmit, attrs: FullyConnectedAttrs) -> None:
    """MR rows x 16 units per work-item; keep_num_dims only shapes the output."""
    wt = ctx.graph.tensors[ctx.operand(2)]
    wz = zero_point_free_weights(wt)
    units, depth = wz.shape
    up = packing.round_up(units, 16)
    narrow = bool(wz.min(initial=0) >= -128 and wz.max(initial=0) <= 127)
    padded = np.zeros((up, depth), np.int8 if narrow else np.int16)
    padded[:units] = wz
    weights = np.ascontiguousarray(padded.reshape(up // 16, 16, depth).transpose(0, 2, 1))
    wsum = np.zeros(up, np.int32)
    wsum[:units] = wz.sum(axis=1)
    wscale = np.zeros(up, np.float32)
    wscale[:units] = np.broadcast_to(np.asarray(wt.quantization.scale, np.float32).reshape(-1), (units,))
    x = ctx.input()
    rows = _size(ctx.shape(x)) // depth
    mr = 1 if rows == 1 else ROWS_PER_ITEM
    b = ctx.operand(3)
    defines: dict[str, object] = {"WT": "char" if narrow else "short", "MR": mr}
    bindings: dict[str, int] = {"input": x, "params": ctx.operand(1)}
    if b != ir.NO_TENSOR:
        defines["HAS_BIAS"] = True
        bindings["bias"] = b
    lo, hi = ctx.clamp()
    # an XNNPACK layer without output_min_max keeps infinities (its fallback too): the -FLT_MAX /
    # FLT_MAX that TFLite's rule gives an unbounded side (kernels.fused_clamp) do not apply
    lo = -math.inf if lo == -kernels.FLT_MAX else lo
    hi = math.inf if hi == kernels.FLT_MAX else hi
    args = kernels.scalars(rows=rows, depth=depth, units=units, lo=float(lo), hi=float(hi))
    spec = KernelSpec(files=FILES, name="qd8_fc", defines=defines, global_size=(up // 16, -(-rows // mr)),
                      local_size=(1, 1),
                      args=("input", "params", "weights", "wsum", "wscale", *(("bias",) if "bias" in bindings else ()),
                            "output", *args),
                      constants={"weights": weights, "wsum": wsum, "wscale": wscale}, scalars=args,
                      flops=2 * rows * units * depth)
    ctx.launch(spec, **bindings, output=ctx.output())
