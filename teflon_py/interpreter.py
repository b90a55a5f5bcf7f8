"""``teflon_py.Interpreter``: LiteRT's Python interpreter API over the teflon-py executor.

Code written for ``ai_edge_litert.interpreter.Interpreter`` runs by swapping the import: same
constructor arguments, same detail dicts (keys, value types, ``quantization_parameters``), same
``ValueError`` / ``RuntimeError`` cases, signature runners that take keyword inputs.

Shapes after ``resize_tensor_input``: ``allocate_tensors`` learns every tensor's new shape by
running the graph once on zero-filled inputs through the NumPy fallback (no delegates), then
plans the graph with those shapes, so delegates compile for the real sizes. This costs one extra
NumPy pass per resize and works for every op the fallback computes; a model whose shapes depend
on input *values* gets the shapes zeros give, and the real ones at each ``invoke``.

The module exports what ``ai_edge_litert.interpreter`` does: ``Interpreter``, ``load_delegate``,
``Delegate`` (teflon-py's backend class: what ``load_delegate`` returns), ``OpResolverType``,
``SignatureRunner`` and ``InterpreterWithCustomOps``. The constructor takes LiteRT's keyword
arguments and no others (a misspelt one is a ``TypeError``, as in LiteRT). Accepted and ignored:
``experimental_op_resolver_type`` (every resolver gets teflon-py's kernels, which compute what
LiteRT's ``BUILTIN_REF`` reference kernels compute), the delegate clustering / fusion / profiling /
zero-point compression switches, and ``num_threads`` (the NumPy fallback uses NumPy's own threads,
an OpenCL device its driver's: a one-time ``UserWarning`` says so when it is not 1).
"""
from __future__ import annotations

import contextlib
import dataclasses
import enum
import os
import sys
import threading
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from teflon_py import ir, ops, run_limits
from teflon_py.delegate import Delegate, load_delegate
from teflon_py.errors import TeflonError
from teflon_py.executor import Fallback, GraphExecutor, ModelState, Placement, RunObserver
from teflon_py.fallback.constant_folding import fold_model
from teflon_py.plan_report import debug_enabled, format_table
from teflon_py.tflite.reader import read_model

__all__ = ["Delegate", "Interpreter", "InterpreterWithCustomOps", "OpResolverType", "SignatureRunner",
           "load_delegate"]


class OpResolverType(enum.Enum):
    """LiteRT's op resolver choice; accepted and ignored: teflon-py always runs its own kernels
    (the NumPy fallback computes what ``BUILTIN_REF``, LiteRT's reference kernels, computes)."""

    AUTO = 0
    BUILTIN = 1
    BUILTIN_REF = 2
    BUILTIN_WITHOUT_DEFAULT_DELEGATES = 3


_warned_num_threads = False


def _check_resolver(value: Any) -> None:
    """LiteRT's ValueError for a resolver type it does not know (its own enum is accepted too)."""
    if value not in list(OpResolverType) and getattr(value, "name", None) not in OpResolverType.__members__:
        raise ValueError(f"Unrecognized passed in op resolver type: {value}")


def _note_num_threads(num_threads: int | None) -> None:
    global _warned_num_threads
    if num_threads in (None, 1) or _warned_num_threads:
        return
    _warned_num_threads = True
    warnings.warn(f"teflon-py ignores num_threads={num_threads}: the NumPy fallback uses NumPy's (BLAS) "
                  "threads and an OpenCL device its driver's", UserWarning, stacklevel=3)


class ConcurrentUseError(TeflonError, RuntimeError):
    """One interpreter driven from several threads at once: inputs set by one, ``invoke`` by another."""


class ResizeError(TeflonError, ValueError, RuntimeError):
    """``resize_tensor_input`` refused: a ValueError as LiteRT documents, a RuntimeError as it raises."""


class _Subgraph:
    """One subgraph's run state: input shape overrides, the graph as planned, its executor."""

    def __init__(self, graph: ir.Graph):
        self.base = graph
        self.graph = graph
        self.input_shapes: dict[int, tuple[int, ...]] = {}  # resized inputs (kept across allocations)
        self.executor: GraphExecutor | None = None
        self.dirty = True  # resized (or never planned) since the last allocate_tensors

    def shape(self, index: int) -> tuple[int, ...]:
        """The tensor's current shape: a pending resize, else its value, else the planned graph's."""
        if index in self.input_shapes:
            return self.input_shapes[index]
        if self.executor is not None and self.executor.values[index] is not None:
            return tuple(self.executor.values[index].shape)
        return self.graph.tensors[index].shape

    def resize(self, index: int, shape: tuple[int, ...]) -> None:
        """Record a new input shape; the next allocation re-plans if it changes anything."""
        if shape == self.shape(index):
            return
        if shape == self.base.tensors[index].shape:
            self.input_shapes.pop(index, None)
        else:
            self.input_shapes[index] = shape
        self.dirty = True

    def close(self) -> None:
        if self.executor is not None:
            self.executor.close()
            self.executor = None


class Interpreter:
    """Load a model, plan it over the given delegates and the NumPy fallback, run it."""

    def __init__(
        self,
        model_path: str | os.PathLike | None = None,
        model_content: bytes | None = None,
        experimental_delegates: Sequence[Delegate] | None = None,
        num_threads: int | None = None,
        experimental_op_resolver_type: Any = OpResolverType.AUTO,
        experimental_preserve_all_tensors: bool = False,
        experimental_disable_delegate_clustering: bool = False,
        experimental_default_delegate_latest_features: bool = False,
        experimental_compress_quantization_zero_points: bool = False,
        experimental_disable_delegate_node_fusion: bool = False,
        experimental_force_delegate_node_profiling: bool = False,
        *,
        memory_budget: int | None = None,
        invoke_timeout: float | None = None,
    ):
        _check_resolver(experimental_op_resolver_type)
        if num_threads is not None:
            if not isinstance(num_threads, int):
                raise ValueError("type of num_threads should be int")
            if num_threads < 1:
                raise ValueError("num_threads should >= 1")
        _note_num_threads(num_threads)
        if model_path and not model_content:
            self._model: ir.Model = read_model(model_path)
        elif model_content and not model_path:
            self._model = read_model(model_content)
        elif not model_content and not model_path:
            raise ValueError("`model_path` or `model_content` must be specified.")
        else:
            raise ValueError("Can't both provide `model_path` and `model_content`")
        self._setup(self._model, experimental_delegates, experimental_preserve_all_tensors, memory_budget,
                    invoke_timeout)
        #: accepted for LiteRT compatibility and ignored (see the module's docstring)
        self.num_threads = num_threads
        self.op_resolver_type = experimental_op_resolver_type

    @classmethod
    def from_ir(cls, model: ir.Model, experimental_delegates: Sequence[Delegate] | None = None, *,
                experimental_preserve_all_tensors: bool = False, memory_budget: int | None = None) -> Interpreter:
        """An interpreter over a model another frontend made (NNAPI's lowering), not a file."""
        self = cls.__new__(cls)
        self._setup(model, experimental_delegates, experimental_preserve_all_tensors, memory_budget, None)
        self.num_threads, self.op_resolver_type = None, OpResolverType.AUTO
        return self

    def _setup(self, model: ir.Model, experimental_delegates: Sequence[Delegate] | None,
               experimental_preserve_all_tensors: bool, memory_budget: int | None,
               invoke_timeout: float | None) -> None:
        self._model = fold_model(model)  # constant DENSIFY / float16 DEQUANTIZE, once
        self._delegates = list(experimental_delegates or [])
        for d in self._delegates:
            if not isinstance(d, Delegate):
                raise TypeError(
                    f"experimental_delegates takes teflon-py delegates (teflon_py.load_delegate(name)), "
                    f"got {type(d).__module__}.{type(d).__name__}"
                )
        #: every tensor readable after ``invoke``: delegates then copy each tensor they produce
        #: to the host (their partitions keep none to themselves, and fuse nothing away)
        self.preserve_all_tensors = bool(experimental_preserve_all_tensors)
        #: seconds one invoke may take (``run_limits``: ``TEFLON_INVOKE_TIMEOUT`` when None)
        self.invoke_timeout = run_limits.invoke_timeout(invoke_timeout)
        #: held by every call; hold it across ``set_tensor`` / ``invoke`` / ``get_tensor`` to run
        #: one inference atomically when threads share the interpreter (a SignatureRunner call does)
        self.lock = threading.RLock()
        self._setters: set[int] = set()  # threads that set inputs since the last invoke
        self._subgraphs: dict[int, _Subgraph] = {}
        #: resource variables, CALL_ONCE status and control-flow subgraphs, shared by every subgraph
        self._model_state = ModelState(self._model, memory_budget)  # bytes; None: TEFLON_MEMORY_BUDGET

    # -- model ----------------------------------------------------------------------------
    @property
    def model(self) -> ir.Model:
        """The model as read (IR), before any resize."""
        return self._model

    @property
    def graph(self) -> ir.Graph:
        """The main subgraph as planned (tensor shapes include any resize)."""
        return self._state(0).graph

    def num_subgraphs(self) -> int:
        """How many subgraphs the model has (signatures and control flow may use the others)."""
        return len(self._model.graphs)

    def _state(self, subgraph_index: int) -> _Subgraph:
        n = len(self._model.graphs)
        if not isinstance(subgraph_index, (int, np.integer)) or not 0 <= subgraph_index < n:
            raise ValueError(f"Invalid subgraph index {subgraph_index} exceeds max subgraph index {n}")
        state = self._subgraphs.get(int(subgraph_index))
        if state is None:
            state = self._subgraphs[int(subgraph_index)] = _Subgraph(self._model.graphs[subgraph_index])
        return state

    def _check_index(self, state: _Subgraph, tensor_index: Any) -> int:
        n = len(state.base.tensors)
        if not isinstance(tensor_index, (int, np.integer)) or not 0 <= tensor_index < n:
            raise ValueError(f"Invalid tensor index {tensor_index} exceeds max tensor index {n}")
        return int(tensor_index)

    # -- life cycle -----------------------------------------------------------------------
    def allocate_tensors(self) -> None:
        """Plan the main graph (partition, compile, pick fallback kernels); a no-op when planned."""
        self._allocate(0)

    def _allocate(self, subgraph_index: int) -> _Subgraph:
        with self.lock:
            return self._allocate_locked(subgraph_index)

    def _allocate_locked(self, subgraph_index: int) -> _Subgraph:
        state = self._state(subgraph_index)
        if state.executor is not None and not state.dirty:
            return state
        graph = self._propagate_shapes(state) if state.input_shapes else state.base
        state.close()
        executor = GraphExecutor(self._model_with(graph), graph, self._delegates, self._model_state,
                                 preserve_all_tensors=self.preserve_all_tensors)
        _initialise(executor, executor.graph)
        state.graph, state.executor, state.dirty = executor.graph, executor, False
        if subgraph_index == 0 and debug_enabled():
            print(f"teflon-py: {self._model.source}\n{format_table(self)}", file=sys.stderr)
        return state

    def _model_with(self, graph: ir.Graph) -> ir.Model:
        """The model with ``graph`` in place of its subgraph of the same index."""
        if self._model.graphs[graph.index] is graph:
            return self._model
        graphs = list(self._model.graphs)
        graphs[graph.index] = graph
        return dataclasses.replace(self._model, graphs=graphs)

    def _propagate_shapes(self, state: _Subgraph) -> ir.Graph:
        """The subgraph with every tensor's shape for the resized inputs, from the op layer's
        inference (``teflon_py.ops``), op by op in execution order. An output whose shape depends
        on data (``Meta.shape`` None), and everything computed from it, is marked dynamic (-1 in
        every dimension): the NumPy fallback settles it at invoke, and no delegate claims it. A user's
        custom op, which the op layer cannot infer, keeps its declared output shapes."""
        tensors = list(state.base.tensors)
        for i, shape in state.input_shapes.items():
            tensors[i] = dataclasses.replace(tensors[i], shape=shape)
        graph = dataclasses.replace(state.base, tensors=tensors)  # ``tensors`` is updated in place
        dynamic: set[int] = set()
        for op in graph.operations:
            outs = [i for i in op.outputs if i != ir.NO_TENSOR]
            if any(i in dynamic for i in op.inputs):
                metas = [ops.Meta(None, tensors[i].dtype) for i in outs]
            else:
                try:
                    metas = ops.infer(graph, op)
                except TeflonError as e:
                    raise ResizeError(f"cannot resize {self._resized(state, graph)}: {e}") from e
                if metas is None:  # a user's custom op: its outputs keep the shapes the model declares
                    continue
            for i, meta in zip(outs, metas):
                t = tensors[i]
                if meta.shape is None:
                    dynamic.add(i)
                    tensors[i] = dataclasses.replace(t, shape=(-1,) * len(t.shape))
                elif not t.is_constant and tuple(meta.shape) != t.shape:
                    tensors[i] = dataclasses.replace(t, shape=tuple(meta.shape))
        return graph

    @staticmethod
    def _resized(state: _Subgraph, graph: ir.Graph) -> str:
        return ", ".join(f"{graph.tensors[i].describe()} to {list(s)}" for i, s in state.input_shapes.items())

    def resize_tensor_input(self, input_index: int, tensor_size: Any, strict: bool = False) -> None:
        """Give an input a new shape; ``allocate_tensors`` then recomputes every tensor's shape.

        With ``strict`` only dimensions that are -1 in the tensor's ``shape_signature`` may change.
        """
        state = self._state(0)
        try:
            index = self._check_index(state, input_index)
        except ValueError as e:
            raise ResizeError(str(e)) from None
        t = state.base.tensors[index]
        size = np.array(tensor_size, dtype=np.int32).reshape(-1)
        shape = tuple(int(d) for d in size)
        if t.is_constant:
            raise ResizeError(f"Cannot resize {t.describe()}: it is a constant (a fixed-size tensor).")
        if index not in state.base.inputs:
            raise ResizeError(f"Cannot resize {t.describe()}: it is not an input of the graph.")
        if any(d < 0 for d in shape):
            raise ResizeError(f"Cannot resize {t.describe()} to {list(shape)}: negative dimension.")
        if strict:
            signature = t.shape_signature if t.shape_signature is not None else t.shape
            if len(signature) != len(shape):
                raise ResizeError(
                    f"Cannot resize {t.describe()} to {list(shape)}: strict resize keeps the rank "
                    f"{len(signature)} of shape_signature {list(signature)}."
                )
            for dim, (old, new) in enumerate(zip(signature, shape)):
                if old != -1 and old != new:
                    raise ResizeError(
                        f"Attempting to resize dimension {dim} of tensor {index} with value {old} to {new}. "
                        "ResizeInputTensorStrict only allows mutating unknown dimensions identified by -1."
                    )
        with self.lock:
            state.resize(index, shape)

    def invoke(self, observer: RunObserver | None = None) -> None:
        """Run the planned graph on the current input values; ``observer`` sees each step
        (``teflon_py.executor.RunObserver``: what ``teflon_py.profile`` times). Calls from several
        threads run one after the other; inputs set by another thread since the last invoke are a
        ``ConcurrentUseError`` (they would mix two callers' data)."""
        self._run(0, observer)

    def _run(self, subgraph_index: int, observer: RunObserver | None = None) -> None:
        """Run a planned subgraph under the lock, its inputs from this thread, within the limit."""
        with self.lock:
            self._check_setters()
            executor = self._runnable(subgraph_index)
            self._model_state.deadline = run_limits.Deadline(self.invoke_timeout)
            executor.run(observer)

    def _check_setters(self) -> None:
        me = threading.get_ident()
        others = self._setters - {me}
        self._setters.clear()
        if others:
            raise ConcurrentUseError(
                "Interpreter used from several threads at once: inputs were set by another thread since the "
                "last invoke; give each thread its own Interpreter, or hold interpreter.lock across "
                "set_tensor/invoke/get_tensor (a SignatureRunner call does)"
            )

    def _runnable(self, subgraph_index: int) -> GraphExecutor:
        state = self._state(subgraph_index)
        if state.executor is None or state.dirty:
            raise RuntimeError(
                "Invoke called on model that is not ready: call allocate_tensors() first"
                + (" (inputs were resized since the last one)" if state.executor is not None else "")
            )
        return state.executor

    # -- tensors --------------------------------------------------------------------------
    def _tensor_details(self, tensor_index: int, subgraph_index: int = 0) -> dict[str, Any]:
        state = self._state(subgraph_index)
        index = self._check_index(state, tensor_index)
        t = state.base.tensors[index]
        shape = state.shape(index)
        q = t.quantization
        scales = q.scale.astype(np.float32) if q is not None else np.zeros(0, np.float32)
        zps = q.zero_point.astype(np.int32) if q is not None else np.zeros(0, np.int32)
        signature = t.shape_signature if t.shape_signature is not None else shape
        return {
            "name": t.name,
            "index": index,
            "shape": np.array(shape, np.int32),
            "shape_signature": np.array(signature, np.int32),
            "dtype": np.bytes_ if t.dtype == np.object_ else t.dtype.type,
            "quantization": (float(scales[0]), int(zps[0])) if scales.size == 1 else (0.0, 0),
            "quantization_parameters": {
                "scales": scales,
                "zero_points": zps,
                "quantized_dimension": q.quantized_dimension if q is not None else 0,
                "block_size": 0,
            },
            "sparsity_parameters": _sparsity_details(t.sparsity),
        }

    def get_input_details(self) -> list[dict[str, Any]]:
        """LiteRT's detail dicts of the main graph's inputs, in graph order."""
        return [self._tensor_details(i) for i in self._model.main.inputs]

    def get_output_details(self) -> list[dict[str, Any]]:
        """LiteRT's detail dicts of the main graph's outputs, in graph order."""
        return [self._tensor_details(i) for i in self._model.main.outputs]

    def get_tensor_details(self, subgraph_index: int = 0) -> list[dict[str, Any]]:
        """Detail dicts of every tensor of a subgraph (LiteRT also lists its kernels' scratch tensors)."""
        state = self._state(subgraph_index)
        return [self._tensor_details(i, subgraph_index) for i in range(len(state.base.tensors))]

    def set_tensor(self, tensor_index: int, value: Any) -> None:
        """Copy ``value`` into a tensor; its dtype and shape must match, as in LiteRT."""
        self._set(0, tensor_index, value)

    def _set(self, subgraph_index: int, tensor_index: int, value: Any) -> None:
        with self.lock:
            self._setters.add(threading.get_ident())
            self._set_locked(subgraph_index, tensor_index, value)

    def _set_locked(self, subgraph_index: int, tensor_index: int, value: Any) -> None:
        state = self._state(subgraph_index)
        index = self._check_index(state, tensor_index)
        t = state.base.tensors[index]
        value = np.asarray(value)
        if value.dtype != t.dtype:
            raise ValueError(
                f"Cannot set tensor: Got value of type {_type_name(value.dtype)} but expected type "
                f"{_type_name(t.dtype)} for input {index}, name: {t.name} "
            )
        if state.executor is None:
            raise ValueError("Tensor data is null. Run allocate_tensors() first")
        if state.dirty:
            raise ValueError(f"Cannot set tensor {index}: inputs were resized; call allocate_tensors() first")
        expected = state.shape(index)
        if value.shape != expected:
            raise ValueError(
                f"Cannot set tensor: Dimension mismatch. Got shape {list(value.shape)} but expected "
                f"{list(expected)} for input {index}, name: {t.name} "
                f"(use resize_tensor_input() and allocate_tensors() to change it)"
            )
        if t.is_constant:
            raise ValueError(f"Cannot set tensor {index} ({t.name}): it is a constant of the model")
        values = state.executor.values
        current = values[index]
        if current is not None and current.flags.writeable and current.shape == value.shape:
            np.copyto(current, value)  # keeps views handed out by tensor() valid
        else:
            values[index] = np.array(value, copy=True, order="C")

    def get_tensor(self, tensor_index: int, subgraph_index: int = 0) -> np.ndarray:
        """A copy of the tensor's current value. A tensor that a delegate's partition produces and
        consumes itself is a ValueError (as in LiteRT) unless the interpreter was made with
        ``experimental_preserve_all_tensors=True``."""
        return np.array(self._value(subgraph_index, tensor_index), copy=True)

    def tensor(self, tensor_index: int) -> Callable[[], np.ndarray]:
        """A function returning the tensor's current array without a copy (hold the function)."""
        return lambda: self._value(0, tensor_index)

    def _value(self, subgraph_index: int, tensor_index: int) -> np.ndarray:
        with self.lock:
            return self._value_locked(subgraph_index, tensor_index)

    def _value_locked(self, subgraph_index: int, tensor_index: int) -> np.ndarray:
        state = self._state(subgraph_index)
        index = self._check_index(state, tensor_index)
        if state.executor is None:
            raise ValueError("Tensor data is null. Run allocate_tensors() first")
        holder = state.executor.hidden(index)
        if holder is not None:  # LiteRT: "Tensor data is null" for a delegate's intermediates
            t = state.graph.tensors[index]
            raise ValueError(
                f"Tensor data is null: {t.describe()} is an intermediate of {holder} and stays on its "
                "device; create the Interpreter with experimental_preserve_all_tensors=True to read it"
            )
        values = state.executor.values
        if values[index] is None:  # allocated, not computed yet: zeros, as LiteRT's fresh arena
            t = state.graph.tensors[index]
            values[index] = np.zeros(state.shape(index), t.dtype)
        return values[index]

    def reset_all_variables(self) -> None:
        """Set every variable tensor to zero (int8: its zero point), as LiteRT does.

        Resource variables (VAR_HANDLE / ASSIGN_VARIABLE) keep their values and CALL_ONCE stays
        done: LiteRT's ResetVariableTensors only touches variable tensors.
        """
        for state in self._subgraphs.values():
            if state.executor is not None:
                state.executor.reset_variables()
        self._model_state.reset_variables()

    # -- signatures -----------------------------------------------------------------------
    def get_signature_list(self) -> dict[str, dict[str, list[str]]]:
        """{signature key: {"inputs": [names], "outputs": [names]}}; names sorted, as LiteRT."""
        return {
            s.key: {"inputs": sorted(s.inputs), "outputs": sorted(s.outputs)} for s in self._model.signatures
        }

    def get_signature_runner(self, signature_key: str | None = None) -> SignatureRunner:
        """A callable running one signature def with keyword inputs; ``None`` if there is only one."""
        signatures = self._model.signatures
        if signature_key is None:
            if len(signatures) != 1:
                raise ValueError(
                    f"SignatureDef signature_key is None and model has {len(signatures)} Signatures. "
                    "None is only allowed when the model has 1 SignatureDef"
                )
            signature_key = signatures[0].key
        return SignatureRunner(self, signature_key)

    # -- introspection --------------------------------------------------------------------
    def placements(self) -> list[Placement]:
        """Per node of the main graph: where it runs (backend, partition) and why."""
        state = self._state(0)
        if state.executor is None:
            raise RuntimeError("call allocate_tensors() first")
        return list(state.executor.placements)

    def partitions(self) -> list[dict[str, Any]]:
        """The delegated partitions of the main graph: index, backend name, node indices, and what
        the backend says of where it runs (OpenCL: device and kernel family)."""
        state = self._state(0)
        if state.executor is None:
            raise RuntimeError("call allocate_tensors() first")
        info = state.executor.partition_info
        return [{"index": p.index, "backend": name, "nodes": list(p.nodes), **info.get(p.index, {})}
                for name, p in state.executor.partitions]

    def fallbacks(self) -> list[Fallback]:
        """Every fallback to NumPy a delegate's failure caused in the main graph so far (no usable
        device, a partition that failed to build or to run), in order."""
        state = self._state(0)
        if state.executor is None:
            raise RuntimeError("call allocate_tensors() first")
        return list(state.executor.fallbacks)

    def devices(self) -> dict[str, str]:
        """{delegate name: its device and driver} for each delegate that runs a node of the main graph."""
        running = {p.backend for p in self.placements()}
        return {d.name: desc for d in self._delegates
                if d.name in running and (desc := d.device_description()) is not None}

    def _get_ops_details(self) -> list[dict[str, Any]]:
        """LiteRT's per-node dicts: index, op name, input/output indices and dtypes."""
        g = self._model.main

        def dtypes(indices: Sequence[int]) -> list[type]:
            return [g.tensors[i].dtype.type for i in indices if i != ir.NO_TENSOR]

        return [
            {
                "index": op.index,
                "op_name": op.name,
                "inputs": np.array(op.inputs, np.int32),
                "outputs": np.array(op.outputs, np.int32),
                "operand_types": dtypes(op.inputs),
                "result_types": dtypes(op.outputs),
            }
            for op in g.operations
        ]

    def __del__(self) -> None:
        for state in getattr(self, "_subgraphs", {}).values():
            with contextlib.suppress(Exception):  # interpreter teardown must not raise
                state.close()
        if hasattr(self, "_model_state"):
            with contextlib.suppress(Exception):
                self._model_state.close()


class InterpreterWithCustomOps(Interpreter):
    """LiteRT's interpreter with custom op registerers (C symbols or pybind functions); teflon-py
    registers custom ops in Python instead (``teflon_py.register_custom_op``), so
    ``custom_op_registerers`` must be empty."""

    def __init__(self, custom_op_registerers: Sequence[Any] | None = None, **kwargs: Any):
        if custom_op_registerers:
            raise ValueError("teflon-py takes custom ops as Python kernels: "
                             "teflon_py.register_custom_op(name, kernel), not custom_op_registerers")
        super().__init__(**kwargs)


class SignatureRunner:
    """Runs one signature def: ``runner(x=array, ...)`` -> {output name: array}, as in LiteRT."""

    def __init__(self, interpreter: Interpreter, signature_key: str):
        found = [s for s in interpreter.model.signatures if s.key == signature_key]
        if not found:
            raise ValueError(f'Invalid signature_key provided: "{signature_key}".')
        self._interpreter = interpreter
        self._signature = found[0]
        self._subgraph_index = found[0].subgraph_index
        self._inputs = {name: found[0].inputs[name] for name in sorted(found[0].inputs)}
        self._outputs = {name: found[0].outputs[name] for name in sorted(found[0].outputs)}

    def __call__(self, **kwargs: Any) -> dict[str, np.ndarray]:
        """Resize inputs to the given arrays if needed, run, return every output by name."""
        if len(kwargs) != len(self._inputs):
            raise ValueError(
                "Invalid number of inputs provided for running a SignatureDef, "
                f"expected {len(self._inputs)} vs provided {len(kwargs)}"
            )
        with self._interpreter.lock:  # one call at a time: each caller gets its own outputs
            return self._run(kwargs)

    def _run(self, kwargs: dict[str, Any]) -> dict[str, np.ndarray]:
        it = self._interpreter
        state = it._state(self._subgraph_index)
        values = {}
        for name, value in kwargs.items():
            if name not in self._inputs:
                raise ValueError(f"Invalid Input name ({name}) for SignatureDef")
            values[name] = np.asarray(value)
            state.resize(self._inputs[name], values[name].shape)
        it._allocate(self._subgraph_index)
        for name, value in values.items():
            it._set(self._subgraph_index, self._inputs[name], value)
        it._run(self._subgraph_index)
        return {name: it.get_tensor(index, self._subgraph_index) for name, index in self._outputs.items()}

    def get_input_details(self) -> dict[str, dict[str, Any]]:
        """{input name: detail dict} of the signature's subgraph."""
        return {n: self._interpreter._tensor_details(i, self._subgraph_index) for n, i in self._inputs.items()}

    def get_output_details(self) -> dict[str, dict[str, Any]]:
        """{output name: detail dict} of the signature's subgraph."""
        return {n: self._interpreter._tensor_details(i, self._subgraph_index) for n, i in self._outputs.items()}


def _initialise(executor: GraphExecutor, graph: ir.Graph) -> None:
    """Fresh plan: zero-filled writable inputs, variables reset (LiteRT resets them at allocation)."""
    for i in graph.inputs:
        t = graph.tensors[i]
        if not t.is_constant:
            executor.values[i] = np.zeros(t.shape, t.dtype)
    executor.reset_variables()


def _type_name(dtype: np.dtype) -> str:
    """LiteRT's name for a tensor type in error messages (FLOAT32, INT8, ...)."""
    dtype = np.dtype(dtype)
    return {"f": "FLOAT", "i": "INT", "u": "UINT", "c": "COMPLEX"}.get(dtype.kind, dtype.name.upper()) + (
        str(dtype.itemsize * 8) if dtype.kind in "fiuc" else ""
    )


def _sparsity_details(sparsity: dict | None) -> dict[str, Any]:
    """LiteRT's ``sparsity_parameters``: {} for dense tensors."""
    if not sparsity:
        return {}
    dims = []
    for d in sparsity["dim_metadata"]:
        if d["format"] == "DENSE":
            dims.append({"format": 0, "dense_size": int(d["dense_size"])})
        else:
            dims.append({
                "format": 1,
                "array_segments": np.asarray(d["array_segments"], np.int32),
                "array_indices": np.asarray(d["array_indices"], np.int32),
            })
    return {
        "traversal_order": np.array(sparsity["traversal_order"], np.int32),
        "block_map": np.array(sparsity["block_map"], np.int32),
        "dim_metadata": dims,
    }
