"""TFLite options <-> op-layer attributes: the movement family (see ``teflon_py.ops.movement``)."""
from __future__ import annotations
