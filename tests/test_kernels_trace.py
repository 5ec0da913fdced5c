"""infopt.kernels.trace: loads/stores of interpreted launches counted per tensor; out-of-bounds ones stopped first."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from infopt.grading.errors import GradingError
from infopt.kernels.backend import tl, triton
from infopt.kernels.trace import AccessLog, OutOfBounds, run_traced


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


@triton.jit
def copy_unmasked_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs))


@triton.jit
def store_unmasked_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n, other=0.0))


@triton.jit
def copy_off_by_one_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs <= n  # one lane too many
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


@triton.jit
def shifted_load_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs - 1, mask=mask), mask=mask)


@triton.jit
def two_pass_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """Reads its row twice: once for the max, once for the output (like an online softmax's second sweep)."""
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    m = tl.max(tl.load(x_ptr + row * n + offs, mask=mask, other=-float("inf")), axis=0)
    x = tl.load(x_ptr + row * n + offs, mask=mask)
    tl.store(out_ptr + row * n + offs, x - m, mask=mask)


@triton.jit
def fill_2d_kernel(out_ptr, rows, cols, stride_r, stride_c, BLOCK: tl.constexpr):
    r = tl.program_id(0)
    c = tl.arange(0, BLOCK)
    tl.store(out_ptr + r * stride_r + c * stride_c, (r * 100 + c).to(tl.float32), mask=c < cols)


@triton.jit
def grid_2d_kernel(out_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0) * tl.num_programs(1) + tl.program_id(1)
    tl.store(out_ptr + pid * BLOCK + tl.arange(0, BLOCK), tl.zeros((BLOCK,), dtype=tl.float32) + pid)


@triton.jit
def atomic_sum_kernel(x_ptr, total_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.atomic_add(total_ptr, tl.sum(tl.load(x_ptr + offs, mask=offs < n, other=0.0), axis=0))


@triton.jit
def block_pointer_copy_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    start = tl.program_id(0) * BLOCK
    src = tl.make_block_ptr(x_ptr, shape=(n,), strides=(1,), offsets=(start,), block_shape=(BLOCK,), order=(0,))
    dst = tl.make_block_ptr(out_ptr, shape=(n,), strides=(1,), offsets=(start,), block_shape=(BLOCK,), order=(0,))
    tl.store(dst, tl.load(src, boundary_check=(0,)), boundary_check=(0,))


@triton.jit
def descriptor_copy_kernel(x_desc, out_ptr, n, BLOCK: tl.constexpr):
    start = tl.program_id(0) * BLOCK
    out_desc = tl.make_tensor_descriptor(out_ptr, shape=[n], strides=[1], block_shape=[BLOCK])
    out_desc.store([start], x_desc.load([start]))


@triton.jit
def lock_kernel(lock_ptr):
    tl.atomic_cas(lock_ptr, 0, 1)


@triton.jit
def load_block(ptr, offs):
    return tl.load(ptr + offs)


@triton.jit
def helper_unmasked_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, load_block(x_ptr, offs), mask=offs < n)


@triton.jit
def broken_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs) + undefined_name, mask=offs < n)  # noqa: F821


def _builder_patched() -> list[str]:
    from triton.runtime import interpreter
    return [k for k in vars(interpreter.interpreter_builder) if k.startswith("create_")]


def test_masked_add_counts_each_element_once_and_computes_the_sum():
    n, block = 100, 32
    x, y = torch.randn(n, dtype=torch.float64), torch.randn(n, dtype=torch.float64)
    out = torch.full((n,), float("nan"), dtype=torch.float64)
    log = run_traced(add_kernel, (triton.cdiv(n, block),), x, y, out, n, BLOCK=block)
    assert isinstance(log, AccessLog)
    torch.testing.assert_close(out, x + y, rtol=0, atol=0)
    assert (log.reads("x_ptr"), log.reads("y_ptr"), log.reads("out_ptr")) == (n, n, 0)
    assert (log.writes("out_ptr"), log.writes("x_ptr")) == (n, 0)
    assert log.reads("x") == n and log.resolve("y") == "y_ptr"  # a name without its _ptr finds the parameter
    assert log.distinct_reads("x_ptr") == n and log.passes("x_ptr") == 1.0 and log.passes("y_ptr", 50) == 2.0
    assert log.never_written("out_ptr").size == 0 and log.never_written("out_ptr", n + 3).tolist() == [n, n + 1, n + 2]
    assert log.programs == 4 and log.grid == (4, 1, 1)
    loads = [a for a in log.accesses if a.kind == "load" and a.tensor == "x_ptr"]
    assert [a.program for a in loads] == [(p, 0, 0) for p in range(4)]
    assert all(a.masked and a.lanes == block for a in loads)
    assert loads[-1].offsets.tolist() == list(range(96, 100))  # the masked-off lanes are not counted
    assert log.reads_per_program("x_ptr") == {(0, 0, 0): 32, (1, 0, 0): 32, (2, 0, 0): 32, (3, 0, 0): 4}
    table = log.table()
    assert "add_kernel" in table and all(name in table for name in ("x_ptr", "y_ptr", "out_ptr"))
    assert _builder_patched() == []


def test_unmasked_load_past_the_end_raises_before_reading():
    n, block = 100, 32
    x = torch.arange(n, dtype=torch.float32)
    out = torch.full((n,), float("nan"))
    with pytest.raises(OutOfBounds, match=r"tl\.load of `x_ptr` in program \(3, 0, 0\) reads element offsets "
                                          r"\[100, 101, 102.*x_ptr has 100 elements \(valid offsets 0\.\.99\); "
                                          r"this load has no mask: pass mask=offsets < n"):
        run_traced(copy_unmasked_kernel, (4,), x, out, n, BLOCK=block)
    assert torch.equal(out[:96], x[:96])               # programs 0..2 ran
    assert torch.isnan(out[96:]).all()                 # program 3 stopped at its load, before its store
    assert _builder_patched() == []
    assert issubclass(OutOfBounds, GradingError)


def test_unmasked_store_past_the_end_leaves_the_neighbouring_memory_alone():
    n, block = 100, 32
    buffer = torch.full((n + 64,), -7.0)
    out = buffer[:n]                                   # memory right after `out` belongs to the buffer
    with pytest.raises(OutOfBounds, match=r"tl\.store of `out_ptr` in program \(3, 0, 0\) writes element offsets "
                                          r"\[100, 101.*this store has no mask"):
        run_traced(store_unmasked_kernel, (4,), torch.ones(n), out, n, BLOCK=block)
    assert (buffer[n:] == -7.0).all() and (buffer[96:n] == -7.0).all() and (buffer[:96] == 1.0).all()


def test_a_mask_that_lets_one_lane_through_raises_naming_that_offset():
    n = 100
    with pytest.raises(OutOfBounds, match=r"offsets \[100\] \(1 lane out of bounds\).*its mask lets lanes past "
                                          r"the end through"):
        run_traced(copy_off_by_one_kernel, (4,), torch.ones(n), torch.empty(n), n, BLOCK=32)


def test_a_negative_offset_is_out_of_bounds_too():
    with pytest.raises(OutOfBounds, match=r"program \(0, 0, 0\) reads element offsets \[-1\] \(1 lane out of "
                                          r"bounds\).*lets lanes before the start through.*mask=\(offsets >= 0\)"):
        run_traced(shifted_load_kernel, (1,), torch.ones(8), torch.empty(8), 8, BLOCK=8)


def test_lanes_running_into_an_adjacent_argument_are_caught():
    buffer = torch.arange(200, dtype=torch.float32)
    x, y = buffer[:100], buffer[100:]                  # y starts exactly where x ends
    with pytest.raises(OutOfBounds, match=r"`x_ptr` in program \(3, 0, 0\) reads element offsets \[100, 101"):
        run_traced(copy_unmasked_kernel, (4,), x, y, 100, BLOCK=32)


def test_a_kernel_that_reads_x_twice_counts_two_passes():
    rows, cols = 3, 20
    x = torch.randn(rows, cols)
    out = torch.empty_like(x)
    log = run_traced(two_pass_kernel, (rows,), x, out, cols, BLOCK=32)
    torch.testing.assert_close(out, x - x.max(dim=1, keepdim=True).values)
    assert log.reads("x_ptr") == 2 * rows * cols and log.distinct_reads("x_ptr") == rows * cols
    assert log.passes("x_ptr") == 2.0 and log.writes("out_ptr") == rows * cols
    assert log.reads_per_program("x_ptr") == {(r, 0, 0): 2 * cols for r in range(rows)}


def test_stores_to_a_strided_view_map_to_its_own_offsets():
    base = torch.zeros(4, 8)
    view = base[:, ::2]                                # shape (4, 4), strides (8, 2)
    log = run_traced(fill_2d_kernel, (4,), view, 4, 4, view.stride(0), view.stride(1), BLOCK=4)
    expected = torch.arange(4).view(4, 1) * 100.0 + torch.arange(4).view(1, 4)
    assert torch.equal(view, expected) and (base[:, 1::2] == 0).all()
    offsets = np.sort(np.concatenate([a.offsets for a in log.accesses]))
    assert offsets.tolist() == sorted(r * 8 + 2 * c for r in range(4) for c in range(4))
    assert log.writes("out_ptr") == 16 and log.never_written("out_ptr").size == 0
    assert log.tensors["out_ptr"].numel == 16


def test_a_store_between_the_elements_of_a_strided_view_is_out_of_bounds():
    base = torch.zeros(4, 8)
    view = base[:, ::2]
    with pytest.raises(OutOfBounds, match=r"writes element offsets \[1, 3\].*strided view of shape \(4, 4\) "
                                          r"with strides \(8, 2\)"):
        run_traced(fill_2d_kernel, (4,), view, 4, 4, view.stride(0), 1, BLOCK=4)  # stride 1: wrong
    assert (base[0, 1::2] == 0).all()


def test_interleaved_views_of_one_buffer_are_told_apart():
    qkv = torch.zeros(4, 3, 4)                         # like a fused q/k/v projection: [rows, 3, D]
    q, k = qkv[:, 0], qkv[:, 1]                        # q's span covers k's elements, but they are not q's
    log = run_traced(fill_2d_kernel, (4,), k, 4, 4, k.stride(0), k.stride(1), BLOCK=4)
    assert log.writes("out_ptr") == 16 and (qkv[:, 0] == 0).all() and (qkv[:, 2] == 0).all()
    overlapping = torch.arange(150.0)
    x, y = overlapping[:100], overlapping[50:]         # y overlaps x's second half
    log = run_traced(add_kernel, (4,), x, y, torch.empty(100), 100, BLOCK=32)
    # No error; which of two overlapping arguments a shared element is credited to is the first that holds the
    # whole access (the interpreter's pointers carry no record of the argument they came from).
    assert log.reads("x_ptr") + log.reads("y_ptr") == 200 and log.reads("x_ptr") >= 100
    del q


def test_tensors_passed_as_keywords_are_named_and_traced():
    n = 40
    x, y, out = torch.randn(n), torch.randn(n), torch.empty(n)
    log = run_traced(add_kernel, (2,), x, y_ptr=y, out_ptr=out, n=n, BLOCK=32)
    torch.testing.assert_close(out, x + y)
    assert (log.reads("x_ptr"), log.reads("y_ptr"), log.writes("out_ptr")) == (n, n, n)
    with pytest.raises(KeyError, match="its tensors are"):
        log.reads("z_ptr")


def test_two_dimensional_grid_records_program_ids():
    out = torch.empty(6 * 4)
    log = run_traced(grid_2d_kernel, (2, 3), out, BLOCK=4)
    assert log.programs == 6 and {a.program for a in log.accesses} == {(i, j, 0) for i in range(2) for j in range(3)}
    assert torch.equal(out, torch.arange(6.0).repeat_interleave(4))
    assert not log.accesses[0].masked


def test_atomics_are_checked_and_counted():
    x, total = torch.ones(50), torch.zeros(1)
    log = run_traced(atomic_sum_kernel, (4,), x, total, 50, BLOCK=16)
    assert total.item() == 50.0 and log.writes("total_ptr") == 4 and log.reads("x_ptr") == 50
    assert {a.kind for a in log.accesses if a.tensor == "total_ptr"} == {"atomic"}


def test_block_pointers_and_tensor_descriptors_are_traced():
    import warnings

    from triton.tools.tensor_descriptor import TensorDescriptor

    x = torch.randn(100)
    out = torch.zeros(100)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)   # tl.make_block_ptr is deprecated in Triton 3.8
        warnings.simplefilter("ignore", UserWarning)
        log = run_traced(block_pointer_copy_kernel, (4,), x, out, 100, BLOCK=32)
    assert torch.equal(out, x) and (log.reads("x_ptr"), log.writes("out_ptr")) == (100, 100)
    out.zero_()
    log = run_traced(descriptor_copy_kernel, (4,), TensorDescriptor.from_tensor(x, [32]), out, 100, BLOCK=32)
    assert torch.equal(out, x) and (log.reads("x_desc"), log.writes("out_ptr")) == (100, 100)
    lock = torch.zeros(1, dtype=torch.int32)
    log = run_traced(lock_kernel, (3,), lock)
    assert lock.item() == 1 and log.writes("lock_ptr") == 3 == log.reads("lock_ptr")


def test_out_of_bounds_inside_a_jit_helper_comes_out_as_itself():
    with pytest.raises(OutOfBounds, match=r"reads element offsets \[20, 21"):
        run_traced(helper_unmasked_kernel, (2,), torch.ones(20), torch.empty(20), 20, BLOCK=16)
    assert _builder_patched() == []


def test_kernel_errors_propagate_and_the_builder_is_restored():
    from triton.runtime.errors import InterpreterError

    with pytest.raises(InterpreterError, match="undefined_name"):
        run_traced(broken_kernel, (1,), torch.ones(4), 4, BLOCK=4)
    assert _builder_patched() == []
    log = run_traced(add_kernel, (1,), torch.ones(4), torch.ones(4), torch.empty(4), 4, BLOCK=4)  # still works
    assert log.writes("out_ptr") == 4


def test_non_cpu_tensors_are_refused():
    with pytest.raises(ValueError, match="needs CPU tensors.*`x_ptr` is on meta"):
        run_traced(add_kernel, (1,), torch.empty(4, device="meta"), torch.ones(4), torch.empty(4), 4, BLOCK=4)
    assert _builder_patched() == []


@triton.jit
def _sum_masked_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr, OTHER: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    if OTHER:
        x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    else:
        x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(out_ptr + tl.arange(0, 1), tl.sum(x, axis=0) + tl.zeros((1,), dtype=tl.float32))


def test_a_masked_load_without_other_gives_nan_in_its_masked_off_lanes():
    """On a GPU a masked-off lane without `other` holds whatever the register held: the traced run makes it NaN (the
    bare interpreter's 0 would hide a missing `other=0.0`); with `other` the lanes hold it."""
    x = torch.arange(10, dtype=torch.float32)
    for other, want in ((True, 45.0), (False, None)):
        out = torch.zeros(1)
        run_traced(_sum_masked_kernel, (1,), x, out, 10, BLOCK=16, OTHER=other)
        assert (out.item() == want) if want is not None else bool(torch.isnan(out).all()), (other, out)
    assert _builder_patched() == []
