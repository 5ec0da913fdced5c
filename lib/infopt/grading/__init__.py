"""Helpers that test cells call: comparisons that check type, shape, dtype and value, with messages that say what is wrong.

Depends on numpy only, so the grader can trust it. A wrong answer raises GradingError (an AssertionError);
a mistake in the checking code itself raises HarnessError, so the two are never confused.
"""
from .arrays import check_array, check_close
from .cases import SEED_ENV, call_student, case, grading_rng, grading_seed
from .checks import check_raises, check_true
from .errors import GradingError, HarnessError, is_harness_error
from .forbid import ForbiddenCall, forbid, forbidding
from .structural import check_equal

__all__ = ["ForbiddenCall", "GradingError", "HarnessError", "SEED_ENV", "call_student", "case", "check_array",
           "check_close", "check_equal", "check_raises", "check_true", "forbid", "forbidding", "grading_rng",
           "grading_seed", "is_harness_error"]
