"""Custom ops' options: the FlexBuffer map user-registered custom kernels read in their ``Init``
(the built-in custom ops get theirs decoded as ``node.attrs``, see ``teflon_py.ops.custom``).

``custom_options(node)`` decodes ``op.custom_options`` once per node (through ``node.memo``) into
plain Python values: a dict of ints, floats, bools, strings and lists. A key the map lacks reads
as ``None``; kernels apply TFLite's defaults themselves (a FlexBuffer null reads as 0 in C++).
"""
from __future__ import annotations

from typing import Any

from teflon_py.fallback.registry import Node
from teflon_py.tflite.translate.custom import decode_flex_map


def _decode(node: Node) -> dict[str, Any]:
    """Parse the op's custom options as a FlexBuffer map; an absent blob is an empty map."""
    try:
        return decode_flex_map(node.op.custom_options)
    except ValueError as e:
        raise node.error(str(e)) from e


def custom_options(node: Node) -> dict[str, Any]:
    """The node's custom options as a dict, decoded once per node."""
    return node.memo("custom_options", lambda: _decode(node))
