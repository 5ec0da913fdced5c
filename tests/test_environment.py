"""The conda environment file and pyproject.toml pin the same packages, and the setup entry points exist."""
import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def _env_pip_lines() -> list[str]:
    text = (ROOT / "environment.yml").read_text()
    m = re.search(r"^\s+- pip:\n((?:\s+- .*\n?)+)", text, re.M)
    assert m, "environment.yml has no pip: section"
    return [ln.strip()[2:].strip() for ln in m.group(1).splitlines() if ln.strip()]


def _all_pins() -> list[str]:
    """The project's dependencies and every optional extra (the `test` extra)."""
    project = _pyproject()["project"]
    return [*project["dependencies"], *(d for extra in project.get("optional-dependencies", {}).values() for d in extra)]


def test_environment_yml_pins_match_pyproject():
    deps = set(_all_pins())
    pip_lines = _env_pip_lines()
    assert "-e ." in pip_lines, "environment.yml must install this project (`-e .`) in its pip section"
    env = {ln for ln in pip_lines if ln != "-e ."}
    assert env == deps, (
        f"environment.yml and pyproject.toml disagree: only in environment.yml {sorted(env - deps)}, "
        f"only in pyproject.toml {sorted(deps - env)}"
    )


def test_python_versions_agree():
    req = _pyproject()["project"]["requires-python"]
    env = (ROOT / "environment.yml").read_text()
    assert re.search(r"^\s+- python=3\.11\s*$", env, re.M), "environment.yml must ask for python=3.11"
    assert "3.11" in req and "<3.12" in req, f"pyproject requires-python is {req!r}, expected 3.11 only"


def test_every_dependency_is_pinned():
    loose = [d for d in _all_pins() if "==" not in d]
    assert not loose, f"unpinned dependencies in pyproject.toml: {loose}"
    assert "torch==2.13.0" in _pyproject()["project"]["dependencies"]


def test_ci_runs_the_readme_test_command():
    ci = (ROOT / ".ci" / "run").read_text()
    assert re.search(r"^exec make test\s*$", ci, re.M), ".ci/run must run exactly `make test`"
    assert "make test" in (ROOT / "README.md").read_text()


def test_test_only_packages_are_an_extra():
    """A student's `make lab` installs no test tools; `make test` installs the `test` extra."""
    deps = {d.split("==")[0].lower() for d in _pyproject()["project"]["dependencies"]}
    test = {d.split("==")[0].lower() for d in _pyproject()["project"]["optional-dependencies"]["test"]}
    assert {"pytest", "pytest-xdist", "hypothesis", "playwright"} <= test
    assert not deps & test, f"test-only packages among the main dependencies: {sorted(deps & test)}"
    make = (ROOT / "Makefile").read_text()
    assert re.search(r"^test:.*\n\t.*setup\.sh --test", make, re.M), "make test must run tools/setup.sh --test"
    assert re.search(r"^lab: setup\s*$", make, re.M) and "--test" not in make.split("\nsetup:")[1].split("\n\n")[0]
