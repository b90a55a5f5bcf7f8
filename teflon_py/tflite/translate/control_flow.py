"""TFLite options <-> op-layer attributes: the control_flow family (see ``teflon_py.ops.control_flow``)."""
from __future__ import annotations
