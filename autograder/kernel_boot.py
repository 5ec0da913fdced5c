"""The grading kernel's first code: it runs before ipykernel and any student code, and it alone signs test verdicts.

The sandbox starts the kernel as `python kernel_boot.py -f <connection file>` (this file and `sealed.py` copied into
the sandbox's run folder). Before handing over to ipykernel it re-runs both files in a private namespace (its own
copy of the builtins, so a student who patches `builtins`, `os` or `json` never reaches this code), reads the
run's secret from a key file (deleted at once: the key never appears in clear anywhere the kernel can read later),
opens the verdict channel (a FIFO the grader reads; only appends are possible), makes the process undumpable,
starts the signer thread and installs an audit hook (which Python cannot remove).

How a test runs (the grader's side is autograder/verdicts.py):
- The grader sends the cell `__import__("sys").audit("infopt.run", BLOB)`; BLOB is the test compiled by the grader
  inside a wrapper (try/except/else/finally whose report calls sit on fixed line numbers), sealed with the key.
  The kernel's execution machinery and the student's code see only an opaque string: they cannot tell a test
  from a probe, nor read the hidden tests.
- The audit hook hands the blob to the signer thread. The signer authenticates and decrypts it (in order, each
  once), binds the genuine `sys.audit` into the code's constants, and runs it with `exec` in a fresh thread, in the
  namespace the trigger ran in.
- The wrapper reports ok (its `else`), err (its bare `except`) and end (its `finally`) through that constant
  `sys.audit`. The signer accepts a report only from the test thread, from the test's own code object, at the top
  of that thread's stack, on the report's line: student code called by the test runs in deeper frames and cannot
  produce it. The signer then checks that the checking machinery (builtins, numpy, numpy.testing,
  infopt.grading, the names the test imports) and the kernel's execution machinery (IPython's run_cell and
  showtraceback, sys.excepthook, ipykernel's do_execute and reply path) are what they were before any student code,
  and writes a signed record to the channel. The trigger then returns, or raises when the test failed, so a kernel
  whose replies disagree with the signed verdict has had its execution machinery replaced.
- The audit hook blocks the introspection that could reach the signer or move a running test (gc object walks,
  other threads' frames, new audit hooks, ctypes lookups of interpreter symbols, /proc/*/mem; trace and profile
  functions while a test runs), reports writes to the kernel's
  startup folders (IPython startup and config, usercustomize/sitecustomize, .pth), and records every attempt as a
  signed incident the grader flags.

What this cannot stop: code that rewrites interpreter memory with ctypes (memmove at a raw address) is beyond any
in-process check; such code is flagged by the static scan when it names ctypes' raw-memory functions.
"""
try:  # the grader imports this module; the kernel runs it in a namespace where sealed.py was run first
    from .sealed import sign_line, subkeys, unseal
except ImportError:
    pass

# The wrapper's report lines and constant placeholders (shared with autograder/verdicts.py).
OK_LINE, ERR_LINE, DETAIL_LINE, END_LINE = 1_000_001, 1_000_002, 1_000_003, 1_000_004
AUDIT, EXC_INFO, DETAIL = "\x00infopt:audit", "\x00infopt:exc_info", "\x00infopt:detail"
KEY_FILE, CHANNEL_FILE = "key", "verdicts"
# Builtins IPython itself rebinds while it runs a cell (not tampering).
IPYTHON_BUILTINS = ("exit", "quit", "get_ipython", "display", "__IPYTHON__", "_", "__", "___", "help",
                    "copyright", "credits", "license", "__build_class__", "__debug__", "__loader__", "__spec__")
SHELL_NAMES = ("run_cell", "run_cell_async", "_run_cell", "run_ast_nodes", "run_code", "showtraceback",
               "_showtraceback", "showsyntaxerror", "transform_cell", "transform_ast", "should_run_async",
               "excepthook", "set_custom_exc", "CustomTB", "custom_exceptions", "InteractiveTB", "SyntaxTB",
               "displayhook", "display_pub", "compile", "input_transformer_manager", "ast_transformers",
               "user_ns", "user_module", "__getattribute__", "__getattr__", "__setattr__", "__dict__")
KERNEL_NAMES = ("do_execute", "execute_request", "dispatch_shell", "process_one", "send_response",
                "_publish_status", "_publish_execute_input", "finish_metadata", "init_metadata", "shell_handlers",
                "session", "iopub_socket", "shell", "__getattribute__", "__getattr__", "__setattr__", "__dict__")
SESSION_NAMES = ("send", "serialize", "sign", "msg", "__getattribute__", "__setattr__")
SYS_NAMES = ("excepthook", "displayhook", "unraisablehook", "breakpointhook", "audit", "exc_info", "stdout",
             "stderr")
_DATA_TYPES = (int, float, complex, str, bytes, bool, type(None), tuple, list, dict, set, frozenset)


def _main() -> None:
    """Run this file and sealed.py again in a private namespace, boot, and hand over to ipykernel."""
    import builtins
    import os
    import sys

    here = os.path.dirname(os.path.abspath(__file__))
    if sys.path and os.path.abspath(sys.path[0] or ".") == here:
        del sys.path[0]  # the run folder (sockets, channel) is not a place to import from
    private = {"__builtins__": dict(builtins.__dict__), "__name__": "infopt_kernel_boot"}
    for name in ("sealed.py", "kernel_boot.py"):
        path = os.path.join(here, name)
        with open(path, encoding="utf-8") as handle:
            exec(compile(handle.read(), path, "exec"), private)
    private["boot"](here)


def boot(here: str) -> None:
    """Read the key, open the channel, start the signer, install the audit hook (kernel side, before any cell)."""
    import _thread
    import os
    import sys

    key_path = os.path.join(here, KEY_FILE)
    with open(key_path, "rb") as handle:
        key = handle.read()
    os.unlink(key_path)
    channel = os.path.join(here, CHANNEL_FILE)
    fd = os.open(channel, os.O_WRONLY)
    os.unlink(channel)
    _undumpable()
    shared = {"queue": [], "wake": _thread.allocate_lock(), "signer": [None], "armed": [False], "testing": [False]}
    shared["wake"].acquire()
    started = _thread.allocate_lock()
    started.acquire()
    _thread.start_new_thread(_signer, (key, fd, shared, started))
    del key
    started.acquire()
    sys.addaudithook(_dispatcher(shared))


def _undumpable() -> None:
    """prctl(PR_SET_DUMPABLE, 0): no other process of this uid may ptrace the kernel or read its memory."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)
    except (OSError, AttributeError):
        pass


# --- the audit hook (every thread, every event: must be cheap and must never call student code) ---------------
def _dispatcher(shared: dict):
    """The audit hook: forwards `infopt.*` events to the signer and turns watched events into incidents."""
    import _contextvars
    import _thread
    import os
    import pathlib
    import posix
    import sys

    queue, wake, signer, armed, testing = (shared["queue"], shared["wake"], shared["signer"], shared["armed"],
                                           shared["testing"])
    getframe, get_ident, allocate, getcwd = sys._getframe, _thread.get_ident, _thread.allocate_lock, posix.getcwd
    copy_context = _contextvars.copy_context
    blocked = frozenset({"gc.get_objects", "gc.get_referrers", "gc.get_referents", "sys._current_frames",
                         "sys.addaudithook"})
    while_testing = frozenset({"sys.settrace", "sys.setprofile"})  # a trace function could move a running test
    paths = frozenset({"open", "os.mkdir", "os.rename", "os.symlink", "os.link", "shutil.copyfile",
                       "shutil.copytree", "shutil.move"})
    writing = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC
    fspath, path_types = posix.fspath, (pathlib.PosixPath, pathlib.PurePosixPath)

    def ask(kind: str, frame, args, context=None) -> object:
        done = allocate()
        done.acquire()
        slot = [kind, get_ident(), frame, args, done, None, context]
        queue.append(slot)
        try:
            wake.release()
        except RuntimeError:  # already released: the signer will drain this request with the others
            pass
        done.acquire()
        return slot[5]

    def as_text(path) -> str | None:
        if type(path) in path_types:
            path = fspath(path)
        if type(path) is bytes:
            path = path.decode("utf-8", "surrogateescape")
        if type(path) is not str:
            return None
        return path if path.startswith("/") else getcwd() + "/" + path

    def dispatch(event: str, args: tuple) -> None:
        if event.startswith("infopt."):
            if get_ident() != signer[0]:  # a test runs with the notebook's context variables (numpy errstate)
                answer = ask(event, getframe(1), args, copy_context() if event == "infopt.run" else None)
                if answer is not None:
                    raise AssertionError(answer)
            return
        if not armed[0] or (event not in blocked and event not in paths and event not in while_testing
                            and event != "ctypes.dlsym"):
            return
        if get_ident() == signer[0]:
            return
        if event in while_testing:
            if not testing[0]:
                return  # cProfile or a debugger between tests cannot reach a test's thread
            ask("incident", None, ("blocked", event + "() was called while a test ran"))
            raise RuntimeError(f"the grading kernel does not allow {event}() while a test runs")
        if event in blocked:
            ask("incident", None, ("blocked", event + "() was called; the grading kernel does not allow it"))
            raise RuntimeError(f"the grading kernel does not allow {event}()")
        if event == "ctypes.dlsym":
            name = args[1] if len(args) > 1 else None
            if type(name) is str and (name.startswith("Py") or name.startswith("_Py")):
                ask("incident", None, ("blocked", "ctypes looked up the interpreter symbol " + name))
                raise RuntimeError("the grading kernel does not allow ctypes access to " + name)
            return
        if event == "open":
            flags = args[2] if len(args) > 2 else 0
            path = as_text(args[0]) if args else None
            if path is None:
                return
            if path.startswith("/proc/") and path.endswith("/mem"):
                ask("incident", None, ("blocked", "opened " + path + " (another process's memory)"))
                raise PermissionError("the grading kernel does not allow reading " + path)
            if type(flags) is not int or not flags & writing:
                return
            targets = (path,)
        else:
            targets = tuple(t for t in (as_text(a) for a in args[:2]) if t is not None)
        for path in targets:
            if startup_file(path):
                ask("incident", None, ("startup", event + " " + path[-200:]))
                return

    return dispatch


def startup_file(path: str) -> bool:
    """True for a file a Python, IPython or Jupyter start would read (a POSIX path, absolute or from the home): IPython
    startup scripts, profile config and extensions, Jupyter and ~/.config/ipython config, the user site-packages,
    usercustomize.py / sitecustomize.py and .pth files. Files IPython writes itself (startup/README) are not."""
    parts = [part for part in path.split("/") if part and part != "."]
    if not parts:
        return False
    name = parts[-1]
    if name in ("usercustomize.py", "sitecustomize.py") or name.endswith(".pth"):
        return True
    for at, part in enumerate(parts[:-1]):
        rest = parts[at + 1:]
        if part == ".ipython" and rest[0].startswith("profile_"):
            if len(rest) >= 3 and rest[1] == "startup":
                return not name.startswith("README")
            if len(rest) == 2 and (name.endswith("_config.py") or name.endswith("_config.json")):
                return True
        if part == ".ipython" and rest[0] in ("extensions", "nbextensions") and len(rest) >= 2:
            return True
        if (part == ".jupyter" and "runtime" not in rest) or (part == ".config" and rest[0] == "ipython"):
            return True
        if part == ".local" and len(rest) >= 3 and rest[0] == "lib" and rest[1].startswith("python"):
            return True
    return False


# --- the signer thread: the only holder of the key -------------------------------------------------------------
def _signer(key: bytes, fd: int, shared: dict, started) -> None:
    """Serve the dispatcher's requests: run sealed tests, verify their reports, write signed records.

    Only C functions, this file's own functions (private builtins) and objects of exact built-in types are called
    here: no student code can run on this thread, so the key on its stack stays out of reach."""
    import _contextvars
    import _json
    import _thread
    import marshal
    import os
    import sys
    import time
    import types

    shared["signer"][0] = _thread.get_ident()
    queue, wake, armed, testing = shared["queue"], shared["wake"], shared["armed"], shared["testing"]
    started.release()
    _, mac_key = subkeys(key)
    quote, frame_type, code_type = _json.encode_basestring_ascii, types.FrameType, types.CodeType
    context_type = _contextvars.Context
    start_thread, loads, write, pid = _thread.start_new_thread, marshal.loads, os.write, os.getpid()
    clock = time.monotonic
    lines = {"ok": OK_LINE, "err": ERR_LINE, "end": END_LINE}
    state = {"rseq": 0, "next": 0, "current": None, "snapshot": None, "detail": None}
    consts = {AUDIT: sys.audit, EXC_INFO: sys.exc_info}

    def emit(kind: str, fields: tuple) -> None:
        state["rseq"] += 1
        parts = ['"r":' + str(state["rseq"]), '"k":' + quote(kind), '"pid":' + str(pid)]
        for name, value in fields:
            parts.append(quote(name) + ":" + (quote(value) if type(value) is str else str(value)))
        data = sign_line(mac_key, "{" + ",".join(parts) + "}").encode("utf-8")
        try:
            while data:
                data = data[write(fd, data):]
        except OSError:
            pass

    def finish(req, answer=None) -> None:
        req[5] = answer
        req[4].release()

    def run(req) -> None:
        args, frame = req[3], req[2]
        payload = unseal(key, args[0]) if len(args) == 1 else None
        try:
            payload = loads(payload) if payload is not None else None
        except (ValueError, EOFError, TypeError):
            payload = None
        if type(payload) is not dict:
            emit("incident", (("what", "forged"), ("text", "a trigger the grader did not seal")))
            return finish(req, "rejected")
        seq = payload.get("seq")
        if seq != state["next"]:
            emit("incident", (("what", "replay"), ("text", f"trigger {seq} arrived when {state['next']} was due")))
            return finish(req, "rejected")
        state["next"] += 1
        if payload.get("kind") == "hello":
            began = clock()
            state["snapshot"] = _Snapshot(payload)
            state["detail"] = consts[DETAIL] = _detail_function(sys.audit)
            state["snapshot"].detail_code = state["detail"].__code__
            armed[0] = True
            emit("hello", (("seq", seq), ("watched", state["snapshot"].size()),
                           ("ms", int(1000 * (clock() - began)))))
            return finish(req)
        if state["current"] is not None:
            emit("incident", (("what", "overlap"), ("text", f"trigger {seq} while another test was running")))
            return finish(req, "rejected")
        ns = frame.f_globals if type(frame) is frame_type else None
        code = loads(payload["code"])
        if type(ns) is not dict or type(code) is not code_type or state["snapshot"] is None:
            emit("incident", (("what", "namespace"), ("text", "the trigger did not run in a plain namespace")))
            return finish(req, "rejected")
        code = code.replace(co_consts=tuple(consts.get(c, c) if type(c) is str else c for c in code.co_consts))
        current = {"seq": seq, "cell": payload.get("cell", -1), "nonce": payload.get("nonce"), "code": code,
                   "ns": ns, "verdict": None, "trigger": req, "ident": None,
                   "trusted": state["snapshot"].resolve(payload.get("trusted", ()))}
        state["current"] = current
        testing[0] = True
        context = req[6]
        current["ident"] = (start_thread(context.run, (exec, code, ns)) if type(context) is context_type
                            else start_thread(exec, (code, ns)))
        emit("start", (("seq", seq), ("cell", current["cell"])))

    def verdict(current: dict, status: str) -> None:
        # The names a test imported vouch only for a pass: a test that failed before its own import line (an
        # exercise that raised) left them unbound, and a failure earns nothing a forged binding could have given.
        trusted = current["trusted"] if status == "ok" else []
        void, changed = state["snapshot"].compare(current["ns"], trusted)
        emit("verdict", (("seq", current["seq"]), ("cell", current["cell"]), ("status", status),
                         ("tamper", void), ("changed", changed)))

    def report(req) -> None:
        current, frame, args = state["current"], req[2], req[3]
        what = args[1] if len(args) == 2 else None
        problem = ""
        if current is None:
            problem = "a test report while no test was running"
        elif type(what) is not str or what not in lines or type(args[0]) is not str or args[0] != current["nonce"]:
            problem = "a test report with the wrong token"
        elif req[1] != current["ident"]:
            problem = "a test report from another thread"
        elif type(frame) is not frame_type or frame.f_code is not current["code"] or frame.f_back is not None:
            problem = "a test report from code other than the test"
        elif frame.f_lineno != lines[what]:
            problem = "a test report from the wrong place in the test"
        if problem:
            emit("incident", (("what", "forged"), ("text", problem)))
            return finish(req)
        if what == "end":
            if current["verdict"] is None:
                verdict(current, "none")
            emit("end", (("seq", current["seq"]), ("cell", current["cell"])))
            state["current"] = None
            testing[0] = False
            finish(current["trigger"], None if current["verdict"] == "ok" else "the test failed")
        elif current["verdict"] is None:
            current["verdict"] = what
            verdict(current, what)
        finish(req)

    def detail(req) -> None:
        current, frame, args = state["current"], req[2], req[3]
        ok = (current is not None and len(args) == 2 and type(args[1]) is str and type(args[0]) is str
              and args[0] == current["nonce"] and req[1] == current["ident"] and type(frame) is frame_type
              and frame.f_code is state["snapshot"].detail_code and frame.f_back is not None
              and frame.f_back.f_code is current["code"] and frame.f_back.f_back is None)
        if ok:
            emit("detail", (("seq", current["seq"]), ("text", args[1][:2000])))
        else:
            emit("incident", (("what", "forged"), ("text", "error details from code other than the test")))
        finish(req)

    handlers = {"infopt.run": run, "infopt.report": report, "infopt.detail": detail}
    while True:
        wake.acquire()
        while queue:
            req = queue.pop(0)
            try:
                if req[0] == "incident":
                    emit("incident", (("what", req[3][0]), ("text", req[3][1])))
                    finish(req)
                elif req[0] in handlers:
                    handlers[req[0]](req)
                else:
                    emit("incident", (("what", "forged"), ("text", "an unknown grader event " + req[0][:40])))
                    finish(req)
            except BaseException as err:  # noqa: BLE001 (a signer bug must not hang the kernel: report it)
                emit("incident", (("what", "signer"), ("text", "grader error in the signer: " + type(err).__name__)))
                if req[4].locked():
                    finish(req, "grader error")


_MISSING = object()
_IMMUTABLE_TYPE = 1 << 8  # Py_TPFLAGS_IMMUTABLETYPE: built-in and extension types nobody can patch


class _Snapshot:
    """What the checking and execution machinery were at hello (before any student code), and what changed since.

    `void` entries (builtins, numpy and numpy.testing, math, re, infopt.grading) are the machinery a test's verdict
    relies on: a change there voids the verdict. `flag` entries (the rest of infopt, IPython's and ipykernel's
    execution path, sys hooks) only flag the submission: the verdict does not pass through them."""

    def __init__(self, payload: dict) -> None:
        import builtins
        import sys

        self.builtins, self.modules, self.entries, self.lists = builtins, {}, [], []
        self._watch("void", "builtins", builtins.__dict__, [n for n in builtins.__dict__ if n not in IPYTHON_BUILTINS])
        self._watch("flag", "sys", sys.__dict__, SYS_NAMES)
        for group in ("void", "flag"):
            for name in payload.get(group, ()):
                try:
                    __import__(name)
                except Exception:  # noqa: BLE001 (a module this machine or unit does not have)
                    pass
        loaded = dict(sys.modules)
        for name in payload.get("void", ()):
            if name in loaded:
                self._watch_module("void", name, loaded[name])
        for name, module in loaded.items():
            library = name == "infopt" or (name.startswith("infopt.") and not name.startswith("infopt.grading"))
            if library and name not in self.modules and type(module) is type(sys):
                self._watch_module("flag", name, module)
        self._watch_ipython()
        import threading

        self._watch("flag", "threading", threading.__dict__, ("excepthook",))
        self.detail_code = None

    def size(self) -> int:
        return sum(len(names) for _, _, _, names in self.entries)

    def _watch(self, group: str, label: str, d, names) -> None:
        pairs = [(n, d.get(n, _MISSING)) for n in names]
        self.entries.append((group, label, d, pairs))
        for n, value in pairs:
            if type(value) is list:
                self.lists.append((group, label + "." + n, value, tuple(value)))

    def _watch_module(self, group: str, name: str, module) -> None:
        d = module.__dict__
        self.modules[name] = (module, dict(d))
        self._watch(group, name, d, [k for k, v in d.items() if type(k) is str and not isinstance(v, _DATA_TYPES)])
        for value in list(d.values()):
            if (isinstance(value, type) and not value.__flags__ & _IMMUTABLE_TYPE
                    and getattr(value, "__module__", None) == name):
                proxy = type.__dict__["__dict__"].__get__(value)
                self._watch(group, name + "." + value.__name__, proxy,
                            [k for k, v in proxy.items() if not isinstance(v, _DATA_TYPES) or k == "__eq__"])

    def _watch_object(self, label: str, obj, names) -> None:
        try:
            inst = object.__getattribute__(obj, "__dict__")
        except AttributeError:
            inst = None
        if type(inst) is dict:
            self._watch("flag", label, inst, names)
            if type(inst.get("_trait_values")) is dict:
                self._watch("flag", label, inst["_trait_values"], names)
        for cls in type.__dict__["__mro__"].__get__(type(obj)):
            if cls is not object:
                self._watch("flag", label, type.__dict__["__dict__"].__get__(cls), names)

    def _watch_ipython(self) -> None:
        try:
            from IPython.core.getipython import get_ipython
        except ImportError:
            return
        shell = get_ipython()
        if shell is None:
            return
        try:  # tracebacks without frames: cheap to format, and no frame of the tests in any output
            shell.InteractiveTB.set_mode(mode="Minimal")
        except Exception:  # noqa: BLE001 (an IPython without modes: tracebacks stay as they are)
            pass
        self._watch_object("IPython shell", shell, SHELL_NAMES)
        manager = getattr(shell, "input_transformer_manager", None)
        for name in ("cleanup_transforms", "line_transforms", "token_transformers"):
            value = getattr(manager, name, None)
            if type(value) is list:
                self.lists.append(("flag", "IPython input transformers (" + name + ")", value, tuple(value)))
        kernel = getattr(shell, "kernel", None)
        if kernel is None:
            return
        self._watch_object("ipykernel", kernel, KERNEL_NAMES)
        handlers = getattr(kernel, "shell_handlers", None)
        if type(handlers) is dict:
            self._watch("flag", "ipykernel.shell_handlers", handlers, list(handlers))
        session = getattr(kernel, "session", None)
        if session is not None:
            self._watch_object("ipykernel.session", session, SESSION_NAMES)

    def resolve(self, names) -> list:
        """[(name, object)] for the (name, module, attribute) bindings a test trusts, from the hello copies."""
        found = []
        for item in names if type(names) is list else ():
            if type(item) is not tuple or len(item) != 3:
                continue
            name, module, attr = item
            entry = self.modules.get(module)
            if entry is not None:
                value = entry[0] if not attr else entry[1].get(attr, _MISSING)
                if value is not _MISSING:
                    found.append((name, value))
        return found

    def compare(self, ns: dict, trusted: list) -> tuple[str, str]:
        """(changes that void the verdict, changes that only flag) since hello, as comma-separated labels."""
        out = {"void": [], "flag": []}
        clean: dict[int, bool] = {}
        for group, label, d, pairs in self.entries:
            key = id(d)
            if key not in clean:
                clean[key] = _str_keys(d)
            if not clean[key]:
                out[group].append(label + " (a non-string key was planted)")
                continue
            for name, value in pairs:
                if not _same(d.get(name, _MISSING), value):
                    out[group].append(label + "." + name)
        for group, label, items, before in self.lists:
            if len(items) != len(before) or any(a is not b for a, b in zip(items, before)):
                out[group].append(label)
        if _str_keys(ns):
            if ns.get("__builtins__", self.builtins) is not self.builtins:
                out["void"].append("the notebook's __builtins__")
            for name, expected in trusted:
                if ns.get(name, _MISSING) is not expected:
                    out["void"].append(name + " (used by this test)")
        else:
            out["void"].append("the notebook's namespace (a non-string key was planted)")
        return _labels(out["void"]), _labels(out["flag"])


def _str_keys(d) -> bool:
    """True when every key of `d` is an exact str (then lookups by str never run a foreign __eq__)."""
    for k in d:
        if type(k) is not str:
            return False
    return True


_METHOD = type(_str_keys.__get__(0))


def _same(a, b) -> bool:
    """Identity, or the same bound method made again (IPython binds sys.excepthook afresh for each cell)."""
    if a is b:
        return True
    return type(a) is _METHOD and type(b) is _METHOD and a.__func__ is b.__func__ and a.__self__ is b.__self__


def _labels(found: list) -> str:
    seen, out = set(), []
    for label in found:
        if label not in seen:
            seen.add(label)
            out.append(label)
    return ", ".join(out[:12]) + (f" and {len(out) - 12} more" if len(out) > 12 else "")


_DETAIL_SOURCE = """
def detail(exc, nonce):
    import json, linecache
    kind, err, tb = exc
    try:
        name = type(err).__name__
    except Exception:
        name = "Error"
    try:
        message = str(err)
    except Exception:
        message = "(the error's message could not be printed)"
    line, frames = 0, []
    if tb is not None:
        line = tb.tb_lineno
        tb = tb.tb_next
    while tb is not None and len(frames) < 30:
        code = tb.tb_frame.f_code
        try:
            text = linecache.getline(code.co_filename, tb.tb_lineno).strip()
        except Exception:
            text = ""
        frames.append([str(code.co_filename)[-200:], int(tb.tb_lineno), str(code.co_name)[:80], str(text)[:300]])
        tb = tb.tb_next
    text = json.dumps({"ename": str(name)[:200], "evalue": message[:1200], "line": line, "frames": frames[-12:]})
    _audit("infopt.detail", nonce, text[:2000])
"""


def _detail_function(audit):
    """The function the wrapper calls after an error: error name, message and frames, as text.

    It runs on the test thread after the verdict is signed, with no secret on its stack (student code may run inside
    str(err)), in a namespace of its own with its own builtins copy."""
    import builtins

    namespace = {"__builtins__": dict(builtins.__dict__), "_audit": audit}
    exec(compile(_DETAIL_SOURCE, "<grading-detail>", "exec"), namespace)
    return namespace["detail"]


if __name__ == "__main__":
    _main()
    from ipykernel import kernelapp

    kernelapp.launch_new_instance()
