"""int8 / uint8 elementwise ops on OpenCL (``qelementwise.cl``, one program for every shape):

- ADD, SUB, MUL and int8 SQUARED_DIFFERENCE with broadcasting: each input's prepared term
  (ADD/SUB: offset, shifted left by 20 and rescaled; MUL: less its zero point; SQUARED_DIFFERENCE:
  offset, shifted left by 7 and rescaled) is a 256-entry table the host fills with the same
  helpers as the fallback (``teflon_py.quant.binary``, ``fallback.binary``); the device combines
  two table entries (sum, difference, product, squared difference), requantizes
  (MultiplyByQuantizedMultiplier), adds the zero point and clamps.
- One-input 8-bit -> 8-bit ops (RELU family, LOGISTIC, TANH, HARD_SWISH, ABS, EXP, int8 RSQRT, ...),
  integer-to-integer QUANTIZE and NNAPI_REQUANTIZE: a 256-entry table computed by running the op's fallback kernel on
  every code, so they are bit-exact with it by construction; the kernel is one table lookup.
- QUANTIZE float32 -> int8/uint8 and DEQUANTIZE int8/uint8 -> float32, per tensor or channel.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from teflon_py import ir, quant
from teflon_py.errors import UnsupportedError
from teflon_py.fallback import binary as fallback_binary
from teflon_py.fallback.registry import KERNELS, Node
from teflon_py.opencl.caps import Caps
from teflon_py.opencl.kernels import qspecs as qkernels
from teflon_py.opencl.kernels import specs as kernels
from teflon_py.opencl.kernels.qspecs import codes, flip
from teflon_py.opencl.kernels.specs import KernelSpec
from teflon_py.opencl.lowerings.elementwise import broadcast_geometry, check_unary
from teflon_py.opencl.lowerings.elementwise import check_binary as check_float_binary
from teflon_py.opencl.registry import OpEmit, OpTensors, register
from teflon_py.ops.elementwise import BinaryAttrs

FILES = ("quant.cl", "qelementwise.cl")
KINDS = ("int8", "uint8")
#: one-input ops whose 8-bit output is a function of the input value alone (a table lookup)
LUT_OPS = ("RELU", "RELU6", "RELU_N1_TO_1", "RELU_0_TO_1", "LOGISTIC", "TANH", "HARD_SWISH", "ABS", "NEG",
           "EXP", "LOG", "ELU", "GELU", "LEAKY_RELU", "RSQRT")
#: LUT ops TFLite computes for int8 only (its uint8 variants do not exist, so no uint8 table either)
INT8_ONLY = ("ABS", "NEG", "EXP", "LOG", "ELU", "RSQRT")
#: LUT ops LiteRT defines only from the input's zero point up (it fails the invoke on a smaller
#: value, as the fallback does). The device cannot fail an invoke, so these run on it only when
#: no code lies below the zero point (the type's lowest code: what a layer norm's variance, whose
#: range starts at 0, has); the table starts at the zero point.
FROM_ZERO_POINT = ("RSQRT",)


def _unsupported(message: str) -> Exception:
    return UnsupportedError(message)


def _node(name: str, attrs: object, tensors: OpTensors) -> Node:
    """A stand-alone fallback node of op ``name`` over ``tensors`` (for its kernel's preparation)."""
    return Node(ir.Operation(-1, name, (), (), attrs), None, list(tensors.inputs), list(tensors.outputs))


def _prepared(fn: Callable[[], object]) -> str | None:
    """Run a preparation: LiteRT's rule it breaks (UnsupportedError) or arithmetic that fails on
    these parameters becomes the reason."""
    try:
        fn()
    except UnsupportedError as e:
        return str(e)
    except ArithmeticError as e:
        return f"cannot be prepared ({e})"
    return None


# -- ADD / SUB / MUL ---------------------------------------------------------------------------------

def binary_tables(name: str, attrs: BinaryAttrs, tensors: OpTensors) -> tuple[
        np.ndarray, np.ndarray, int, int, int, int, int]:
    """(table a, table b, multiplier, shift, output zero point, lo, hi) of a quantized ADD/SUB/MUL
    (``teflon_py.quant.binary``'s numbers, as the fallback uses them)."""
    if name == "SQUARED_DIFFERENCE":
        return squared_difference_tables(attrs, tensors)
    in1, in2, out = tensors.inputs[0], tensors.inputs[1], tensors.outputs[0]
    a, b = codes(in1.dtype), codes(in2.dtype)
    if name == "MUL":
        p = quant.mul_params(in1, in2, out, attrs.activation, _unsupported)
        ta, tb = a.astype(np.int64) + p["off1"], b.astype(np.int64) + p["off2"]
        m, e = p["m"], p["e"]
    else:
        p = quant.add_sub_params(in1, in2, out, attrs.activation, _unsupported)
        ta = quant.scale_input(a, p["off1"], p["left_shift"], p["m1"], p["e1"])
        tb = quant.scale_input(b, p["off2"], p["left_shift"], p["m2"], p["e2"])
        m, e = p["mo"], p["eo"]
    ints = (int(m), int(e), int(p["out_off"]), int(p["lo"]), int(p["hi"]))
    return (ta.astype(np.int32), tb.astype(np.int32), *ints)


#: the most |table a entry| + |table b entry| whose square the kernel's int32 arithmetic holds
_SQDIFF_MAX_DIFF = 46340  # floor(sqrt(2^31 - 1))


def squared_difference_tables(attrs: object, tensors: OpTensors) -> tuple[
        np.ndarray, np.ndarray, int, int, int, int, int]:
    """``binary_tables`` of int8 SQUARED_DIFFERENCE: each input offset, shifted left by 7 and
    rescaled by the fallback's own helper; out = MBQM((a - b)^2, mo, eo) + zo, clamped to int8.

    Refused (UnsupportedError): an output multiplier of 1 or more (eo > 0), on which LiteRT's
    Prepare aborts (QuantizeMultiplierSmallerThanOneExp's checks) and the kernel's requantization
    would not match the fallback's; tables whose difference could square past int32 (never with multipliers
    below 1: |entry| <= 255 * 2^7 / 2)."""
    node = _node("SQUARED_DIFFERENCE", attrs, tensors)
    quant.require_per_tensor((*tensors.inputs[:2], tensors.outputs[0]), _unsupported)
    z1, z2, zo, m1, e1, m2, e2, mo, eo = fallback_binary.squared_difference_params(node)
    if eo > 0:
        raise UnsupportedError(f"output multiplier >= 1 (shift {eo}): LiteRT's kernel takes only multipliers below 1")
    ta = fallback_binary.squared_difference_input(codes(np.int8), z1, m1, e1)
    tb = fallback_binary.squared_difference_input(codes(np.int8), z2, m2, e2)
    if int(np.abs(ta).max()) + int(np.abs(tb).max()) > _SQDIFF_MAX_DIFF:
        raise UnsupportedError("the squared difference of the rescaled inputs could pass int32")
    lo, hi = quant.QRANGE[np.dtype(np.int8)]
    return ta.astype(np.int32), tb.astype(np.int32), mo, eo, zo, int(lo), int(hi)


def binary_reason(name: str, attrs: BinaryAttrs, tensors: OpTensors) -> str | None:
    """The float check (a clamp activation, shapes the kernels broadcast), one type throughout,
    and the quantized preparation."""
    reason = check_float_binary(attrs, tensors, None)
    if reason:
        return reason
    if len({t.dtype for t in (*tensors.inputs, tensors.outputs[0])}) != 1:
        return "input and output types must match"
    return _prepared(lambda: binary_tables(name, attrs, tensors))


def check_add(attrs: BinaryAttrs, tensors: OpTensors, caps: object) -> str | None:
    return binary_reason("ADD", attrs, tensors)


def check_sub(attrs: BinaryAttrs, tensors: OpTensors, caps: object) -> str | None:
    return binary_reason("SUB", attrs, tensors)


def check_mul(attrs: BinaryAttrs, tensors: OpTensors, caps: object) -> str | None:
    return binary_reason("MUL", attrs, tensors)


def check_squared_difference(attrs: object, tensors: OpTensors, caps: object) -> str | None:
    return binary_reason("SQUARED_DIFFERENCE", attrs, tensors)


def binary(ctx: OpEmit, attrs: BinaryAttrs) -> None:
    """``qadd`` / ``qsub`` / ``qsquared_difference``: two table lookups, one requantization per
    element; ``qmul``: MUL's tables are the code plus an offset, so the kernel takes the offsets
    (the table value of code 0) and reads its operands as bytes."""
    op = ctx.op
    ta, tb, m, e, zo, lo, hi = binary_tables(op.name, attrs, OpTensors.of(ctx.graph, op))
    a, b, y = ctx.operand(0), ctx.operand(1), op.outputs[0]
    dims, sa, sb, inner, a_in, b_in = broadcast_geometry(ctx.shape(a), ctx.shape(b), ctx.shape(y))
    rows = int(np.prod(dims))
    global_size, rpi, chunk = kernels.row_blocks(rows, inner)
    args = kernels.scalars(rows=rows, rpi=rpi, inner=inner, chunk=chunk, sa_in=a_in, sb_in=b_in, d1=dims[1],
                           d2=dims[2], d3=dims[3], **{f"sa{i}": s for i, s in enumerate(sa)},
                           **{f"sb{i}": s for i, s in enumerate(sb)}, flip=flip(ctx.graph.tensors[y].dtype),
                           m=m, shift=e, zo=zo, lo=lo, hi=hi)
    if op.name == "MUL":
        args.update(kernels.scalars(oa=int(ta[0]), ob=int(tb[0])))
        spec = KernelSpec(files=FILES, name="qmul", defines={}, global_size=global_size, local_size=(1, 1),
                          args=("a", "b", "output", *args), scalars=args)
    else:
        spec = KernelSpec(files=FILES, name="q" + op.name.lower(), defines={}, global_size=global_size,
                          local_size=(1, 1), args=("a", "b", "output", "ta", "tb", *args),
                          constants={"ta": ta, "tb": tb}, scalars=args)
    qkernels.launch(ctx, spec, a=a, b=b, output=ctx.output())


# -- table lookups -----------------------------------------------------------------------------------

def lut_table(name: str, attrs: object, tensors: OpTensors) -> np.ndarray:
    """The op's fallback kernel on every input code: the table the device looks outputs up in
    (``FROM_ZERO_POINT`` ops: on the codes from the zero point up, its entry repeated below)."""
    x, y = tensors.inputs[0], tensors.outputs[0]
    values = codes(x.dtype)
    start = 0
    if name in FROM_ZERO_POINT:
        if x.quantization is None:
            raise UnsupportedError(f"{x.describe()} has no quantization parameters")
        start = x.zero_point - int(values[0])
        if not 0 <= start < values.size:
            raise UnsupportedError(f"input zero point {x.zero_point} outside the type's range")
    out = np.asarray(KERNELS[name](_node(name, attrs, tensors), [values[start:]]))
    if out.dtype != y.dtype or out.shape != (values.size - start,):
        raise UnsupportedError(f"the fallback gave {out.dtype} {out.shape} for {values.size - start} codes")
    return np.concatenate([np.repeat(out[:1], start), out]).view(np.uint8)


def epilogue_table(graph: ir.Graph, folded: tuple[int, ...]) -> np.ndarray:
    """The 8-bit ops ``folded`` into a producer's epilogue (``fusion.plan_table_activations``: one
    ``fusion.TABLE_OPS`` op, or a swish's LOGISTIC then its MUL) as 256 int32 entries, one per code
    of their input x (entry k: x = k + the type's lowest value), each the raw output byte: the
    first op's ``lut_table``, then for a swish the MUL's fallback kernel on (x, logistic) for every
    code. Exact by construction, as ``qlut`` and ``qmul`` running one after the other."""
    first = graph.operations[folded[0]]
    x = graph.tensors[first.inputs[0]]
    table = lut_table(first.name, first.attrs, OpTensors.of(graph, first))
    if len(folded) == 2:
        mul = graph.operations[folded[1]]
        s = table.view(graph.tensors[first.outputs[0]].dtype)
        operands = {first.inputs[0]: codes(x.dtype), first.outputs[0]: s}
        out = np.asarray(KERNELS["MUL"](Node.of(graph, mul), [operands[t] for t in mul.inputs]))
        y = graph.tensors[mul.outputs[0]]
        if out.dtype != y.dtype or out.shape != (256,):
            raise UnsupportedError(f"the fallback MUL gave {out.dtype} {out.shape} for 256 codes")
        table = out.view(np.uint8)
    return table.astype(np.int32)


def lut_reason(name: str, attrs: object, tensors: OpTensors) -> str | None:
    """The float check (output shaped as the input), then the table's preparation."""
    if len(tensors.inputs) != 1:
        return "needs exactly one operand"
    return check_unary(attrs, tensors, None) or _prepared(lambda: lut_table(name, attrs, tensors))


def _lut_check(name: str) -> Callable[[object, OpTensors, object], str | None]:
    def check(attrs: object, tensors: OpTensors, caps: object) -> str | None:
        reason = lut_reason(name, attrs, tensors)
        x = tensors.inputs[0]
        if reason is None and name in FROM_ZERO_POINT and x.quantization is not None:
            lowest = int(codes(x.dtype)[0])
            if x.zero_point > lowest:
                return (f"{name} of {x.describe()}: codes below its zero point {x.zero_point} are negative "
                        f"values, on which LiteRT fails the invoke; an OpenCL kernel cannot fail one "
                        f"(zero point {lowest} runs here)")
        return reason

    check.__name__ = check.__qualname__ = f"check_{name.lower()}"
    return check


def lut_spec(n: int, dtype: np.dtype, table: np.ndarray) -> KernelSpec:
    """``qlut`` over ``n`` contiguous 8-bit values of ``dtype``: out = table[code]."""
    (pieces, _), _, chunk = kernels.row_blocks(1, n)
    args = kernels.scalars(n=n, chunk=chunk, flip=flip(dtype))
    return KernelSpec(files=FILES, name="qlut", defines={}, global_size=(pieces,), local_size=(1,),
                      args=("input", "output", "table", *args),
                      constants={"table": np.ascontiguousarray(table).view(np.uint8)}, scalars=args)


def lut(ctx: OpEmit, attrs: object) -> None:
    """``qlut``: out = table[code] over the flat tensor."""
    x = ctx.operand(0)
    n = int(np.prod(ctx.shape(x), dtype=np.int64))
    table = lut_table(ctx.op.name, attrs, OpTensors.of(ctx.graph, ctx.op))
    spec = lut_spec(n, ctx.graph.tensors[x].dtype, table)
    qkernels.launch(ctx, spec, input=x, output=ctx.output())


def concat_requantize_table(graph: ir.Graph, op: ir.Operation, k: int) -> np.ndarray | None:
    """The 256-entry table moving uint8 CONCATENATION input ``k`` onto the output's grid (TFLite's
    ConcatenationWithScaling, from the fallback's own helper), or None when the grids match.

    For ``ops_shape``'s CONCATENATION, which copies raw bytes: launch ``lut_spec`` with this
    table from the input into a ``ctx.scratch`` of its size and copy from there.
    """
    from teflon_py.fallback import shape as fallback_shape

    node = Node.of(graph, op)
    t, out = node.inputs[k], node.outputs[0]
    if t.scale == out.scale and t.zero_point == out.zero_point:
        return None
    return np.asarray(fallback_shape._concat_rescale(node, codes(t.dtype), t))


# -- QUANTIZE float32 -> 8-bit, DEQUANTIZE 8-bit -> float32 ------------------------------------------

def channel_params(t: ir.Tensor) -> tuple[np.ndarray, np.ndarray, int, int]:
    """(float32 scales, int32 zero points, inner size, channels) of ``t``'s quantization."""
    q = t.quantization
    channels = q.scale.size if q.per_channel else 1
    inner = int(np.prod(t.shape[q.quantized_dimension + 1:], dtype=np.int64)) if q.per_channel else 1
    return q.scale.astype(np.float32), q.zero_point.astype(np.int32), max(inner, 1), channels


def _quantization_reason(t: ir.Tensor) -> str | None:
    q = t.quantization
    if q is None or q.scale.size == 0:
        return f"{t.describe()} has no quantization parameters"
    dim = q.quantized_dimension
    if q.per_channel and (dim >= len(t.shape) or t.shape[dim] != q.scale.size):
        return f"{q.scale.size} scales do not match dimension {q.quantized_dimension} of {list(t.shape)}"
    return None


#: scales from here up make a flushed subnormal input irrelevant: |x / scale| < 2^-26 rounds to 0
_FLUSH_SAFE_SCALE = 2.0 ** -100


def check_quantize_float(attrs: object, tensors: OpTensors, caps: Caps) -> str | None:
    """float32 -> int8 / uint8 on any device: the kernel finds the correctly rounded quotient
    x / scale near half-integers itself (fma residuals), so neither a correctly rounded division
    nor fp64 is needed; a device that flushes subnormals is fine unless a scale is below 2^-100."""
    y = tensors.outputs[0]
    if y.dtype not in (np.int8, np.uint8):
        return f"float32 to {y.dtype} not lowered (int8 and uint8 are)"
    reason = check_unary(attrs, tensors, None) or _quantization_reason(y)
    if reason:
        return reason
    if float(np.min(y.quantization.scale)) < _FLUSH_SAFE_SCALE:
        return caps.exact_fp32_reason()
    return None


def quantize_float(ctx: OpEmit, attrs: object) -> None:
    """``qquantize``: round(x / scale) + zero point, halves away from zero, saturated."""
    y = ctx.graph.tensors[ctx.op.outputs[0]]
    scale, zp, inner, channels = channel_params(y)
    n = int(np.prod(y.shape, dtype=np.int64))
    (pieces, _), _, chunk = kernels.row_blocks(1, n)
    qmin, qmax = quant.QRANGE[np.dtype(y.dtype)]
    args = kernels.scalars(n=n, chunk=chunk, inner=inner, channels=channels, qmin=qmin, qmax=qmax)
    spec = KernelSpec(files=FILES, name="qquantize", defines={}, global_size=(pieces,), local_size=(1,),
                      args=("input", "output", "scale", "zp", *args), constants={"scale": scale, "zp": zp},
                      scalars=args)
    qkernels.launch(ctx, spec, input=ctx.operand(0), output=ctx.output())


def check_dequantize(attrs: object, tensors: OpTensors, caps: object) -> str | None:
    x, y = tensors.inputs[0], tensors.outputs[0]
    if y.dtype != np.float32:
        return f"output type {y.dtype} not supported"
    return check_unary(attrs, tensors, None) or _quantization_reason(x)


def dequantize(ctx: OpEmit, attrs: object) -> None:
    """``qdequantize``: scale * (q - zero point) in float32 (exact: one rounding of an exact product)."""
    x = ctx.graph.tensors[ctx.operand(0)]
    scale, zp, inner, channels = channel_params(x)
    n = int(np.prod(x.shape, dtype=np.int64))
    (pieces, _), _, chunk = kernels.row_blocks(1, n)
    args = kernels.scalars(n=n, chunk=chunk, inner=inner, channels=channels, flip=flip(x.dtype))
    spec = KernelSpec(files=FILES, name="qdequantize", defines={}, global_size=(pieces,), local_size=(1,),
                      args=("input", "output", "scale", "zp", *args), constants={"scale": scale, "zp": zp},
                      scalars=args)
    qkernels.launch(ctx, spec, input=ctx.operand(0), output=ctx.output())


# the (op, kind) pairs this module owns
register("QUANTIZE", kind="float32", dtypes=("float32", "int8", "uint8"), check=check_quantize_float,
         max_rank=None)(quantize_float)
for _kind in KINDS:
    register("ADD", kind=_kind, check=check_add, max_rank=6)(binary)
    register("SUB", kind=_kind, check=check_sub, max_rank=6)(binary)
    register("MUL", kind=_kind, check=check_mul, max_rank=6)(binary)
    if _kind == "int8":  # LiteRT's quantized SQUARED_DIFFERENCE is int8 only
        register("SQUARED_DIFFERENCE", kind=_kind, check=check_squared_difference, max_rank=6)(binary)
    for _name in (*LUT_OPS, "QUANTIZE", "NNAPI_REQUANTIZE"):
        if _kind == "uint8" and _name in INT8_ONLY:
            continue
        register(_name, kind=_kind, dtypes=KINDS, check=_lut_check(_name), max_rank=None)(lut)
    register("DEQUANTIZE", kind=_kind, dtypes=(_kind, "float32"), check=check_dequantize, max_rank=None)(dequantize)
