"""The clean room (infopt.grading.clean_room, autograder.clean_rooms): where a guarded call runs at grading.

What must hold: a room loads only the student's cells (definitions of the others, never a test); the library's
guarded objects are gone from it before those cells load (every target any unit guards, checked by a weak
reference); the room refuses to read their files, start programs or load native code; and through the real zygote
and sandbox, a function that puts the library's answer back during its own call fails, an honest one passes with
its objects' identity kept, and one that cannot run outside the kernel is graded there and flagged.
"""
from __future__ import annotations

import ast
import functools
import re
import socket
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from autograder.clean_rooms import CleanRooms, definitions, imported_modules, room_sources
from autograder.sandbox import Limits
from infopt.grading.forbid import ForbiddenCall, expand_targets
from infopt.grading.remote import Channel, serve_on

REPO = Path(__file__).resolve().parent.parent
TARGET = re.compile(r"infopt(\.\w+)*:([\w.]+|\*)")
GUARD = {"targets": ["infopt.ir.graph:Graph.toposort"], "exercise": "the topological order", "why": ""}


@functools.lru_cache(maxsize=None)
def guarded_targets() -> dict[str, list[str]]:
    """{unit: the library targets its hidden tests guard}, read from the instructor's sources."""
    found: dict[str, list[str]] = {}
    for path in sorted((REPO / "solutions").glob("*/*.py")):
        if path.stem != path.parent.name:
            continue
        names = {node.value for node in ast.walk(ast.parse(path.read_text()))
                 if isinstance(node, ast.Constant) and isinstance(node.value, str) and TARGET.fullmatch(node.value)}
        if names:
            found[path.parent.name] = sorted(expand_targets(sorted(names)))   # "module:*": each function
    return found


def run_python(code: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=REPO, capture_output=True, text=True,
                          timeout=timeout)


# ----- what a room loads -----------------------------------------------------------------------------------------
def test_definitions_keep_what_defines_names_and_nothing_that_runs():
    source = textwrap.dedent("""
        import numpy as np
        from infopt.ir.graph import Graph
        LIMIT = 2 ** 10
        SIZES = (1, 2, -3)
        F32 = np.float32
        g = build_graph()
        print("a lesson computation")
        def helper(x):
            return x + 1
        class Box:
            pass
        for i in range(3):
            pass
        %matplotlib inline
    """)
    assert definitions(source) == ""   # the magic: not Python, nothing kept
    kept = definitions(source.replace("%matplotlib inline", ""))
    for line in ("import numpy as np", "from infopt.ir.graph import Graph", "LIMIT = 2 ** 10", "SIZES = (1, 2, -3)",
                 "F32 = np.float32", "def helper(x):", "class Box:"):
        assert line in kept
    for line in ("build_graph", "print", "for i"):
        assert line not in kept


def test_room_sources_are_the_solution_cells_up_to_the_exercise_and_the_definitions_before_it():
    cells = [{"kind": "code", "source": "import numpy as np\nx = np.ones(3)\n"},
             {"kind": "markdown", "source": "# text"},
             {"kind": "solution", "grade_id": "first", "source": "def first():\n    return 1\n"},
             {"kind": "test", "grade_id": "first_test",
              "source": "import os\nfrom infopt.mlir.npu.probes import build_matmul_op\nassert first() == 1\n"},
             {"kind": "code", "source": "from math import pi\nprint(pi)\n"},
             {"kind": "solution", "grade_id": "second", "source": "def second():\n    return first() + 1\n"},
             {"kind": "solution", "grade_id": "third", "source": "def third():\n    return 3\n"}]
    assert room_sources(cells, "first") == ["import numpy as np", cells[2]["source"]]
    assert room_sources(cells, "second") == ["import numpy as np", cells[2]["source"], "from math import pi",
                                             cells[5]["source"]]
    # of a test cell only the library: its helpers must be loaded (and sealed) before the student's cells are
    assert imported_modules(cells) == ["numpy", "infopt.mlir.npu.probes", "math"]


# ----- what a room removes and refuses -----------------------------------------------------------------------------
@pytest.mark.parametrize("unit", sorted(guarded_targets()))
def test_every_guarded_library_object_is_gone_from_the_room(unit):
    targets = [t for t in guarded_targets()[unit] if t.startswith("infopt.")]
    out = run_python(f"""
        import importlib, os, sys, weakref
        from infopt.grading.clean_room import isolate
        from infopt.grading.forbid import resolve_target
        targets = {targets!r}
        for t in targets:
            importlib.import_module(t.partition(":")[0])
        for t in targets:
            pid = os.fork()
            if pid == 0:
                ref = weakref.ref(resolve_target(t)[2])
                problems = isolate([{{"targets": [t], "exercise": "x"}}])
                wire = resolve_target(t)[2]
                print(t, "gone" if ref() is None and not problems else f"ALIVE {{problems}}",
                      type(wire).__name__, flush=True)
                os._exit(0)
            os.waitpid(pid, 0)
    """)
    lines = out.stdout.splitlines()
    assert len(lines) == len(targets), out.stderr[-2000:]
    assert all(line.endswith("gone Tripwire") for line in lines), lines


def test_an_original_the_room_cannot_reach_is_reported():
    out = run_python("""
        import sys, types
        import infopt.passes.dce as dce
        from infopt.grading.clean_room import isolate
        holder = types.ModuleType("somewhere_else")
        holder.kept = frozenset({dce.live_nodes})   # a frozenset: nothing the room knows how to rewrite
        sys.modules["somewhere_else"] = holder
        print(isolate([{"targets": ["infopt.passes.dce:live_nodes"], "exercise": "x"}]))
    """)
    assert "infopt.passes.dce:live_nodes is still reachable in the clean room (held by frozenset)" in out.stdout, (
        out.stdout + out.stderr[-2000:])


def test_the_room_refuses_the_library_files_programs_and_native_code():
    out = run_python("""
        import ctypes, importlib, inspect, os, subprocess, sys
        import infopt.passes.dce as dce
        import infopt.passes.cse as cse
        from infopt.grading.clean_room import RoomRefused, blocked_files, isolate, lock_down
        guards = [{"targets": ["infopt.passes.dce:live_nodes"], "exercise": "x"}]
        isolate(guards)
        files = blocked_files(guards)
        assert os.path.realpath(dce.__file__) in files, files
        lock_down(files)
        def refused(what, fn):
            try:
                fn()
            except (RoomRefused, PermissionError, ImportError, OSError) as err:
                print(what, "refused", type(err).__name__)
            else:
                print(what, "ALLOWED")
        refused("open", lambda: open(dce.__file__).read())
        refused("os.open", lambda: os.open(dce.__file__, os.O_RDONLY))
        os.chdir(os.path.dirname(dce.__file__))
        refused("relative", lambda: open(os.path.basename(dce.__file__)).read())
        folder = os.open(os.path.dirname(dce.__file__), os.O_RDONLY)
        os.chdir("/")
        refused("dir_fd", lambda: os.open("./" + os.path.basename(dce.__file__), os.O_RDONLY, dir_fd=folder))
        refused("symlink", lambda: os.symlink(dce.__file__, "/tmp/innocent.txt"))
        refused("reload", lambda: importlib.reload(dce))
        refused("getsource", lambda: inspect.getsource(dce))
        refused("program", lambda: subprocess.run(["cat", dce.__file__]))
        refused("system", lambda: os.system("true"))
        refused("dlopen", lambda: ctypes.CDLL(None))
        refused("libc", lambda: ctypes.CDLL("libc.so.6"))
        refused("dlsym", lambda: ctypes.pythonapi.open)
        refused("memory", lambda: open("/proc/self/mem", "rb"))
        refused("raw", lambda: ctypes.string_at(id(dce), 8))
        print("other module", len(open(cse.__file__).read()) > 0)
        print("the tripwire", type(dce.live_nodes).__name__)
    """)
    lines = out.stdout.splitlines()
    assert len(lines) == 16, out.stdout + out.stderr[-2000:]
    assert all(line.split()[1] == "refused" for line in lines[:14]), lines
    assert lines[14:] == ["other module True", "the tripwire Tripwire"]


def test_where_the_kernel_has_landlock_no_path_or_handle_reads_the_removed_files():
    out = run_python("""
        import os
        import infopt.passes.dce as dce
        from infopt.grading.clean_room import blocked_files, forbid_reading
        files = blocked_files([{"targets": ["infopt.passes.dce:live_nodes"]}])
        if not forbid_reading(files):
            print("no landlock")
            raise SystemExit
        folder = os.open(os.path.dirname(dce.__file__), os.O_RDONLY)
        for how, fn in (("path", lambda: open(dce.__file__).read()),
                        ("dir_fd", lambda: os.open("./dce.py", os.O_RDONLY, dir_fd=folder)),
                        ("proc", lambda: open(f"/proc/self/fd/{folder}/dce.py").read())):
            try:
                fn()
                print(how, "ALLOWED")
            except PermissionError:
                print(how, "refused")
        print("neighbour", len(open(os.path.join(os.path.dirname(dce.__file__), "cse.py")).read()) > 0)
        print("elsewhere", len(open(os.__file__).read()) > 0)
    """)
    if out.stdout.strip() == "no landlock":
        pytest.skip("this kernel has no Landlock: the audit hook alone refuses (tested above)")
    assert out.stdout.split("\n")[:5] == ["path refused", "dir_fd refused", "proc refused", "neighbour True",
                                          "elsewhere True"], out.stdout + out.stderr[-2000:]


# ----- through the zygote, in its sandbox --------------------------------------------------------------------------
HONEST = '''
def topo_order(graph):
    done, order = set(), []
    def visit(node):
        if id(node) in done:
            return
        done.add(id(node))
        for value in node.inputs:
            producer = graph.producers().get(value)
            if producer is not None:
                visit(producer)
        order.append(node)
    for node in graph.nodes:
        visit(node)
    return order
'''
RESTORE = '''
import infopt.ir.graph as _graph_module
_kept = [vars(_graph_module.Graph)["toposort"]]

def topo_order(graph):
    armed = vars(_graph_module.Graph)["toposort"]
    type.__setattr__(_graph_module.Graph, "toposort", _kept[0])
    try:
        return list(graph.toposort())
    finally:
        type.__setattr__(_graph_module.Graph, "toposort", armed)
'''


@pytest.fixture()
def grading(tmp_path):
    """A student's clean rooms (real zygote and sandbox), and a kernel played by a thread of this process."""
    made: list = []

    def start(source: str, kernel_ns: dict | None = None) -> Channel:
        cells = [{"kind": "code", "source": "import numpy as np\nfrom infopt.ir.graph import Graph\n"},
                 {"kind": "solution", "grade_id": "topo", "source": source}]
        rooms = CleanRooms(Limits(memory_mb=1024, pids=64, file_mb=16, cpu_s=60, wall_s=60.0, cell_s=30.0),
                           cells, tmp_path)
        ours, kernel = socket.socketpair()
        namespace = dict(kernel_ns or {})
        exec(compile(source, "<kernel cell>", "exec"), namespace)  # noqa: S102 (the test's own fixture code)
        thread = threading.Thread(target=serve_on, args=(kernel, namespace), daemon=True)
        thread.start()
        channel = Channel(ours, rooms.session("topo"))
        made.append((rooms, channel, thread))
        return channel

    yield start
    for rooms, channel, thread in made:
        channel.done()
        thread.join(timeout=10)
        rooms.close()


def _graph():
    from infopt.ir.testing import random_graph

    return random_graph(3, n_nodes=10)


def test_an_honest_guarded_call_runs_in_the_room_and_keeps_identity(grading):
    channel = grading(HONEST)
    graph = _graph()
    order = channel.call("topo_order", (graph,), {}, forbid=GUARD)
    assert sorted(map(id, order)) == sorted(map(id, graph.nodes))   # the judge's own node objects came back
    position = {id(n): i for i, n in enumerate(order)}
    producers = graph.producers()
    assert all(position[id(producers[v])] < position[id(n)] for n in graph.nodes for v in n.inputs
               if v in producers)
    assert channel.calls == 1 and not channel.flags


def test_putting_the_library_back_during_the_call_fails_in_the_room(grading):
    channel = grading(RESTORE)
    graph = _graph()
    with pytest.raises(ForbiddenCall, match="write the topological order yourself"):
        channel.call("topo_order", (graph,), {}, forbid=GUARD)
    # the same function in the kernel, unguarded there, answers (what the room is for)
    assert sorted(map(id, channel.call("topo_order", (graph,), {}))) == sorted(map(id, graph.nodes))


REPLACE_HELPER = HONEST + '''
import infopt.ir.graph as _library
if __name__ == "__main__":   # in the room (the fixture's kernel is a thread of this test process)
    _library.Graph = type("Graph", (), {})
'''


def test_a_library_helper_the_student_replaced_is_put_back_and_flagged(grading):
    """The room seals what the library binds before the student's cells load: the judge's `via` helper runs as the
    library wrote it, and the flag names what was replaced."""
    channel = grading(REPLACE_HELPER)
    graph = _graph()
    order = channel.call("topo_order", (graph,), {}, forbid=GUARD)
    assert sorted(map(id, order)) == sorted(map(id, graph.nodes))
    assert len(channel.flags) == 1 and "infopt.ir.graph.Graph" in channel.flags[0], channel.flags


def test_the_seal_puts_back_rebound_names_and_swapped_code_and_names_them():
    from infopt.grading.clean_room import LibrarySeal
    from infopt.mlir.npu import probes

    real, code = probes.build_matmul_op, probes.parse_with_op.__code__
    seal = LibrarySeal()
    assert seal.restore() == []
    try:
        probes.build_matmul_op = lambda *a, **k: {}
        probes.parse_with_op.__code__ = (lambda op_class, text: {"error": None, "found": 1}).__code__
        changed = seal.restore()
    finally:
        probes.build_matmul_op, probes.parse_with_op.__code__ = real, code
    assert "infopt.mlir.npu.probes.build_matmul_op" in changed
    assert "infopt.mlir.npu.probes.parse_with_op (its code or defaults)" in changed
    assert probes.build_matmul_op is real and probes.parse_with_op.__code__ is code


def test_a_function_only_the_kernel_can_run_is_graded_there_and_flagged(grading):
    channel = grading(HONEST.replace("    done, order", "    get_ipython\n    done, order"),
                      kernel_ns={"get_ipython": lambda: None})
    graph = _graph()
    order = channel.call("topo_order", (graph,), {}, forbid=GUARD)
    assert sorted(map(id, order)) == sorted(map(id, graph.nodes))
    assert len(channel.flags) == 1 and "clean room" in channel.flags[0] and "get_ipython" in channel.flags[0]


def test_the_judge_runs_compiled_kernels_in_a_bare_room(grading, monkeypatch):
    import numpy as np

    from infopt.codegen.compiled import compile_kernel
    from infopt.codegen.lower_elementwise import softmax_kernel
    from infopt.grading import guards
    from infopt.grading.errors import HarnessError

    channel = grading(HONEST)
    monkeypatch.setattr(guards, "IN_JUDGE", True)   # this process plays the judge child: it may not JIT
    with pytest.raises(HarnessError, match="in the judge"):
        compile_kernel(softmax_kernel("softmax_rows", (3, 5)))
    monkeypatch.setattr(guards, "RUNNER", channel)
    x = np.random.default_rng(0).standard_normal((3, 5)).astype(np.float32)
    kernel = compile_kernel(softmax_kernel("softmax_rows", (3, 5)))
    (got,) = kernel.run(x)                          # compiled and run in the room; the output came back
    want = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(got, want / want.sum(axis=1, keepdims=True), rtol=1e-5)
    with pytest.raises(HarnessError, match="does not JIT"):
        kernel.optimized_ir
    assert not channel.flags and channel.calls == 1


def test_rooms_cannot_be_traced_by_other_processes_of_their_uid():
    out = run_python("""
        import ctypes
        from infopt.grading.clean_room import _untraceable
        libc = ctypes.CDLL(None)
        before = libc.prctl(3, 0, 0, 0, 0)   # PR_GET_DUMPABLE
        _untraceable()
        print(before, libc.prctl(3, 0, 0, 0, 0))
    """)
    assert out.stdout.split() == ["1", "0"], out.stderr[-2000:]


def test_a_zygote_that_died_is_started_again_and_then_given_up(tmp_path):
    rooms = CleanRooms(Limits(memory_mb=512, pids=32, file_mb=16, cpu_s=30, wall_s=30.0, cell_s=10.0),
                       [{"kind": "solution", "grade_id": "topo", "source": HONEST}], tmp_path)
    try:
        for restart in range(1, CleanRooms.RESTARTS + 1):
            rooms.proc.kill()
            rooms.proc.wait()
            sock = rooms.session("topo")
            assert sock is not None and rooms.restarts == restart
            channel = Channel(socket.socket(), sock)
            graph = _graph()
            assert len(channel.call("topo_order", (graph,), {}, forbid=GUARD)) == len(graph.nodes)
            channel.done()
            sock.close()
        rooms.proc.kill()
        rooms.proc.wait()
        assert rooms.session("topo") is None   # given up: the executor flags the test
    finally:
        rooms.close()


def test_targets_are_imported_before_any_is_replaced():
    """A target whose module is not imported yet and whose import calls an earlier target (infopt.accel.lowering
    runs get_op at import): the room imports every target's module first, so the import runs the real function."""
    out = run_python("""
        import sys
        from infopt.grading.clean_room import isolate
        assert "infopt.accel.lowering" not in sys.modules
        print(isolate([{"targets": ["infopt.ir.ops.registry:get_op", "infopt.accel.lowering:conv_params"],
                        "exercise": "x"}]))
    """)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr[-2000:]
