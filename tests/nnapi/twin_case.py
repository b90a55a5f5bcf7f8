"""An NNAPI model and its ``.tflite`` twin built side by side, for the tests of the operations that
copy or rearrange elements (movement, shape, slicing, resize).

``Twin(mode)`` adds each input to both graphs with random data of the mode's type; the test adds
the NNAPI operation to ``twin.s`` and the TFLite op(s) stating the same computation to
``twin.g``; ``check`` runs the twin on LiteRT's reference kernels and compares. A float16 model's
twin computes in float32 on the same values (exactly representable), its results rounded to
float16 as NNAPI's reference rounds each operation's result. An NCHW operand is an NHWC one in
the twin between TRANSPOSEs (``nhwc`` / ``nchw``).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from teflon_py.nnapi import OperandType as T
from teflon_py.tflite.options import TransposeOptions
from tests.harness import run_litert
from tests.nnapi.harness import Spec, check_vs, rng_array
from tests.nnapi.tflite_graphs import TfliteGraph

NHWC_FROM_NCHW = (0, 2, 3, 1)
NCHW_FROM_NHWC = (0, 3, 1, 2)


@dataclass(frozen=True)
class Mode:
    """An operand type under test: its NNAPI type, the twin's dtype, a default quantization."""

    type: T
    twin: type
    quant: tuple[float, int] | None = None


MODES = {
    "float32": Mode(T.TENSOR_FLOAT32, np.float32),
    "float16": Mode(T.TENSOR_FLOAT16, np.float32),
    "uint8": Mode(T.TENSOR_QUANT8_ASYMM, np.uint8, (0.5, 120)),
    "int8": Mode(T.TENSOR_QUANT8_ASYMM_SIGNED, np.int8, (0.25, -3)),
    "int32": Mode(T.TENSOR_INT32, np.int32),
}
_DEFAULT: Any = object()


class Twin:
    """One NNAPI model (``s``) and its TFLite twin (``g``), fed the same random inputs."""

    def __init__(self, mode: str, seed: int = 0) -> None:
        self.mode = MODES[mode]
        self.s = Spec()
        self.g = TfliteGraph()
        self.rng = np.random.default_rng(seed)
        self.feeds: list[np.ndarray] = []
        self.twin_outputs: list[int] = []
        self.nn_only: set[int] = set()  # positions in ``feeds`` the twin does not take

    def _q(self, quant: Any) -> tuple[float, int] | None:
        return self.mode.quant if quant is _DEFAULT else quant

    def input(self, shape: Sequence[int], quant: Any = _DEFAULT, data: np.ndarray | None = None
              ) -> tuple[int, int]:
        """A model input of the mode's type in both graphs (random data unless given)."""
        q = self._q(quant)
        nn = self.s.input(self.mode.type, shape, *(q or (0.0, 0)))
        tf = self.g.input(shape, self.mode.twin, *(q or (None,)))
        self.feeds.append(rng_array(self.rng, self.mode.type, shape) if data is None else data)
        return nn, tf

    def tensor_const(self, value: Any, quant: Any = _DEFAULT) -> tuple[int, int]:
        """A constant of the mode's type in both graphs."""
        q = self._q(quant)
        arr = np.asarray(value)
        nn = self.s.const(self.mode.type, arr, scale=q[0] if q else 0.0, zero_point=q[1] if q else 0)
        tf = self.g.const(arr, self.mode.twin, *(q or (None,)))
        return nn, tf

    def nn_input(self, type_: T, dims: Sequence[int], value: np.ndarray) -> int:
        """A model input of the NNAPI model alone (the twin states its effect otherwise)."""
        self.nn_only.add(len(self.feeds))
        self.feeds.append(value)
        return self.s.input(type_, dims)

    def ints(self, values: Any) -> tuple[int, int]:
        """A constant TENSOR_INT32 in both graphs."""
        arr = np.asarray(values, np.int32)
        return self.s.const(T.TENSOR_INT32, arr), self.g.const(arr, np.int32)

    def output(self, shape: Sequence[int], quant: Any = _DEFAULT) -> tuple[int, int]:
        q = self._q(quant)
        nn = self.s.output(self.mode.type, shape, *(q or (0.0, 0)))
        tf = self.g.tensor(shape, self.mode.twin, *(q or (None,)))
        self.twin_outputs.append(tf)
        return nn, tf

    def tensor(self, shape: Sequence[int], quant: Any = _DEFAULT, dtype: Any = None) -> int:
        """An intermediate tensor of the twin (of the mode's type unless ``dtype``)."""
        q = self._q(quant)
        return self.g.tensor(shape, dtype or self.mode.twin, *(q or (None,)))

    def transposed(self, tf: int, shape: Sequence[int], perm: Sequence[int], quant: Any = _DEFAULT) -> int:
        """The twin's tensor ``tf`` (of ``shape``) permuted by a TRANSPOSE."""
        out = self.tensor([shape[p] for p in perm], quant)
        self.transpose_to(tf, out, perm)
        return out

    def transpose_to(self, src: int, dst: int, perm: Sequence[int]) -> None:
        """A TRANSPOSE in the twin from ``src`` into the existing tensor ``dst``."""
        self.g.op("TRANSPOSE", [src, self.g.const(np.array(perm, np.int32), np.int32)], [dst], TransposeOptions())

    def check(self, backend: str, *, refuses: str | Sequence[str] = (), float_tol: float = 1e-5) -> None:
        """Run the twin on LiteRT and the model on ``backend``; compare (integers exactly)."""
        model = self.s.model()
        tflite = self.g.build(*self.twin_outputs)
        twin_feeds = [x.astype(np.float32) if x.dtype == np.float16 else x
                      for k, x in enumerate(self.feeds) if k not in self.nn_only]
        expected = run_litert(tflite, twin_feeds)
        if self.mode.type == T.TENSOR_FLOAT16:
            expected = [e.astype(np.float16) for e in expected]
        check_vs(model, self.feeds, expected, backend, float_tol=float_tol, refuses=refuses)
