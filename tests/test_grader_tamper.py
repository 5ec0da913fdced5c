"""infopt.grading.tamper: each tampering trick is flagged with its line; honest code (the course's solutions) is not."""
from pathlib import Path

import pytest

from infopt.grading.tamper import scan_source, shadowed_module

pytestmark = pytest.mark.xdist_group("grader")

TRICKS = {
    "np.testing.assert_allclose = lambda *a, **k: None": "assert_allclose",
    "import numpy\nnumpy.testing.assert_array_equal = print": "assert_array_equal",
    "import infopt.grading as g\ng.check_equal = lambda *a: None": "check_equal",
    "setattr(np.testing, 'assert_allclose', None)": "setattr",
    "get_ipython().input_transformers_cleanup.append(f)": "input_transformers_cleanup",
    "ip = get_ipython()\nip.ast_transformers.append(t)": "ast_transformers",
    "get_ipython().set_custom_exc((AssertionError,), h)": "set_custom_exc",
    "get_ipython().events.register('pre_run_cell', f)": "events",
    "import builtins\nbuiltins.isinstance = lambda *a: True": "builtins",
    "__builtins__.len = lambda x: 3": "builtin",
    "def isinstance(a, b):\n    return True": "isinstance",
    "class R:\n    def __eq__(self, other):\n        return True": "__eq__",
    "R.__eq__ = lambda self, other: True": "__eq__",
    "class M(type):\n    pass\nclass R(metaclass=M):\n    pass": "metaclass",
    "import sys\nsys.modules['numpy'] = fake": "sys.modules",
    "import sys\nframe = sys._getframe(1)": "_getframe",
    "open('numpy.py', 'w').write(code)": "numpy.py",
    "x = open('/work/main/solutions/01_graphs_ir/01_graphs_ir.py').read()": "grader's files",
    "import subprocess\nsubprocess.Popen(['sleep', '9'], start_new_session=True)": "detached",
    "!cat /etc/passwd": "shell",
    "import ctypes\nctypes.pythonapi.PyObject_SetAttr": "pythonapi",
    "k = get_ipython().kernel\nk.do_execute = fake": "do_execute",
    "get_ipython().run_cell_async = fake": "run_cell_async",
    "get_ipython().CustomTB = lambda *a: []": "CustomTB",
    "open('/home/s/.ipython/profile_default/startup/00.py', 'w')": "start-up",
    "path = site.getusersitepackages() + '/usercustomize.py'": "start-up",
    # the library the grader's calls run where the student's code is (infopt.mlir.npu.probes and the like)
    "from infopt.mlir.npu import probes\nprobes.build_matmul_op = lambda *a, **k: {}": "in the library",
    "import infopt.mlir.toy.patterns as p\nsetattr(p, 'apply_pattern_class', f)": "in the library",
    "from infopt.mlir.npu.probes import parse_with_op\nparse_with_op.__code__ = f.__code__": "in the library",
}


@pytest.mark.parametrize("code", list(TRICKS))
def test_each_trick_is_flagged_on_its_line(code):
    findings = scan_source("x = 1\n" + code, "ex")
    assert findings, f"not flagged: {code!r}"
    assert any(TRICKS[code] in (f.reason + f.code) for f in findings), (code, findings)
    assert all(f.line >= 2 and f.cell == "ex" for f in findings), findings
    assert str(findings[0]).startswith("ex, line ")


def test_honest_solutions_of_every_unit_are_not_flagged():
    from autograder.assemble import master_from_cells
    from autograder.release import build_source_notebook, discover_units

    repo = Path(__file__).resolve().parent.parent
    units = discover_units(repo / "solutions")
    checked = 0
    for unit in units:
        try:
            cells = master_from_cells(build_source_notebook(unit, repo / "solutions").cells)
        except Exception:  # a unit still being written is the notebook tests' business, not this one's
            continue
        for cell in cells:
            if cell.kind == "solution":  # instructor code cells are never scanned at grading
                assert scan_source(cell.source, cell.grade_id or "code") == [], (unit, cell.grade_id)
                checked += 1
    toy = Path(__file__).parent / "grader_fixtures" / "toy_unit" / "toy_unit.py"
    assert scan_source(toy.read_text()) == []
    assert checked or not units


def test_magics_and_syntax_errors_do_not_crash_the_scan():
    assert scan_source("%timeit f(1)\nx = 2") == []
    assert scan_source("def broken(:\n    pass") == []
    with pytest.raises(TypeError, match="source as str"):
        scan_source(["x = 1"])


def test_shadowed_module_names():
    assert shadowed_module("numpy.py") == "numpy"
    assert shadowed_module("pkg/infopt.py") == "infopt"
    assert shadowed_module("helpers.py") is None
    assert shadowed_module("notes.txt") is None
