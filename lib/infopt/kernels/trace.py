"""Record every `tl.load` / `tl.store` of a kernel run in Triton's interpreter; stop out-of-bounds ones first.

`run_traced(kernel, grid, *args, **meta)` runs the interpreter version of a `@triton.jit` kernel on CPU tensors with
the interpreter's builder patched: each load, store and atomic is mapped from byte addresses back to the argument
tensor it touches (by the kernel's parameter names) and to element offsets, checked against that tensor's bounds
BEFORE it happens (`OutOfBounds`, a GradingError with a message a student can act on), and logged. The returned
`AccessLog` counts the memory traffic per tensor: how many elements each kernel reads and writes, and how often.

The interpreter's pointers are plain addresses, with no record of the argument they came from, so an access is
credited to the first argument (in parameter order) that holds all of its active lanes; arguments that overlap in
memory (the same tensor passed twice, overlapping views) share their elements that way. An access that no single
argument holds is out of bounds; it is named after the argument holding its first in-bounds lane. A masked load
without `other` gives NaN in its masked-off float lanes (undefined on a GPU; the bare interpreter gives 0).
"""
from __future__ import annotations

import inspect
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import torch

from infopt.grading.errors import GradingError
from infopt.kernels.backend import interpreted, triton

__all__ = ["Access", "TensorInfo", "OutOfBounds", "AccessLog", "run_traced"]

MAX_LISTED = 6      # bad offsets quoted in an OutOfBounds message
_MISSING = object()
_PATCHED = ("create_load", "create_store", "create_masked_load", "create_masked_store", "create_atomic_rmw",
            "create_atomic_cas")


@dataclass(frozen=True, eq=False)   # eq=False: comparing numpy offsets with == has no single truth value
class Access:
    """One memory operation of one program on one tensor: `offsets` are the active lanes' element offsets.

    kind is "load", "store" or "atomic" (an atomic both reads and writes its elements); `masked` says a mask was
    given; `lanes` counts all lanes of the operation including masked-off ones; `misaligned` counts active lanes
    whose address is not a whole number of elements from the tensor's start (their offsets are rounded down).
    """
    kind: str
    tensor: str
    program: tuple[int, int, int]
    offsets: np.ndarray
    masked: bool
    lanes: int
    misaligned: int = 0


@dataclass(frozen=True, eq=False)
class TensorInfo:
    """What the tracer knows of an argument tensor: where it lives and which element offsets are its own."""
    name: str
    start: int                  # data_ptr, bytes
    elsize: int                 # bytes per element
    numel: int
    span: int                   # 1 + the largest element offset (== numel when contiguous)
    shape: tuple[int, ...]
    stride: tuple[int, ...]
    dtype: torch.dtype
    members: np.ndarray | None  # sorted element offsets of a non-contiguous view (None: every offset < span)

    @property
    def end(self) -> int:
        """One past the last byte of the tensor."""
        return self.start + self.span * self.elsize

    def describe_valid(self) -> str:
        """'x has 100 elements (valid offsets 0..99)' or the strided-view version."""
        if self.numel == 0:
            return f"{self.name} has no elements"
        if self.members is None:
            return f"{self.name} has {self.numel} elements (valid offsets 0..{self.numel - 1})"
        return (f"{self.name} is a strided view of shape {tuple(self.shape)} with strides {tuple(self.stride)} "
                f"({self.numel} elements at offsets between 0 and {self.span - 1}, not every offset in between)")


class OutOfBounds(GradingError):
    """A kernel's load or store would touch memory outside every tensor it was given (raised before it happens)."""


class AccessLog:
    """The loads and stores of one traced launch, with per-tensor counts of the memory traffic."""

    def __init__(self, kernel_name: str, tensors: dict[str, TensorInfo]) -> None:
        self.kernel_name = kernel_name
        self.tensors = tensors
        self.accesses: list[Access] = []
        self.grid: tuple[int, int, int] = (0, 0, 0)

    @property
    def programs(self) -> int:
        """Program instances the launch ran (the product of the grid)."""
        return int(np.prod(self.grid))

    def resolve(self, name: str) -> str:
        """The parameter name of tensor `name`: itself, or `name + "_ptr"` ("x" finds `x_ptr`); KeyError if none."""
        if name in self.tensors:
            return name
        if f"{name}_ptr" in self.tensors:
            return f"{name}_ptr"
        raise KeyError(f"{name!r} is not a tensor argument of {self.kernel_name}; its tensors are "
                       f"{sorted(self.tensors)}")

    def _of(self, name: str, kinds: tuple[str, ...]) -> list[Access]:
        name = self.resolve(name)
        return [a for a in self.accesses if a.tensor == name and a.kind in kinds]

    def reads(self, name: str) -> int:
        """Elements loaded from tensor `name` (active lanes, counting repeats; atomics count too)."""
        return sum(a.offsets.size for a in self._of(name, ("load", "atomic")))

    def writes(self, name: str) -> int:
        """Elements stored to tensor `name` (active lanes, counting repeats; atomics count too)."""
        return sum(a.offsets.size for a in self._of(name, ("store", "atomic")))

    def _offsets(self, name: str, kinds: tuple[str, ...]) -> np.ndarray:
        parts = [a.offsets for a in self._of(name, kinds)]
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)

    def distinct_reads(self, name: str) -> int:
        """Different elements of `name` loaded at least once."""
        return int(np.unique(self._offsets(name, ("load", "atomic"))).size)

    def distinct_writes(self, name: str) -> int:
        """Different elements of `name` stored at least once."""
        return int(np.unique(self._offsets(name, ("store", "atomic"))).size)

    def _numel(self, name: str, numel: int | None) -> int:
        return self.tensors[self.resolve(name)].numel if numel is None else int(numel)

    def never_written(self, name: str, numel: int | None = None) -> np.ndarray:
        """Element offsets in [0, numel) that no store touched (numel defaults to the tensor's; for a strided view
        only offsets that belong to the view are listed)."""
        info = self.tensors[self.resolve(name)]
        n = self._numel(name, numel)
        wanted = info.members if (numel is None and info.members is not None) else np.arange(n, dtype=np.int64)
        return np.setdiff1d(wanted, self._offsets(name, ("store", "atomic")), assume_unique=False)

    def passes(self, name: str, numel: int | None = None) -> float:
        """How many times over the kernel read tensor `name`: reads / numel (numel defaults to the tensor's)."""
        n = self._numel(name, numel)
        return self.reads(name) / n if n else 0.0

    def reads_per_program(self, name: str) -> dict[tuple[int, int, int], int]:
        """Elements of `name` each program loaded (programs that loaded none are left out)."""
        out: dict[tuple[int, int, int], int] = {}
        for a in self._of(name, ("load", "atomic")):
            out[a.program] = out.get(a.program, 0) + int(a.offsets.size)
        return out

    def table(self) -> str:
        """One line per tensor argument: elements, elements read and written, and passes over it."""
        width = max([len("tensor")] + [len(n) for n in self.tensors])
        lines = [f"{self.kernel_name}: {self.programs} programs, grid {self.grid}",
                 f"  {'tensor':<{width}}  {'elements':>9}  {'reads':>9}  {'writes':>9}  {'read passes':>11}"]
        for name, info in self.tensors.items():
            lines.append(f"  {name:<{width}}  {info.numel:>9}  {self.reads(name):>9}  {self.writes(name):>9}  "
                         f"{self.passes(name):>11.2f}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"<AccessLog of {self.kernel_name}: {len(self.accesses)} accesses, {self.programs} programs>"


def _tensor_info(name: str, t: torch.Tensor) -> TensorInfo:
    """Bounds of an argument tensor; ValueError for tensors the interpreter would copy (not on the CPU)."""
    if t.device.type != "cpu":
        raise ValueError(f"run_traced needs CPU tensors (the tracer maps addresses of tensors kept in place); "
                         f"`{name}` is on {t.device}: pass {name}.cpu() and copy the result back")
    if any(s < 0 for s in t.stride()):
        raise ValueError(f"`{name}` has a negative stride {tuple(t.stride())}; pass a tensor with strides >= 0")
    numel = t.numel()
    span = 0 if numel == 0 else 1 + sum((n - 1) * s for n, s in zip(t.shape, t.stride()))
    members = None
    if numel and not t.is_contiguous() and span != numel:
        idx = torch.as_strided(torch.arange(span, dtype=torch.int64), t.shape, t.stride())
        members = np.unique(idx.numpy().ravel())
        if members.size == span:
            members = None
    return TensorInfo(name, int(t.data_ptr()), int(t.element_size()), numel, span, tuple(t.shape),
                      tuple(t.stride()), t.dtype, members)


def _named_tensors(fn: Callable, args: Sequence[Any], kwargs: dict[str, Any]) -> dict[str, TensorInfo]:
    """Argument tensors by the kernel's parameter names (tuples of tensors as name[i])."""
    params = list(inspect.signature(fn).parameters)
    if len(args) > len(params):
        raise TypeError(f"{fn.__name__} takes {len(params)} arguments ({', '.join(params)}), got {len(args)}")
    pairs = list(zip(params, args)) + [(k, v) for k, v in kwargs.items() if k in params]
    out: dict[str, TensorInfo] = {}
    for name, value in pairs:
        if isinstance(value, torch.Tensor):
            out[name] = _tensor_info(name, value)
        elif isinstance(getattr(value, "base", None), torch.Tensor):   # a host-side TensorDescriptor
            out[name] = _tensor_info(name, value.base)
        elif isinstance(value, tuple):
            for i, item in enumerate(value):
                if isinstance(item, torch.Tensor):
                    out[f"{name}[{i}]"] = _tensor_info(f"{name}[{i}]", item)
    return out


class _Recorder:
    """Maps each access's addresses to tensors, raises OutOfBounds before a bad one, and appends to the log."""

    def __init__(self, log: AccessLog, builder: Any) -> None:
        self.log = log
        self.builder = builder
        self.infos = list(log.tensors.values())

    def check(self, kind: str, op: str, ptrs: Any, mask: np.ndarray | None, masked: bool) -> None:
        addr = np.asarray(ptrs.data, dtype=np.uint64).ravel()
        lanes = addr.size
        if mask is not None:
            m = np.broadcast_to(np.asarray(mask, dtype=bool), np.shape(ptrs.data)).ravel()
            addr = addr[m]
        if addr.size == 0:
            return
        addr = addr.astype(np.int64)
        width = max(1, ptrs.get_element_ty().primitive_bitwidth // 8)
        program = tuple(int(v) for v in self.builder.grid_idx)
        held = []
        for info in self.infos:
            inside = self._inside(info, addr, width)
            if inside.all():   # the usual case: one tensor holds every active lane
                rel = addr - info.start
                misaligned = int(np.count_nonzero(rel % info.elsize)) if info.elsize > 1 else 0
                self.log.accesses.append(Access(kind, info.name, program, rel // info.elsize, masked, lanes,
                                                misaligned))
                return
            held.append(inside)
        # A block of pointers derives from one base pointer, so it must stay inside one tensor: the tensor holding
        # the first active lane (lanes that ran off its end into an adjacent argument are out of bounds too).
        firsts = [int(np.argmax(inside)) if inside.any() else addr.size for inside in held]
        primary = int(np.argmin(firsts)) if held and min(firsts) < addr.size else -1
        bad = ~held[primary] if primary >= 0 else np.ones(addr.size, dtype=bool)
        raise OutOfBounds(self._message(op, kind, addr, bad, masked, program, primary))

    @staticmethod
    def _inside(info: TensorInfo, addr: np.ndarray, width: int) -> np.ndarray:
        """Lanes whose `width` bytes lie in the tensor (for a strided view: on one of its own elements)."""
        inside = (addr >= info.start) & (addr + width <= info.end)
        if info.members is not None and inside.any():
            offs = (addr - info.start) // info.elsize
            pos = np.searchsorted(info.members, offs).clip(0, info.members.size - 1)
            inside &= info.members[pos] == offs
        return inside

    def _message(self, op: str, kind: str, addr: np.ndarray, bad: np.ndarray, masked: bool,
                 program: tuple[int, int, int], primary: int) -> str:
        verb = {"load": "reads", "store": "writes", "atomic": "updates"}[kind]
        if not self.infos:
            return f"your kernel's {op} in program {program} {verb} memory, but the kernel got no tensor arguments"
        first = int(addr[bad][0])
        dist = [0 if info.start <= first < info.end else min(abs(first - info.start), abs(first - info.end))
                for info in self.infos]
        info = self.infos[primary if primary >= 0 else int(np.argmin(dist))]
        dist_primary = dist[self.infos.index(info)]
        offs = (addr[bad] - info.start) // info.elsize
        listed = ", ".join(str(int(o)) for o in offs[:MAX_LISTED]) + (", ..." if offs.size > MAX_LISTED else "")
        n_bad = int(bad.sum())
        text = (f"your kernel's {op} of `{info.name}` in program {program} {verb} element offsets [{listed}] "
                f"({n_bad} lane{'s' if n_bad != 1 else ''} out of bounds) but {info.describe_valid()}")
        if dist_primary > 1 << 30:
            text += f" (the first bad address, {first:#x}, is far from every tensor: is the pointer right?)"
        if masked:
            before = bool((offs < 0).any())
            example = "(offsets >= 0) & (offsets < n)" if before else "offsets < n"
            text += (f"; its mask lets lanes {'before the start' if before else 'past the end'} through: make the "
                     f"mask false wherever the offset is outside the tensor (e.g. mask={example})")
        else:
            text += f"; this {kind} has no mask: pass mask=offsets < n"
        return text

    def patches(self) -> dict[str, Callable]:
        """Replacement builder methods that check and record, then call the interpreter's own."""
        b = self.builder
        orig_load, orig_store = b.create_masked_load, b.create_masked_store
        orig_rmw, orig_cas = b.create_atomic_rmw, b.create_atomic_cas

        # Same parameter names as InterpreterBuilder's methods: the interpreter passes some by keyword.
        def create_load(ptr, _0, _1, is_volatile):
            self.check("load", "tl.load", ptr, None, masked=False)
            mask = type(ptr)(np.ones_like(ptr.data, dtype=bool), triton.language.int1)
            return orig_load(ptr, mask, None, _0, _1, is_volatile)

        def create_store(ptr, val, _0, _1):
            self.check("store", "tl.store", ptr, None, masked=False)
            mask = type(ptr)(np.ones_like(ptr.data, dtype=bool), triton.language.int1)
            return orig_store(ptr, val, mask, None, None)

        def create_masked_load(ptrs, mask, other, cache_modifier, eviction_policy, is_volatile):
            self.check("load", "tl.load", ptrs, mask.data, masked=True)
            out = orig_load(ptrs, mask, other, cache_modifier, eviction_policy, is_volatile)
            data = getattr(out, "data", None)
            if other is None and isinstance(data, np.ndarray) and data.dtype.kind == "f":
                # a masked-off lane without `other` is undefined on a GPU (whatever the register held); the
                # interpreter would give 0, which hides a missing `other=0.0`: make it NaN, as garbage would be
                data[~np.broadcast_to(np.asarray(mask.data, dtype=bool), data.shape)] = np.nan
            return out

        def create_masked_store(ptrs, value, mask, cache_modifier, eviction_policy):
            self.check("store", "tl.store", ptrs, mask.data, masked=True)
            return orig_store(ptrs, value, mask, cache_modifier, eviction_policy)

        def create_atomic_rmw(rmwOp, ptr, val, mask, sem, scope):  # noqa: N803  (the builder's name)
            self.check("atomic", "tl.atomic_add (or another atomic)", ptr, mask.data, masked=True)
            return orig_rmw(rmwOp, ptr, val, mask, sem, scope)

        def create_atomic_cas(ptr, cmp, val, sem, scope):
            self.check("atomic", "tl.atomic_cas", ptr, None, masked=False)
            return orig_cas(ptr, cmp, val, sem, scope)

        return {"create_load": create_load, "create_store": create_store,
                "create_masked_load": create_masked_load, "create_masked_store": create_masked_store,
                "create_atomic_rmw": create_atomic_rmw, "create_atomic_cas": create_atomic_cas}


def _find_out_of_bounds(err: BaseException) -> OutOfBounds | None:
    """The OutOfBounds inside the interpreter's InterpreterError wrappers (one per nested @triton.jit call)."""
    seen = 0
    while err is not None and seen < 32:
        if isinstance(err, OutOfBounds):
            return err
        err, seen = err.__cause__, seen + 1
    return None


def run_traced(kernel: Any, grid: Any, *args: Any, **meta: Any) -> AccessLog:
    """Run `interpreted(kernel)[grid](*args, **meta)` on CPU tensors and return every load/store it made.

    Raises OutOfBounds (before the access) when a load or store leaves every tensor argument, ValueError for
    tensors not on the CPU; the kernel's own errors come out as Triton's InterpreterError."""
    from infopt.grading.remote import StudentFunction

    if isinstance(kernel, StudentFunction):  # graded across the boundary: the launch is traced where the kernel is
        return kernel.via("infopt.kernels.trace:run_traced", grid, *args, **meta)
    from triton.runtime import interpreter as interp_mod
    from triton.runtime.errors import InterpreterError

    runner = interpreted(kernel)
    fn = runner.fn
    log = AccessLog(getattr(fn, "__name__", "kernel"), _named_tensors(fn, args, meta))
    builder = interp_mod.interpreter_builder
    saved = {name: vars(builder).get(name, _MISSING) for name in _PATCHED}
    recorder = _Recorder(log, builder)
    try:
        for name, method in recorder.patches().items():
            setattr(builder, name, method)
        runner[grid](*args, **meta)
    except InterpreterError as err:
        found = _find_out_of_bounds(err)
        if found is None:
            raise
        raise found from None
    finally:
        for name, old in saved.items():
            if old is _MISSING:
                vars(builder).pop(name, None)
            else:
                setattr(builder, name, old)
        log.grid = tuple(int(g) for g in getattr(builder, "grid_dim", (0, 0, 0)))
    return log

