"""A set-associative LRU cache simulator that replays a kernel's address trace and counts misses per level.

Model: each level has ``size`` bytes, ``assoc`` ways and ``line`` bytes per line; an address maps
to set ``(addr // line) % sets``; a hit moves the line to most-recently-used; a miss inserts it and
evicts the least-recently-used line of the set. Writes allocate (write-back, write-allocate).
Levels are non-inclusive: level n+1 sees exactly the misses of level n. Dirty lines evicted from
the last level (and those still dirty at the end) count as write-backs to memory.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ..codegen.kernel_ir import Kernel
from .address_trace import Trace, trace_kernel


@dataclass(frozen=True)
class CacheLevel:
    """One cache level: total ``size`` bytes, ``assoc`` ways, ``line`` bytes per line."""

    name: str
    size: int
    assoc: int = 8
    line: int = 64

    def __post_init__(self) -> None:
        for f in ("size", "assoc", "line"):
            v = getattr(self, f)
            if not isinstance(v, (int, np.integer)) or v < 1:
                raise ValueError(f"cache {self.name}: {f} must be a positive int, got {v!r}")
        if self.line & (self.line - 1):
            raise ValueError(f"cache {self.name}: line size must be a power of two, got {self.line}")
        if self.size % (self.assoc * self.line):
            raise ValueError(f"cache {self.name}: size {self.size} is not a multiple of assoc*line = "
                             f"{self.assoc * self.line}")

    @property
    def sets(self) -> int:
        """Number of sets."""
        return self.size // (self.assoc * self.line)


#: Small caches for replaying small problems (32-64 per dimension): their ratios to the data match a real L1/L2.
SMALL_HIERARCHY = (CacheLevel("L1", 2048, 4, 64), CacheLevel("L2", 16384, 8, 64))
#: A typical x86 core (32 KiB 8-way L1d, 512 KiB 8-way L2) for the analytic model.
HOST_LIKE = (CacheLevel("L1", 32 * 1024, 8, 64), CacheLevel("L2", 512 * 1024, 8, 64))


@dataclass
class LevelStats:
    """Accesses and misses seen by one level."""

    name: str
    accesses: int
    misses: int

    @property
    def hits(self) -> int:
        """Accesses that hit."""
        return self.accesses - self.misses

    @property
    def miss_rate(self) -> float:
        """misses / accesses (0 when idle)."""
        return self.misses / self.accesses if self.accesses else 0.0


@dataclass
class CacheStats:
    """The result of a replay: per-level stats, write-backs to memory, and bytes moved from/to memory."""

    levels: list[LevelStats]
    writebacks: int
    line: int
    by_buffer: dict[str, int] | None = None   # first-level misses per buffer (when replaying a Trace)

    def misses(self, level: str) -> int:
        """Misses of the named level."""
        for s in self.levels:
            if s.name == level:
                return s.misses
        raise KeyError(f"no cache level {level!r}; levels: {[s.name for s in self.levels]}")

    @property
    def memory_bytes(self) -> int:
        """Bytes between the last level and memory: line fills plus write-backs."""
        return (self.levels[-1].misses + self.writebacks) * self.line

    def as_dict(self) -> dict[str, int]:
        """``{"L1_misses": ..., "L2_misses": ..., "memory_bytes": ...}``."""
        out = {f"{s.name}_misses": s.misses for s in self.levels}
        out.update({f"{s.name}_accesses": s.accesses for s in self.levels})
        out["memory_bytes"] = self.memory_bytes
        return out


def _replay_level(lines: np.ndarray, writes: np.ndarray, lvl: CacheLevel) -> tuple[np.ndarray, np.ndarray, int]:
    """Replay line numbers through one LRU level; return the missing lines, their write flags, and dirty evictions."""
    nsets, ways = lvl.sets, lvl.assoc
    sets: list[dict[int, bool]] = [dict() for _ in range(nsets)]
    miss_mask = np.zeros(lines.size, dtype=bool)
    evicted_dirty = 0
    for n, (ln, w) in enumerate(zip(lines.tolist(), writes.tolist())):
        s = sets[ln % nsets]
        if ln in s:
            d = s.pop(ln)
            s[ln] = d or w
        else:
            miss_mask[n] = True
            if len(s) >= ways:
                old = next(iter(s))
                if s.pop(old):
                    evicted_dirty += 1
            s[ln] = w
    remaining_dirty = sum(1 for s in sets for d in s.values() if d)
    return miss_mask, remaining_dirty, evicted_dirty


def simulate(trace: Trace | np.ndarray, levels: Sequence[CacheLevel] = SMALL_HIERARCHY,
             writes: np.ndarray | None = None, align: int = 4096) -> CacheStats:
    """Replay a ``Trace`` (or an array of byte addresses, with optional write flags) through the cache levels."""
    if not levels:
        raise ValueError("simulate needs at least one CacheLevel")
    line = levels[0].line
    if any(lv.line != line for lv in levels):
        raise ValueError("all cache levels must use the same line size")
    if isinstance(trace, Trace):
        addrs, w = trace.addresses(align), trace.writes
    else:
        addrs = np.asarray(trace, dtype=np.int64)
        w = np.zeros(addrs.size, bool) if writes is None else np.asarray(writes, bool)
        if w.shape != addrs.shape:
            raise ValueError(f"writes has shape {w.shape}, addresses {addrs.shape}")
    lines = addrs // line
    stats: list[LevelStats] = []
    wb = 0
    by_buffer = None
    for i, lvl in enumerate(levels):
        miss, dirty_left, dirty_evicted = _replay_level(lines, w, lvl)
        stats.append(LevelStats(lvl.name, int(lines.size), int(miss.sum())))
        if i == 0 and isinstance(trace, Trace):
            counts = np.bincount(trace.buffer_ids[miss], minlength=len(trace.buffers))
            by_buffer = {b: int(c) for b, c in zip(trace.buffers, counts)}
        if i == len(levels) - 1:
            wb = dirty_left + dirty_evicted
        # the next level sees the misses (reads of the missing lines) plus write-backs of dirty lines
        lines, w = lines[miss], w[miss]
    return CacheStats(stats, int(wb), line, by_buffer)


def kernel_misses(kernel: Kernel, levels: Sequence[CacheLevel] = SMALL_HIERARCHY,
                  max_accesses: int = 4_000_000) -> CacheStats:
    """Trace ``kernel`` and replay it: misses per level for one run."""
    return simulate(trace_kernel(kernel, max_accesses), levels)
