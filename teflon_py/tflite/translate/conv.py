"""TFLite options <-> op-layer attributes: the conv family (see ``teflon_py.ops.conv``)."""
from __future__ import annotations
