"""The op layer: for every operator, format-neutral attributes, its rules and its shape and dtype
inference (``registry.define``), one module per family. Frontends translate into these once;
every backend reads them. Importing this package fills ``registry.OPS``."""
from __future__ import annotations

from teflon_py.ops import (  # noqa: F401  (each module defines its ops)
    control_flow,
    conv,
    custom,
    detection,
    elementwise,
    indexing,
    lookup,
    matmul,
    movement,
    nnapi_recurrent,
    normalization,
    pool,
    recurrent,
    reduce,
    requantize,
    resize,
    sampling,
    shape,
    unary,
)
from teflon_py.ops.common import NO_ACTIVATION, Act, FusedActivation, NoAttrs, Padding, UnknownAttrs, window
from teflon_py.ops.registry import OPS, Inputs, Meta, OpDef, define, infer

__all__ = ["NO_ACTIVATION", "OPS", "Act", "FusedActivation", "Inputs", "Meta", "NoAttrs", "OpDef", "Padding",
           "UnknownAttrs", "define", "infer", "window"]
