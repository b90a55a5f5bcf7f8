"""TFLite options <-> op-layer attributes: the resize family (see ``teflon_py.ops.resize``)."""
from __future__ import annotations
