"""TFLite options <-> op-layer attributes: the shape family (see ``teflon_py.ops.shape``)."""
from __future__ import annotations
