"""TFLite options <-> op-layer attributes: the elementwise family (see ``teflon_py.ops.elementwise``)."""
from __future__ import annotations
