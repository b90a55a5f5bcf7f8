"""TFLite options <-> op-layer attributes: the unary family (see ``teflon_py.ops.unary``)."""
from __future__ import annotations
