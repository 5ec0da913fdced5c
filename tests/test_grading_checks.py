"""Tests for infopt.grading.checks: check_true and check_raises."""
import numpy as np
import pytest

from infopt.grading import GradingError, HarnessError, check_raises, check_true, is_harness_error

rng = np.random.default_rng()


def test_check_true():
    x = rng.standard_normal(3)
    check_true(bool(np.all(x == x)), "same")
    check_true(np.all(x == x), "numpy bool is fine")
    with pytest.raises(GradingError, match="must be positive"):
        check_true(False, "must be positive")

    class Truthy:
        def __bool__(self):
            return True

    with pytest.raises(GradingError, match="instead of True/False"):
        check_true(Truthy(), "rigged")
    with pytest.raises(HarnessError):
        check_true(True, "")


def _raises_value(x):
    raise ValueError(f"bad shape {x}")


def test_check_raises():
    n = int(rng.integers(0, 100))
    err = check_raises(ValueError, _raises_value, n, match=str(n))
    assert isinstance(err, ValueError)
    with pytest.raises(GradingError, match="does not mention"):
        check_raises(ValueError, _raises_value, n, match="node")
    with pytest.raises(GradingError, match="returned normally"):
        check_raises(ValueError, abs, n)
    with pytest.raises(GradingError, match="raised ValueError"):
        check_raises(TypeError, _raises_value, n)
    check_raises((TypeError, ValueError), _raises_value, n)
    with pytest.raises(HarnessError):
        check_raises("ValueError", _raises_value, n)


def test_is_harness_error():
    assert is_harness_error("HarnessError")
    assert not is_harness_error("GradingError")
    assert "not in your code" in str(HarnessError("x"))
