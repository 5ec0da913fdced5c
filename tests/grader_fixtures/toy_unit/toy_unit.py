# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # A two-exercise unit the grader's own tests use (fast: well under a second to run)

# %%
import numpy as np
from infopt.grading import check_array, check_equal

# %% [markdown]
# ## Exercise 1: `scale(x, k)` returns `k * x` as a float64 array.

# %% solution=true grade_id="scale"
def scale(x, k):
    """Return k * x as a float64 numpy array."""
    ### BEGIN SOLUTION
    return np.asarray(x, dtype=np.float64) * k
    ### END SOLUTION

# %% grade_id="scale_test" points=2
check_array(scale(np.ones(3), 2.0), np.full(3, 2.0), name="scale(ones(3), 2)")
### BEGIN HIDDEN TESTS
_rng = np.random.default_rng()
_x = _rng.normal(size=(4, 5))
check_array(scale(_x, -3.0), _x * -3.0, name="scale(random 4x5, -3)")
from infopt.grading import check_close  # bound only once the calls above returned: a stub never reaches it
check_close(float(scale(np.arange(3.0), 0.5).sum()), 1.5, name="sum of scale(arange(3), 0.5)")
### END HIDDEN TESTS

# %% [markdown]
# ## Exercise 2: `order(deps)` returns the names in an order where each comes after its dependencies.

# %% solution=true grade_id="order"
def order(deps):
    """Topological order of a dict name -> list of dependencies (sorted names break ties)."""
    ### BEGIN SOLUTION
    done, out = set(), []
    def visit(n):
        if n in done:
            return
        done.add(n)
        for d in sorted(deps.get(n, [])):
            visit(d)
        out.append(n)
    for n in sorted(deps):
        visit(n)
    return out
    ### END SOLUTION

# %% grade_id="order_test" points=3
import sys
print("a warning on stderr must not cost points", file=sys.stderr)
check_equal(order({"b": ["a"], "a": []}), ["a", "b"], name="order({b: [a], a: []})")
### BEGIN HIDDEN TESTS
_rng = np.random.default_rng()
_names = [f"n{i}" for i in range(8)][::-1]  # deps point to higher numbers: name order is not an answer
_deps = {n: sorted({str(d) for d in _rng.choice(_names[:i], size=min(i, 2), replace=False)}) if i else []
         for i, n in enumerate(_names)}
_got = order(_deps)
check_equal(sorted(_got), sorted(_names), name="the names in order(deps)")
check_true = all(_got.index(d) < _got.index(n) for n in _names for d in _deps[n])
assert check_true, "a name comes before one of its dependencies"
### END HIDDEN TESTS
