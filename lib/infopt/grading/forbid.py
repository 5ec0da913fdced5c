"""Names an exercise must not call: while the student's function runs, the library's own answer (or the simulator
a prediction must not run) raises a message that says what the exercise asks for.

    solve = forbidding(eliminate_dead_code, "infopt.passes.dce:DeadCodeElimination", exercise="DCE")
    out = solve(graph)          # raises ForbiddenCall if eliminate_dead_code used DeadCodeElimination

A target is "module:attribute" (e.g. "infopt.accel.executor:Accelerator.run" for a method), "module:*" for every
function that module defines, its private helpers included (they compute the same answer), or ANY_PROGRAM: no
program may start while the guard is on, whatever route the code takes (checked on the audit events). While the guard is
on, every reference to the target's object that the student's code could reach is replaced by a tripwire: the
attribute itself, every infopt module that re-exports the same object (infopt.passes and infopt.passes.dce both
hold DeadCodeElimination), and every global of the student's function (and of the
notebook's namespace) bound to it, so `from infopt.passes import DeadCodeElimination` done earlier does not get
around it. Beyond the names, a forbidden Python function (and each method a forbidden class defines) has its code
swapped for code that raises while the guard is on, so a reference kept where no name reaches (a tuple, a dict, a
`functools.partial`, a bound method, another library's registry) trips too. The test's own reference code runs outside
the guard and sees the real object.
"""
from __future__ import annotations

import functools
import importlib
import sys
import types
from contextlib import contextmanager
from typing import Any, Callable, Iterator

from . import guards
from .errors import GradingError, HarnessError


class ForbiddenCall(GradingError):
    """The student's code called something the exercise asks them to write (or not to run) themselves."""


# A target that names no object: while the guard is on, no program may start, by any route (subprocess, os.system,
# os.exec*, os.posix_spawn, pty): "without running mlir-opt" enforced where every route ends, the audit events.
ANY_PROGRAM = "any program"
_PROGRAM_EVENTS = ("subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "pty.spawn")
_program_guards: list[str] = []     # the messages of the open guards that forbid programs (innermost last)
_program_hook_installed = False


def _refuse_programs(event: str, args: tuple) -> None:
    if _program_guards and event in _PROGRAM_EVENTS:
        raise ForbiddenCall(_program_guards[-1] + f" ({event})")


def _forbid_programs(message: str) -> None:
    """Open a no-programs guard (the audit hook is installed once per process and cannot be removed)."""
    global _program_hook_installed
    if not _program_hook_installed:
        sys.addaudithook(_refuse_programs)
        _program_hook_installed = True
    _program_guards.append(message)


def resolve_target(target: str) -> tuple[Any, str, Any]:
    """(owner, attribute, object) for "module:attr" or "module:Class.attr"."""
    module_name, sep, path = target.partition(":")
    if not sep or not path:
        raise HarnessError(f"forbidden target {target!r} must be 'module:attribute'")
    try:
        owner: Any = importlib.import_module(module_name)
    except ImportError as err:
        raise HarnessError(f"forbidden target {target!r}: cannot import {module_name} ({err})") from None
    *parents, attr = path.split(".")
    for part in parents:
        owner = getattr(owner, part)
    if not hasattr(owner, attr):
        raise HarnessError(f"forbidden target {target!r}: {owner!r} has no attribute {attr!r}")
    return owner, attr, getattr(owner, attr)


def expand_targets(targets: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    """The targets with every "module:*" replaced by "module:name" for each function that module defines (private
    ones included: the internals of a forbidden function compute the same answer)."""
    out: list[str] = []
    for target in targets:
        module_name, sep, path = str(target).partition(":")
        if path != "*" or str(target) == ANY_PROGRAM:
            out.append(str(target))
            continue
        try:
            module = importlib.import_module(module_name)
        except ImportError as err:
            raise HarnessError(f"forbidden target {target!r}: cannot import {module_name} ({err})") from None
        names = [n for n, v in vars(module).items()
                 if isinstance(v, types.FunctionType) and v.__module__ == module_name]
        if not names:
            raise HarnessError(f"forbidden target {target!r}: {module_name} defines no function")
        out += [f"{module_name}:{n}" for n in sorted(names) if f"{module_name}:{n}" not in out]
    return tuple(out)


def wire_message(target: str, exercise: str, why: str) -> str:
    """What a student is told who called the forbidden `target`."""
    return (f"this exercise asks you to write {exercise} yourself; your code called {target.replace(':', '.')}"
            + (f" ({why})" if why else ""))


def tripwire(target: str, original: Any, exercise: str, why: str) -> Any:
    """A stand-in for `original` that raises ForbiddenCall when called, instantiated or its attributes read."""
    message = wire_message(target, exercise, why)

    class Tripwire:
        __name__ = getattr(original, "__name__", "tripwire")
        __qualname__ = __name__

        def __call__(self, *args: Any, **kwargs: Any) -> Any:
            raise ForbiddenCall(message)

        def __getattr__(self, name: str) -> Any:
            raise ForbiddenCall(message)

        def __get__(self, obj: Any, objtype: Any = None) -> "Tripwire":  # as a method, it trips when called
            return self

        def __repr__(self) -> str:
            return f"<forbidden in this exercise: {target}>"

    return Tripwire()


def replace_everywhere(owner: Any, attr: str, original: Any, wire: Any, namespaces: tuple[dict, ...] = (),
                       closures: tuple[Any, ...] = ()) -> list[tuple[Any, str, Any]]:
    """Put `wire` where `owner.attr` held `original`, and in every infopt module, namespace and closure cell that
    holds the same object; return the patches (owner or dict, key, original) that undo it."""
    return replace_all([(owner, attr, original, wire)], namespaces, closures)


def replace_all(replacements: list[tuple[Any, str, Any, Any]], namespaces: tuple[dict, ...] = (),
                closures: tuple[Any, ...] = ()) -> list[tuple[Any, str, Any]]:
    """replace_everywhere for many (owner, attribute, original, wire) at once, in one pass over infopt's modules,
    the namespaces and the closures (a guard with thirty targets entered per student call made thirty passes: most of
    a hidden test's time); the patches that undo it."""
    patches: list[tuple[Any, str, Any]] = []
    wire_of: dict[int, tuple[Any, Any]] = {}   # id(original) -> (original, its wire): the first target's wire
    for owner, attr, original, wire in replacements:
        patches.append((owner, attr, getattr(owner, attr)))
        setattr(owner, attr, wire)
        wire_of.setdefault(id(original), (original, wire))

    def swap(value: Any) -> Any:
        hit = wire_of.get(id(value))
        return hit[1] if hit is not None and hit[0] is value else None

    ids = wire_of.keys()
    for md in _infopt_dicts():
        for key in [k for k, v in md.items() if id(v) in ids]:   # one cheap test per name; swap() on the few hits
            if (wire := swap(md[key])) is not None:
                patches.append((md, key, md[key]))
                md[key] = wire
    for ns in namespaces:
        for key, value in list(ns.items()):
            if (wire := swap(value)) is not None:
                patches.append((ns, key, value))
                ns[key] = wire
        for fn in _functions_of(ns):
            patches += _replace_in_defaults(fn, swap)
    for cell in closures:
        if (wire := swap(cell.cell_contents)) is not None:
            patches.append((cell, "cell_contents", cell.cell_contents))
            cell.cell_contents = wire
    return patches


def _tripping_code(fn: types.FunctionType, message: str) -> types.CodeType:
    """Code that raises ForbiddenCall(message) with `fn`'s free variables (a function's code may only be swapped for
    code with as many), and `fn`'s name for tracebacks."""
    return _tripping_code_for(fn.__code__.co_freevars, fn.__code__.co_name, fn.__qualname__, message)


@functools.lru_cache(maxsize=4096)
def _tripping_code_for(free: tuple[str, ...], name: str, qualname: str, message: str) -> types.CodeType:
    """_tripping_code's work, made once per function and message (a guard is entered on every call of a student's
    function, and compiling is most of its cost)."""
    lines = ["def _outer():", *(f"    {v} = None" for v in free), "    def _trip(*args, **kwargs):"]
    if free:
        lines.append(f"        ({', '.join(free)},)")          # keeps them free variables of _trip
    lines += ["        from infopt.grading.forbid import ForbiddenCall",
              f"        raise ForbiddenCall({message!r})", "    return _trip"]
    scope: dict[str, Any] = {}
    exec(compile("\n".join(lines), f"<forbidden: {qualname}>", "exec"), scope)  # noqa: S102 (our own text)
    code = scope["_outer"]().__code__
    return code.replace(co_name=name, co_qualname=qualname)


def code_targets(original: Any) -> list[types.FunctionType]:
    """The Python functions whose code stands for `original`: the function itself (a method's underlying function),
    or for a class the functions it defines itself (its methods, `__init__` and `__call__`; not the other dunders,
    which dicts and comparisons call on the library's own objects)."""
    if type(original).__name__ == "Tripwire":   # already removed (a clean room): every attribute read trips
        return []
    fn = original.__func__ if isinstance(original, (types.MethodType, staticmethod, classmethod)) else original
    if isinstance(fn, types.FunctionType):
        return [fn]
    if not isinstance(original, type):
        return []
    found = []
    for name, member in vars(original).items():
        if isinstance(member, (staticmethod, classmethod)):
            member = member.__func__
        if isinstance(member, types.FunctionType) and (not name.startswith("__") or name in ("__init__", "__call__")):
            found.append(member)
    return found


def swap_code(original: Any, message: str) -> list[tuple[Any, str, Any]]:
    """Make `original` (a function, or a class's own methods) raise ForbiddenCall(message) wherever it is held; the
    patches that undo it."""
    patches: list[tuple[Any, str, Any]] = []
    for fn in code_targets(original):
        patches.append((fn, "__code__", fn.__code__))
        fn.__code__ = _tripping_code(fn, message)
    return patches


def _sweep_wires(wires: dict[int, Any], loaded: set[str]) -> None:
    """Put the originals back wherever an infopt module loaded while the guard was on (not in `loaded`) holds one of
    this guard's tripwires: such a module bound them at its import."""
    if not wires:
        return
    for md in _infopt_dicts(skip=loaded):
        for key in [k for k, v in md.items() if id(v) in wires]:
            if type(md[key]).__name__ == "Tripwire":
                md[key] = wires[id(md[key])]


def _infopt_names() -> set[str]:
    return {name for name in list(sys.modules) if name == "infopt" or name.startswith("infopt.")}


def _infopt_dicts(skip: set[str] = frozenset()) -> list[dict]:
    """The namespaces of infopt's loaded modules but those named in `skip` (picked by name first: a process holds
    thousands of modules)."""
    return [md for name in _infopt_names() - skip
            if (md := getattr(sys.modules.get(name), "__dict__", None)) is not None]


def _functions_of(ns: dict) -> list[Any]:
    """The functions a namespace defines: its functions and its classes' methods (whose defaults may hold a
    forbidden object bound at definition, `def f(x, _split=split)`)."""
    found = []
    for value in list(ns.values()):
        if isinstance(value, types.FunctionType):
            found.append(value)
        elif isinstance(value, type) and value.__module__ == ns.get("__name__"):
            for member in vars(value).values():
                member = getattr(member, "__func__", member)      # staticmethod, classmethod
                if isinstance(member, types.FunctionType):
                    found.append(member)
    return found


def _replace_in_defaults(fn: Any, swap: Callable[[Any], Any]) -> list[tuple[Any, str, Any]]:
    """Put each forbidden object's wire (`swap(value)`, None for the others) in `fn`'s default values; the patches
    that undo it."""
    patches: list[tuple[Any, str, Any]] = []
    defaults = fn.__defaults__ or ()
    swapped = [swap(d) for d in defaults]
    if any(w is not None for w in swapped):
        patches.append((fn, "__defaults__", defaults))
        fn.__defaults__ = tuple(d if w is None else w for d, w in zip(defaults, swapped))
    kw = fn.__kwdefaults__ or {}
    swapped_kw = {k: swap(v) for k, v in kw.items()}
    if any(w is not None for w in swapped_kw.values()):
        patches.append((fn, "__kwdefaults__", kw))
        fn.__kwdefaults__ = {k: v if swapped_kw[k] is None else swapped_kw[k] for k, v in kw.items()}
    return patches


@contextmanager
def forbid(*targets: str, exercise: str, why: str = "", namespaces: tuple[dict, ...] = (),
           closures: tuple[Any, ...] = ()) -> Iterator[None]:
    """While inside, each target (and every alias of it in infopt's modules, in `namespaces` and in the closure
    cells `closures`) raises ForbiddenCall."""
    if not targets:
        raise HarnessError("forbid() needs at least one 'module:attribute' target")
    targets = expand_targets(targets)
    patches: list[tuple[Any, str, Any]] = []   # (owner, attribute or dict key, original value)
    guards.push(targets, exercise, why)  # graded across the boundary: the kernel's calls are guarded there too
    programs = ANY_PROGRAM in targets
    wires: dict[int, Any] = {}   # id(tripwire) -> the original it stands for
    loaded = _infopt_names()
    try:
        if programs:
            _forbid_programs(f"this exercise asks you to write {exercise} yourself, without running a program; "
                             "your code started one" + (f" ({why})" if why else ""))
        # import every target's module before anything is replaced: a module imported while the guard is on
        # would bind the tripwires of the targets it imports
        resolved = [(target, *resolve_target(target)) for target in targets if target != ANY_PROGRAM]
        replacements = []
        for target, owner, attr, original in resolved:
            wire = tripwire(target, original, exercise, why)
            wires[id(wire)] = original
            replacements.append((owner, attr, original, wire))
        patches += replace_all(replacements, namespaces, closures)
        for target, _owner, _attr, original in resolved:
            patches += swap_code(original, wire_message(target, exercise, why))
        yield
    finally:
        if programs:
            _program_guards.pop()
        guards.pop()
        for owner, key, original in reversed(patches):
            if isinstance(owner, dict):
                owner[key] = original
            else:
                setattr(owner, key, original)
        _sweep_wires(wires, loaded)


def _has_contents(cell: Any) -> bool:
    try:
        cell.cell_contents
    except ValueError:  # an empty cell (a name assigned later in the enclosing function)
        return False
    return True


def bound_cells(fn: Any) -> tuple[Any, ...]:
    """The closure cells of `fn` that hold a value (where a guard must replace a forbidden object too)."""
    return tuple(c for c in (getattr(fn, "__closure__", None) or ()) if _has_contents(c))


def forbidding(fn: Callable[..., Any], *targets: str, exercise: str, why: str = "") -> Callable[..., Any]:
    """`fn` wrapped so that each call runs under forbid(*targets): what a hidden test calls instead of `fn`."""
    if not callable(fn):
        raise GradingError(f"expected a function, got {type(fn).__name__}")
    targets = expand_targets(targets)
    if getattr(fn, "__infopt_remote__", False):  # a StudentFunction: the guard goes up in the student's kernel
        return fn.forbidding(targets, exercise, why)
    namespaces = tuple(ns for ns in (getattr(fn, "__globals__", None),) if isinstance(ns, dict))
    closures = bound_cells(fn)

    @functools.wraps(fn)
    def guarded(*args: Any, **kwargs: Any) -> Any:
        with forbid(*targets, exercise=exercise, why=why, namespaces=namespaces, closures=closures):
            return fn(*args, **kwargs)

    return guarded
