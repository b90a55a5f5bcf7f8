"""The normalization family: attributes, rules and shape inference."""
from __future__ import annotations
