"""Proving every buffer access of a kernel in bounds from its loop bounds and ``if`` guards.

Each index is bounded over its loop nest (``infopt.codegen.index_bounds``); then each access is

- *proven*: every index inside its dimension; the backend emits it with no check at all;
- a *violation*: a bound lies outside, and a search of the loop nest finds loop values where the index is
  out of bounds; ``verify_kernel`` rejects the kernel with the buffer, index, shape and those loop values;
- *unproven* (a data-dependent index, bound or guard, or a search too long to finish): the backend compiles
  that access with a check that stops the kernel and reports the same message instead of touching memory
  outside the buffer (``CompiledKernel`` raises ``OutOfBoundsError``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator, Sequence

from .expr import Buffer, Expr, KernelError, Load
from .index_bounds import LoopNest
from .kernel_ir import Kernel, Loop, Stmt, Store
from .walk import Path, iter_scoped, loads_in


class OutOfBoundsError(KernelError):
    """An access outside its buffer: the buffer, the index values, its shape and the loop values where it happens."""

    def __init__(self, message: str, buffer: str = "", index: tuple[int, ...] = (), shape: tuple[int, ...] = (),
                 loop_values: dict[str, int] | None = None) -> None:
        super().__init__(message)
        self.buffer, self.index, self.shape = buffer, tuple(index), tuple(shape)
        self.loop_values = dict(loop_values or {})


def oob_message(buffer: Buffer, indices: Sequence[Expr], values: Sequence[int], loop_values: dict[str, int]) -> str:
    """``out of bounds: buffer C, index [i, j] = [5, 9], shape (5, 8), at loop values i=5, j=9``."""
    where = ", ".join(f"{n}={v}" for n, v in loop_values.items()) or "(outside every loop)"
    return (f"out of bounds: buffer {buffer.name}, index [{', '.join(i.text() for i in indices)}] = "
            f"[{', '.join(str(int(v)) for v in values)}], shape {tuple(buffer.shape)}, at loop values {where}")


@dataclass(frozen=True)
class AccessSite:
    """One load or store of a kernel: where it is (statement path; the load, or None for the store) and what."""

    path: Path
    load: Load | None
    stmt: Stmt
    buffer: Buffer
    indices: tuple[Expr, ...]
    loop_vars: tuple[str, ...]

    @property
    def key(self) -> tuple[Path, Load | None]:
        """What the emitters look an access up by: (statement path, the Load or None for the statement's store)."""
        return (self.path, self.load)


@dataclass
class BoundsReport:
    """The outcome for every access: how many are proven, the violations found, and the unproven ones."""

    kernel: Kernel
    proven: int = 0
    violations: list[tuple[AccessSite, tuple[int, ...], dict[str, int], str]] = field(default_factory=list)
    unproven: dict[tuple[Path, Load | None], AccessSite] = field(default_factory=dict)

    @property
    def checked_sites(self) -> list[AccessSite]:
        """The accesses the backend must compile with a bounds check, in program order (their position is their id)."""
        return list(self.unproven.values())

    @property
    def index_slots(self) -> int:
        """Slots for index values in the report a checked kernel writes (the largest rank among checked accesses)."""
        return max((len(s.indices) for s in self.unproven.values()), default=0)

    @property
    def record_size(self) -> int:
        """int64 slots of the report a checked kernel writes: site id + 1, then indices, then loop values."""
        if not self.unproven:
            return 0
        return 1 + self.index_slots + max(len(s.loop_vars) for s in self.unproven.values())

    def error(self) -> OutOfBoundsError | None:
        """The first violation as the error ``verify_kernel`` raises, or None."""
        if not self.violations:
            return None
        site, values, loops, detail = self.violations[0]
        msg = f"kernel {self.kernel.name}, statement `{site.stmt.head}`: {oob_message(site.buffer, site.indices, values, loops)}"
        return OutOfBoundsError(msg + (f"; {detail}" if detail else ""), site.buffer.name, values, site.buffer.shape, loops)

    def runtime_error(self, record: Sequence[int]) -> OutOfBoundsError:
        """The error for a report written by a checked kernel that stopped at an out-of-bounds access."""
        site = self.checked_sites[int(record[0]) - 1]
        values = tuple(int(v) for v in record[1:1 + len(site.indices)])
        loops = {n: int(v) for n, v in zip(site.loop_vars, record[1 + self.index_slots:])}
        msg = (f"kernel {self.kernel.name}, statement `{site.stmt.head}`: {oob_message(site.buffer, site.indices, values, loops)} "
               "(the access could not be proven in bounds before compiling, so it ran with a bounds check, which stopped "
               "the kernel before it touched memory outside the buffer)")
        return OutOfBoundsError(msg, site.buffer.name, values, site.buffer.shape, loops)


# ----- the report -------------------------------------------------------------------------------------------------
def iter_sites(kernel: Kernel) -> Iterator[tuple[AccessSite, tuple[tuple[Stmt, int], ...]]]:
    """Every load and store of ``kernel`` in program order, with the ancestors that enclose it."""
    for s, path, ancestors in iter_scoped(kernel.body):
        loop_vars = tuple(a.var.name for a, _ in ancestors if isinstance(a, Loop))
        for x in s.exprs:
            for ld in loads_in(x):
                yield AccessSite(path, ld, s, ld.buffer, ld.indices, loop_vars), ancestors
        if isinstance(s, Store):
            yield AccessSite(path, None, s, s.buffer, s.indices, loop_vars), ancestors


def prove_bounds(kernel: Kernel) -> BoundsReport:
    """Classify every access of a (well-formed) kernel as proven, a violation (with a witness) or unproven."""
    report = BoundsReport(kernel)
    nests: dict[int, tuple[tuple, LoopNest]] = {}
    shared: dict = {}
    for site, ancestors in iter_sites(kernel):
        held = nests.get(id(ancestors))
        if held is None or held[0] is not ancestors:
            held = (ancestors, LoopNest(ancestors, shared))
            nests[id(ancestors)] = held
        nest = held[1]
        if nest.empty:
            report.proven += 1
            continue
        ranges = [nest.bounds(ix) for ix in site.indices]
        if all(lo is not None and hi is not None and lo >= 0 and hi < n
               for (lo, hi), n in zip(ranges, site.buffer.shape)):
            report.proven += 1
            continue
        kind, found = nest.search(site.indices, site.buffer.shape, site.loop_vars)
        if kind == "safe":
            report.proven += 1
        elif kind == "violation":
            values, loops = found
            report.violations.append((site, values, loops, _range_detail(site, ranges, values)))
        else:
            report.unproven[site.key] = site
    return report


def _range_detail(site: AccessSite, ranges: list[tuple[int | None, int | None]], values: tuple[int, ...]) -> str:
    """What the bounds say about the dimension the witness goes out of (for the message)."""
    for d, ((lo, hi), n, v) in enumerate(zip(ranges, site.buffer.shape, values)):
        if not 0 <= v < n and lo is not None and hi is not None:
            return (f"index {d} of {site.buffer.name} ({site.indices[d].text()}) ranges over [{lo}, {hi}] but "
                    f"dimension {d} has size {n}")
    return ""
