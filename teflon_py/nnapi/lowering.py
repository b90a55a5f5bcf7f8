"""A finished NNAPI model, for given input shapes, as an op-layer graph (``ir.Model``).

Operations are translated in dependency order, each by its ``@lowering`` function
(``teflon_py.nnapi.operations``) through a ``Call``: it reads its scalars and constant operands,
checks NNAPI's rules, and emits op-layer operations whose output shapes the op layer infers on
the spot, so every tensor of the result has a concrete shape. NNAPI's conventions become the op
layer's here and nowhere else:

* ``TENSOR_FLOAT16`` operands are stored as float16 and computed in float32: each is widened
  once where it is read and the result of each operation is rounded back to float16 (a CAST
  pair), as Android's reference CPU implementation computes most float16 operations;
* an NCHW operation (its layout input true) computes in NHWC between two TRANSPOSEs;
* an operand whose value a lowering reads (a scalar, a shape) must be a constant or a model input
  whose value the execution gives; the graph is then specialised to that value
  (``Lowered.read_inputs``), and the compilation keeps one graph per such key.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from teflon_py import ir, ops
from teflon_py.errors import TeflonError
from teflon_py.nnapi.enums import FuseCode, OperandType, OperationType, PaddingCode
from teflon_py.nnapi.errors import NNAPIError, bad_data
from teflon_py.nnapi.operands import Operand
from teflon_py.nnapi.registry import OPERATIONS, label
from teflon_py.ops.common import Act, FusedActivation, Padding

if TYPE_CHECKING:
    from teflon_py.nnapi.model import Model

F32 = np.dtype(np.float32)
F16 = np.dtype(np.float16)

FUSE = {FuseCode.FUSED_NONE: Act.NONE, FuseCode.FUSED_RELU: Act.RELU, FuseCode.FUSED_RELU1: Act.RELU_N1_TO_1,
        FuseCode.FUSED_RELU6: Act.RELU6}
NHWC_FROM_NCHW = (0, 2, 3, 1)
NCHW_FROM_NHWC = (0, 3, 1, 2)


class Unknown(Exception):
    """A lowering needs a value or shape the model alone does not fix (a model input's): the
    graph is made when an execution gives it."""


class Dynamic(Unknown):
    """A lowering needs the shape of an operand an earlier operation computes from data (e.g.
    BOX_WITH_NMS_LIMIT's outputs): such a model runs operation by operation (``eager``)."""


@dataclass
class Lowered:
    """The op-layer model of one NNAPI model for one set of input shapes (and read values).

    ``feeds``: (model input position, ir tensor) of each input the graph takes at run time;
    ``outputs``: the ir tensor of each model output; ``origin``: the NNAPI operation index of
    each op of the main graph; ``read_inputs``: the model inputs whose values were read (baked in).
    """

    model: ir.Model
    feeds: list[tuple[int, int]]
    outputs: list[int]
    origin: list[int]
    read_inputs: dict[int, np.ndarray] = field(default_factory=dict)


def lower(model: Model, shapes: Sequence[tuple[int, ...] | None], values: Sequence[Any] | None) -> Lowered:
    """``model`` as an ir.Model for these input shapes. ``values``: each input's array (None:
    omitted), or None where values are not known yet (reading one raises ``Unknown``)."""
    root = _Root()
    builder = GraphBuilder(root, model, shapes, values, "main")
    root.graphs.insert(0, None)
    graph = builder.build(0)
    root.graphs[0] = graph
    return Lowered(ir.Model(root.graphs, source="<nnapi model>"), builder.feeds, builder.output_tensors,
                   builder.origin, builder.read_inputs)


class _Root:
    """State shared by the main graph and the subgraphs that IF and WHILE reference."""

    def __init__(self) -> None:
        self.graphs: list[ir.Graph | None] = []
        self.subgraphs: dict[tuple[int, tuple], int] = {}


class GraphBuilder:
    """Builds one ir.Graph from one NNAPI model (the main model or a referenced one)."""

    def __init__(self, root: _Root, model: Model, shapes: Sequence[tuple[int, ...] | None],
                 values: Sequence[Any] | None, name: str):
        self.root, self.model, self.name = root, model, name
        self.shapes, self.values = list(shapes), values
        self.graph = ir.Graph([], [], (), (), name)
        self.tensor_of: dict[int, int] = {}  # operand -> its ir tensor (its stored type)
        self.f32_of: dict[int, int] = {}  # float16 operand -> its float32 widening
        self.pending: set[int] = set()  # ir tensors whose shape the producing op's inference gives
        self.dynamic: set[int] = set()  # ir tensors whose shape is known only at run time
        #: fully specified dimensions the model declares for an output operand's tensor: its shape
        #: where the op layer knows it only at run time (IF, WHILE)
        self.declared: dict[int, tuple[int, ...]] = {}
        self.origin: list[int] = []
        self.feeds: list[tuple[int, int]] = []
        self.output_tensors: list[int] = []
        self.read_inputs: dict[int, np.ndarray] = {}
        self.input_position = {o: k for k, o in enumerate(model.inputs)}
        self.current: int = -1

    # -- building ---------------------------------------------------------------------------
    def build(self, index: int) -> ir.Graph:
        self.graph.index = index
        for k, operand_index in enumerate(self.model.inputs):
            if self._input_value(k) is _OMITTED:
                continue
            op = self.model.operands[operand_index]
            shape = self.shapes[k]
            if shape is None:
                raise Unknown(f"input {k} has unspecified dimensions")
            t = self._new_tensor(op, tuple(shape), f"operand {operand_index} (input {k})")
            self.tensor_of[operand_index] = t
            self.feeds.append((k, t))
        for i in self.model.run_order():
            self.current = i
            self._lower_operation(i)
        self.graph.inputs = tuple(t for _, t in self.feeds)
        self.output_tensors = [self.operand_tensor(o) for o in self.model.outputs]
        self.graph.outputs = tuple(self.output_tensors)
        return self.graph

    def _lower_operation(self, i: int) -> None:
        operation = self.model.operations[i]
        d = OPERATIONS[operation.type]
        call = Call(self, i, operation.type, operation.inputs, operation.outputs)
        try:
            d.lower(call)
            call.close()
        except (NNAPIError, Unknown):
            raise
        except TeflonError as e:
            raise bad_data(f"{call.label}: {e}") from e

    def _new_tensor(self, op: Operand | None, shape: tuple[int, ...], name: str, *, dtype: Any = None,
                    quant: ir.Quantization | None = None, data: np.ndarray | None = None) -> int:
        index = len(self.graph.tensors)
        if op is not None:
            dtype, quant = op.info.dtype, op.quantization()
        if data is not None:
            data = np.ascontiguousarray(data, dtype)
            data.setflags(write=False)
            shape = data.shape
        self.graph.tensors.append(ir.Tensor(index, name, tuple(shape), np.dtype(dtype), quant, data))
        return index

    def emit(self, opcode: str, attrs: Any, inputs: Sequence[int], outputs: Sequence[int]) -> None:
        """Append an op-layer operation; its pending output shapes come from its inference."""
        op = ir.Operation(len(self.graph.operations), opcode, tuple(inputs), tuple(outputs), attrs)
        self.graph.operations.append(op)
        self.origin.append(self.current)
        outs = [t for t in op.outputs if t != ir.NO_TENSOR]
        if any(t in self.dynamic for t in op.inputs if t != ir.NO_TENSOR):
            metas = [ops.Meta(None, self.graph.tensors[t].dtype) for t in outs]
        else:
            metas = ops.infer(self.graph, op)
            if metas is None:
                raise bad_data(f"{label(self.model.operations[self.current].type, self.current)}: "
                               f"op-layer op {opcode} has no shape inference")
        for t, meta in zip(outs, metas):
            tensor = self.graph.tensors[t]
            if meta.shape is None and t in self.declared:  # known when it runs; the model says it
                self._set_shape(t, self.declared[t])
            elif meta.shape is None:
                self.dynamic.add(t)
                rank = len(tensor.shape) if t not in self.pending else max(len(tensor.shape), 1)
                self._set_shape(t, (-1,) * rank)
            elif t in self.pending:
                self._set_shape(t, tuple(int(d) for d in meta.shape))
            elif tuple(meta.shape) != tensor.shape:
                raise bad_data(f"{label(self.model.operations[self.current].type, self.current)}: "
                               f"{opcode} computes shape {list(meta.shape)} for {tensor.name}, "
                               f"which has {list(tensor.shape)}")
            self.pending.discard(t)

    def _set_shape(self, t: int, shape: tuple[int, ...]) -> None:
        old = self.graph.tensors[t]
        self.graph.tensors[t] = ir.Tensor(old.index, old.name, shape, old.dtype, old.quantization, old.data)

    # -- operands ---------------------------------------------------------------------------
    def _input_value(self, k: int) -> Any:
        if self.values is None:
            return _UNKNOWN
        v = self.values[k]
        return _OMITTED if v is None else v

    def operand_tensor(self, operand_index: int) -> int:
        """The ir tensor holding an operand (created for a constant on first use)."""
        t = self.tensor_of.get(operand_index)
        if t is not None:
            return t
        op = self.model.operands[operand_index]
        if op.is_constant and op.is_tensor:
            t = self._new_tensor(op, op.value.shape, f"operand {operand_index}", data=op.value)
            self.tensor_of[operand_index] = t
            return t
        if operand_index in self.input_position:
            raise bad_data(f"operand {operand_index} (input {self.input_position[operand_index]}) is omitted, "
                           "but an operation needs its value")
        raise bad_data(f"{op.describe()} has no value and no operation computes it")

    def value_of(self, operand_index: int) -> Any:
        """A constant's value or a model input's (recorded); ``Unknown`` where it is not known
        yet, BAD_DATA where it is computed by an operation."""
        op = self.model.operands[operand_index]
        if op.is_constant:
            return op.value
        k = self.input_position.get(operand_index)
        if k is None:
            raise bad_data(f"{op.describe()} must be a constant or a model input: the operation reads its value "
                           "when the model is prepared")
        v = self._input_value(k)
        if v is _UNKNOWN:
            raise Unknown(f"the value of input {k}")
        if v is _NOT_READ:
            raise bad_data(f"{op.describe()} is an input of a referenced model: an operation there cannot read "
                           "its value when the model is prepared")
        if v is _OMITTED:
            return None
        if op.is_tensor:
            arr = np.asarray(v)
            self.read_inputs[k] = arr
            return arr
        self.read_inputs[k] = np.asarray(v)
        return v

    def is_omitted(self, operand_index: int) -> bool:
        op = self.model.operands[operand_index]
        if op.omitted:
            return True
        k = self.input_position.get(operand_index)
        return k is not None and self._input_value(k) is _OMITTED


_UNKNOWN = object()
_OMITTED = object()


class Call:
    """What one operation's lowering works with: its operands by position, their values and
    shapes, and the means to emit op-layer operations (see the module's docstring)."""

    def __init__(self, builder: GraphBuilder, index: int, op_type: OperationType, inputs: Sequence[int],
                 outputs: Sequence[int]):
        self.b = builder
        self.index = index
        self.op = op_type
        self.inputs = list(inputs)
        self.outputs = list(outputs)
        self.label = label(op_type, index)
        self._finish: list[Callable[[], None]] = []
        self._output_of: dict[int, int] = {}

    # -- reading operands -------------------------------------------------------------------
    @property
    def n_in(self) -> int:
        return len(self.inputs)

    @property
    def n_out(self) -> int:
        return len(self.outputs)

    def error(self, message: str, k: int | None = None, what: str = "input") -> NNAPIError:
        where = f"{what} {k}: " if k is not None else ""
        return bad_data(f"{self.label}: {where}{message}")

    def operand(self, k: int) -> Operand:
        return self.b.model.operands[self.inputs[k]]

    def out_operand(self, k: int) -> Operand:
        return self.b.model.operands[self.outputs[k]]

    def type(self, k: int) -> OperandType:
        return self.operand(k).type

    def omitted(self, k: int) -> bool:
        """Input ``k`` is absent (past the inputs given) or has no value."""
        return k >= self.n_in or self.b.is_omitted(self.inputs[k])

    def scalar(self, k: int, default: Any = None) -> Any:
        """The value of scalar input ``k`` (``default`` where it is optional and omitted)."""
        if self.omitted(k):
            if default is None:
                raise self.error("is required", k)
            return default
        value = self.b.value_of(self.inputs[k])
        if value is None:
            raise self.error("is required", k)
        return value

    def value(self, k: int) -> np.ndarray:
        """The array of tensor input ``k``, which must be a constant or a model input."""
        if self.omitted(k):
            raise self.error("is required", k)
        return np.asarray(self.b.value_of(self.inputs[k]))

    def constant(self, k: int) -> np.ndarray | None:
        """Input ``k``'s array where it is a constant, else None (never reads a model input)."""
        op = self.operand(k)
        return np.asarray(op.value) if k < self.n_in and op.is_constant else None

    def ir_tensor(self, t: int) -> ir.Tensor:
        """ir tensor ``t`` of the graph being built (its shape so far, dtype and quantization)."""
        return self.b.graph.tensors[t]

    def shape(self, k: int) -> tuple[int, ...]:
        t = self.b.operand_tensor(self.inputs[k])
        if t in self.b.dynamic:
            raise Dynamic(f"{self.label}: input {k}'s shape is known only when the model runs")
        return self.ir_tensor(t).shape

    def rank(self, k: int) -> int:
        return len(self.shape(k))

    def input(self, k: int, stored: bool = False) -> int:
        """Input ``k`` as the ir tensor to compute with (a float16 operand widened to float32;
        ``stored``: as stored, for ops that pass values on unchanged, such as IF and WHILE)."""
        if self.omitted(k):
            raise self.error("is required", k)
        o = self.inputs[k]
        t = self.b.operand_tensor(o)
        if stored or self.ir_tensor(t).dtype != F16:
            return t
        if o not in self.b.f32_of:
            src = self.ir_tensor(t)
            if src.is_constant:
                wide = self.b._new_tensor(None, src.shape, f"{src.name} as float32", dtype=F32,
                                          data=src.data.astype(F32))
            else:
                wide = self.temp(F32, what=f"{src.name} as float32")
                self.emit("CAST", ops.NoAttrs(), [t], [wide])
            self.b.f32_of[o] = wide
        return self.b.f32_of[o]

    def optional_input(self, k: int) -> int:
        """``input(k)``, or ``ir.NO_TENSOR`` where it is omitted."""
        return ir.NO_TENSOR if self.omitted(k) else self.input(k)

    # -- outputs ------------------------------------------------------------------------------
    def output(self, k: int, stored: bool = False) -> int:
        """The ir tensor output ``k`` is computed into (float32 for a float16 operand, rounded
        into the operand after the operation; ``stored``: the operand's own tensor)."""
        if k in self._output_of:
            return self._output_of[k]
        o = self.outputs[k]
        op = self.b.model.operands[o]
        if o in self.b.tensor_of:
            raise self.error(f"{op.describe()} is computed twice", k, "output")
        rank = len(op.dims) if op.dims is not None else 0
        t = self.b._new_tensor(op, (0,) * rank, f"operand {o}")
        self.b.tensor_of[o] = t
        self.b.pending.add(t)
        if op.fully_specified:
            self.b.declared[t] = tuple(op.dims)
        self._finish.append(lambda: self._check_declared(k, t))
        if stored or op.info.dtype != F16:
            self._output_of[k] = t
            return t
        wide = self.temp(F32, what=f"operand {o} in float32")
        self.after("CAST", ops.NoAttrs(), [wide], [t])
        self.b.f32_of[o] = wide
        self._output_of[k] = wide
        return wide

    def temp(self, dtype: Any = None, quant: ir.Quantization | None = None, *, like: int | None = None,
             what: str = "temporary") -> int:
        """A new intermediate ir tensor; ``like``: with that ir tensor's dtype and quantization."""
        if like is not None:
            src = self.ir_tensor(like)
            dtype, quant = src.dtype if dtype is None else dtype, src.quantization if quant is None else quant
        t = self.b._new_tensor(None, (), f"{self.label} {what}", dtype=dtype, quant=quant)
        self.b.pending.add(t)
        return t

    def const(self, data: Any, dtype: Any = None, quant: ir.Quantization | None = None,
              what: str = "constant") -> int:
        arr = np.asarray(data, dtype)
        return self.b._new_tensor(None, arr.shape, f"{self.label} {what}", dtype=arr.dtype, quant=quant, data=arr)

    def after(self, opcode: str, attrs: Any, inputs: Sequence[int], outputs: Sequence[int]) -> None:
        """Emit this op once the operation's own ops are emitted (a layout transpose, a float16
        rounding, a requantization back into the operand); the latest registered runs first."""
        self._finish.append(lambda: self.emit(opcode, attrs, inputs, outputs))

    def emit(self, opcode: str, attrs: Any, inputs: Sequence[int], outputs: Sequence[int]) -> None:
        try:
            self.b.emit(opcode, attrs, inputs, outputs)
        except (NNAPIError, Unknown):
            raise
        except TeflonError as e:
            raise bad_data(f"{self.label}: {e}") from e

    def close(self) -> None:
        """Emit what follows the operation (layout transposes, float16 rounding) and check every
        output against the dimensions the model declares."""
        for k in range(self.n_out):
            self.output(k)  # an output the lowering left alone is an error below
        while self._finish:
            self._finish.pop()()

    def _check_declared(self, k: int, t: int) -> None:
        if t in self.b.pending:
            raise self.error("the lowering computes nothing into it", k, "output")
        op = self.out_operand(k)
        shape = self.ir_tensor(t).shape
        if op.dims is None or t in self.b.dynamic:
            return
        if len(op.dims) != len(shape) or any(d and d != s for d, s in zip(op.dims, shape)):
            raise self.error(f"the model declares dimensions {list(op.dims)}, the operation computes {list(shape)}",
                             k, "output")

    # -- NNAPI's conventions ------------------------------------------------------------------
    def fuse(self, k: int) -> FusedActivation:
        """The ``FuseCode`` scalar at input ``k`` as a fused activation."""
        code = self.scalar(k)
        try:
            return FusedActivation.of(FUSE[FuseCode(code)])
        except ValueError:
            raise self.error(f"{code} is not a FuseCode (0 to 3)", k) from None

    def padding_code(self, k: int) -> Padding:
        """The ``PaddingCode`` scalar at input ``k``: SAME is TensorFlow's rule, VALID none."""
        code = self.scalar(k)
        if code == PaddingCode.PADDING_SAME:
            return Padding.tf_same()
        if code == PaddingCode.PADDING_VALID:
            return Padding.valid()
        raise self.error(f"{code} is not a PaddingCode (1: SAME, 2: VALID)", k)

    def nchw(self, k: int) -> bool:
        """The optional layout input ``k``: true for NCHW."""
        return bool(self.scalar(k, False))

    def nhwc(self, t: int, nchw: bool) -> int:
        """ir tensor ``t`` (4-D, in the operation's layout) in NHWC."""
        if not nchw:
            return t
        out = self.temp(like=t, what="in NHWC")
        self.emit("TRANSPOSE", ops.NoAttrs(), [t, self.const(np.array(NHWC_FROM_NCHW, np.int32), what="perm")],
                  [out])
        return out

    def nhwc_output(self, k: int, nchw: bool) -> int:
        """Where to compute output ``k`` in NHWC; for NCHW a TRANSPOSE then writes the operand."""
        target = self.output(k)
        if not nchw:
            return target
        tmp = self.temp(like=target, what="output in NHWC")
        perm = self.const(np.array(NCHW_FROM_NHWC, np.int32), what="perm")
        self.after("TRANSPOSE", ops.NoAttrs(), [tmp, perm], [target])
        return tmp

    def subgraph(self, k: int, shapes: Sequence[tuple[int, ...]], pass_through: int = 0) -> int:
        """The ir graph index of the model referenced by ``MODEL`` input ``k``, lowered for
        inputs of these shapes; ``pass_through``: its last that many inputs are outputs too
        (appended, as a TFLite WHILE body returns every loop value)."""
        ref = self.model_ref(k)
        key = (id(ref), tuple(tuple(s) for s in shapes), pass_through)
        root = self.b.root
        if key not in root.subgraphs:
            index = len(root.graphs)
            root.subgraphs[key] = index
            root.graphs.append(None)
            sub = GraphBuilder(root, ref, [tuple(s) for s in shapes], [_NOT_READ] * len(ref.inputs),
                               f"operand {self.inputs[k]} model")
            graph = sub.build(index)
            if pass_through:
                graph.outputs = graph.outputs + graph.inputs[len(graph.inputs) - pass_through:]
            root.graphs[index] = graph
        return root.subgraphs[key]

    def model_ref(self, k: int) -> Model:
        """The model ``MODEL`` input ``k`` references (``set_operand_value_from_model`` checked
        that it is a finished ``nnapi.Model``)."""
        if self.type(k) != OperandType.MODEL:
            raise self.error(f"must be a MODEL operand, got {self.type(k).name}", k)
        return self.scalar(k)


class _NotRead:
    """A subgraph input's value: present at run time, never read while lowering."""


_NOT_READ = _NotRead()
