"""Lifetime-based arena planning: intermediate tensors share one buffer where lifetimes allow.

TFLite's "greedy by size" strategy (ArenaPlanner / SimpleMemoryArena): place tensors largest
first; each goes into the smallest gap, between already placed tensors whose lifetimes overlap its
own, that fits it, else after the last of them. Offsets are aligned (128 bytes by default).

Kernels see arena tensors as OpenCL sub-buffers of the one arena buffer (``runtime.Arena``), not
as base pointer + offset arguments: kernels keep plain pointer arguments, programs stay shareable
between layers of equal shape (an offset baked in as a macro would not be), and a sub-buffer's
only demand, an offset aligned to ``CL_DEVICE_MEM_BASE_ADDR_ALIGN`` (128 bytes on PoCL, 256-4096
on GPUs), is met by planning with ``alignment = max(128, that)``.

No single buffer may exceed ``CL_DEVICE_MAX_MEM_ALLOC_SIZE`` (a quarter of the global memory on
many GPUs, often far less than a partition's arena): with ``max_size`` the plan spreads tensors
over several arena buffers ("chunks"), each at most that big. Placement stays greedy by size: a
tensor goes into the first chunk where TFLite's rule finds it room below ``max_size``, else
opens a new chunk. Without a limit (or when all fits) there is one chunk, the plan of old.
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
    """Byte offset of each tensor (in input order) within its chunk, the total size of all chunks,
    and (several chunks only) each tensor's chunk index and each chunk's size."""

    offsets: tuple[int, ...]
    size: int
    chunks: tuple[int, ...] = ()  # per tensor; () means every tensor is in chunk 0
    chunk_sizes: tuple[int, ...] = ()  # per chunk; () means one chunk of ``size``

    def chunk_of(self, i: int) -> int:
        return self.chunks[i] if self.chunks else 0

    @property
    def sizes(self) -> tuple[int, ...]:
        """Every chunk's size (one chunk of ``size`` when the plan was not split)."""
        return self.chunk_sizes or ((self.size,) if self.offsets else ())


def align_up(n: int, alignment: int) -> int:
    return -(-n // alignment) * alignment


def plan_arena(tensors: Sequence[Lifetime], alignment: int = 128, max_size: int | None = None) -> ArenaPlan:
    """Assign offsets so that no two tensors alive at the same step share a byte of one chunk;
    with ``max_size``, no chunk exceeds it (ValueError for a tensor that alone exceeds it)."""
    if alignment <= 0 or alignment & (alignment - 1):
        raise ValueError(f"alignment must be a power of two, got {alignment}")
    for t in tensors:
        if t.size < 0 or t.first > t.last:
            raise ValueError(f"bad lifetime {t}")
        if max_size is not None and t.size > max_size:
            raise ValueError(f"a tensor of {t.size} bytes exceeds the largest buffer allowed ({max_size} bytes)")
    order = sorted(range(len(tensors)), key=lambda i: (-tensors[i].size, tensors[i].first, i))
    offsets = [0] * len(tensors)
    chunk = [0] * len(tensors)
    placed: list[list[int]] = []  # per chunk: indices of placed tensors, kept sorted by offset
    totals: list[int] = []
    for i in order:
        t = tensors[i]
        size = align_up(max(t.size, 1), alignment)
        for c, members in enumerate(placed):
            off = _place(tensors, offsets, members, t, size, alignment)
            if max_size is None or off + t.size <= max_size:
                break
        else:
            c, off = len(placed), 0
            placed.append([])
            totals.append(0)
        offsets[i], chunk[i] = off, c
        placed[c].append(i)
        placed[c].sort(key=lambda j: offsets[j])
        totals[c] = max(totals[c], off + t.size)
    if not tensors:
        return ArenaPlan((), 0)
    sizes = [align_up(n, alignment) for n in totals]
    if max_size is not None:  # the last aligned stretch may pass a limit the bytes themselves meet
        sizes = [min(n, max(max_size, total)) for n, total in zip(sizes, totals)]
    if len(sizes) == 1:
        return ArenaPlan(tuple(offsets), sizes[0])
    return ArenaPlan(tuple(offsets), sum(sizes), tuple(chunk), tuple(sizes))


def _place(tensors: Sequence[Lifetime], offsets: list[int], members: list[int], t: Lifetime,
           size: int, alignment: int) -> int:
    """TFLite's greedy rule within one chunk: the smallest gap between the placed tensors whose
    lifetimes overlap ``t``'s that fits it, else just after the last of them."""
    best, best_gap, cursor = None, None, 0
    for j in members:
        if not t.overlaps(tensors[j]):
            continue
        gap = offsets[j] - cursor
        if gap >= size and (best_gap is None or gap < best_gap):
            best, best_gap = cursor, gap
        cursor = max(cursor, align_up(offsets[j] + max(tensors[j].size, 1), alignment))
    return best if best is not None else cursor
