"""The kernel test harness: tolerances by dtype, poisoned outputs, odd sizes, checks against float64 references.

Used by the unit's tests and by the graded cells: an output is filled with NaN before a launch (`poison_`), so an
element the kernel never wrote shows up by index; values are then compared with `infopt.grading.check_array`
(which prints yours / expected / a mask of where they differ), and `describe_traffic` turns an `AccessLog` into
the sentence a student reads ("your softmax reads x 3 times ...").
"""
from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np
import torch

from infopt.grading import GradingError, HarnessError, check_array
from infopt.grading.format import fmt_index
from infopt.kernels.trace import AccessLog

__all__ = ["tolerance", "poison_", "random_inputs", "odd_sizes", "check_against_reference", "written_mask",
           "describe_traffic", "check_traffic", "check_kernel"]

TOLERANCES: dict[torch.dtype, tuple[float, float]] = {
    torch.float64: (1e-10, 1e-10),
    torch.float32: (1e-5, 1e-5),
    torch.bfloat16: (2e-2, 2e-2),
    torch.float16: (1e-2, 1e-2),
}
MAX_LISTED = 5


def tolerance(dtype: torch.dtype) -> tuple[float, float]:
    """(rtol, atol) for comparing a kernel's output of `dtype` with a float64 reference (integers: exact)."""
    if dtype in TOLERANCES:
        return TOLERANCES[dtype]
    if isinstance(dtype, torch.dtype) and not dtype.is_floating_point and not dtype.is_complex:
        return (0.0, 0.0)
    raise ValueError(f"no tolerance for dtype {dtype!r}: use one of {sorted(str(d) for d in TOLERANCES)} or an "
                     "integer dtype, or pass rtol/atol yourself")


def _poison_value(dtype: torch.dtype) -> float | int:
    if dtype.is_floating_point or dtype.is_complex:
        return float("nan")
    if dtype == torch.bool:
        raise TypeError("cannot poison a bool tensor (no value is invalid): use an integer or float output")
    return int(torch.iinfo(dtype).min)


def poison_(t: torch.Tensor) -> torch.Tensor:
    """Fill `t` in place with NaN (floats) or the dtype's minimum (ints), so unwritten elements stand out; returns t."""
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"poison_ needs a torch.Tensor, got {type(t).__name__}")
    return t.fill_(_poison_value(t.dtype))


def _shape(shape: Any) -> tuple[int, ...]:
    dims = (shape,) if isinstance(shape, int) else tuple(shape)
    if not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in dims):
        raise ValueError(f"a shape must be an int or a tuple of ints >= 0, got {shape!r}")
    return dims


def random_inputs(shapes: Iterable[Any], dtype: torch.dtype = torch.float32, seed: int = 0,
                  device: str | torch.device = "cpu") -> list[torch.Tensor]:
    """One reproducible random tensor per shape: standard normal for floats, integers in [-8, 8) otherwise."""
    gen = torch.Generator().manual_seed(int(seed))
    out = []
    for shape in shapes:
        dims = _shape(shape)
        if dtype.is_floating_point:
            t = torch.randn(dims, generator=gen, dtype=torch.float64).to(dtype)
        elif dtype == torch.bool:
            t = torch.randint(0, 2, dims, generator=gen).bool()
        else:
            lo = 0 if dtype == torch.uint8 else -8
            t = torch.randint(lo, 8, dims, generator=gen, dtype=torch.int64).to(dtype)
        out.append(t.to(device))
    return out


def _is_power_of_2(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def _is_prime(n: int) -> bool:
    return n > 1 and all(n % p for p in range(2, math.isqrt(n) + 1))


def odd_sizes(rng: np.random.Generator | int, lo: int, hi: int, n: int) -> list[int]:
    """`n` distinct sizes in [lo, hi] that blocks do not divide evenly: 1 (when lo <= 1), a prime, and random
    non-powers of two (fewer when the range holds fewer)."""
    for label, v in (("lo", lo), ("hi", hi), ("n", n)):
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise ValueError(f"odd_sizes: {label} must be an int >= 1, got {v!r}")
    if lo > hi:
        raise ValueError(f"odd_sizes: lo ({lo}) must be <= hi ({hi})")
    gen = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(int(rng))
    sizes: list[int] = [1] if lo <= 1 else []
    primes = [p for p in range(max(lo, 2), min(hi, lo + 10_000) + 1) if _is_prime(p)]
    if primes and len(sizes) < n:
        sizes.append(int(gen.choice(primes[-8:])))   # a large prime of the range
    pool = np.array([v for v in range(lo, min(hi, lo + 100_000) + 1) if not _is_power_of_2(v) and v not in sizes])
    need = min(n - len(sizes), pool.size)
    if need > 0:
        sizes += [int(v) for v in gen.choice(pool, size=need, replace=False)]
    return sizes[:n]


def _as_tensor(value: Any, label: str) -> torch.Tensor:
    if isinstance(value, torch.Tensor):
        return value
    if isinstance(value, np.ndarray):
        return torch.from_numpy(value)
    raise HarnessError(f"{label} must be a torch.Tensor or numpy array, got {type(value).__name__}")


def written_mask(log: Any, tensor: str, view: torch.Tensor) -> torch.Tensor:
    """True for each element of `view` (a view starting where the traced argument `tensor` starts) that the traced
    kernel stored to: what tells an element never written from one written with NaN."""
    offsets = torch.zeros(view.shape, dtype=torch.long)
    for dim, (size, stride) in enumerate(zip(view.shape, view.stride())):
        shape = [1] * view.dim()
        shape[dim] = size
        offsets = offsets + (torch.arange(size) * stride).view(shape)
    stored = np.unique(np.concatenate([a.offsets for a in log.accesses if a.tensor == log.resolve(tensor)
                                       and a.kind in ("store", "atomic")] or [np.zeros(0, dtype=np.int64)]))
    return torch.from_numpy(np.isin(offsets.numpy(), stored))


def check_against_reference(name: str, got: torch.Tensor, want64: torch.Tensor, dtype: torch.dtype,
                            rtol: float | None = None, atol: float | None = None,
                            written: torch.Tensor | None = None) -> None:
    """Check a kernel's output against a float64 reference: type, shape, dtype, elements never written (poison
    left in them, named by index), then values within `tolerance(dtype)` (or rtol/atol). With `written` (a bool
    mask, `written_mask`), a NaN the kernel stored is told apart from an element it never wrote. Raises
    GradingError."""
    want = _as_tensor(want64, "the reference").detach().cpu()
    d_rtol, d_atol = tolerance(dtype)
    rtol = d_rtol if rtol is None else rtol
    atol = d_atol if atol is None else atol
    if not isinstance(got, torch.Tensor):
        raise GradingError(f"{name}: expected a torch.Tensor of shape {tuple(want.shape)}, got {type(got).__name__}")
    if tuple(got.shape) != tuple(want.shape):
        raise GradingError(f"{name}: wrong shape: expected {tuple(want.shape)}, got {tuple(got.shape)}")
    if got.dtype != dtype:
        raise GradingError(f"{name}: wrong dtype: expected {dtype}, got {got.dtype}")
    got_c = got.detach().cpu()
    if got.dtype.is_floating_point or got.dtype.is_complex:
        unwritten = torch.isnan(got_c) & ~torch.isnan(want.to(torch.float64) if not want.is_complex() else want)
    elif got.dtype == torch.bool:
        unwritten = torch.zeros(got.shape, dtype=torch.bool)
    else:
        poison = torch.iinfo(got.dtype).min
        unwritten = (got_c == poison) & (want != poison)
    if written is not None and (unwritten & written).any():
        idx = torch.nonzero(unwritten & written).tolist()
        listed = ", ".join(fmt_index(tuple(i)) for i in idx[:MAX_LISTED]) + (", ..." if len(idx) > MAX_LISTED else "")
        raise GradingError(f"{name}: your kernel stored NaN into {len(idx)} of {got.numel()} elements, at {listed}, "
                           "where the result is a number: look for exp overflowing, 0 / 0, -inf - -inf, or a load "
                           "whose masked-off lanes have no `other`")
    if unwritten.any():
        idx = torch.nonzero(unwritten).tolist()
        listed = ", ".join(fmt_index(tuple(i)) for i in idx[:MAX_LISTED]) + (", ..." if len(idx) > MAX_LISTED else "")
        raise GradingError(f"{name}: {len(idx)} of {got.numel()} elements were never written (they still hold the "
                           f"poison the output was filled with) at {listed}: does your grid cover every block, and "
                           "does the store's mask let every valid element through?")
    exact = not (got.dtype.is_floating_point or got.dtype.is_complex)
    target = torch.int64 if exact else (torch.complex128 if got.dtype.is_complex else torch.float64)
    check_array(got_c.to(target).numpy(), want.to(target).numpy(), rtol=float(rtol), atol=float(atol), name=name)


def _times(k: float) -> str:
    if abs(k - round(k)) < 1e-9:
        k = int(round(k))
        return {1: "once", 2: "twice"}.get(k, f"{k} times")
    return f"{k:.2f} times"


def describe_traffic(log: AccessLog, minimum: dict[str, int]) -> str:
    """One sentence per tensor of `minimum` comparing what the kernel moved with what it must at least move, e.g.
    "your softmax_kernel reads x_ptr 3 times over (3 x 1000 elements); one pass reads it once (1000)"."""
    lines = []
    for name, need in minimum.items():
        try:
            name = log.resolve(name)
        except KeyError:
            raise HarnessError(f"describe_traffic: {name!r} is not a tensor of {log.kernel_name} "
                               f"(its tensors: {sorted(log.tensors)})") from None
        need = int(need)
        reads, writes = log.reads(name), log.writes(name)
        verb, moved = ("reads", reads) if reads or not writes else ("writes", writes)
        if need <= 0:
            lines.append(f"your {log.kernel_name} {verb} {name} {moved} elements (it need not touch it)")
            continue
        k = moved / need
        if moved == need:
            lines.append(f"your {log.kernel_name} {verb} {name} once ({need} elements), the minimum")
        elif moved < need:
            lines.append(f"your {log.kernel_name} {verb} only {moved} of the {need} elements of {name} it must "
                         f"{verb[:-1]}")
        else:
            lines.append(f"your {log.kernel_name} {verb} {name} {_times(k)} over ({moved} elements = {k:.3g} x "
                         f"{need}); one pass {verb} it once ({need})")
    return "\n".join(lines)


def check_traffic(log: AccessLog, minimum: dict[str, int], slack: float = 1.0) -> None:
    """GradingError (with `describe_traffic`'s text) when a tensor is read or written more than slack x its
    minimum, or less than the minimum (an element skipped)."""
    over = []
    for name, need in minimum.items():
        reads, writes = log.reads(name), log.writes(name)
        moved = reads if reads or not writes else writes
        if moved < int(need) or moved > slack * int(need):
            over.append(name)
    if over:
        raise GradingError(f"memory traffic of {log.kernel_name} is off for {', '.join(over)}:\n"
                           + describe_traffic(log, {n: minimum[n] for n in over}))


def check_kernel(launch: Callable[..., Any], reference: Callable[..., torch.Tensor],
                 make_inputs: Callable[[int], Sequence[torch.Tensor]], sizes: Iterable[int],
                 dtype: torch.dtype, name: str) -> list[Any]:
    """For each size: inputs = make_inputs(size); check launch(*inputs) against reference(float64 copies).

    `launch` returns the output tensor (or a tuple whose first item is it, e.g. (out, AccessLog)); the second items
    are collected and returned (AccessLogs when launch traces)."""
    logs = []
    for size in sizes:
        inputs = list(make_inputs(size))
        want = reference(*[t.to(torch.float64) if t.is_floating_point() else t for t in inputs])
        result = launch(*inputs)
        got, extra = (result[0], result[1]) if isinstance(result, tuple) else (result, None)
        check_against_reference(f"{name} (size {size})", got, want, dtype)
        logs.append(extra)
    return logs
