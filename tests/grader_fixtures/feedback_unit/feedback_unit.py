# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# The grader's feedback unit: test cells whose checks sit inside try/finally, visible and hidden (issue 14: the
# message must name the failing check's own line, never the cleanup line, and say when the test was hidden).

# %%
from infopt.grading import case, check_equal, grading_rng

# %% solution=true grade_id="f"
def f(x: int) -> int:
    ### BEGIN SOLUTION
    return x + 1
    ### END SOLUTION

# %% grade_id="f_test" points=2
_saved = 1
try:
    check_equal(f(1), 2, name="f(1)")
finally:
    _saved = 2

# %% solution=true grade_id="g"
def g(x: int) -> int:
    ### BEGIN SOLUTION
    return x * 2
    ### END SOLUTION

# %% grade_id="g_test" points=2
check_equal(g(0), 0)
### BEGIN HIDDEN TESTS
_saved = 1
try:
    _x = int(grading_rng().integers(3, 9))
    with case("g of a drawn x", show=_x):
        check_equal(g(_x), 2 * _x, name=f"g({_x})")
finally:
    _saved = 2
### END HIDDEN TESTS
