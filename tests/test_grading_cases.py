"""The helpers hidden tests use to stay fair: seeds that are reported and reproducible, named cases that show the
failing input, plain messages for a function that mutates its input or raises, and forbidden names that trip."""
from __future__ import annotations

import numpy as np
import pytest

from infopt.grading import (ForbiddenCall, GradingError, HarnessError, call_student, case, check_equal, forbid,
                            forbidding, grading_rng, grading_seed)


def test_the_seed_comes_from_the_environment_and_reproduces_the_inputs(monkeypatch):
    monkeypatch.setenv("INFOPT_GRADING_SEED", "1234")
    assert grading_seed() == 1234
    a, b = grading_rng().standard_normal(5), grading_rng().standard_normal(5)
    assert np.array_equal(a, b)
    assert not np.array_equal(grading_rng(stream=1).standard_normal(5), a)
    monkeypatch.setenv("INFOPT_GRADING_SEED", "1235")
    assert not np.array_equal(grading_rng().standard_normal(5), a)
    monkeypatch.setenv("INFOPT_GRADING_SEED", "x")
    with pytest.raises(HarnessError, match="not an integer"):
        grading_seed()


def test_a_failing_case_names_itself_the_seed_and_the_input(monkeypatch):
    monkeypatch.setenv("INFOPT_GRADING_SEED", "77")
    with pytest.raises(GradingError) as info:
        with case("random DAG #3", show=lambda: "x = Relu(y)"):
            check_equal(1, 2, name="nodes kept")
    text = str(info.value)
    assert "hidden test 'random DAG #3' failed (grading seed 77)" in text
    assert "x = Relu(y)" in text and "nodes kept: expected 2, got 1" in text
    with pytest.raises(GradingError) as info:
        with case("visible", hidden=False, show=lambda: "z" * 5000):
            check_equal(1, 2)
    assert "grading seed" not in str(info.value) and "…" in str(info.value)
    with pytest.raises(GradingError) as info:  # a value is printed as it is, without wrapping it in a lambda
        with case("an int", show=41):
            check_equal(1, 2)
    assert str(info.value).endswith("input:\n    41"), str(info.value)
    with pytest.raises(GradingError) as info:  # the reason comes before the input, so a long input cannot hide it
        with case("long input", show="p" * 5000):
            check_equal(1, 2, "the reason")
    text = str(info.value)
    assert text.index("the reason") < text.index("input:") and text.count("p") <= 1300, text[:300]
    with case("passes"):  # no failure, nothing happens
        check_equal(1, 1)


def test_call_student_says_when_the_input_changed_or_the_function_raised():
    def mutates(a):
        a[0] = 9
        return a

    def raises(a):
        raise KeyError("oops")

    with pytest.raises(GradingError, match="mutates changed its input \\(argument 1"):
        call_student(mutates, np.zeros(3))
    with pytest.raises(GradingError, match="raised KeyError on a valid input"):
        call_student(raises, [1], name="raises")
    assert call_student(lambda a: a + 1, np.ones(2)).tolist() == [2.0, 2.0]


def test_forbidden_names_trip_through_every_alias_and_come_back():
    import infopt.passes as P
    import infopt.passes.dce as dce
    from infopt.passes import DeadCodeElimination as early_alias  # bound before the guard, like a student's import

    def student(graph):
        return early_alias()(graph)

    def student_via_module(graph):
        return P.DeadCodeElimination()(graph)

    for fn in (student, student_via_module):
        guarded = forbidding(fn, "infopt.passes.dce:DeadCodeElimination", exercise="dead code elimination")
        with pytest.raises(ForbiddenCall, match="write dead code elimination yourself; your code called "
                                                "infopt.passes.dce.DeadCodeElimination"):
            guarded(None)
    assert P.DeadCodeElimination is dce.DeadCodeElimination and early_alias is dce.DeadCodeElimination
    assert isinstance(ForbiddenCall("x"), GradingError)
    with pytest.raises(HarnessError):
        with forbid("no_colon", exercise="x"):
            pass


def test_a_forbidden_name_bound_as_a_default_value_trips_and_comes_back():
    """`def f(g, _dce=DeadCodeElimination)` binds the object when the cell runs, before any guard: the guard puts
    the tripwire in the defaults of the namespace's functions and methods too, and restores them after."""
    import infopt.passes.dce as dce

    ns: dict = {"__name__": "__main__", "DCE": dce.DeadCodeElimination}
    exec("def student(graph, _dce=DCE):\n    return _dce()(graph)\n"
         "def keyword(graph, *, _dce=DCE):\n    return _dce()(graph)\n"
         "class Pass:\n    @staticmethod\n    def run(graph, _dce=DCE):\n        return _dce()(graph)\n", ns)
    for fn in (ns["student"], ns["keyword"], ns["Pass"].run):
        guarded = forbidding(fn, "infopt.passes.dce:DeadCodeElimination", exercise="dead code elimination")
        with pytest.raises(ForbiddenCall, match="write dead code elimination yourself"):
            guarded(None)
    assert ns["student"].__defaults__ == (dce.DeadCodeElimination,)
    assert ns["keyword"].__kwdefaults__ == {"_dce": dce.DeadCodeElimination}
    assert ns["Pass"].run.__defaults__ == (dce.DeadCodeElimination,)


def test_a_module_wildcard_forbids_every_function_it_defines_private_ones_too():
    from infopt.accel import pe_trace
    from infopt.grading.forbid import expand_targets

    names = expand_targets(("infopt.accel.pe_trace:*", "infopt.passes.dce:DeadCodeElimination"))
    assert "infopt.accel.pe_trace:_trace_ws" in names and "infopt.accel.pe_trace:trace_tile" in names
    assert names[-1] == "infopt.passes.dce:DeadCodeElimination"
    assert not any(n.endswith(":TileRun") or n.endswith(":np") for n in names)   # functions it defines, only

    def student(a, b, cfg):
        return pe_trace._trace_ws(a, b, cfg)

    with pytest.raises(ForbiddenCall, match="infopt.accel.pe_trace._trace_ws"):
        forbidding(student, "infopt.accel.pe_trace:*", exercise="the PE schedule")(None, None, None)
    assert pe_trace._trace_ws.__name__ == "_trace_ws" and callable(pe_trace._trace_ws)
    with pytest.raises(HarnessError, match="defines no function"):
        expand_targets(("infopt.llm:*",))


def test_any_program_refuses_every_route_to_a_program_while_the_guard_is_on():
    """ANY_PROGRAM: "without running X" holds whatever route the code takes (subprocess, os.system, os.exec*, ...),
    checked on the audit events; outside the guard programs run again."""
    import os
    import subprocess
    import sys

    from infopt.grading.forbid import ANY_PROGRAM

    routes = {"subprocess.run": lambda: subprocess.run(["true"], check=False),
              "os.system": lambda: os.system("true"),
              "os.posix_spawn": lambda: os.waitpid(os.posix_spawn("/bin/true", ["true"], os.environ), 0)}
    for name, route in routes.items():
        with pytest.raises(ForbiddenCall, match="without running a program"):
            forbidding(lambda: route(), ANY_PROGRAM, exercise="the prediction")()
    assert subprocess.run([sys.executable, "-c", "pass"], check=False).returncode == 0   # the guard is gone


def test_a_module_imported_while_a_guard_is_on_gets_the_originals_back():
    """A module first imported inside the guard (by resolving a later target, or by the student's code) binds the
    tripwires of what it imports; the guard's end puts the originals back there too."""
    import subprocess
    import sys

    code = ("import infopt.llm.model as m\n"
            "from infopt.grading import forbidding\n"
            "def student(x):\n"
            "    import infopt.llm.paged\n"
            "    return x\n"
            "forbidding(student, 'infopt.llm.model:grouped_attention', exercise='x')(1)\n"
            "import infopt.llm.paged as P\n"
            "assert P.grouped_attention is m.grouped_attention, P.grouped_attention\n"
            "print('ok')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.stdout.strip() == "ok", out.stderr[-2000:]


def test_a_forbidden_function_held_where_no_name_reaches_trips_and_comes_back(monkeypatch):
    """A reference kept in a tuple, a dict, a functools.partial, a class attribute or a bound method (made before the
    guard, as a student's cell would) trips too: the function's own code raises while the guard is on. A forbidden
    class's own methods trip, its comparisons and hash do not; a closure's and a `super()` method's code are swapped
    as well. Everything works again after the guard."""
    import functools
    import sys
    import types

    from infopt.grading.forbid import code_targets

    module = types.ModuleType("forbid_probe")
    exec("def make():\n    factor = 3\n    def scaled(x):\n        return x * factor\n    return scaled\n"
         "scaled = make()\n"
         "class Base:\n    def value(self):\n        return 1\n"
         "class Child(Base):\n    def __init__(self, k=1):\n        self.k = k\n"
         "    def value(self):\n        return super().value() + self.k\n"
         "    def __eq__(self, other):\n        return True\n    __hash__ = object.__hash__\n", module.__dict__)
    monkeypatch.setitem(sys.modules, "forbid_probe", module)
    scaled, Child = module.scaled, module.Child
    held = {"tuple": (scaled,), "dict": {"k": scaled}, "partial": functools.partial(scaled, 2),
            "class": type("Holder", (), {"f": staticmethod(scaled)})}
    instance = Child()
    bound = instance.value
    with forbid("forbid_probe:scaled", exercise="the scaling"):
        for route in (lambda: held["tuple"][0](2), lambda: held["dict"]["k"](2), held["partial"],
                      lambda: held["class"].f(2)):
            with pytest.raises(ForbiddenCall, match="write the scaling yourself; your code called forbid_probe.scaled"):
                route()
    with forbid("forbid_probe:Child", exercise="the child"):
        for route in (lambda: Child(), bound, lambda: held["tuple"][0](2) and instance.value()):
            with pytest.raises(ForbiddenCall, match="forbid_probe.Child"):
                route()
        assert instance == instance and hash(instance) == hash(instance)   # dunders other than __init__/__call__
    with forbid("forbid_probe:Child.value", exercise="the value"):
        with pytest.raises(ForbiddenCall, match="forbid_probe.Child.value"):
            bound()
    assert scaled(2) == 6 and held["partial"]() == 6 and bound() == 2 and Child(5).value() == 6
    assert {f.__name__ for f in code_targets(Child)} == {"__init__", "value"}


def test_a_target_already_replaced_by_a_tripwire_is_left_alone():
    """In a clean room the guarded objects are tripwires before the guard opens (every attribute read of one trips):
    the guard must not read them to swap their code."""
    import infopt.passes.dce as dce
    from infopt.grading.forbid import code_targets, tripwire

    wire = tripwire("infopt.passes.dce:live_nodes", dce.live_nodes, "x", "")
    assert code_targets(wire) == []
    original = dce.live_nodes
    try:
        dce.live_nodes = wire
        with forbid("infopt.passes.dce:live_nodes", exercise="x"):
            pass
    finally:
        dce.live_nodes = original
