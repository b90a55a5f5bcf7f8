"""TFLite options <-> op-layer attributes: the recurrent family (see ``teflon_py.ops.recurrent``)."""
from __future__ import annotations
