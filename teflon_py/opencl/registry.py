"""The OpenCL lowering registry: per op, one translator that both decides support and builds.

Teflon's rule (and Inductor's ``register_lowering``): the support check and the lowering of an
op sit together, so ``check`` can never claim what ``emit`` cannot build. Each op family lives in
its own module ``teflon_py/opencl/ops_<family>.py``; every such module is imported here, and its
``@lowering`` decorators fill ``LOWERINGS``.

Adding an op (say ``SQUARED_DIFFERENCE``), in ``ops_elementwise.py`` or a new ``ops_xxx.py``::

    def check_squared_difference(graph: ir.Graph, op: ir.Operation) -> str | None:
        ...  # conditions beyond the common ones below; return a reason, or None when supported

    @lowering("SQUARED_DIFFERENCE", check=check_squared_difference)
    def squared_difference(ctx: EmitContext, op: ir.Operation) -> None:
        spec = ...  # a kernels.KernelSpec: cl_kernels source(s), -D macros or scalar arguments
        ctx.launch(spec, a=op.inputs[0], b=op.inputs[1], output=ctx.output(op))

An op has one lowering per ``kind``, the dtype of its data operand (``@lowering("CONV_2D",
kind="int8", dtypes=("int8", "int32"))`` for the int8 conv beside the float32 one).
``check`` runs first with the common conditions, which the decorator's arguments tune: every
operand of a dtype in ``dtypes`` (default: the kind; ``params`` lists operands that must instead be constant and may have any type:
shapes, axes, paddings; ``constants`` lists float32 operands that must be constant: weights),
static non-empty shapes, rank at most ``max_rank``. Reasons are short sentences a user can act
on; the registry prefixes the op name ("CONV_2D: int8 tensors not supported on OpenCL yet").

``emit(ctx, op)`` never touches the device: it declares launches, binding kernel arguments to
graph tensors by index (or to ``ctx.scratch(nbytes)`` temporaries), and aliases
(``ctx.alias(dst, src)``: same bytes, no kernel). Arguments a launch writes are named
``output`` (or ``output<k>``); constants a spec packs itself (weights) go in its ``constants``,
sizes in its ``scalars`` or ``defines``. The emitter reads its input through ``ctx.input(op)``,
writes ``ctx.output(op)`` and clamps with ``ctx.clamp(op)``: fusion (``fusion.py``) may have
folded a PAD into its input or a RELU into its output. ``fuses_activation=True`` lets a following
RELU/RELU6/RELU_N1_TO_1 fold into the op (its kernel must apply ``ctx.clamp(op)``);
``folds_pad=True`` lets a zero PAD on H/W fold into it (it must honour ``ctx.pads(op)``).
``compiled.py`` then places tensors (arena, zero-copy inputs/outputs, constants), builds the
programs and creates the kernels once.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from teflon_py import ir
from teflon_py.delegate import Verdict
from teflon_py.errors import UnsupportedError
from teflon_py.opencl.kernels.specs import Clamp, KernelSpec, Pads


class Scratch:
    """A temporary device buffer of ``nbytes`` that lives for one op (e.g. a packed operand)."""

    def __init__(self, nbytes: int):
        self.nbytes = nbytes


Ref = int | Scratch  # what a kernel argument binds to: a graph tensor index, or a scratch buffer


class EmitContext(Protocol):
    """What an emitter sees while a partition is lowered (implemented by ``compiled.Builder``)."""

    graph: ir.Graph

    def shape(self, tensor: int) -> tuple[int, ...]: ...

    def constant(self, tensor: int) -> np.ndarray | None: ...

    def input(self, op: ir.Operation, k: int = 0) -> int: ...

    def output(self, op: ir.Operation, k: int = 0) -> int: ...

    def clamp(self, op: ir.Operation) -> Clamp: ...

    def pads(self, op: ir.Operation) -> Pads: ...

    def launch(self, spec: KernelSpec, **bindings: Ref) -> None: ...

    def alias(self, dst: int, src: int) -> None: ...

    def scratch(self, nbytes: int) -> Scratch: ...


Checker = Callable[[ir.Graph, ir.Operation], "str | None"]
Emitter = Callable[[EmitContext, ir.Operation], None]


@dataclass(frozen=True)
class OpTensors:
    """What a check sees of an op's operands: input tensors (None where an optional one is
    absent) and output tensors, with shapes, dtypes, quantization and constant data."""

    inputs: tuple[ir.Tensor | None, ...]
    outputs: tuple[ir.Tensor, ...]
    #: per output: whether it is an output of the graph (the caller reads it)
    escapes: tuple[bool, ...] = ()

    @classmethod
    def of(cls, graph: ir.Graph, op: ir.Operation) -> OpTensors:
        outs = tuple(graph.output_tensors(op))
        return cls(tuple(graph.input_tensors(op)), outs, tuple(t.index in graph.outputs for t in outs))

    def input(self, k: int) -> ir.Tensor | None:
        return self.inputs[k] if k < len(self.inputs) else None


class OpEmit(Protocol):
    """What an attrs-style emitter sees: one op of the partition being lowered (implemented by
    ``compiled.OpEmitter``). Tensors are graph indices; ``input``/``output`` honour fusion."""

    graph: ir.Graph
    op: ir.Operation

    def shape(self, tensor: int) -> tuple[int, ...]: ...

    def constant(self, tensor: int) -> np.ndarray | None: ...

    def operand(self, k: int) -> int: ...

    def input(self, k: int = 0) -> int: ...

    def output(self, k: int = 0) -> int: ...

    def clamp(self) -> Clamp: ...

    def pads(self) -> Pads: ...

    def residual(self) -> Any: ...

    def launch(self, spec: KernelSpec, **bindings: Ref) -> None: ...

    def alias(self, dst: int, src: int) -> None: ...

    def scratch(self, nbytes: int) -> Scratch: ...


#: check(attrs, tensors, caps) -> a reason, or None when supported
AttrsChecker = Callable[[Any, OpTensors, Any], "str | None"]
#: emit(ctx, attrs): declare the op's launches
AttrsEmitter = Callable[[OpEmit, Any], None]


@dataclass(frozen=True)
class Lowering:
    """One op's support check and emitter, with the conditions the registry checks for it."""

    op: str
    emit: Emitter
    kind: str = "float32"  # the dtype of the op's data operand that selects this lowering
    dtypes: frozenset[str] = frozenset({"float32"})  # dtypes its non-param tensors may have
    check: Checker | None = None
    params: tuple[int, ...] = ()
    constants: tuple[int, ...] = ()
    max_rank: int | None = 4
    fuses_activation: bool = False
    folds_pad: bool = False
    attrs_style: bool = False  # check(attrs, tensors, caps) and emit(ctx, attrs)


#: op name -> kind (dtype name of its data operand: "float32", "int8", "uint8", "bool"...) -> Lowering
LOWERINGS: dict[str, dict[str, Lowering]] = {}


def lowering(*ops: str, kind: str = "float32", dtypes: tuple[str, ...] | None = None,
             check: Checker | None = None, params: tuple[int, ...] = (),
             constants: tuple[int, ...] = (), max_rank: int | None = 4, fuses_activation: bool = False,
             folds_pad: bool = False) -> Callable[[Emitter], Emitter]:
    """Decorator: register the function as the emitter of ``ops`` for data operands of ``kind``
    (see the module docstring); ``dtypes`` (default: just ``kind``) are the dtypes its non-param
    operands and outputs may have, e.g. ``("int8", "int32")`` for an int8 conv with int32 bias."""

    def wrap(fn: Emitter) -> Emitter:
        allowed = frozenset(dtypes or (kind,))
        for name in ops:
            if kind in LOWERINGS.get(name, {}):
                raise ValueError(f"OpenCL lowering for {name} ({kind}) registered twice")
            LOWERINGS.setdefault(name, {})[kind] = Lowering(
                name, fn, kind, allowed, check, tuple(params), tuple(constants), max_rank,
                fuses_activation, folds_pad)
        return fn

    return wrap


def register(*ops: str, kind: str = "float32", dtypes: tuple[str, ...] | None = None,
             check: AttrsChecker | None = None, params: tuple[int, ...] = (),
             constants: tuple[int, ...] = (), max_rank: int | None = 4, fuses_activation: bool = False,
             folds_pad: bool = False) -> Callable[[AttrsEmitter], AttrsEmitter]:
    """Decorator: register ``emit(ctx, attrs)`` for ``ops`` on data operands of ``kind``, with
    ``check(attrs, tensors, caps)`` (see the module docstring for the other arguments)."""

    def wrap(fn: AttrsEmitter) -> AttrsEmitter:
        allowed = frozenset(dtypes or (kind,))
        for name in ops:
            if kind in LOWERINGS.get(name, {}):
                raise ValueError(f"OpenCL lowering for {name} ({kind}) registered twice")
            LOWERINGS.setdefault(name, {})[kind] = Lowering(
                name, fn, kind, allowed, check, tuple(params), tuple(constants), max_rank,
                fuses_activation, folds_pad, attrs_style=True)
        return fn

    return wrap


def _dtype_name(dtype: np.dtype) -> str:
    return "bool" if dtype == np.bool_ else np.dtype(dtype).name


#: ops whose data operand is not their first input (TRANSPOSE_CONV's first: output shape; SPLIT's: axis)
DATA_OPERAND: dict[str, int] = {"TRANSPOSE_CONV": 2, "SPLIT": 1}


def op_kind(graph: ir.Graph, op: ir.Operation) -> str:
    """The dtype name that selects an op's lowering: its data operand, the first input unless
    ``DATA_OPERAND`` says otherwise (else its first output)."""
    k = DATA_OPERAND.get(op.name)
    if k is not None and k < len(op.inputs) and op.inputs[k] != ir.NO_TENSOR:
        return _dtype_name(graph.tensors[op.inputs[k]].dtype)
    for i in (*op.inputs, *op.outputs):
        if i != ir.NO_TENSOR:
            return _dtype_name(graph.tensors[i].dtype)
    return "none"


def lowering_for(graph: ir.Graph, op: ir.Operation) -> Lowering | None:
    """The lowering registered for ``op`` and the dtype of its data operand, if any."""
    return LOWERINGS.get(op.name, {}).get(op_kind(graph, op))


def _common_reason(graph: ir.Graph, op: ir.Operation, low: Lowering) -> str | None:
    """The conditions every lowering shares: float32 operands, constants, static shapes, rank."""
    for k, t in enumerate(graph.input_tensors(op)):
        if t is None:
            continue
        if k in low.params:
            if not t.is_constant:
                return f"operand {k} ('{t.name}') must be a constant"
            continue
        if k in low.constants and not t.is_constant:
            return f"operand {k} ('{t.name}') must be a constant"
        reason = _tensor_reason(t, low)
        if reason:
            return reason
    for t in graph.output_tensors(op):
        reason = _tensor_reason(t, low)
        if reason:
            return reason
    return None


def _tensor_reason(t: ir.Tensor, low: Lowering) -> str | None:
    if _dtype_name(t.dtype) not in low.dtypes:
        return f"{_dtype_name(t.dtype)} tensors not supported on OpenCL yet"
    if any(d <= 0 for d in t.shape):
        return f"{t.describe()} has an empty or unknown dimension {list(t.shape)}"
    if low.max_rank is not None and len(t.shape) > low.max_rank:
        return f"rank {len(t.shape)} tensors not supported (at most {low.max_rank})"
    return None


def check_op(graph: ir.Graph, op: ir.Operation, caps: Any) -> Verdict:
    """Can the OpenCL delegate run ``op`` on a device with ``caps``? Pure: reads attributes,
    shapes, types and constants only."""
    if op.name not in LOWERINGS:
        return Verdict.no(f"{op.name}: not lowered for OpenCL yet")
    low = lowering_for(graph, op)
    if low is None:
        return Verdict.no(f"{op.name}: {op_kind(graph, op)} tensors not supported on OpenCL yet")
    reason = _common_reason(graph, op, low)
    if reason is None and low.check is not None:
        try:
            if low.attrs_style:
                reason = low.check(op.attrs, OpTensors.of(graph, op), caps)
            else:
                reason = low.check(graph, op)
        except UnsupportedError as e:  # a shared rule that refuses: its message is the reason
            reason = str(e)
    return Verdict.no(f"{op.name}: {reason}") if reason else Verdict.ok()


def options(op: ir.Operation, cls: type) -> Any:
    """The op's options, or the schema defaults when the model omits them."""
    return op.attrs if op.attrs is not None else cls()


FUSED_ACTIVATIONS = (ir.Activation.NONE, ir.Activation.RELU, ir.Activation.RELU6, ir.Activation.RELU_N1_TO_1)


def activation_reason(activation: ir.Activation | int) -> str | None:
    """Why a fused activation cannot be a clamp (TANH, SIGN_BIT), or None."""
    if activation in FUSED_ACTIVATIONS:
        return None
    try:
        name = ir.Activation(int(activation)).name
    except ValueError:
        name = str(int(activation))
    return f"fused activation {name} not supported"


def supported_ops(kind: str = "float32") -> frozenset[str]:
    """The op names the registry lowers for data operands of ``kind``."""
    return frozenset(name for name, kinds in LOWERINGS.items() if kind in kinds)


