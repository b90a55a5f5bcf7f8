"""TFLite options <-> op-layer attributes: the normalization family (see ``teflon_py.ops.normalization``)."""
from __future__ import annotations
