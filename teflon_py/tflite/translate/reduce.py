"""TFLite options <-> op-layer attributes: the reduce family (see ``teflon_py.ops.reduce``)."""
from __future__ import annotations
