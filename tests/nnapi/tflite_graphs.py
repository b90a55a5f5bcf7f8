"""The ``.tflite`` twins NNAPI tests compare with: small TFLite graphs written with the builder,
each the independent statement of what an NNAPI operation computes (LiteRT runs them)."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from teflon_py import ir
from teflon_py.tflite.builder import ModelBuilder, quantization


class TfliteGraph:
    """A TFLite graph built op by op: ``input``/``const``/``tensor`` give tensor indices."""

    def __init__(self) -> None:
        self.mb = ModelBuilder()
        self.g = self.mb.main

    @staticmethod
    def _q(scale: Any, zero_point: Any, dim: int) -> ir.Quantization | None:
        return None if scale is None else quantization(scale, zero_point, dim)

    def input(self, shape: Sequence[int], dtype: Any, scale: Any = None, zero_point: Any = 0) -> int:
        return self.g.add_input(f"in{len(self.g.graph.tensors)}", shape, dtype,
                                quantization=self._q(scale, zero_point, 0))

    def const(self, data: Any, dtype: Any, scale: Any = None, zero_point: Any = 0, dim: int = 0) -> int:
        return self.g.add_constant(f"c{len(self.g.graph.tensors)}", np.asarray(data, dtype),
                                   quantization=self._q(scale, zero_point, dim))

    def tensor(self, shape: Sequence[int], dtype: Any, scale: Any = None, zero_point: Any = 0) -> int:
        return self.g.add_tensor(f"t{len(self.g.graph.tensors)}", shape, dtype,
                                 quantization=self._q(scale, zero_point, 0))

    def op(self, opcode: str, inputs: Sequence[int], outputs: Sequence[int], options: Any = None) -> None:
        self.g.add_op(opcode, list(inputs), list(outputs), options)

    def build(self, *outputs: int) -> bytes:
        self.g.mark_outputs(*outputs)
        return self.mb.build()
