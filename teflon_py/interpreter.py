"""``teflon_py.Interpreter``: LiteRT's Python interpreter API over the teflon-py executor.

Code written for ``ai_edge_litert.interpreter.Interpreter`` runs by swapping the import.
"""
from __future__ import annotations

import os
from typing import Any, Callable, Sequence

import numpy as np

from teflon_py import ir
from teflon_py.delegate import Delegate
from teflon_py.executor import GraphExecutor
from teflon_py.tflite.reader import read_model


class Interpreter:
    """Load a model, plan it over the given delegates and the NumPy fallback, run it."""

    def __init__(
        self,
        model_path: str | os.PathLike | None = None,
        model_content: bytes | None = None,
        experimental_delegates: Sequence[Delegate] | None = None,
        num_threads: int | None = None,
        **_litert_only_options: Any,
    ):
        if (model_path is None) == (model_content is None):
            raise ValueError("give exactly one of model_path or model_content")
        self._model: ir.Model = read_model(model_path if model_path is not None else model_content)
        self._delegates = list(experimental_delegates or [])
        self._num_threads = num_threads
        self._executor: GraphExecutor | None = None
        self._input_shapes: dict[int, tuple[int, ...]] = {}

    # -- life cycle -----------------------------------------------------------------------
    @property
    def model(self) -> ir.Model:
        return self._model

    @property
    def graph(self) -> ir.Graph:
        return self._model.main

    def allocate_tensors(self) -> None:
        """Plan the graph (partition, compile, pick fallback kernels) and allocate inputs."""
        if self._executor is not None:
            self._executor.close()
        self._executor = GraphExecutor(self._model, self.graph, self._delegates)
        for i in self.graph.inputs:
            t = self.graph.tensors[i]
            shape = self._input_shapes.get(i, t.shape)
            if self._executor.values[i] is None:
                self._executor.values[i] = np.zeros(shape, t.dtype)

    def _require_plan(self) -> GraphExecutor:
        if self._executor is None:
            raise RuntimeError("call allocate_tensors() first")
        return self._executor

    def invoke(self) -> None:
        self._require_plan().run()

    # -- tensors --------------------------------------------------------------------------
    def _tensor_details(self, index: int) -> dict[str, Any]:
        t = self.graph.tensors[index]
        shape = self._current_shape(index)
        q = t.quantization
        scales = q.scale.astype(np.float32) if q is not None else np.zeros(0, np.float32)
        zps = q.zero_point.astype(np.int32) if q is not None else np.zeros(0, np.int32)
        return {
            "name": t.name,
            "index": index,
            "shape": np.array(shape, np.int32),
            "shape_signature": np.array(t.shape_signature if t.shape_signature is not None else t.shape, np.int32),
            "dtype": t.dtype.type,
            "quantization": (float(scales[0]), int(zps[0])) if scales.size == 1 else (0.0, 0),
            "quantization_parameters": {
                "scales": scales,
                "zero_points": zps,
                "quantized_dimension": q.quantized_dimension if q is not None else 0,
            },
            "sparsity_parameters": {},
        }

    def _current_shape(self, index: int) -> tuple[int, ...]:
        if self._executor is not None and self._executor.values[index] is not None:
            return tuple(self._executor.values[index].shape)
        return self._input_shapes.get(index, self.graph.tensors[index].shape)

    def get_input_details(self) -> list[dict[str, Any]]:
        return [self._tensor_details(i) for i in self.graph.inputs]

    def get_output_details(self) -> list[dict[str, Any]]:
        return [self._tensor_details(i) for i in self.graph.outputs]

    def get_tensor_details(self) -> list[dict[str, Any]]:
        return [self._tensor_details(i) for i in range(len(self.graph.tensors))]

    def set_tensor(self, tensor_index: int, value: Any) -> None:
        """Copy ``value`` into an input tensor; dtype and shape must match, as in LiteRT."""
        ex = self._require_plan()
        if not 0 <= tensor_index < len(self.graph.tensors):
            raise ValueError(f"Invalid tensor index {tensor_index}: the graph has {len(self.graph.tensors)} tensors")
        t = self.graph.tensors[tensor_index]
        value = np.asarray(value)
        if value.dtype != t.dtype:
            raise ValueError(
                f"Cannot set tensor: Got value of type {value.dtype.name.upper()} but expected type "
                f"{t.dtype.name.upper()} for input {tensor_index}, name: {t.name} "
            )
        expected = self._current_shape(tensor_index)
        if tuple(value.shape) != tuple(expected):
            raise ValueError(
                f"Cannot set tensor: Dimension mismatch. Got {list(value.shape)} but expected "
                f"{list(expected)} for input {tensor_index} ({t.name})."
            )
        if t.is_constant:
            raise ValueError(f"Cannot set tensor {tensor_index} ({t.name}): it is a constant")
        ex.values[tensor_index] = np.array(value, copy=True)

    def get_tensor(self, tensor_index: int, subgraph_index: int = 0) -> np.ndarray:
        """A copy of the tensor's current value."""
        value = self._require_plan().values[tensor_index]
        if value is None:
            t = self.graph.tensors[tensor_index]
            raise ValueError(f"Tensor data is null: {t.describe()} has not been computed yet")
        return np.array(value, copy=True)

    def tensor(self, tensor_index: int) -> Callable[[], np.ndarray]:
        """A function returning the tensor's current array without a copy."""
        ex = self._require_plan()
        return lambda: ex.values[tensor_index]

    def reset_all_variables(self) -> None:
        ex = self._require_plan()
        for t in self.graph.tensors:
            if t.is_variable:
                ex.values[t.index] = t.data if t.data is not None else np.zeros(t.shape, t.dtype)

    # -- introspection --------------------------------------------------------------------
    def placements(self) -> list[Any]:
        """Per node: where it runs (backend, partition) and why, after allocate_tensors."""
        return list(self._require_plan().placements)

    def __del__(self) -> None:
        ex = getattr(self, "_executor", None)
        if ex is not None:
            try:
                ex.close()
            except Exception:  # noqa: BLE001 - interpreter teardown must not raise
                pass
