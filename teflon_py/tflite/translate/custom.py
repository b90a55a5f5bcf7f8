"""TFLite options <-> op-layer attributes: the custom family (see ``teflon_py.ops.custom``)."""
from __future__ import annotations
