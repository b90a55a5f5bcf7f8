"""The indexing family: attributes, rules and shape inference."""
from __future__ import annotations
