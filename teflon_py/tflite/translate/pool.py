"""TFLite options <-> op-layer attributes: the pool family (see ``teflon_py.ops.pool``)."""
from __future__ import annotations
