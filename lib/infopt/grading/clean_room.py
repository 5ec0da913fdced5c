"""The clean room: where a call that a test guards with `forbidding` runs at grading.

In the student's kernel a guard can be undone: code that kept a reference to the library's function can put it back
during its own call and re-arm the tripwire before returning. At grading, guarded calls run instead in a *room*: a
fresh process, sandboxed under a uid of its own, that holds only the student's cells (their imports and definitions,
and the solution cells; never the lesson's computations), in which the guarded library objects were replaced by
tripwires *before* those cells loaded. Nothing of the original is left to restore: each removed object is collected
(checked with a weak reference); the kernel refuses to let the room read the removed objects' source and bytecode
files (Landlock, where the kernel has it), and an audit hook, which Python code cannot remove, refuses to open
them too (no reload, no getsource), to start programs, to reach native code through ctypes other than
the installed packages' own libraries (llvmlite's), or to read raw memory with it.

    zygote:  python -m infopt.grading.clean_room FD   (the grader's executor starts it in a sandbox of its own)
    session: one per judged test (the executor hands the zygote one end of a socket pair, the judge the other)
    room:    one per set of guards a test opens; it answers calls as the kernel does (remote.serve_on);
             a *bare* room loads no student code and runs the library functions the judge names: native code
             (a kernel the student's code described, compiled by the library) runs there, never in the judge

Nothing here is secret: it runs as the student's code does.
"""
from __future__ import annotations

import builtins
import gc
import importlib
import os
import re
import socket
import struct
import sys
import types
import weakref
from typing import Any

from . import wire
from .forbid import (ANY_PROGRAM, expand_targets, replace_everywhere, resolve_target, swap_code, tripwire,
                     wire_message)

_PROC_MEMORY = re.compile(r"^/proc/[^/]+/(mem|maps|smaps|map_files|pagemap)(/|$)")
_REFUSED_EVENTS = {
    "subprocess.Popen": "start a program", "os.system": "start a program", "os.exec": "start a program",
    "os.posix_spawn": "start a program", "os.spawn": "start a program", "pty.spawn": "start a program",
    "os.symlink": "make a link", "os.link": "make a link",
    "ctypes.dlsym/handle": "look up a native symbol", "ctypes.string_at": "read raw memory",
    "ctypes.wstring_at": "read raw memory", "ctypes.cdata": "read raw memory",
}


class RoomRefused(PermissionError):
    """What the clean room refuses to do while the student's code is loaded (see the module's docstring)."""


def isolate(guards: list[dict]) -> list[str]:
    """Replace every target of `guards` ({"targets", "exercise", "why"}) by a tripwire, for good, and drop every
    other reference the library holds to it; return a line for each original of the library that is still alive
    (none should be). A target outside the library (torch's conv2d) is replaced, not removed: its package keeps it."""
    refs: list[tuple[str, Any]] = []
    every = [(guard, target) for guard in guards for target in expand_targets(guard.get("targets") or [])
             if target != ANY_PROGRAM]   # ANY_PROGRAM: the room refuses every program anyway (lock_down)
    for _guard, target in every:   # import every target's module before anything is replaced: a module imported
        resolve_target(str(target))  # later would run (and bind) the tripwires of what it imports
    for guard, target in every:
        owner, attr, original = resolve_target(str(target))
        if type(original).__name__ == "Tripwire":
            continue   # already removed by an earlier guard
        wire_ = tripwire(str(target), original, str(guard.get("exercise", "")), str(guard.get("why", "")))
        replace_everywhere(owner, attr, original, wire_)
        if not str(target).startswith("infopt."):
            # another package's function or class (torch's conv, xDSL's lowering pass): that package's internals
            # and registries still hold it, so it cannot be removed; its code raises instead, for good (a room
            # serves one guard set)
            swap_code(original, wire_message(str(target), str(guard.get("exercise", "")), str(guard.get("why", ""))))
            continue
        _replace_referrers(original, wire_)
        try:
            refs.append((str(target), weakref.ref(original)))
        except TypeError:
            refs.append((str(target), lambda original=original: original))  # cannot be checked: reported
        del original, owner
    gc.collect()
    problems = []
    for target, ref in refs:
        if ref() is not None:
            kinds = sorted({type(r).__name__ for r in gc.get_referrers(ref()) if type(r).__name__ != "frame"})
            problems.append(f"{target} is still reachable in the clean room (held by {', '.join(kinds) or '?'})")
    return problems


def _replace_referrers(original: Any, wire_: Any) -> None:
    """The other places the library keeps `original`: class attributes, registry dicts and lists, closure cells,
    tuples, objects' attributes. (No comprehension here may close over `original`: its cell would be replaced.)"""
    for holder in gc.get_referrers(original):
        if isinstance(holder, dict):
            owners = [t for t in gc.get_referrers(holder)
                      if isinstance(t, type) and any(r is holder for r in gc.get_referents(t))]
            for key, value in list(holder.items()):
                if value is original:
                    if owners:
                        for cls in owners:
                            setattr(cls, key, wire_)
                    else:
                        holder[key] = wire_
        elif isinstance(holder, list):
            for i, value in enumerate(holder):
                if value is original:
                    holder[i] = wire_
        elif type(holder).__name__ == "cell":
            holder.cell_contents = wire_
        elif type(holder) is tuple:   # a module's tuple of patterns, a function's defaults
            items = list(holder)
            for i in range(len(items)):
                if items[i] is original:
                    items[i] = wire_
            _replace_tuple(holder, tuple(items))
        else:                         # an object's attribute (a frozen table row), with or without __slots__
            names = [n for cls in type(holder).__mro__ for n in getattr(cls, "__slots__", ())]
            names += list(getattr(holder, "__dict__", None) or ())
            for name in names:
                if getattr(holder, name, None) is original:
                    object.__setattr__(holder, name, wire_)


def _replace_tuple(old: tuple, new: tuple) -> None:
    """Put `new` wherever the library holds the tuple `old` (a tuple cannot change in place)."""
    for holder in gc.get_referrers(old):
        if isinstance(holder, dict):
            for key, value in list(holder.items()):
                if value is old:
                    holder[key] = new
        elif isinstance(holder, list):
            for i, value in enumerate(holder):
                if value is old:
                    holder[i] = new
        elif getattr(holder, "__defaults__", None) is old:
            holder.__defaults__ = new


def blocked_files(guards: list[dict]) -> set[str]:
    """The source and bytecode files of the modules that define the guards' targets."""
    files: set[str] = set()
    for guard in guards:
        for target in guard.get("targets") or []:
            module = sys.modules.get(str(target).partition(":")[0])
            path = getattr(module, "__file__", None)
            if not path:
                continue
            real = os.path.realpath(path)
            files.add(real)
            cache = os.path.join(os.path.dirname(real), "__pycache__")
            stem = os.path.splitext(os.path.basename(real))[0]
            if os.path.isdir(cache):
                files.update(os.path.realpath(os.path.join(cache, name)) for name in os.listdir(cache)
                             if name.startswith(stem + ".") and name.endswith(".pyc"))
    return files


_LANDLOCK_READ_FILE = 1 << 2   # LANDLOCK_ACCESS_FS_READ_FILE
_SYS_LANDLOCK = (444, 445, 446)   # create_ruleset, add_rule, restrict_self (the same number on every architecture)


def forbid_reading(files: set[str]) -> bool:
    """Ask the kernel (Landlock) to refuse this process and its children reading `files`, whatever path or handle
    they are opened by: every other file stays readable. False where the kernel has no Landlock (the audit hook of
    `lock_down` is then the only refusal). Runs before the student's code: it needs ctypes."""
    import ctypes

    if not files:
        return True
    libc = ctypes.CDLL(None, use_errno=True)
    create, add, restrict = _SYS_LANDLOCK
    handled = ctypes.c_uint64(_LANDLOCK_READ_FILE)
    ruleset = libc.syscall(create, ctypes.byref(handled), ctypes.sizeof(handled), 0)
    if ruleset < 0:
        return False
    try:
        ancestors = {os.path.dirname(f) for f in files}
        for folder in list(ancestors):
            while folder != os.path.dirname(folder):
                folder = os.path.dirname(folder)
                ancestors.add(folder)
        for folder in sorted(ancestors):
            for name in os.listdir(folder):
                path = os.path.join(folder, name)
                if path in ancestors or path in files:
                    continue   # an ancestor's other entries get their own rules; a forbidden file gets none
                try:
                    fd = os.open(path, os.O_PATH | os.O_CLOEXEC | os.O_NOFOLLOW)
                except OSError:
                    continue
                try:
                    rule = struct.pack("=Qi", _LANDLOCK_READ_FILE, fd)   # landlock_path_beneath_attr (packed)
                    libc.syscall(add, ruleset, 1, ctypes.c_char_p(rule), 0)
                finally:
                    os.close(fd)
        if libc.prctl(38, 1, 0, 0, 0) != 0 or libc.syscall(restrict, ruleset, 0) != 0:   # PR_SET_NO_NEW_PRIVS
            return False
    finally:
        os.close(ruleset)
    return True


def lock_down(files: set[str]) -> None:
    """Install the room's audit hook: no opening `files` (nor a process's memory), no programs, no native loading
    or raw reads through ctypes. Audit hooks cannot be removed, so the student's cells cannot undo it."""
    names = {os.path.basename(f) for f in files}

    def hook(event: str, args: tuple) -> None:
        if event == "open":
            path = args[0] if args else None
            if not isinstance(path, (str, bytes, os.PathLike)):
                return
            text = os.fsdecode(path)
            # a relative path may be relative to a folder handle (dir_fd), which the event does not show: its name
            # alone decides
            if _PROC_MEMORY.match(text) or os.path.realpath(text) in files or (
                    not os.path.isabs(text) and os.path.basename(os.path.normpath(text)) in names):
                raise RoomRefused(f"the grader's clean room does not let your code open {text} "
                                  "(the library's own answer to this exercise)")
            return
        if event in ("ctypes.dlopen", "ctypes.dlsym"):   # a package's own library (llvmlite's), never libc
            name = args[0] if event == "ctypes.dlopen" else getattr(args[0], "_name", None)
            if not (isinstance(name, str) and _packaged(name)):
                raise RoomRefused(f"the grader's clean room does not let your code reach native code outside the "
                                  f"installed packages ({event} {name!r})")
            return
        what = _REFUSED_EVENTS.get(event)
        if what:
            raise RoomRefused(f"the grader's clean room does not let your code {what} ({event})")

    sys.addaudithook(hook)


def _packaged(path: str) -> bool:
    """True for a file of the installed Python packages (where llvmlite's and IREE's libraries live)."""
    import sysconfig

    real = os.path.realpath(path)
    roots = {os.path.realpath(sysconfig.get_paths()[key]) for key in ("purelib", "platlib")}
    return os.path.isabs(path) and any(real.startswith(root + os.sep) for root in roots)


def load(sources: list[str]) -> tuple[dict, list[str]]:
    """Run the student's cells in a fresh namespace; (namespace, one line per cell that raised)."""
    namespace: dict = {"__name__": "__main__", "__builtins__": builtins}
    errors = []
    for i, source in enumerate(sources):
        try:
            exec(compile(source, f"<your cell {i + 1}>", "exec"), namespace)  # noqa: S102 (the student's own code)
        except BaseException as err:  # noqa: BLE001 (a cell that fails is reported; the room goes on)
            errors.append(f"{type(err).__name__}: {str(err)[:300]}")
    return namespace, errors


class LibrarySeal:
    """What the loaded library binds, taken in a room before the student's cells load: every function, class and
    module each `infopt` module holds, and each such function's code and defaults. The judge's calls run library code
    in the room (the helpers a test sends with `via`, `serve` itself) and trust what it reports; `restore()` puts back
    whatever the student's code rebound since, and names it, so that a replaced helper is neither used nor unseen."""

    def __init__(self, prefix: str = "infopt") -> None:
        self.bindings: dict[str, tuple[Any, dict[str, Any]]] = {}
        self.functions: dict[int, tuple[Any, Any, Any, Any]] = {}
        for name, module in list(sys.modules.items()):
            if module is None or not (name == prefix or name.startswith(prefix + ".")):
                continue
            kept = {attr: value for attr, value in vars(module).items()
                    if callable(value) or isinstance(value, types.ModuleType)}
            self.bindings[name] = (module, kept)
            for value in kept.values():
                if isinstance(value, types.FunctionType):
                    self.functions.setdefault(id(value), (value, value.__code__, value.__defaults__,
                                                          value.__kwdefaults__))

    def restore(self) -> list[str]:
        """Put back what changed since the seal was taken; the names of what was put back."""
        changed = []
        for name, (module, kept) in self.bindings.items():
            now = vars(module)
            for attr, value in kept.items():
                if now.get(attr) is not value:
                    now[attr] = value
                    changed.append(f"{name}.{attr}")
        for fn, code, defaults, kwdefaults in self.functions.values():
            if fn.__code__ is not code or fn.__defaults__ is not defaults or fn.__kwdefaults__ is not kwdefaults:
                fn.__code__, fn.__defaults__, fn.__kwdefaults__ = code, defaults, kwdefaults
                changed.append(f"{fn.__module__}.{fn.__qualname__} (its code or defaults)")
        return changed


# ----- the processes -----------------------------------------------------------------------------------------------
def _room(sock: socket.socket, sources: list[str], guards: list[dict], bare: bool) -> None:
    from .remote import serve_on

    if bare:   # the judge's native runner: no student code at all, only the library functions the judge names
        wire.send(sock, {"ok": {"problems": [], "errors": []}})
        serve_on(sock, {})
        return
    problems = isolate(guards)
    files = blocked_files(guards)
    for name, module in list(sys.modules.items()):   # what wire reads of a module's source, read before it is shut
        if os.path.realpath(getattr(module, "__file__", None) or "/") in files:
            wire.native_module(name)
    forbid_reading(files)
    lock_down(files)
    seal = LibrarySeal()
    namespace, errors = load(sources)
    wire.send(sock, {"ok": {"problems": problems, "errors": errors}})
    serve_on(sock, namespace, seal.restore)


def _session(sock: socket.socket, sources: list[str]) -> None:
    """Open a room for each guard set the judge asks for, one after the other, until the judge is done."""
    while True:
        try:
            tree, _blobs = wire.receive(sock)
        except (EOFError, OSError, wire.WireError):
            return
        if not isinstance(tree, dict) or tree.get("op") != "room":
            return
        guards = [g for g in tree.get("guards") or [] if isinstance(g, dict)]
        pid = os.fork()
        if pid == 0:
            try:
                _room(sock, sources, guards, bool(tree.get("bare")))
            finally:
                os._exit(0)
        os.waitpid(pid, 0)


def preload(modules: list[str]) -> list[str]:
    """Import what the student's cells import (so that a room forks with it loaded); the ones that failed."""
    failed = []
    for name in modules:
        try:
            importlib.import_module(name)
        except BaseException as err:  # noqa: BLE001 (a bad import is the student's, and shows in its room)
            failed.append(f"{name}: {type(err).__name__}")
    return failed


def _untraceable() -> None:
    """PR_SET_DUMPABLE 0, inherited by every session and room: no other process of the sandbox's uid (one a room
    left behind) can trace a later room or open its memory. Before any student code, so ctypes is still allowed."""
    import ctypes

    if ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0) != 0:   # PR_SET_DUMPABLE = 4
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_DUMPABLE, 0) failed")


def main(fd: int) -> None:
    """The zygote: preload, then fork a session for each socket the executor hands over, until it closes."""
    import signal

    signal.signal(signal.SIGCHLD, signal.SIG_IGN)   # sessions are reaped by the kernel
    _untraceable()
    control = socket.socket(fileno=fd)
    tree, _ = wire.receive(control)
    preload([str(m) for m in (tree.get("modules") or [])] if isinstance(tree, dict) else [])
    gc.collect()
    while True:
        try:
            _message, fds, _flags, _addr = socket.recv_fds(control, 1, 1)
        except OSError:
            return
        if not fds:
            return
        try:
            job, _ = wire.receive(control)
        except (EOFError, OSError, wire.WireError):
            return
        if os.fork() == 0:
            control.close()
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            try:
                _session(socket.socket(fileno=fds[0]), [str(s) for s in job.get("sources") or []])
            finally:
                os._exit(0)
        os.close(fds[0])


if __name__ == "__main__":
    main(int(sys.argv[1]))
