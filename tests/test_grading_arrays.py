"""Tests for infopt.grading.arrays: check_array and check_close on fresh random inputs."""
import numpy as np
import pytest

from infopt.grading import GradingError, HarnessError, check_array, check_close

rng = np.random.default_rng()


def _rand(shape=(5, 7), dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


def test_equal_arrays_pass_and_within_tolerance_pass():
    e = _rand()
    check_array(e.copy(), e)
    check_array(e + np.float32(1e-7), e, atol=1e-6)


@pytest.mark.parametrize("shape", [(), (9,), (4, 6), (2, 3, 4)])
def test_one_wrong_value_is_found_and_located(shape):
    e = _rand(shape)
    got = e.copy()
    idx = tuple(int(rng.integers(0, s)) for s in shape)
    got[idx] += 1.0
    with pytest.raises(GradingError) as info:
        check_array(got, e, name="y")
    msg = str(info.value)
    assert "y: values differ at 1 of" in msg
    if shape:
        assert "[" + ", ".join(map(str, idx)) + "]" in msg


def test_order_of_checks_type_shape_dtype_value():
    e = _rand((3, 4))
    with pytest.raises(GradingError, match="expected a numpy.ndarray"):
        check_array(e.tolist(), e)
    with pytest.raises(GradingError, match="wrong shape"):
        check_array(e.T.copy(), e)
    with pytest.raises(GradingError, match="wrong dtype: expected float32, got float64"):
        check_array(e.astype(np.float64), e)
    check_array(e.astype(np.float64), e, check_dtype=False)


def test_subclass_and_rigged_eq_do_not_pass():
    class Rigged(np.ndarray):
        def __eq__(self, other):  # always "equal"
            return True

    e = _rand((4,))
    with pytest.raises(GradingError, match="Rigged"):
        check_array(np.zeros(4, np.float32).view(Rigged), e)

    class Fake:
        shape, dtype = e.shape, e.dtype

        def __eq__(self, other):
            return True

        def __array__(self, dtype=None, copy=None):
            return e

    with pytest.raises(GradingError, match="Fake"):
        check_array(Fake(), e)


def test_nan_matches_nan_but_not_a_number():
    e = _rand((6,))
    e[2] = np.nan
    check_array(e.copy(), e)
    got = e.copy()
    got[2] = 0.0
    with pytest.raises(GradingError, match=r"\[2\]"):
        check_array(got, e)


def test_integer_arrays_compare_exactly_and_draw_a_mask():
    e = rng.integers(-1000, 1000, size=(3, 5)).astype(np.int64)
    got = e.copy()
    got[1, 4] += 1
    with pytest.raises(GradingError) as info:
        check_array(got, e)
    assert "....x" in str(info.value)


def test_declared_kind_is_converted():
    class Box(list):
        pass

    e = np.arange(4, dtype=np.int64)
    check_array(e.tolist(), e, kind=list)
    with pytest.raises(GradingError):
        check_array(Box(e.tolist()), e, kind=list)


def test_harness_errors_are_not_grading_errors():
    e = _rand((3,))
    with pytest.raises(HarnessError):
        check_array(e, e.tolist())
    with pytest.raises(HarnessError):
        check_array(e, e, rtol=-1)
    with pytest.raises(HarnessError):
        check_array(e, np.array(["a"]))
    assert not issubclass(HarnessError, AssertionError)
    assert issubclass(GradingError, AssertionError)


def test_check_close_scalars():
    x = float(rng.standard_normal())
    check_close(x + 1e-9, x)
    check_close(np.float32(x), x, rtol=1e-6)
    with pytest.raises(GradingError, match="expected a number"):
        check_close("1.0", x)
    with pytest.raises(GradingError, match="abs error"):
        check_close(x + 1.0, x)
    with pytest.raises(GradingError):
        check_close(True, 1.0)


def test_declared_kind_that_cannot_convert_is_a_grading_error():
    class Weird:
        def __array__(self, dtype=None, copy=None):
            raise RuntimeError("needs .detach() first")

    with pytest.raises(GradingError, match="could not read your Weird"):
        check_array(Weird(), np.zeros(2), kind=Weird)
