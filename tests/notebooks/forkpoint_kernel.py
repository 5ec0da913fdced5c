"""The kernel the notebook tests give nbgrader: ipykernel's own kernel, plus the fork points' `pre_run_cell` hook
(tests/notebooks/forkpoints.py), which does nothing unless the harness asked for fork points in this run.

Started by path, not as a module, so the repository never lands on the graded notebook's sys.path.
"""
import importlib.util
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
if sys.path and os.path.abspath(sys.path[0] or os.curdir) == _HERE:
    sys.path.pop(0)


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"_infopt_{name}", os.path.join(_HERE, f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def main() -> None:
    from ipykernel.kernelapp import IPKernelApp

    fastpath, forkpoints = _load("fastpath"), _load("forkpoints")

    class ForkPointKernelApp(IPKernelApp):
        def init_shell(self):
            super().init_shell()
            forkpoints.install(self.shell, fastpath.grade_at)

    ForkPointKernelApp.launch_instance()


if __name__ == "__main__":
    main()
