"""The course as a student sees it: JupyterLab in headless Chromium, widgets and Netron included.

For every unit notebook with interactive views (ipywidgets sliders, plotly FigureWidgets, Netron), this starts
JupyterLab on 127.0.0.1 (random port and token), opens the notebook with its exercises completed (the
instructor's solution, as a student who finished them has it), runs all cells through JupyterLab's Run menu,
moves every slider and checks that the figure it drives changed, checks that Netron drew the graph's node
names, saves screenshots under artifacts/browser/, fails if the page tried to reach any host but loopback, and
checks that every process it started is gone at the end.

Run it alone with:  .venv/bin/python -m pytest tests/test_browser.py -m browser -v
"""
from __future__ import annotations

import re
import shutil
import socket
import subprocess
import sys
import warnings
from pathlib import Path

import nbformat
import psutil
import pytest

from autograder import release

from tests.browser import student
from tests.browser.lab_server import LabServer

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "artifacts" / "browser"
INTERACTIVE = re.compile(r"ipywidgets|FigureWidget|show_netron|netron_view|infopt\.widgets")
REQUIRED_EXTENSIONS = ["@jupyter-widgets/jupyterlab-manager", "jupyterlab-plotly", "anywidget"]

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("browser")]


def widget_units() -> list[str]:
    """Units whose solution notebook has interactive views."""
    return [u for u in release.discover_units() if INTERACTIVE.search((release.SOLUTIONS / u / f"{u}.py").read_text())]


def _need_browser() -> None:
    if not student.CHROMIUM.exists():
        pytest.skip("no Chromium at /usr/bin/chromium and none could be installed (run `make setup` as root, or "
                    "`sudo apt-get install chromium`): the browser tests were SKIPPED")


def test_lab_extensions_installed():
    """The JupyterLab extensions the course's views need come from pip and are enabled."""
    out = subprocess.run([sys.executable, "-m", "jupyter", "labextension", "list"], capture_output=True, text=True)
    listing = out.stdout + out.stderr
    for ext in REQUIRED_EXTENSIONS:
        line = next((ln for ln in listing.splitlines() if ln.strip().startswith(ext + " ")), None)
        assert line is not None, f"JupyterLab extension {ext} is not installed (pip install the pinned packages: make setup)"
        assert "enabled" in line and "OK" in line, f"JupyterLab extension {ext} is not enabled and OK: {line.strip()}"


def test_some_units_have_widgets():
    assert widget_units(), "no unit notebook has interactive views; the browser test would check nothing"


@pytest.mark.parametrize("unit", widget_units())
def test_student_view(unit: str, tmp_path: Path):
    _need_browser()
    from playwright.sync_api import sync_playwright

    # A scratch copy of the course folder with this unit's completed notebook (course/ itself is never written).
    root = tmp_path / "course"
    (root / unit).mkdir(parents=True)
    nbformat.write(release.build_source_notebook(unit), root / unit / f"{unit}.ipynb")
    for extra in (ROOT / "course" / unit).glob("*"):
        if extra.suffix != ".ipynb":
            (shutil.copytree if extra.is_dir() else shutil.copy)(extra, root / unit / extra.name)
    shots = ARTIFACTS / unit
    shutil.rmtree(shots, ignore_errors=True)
    shots.mkdir(parents=True)

    visit = student.Visit()
    me = psutil.Process()
    browser_pids: set[int] = set()
    lab = LabServer(root, tmp_path)
    try:
        with lab, sync_playwright() as pw:
            ctx = student.open_browser(pw, visit)
            browser_pids |= {c.pid for c in me.children(recursive=True) if "chrom" in c.name().lower()}
            page = ctx.new_page()
            page.on("console", lambda m: visit.console_errors.append(m.text) if m.type == "error" else None)
            page.goto(lab.url_for(f"{unit}/{unit}.ipynb"))
            try:
                visit.run_all_again = student.run_all(page, settled=lab.one_steady_kernel)
            finally:
                page.screenshot(path=str(shots / f"{unit}-after-run-all.png"), full_page=False)
            lab.track()
            unrun = student.unrun_cells(page)
            visit.cell_errors = student.cell_errors(page)
            student.move_sliders(page, visit, shots, unit)
            student.netron_nodes(page, visit, shots, unit)
            # tracebacks anywhere on the page now, widget outputs included (interact() shows its errors there)
            visit.cell_errors = student.cell_errors(page)
            lab.track()
            browser_pids |= {c.pid for c in me.children(recursive=True) if "chrom" in c.name().lower()}
            page.close()
            ctx.close()
        # Leaving the `with`: JupyterLab shut down through its API (kernels too) and Playwright's driver stopped.
        left = lab.leftovers() + [f"{p} chromium" for p in browser_pids if psutil.pid_exists(p)
                                  and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]
        open_ports = [p for p in visit.netron_ports if _port_open(p)]
    finally:
        lab.kill_leftovers()

    assert not unrun, f"{unit}: Run All stopped before code cells {unrun[:5]} ran (a cell or widget failed before them)"
    assert not visit.cell_errors, f"{unit}: cells or widgets raised errors in JupyterLab:\n" + "\n".join(visit.cell_errors)[:3000]
    assert not visit.blocked, f"{unit}: the page tried to reach hosts other than loopback (course content must work offline): {visit.blocked[:10]}"
    for s in visit.sliders:
        assert s["from"] != s["to"], f"{unit}: slider {s['slider']!r} in cell {s['cell']} did not move"
        assert s["figure_changed"], f"{unit}: moving slider {s['slider']!r} in cell {s['cell']} did not change the figure or output it drives ({s})"
    src_text = (release.SOLUTIONS / unit / f"{unit}.py").read_text()
    if re.search(r"ipywidgets|FigureWidget", src_text):
        assert visit.sliders, f"{unit}: the notebook uses widgets but no slider or dropdown was found in the page"
    if re.search(r"show_netron|netron_view", src_text):
        assert visit.netron_ports, f"{unit}: the notebook shows Netron but no Netron frame was found"
        if visit.run_all_again:
            warnings.warn(f"{unit}: Run All stopped early with no error shown and was chosen again "
                          f"({visit.run_all_again}x)")
        if visit.netron_reloads:
            warnings.warn(f"{unit}: Netron's frame was blank until reloaded ({visit.netron_reloads}x)")
        drawn = " ".join(visit.netron_nodes)
        assert re.search(r"\bConv\b|\bGemm\b|\bMatMul\b|\bRelu\b", drawn), (
            f"{unit}: Netron's frame shows no graph nodes (got {visit.netron_nodes[:10]})")
    assert not left, f"{unit}: processes outlived the test: {left}"
    assert not open_ports, f"{unit}: Netron's server still listens on {open_ports} after the kernel ended"
    assert visit.screenshots, f"{unit}: no screenshot was taken"


def _port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0
