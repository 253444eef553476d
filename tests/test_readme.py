"""The README's notebook cells run as written, and the definitions cell runs again unchanged."""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path

import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output
from shells import magic_shell

ROOT = Path(__file__).resolve().parent.parent


def readme_cells() -> list[str]:
    """The ``%%viewdf`` cells of the README's "In a notebook" section, in order."""
    text = (ROOT / "README.md").read_text()
    section = text[text.index("## In a notebook"):text.index("### How the magic behaves")]
    return [cell for cell in re.findall(r"```sql\n(.*?)```", section, re.DOTALL) if cell.startswith("%%viewdf")]


@pytest.fixture
def shell(spark, tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)          # the README's LOAD path is relative to the repository's root
    return magic_shell(spark)


def run(shell: InteractiveShell, cell: str) -> tuple[str, object]:
    with capture_output() as captured:
        outcome = shell.run_cell(cell)
    shown = "\n".join([captured.stdout, captured.stderr,
                       *(output.data.get("text/plain", "") for output in captured.outputs)])
    assert outcome.success, shown
    return shown, outcome.result


def test_readme_cells_run_and_definitions_rerun(shell, tmp_path):
    definitions, data, queries, translated, corrected = readme_cells()
    definitions = definitions.replace("--warehouse viewdf-warehouse", f"--warehouse {tmp_path / 'wh'}")
    first, _ = run(shell, definitions)
    assert "Created stream M" in first and "Created view View2" in first
    again, _ = run(shell, definitions)
    assert again.count("already exists with this definition; nothing changed.") == 3
    shown, _ = run(shell, data)
    assert "Inserted 1 row into 1 part of M" in shown and "Inserted 13 rows into 7 parts of M" in shown
    shown, latest = run(shell, queries)
    # 10:04: the paper's pair has lost more than 10 in minutes 10:01-10:04 (12+15+24+20); the second pair's
    # run started at 10:02 (25, 26, 27). At 10:06 the paper's pair is back to 7; the second pair has 25..29.
    assert re.search(r"10\.0\.0\.1\s+10\.0\.0\.2\s+4\s+71", shown)
    assert [tuple(row) for row in latest.select("src", "dest", "ct", "sum_loss").collect()] == \
        [("10.0.0.3", "10.0.0.4", 5, 135)]
    assert latest.select("PART_TIMESTAMP").first()[0] == datetime(2015, 1, 1, 10, 6)
    shown, _ = run(shell, translated)
    assert "View1: all 7 parts equal their recomputation" in shown
    assert "Created view Loss60" in shown
    shown, paper_pair = run(shell, corrected)
    assert "UPDATE would read 1 of M's 7 stored parts (2015-01-01 10:03:00), chosen by the condition on ts, and " \
        "update 1 row in 1 part" in shown
    assert "Updated 1 row of M in 1 part" in shown
    assert paper_pair.count() == 0          # 12, 15, 4, 20: no four minutes in a row above 10 any more
