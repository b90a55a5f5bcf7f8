"""TFLite options <-> op-layer attributes: the indexing family (see ``teflon_py.ops.indexing``)."""
from __future__ import annotations
