"""TFLite options <-> op-layer attributes: the matmul family (see ``teflon_py.ops.matmul``)."""
from __future__ import annotations
