"""``Schedule``: a kernel plus the primitives applied to it, chainable, with the steps recorded.

``Schedule(k).tile("i", "j", 32, 32).vectorize("ji").kernel``; ``print(schedule)`` lists the steps, then the kernel.
"""
from __future__ import annotations

from typing import Any, Callable

from ..codegen.kernel_ir import Kernel
from .loop_primitives import fuse, parallel, reorder, split, tile, unroll, vectorize
from .placement import compute_at, contract, pack


class Schedule:
    """A kernel plus the primitives applied to it, chainable: ``Schedule(k).split("i", 8).unroll("ii").kernel``."""

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel
        self.steps: list[str] = []

    def _apply(self, fn: Callable[..., Kernel], *args: Any, **kw: Any) -> "Schedule":
        self.kernel = fn(self.kernel, *args, **kw)
        self.steps.append(f"{fn.__name__}({', '.join([repr(a) for a in args] + [f'{a}={b!r}' for a, b in kw.items()])})")
        return self

    def split(self, *a: Any, **kw: Any) -> "Schedule":
        """See ``split``."""
        return self._apply(split, *a, **kw)

    def tile(self, *a: Any, **kw: Any) -> "Schedule":
        """See ``tile``."""
        return self._apply(tile, *a, **kw)

    def reorder(self, *a: Any, **kw: Any) -> "Schedule":
        """See ``reorder``."""
        return self._apply(reorder, *a, **kw)

    def fuse(self, *a: Any, **kw: Any) -> "Schedule":
        """See ``fuse``."""
        return self._apply(fuse, *a, **kw)

    def unroll(self, *a: Any, **kw: Any) -> "Schedule":
        """See ``unroll``."""
        return self._apply(unroll, *a, **kw)

    def vectorize(self, *a: Any, **kw: Any) -> "Schedule":
        """See ``vectorize``."""
        return self._apply(vectorize, *a, **kw)

    def parallel(self, *a: Any, **kw: Any) -> "Schedule":
        """See ``parallel``."""
        return self._apply(parallel, *a, **kw)

    def pack(self, *a: Any, **kw: Any) -> "Schedule":
        """See ``pack``."""
        return self._apply(pack, *a, **kw)

    def contract(self, *a: Any, **kw: Any) -> "Schedule":
        """See ``contract``."""
        return self._apply(contract, *a, **kw)

    def compute_at(self, *a: Any, **kw: Any) -> "Schedule":
        """See ``compute_at``."""
        return self._apply(compute_at, *a, **kw)

    def __str__(self) -> str:
        return "\n".join(self.steps) + "\n" + str(self.kernel)
