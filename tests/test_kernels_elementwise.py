"""infopt.kernels.elementwise: scaled_add_kernel (exercise 1's reference) in Triton's interpreter against a float64
reference on odd sizes and dtypes, its exact signature, and the shared input checks' error messages."""
from __future__ import annotations

import inspect

import pytest

torch = pytest.importorskip("torch")

from infopt.kernels.backend import interpreted  # noqa: E402
from infopt.kernels.elementwise import (  # noqa: E402
    check_block, check_matrix, check_same_device, min_traffic, scaled_add, scaled_add_kernel, scaled_add_reference,
    vector_add,
)

torch.set_num_threads(1)


def assert_close(got: torch.Tensor, want: torch.Tensor, tol: float) -> None:
    assert got.shape == want.shape, f"shape {tuple(got.shape)}, expected {tuple(want.shape)}"
    err = (got.double() - want.double()).abs().max().item() if got.numel() else 0.0
    assert err <= tol * (1 + want.abs().max().item()), f"max abs error {err:.3g}"


def test_signature_is_the_exercise_one() -> None:
    params = list(inspect.signature(scaled_add_kernel.fn).parameters)
    assert params == ["x_ptr", "y_ptr", "out_ptr", "alpha", "n", "BLOCK"]


@pytest.mark.parametrize("n", [1, 127, 128, 1000])
def test_scaled_add_matches_reference_on_odd_sizes(n: int) -> None:
    g = torch.Generator().manual_seed(n)
    x, y = torch.randn(n, generator=g), torch.randn(n, generator=g)
    assert_close(scaled_add(x, y, alpha=-2.5), scaled_add_reference(x, y, -2.5), 1e-6)


@pytest.mark.parametrize("dtype,tol", [(torch.float16, 2e-3), (torch.bfloat16, 1e-2)])
def test_half_dtypes_keep_their_dtype(dtype: torch.dtype, tol: float) -> None:
    x, y = torch.randn(300).to(dtype), torch.randn(300).to(dtype)
    out = scaled_add(x, y, 0.5)
    assert out.dtype == dtype
    assert_close(out, scaled_add_reference(x, y, 0.5), tol)


def test_vector_add_and_shape_kept() -> None:
    x, y = torch.randn(3, 7), torch.randn(3, 7)
    out = vector_add(x, y)
    assert out.shape == (3, 7)
    assert_close(out, x.double() + y.double(), 1e-6)


def test_direct_launch_writes_every_element() -> None:
    x, y = torch.randn(200), torch.randn(200)
    out = torch.full((200,), float("nan"))
    interpreted(scaled_add_kernel)[(4,)](x, y, out, 3.0, 200, BLOCK=64)   # 4 x 64 covers 200, masked tail
    assert not out.isnan().any()
    assert_close(out, scaled_add_reference(x, y, 3.0), 1e-6)


def test_empty_input_returns_empty() -> None:
    assert scaled_add(torch.empty(0), torch.empty(0)).numel() == 0


def test_bad_inputs_raise_clear_errors() -> None:
    x = torch.randn(10)
    with pytest.raises(ValueError, match="shape"):
        scaled_add(x, torch.randn(11))
    with pytest.raises(TypeError, match="dtype"):
        scaled_add(x.int(), x.int())
    with pytest.raises(TypeError, match="float64"):
        scaled_add(x.double(), x.double())
    with pytest.raises(TypeError, match="match"):
        scaled_add(x, x.half())
    with pytest.raises(ValueError, match="power of two"):
        scaled_add(x, x, block=100)
    with pytest.raises(TypeError, match="torch.Tensor"):
        scaled_add([1.0], x)
    with pytest.raises(TypeError, match="alpha"):
        scaled_add(x, x, alpha=torch.tensor(2.0))


def test_shared_checks() -> None:
    with pytest.raises(ValueError, match="2-D"):
        check_matrix(torch.zeros(3), "a")
    with pytest.raises(ValueError, match="contiguous"):
        check_matrix(torch.zeros(4, 3).t(), "a", inner_contiguous=True)
    assert check_block(32, "b") == 32
    with pytest.raises(ValueError, match=">= 16"):
        check_block(8, "b", 16)
    with pytest.raises(ValueError, match="positive int"):
        check_block(True, "b")
    assert check_same_device(a=torch.zeros(1), b=None) == torch.device("cpu")
    with pytest.raises(ValueError, match="different devices"):
        check_same_device(a=torch.zeros(1), b=torch.zeros(1, device="meta"))


def test_min_traffic() -> None:
    assert min_traffic(100) == {"x_ptr": 100, "y_ptr": 100, "out_ptr": 100}
    with pytest.raises(ValueError):
        min_traffic(0)
