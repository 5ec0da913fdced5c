"""The course as a student sees it: JupyterLab in headless Chromium, widgets and Netron included.

ONE JupyterLab server (127.0.0.1, random port and token) and one Chromium page serve every unit notebook with
interactive views (ipywidgets sliders, plotly FigureWidgets, Netron); their start is the first test here, so each
unit's test costs its own notebook only. Each unit's test opens the notebook with its exercises completed (the
instructor's solution, as a student who finished them has it) from File > Open from Path, runs all cells through
JupyterLab's Run menu,
moves every slider and checks that the figure it drives changed, checks that Netron drew the graph's node names,
saves screenshots under artifacts/browser/, fails if the page tried to reach any host but loopback, then shuts its
kernel down, checks that every process the kernel started is gone and no Netron server still listens, and saves and
closes the notebook. The last test stops the server and checks that nothing it or the browser started outlives it.

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


class Lab:
    """The shared JupyterLab server and Chromium of this module, with every browser process seen."""

    def __init__(self, root: Path, workdir: Path) -> None:
        self.server = LabServer(root, workdir)
        self.browser_pids: set[int] = set()
        self._pw = self.ctx = self.page = None
        self.visit = student.Visit()   # the unit under test: the browser's route guard records into its visit

    def start(self) -> "Lab":
        from playwright.sync_api import sync_playwright

        self.server.__enter__()
        self._pw = sync_playwright().start()
        self.ctx = student.open_browser(self._pw, lambda url: self.visit.blocked.append(url))
        self.note_browser()
        self.page = self.ctx.new_page()
        self.page.on("console", lambda m: self.visit.console_errors.append(m.text) if m.type == "error" else None)
        self.home()
        return self

    def home(self) -> None:
        """(Re)load JupyterLab in the page, with no notebook open."""
        self.page.goto(self.server.url_for())
        self.page.locator(".jp-LabShell").first.wait_for(timeout=60_000)

    def note_browser(self) -> None:
        me = psutil.Process()
        self.browser_pids |= {c.pid for c in me.children(recursive=True) if "chrom" in c.name().lower()}

    def stop(self) -> list[str]:
        """Close the browser and shut the server down through its API; what is still alive afterwards."""
        self.note_browser()
        try:
            if self.ctx is not None:
                self.ctx.close()
            if self._pw is not None:
                self._pw.stop()
        finally:
            self.ctx = self._pw = None
            self.server.stop()
        return self.server.leftovers() + [f"{p} chromium" for p in self.browser_pids if psutil.pid_exists(p)
                                          and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """A scratch course folder with every widget unit's completed notebook (course/ itself is never written), served
    by one JupyterLab and visited by one Chromium."""
    _need_browser()
    tmp = tmp_path_factory.mktemp("lab")
    root = tmp / "course"
    for unit in widget_units():
        (root / unit).mkdir(parents=True)
        nbformat.write(release.build_source_notebook(unit), root / unit / f"{unit}.ipynb")
        for extra in (ROOT / "course" / unit).glob("*"):
            if extra.suffix != ".ipynb":
                (shutil.copytree if extra.is_dir() else shutil.copy)(extra, root / unit / extra.name)
    shared = Lab(root, tmp)
    try:
        yield shared.start()
    finally:
        if shared.ctx is not None or shared.server.proc is not None and shared.server.proc.poll() is None:
            shared.stop()
        shared.server.kill_leftovers()
        for pid in shared.browser_pids:
            try:
                psutil.Process(pid).kill()
            except psutil.NoSuchProcess:
                pass


def test_lab_server_and_browser_start(lab):
    """JupyterLab answers and Chromium is up (the shared start-up, timed here rather than in the first unit)."""
    assert lab.server.kernels() == []
    assert lab.browser_pids, "no Chromium process was started"


def test_the_overlap_check_sees_labels_drawn_over_each_other(lab):
    """The check test_student_view applies to every figure, on a page of two figures: point labels at one spot
    (caught, named by the figure's title) and the same labels spread out (not)."""
    import plotly.graph_objects as go
    import plotly.offline

    def figure(div: str, title: str, xs: list[float], ys: list[float]) -> str:
        fig = go.Figure(go.Scatter(x=xs, y=ys, mode="markers+text", text=["sixteen", "sixty-four", "three"],
                                   textposition="top center"))
        fig.update_layout(title=title, width=500, height=300)
        return plotly.offline.plot(fig, include_plotlyjs=False, output_type="div").replace(
            "<div>", f'<div id="{div}">', 1)

    page = lab.ctx.new_page()
    try:
        page.set_content("<html><body><script>" + plotly.offline.get_plotlyjs() + "</script>"
                         + figure("a", "crowded", [1.0, 1.0001, 3.0], [5.0, 5.0001, 9.0])
                         + figure("b", "spread", [1.0, 2.0, 3.0], [1.0, 5.0, 9.0]) + "</body></html>")
        page.wait_for_function("document.querySelectorAll('.js-plotly-plot .textpoint text').length >= 6")
        found = student.overlapping_labels(page)
    finally:
        page.close()
    assert found and all(line.startswith("crowded:") for line in found), found


@pytest.mark.parametrize("unit", widget_units())
def test_student_view(lab, unit: str):
    shots = ARTIFACTS / unit
    shutil.rmtree(shots, ignore_errors=True)
    shots.mkdir(parents=True)
    visit = lab.visit = student.Visit()
    page = lab.page
    try:
        student.open_notebook(page, f"{unit}/{unit}.ipynb")
        try:
            visit.run_all_again = student.run_all(page, settled=lab.server.one_steady_kernel)
        finally:
            page.screenshot(path=str(shots / f"{unit}-after-run-all.png"), full_page=False)
        lab.server.track()
        unrun = student.unrun_cells(page)
        visit.cell_errors = student.cell_errors(page)
        visit.overlapping_labels = student.overlapping_labels(page)
        student.move_sliders(page, visit, shots, unit)
        visit.overlapping_labels += [f"after the sliders moved: {o}" for o in student.overlapping_labels(page)]
        student.netron_nodes(page, visit, shots, unit)
        # tracebacks anywhere on the page now, widget outputs included (interact() shows its errors there)
        visit.cell_errors = student.cell_errors(page)
        lab.server.track()
        lab.note_browser()
    finally:
        # the kernel goes as a student's "Shut Down Kernel" sends it: everything it started must go with it
        left = lab.server.shutdown_kernels()
        try:
            student.close_notebook(page)
        except Exception:  # noqa: BLE001 (a page left in a bad state: start the next unit from a fresh load)
            lab.home()
    open_ports = [p for p in visit.netron_ports if _port_open(p)]

    assert not unrun, f"{unit}: Run All stopped before code cells {unrun[:5]} ran (a cell or widget failed before them)"
    assert not visit.cell_errors, f"{unit}: cells or widgets raised errors in JupyterLab:\n" + "\n".join(visit.cell_errors)[:3000]
    assert not visit.overlapping_labels, f"{unit}: labels drawn over each other:\n" + "\n".join(
        visit.overlapping_labels[:20])
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
    assert not left, f"{unit}: processes outlived the notebook's kernel: {left}"
    assert not open_ports, f"{unit}: Netron's server still listens on {open_ports} after the kernel ended"
    assert visit.screenshots, f"{unit}: no screenshot was taken"


def test_nothing_outlives_the_lab_server_and_the_browser(lab):
    """Shutting JupyterLab down through its API (kernels too) and closing Chromium leaves no process behind.
    (Runs last: it stops the module's shared server.)"""
    left = lab.stop()
    assert not left, f"processes outlived JupyterLab and Chromium: {left}"


def _port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0
