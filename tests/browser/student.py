"""What a student does in JupyterLab, scripted with Playwright: open a notebook, Run All from the menu,
move every slider, check the figure it drives changed, look at Netron's frame, take screenshots.

Chromium is Debian's (/usr/bin/chromium), started through ``launch_persistent_context`` on a fresh folder,
never downloaded. The browser is sealed to loopback: every request to another host is aborted and recorded.
"""
from __future__ import annotations

import hashlib
import re
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable
from urllib.parse import urlparse

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
]
LOOPBACK = {"127.0.0.1", "localhost", "[::1]", "::1"}


@dataclass
class Visit:
    """What one notebook visit saw: blocked requests, slider checks, Netron nodes, screenshots, errors."""

    blocked: list[str] = field(default_factory=list)
    sliders: list[dict] = field(default_factory=list)
    netron_nodes: list[str] = field(default_factory=list)
    netron_ports: list[int] = field(default_factory=list)
    netron_reloads: int = 0
    run_all_again: int = 0  # times Run All had to be chosen again (see run_all)
    screenshots: list[Path] = field(default_factory=list)
    cell_errors: list[str] = field(default_factory=list)
    console_errors: list[str] = field(default_factory=list)
    overlapping_labels: list[str] = field(default_factory=list)


def open_browser(playwright, on_blocked: Callable[[str], None]):
    """A persistent Chromium context on a fresh profile, with every non-loopback request aborted and passed to
    `on_blocked` (its URL)."""
    ctx = playwright.chromium.launch_persistent_context(
        tempfile.mkdtemp(prefix="infopt-chromium-"), executable_path=str(CHROMIUM), headless=True,
        args=CHROMIUM_ARGS, viewport={"width": 1400, "height": 1000},
    )

    def guard(route) -> None:
        url = route.request.url
        host = urlparse(url).hostname or ""
        if url.startswith(("data:", "blob:", "about:")) or host in LOOPBACK:
            route.continue_()
        else:
            on_blocked(url)
            route.abort()

    ctx.route("**/*", guard)
    return ctx


def open_notebook(page, path: str) -> None:
    """Open a notebook in the running JupyterLab as a student does, from File > Open from Path..."""
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^File$")).click()
    page.locator(".lm-Menu-item[data-command='filebrowser:open-path']").click()
    field = page.locator(".jp-Dialog input").first
    field.fill(path)
    field.press("Enter")
    page.locator(".jp-Notebook").first.wait_for(timeout=60_000)


def close_notebook(page) -> None:
    """Save and close the open notebook (File > Save, File > Close Tab), leaving JupyterLab with no notebook."""
    for command in ("docmanager:save", "application:close"):
        page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^File$")).click()
        page.locator(f".lm-Menu-item[data-command='{command}']").click()
        _pause(page, 0.3)
    _wait(page, lambda: page.locator(".jp-Notebook").count() == 0 and page.locator(".jp-Dialog").count() == 0, 20,
          "the notebook to close")


def run_all(page, timeout_s: float = 300, settled: Callable[[], bool] | None = None) -> int:
    """Run every cell through JupyterLab's own Run menu; wait until every code cell has run or one failed.

    Before choosing Run All it waits until ``settled()`` is true (the test passes "one kernel, steady for 3 s"),
    answering the kernel chooser if JupyterLab shows it. Returns how many times Run All had to be chosen again:
    a run that stops with no error shown (once seen here: two kernels were started for the notebook, and the
    queued cells were lost when one was shut down) is chosen again, twice at most, as a student would, and the
    caller warns. A run that stops at a cell with an error is a real failure and is not retried."""
    page.locator(".jp-Notebook").first.wait_for(timeout=60_000)
    _wait(page, lambda: page.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']").count() > 0
          or _dismiss_kernel_dialog(page), 120, "the kernel to start")
    _dismiss_kernel_dialog(page)
    if settled is not None:
        _wait(page, lambda: (_dismiss_kernel_dialog(page), settled())[1], 120, "one steady kernel")

    def prompts() -> list[str]:
        return [p.strip() for p in page.locator(".jp-CodeCell .jp-InputArea-prompt").all_text_contents()]

    def started() -> bool:
        return any(re.search(r"\[(\*|\d+)\]", p) for p in prompts())

    def choose_run_all() -> None:
        for _attempt in range(3):
            page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
            page.locator(".lm-Menu-item[data-command='runmenu:run-all']").click()
            try:
                _wait(page, started, 20, "the first cell to start")
                return
            except TimeoutError:
                _dismiss_kernel_dialog(page)
        raise TimeoutError("Run > Run All Cells did not start any cell (is the kernel connected?)")

    deadline = time.monotonic() + timeout_s
    for again in range(3):
        choose_run_all()
        _wait_run(page, prompts, max(deadline - time.monotonic(), 30))
        if not unrun_cells(page) or cell_errors(page) or again == 2:
            return again
    return 2


def _wait_run(page, prompts, timeout_s: float) -> None:
    """Wait until every code cell has run, or nothing is queued and the kernel has been idle for 10 s."""
    quiet_since = [None]

    def done() -> bool:
        ps = prompts()
        if all(re.search(r"\[\d+\]", p) for p in ps):
            return True
        idle = page.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']").count() > 0
        if any("*" in p for p in ps) or not idle:
            quiet_since[0] = None
            return False
        # nothing queued and the kernel idle, yet cells left unrun: JupyterLab stopped the run (a cell failed)
        quiet_since[0] = quiet_since[0] or time.monotonic()
        return time.monotonic() - quiet_since[0] > 10

    _wait(page, done, timeout_s, "all cells to finish")


def _dismiss_kernel_dialog(page) -> bool:
    """Accept JupyterLab's kernel chooser, if it is showing; returns whether it was."""
    select = page.locator(".jp-Dialog button", has_text="Select")
    if select.count() and select.first.is_visible():
        select.first.click()
        return True
    return False


def unrun_cells(page) -> list[int]:
    """Indexes of code cells that never ran (Run All stops at a failing cell)."""
    ps = [p.strip() for p in page.locator(".jp-CodeCell .jp-InputArea-prompt").all_text_contents()]
    return [i for i, p in enumerate(ps) if not re.search(r"\[\d+\]", p)]


def cell_errors(page) -> list[str]:
    """Tracebacks shown in the notebook's outputs."""
    return page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.error']").all_inner_texts()


# The text plotly draws beside its data (a scatter's point labels, `.textpoint`; a heatmap's cell texts,
# `.heatmap-label`) and its annotations: for each figure on the page, every pair of visible labels whose boxes
# overlap by more than OVERLAP_PX pixels both across and down (text that merely touches is not reported).
OVERLAP_PX = 3
_OVERLAPS_JS = """(px) => {
  const out = [];
  document.querySelectorAll('.js-plotly-plot').forEach((plot) => {
    const title = (plot.querySelector('.gtitle') || {}).textContent || '(untitled figure)';
    const boxes = [...plot.querySelectorAll('.textpoint text, .heatmap-label text, .annotation-text-g text')]
      .map(t => ({text: t.textContent.trim(), r: t.getBoundingClientRect()}))
      .filter(b => b.text && b.r.width > 0 && b.r.height > 0);
    for (let i = 0; i < boxes.length; i++) {
      for (let j = i + 1; j < boxes.length; j++) {
        const a = boxes[i].r, b = boxes[j].r;
        const w = Math.min(a.right, b.right) - Math.max(a.left, b.left);
        const h = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
        if (w > px && h > px) {
          out.push(`${title.slice(0, 80)}: '${boxes[i].text}' and '${boxes[j].text}' overlap`);
        }
      }
    }
  });
  return out;
}"""


def overlapping_labels(page) -> list[str]:
    """Labels drawn over each other in the page's plotly figures (see _OVERLAPS_JS), one line per pair."""
    return page.evaluate(_OVERLAPS_JS, OVERLAP_PX)


def figure_signature(scope) -> str:
    """A digest of what ``scope`` shows: plotly titles, ticks and drawn traces, and text printed by widgets."""
    parts = scope.locator(".js-plotly-plot .gtitle, .js-plotly-plot .xtick, .js-plotly-plot .ytick").all_text_contents()
    paths = scope.locator(".js-plotly-plot .trace path, .js-plotly-plot .trace rect, .js-plotly-plot .point path")
    d = [paths.nth(i).get_attribute("d") or "" for i in range(min(paths.count(), 400))]
    heat = scope.locator(".js-plotly-plot image")
    d += [heat.nth(i).get_attribute("href") or "" for i in range(min(heat.count(), 20))]
    # what an interact() prints into its output area counts too
    d += scope.locator(".widget-output .jp-RenderedText, .widget-output .jp-RenderedHTMLCommon").all_inner_texts()
    return hashlib.sha1(("|".join(parts) + "#" + "|".join(d)).encode()).hexdigest()


def titles(scope) -> list[str]:
    return scope.locator(".js-plotly-plot .gtitle").all_text_contents()


def _changed(cell, before: str, timeout_s: float = 30) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if figure_signature(cell) != before:
            return True
        _pause(cell.page, 0.25)
    return False


def move_sliders(page, visit: Visit, shots: Path, stem: str) -> None:
    """Move each slider one step with the keyboard and pick another option in each dropdown, as a student would,
    and check that the figure or output each one drives changed."""
    cells = page.locator(".jp-Notebook .jp-Cell")
    for ci in range(cells.count()):
        cell = cells.nth(ci)
        sliders = cell.locator(".widget-slider, .widget-hslider")
        for si in range(sliders.count()):
            slider = sliders.nth(si)
            handle = slider.locator(".noUi-handle").first
            label = slider.locator(".widget-label").first.inner_text()
            readout = slider.locator(".widget-readout").first
            before_val, before_sig, before_titles = readout.inner_text(), figure_signature(cell), titles(cell)
            handle.scroll_into_view_if_needed()
            handle.focus()
            handle.press("ArrowRight")
            if readout.inner_text() == before_val:  # at the maximum: go the other way
                handle.press("ArrowLeft")
                handle.press("ArrowLeft")
            after_val = readout.inner_text()
            changed = _changed(cell, before_sig)
            _pause(page, 0.3)
            shot = shots / f"{stem}-cell{ci}-slider{si}.png"
            cell.screenshot(path=str(shot))
            visit.screenshots.append(shot)
            visit.sliders.append({
                "cell": ci, "slider": label.strip(), "from": before_val, "to": after_val, "figure_changed": changed,
                "titles_before": before_titles, "titles_after": titles(cell),
            })
        dropdowns = cell.locator(".widget-dropdown select")
        for di in range(dropdowns.count()):
            select = dropdowns.nth(di)
            options = select.locator("option").all_inner_texts()
            if len(options) < 2:
                continue
            before_val, before_sig = select.input_value(), figure_signature(cell)
            target = next(o for o in options if o != before_val)
            select.scroll_into_view_if_needed()
            select.select_option(label=target)
            changed = _changed(cell, before_sig)
            shot = shots / f"{stem}-cell{ci}-dropdown{di}.png"
            cell.screenshot(path=str(shot))
            visit.screenshots.append(shot)
            visit.sliders.append({"cell": ci, "slider": f"dropdown {di}", "from": before_val,
                                  "to": select.input_value(), "figure_changed": changed,
                                  "titles_before": [], "titles_after": titles(cell)})


def netron_nodes(page, visit: Visit, shots: Path, stem: str) -> None:
    """Read the node names Netron drew inside each of its frames (through locators: Netron replaces eval)."""
    frames = page.locator("iframe")
    for i in range(frames.count()):
        src = frames.nth(i).get_attribute("src") or ""
        if not src.startswith("http://127.0.0.1"):
            continue
        visit.netron_ports.append(urlparse(src).port or 80)
        frames.nth(i).scroll_into_view_if_needed()
        frame = page.frame_locator("iframe").nth(i)
        # Netron's update dialog (shown 180 days after its build) and consent dialog must not block the view.
        for button in ("Update", "Accept"):
            b = frame.locator("#message-button", has_text=button)
            if b.count() and b.first.is_visible():
                b.first.click()
        # Netron replaces window.eval, which Playwright's text queries use; its accessibility tree still reads.
        # Its graph is the svg#canvas (the page has other, hidden svgs: icons and the logo).
        # A frame that loaded while scrolled out of view can stay blank (seen 2 times in about 10 runs under
        # load); a student would reload it, and so does this, once, recording that it had to.
        snapshot = ""
        for attempt in range(2):
            deadline = time.monotonic() + 45
            while time.monotonic() < deadline:
                try:
                    snapshot = frame.locator("svg#canvas").first.aria_snapshot(timeout=5_000)
                except Exception:
                    snapshot = ""
                if re.search(r"\b(Conv|Gemm|MatMul|Relu)\b", snapshot):
                    break
                _pause(page, 1.0)
            else:
                if attempt == 0:
                    visit.netron_reloads += 1
                    frames.nth(i).evaluate("f => { f.src = f.src; }")
                    continue
            break
        visit.netron_nodes += re.findall(r"\b[A-Z][A-Za-z]+\b", snapshot)
        shot = shots / f"{stem}-netron{i}.png"
        frames.nth(i).screenshot(path=str(shot))
        visit.screenshots.append(shot)


def _pause(page, seconds: float) -> None:
    """Wait without starving the page: requests pass through our Python route guard, which Playwright's sync API
    only serves while Python is inside a Playwright call, so a bare time.sleep stalls every request the page makes
    (a kernel's start, Netron's files) until it ends."""
    page.wait_for_timeout(seconds * 1000)


def _wait(page, cond, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if cond():
            return
        _pause(page, 0.5)
    raise TimeoutError(f"timed out after {timeout_s:.0f} s waiting for {what}")
