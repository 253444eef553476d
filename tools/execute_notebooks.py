"""Run every notebook in notebooks/ top to bottom on a fresh kernel and save it with its outputs,
so the repository's preview shows them (``./run notebooks``). tests/test_notebooks.py runs them
again and fails when the saved outputs no longer match what the notebooks now show."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import nbformat
from nbclient import NotebookClient

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"


# The tag of the cells that load and replay long histories (a day of minutes): minutes of work each.
LONG_FORM = "long-form"


def is_long_form(cell: nbformat.NotebookNode) -> bool:
    """Whether a cell belongs to a notebook's long form (tagged ``long-form``)."""
    return LONG_FORM in cell.get("metadata", {}).get("tags", [])


def without_long_forms(cells: list[nbformat.NotebookNode]) -> list[nbformat.NotebookNode]:
    """``cells`` less the ones tagged ``long-form`` (the short form every test runs)."""
    return [cell for cell in cells if not is_long_form(cell)]


def execute(path: Path, working_directory: str, long_forms: bool = True) -> nbformat.NotebookNode:
    """``path`` run on a fresh python3 kernel in ``working_directory``; outputs kept, cell timings and
    widget state not (they change on every run and say nothing to a reader). Without ``long_forms``,
    the cells tagged ``long-form`` are left out (the test suite's short run; no later cell needs them)."""
    notebook = nbformat.read(path, as_version=4)
    if not long_forms:
        notebook.cells = without_long_forms(notebook.cells)
    NotebookClient(notebook, timeout=600, kernel_name="python3", record_timing=False, store_widget_state=False,
                   resources={"metadata": {"path": working_directory}}).execute()
    return notebook


def main(names: list[str]) -> int:
    paths = [NOTEBOOKS / f"{name.removesuffix('.ipynb')}.ipynb" for name in names] or sorted(NOTEBOOKS.glob("*.ipynb"))
    for number, path in enumerate(paths, 1):
        print(f"[{number}/{len(paths)}] {path.name}", flush=True)
        with tempfile.TemporaryDirectory(prefix="viewdf-notebook-") as folder:
            nbformat.write(execute(path, folder), path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
