"""The OpenCL lowering registry: per (op, dtype kind), one translator that both decides support
and builds.

Teflon's rule (and Inductor's ``register_lowering``): the support check and the lowering of an
op sit together, so ``check`` can never claim what ``emit`` cannot build. Each op family lives in
its own module ``teflon_py/opencl/lowerings/<family>.py``; ``lowerings/__init__`` imports them
all, in a fixed order, and their ``register`` calls fill ``LOWERINGS``. This is the only way in.

Adding an op (say ``SQUARED_DIFFERENCE``), in ``lowerings/elementwise.py`` or a new module::

    def check_squared_difference(attrs, tensors: OpTensors, caps: Caps) -> str | None:
        ...  # conditions beyond the common ones below, read from the op layer's attrs, the
             # tensors' metadata and the device's capabilities; a reason, or None when supported

    @register("SQUARED_DIFFERENCE", check=check_squared_difference)
    def squared_difference(ctx: OpEmit, attrs) -> None:
        spec = ...  # a kernels.KernelSpec: cl_kernels source(s), -D macros or scalar arguments
        ctx.launch(spec, a=ctx.input(0), b=ctx.input(1), output=ctx.output())

An op has one lowering per ``kind``, the dtype of its data operand (``register("CONV_2D",
kind="int8", dtypes=("int8", "int32"))`` for the int8 conv beside the float32 one); float and
quantized variants share their check. ``check`` runs after the common conditions, which the
decorator's arguments tune: every operand of a dtype in ``dtypes`` (default: the kind; ``params``
lists operands that must instead be constant and may have any type: shapes, axes, paddings;
``constants`` lists operands that must be constant: weights), static non-empty shapes, rank at
most ``max_rank``. Reasons are short sentences a user can act on; the registry prefixes the op
name ("CONV_2D: int8 tensors not supported on OpenCL yet"). A shared rule that raises
``UnsupportedError`` gives its message as the reason; any other exception is a bug and propagates.

``emit(ctx, attrs)`` never touches the device: it declares launches, binding kernel arguments to
graph tensors by index (or to ``ctx.scratch(nbytes)`` temporaries), and aliases
(``ctx.alias(dst, src)``: same bytes, no kernel). A stateful op (LSTM) reads a variable operand
through ``ctx.state(k)`` and writes its new value to ``ctx.new_state(k)``, a buffer of its own.
Arguments a launch writes are named ``output`` (or ``output<k>``); constants a spec packs itself
(weights) go in its ``constants``, sizes in its ``scalars`` or ``defines``. The emitter reads its input through ``ctx.input()``,
writes ``ctx.output()`` and clamps with ``ctx.clamp()``: fusion (``fusion.py``) may have folded
a PAD into its input or a RELU into its output. ``fuses_activation=True`` lets a following
RELU/RELU6/RELU_N1_TO_1 fold into the op (its kernel must apply ``ctx.clamp()``);
``folds_pad=True`` lets a zero PAD on H/W fold into it (it must honour ``ctx.pads()``);
``fuses_prelu=True`` lets a following float PRELU with per-channel (or one) constant slopes fold
into it on the cpu kernel family (it must apply ``ctx.prelu()`` last); ``fuses_swish=True`` lets a
following float HARD_SWISH or swish (x * LOGISTIC(x)) fold into it there (it must apply
``ctx.post_act()`` last, after its clamp and any folded ADD); on an 8-bit lowering, a following
8-bit LOGISTIC, TANH, HARD_SWISH or swish, as one 256-entry table (it must look its outputs up
in the table of ``ctx.table_ops()`` last).
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
from teflon_py.opencl.params import KernelParams


class Scratch:
    """A temporary device buffer of ``nbytes`` that lives for one op (e.g. a packed operand)."""

    def __init__(self, nbytes: int):
        self.nbytes = nbytes


class NewState(Scratch):
    """The value a stateful op leaves in variable ``tensor`` (an LSTM's final states): its own
    buffer, apart from the value the op read; the partition returns the last one as an output for
    ``tensor``, which the executor keeps for the next invoke (``compiled.Builder.new_state``)."""

    def __init__(self, tensor: int, nbytes: int):
        super().__init__(nbytes)
        self.tensor = tensor


Ref = int | Scratch  # what a kernel argument binds to: a graph tensor index, or a scratch buffer


@dataclass(frozen=True)
class OpTensors:
    """What a check sees of an op's operands: input tensors (None where an optional one is
    absent) and output tensors, with shapes, dtypes, quantization and constant data."""

    inputs: tuple[ir.Tensor | None, ...]
    outputs: tuple[ir.Tensor, ...]
    #: per output: whether it is an output of the graph (the caller reads it)
    escapes: tuple[bool, ...] = ()
    #: the op and its graph, for a check that runs the fallback kernel's own Prepare (``lstm``)
    op: ir.Operation | None = None
    graph: ir.Graph | None = None

    @classmethod
    def of(cls, graph: ir.Graph, op: ir.Operation) -> OpTensors:
        outs = tuple(graph.output_tensors(op))
        return cls(tuple(graph.input_tensors(op)), outs, tuple(t.index in graph.outputs for t in outs), op, graph)

    def input(self, k: int) -> ir.Tensor | None:
        return self.inputs[k] if k < len(self.inputs) else None


class OpEmit(Protocol):
    """What an attrs-style emitter sees: one op of the partition being lowered (implemented by
    ``compiled.OpEmitter``). Tensors are graph indices; ``input``/``output`` honour fusion."""

    graph: ir.Graph
    op: ir.Operation
    params: KernelParams  # the device's kernel family and sizes: which spec function to use

    def shape(self, tensor: int) -> tuple[int, ...]: ...

    def constant(self, tensor: int) -> np.ndarray | None: ...

    def operand(self, k: int) -> int: ...

    def input(self, k: int = 0) -> int: ...

    def output(self, k: int = 0) -> int: ...

    def clamp(self) -> Clamp: ...

    def pads(self) -> Pads: ...

    def residual(self) -> Any: ...

    def prelu(self) -> Any: ...

    def post_act(self) -> str | None: ...

    def depthwise(self) -> Any: ...

    def gate(self) -> Any: ...

    def launch(self, spec: KernelSpec, **bindings: Ref) -> None: ...

    def alias(self, dst: int, src: int) -> None: ...

    def scratch(self, nbytes: int) -> Scratch: ...

    def state(self, k: int) -> Ref: ...

    def new_state(self, k: int) -> NewState: ...


#: check(attrs, tensors, caps) -> a reason, or None when supported
Checker = Callable[[Any, OpTensors, Any], "str | None"]
#: emit(ctx, attrs): declare the op's launches
Emitter = Callable[[OpEmit, Any], None]


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
    fuses_prelu: bool = False
    fuses_swish: bool = False


#: op name -> kind (dtype name of its data operand: "float32", "int8", "uint8", "bool"...) -> Lowering
LOWERINGS: dict[str, dict[str, Lowering]] = {}


def register(*ops: str, kind: str = "float32", dtypes: tuple[str, ...] | None = None,
             check: Checker | None = None, params: tuple[int, ...] = (),
             constants: tuple[int, ...] = (), max_rank: int | None = 4, fuses_activation: bool = False,
             folds_pad: bool = False, fuses_prelu: bool = False,
             fuses_swish: bool = False) -> Callable[[Emitter], Emitter]:
    """Decorator: register ``emit(ctx, attrs)`` for ``ops`` on data operands of ``kind``, with
    ``check(attrs, tensors, caps)`` (see the module docstring for the other arguments)."""

    def wrap(fn: Emitter) -> Emitter:
        allowed = frozenset(dtypes or (kind,))
        for name in ops:
            if kind in LOWERINGS.get(name, {}):
                raise ValueError(f"OpenCL lowering for {name} ({kind}) registered twice")
            LOWERINGS.setdefault(name, {})[kind] = Lowering(
                name, fn, kind, allowed, check, tuple(params), tuple(constants), max_rank,
                fuses_activation, folds_pad, fuses_prelu, fuses_swish)
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


def _common_reason(graph: ir.Graph, op: ir.Operation, low: Lowering, caps: Any = None) -> str | None:
    """The conditions every lowering shares: float32 operands, constants, static shapes, rank,
    and no tensor larger than the device's largest buffer (``caps.max_alloc``)."""
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
    return _alloc_reason(graph, op, caps)


def _alloc_reason(graph: ir.Graph, op: ir.Operation, caps: Any) -> str | None:
    """Why one of ``op``'s tensors cannot be a buffer on the device: every tensor is one (a graph
    input or output, a constant, an arena sub-buffer), none may pass ``caps.max_alloc``."""
    limit = getattr(caps, "max_alloc", None)
    if limit is None:
        return None
    for t in (*graph.input_tensors(op), *graph.output_tensors(op)):
        if t is not None:
            nbytes = int(np.prod(t.shape, dtype=np.int64)) * t.dtype.itemsize
            if nbytes > limit:
                return (f"{t.describe()} is {nbytes} bytes, more than the largest buffer the OpenCL device "
                        f"{caps.name} allocates ({limit} bytes, CL_DEVICE_MAX_MEM_ALLOC_SIZE)")
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
    shapes, types and constants only. A node whose outputs are all constants already (folded at
    load or plan time: float16 weights, sparse weights, shape arithmetic) runs nothing: claimed at
    no cost, so it splits no partition."""
    if folded_node(graph, op):
        if any(t in graph.outputs for t in op.outputs):
            return Verdict.no(f"{op.name}: its constant output is a graph output: nothing to run")
        return Verdict.ok()
    if op.name not in LOWERINGS:
        return Verdict.no(f"{op.name}: not lowered for OpenCL yet")
    low = lowering_for(graph, op)
    if low is None:
        return Verdict.no(f"{op.name}: {op_kind(graph, op)} tensors not supported on OpenCL yet")
    reason = _common_reason(graph, op, low, caps)
    if reason is None and low.check is not None:
        try:
            reason = low.check(op.attrs, OpTensors.of(graph, op), caps)
        except UnsupportedError as e:  # a shared rule that refuses: its message is the reason
            reason = str(e)
    return Verdict.no(f"{op.name}: {reason}") if reason else Verdict.ok()


def folded_node(graph: ir.Graph, op: ir.Operation) -> bool:
    """Whether every output of ``op`` is already a constant (``fallback.constant_folding``,
    ``shape_folding``): there is nothing to launch for it."""
    outs = [t for t in op.outputs if t != ir.NO_TENSOR]
    return bool(outs) and all(graph.tensors[t].is_constant for t in outs)


def supported_ops(kind: str = "float32") -> frozenset[str]:
    """The op names the registry lowers for data operands of ``kind``."""
    return frozenset(name for name, kinds in LOWERINGS.items() if kind in kinds)


