"""The one call through which a test reaches the student's code when it is graded across the process boundary.

In the student's notebook a test calls the student's function directly. At grading, the test runs in the grader's
judge process, where the exercise's names are `StudentFunction`s: calling one sends the arguments to the student's
kernel (`infopt.grading.wire`: plain data and the library's own objects, never a pickle), where `serve` calls the
student's function and sends back the result, the arguments as the call left them (a mutation shows in the
judge's own objects), or the error as its type's name and a capped message. The judge holds the hidden tests, their
inputs, expected values, references and comparisons; the kernel holds none of them.

    judge:   topo_order = StudentFunction(channel, "topo_order")     # what the test cell's name means at grading
    kernel:  serve("/run/judge.sock", globals())                       # the cell the grader runs in its place
"""
from __future__ import annotations

import contextlib
import importlib
import json
import socket
import sys
import traceback
from typing import Any, Callable

from . import guards as open_guards
from . import wire
from .errors import GradingError
from .forbid import bound_cells, forbid


class KernelGone(GradingError):
    """The student's kernel stopped answering while a test called it (it died, exited, or stopped serving)."""


class Channel:
    """The judge's end of one test's connection to the student's kernel, and to its clean room (calls a test guards
    with `forbidding` run there: infopt.grading.clean_room)."""

    def __init__(self, sock: socket.socket, room: socket.socket | None = None) -> None:
        self.sock, self.room = sock, room
        self.calls = 0
        self.flags: list[str] = []      # for the instructor: what the judge saw that a score does not show
        self._room_guards: str | None = None
        self._room_errors: list[str] = []

    def call(self, name: str, args: tuple, kwargs: dict, forbid: dict | None = None, via: str | None = None) -> Any:
        """Call `name` in the kernel (or the library function `via` with it as the first argument); return the
        result with the caller's own objects updated in place. A guarded call (`forbid`, or a `forbid` block the
        judge has open) runs in the clean room when there is one."""
        guards = [g for g in [forbid, *open_guards.OPEN] if g]
        if guards and self.room is not None:
            try:
                return self._exchange(self._enter_room(guards, name), name, args, kwargs, guards, via)
            except NameError as err:   # the room lacks a name the notebook defined outside the solution cells
                missing = str(err)[:200]
            result = self._exchange(self.sock, name, args, kwargs, guards, via)
            loaded = f"; in the room, {self._room_errors[0]}" if self._room_errors else ""
            self.flags.append(f"{name} answered in the kernel but not in the grader's clean room, which holds only "
                              f"the solution cells and the notebook's definitions ({missing}{loaded}): graded in the "
                              "kernel, where a guarded library function could have been put back during the call")
            return result
        return self._exchange(self.sock, name, args, kwargs, guards, via)

    def library(self, target: str, args: tuple, kwargs: dict) -> Any:
        """Run the library function `target` ("infopt.module:name") in a bare room, one that holds no student code:
        what the judge asks for native code (a compiled kernel the student's code described) to run in a sandbox."""
        if self.room is None:
            from .errors import HarnessError
            raise HarnessError(f"{target}: native code runs only in the sandbox, and this judge has no clean room")
        return self._exchange(self._enter_room([], target, bare=True), target, args, kwargs, [], None, target)

    def _enter_room(self, guards: list[dict], name: str, bare: bool = False) -> socket.socket:
        """The clean room for `guards` (or a bare one), opened (a fresh one when they changed)."""
        key = "bare" if bare else json.dumps(guards, sort_keys=True)
        if key == self._room_guards:
            return self.room
        try:
            if self._room_guards is not None:
                wire.send(self.room, {"op": "leave"})
            wire.send(self.room, {"op": "room", "guards": guards, "bare": bare})
            reply, _ = wire.receive(self.room)
        except (EOFError, OSError, wire.WireError) as err:
            raise KernelGone(f"the grader's clean room for {name} did not open ({type(err).__name__})") from None
        self._room_guards = key
        opened = reply.get("ok") if isinstance(reply, dict) else None
        if not isinstance(opened, dict):
            raise KernelGone(f"the grader's clean room for {name} did not open")
        if opened.get("problems"):
            from .errors import HarnessError
            raise HarnessError("the clean room could not remove the library's answer: "
                               + "; ".join(map(str, opened["problems"]))[:1000])
        self._room_errors = [str(e) for e in opened.get("errors") or []]
        return self.room

    def _exchange(self, sock: socket.socket, name: str, args: tuple, kwargs: dict, guards: list[dict],
                  via: str | None, library: str | None = None) -> Any:
        encoder = wire.Encoder()
        try:
            tree = {"op": "call", "name": name, "call": encoder.encode((tuple(args), dict(kwargs)), "arguments"),
                    "forbid": guards, "via": via, "library": library}
            message = wire.dump(tree, encoder.blobs)
        except wire.WireError as err:  # the test's own argument cannot cross: a harness bug, not the student's
            from .errors import HarnessError
            raise HarnessError(f"the test's arguments to {name} cannot cross to the kernel: {err}") from None
        self.calls += 1
        try:
            sock.sendall(message)
            reply, blobs = wire.receive(sock)
        except (EOFError, OSError) as err:
            where = "the grader's clean room" if sock is self.room else "your kernel"
            raise KernelGone(f"{where} stopped answering the grader while {name} ran (it died, exited or "
                             f"stopped serving calls: {type(err).__name__})") from None
        except wire.WireError as err:
            raise GradingError(f"{name}: the kernel's reply could not be read ({err})") from None
        if not isinstance(reply, dict):
            raise GradingError(f"{name}: the kernel's reply could not be read (not a message)")
        if sock is self.room and isinstance(reply.get("tampered"), list):
            changed = ", ".join(str(t)[:120] for t in reply["tampered"][:10])
            flag = (f"{name}: your code changed the library in the grader's clean room ({changed}); it was put back "
                    "before the grader's call used it")
            if flag not in self.flags:
                self.flags.append(flag)
        if "error" in reply:
            raise wire.decode_error(reply["error"])
        if "refused" in reply:
            raise GradingError(f"{name} returned a value the grader cannot check: {str(reply['refused'])[:500]}")
        try:
            result, _args, _kwargs = wire.Decoder(blobs, table=encoder.table).decode(reply.get("ok"))
        except wire.WireError as err:
            raise GradingError(f"{name}: {err}" if "in place" in str(err) else
                               f"{name}: the kernel's reply could not be read ({err})") from None
        except (TypeError, ValueError) as err:
            raise GradingError(f"{name}: the kernel's reply could not be read ({err})") from None
        return result

    def done(self) -> None:
        """Tell the kernel (and the clean room) the test is over: the serving cell returns, the room closes."""
        for sock in (self.sock, self.room):
            if sock is not None:
                with contextlib.suppress(OSError):
                    wire.send(sock, {"op": "done"})


class StudentFunction:
    """What an exercise's name means in the judge: a call crosses to the student's function in the kernel."""

    __infopt_remote__ = True   # how `forbidding` knows it (without importing this module)

    def __init__(self, channel: Channel, name: str, forbid: dict | None = None) -> None:
        self._channel, self._forbid = channel, forbid
        self.__name__ = self.__qualname__ = name

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._channel.call(self.__name__, args, kwargs, self._forbid)

    def via(self, target: str, *args: Any, **kwargs: Any) -> Any:
        """`target(<this function>, *args, **kwargs)` run in the kernel: a library function that must run where the
        student's code is (the Triton tracer: `infopt.kernels.trace:run_traced`)."""
        return self._channel.call(self.__name__, args, kwargs, self._forbid, via=target)

    def forbidding(self, targets: tuple[str, ...], exercise: str, why: str = "") -> "StudentFunction":
        """The same function, called in the kernel under `forbid(*targets)` (see infopt.grading.forbid)."""
        return StudentFunction(self._channel, self.__name__,
                               {"targets": list(targets), "exercise": exercise, "why": why})

    def __repr__(self) -> str:
        return f"<your function {self.__name__}, in your kernel>"


# ----- the kernel's side -----------------------------------------------------------------------------------------
def serve(path: str, namespace: dict) -> int:
    """Connect to the judge at `path` and answer its calls on the functions of `namespace` until it is done.

    Returns the number of calls answered. Runs in the student's kernel: nothing here is secret."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(path)
    return serve_on(sock, namespace)


def serve_on(sock: socket.socket, namespace: dict, seal: Callable[[], list[str]] | None = None) -> int:
    """`serve` on a connected socket (closed at the end): answer calls until the judge is done. `seal` (the clean
    room's: infopt.grading.clean_room.LibrarySeal.restore) runs before and after each call; what it names (library
    objects the student's code had changed, now put back) goes back with the reply as `tampered`."""
    answered = 0
    try:
        while True:
            try:
                tree, blobs = wire.receive(sock)
            except EOFError:
                break
            if not isinstance(tree, dict) or tree.get("op") != "call":
                break
            tampered = seal() if seal else []
            reply, reply_blobs = _answer(tree, blobs, namespace)
            tampered += seal() if seal else []
            if tampered:
                reply["tampered"] = list(dict.fromkeys(tampered))[:20]
            try:
                wire.send(sock, reply, reply_blobs)
            except wire.WireError as err:
                wire.send(sock, {"refused": str(err)})
            answered += 1
    finally:
        sock.close()
    return answered


def _answer(tree: dict, blobs: list[bytes], namespace: dict) -> tuple[dict, list[bytes]]:
    name = str(tree.get("name", ""))
    if tree.get("library"):   # the judge's own call of a library function (a room's native runner)
        try:
            fn = _library_function(str(tree["library"]))
        except (ValueError, ImportError, AttributeError) as err:
            return {"error": wire.encode_error(wire.WireError(f"the grader's call could not be read: {err}"))}, []
    else:
        fn = namespace.get(name)
    if not callable(fn):
        err = NameError(f"name {name!r} is not defined as a function in your notebook: run the cell that defines it"
                        if fn is None else f"{name} must be a function, got {type(fn).__name__}")
        return {"error": wire.encode_error(err)}, []
    decoder = wire.Decoder(blobs)
    try:
        args, kwargs = decoder.decode(tree.get("call"))
    except (wire.WireError, TypeError, ValueError) as err:
        return {"error": wire.encode_error(wire.WireError(f"the grader's call could not be read: {err}"))}, []
    before = [wire.digest(obj) for obj in decoder.table]   # what the arguments held: send back only changes
    via = tree.get("via")
    try:
        target = _library_function(via) if via else None
    except (ValueError, ImportError, AttributeError) as err:
        return {"error": wire.encode_error(wire.WireError(f"the grader's call could not be read: {err}"))}, []
    guards = [g for g in (tree.get("forbid") or []) if isinstance(g, dict) and g.get("targets")]
    try:
        with contextlib.ExitStack() as stack:
            for g in guards:
                stack.enter_context(forbid(*[str(t) for t in g["targets"]], exercise=str(g.get("exercise", "")),
                                           why=str(g.get("why", "")), namespaces=_namespaces(fn, namespace),
                                           closures=bound_cells(fn)))
            out = target(fn, *args, **kwargs) if target else fn(*args, **kwargs)
    except (Exception, SystemExit) as err:  # noqa: BLE001 (the student's error travels as data)
        return {"error": wire.encode_error(err, _own_frames(err))}, []
    known = {id(obj): i for i, obj in enumerate(decoder.table) if obj is not None}
    encoder = wire.Encoder(known=known, changed=lambda obj: wire.digest(obj) != before[known[id(obj)]])
    try:
        return {"ok": encoder.encode((out, args, kwargs), "your result")}, encoder.blobs
    except wire.WireError as err:
        return {"refused": str(err)}, []


def _library_function(target: str) -> Callable[..., Any]:
    """The library function "infopt.module:attr" (only the library's: the grader never names another)."""
    module_name, sep, attr = str(target).partition(":")
    if not sep or not (module_name == "infopt" or module_name.startswith("infopt.")):
        raise ValueError(f"{target!r} is not a function of the library")
    fn = getattr(importlib.import_module(module_name), attr)
    if not callable(fn):
        raise ValueError(f"{target!r} is not a function")
    return fn


def _namespaces(fn: Any, namespace: dict) -> tuple[dict, ...]:
    found = [namespace]
    if isinstance(getattr(fn, "__globals__", None), dict) and fn.__globals__ is not namespace:
        found.append(fn.__globals__)
    return tuple(found)


def _own_frames(err: BaseException) -> list[list]:
    """The frames of the student's own code in the error's traceback: [file, line, function, text]."""
    frames = []
    for frame in traceback.extract_tb(err.__traceback__):
        name = frame.filename
        if "site-packages" in name or "/infopt/" in name or name.startswith(sys.prefix) or name == __file__:
            continue
        frames.append([name[-200:], int(frame.lineno or 0), str(frame.name)[:100], str(frame.line or "")[:300]])
    return frames[-12:]


def is_remote(fn: Callable[..., Any]) -> bool:
    return isinstance(fn, StudentFunction)
