"""What crosses between the judge and the student's kernel (infopt.grading.wire, infopt.grading.remote): plain data
and the library's own objects, identities and in-place changes kept, everything else refused with a message."""
import os
import socket
import struct
import threading

import numpy as np
import pytest

from infopt.grading import GradingError, HarnessError, call_student, check_raises, forbidding
from infopt.grading.forbid import ForbiddenCall
from infopt.grading import wire
from infopt.grading.remote import Channel, KernelGone, StudentFunction, serve
from infopt.ir.graph import Graph, Node
from infopt.ir.testing import graph_fingerprint
from infopt.ir.text import to_text


def roundtrip(value):
    encoder = wire.Encoder()
    body = wire.dump(encoder.encode(value), encoder.blobs)
    tree, blobs = wire.load(body[8:])
    return wire.Decoder(blobs).decode(tree)


def small_graph() -> Graph:
    g = Graph("g", inputs=["x"], outputs=["z"])
    g.nodes = [Node("Relu", ["x"], ["y"], name="a"), Node("Neg", ["y"], ["z"], name="b")]
    return g


@pytest.mark.parametrize("value", [
    None, True, 0, -(2**80), 1.5, -0.0, "ü\x00text", b"\x00\xff", (1, (2, "x")), [1, [2, [3]]], {1: "a", (2, 3): [4]},
    {1, 2, "x"}, frozenset({3}), 2 - 3j, slice(1, None, 2), range(2, 9, 3), np.float32(1.25), np.int64(-7),
    np.dtype("float16"), np.float64, bytearray(b"ab")])
def test_plain_values_cross_unchanged(value):
    out = roundtrip(value)
    assert type(out) is type(value) and out == value


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
def test_special_floats_cross(value):
    out = roundtrip(value)
    assert type(out) is float and (out == value or (out != out and value != value))


@pytest.mark.parametrize("array", [np.arange(12.0).reshape(3, 4), np.zeros((0, 5), np.int8), np.array(3.5),
                                   np.arange(6, dtype=">i4")[::2], np.array([True, False]),
                                   np.array([1 + 2j], np.complex64)])
def test_arrays_cross_with_shape_dtype_and_values(array):
    out = roundtrip(array)
    assert type(out) is np.ndarray and out.dtype == array.dtype and out.shape == array.shape
    np.testing.assert_array_equal(out, array)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "int64", "bool"])
def test_torch_tensors_cross_with_dtype_and_values(dtype):
    torch = pytest.importorskip("torch")
    t = (torch.arange(12, dtype=torch.float32).reshape(3, 4) - 5).to(getattr(torch, dtype))
    out, kind, device = roundtrip((t, t.dtype, torch.device("cpu")))
    assert type(out) is torch.Tensor and out.dtype == t.dtype and out.shape == t.shape and torch.equal(out, t)
    assert kind is t.dtype and device == torch.device("cpu")


def test_tensor_views_keep_their_strides_offset_and_shared_storage():
    torch = pytest.importorskip("torch")
    base = torch.arange(24.0).reshape(4, 6)
    t, s = base.t(), base[1:, 2:5]
    out_t, out_s = roundtrip((t, s))
    assert out_t.stride() == t.stride() and out_s.stride() == s.stride()
    assert out_s.storage_offset() == s.storage_offset() and torch.equal(out_t, t) and torch.equal(out_s, s)
    assert out_t.untyped_storage().data_ptr() == out_s.untyped_storage().data_ptr()   # one storage, as sent
    encoder = wire.Encoder()
    tree = encoder.encode(torch.zeros(1))
    tree["size"] = [2]   # a hostile reply: a view past the end of the storage it sent
    with pytest.raises(wire.WireError, match="past the end"):
        wire.Decoder(encoder.blobs).decode(tree)


def test_library_objects_are_rebuilt_from_the_library_with_shared_references_and_cycles():
    g = small_graph()
    shared = [1, 2]
    loop: list = [shared, shared]
    loop.append(loop)
    out_g, out_loop = roundtrip((g, loop))
    assert type(out_g) is Graph and to_text(out_g) == to_text(g)
    assert out_loop[0] is out_loop[1] and out_loop[2] is out_loop


@pytest.mark.parametrize("value, words", [
    (lambda: 1, "function"), (np.array([object()]), "array of Python objects"), (threading.Lock(), "lock"),
    (os, "module"), (type("Mine", (), {})(), "Mine"), ([1, [2, (lambda: 0)]], "value[1][1]")])
def test_what_cannot_cross_is_refused_naming_where_it_was(value, words):
    with pytest.raises(wire.WireError, match="cannot cross|only") as err:
        wire.Encoder().encode(value)
    assert words in str(err.value)


def test_a_class_that_only_claims_to_be_the_librarys_crosses_as_the_real_class():
    """A student's class named like the library's is rebuilt as the library's own class: its methods never cross."""
    fake = type("Graph", (), {"__module__": "infopt.ir.graph", "to_text": lambda self: "lies"})
    fake.__qualname__ = "Graph"
    with pytest.raises(wire.WireError):
        wire.Encoder().encode(fake())   # not the library's class object: refused on the kernel's side
    tree = {"O": "infopt.ir.graph:Graph", "s": [["name", "evil"]], "i": 0}
    rebuilt = wire.Decoder([]).decode(tree)
    assert type(rebuilt) is Graph and rebuilt.name == "evil"


def test_objects_of_modules_that_handle_native_code_never_cross():
    """A library object that may hold an address (a JIT-compiled kernel) is refused both ways: rebuilt from data,
    it could call whatever address the data gave it."""
    from infopt.codegen.compiled import CompiledKernel

    with pytest.raises(wire.WireError, match="cannot cross"):
        wire.Encoder().encode(CompiledKernel.__new__(CompiledKernel))
    with pytest.raises(wire.WireError, match="native code"):
        wire.Decoder([]).decode({"O": "infopt.codegen.compiled:CompiledKernel", "s": [["cfunc", 4096]]})


@pytest.mark.parametrize("tree, words", [
    ({"O": "os:system", "s": []}, "not a class of the library"),
    ({"O": "infopt.grading.errors:GradingError", "s": []}, "not a class of the library"),
    ({"O": "infopt.ir.graph:no_such", "s": []}, "not a class of the library"),
    ({"E": "builtins:int", "v": "x"}, "not a class of the library"),
    ({"R": 3}, "never sent"), ({"L": [1], "i": 5}, "out of order"), ({"A": 0}, "no such blob"),
    ({"D": [[{"L": [1]}, 2]]}, "unhashable"), ({"DT": "O"}, "object dtype"), ({"Q": 1}, "unknown tag"), ([1], "unexpected"),
])
def test_malformed_or_hostile_messages_are_refused(tree, words):
    with pytest.raises(wire.WireError, match=words):
        wire.Decoder([]).decode(tree)


def test_deep_nesting_and_oversized_frames_are_refused():
    deep = current = []
    for _ in range(wire.MAX_DEPTH + 5):
        current.append([])
        current = current[0]
    with pytest.raises(wire.WireError, match="nested"):
        wire.Encoder().encode(deep)
    tree: dict = {"L": []}
    node = tree
    for _ in range(wire.MAX_DEPTH + 5):
        node["L"] = [{"L": []}]
        node = node["L"][0]
    with pytest.raises(wire.WireError):
        wire.Decoder([]).decode(tree)
    a, b = socket.socketpair()
    with a, b:
        a.sendall(struct.pack("<Q", wire.MAX_FRAME + 1))
        with pytest.raises(wire.WireError, match="over the channel's cap"):
            wire.receive(b)


def test_a_pickled_array_is_refused():
    import io
    import pickle
    buf = io.BytesIO()
    np.save(buf, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(wire.WireError, match="malformed array"):
        wire.Decoder([buf.getvalue()]).decode({"A": 0})
    assert pickle  # the only pickle in this test is the hostile payload


# ----- calls across a real socket, the kernel's side in a thread ------------------------------------------------
@pytest.fixture
def kernel(tmp_path):
    """A Channel to a `serve` loop answering from a namespace (what the kernel runs in place of a test)."""
    namespace: dict = {}
    path = str(tmp_path / "judge.sock")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(1)
    served: list = []
    thread = threading.Thread(target=lambda: served.append(serve(path, namespace)), daemon=True)
    thread.start()
    conn, _ = listener.accept()
    channel = Channel(conn)
    yield namespace, channel, served
    channel.done()
    thread.join(5)
    conn.close()
    listener.close()


def test_a_call_keeps_identities_and_shows_in_place_changes(kernel):
    namespace, channel, _ = kernel

    def reorder(graph):
        graph.nodes.reverse()
        graph.name = "changed"
        return list(graph.nodes)

    namespace["reorder"] = reorder
    g = small_graph()
    nodes, first = g.nodes, g.nodes[0]
    out = StudentFunction(channel, "reorder")(g)
    assert [n.name for n in out] == ["b", "a"] and out[1] is first and g.nodes is nodes and g.nodes[1] is first
    assert g.name == "changed"


def test_a_tensor_written_in_place_is_written_in_the_judges_tensor(kernel):
    torch = pytest.importorskip("torch")
    namespace, channel, _ = kernel

    def append(cache, row, pos):
        cache[pos] = row
        return cache[: pos + 1]

    namespace["append"] = append
    cache = torch.zeros(4, 3)
    view = cache[1:]                      # a view: the write must reach its base, as it would in one process
    out = StudentFunction(channel, "append")(view, torch.ones(3), 2)
    assert torch.equal(cache[3], torch.ones(3)) and float(cache.sum()) == 3.0 and out.shape == (3, 3)


def test_an_argument_left_alone_comes_back_untouched(kernel):
    """Nothing is written back into an argument the call did not change (its objects stay the very same)."""
    namespace, channel, _ = kernel
    namespace["look"] = lambda graph, deps: len(graph.nodes) + len(deps)
    g, deps = small_graph(), [((0, 0), (0, 1))]
    inner, before = deps[0], graph_fingerprint(g)
    assert StudentFunction(channel, "look")(g, deps) == 3
    assert deps[0] is inner and graph_fingerprint(g) == before


def test_a_generator_crosses_with_its_state_and_comes_back_advanced(kernel):
    namespace, channel, _ = kernel
    namespace["draw"] = lambda rng, n: rng.random(n)
    rng, twin = np.random.default_rng(5), np.random.default_rng(5)
    got = StudentFunction(channel, "draw")(rng, 3)
    np.testing.assert_array_equal(got, twin.random(3))
    assert rng.random() == twin.random()   # the judge's generator moved on by the draws made in the kernel


def test_call_student_sees_a_mutation_across_the_boundary(kernel):
    namespace, channel, _ = kernel
    namespace["sloppy"] = lambda graph: graph.nodes.pop()
    with pytest.raises(GradingError, match="changed its input"):
        call_student(StudentFunction(channel, "sloppy"), small_graph(), name="sloppy",
                     fingerprint=graph_fingerprint)


def test_errors_cross_as_the_judges_own_exception_types_with_capped_messages(kernel):
    namespace, channel, _ = kernel

    class Mine(ValueError):
        pass

    def raise_(kind):
        raise {"value": ValueError("no"), "mine": Mine("sub"), "key": KeyError("k"), "long": RuntimeError("x" * 10**5),
               "exit": SystemExit(3), "odd": type("Odd", (Exception,), {})("odd")}[kind]

    namespace["raise_"] = raise_
    fn = StudentFunction(channel, "raise_")
    check_raises(ValueError, fn, "value")
    err = check_raises(ValueError, fn, "mine")   # a subclass the judge lacks: its nearest known base
    assert err.student_type == "Mine" and err.student_frames
    check_raises(KeyError, fn, "key")
    with pytest.raises(RuntimeError) as long:
        fn("long")
    assert len(str(long.value)) <= wire.MESSAGE_CAP
    with pytest.raises(wire.StudentError, match="SystemExit"):
        fn("exit")
    with pytest.raises(wire.StudentError, match="Odd: odd"):
        fn("odd")


def test_a_harness_error_the_student_raises_is_the_students(kernel):
    """Only the judge's own checks make a harness error (which scores as the grader's bug, not the student's)."""
    from infopt.grading.errors import HarnessError, is_harness_error

    namespace, channel, _ = kernel

    def fake(x):
        raise HarnessError("the grader broke")

    namespace["fake"] = fake
    with pytest.raises(RuntimeError) as raised:
        StudentFunction(channel, "fake")(1)
    assert not isinstance(raised.value, HarnessError)
    assert not is_harness_error(raised.value.student_type) and "raised by your code" in raised.value.student_type


def test_results_that_cannot_cross_are_the_students_failure_and_a_missing_name_says_so(kernel):
    namespace, channel, served = kernel
    namespace["closure"] = lambda: (lambda: 1)
    with pytest.raises(GradingError, match="cannot check"):
        StudentFunction(channel, "closure")()
    with pytest.raises(NameError, match="not defined"):
        StudentFunction(channel, "absent")()
    with pytest.raises(HarnessError, match="cannot cross"):
        StudentFunction(channel, "closure")(lambda: 2)   # the test's own argument: a harness bug


def test_forbidding_a_remote_function_guards_it_in_the_kernel(kernel):
    namespace, channel, _ = kernel
    namespace["delegates"] = lambda g: g.toposort()
    guarded = forbidding(StudentFunction(channel, "delegates"), "infopt.ir.graph:Graph.toposort",
                         exercise="the order")
    with pytest.raises(ForbiddenCall, match="write the order yourself"):
        guarded(small_graph())
    assert [n.name for n in small_graph().toposort()] == ["a", "b"]   # the judge's own library is untouched


def test_a_kernel_that_goes_away_fails_the_call_plainly(tmp_path):
    a, b = socket.socketpair()
    b.close()
    with pytest.raises(KernelGone, match="stopped answering"):
        StudentFunction(Channel(a), "f")(1)
    a.close()


def test_an_mlir_operation_crosses_as_its_text_and_place_and_a_change_to_it_is_refused(kernel):
    pytest.importorskip("xdsl")
    from infopt.mlir.bufferize import parse_program
    from infopt.mlir.xdsl_ir import print_ir

    func = parse_program("func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
                         "  %b = arith.addf %a, %a : tensor<4xf32>\n  func.return %b : tensor<4xf32>\n}\n")
    add = list(func.walk())[1]
    out = roundtrip(add)
    assert out.name == "arith.addf" and print_ir(out.parent_op(), generic=True) == print_ir(func, generic=True)
    namespace, channel, _ = kernel
    namespace["names"] = lambda f: [op.name for op in f.body.block.ops]

    def erase(f):
        f.body.block.ops.first.detach()
        return 0

    namespace["erase"] = erase
    assert StudentFunction(channel, "names")(func) == ["arith.addf", "func.return"]
    with pytest.raises(GradingError, match="changed in place"):
        StudentFunction(channel, "erase")(func)
