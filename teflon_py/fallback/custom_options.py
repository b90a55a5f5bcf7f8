"""Custom ops' options: the FlexBuffer map most custom kernels read in their ``Init``.

``custom_options(node)`` decodes ``op.custom_options`` once per node (through ``node.memo``) into
plain Python values: a dict of ints, floats, bools, strings and lists. A key the map lacks reads
as ``None``; kernels apply TFLite's defaults themselves (a FlexBuffer null reads as 0 in C++).
"""
from __future__ import annotations

from typing import Any

from flatbuffers import flexbuffers

from teflon_py.fallback.registry import Node


def _decode(node: Node) -> dict[str, Any]:
    """Parse the op's custom options as a FlexBuffer map; an absent blob is an empty map."""
    raw = node.op.custom_options
    if not raw:
        return {}
    try:
        value = flexbuffers.Loads(bytes(raw))
    except Exception as e:  # the FlexBuffer reader raises bare IndexError/ValueError/struct.error
        raise node.error(f"custom options are not a valid FlexBuffer ({type(e).__name__}: {e})") from e
    if not isinstance(value, dict):
        raise node.error(f"custom options must be a FlexBuffer map, got {type(value).__name__}")
    return value


def custom_options(node: Node) -> dict[str, Any]:
    """The node's custom options as a dict, decoded once per node."""
    return node.memo("custom_options", lambda: _decode(node))
