"""Tests for infopt.grading.structural: check_equal with exact types all the way down."""
import collections
import dataclasses
import enum

import numpy as np
import pytest

from infopt.grading import GradingError, HarnessError, check_equal

rng = np.random.default_rng()


def _random_structure():
    ints = rng.integers(0, 100, size=6).tolist()
    return {"order": ints, "pair": (ints[0], "n%d" % ints[1]), "seen": set(ints[:3]),
            "x": float(rng.standard_normal()), "arr": rng.standard_normal(4)}


def test_equal_structures_pass():
    s = _random_structure()
    check_equal({k: (v.copy() if isinstance(v, (set, np.ndarray)) else v) for k, v in s.items()}, s)


def test_first_difference_is_named_by_path():
    s = _random_structure()
    got = dict(s, order=list(s["order"]))
    got["order"][3] += 1
    with pytest.raises(GradingError, match=r"result\['order'\]\[3\]: expected"):
        check_equal(got, s)


def test_exact_types():
    with pytest.raises(GradingError, match="convert it with int"):
        check_equal(np.int64(3), 3)
    with pytest.raises(GradingError, match="type bool"):
        check_equal(1, True)
    with pytest.raises(GradingError, match="convert it with list"):
        check_equal((1, 2), [1, 2])


def test_rigged_eq_never_passes():
    class AlwaysEqual(int):
        def __eq__(self, other):
            return True
        __hash__ = int.__hash__

    class EqStr(str):
        def __eq__(self, other):
            return True
        __hash__ = str.__hash__

    with pytest.raises(GradingError):
        check_equal(AlwaysEqual(1), 2)
    with pytest.raises(GradingError):
        check_equal([EqStr("a")], ["b"])
    with pytest.raises(GradingError, match="key/element"):
        check_equal({EqStr("a"): 1}, {"a": 1})
    with pytest.raises(GradingError):
        check_equal({AlwaysEqual(1)}, {1})


def test_sets_and_dicts_report_missing_and_extra():
    with pytest.raises(GradingError, match=r"missing \[3\]; unexpected \[4\]"):
        check_equal({1, 2, 4}, {1, 2, 3})
    with pytest.raises(GradingError, match=r"missing keys \['b'\]"):
        check_equal({"a": 1}, {"a": 1, "b": 2})


def test_float_tolerance_and_nan():
    x = float(rng.standard_normal())
    check_equal([x + 1e-12], [x], atol=1e-9)
    check_equal(float("nan"), float("nan"))
    with pytest.raises(GradingError):
        check_equal([x + 1e-3], [x], atol=1e-9)


def test_dataclasses_namedtuples_enums():
    @dataclasses.dataclass(frozen=True)
    class T:
        shape: tuple
        dtype: str

    P = collections.namedtuple("P", "a b")

    class Color(enum.Enum):
        RED = 1
        BLUE = 2

    n = int(rng.integers(1, 9))
    check_equal(T((n, 3), "f32"), T((n, 3), "f32"))
    with pytest.raises(GradingError, match=r"result.shape\[0\]"):
        check_equal(T((n + 1, 3), "f32"), T((n, 3), "f32"))
    check_equal(P(n, "x"), P(n, "x"))
    with pytest.raises(GradingError):
        check_equal((n, "x"), P(n, "x"))
    with pytest.raises(GradingError):
        check_equal(Color.RED, Color.BLUE)


def test_unknown_expected_type_is_a_harness_error():
    class Thing:
        pass

    t = Thing()
    with pytest.raises(HarnessError):
        check_equal(t, t)


def test_hint_is_appended():
    with pytest.raises(GradingError, match="hint: sort"):
        check_equal([2, 1], [1, 2], hint="sort the nodes")
