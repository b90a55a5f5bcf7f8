"""Lifetime-based arena planning: intermediate tensors share one buffer where lifetimes allow.

TFLite's "greedy by size" strategy (ArenaPlanner / SimpleMemoryArena): place tensors largest
first; each goes into the smallest gap, between already placed tensors whose lifetimes overlap its
own, that fits it, else after the last of them. Offsets are aligned (128 bytes by default).

Kernels see arena tensors as OpenCL sub-buffers of the one arena buffer (``runtime.Arena``), not
as base pointer + offset arguments: kernels keep plain pointer arguments, programs stay shareable
between layers of equal shape (an offset baked in as a macro would not be), and a sub-buffer's
only demand, an offset aligned to ``CL_DEVICE_MEM_BASE_ADDR_ALIGN`` (128 bytes on PoCL, 256-4096
on GPUs), is met by planning with ``alignment = max(128, that)``.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Lifetime:
    """A tensor's bytes and the steps (inclusive) from its producer to its last consumer."""

    size: int
    first: int
    last: int

    def overlaps(self, other: Lifetime) -> bool:
        return self.first <= other.last and other.first <= self.last


@dataclass(frozen=True)
class ArenaPlan:
    """Byte offset of each tensor (in input order) and the arena's total size."""

    offsets: tuple[int, ...]
    size: int


def align_up(n: int, alignment: int) -> int:
    return -(-n // alignment) * alignment


def plan_arena(tensors: Sequence[Lifetime], alignment: int = 128) -> ArenaPlan:
    """Assign offsets so that no two tensors alive at the same step share a byte."""
    if alignment <= 0 or alignment & (alignment - 1):
        raise ValueError(f"alignment must be a power of two, got {alignment}")
    for t in tensors:
        if t.size < 0 or t.first > t.last:
            raise ValueError(f"bad lifetime {t}")
    order = sorted(range(len(tensors)), key=lambda i: (-tensors[i].size, tensors[i].first, i))
    offsets = [0] * len(tensors)
    placed: list[int] = []  # indices of placed tensors, kept sorted by offset
    total = 0
    for i in order:
        t = tensors[i]
        size = align_up(max(t.size, 1), alignment)
        best, best_gap, cursor = None, None, 0
        for j in placed:
            if not t.overlaps(tensors[j]):
                continue
            gap = offsets[j] - cursor
            if gap >= size and (best_gap is None or gap < best_gap):
                best, best_gap = cursor, gap
            cursor = max(cursor, align_up(offsets[j] + max(tensors[j].size, 1), alignment))
        offsets[i] = best if best is not None else cursor
        placed.append(i)
        placed.sort(key=lambda j: offsets[j])
        total = max(total, offsets[i] + t.size)
    return ArenaPlan(tuple(offsets), align_up(total, alignment) if tensors else 0)
