"""``nnapi.Execution``: one run of a finished compilation on given inputs.

Inputs are set by their position in the model's input list (None omits an optional one), the
computation runs synchronously (``compute``), and outputs are read back as NumPy arrays with
their actual dimensions. An output may instead be given a buffer with ``set_output``; one too
small for the result makes ``compute`` fail with OUTPUT_INSUFFICIENT_SIZE, and its dimensions
can then still be asked for, as in NNAPI.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from teflon_py.errors import InvokeTimeoutError, LoopLimitError, TeflonError
from teflon_py.nnapi.compilation import Compilation
from teflon_py.nnapi.enums import ResultCode
from teflon_py.nnapi.errors import NNAPIError, bad_data, bad_state
from teflon_py.nnapi.lowering import Unknown
from teflon_py.nnapi.operands import Operand, as_array

_UNSET = object()
DEFAULT_LOOP_TIMEOUT_NS = 2_000_000_000  # ANEURALNETWORKS's default loop timeout: 2 s
MAX_LOOP_TIMEOUT_NS = 15_000_000_000  # and its maximum: 15 s


class Execution:
    """``ANeuralNetworksExecution`` for ``compilation`` (which must be finished)."""

    def __init__(self, compilation: Compilation):
        if not isinstance(compilation, Compilation):
            raise bad_data(f"Execution: {compilation!r} is not an nnapi.Compilation")
        if not compilation.finished:
            raise bad_state("Execution: the compilation is not finished")
        self.compilation = compilation
        self.model = compilation.model
        self._inputs: list[Any] = [_UNSET] * len(self.model.inputs)
        self._buffers: list[np.ndarray | None] = [None] * len(self.model.outputs)
        self._outputs: list[np.ndarray] | None = None
        self._dims: list[tuple[int, ...]] | None = None
        self.reusable = False
        self._computed = False
        self.timeout_ns = 0
        self.loop_timeout_ns = DEFAULT_LOOP_TIMEOUT_NS

    # -- setting up ---------------------------------------------------------------------------
    def _position(self, index: Any, count: int, what: str) -> int:
        if isinstance(index, bool) or not isinstance(index, (int, np.integer)) or not 0 <= index < count:
            raise bad_data(f"set_{what}: {index!r} is not a model {what} position (the model has {count})")
        return int(index)

    def _settable(self, call: str) -> None:
        if self._computed and not self.reusable:
            raise bad_state(f"{call}: the execution has run (set_reusable(True) to run it again)")

    def set_input(self, index: int, value: Any, dims: Any = None) -> None:
        """The value of model input ``index`` (an array, or raw bytes with ``dims``); None
        omits an optional input. ``dims`` fixes dimensions the model left unspecified."""
        self._settable("set_input")
        k = self._position(index, len(self._inputs), "input")
        op = self.model.operands[self.model.inputs[k]]
        what = f"set_input({k})"
        if value is None:
            self._inputs[k] = None
            return
        shape = _dims_for(op, dims, what)
        arr = as_array(op, value, what, shape)
        if not op.is_tensor:
            if arr.size != 1:
                raise bad_data(f"{what}: {op.describe()} takes one scalar, got {arr.size} values")
            arr = arr.reshape(())
        elif shape is not None and arr.ndim != len(shape):
            raise bad_data(f"{what}: {op.describe()} takes {list(shape)}, got shape {arr.shape}")
        if op.is_tensor and arr.ndim == 0:
            raise bad_data(f"{what}: {op.describe()} is a tensor, got a scalar")
        self._inputs[k] = arr

    def set_output(self, index: int, buffer: np.ndarray | None = None) -> None:
        """Optionally, the array output ``index`` is written into (its size must hold the result)."""
        self._settable("set_output")
        k = self._position(index, len(self._buffers), "output")
        if buffer is not None and not isinstance(buffer, np.ndarray):
            raise bad_data(f"set_output({k}): takes a NumPy array, got {type(buffer).__name__}")
        self._buffers[k] = buffer

    def set_reusable(self, reusable: bool) -> None:
        if self._computed:
            raise bad_state("set_reusable: the execution has run")
        self.reusable = bool(reusable)

    def set_timeout(self, duration_ns: int) -> None:
        """How long ``compute`` may take (0: no limit); past it, MISSED_DEADLINE_TRANSIENT."""
        self._settable("set_timeout")
        self.timeout_ns = int(duration_ns)

    def set_loop_timeout(self, duration_ns: int) -> None:
        """How long one WHILE may loop (default 2 s, at most 15 s, as NNAPI); past it, ``compute``
        fails with MISSED_DEADLINE_TRANSIENT."""
        self._settable("set_loop_timeout")
        self.loop_timeout_ns = min(int(duration_ns), MAX_LOOP_TIMEOUT_NS)

    # -- running ------------------------------------------------------------------------------
    def compute(self) -> None:
        """Run the model synchronously (``ANeuralNetworksExecution_compute``)."""
        self._settable("compute")
        unset = [k for k, v in enumerate(self._inputs) if v is _UNSET]
        if unset:
            raise bad_state(f"compute: input {unset[0]} is not set (set_input, or None to omit it)")
        self._computed = True
        try:
            outputs = self.compilation.run(list(self._inputs), self.loop_timeout_ns / 1e9,
                                           self.timeout_ns / 1e9 if self.timeout_ns else None)
        except (LoopLimitError, InvokeTimeoutError) as e:
            raise NNAPIError(ResultCode.MISSED_DEADLINE_TRANSIENT, f"compute: {e}") from e
        except NNAPIError as e:  # a rule only the inputs' shapes or values show: NNAPI's OP_FAILED
            raise NNAPIError(ResultCode.OP_FAILED, e.reason) from e
        except Unknown as e:
            raise NNAPIError(ResultCode.OP_FAILED, f"compute: {e} is not known") from e
        except (TeflonError, ValueError, RuntimeError) as e:
            raise NNAPIError(ResultCode.OP_FAILED, f"compute: {e}") from e
        self._outputs = [_as_operand_type(self.model.operands[o], y) for o, y in zip(self.model.outputs, outputs)]
        self._dims = [tuple(y.shape) for y in self._outputs]
        short = []
        for k, (buf, y) in enumerate(zip(self._buffers, self._outputs)):
            if buf is None:
                continue
            if buf.size < y.size or buf.dtype != y.dtype:
                short.append(k)
                continue
            buf.reshape(-1)[: y.size] = y.reshape(-1)
        if short:
            k = short[0]
            raise NNAPIError(ResultCode.OUTPUT_INSUFFICIENT_SIZE,
                             f"compute: output {k} needs {self._outputs[k].size} elements of {self._outputs[k].dtype}, "
                             f"its buffer holds {self._buffers[k].size} of {self._buffers[k].dtype}")

    def _ran(self, call: str) -> None:
        if self._outputs is None:
            raise bad_state(f"{call}: the execution has not computed")

    def get_output(self, index: int) -> np.ndarray:
        """Output ``index`` with its actual dimensions and the operand's dtype."""
        self._ran("get_output")
        k = self._position(index, len(self._buffers), "output")
        return self._outputs[k].copy()

    def get_output_operand_dimensions(self, index: int) -> list[int]:
        self._ran("get_output_operand_dimensions")
        k = self._position(index, len(self._buffers), "output")
        return list(self._dims[k])

    def get_output_operand_rank(self, index: int) -> int:
        return len(self.get_output_operand_dimensions(index))


def _dims_for(op: Operand, dims: Any, what: str) -> tuple[int, ...] | None:
    """The dimensions an input takes: the operand's, completed by ``dims`` where given."""
    if dims is None:
        return op.dims
    given = tuple(int(d) for d in dims)
    if op.dims is not None and (len(given) != len(op.dims) or any(d and d != g for d, g in zip(op.dims, given))):
        raise bad_data(f"{what}: dimensions {list(given)} contradict {op.describe()}")
    return given


def _as_operand_type(op: Operand, y: np.ndarray) -> np.ndarray:
    dtype = op.info.dtype
    return y if y.dtype == dtype else y.astype(dtype)
