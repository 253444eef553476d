"""A real browser: JupyterLab on localhost, driven by headless Chromium through Playwright.

It opens notebooks/01-quickstart.ipynb (a copy, in the server's own temporary root), runs every cell,
and checks that the replay widget's controls, its live status and the timing plot render. Screenshots
go to test-artifacts/. It uses Debian's chromium (``apt-get install chromium``; ``./run test`` installs
it where it can) and never downloads a browser. When there is no browser to start, only this test is
skipped, with the reason.

A second, quick test renders a window view's EXPLAIN VIEW (its notebook HTML) in the same Chromium, without
JupyterLab, and screenshots it (test-artifacts/window-explain.png).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
from execute_notebooks import without_long_forms  # noqa: E402

NOTEBOOK = ROOT / "notebooks" / "01-quickstart.ipynb"
ARTIFACTS = ROOT / "test-artifacts"

SERVER_START = 180       # seconds for JupyterLab to answer (a loaded 2-core machine is slow)
PAGE_LOAD = 180          # for the page and the notebook's kernel to be ready
RUN_ALL = 900            # for every cell to run: Spark's start and the replay
WIDGETS = 120            # for the widgets to show once the cells ran

# JupyterLab settings for the test: every cell kept in the page (no windowing), no news, no update checks.
SETTINGS = {
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {"fetchNews": "false",
                                                                        "checkForUpdates": False},
}

# Run in the page (JupyterLab started with expose_app_in_browser): where the notebook's run stands.
PROGRESS_JS = """() => {
  const app = window.jupyterapp;
  const panel = app && app.shell.currentWidget;
  if (!panel || !panel.content || !panel.sessionContext) return {ready: false};
  const kernel = panel.sessionContext.session && panel.sessionContext.session.kernel;
  const cells = panel.content.widgets.filter(c => c.model.type === 'code');
  const errors = [];
  for (const cell of cells) {
    const outputs = cell.model.outputs;
    for (let i = 0; i < outputs.length; i++) {
      const output = outputs.get(i);
      if (output.type === 'error') {
        const raw = output.toJSON();
        errors.push(raw.ename + ': ' + raw.evalue);
      }
    }
  }
  return {ready: true, status: kernel ? kernel.status : 'none',
          cells: cells.length, done: cells.filter(c => c.model.executionCount !== null).length, errors};
}"""


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _tail(path: Path, lines: int = 40) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def _get(url: str, timeout: float = 5) -> bytes:
    with urllib.request.urlopen(url, timeout=timeout) as response:  # noqa: S310 (localhost only)
        return response.read()


class Lab:
    """A JupyterLab server on 127.0.0.1, token off, in its own temporary root and settings."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = root / "jupyterlab.log"
        settings = root / "settings"
        for name, values in SETTINGS.items():
            target = settings / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(json.dumps(values))
        env = dict(os.environ, JUPYTER_RUNTIME_DIR=str(root / "runtime"), JUPYTER_CONFIG_DIR=str(root / "config"),
                   JUPYTERLAB_SETTINGS_DIR=str(settings), JUPYTERLAB_WORKSPACES_DIR=str(root / "workspaces"),
                   PYTHONUNBUFFERED="1")
        command = [sys.executable, "-m", "jupyterlab", "--no-browser", f"--port={self.port}",
                   "--ServerApp.ip=127.0.0.1", "--ServerApp.port_retries=0", f"--ServerApp.root_dir={root}",
                   "--IdentityProvider.token=", "--ServerApp.password=", "--ServerApp.disable_check_xsrf=True",
                   "--ServerApp.allow_root=True", "--LabApp.expose_app_in_browser=True",
                   "--LabApp.extension_manager=readonly",
                   "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
                   f"--LabApp.user_settings_dir={settings}", f"--LabApp.workspaces_dir={root / 'workspaces'}"]
        with self.log.open("wb") as log:
            self.process = subprocess.Popen(command, cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL, start_new_session=True)

    def wait_ready(self) -> None:
        deadline = time.monotonic() + SERVER_START
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                pytest.fail(f"JupyterLab exited with code {self.process.returncode}:\n{_tail(self.log)}")
            try:
                _get(f"{self.url}/api/status")
                return
            except (urllib.error.URLError, OSError):
                time.sleep(1)
        pytest.fail(f"JupyterLab did not answer on {self.url} within {SERVER_START} s:\n{_tail(self.log)}")

    def stop(self) -> None:
        """Shut the kernels and the server down, then end whatever of them is left, by process id."""
        try:
            import psutil
            started = psutil.Process(self.process.pid).children(recursive=True)
        except Exception:  # noqa: BLE001 (no psutil, or the server is gone already)
            started = []
        if self.process.poll() is None:
            try:
                request = urllib.request.Request(f"{self.url}/api/shutdown", method="POST", data=b"")
                urllib.request.urlopen(request, timeout=10).close()  # noqa: S310 (localhost only)
            except (urllib.error.URLError, OSError):
                pass
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(10)
        for process in started:        # the kernel and its Spark JVM, if the shutdown left them
            try:
                process.kill()
            except Exception:  # noqa: BLE001 (already gone)
                pass


def _launch(playwright):  # type: ignore[no-untyped-def]
    """Debian's headless Chromium, or skip this test saying why it cannot start."""
    executable = shutil.which("chromium") or shutil.which("chromium-browser")
    if executable is None:
        pytest.skip("no chromium on PATH (apt-get install chromium; ./run test does it as root)")
    try:
        return playwright.chromium.launch(executable_path=executable, headless=True, timeout=120_000,
                                          args=["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"])
    except Exception as error:  # noqa: BLE001 (any failure to start the browser)
        lines = str(error).splitlines()
        said = [line.split("[err]", 1)[1].strip() for line in lines if "[err]" in line and "<" not in line]
        pytest.skip(f"headless Chromium ({executable}) did not start: {lines[0] if lines else error}"
                    + (f"; it said: {' | '.join(dict.fromkeys(said))[:500]}" if said else ""))


def _copy_notebook(root: Path) -> str:
    """The quickstart without outputs, in the server's root; its path relative to the root. Its long form
    (the day of history in a second warehouse) is left out: it shows no widget of its own, and
    tests/test_notebooks.py runs it in ./run stress."""
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    notebook.cells = without_long_forms(notebook.cells)
    for cell in notebook.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    target = root / "notebooks" / NOTEBOOK.name
    target.parent.mkdir(parents=True)
    nbformat.write(notebook, target)
    return f"notebooks/{NOTEBOOK.name}"


def _run_all(page) -> dict:  # type: ignore[no-untyped-def]
    """Run every cell and wait until each has run; fail at the first error or when time is up."""
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
    deadline, progress = time.monotonic() + RUN_ALL, {}
    while time.monotonic() < deadline:
        progress = page.evaluate(PROGRESS_JS)
        if progress.get("errors"):
            pytest.fail(f"a cell failed in the browser: {progress['errors']}")
        if progress.get("ready") and progress["done"] == progress["cells"] and progress["status"] == "idle":
            return progress
        time.sleep(2)
    pytest.fail(f"the notebook's cells did not all run within {RUN_ALL} s: {progress}")


def test_quickstart_in_jupyterlab_with_chromium(tmp_path):
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install -e '.[test]')")
    pytest.importorskip("jupyterlab", reason="jupyterlab is not installed (pip install -e '.[test]')")
    ARTIFACTS.mkdir(exist_ok=True)
    path = _copy_notebook(tmp_path)
    with sync_api.sync_playwright() as playwright:
        browser = _launch(playwright)         # first: without a browser, skip before starting JupyterLab
        lab = Lab(tmp_path)
        try:
            lab.wait_ready()
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.set_default_timeout(PAGE_LOAD * 1000)
            page.goto(f"{lab.url}/lab/tree/{path}", wait_until="domcontentloaded")
            try:
                page.wait_for_function(
                    "() => { const p = window.jupyterapp && window.jupyterapp.shell.currentWidget;"
                    " const k = p && p.sessionContext && p.sessionContext.session"
                    " && p.sessionContext.session.kernel; return k && k.status === 'idle'; }",
                    timeout=PAGE_LOAD * 1000, polling=1000)
            except sync_api.TimeoutError:
                page.screenshot(path=str(ARTIFACTS / "01-quickstart-not-ready.png"))
                pytest.fail(f"the notebook or its kernel was not ready within {PAGE_LOAD} s "
                            f"(screenshot in test-artifacts/):\n{_tail(lab.log)}")
            try:
                progress = _run_all(page)
            finally:
                page.screenshot(path=str(ARTIFACTS / "01-quickstart-lab.png"), full_page=True)
            assert progress["cells"] >= 10, progress
            _check_widgets(page, sync_api.TimeoutError)
        finally:
            browser.close()
            lab.stop()


def _check_explain_folds(page) -> None:  # type: ignore[no-untyped-def]
    """EXPLAIN VIEW shows its summary (the FSM) first and the generated ViewDFs folded below it (the
    notebook explains View1 before any data, so there is no step to plan yet): closed until clicked,
    then open; screenshots of both."""
    sections = page.locator("details.viewdf-section")
    assert sections.count() == 2, sections.count()         # the helper's ViewDF and View1's
    assert not any(sections.nth(k).evaluate("e => e.open") for k in range(2))
    first = sections.first
    first.scroll_into_view_if_needed()
    figure, box = page.locator(".viewdf-figure svg").first.bounding_box(), first.bounding_box()
    assert box["y"] >= figure["y"] + figure["height"] - 1   # below the drawing
    assert box["height"] < 60, box                          # one line while folded
    first.locator("xpath=..").screenshot(path=str(ARTIFACTS / "01-quickstart-explain-folded.png"))
    first.locator("summary").click()
    assert first.evaluate("e => e.open") and "CREATE VIEW View1__helper AS" in first.locator("pre").inner_text()
    first.screenshot(path=str(ARTIFACTS / "01-quickstart-explain-open.png"))


def _check_widgets(page, timeout_error) -> None:  # type: ignore[no-untyped-def]
    """The replay widget's controls, its status line and the timing plot, on screen; screenshots."""
    buttons = {name: page.locator(".widget-button", has_text=name).first for name in ("Play", "Step", "Reset")}
    status = page.locator(".widget-html", has_text="✓ equal").first
    plot = page.locator("img.widget-image, .jupyter-matplotlib canvas").first
    try:
        for button in buttons.values():
            button.wait_for(state="visible", timeout=WIDGETS * 1000)
        status.wait_for(state="visible", timeout=WIDGETS * 1000)
        plot.wait_for(state="visible", timeout=WIDGETS * 1000)
    except timeout_error:
        page.screenshot(path=str(ARTIFACTS / "01-quickstart-widgets-missing.png"), full_page=True)
        found = {name: button.count() for name, button in buttons.items()}
        pytest.fail(f"the replay widget did not render within {WIDGETS} s: buttons found {found}, "
                    f"status line {status.count()}, timing plot {plot.count()} "
                    "(screenshot in test-artifacts/01-quickstart-widgets-missing.png)")
    # Every batch ran, so Step is disabled and the status line reports the last part.
    assert buttons["Step"].is_disabled()
    assert "View1: part 2015-01-01 10:05:00" in status.inner_text()
    size = plot.evaluate("e => e.tagName === 'IMG' ? [e.naturalWidth, e.naturalHeight] : [e.width, e.height]")
    assert size[0] > 200 and size[1] > 200, f"the timing plot is {size[0]}x{size[1]} pixels"
    figure = page.locator(".viewdf-figure svg").first                 # EXPLAIN VIEW's FSM diagram
    figure.scroll_into_view_if_needed()
    assert figure.is_visible() and figure.bounding_box()["width"] > 100
    figure.screenshot(path=str(ARTIFACTS / "01-quickstart-fsm.png"))
    _check_explain_folds(page)
    buttons["Play"].scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "01-quickstart-replay.png"))
    plot.screenshot(path=str(ARTIFACTS / "01-quickstart-timing-plot.png"))


WINDOW_EXPLAIN = ARTIFACTS / "window-explain.png"


def test_window_explain_in_chromium(warehouse):
    """A window view's EXPLAIN as a notebook shows it (its HTML in Chromium): the helper chain drawn, the
    strategy and parts-read tables under it, and the index formulas, ViewDFs and plans folded below;
    a screenshot of the page."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install -e '.[test]')")
    from viewdf_magic.notebook.render import ResultView

    warehouse.execute("CREATE STREAM M (ts TIMESTAMP, src STRING, dest STRING, loss INT) TIMESTAMP ts "
                      "PARTITION LENGTH 60;"
                      "CREATE VIEW Loss60 AS SELECT src, sum(loss) AS total, max(loss) AS worst "
                      "FROM M [WINDOW 60 MINUTES SLIDE 30 MINUTES] GROUP BY src; SET MAINTENANCE MANUAL;"
                      "INSERT INTO M VALUES (TIMESTAMP '2015-01-01 10:00:10', 'a', 'b', 4)")
    [explained] = warehouse.run("EXPLAIN VIEW Loss60")
    page_html = f"<html><body>{ResultView.of(explained, 20, '')._repr_html_()}</body></html>"
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_api.sync_playwright() as playwright:
        browser = _launch(playwright)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.set_content(page_html)
            page.screenshot(path=str(WINDOW_EXPLAIN), full_page=True)
            figure = page.locator(".viewdf-figure svg")
            assert figure.is_visible() and figure.bounding_box()["width"] > 300
            titles = page.locator("strong").all_inner_texts()
            assert titles == ["Strategy per aggregate", "Parts the next step of each view reads"]
            tables = page.locator("table.viewdf")
            assert tables.nth(0).bounding_box()["y"] > figure.bounding_box()["y"]
            assert "Loss60__sum[2015-01-01 10:00:00], Loss60__chunks[2015-01-01 10:29:00]" in \
                tables.nth(1).inner_text()
            sections = page.locator("details.viewdf-section")
            assert sections.count() == 7           # the formulas, 4 ViewDFs, Loss60's query and plans
            assert not any(sections.nth(k).evaluate("e => e.open") for k in range(7))
            assert sections.first.locator("summary").inner_text() == \
                "Index formulas: the parts each view reads, per subscript"
            # everything shown open, the formulas folded: it fits a screen, where the text alone ran 1,620 px
            assert sections.first.bounding_box()["y"] < 900, sections.first.bounding_box()
            assert "j*30" not in page.locator("pre").first.inner_text()
            sections.first.locator("summary").click()
            assert "Loss60__chunks[j*30+29] (prefix)" in sections.first.locator("pre").inner_text()
        finally:
            browser.close()
