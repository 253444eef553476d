"""The %%viewdf and %viewdf magics in a real IPython shell, on the paper's network-monitoring example."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
import time
from dataclasses import replace
from pathlib import Path
from typing import NamedTuple

import nbformat
import pandas as pd
import pytest
from IPython.core.interactiveshell import InteractiveShell
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError
from IPython.utils.capture import CapturedIO, capture_output
from pyspark.sql import DataFrame
from shells import magic_shell

from test_paper_example import LOSSES, PAPER_DDL
from viewdf_magic.errors import ViewDFError

PAPER_INSERT = "INSERT INTO M VALUES " + ",\n  ".join(
    f"(TIMESTAMP '2015-01-01 10:0{minute}:00', '10.0.0.1', '10.0.0.2', {loss})"
    for minute, loss in enumerate(LOSSES))
AT_1004 = "SELECT * FROM View2 WHERE PART_TIMESTAMP = '2015-01-01 10:04:00'"
AT_1005 = "SELECT * FROM View2 WHERE PART_TIMESTAMP = '2015-01-01 10:05:00'"
CUT = "more exist. Set %config ViewDF.displaylimit = 0 or use -o VAR to get them all."


def paper_row(ct: int, sum_loss: int) -> re.Pattern:
    return re.compile(rf"10\.0\.0\.1\s+10\.0\.0\.2\s+{ct}\s+{sum_loss}\b")


def shown(captured: CapturedIO) -> str:
    """Everything a cell showed: printed text and the text form of displayed objects."""
    displayed = [output.data.get("text/plain", "") for output in captured.outputs]
    return "\n".join([captured.stdout, captured.stderr, *displayed])


class Paper(NamedTuple):
    shell: InteractiveShell
    setup_output: str              # what the cells creating and filling the paper example showed
    warehouse: Path


@pytest.fixture(scope="module")
def paper(spark, tmp_path_factory) -> Paper:
    """An IPython shell on the test session's ``spark`` whose current warehouse holds the paper example."""
    ip = magic_shell(spark)
    warehouse = tmp_path_factory.mktemp("magic") / "wh"
    with capture_output() as captured:
        ip.run_cell(f"%%viewdf --warehouse {warehouse}\n{PAPER_DDL}")
        ip.run_cell(f"%%viewdf\n{PAPER_INSERT}")
    return Paper(ip, shown(captured), warehouse)


@pytest.fixture
def shell(paper) -> InteractiveShell:
    return paper.shell


@pytest.fixture
def elsewhere(paper, tmp_path):
    """A fresh warehouse path for one test; the paper's warehouse is made current again afterwards."""
    yield tmp_path / "elsewhere"
    paper.shell.run_line_magic("viewdf", f"--warehouse {paper.warehouse}")


def run(shell: InteractiveShell, cell: str) -> tuple[str, CapturedIO]:
    with capture_output() as captured:
        outcome = shell.run_cell(cell)
    assert outcome.success, shown(captured)
    return shown(captured), captured


def returned(shell: InteractiveShell, cell: str) -> tuple[object, dict[str, str]]:
    """What a cell returned (its Out value) and IPython's formats of it (text/plain, text/html)."""
    with capture_output():
        outcome = shell.run_cell(cell)
    assert outcome.success, outcome.error_in_exec
    formats, _ = shell.display_formatter.format(outcome.result)
    return outcome.result, formats


def fail(shell: InteractiveShell, cell: str) -> str:
    """Run a cell that must fail with one ViewDFError shown without a traceback; what it showed."""
    with capture_output() as captured:
        outcome = shell.run_cell(cell)
    text = shown(captured)
    assert not outcome.success, text
    assert isinstance(outcome.error_in_exec, ViewDFError), repr(outcome.error_in_exec)
    assert "Traceback" not in text and "File \"" not in text
    return text


@pytest.fixture
def displaylimit(shell):
    """Set ``%config ViewDF.displaylimit`` for one test."""
    def set_limit(value: int | None) -> None:
        shell.run_line_magic("config", f"ViewDF.displaylimit = {value}")
    yield set_limit
    set_limit(10)


def test_setup_cells_report_what_they_did(paper):
    text = paper.setup_output
    assert "Created stream M (PARTITION LENGTH 60, TIMESTAMP ts)." in text
    assert "Created view View2 (PARTITION LENGTH 60)." in text
    assert "Inserted 7 rows into 7 parts of M; 14 view parts computed." in text
    assert re.search(r"Computed 14 view parts in [\d.]+ s: Helper\[2015-01-01 10:00:00 \.\. 10:06:00\], "
                     r"View2\[2015-01-01 10:00:00 \.\. 10:06:00\]", text)
    assert "Traceback" not in text


def test_computed_parts_are_reported_with_the_wall_time_of_maintenance(warehouse):
    from viewdf_magic.notebook.render import ResultView

    started = time.perf_counter()
    results = warehouse.run("""CREATE STREAM S (ts TIMESTAMP, v INT) PARTITION LENGTH 60;
        INSERT INTO S VALUES (TIMESTAMP '2015-01-01 10:00:00', 1);
        CREATE VIEW V AS INITIALIZE V[i] AS SELECT v FROM S[i] UPDATE V[j] AS SELECT v FROM S[j];
        INSERT INTO S VALUES (TIMESTAMP '2015-01-01 10:01:00', 2);
        SET MAINTENANCE MANUAL;
        SEAL S THROUGH '2015-01-01 10:04:00';
        STEP V;
        SET MAINTENANCE AUTO""")
    elapsed = time.perf_counter() - started
    maintained = [result for result in results if result.steps]
    assert [type(result.statement).__name__ for result in maintained] == ["CreateViewDF", "Insert", "Step",
                                                                          "SetMaintenance"]
    assert all(0 < result.maintenance_seconds < elapsed for result in maintained)
    # Steps run together, or a run of parts in one job, each count their job's seconds: their sum is not the
    # time that passed.
    result = maintained[-1]
    result.steps = [replace(step, seconds=367.0) for step in result.steps]
    result.maintenance_seconds = 412.0
    assert ResultView.of(result, 10, "").steps == "Computed 2 view parts in 412.00 s: V[2015-01-01 10:03:00 .. 10:04:00]"


def test_cell_shows_the_paper_rows(shell):
    text, captured = run(shell, f"%%viewdf\n{AT_1004};\n{AT_1005}")
    assert paper_row(4, 71).search(text) and paper_row(5, 87).search(text)
    assert text.count("(1 row)") == 2 and CUT not in text
    html = captured.outputs[0].data["text/html"]
    assert "<table" in html and "<td>71</td>" in html


def test_rows_beyond_displaylimit_are_cut_with_a_notice(shell, displaylimit):
    displaylimit(3)
    _, formats = returned(shell, "%%viewdf\nSELECT * FROM M ORDER BY ts")
    text = formats["text/plain"]
    assert f"Showing the first 3 rows; {CUT}" in text
    assert len(re.findall(r"2015-01-01 10:0\d:00\s+10\.0\.0\.1", text)) == 3
    assert "Showing the first 3 rows" in formats["text/html"]


@pytest.mark.parametrize("limit", [7, 0, None])
def test_rows_within_displaylimit_are_all_shown(shell, displaylimit, limit):
    displaylimit(limit)
    text, _ = run(shell, "%viewdf SELECT * FROM M")
    assert "(7 rows)" in text and "Showing the first" not in text


def test_describe_shows_definition_and_every_column(shell, displaylimit):
    displaylimit(1)
    text, _ = run(shell, "%viewdf DESCRIBE View2")
    assert "view View2, PARTITION LENGTH 60, reads Helper" in text
    assert "WHERE ct >= 4" in text
    assert re.search(r"sum_loss\s+int", text) and "(5 rows)" in text


def test_out_stores_query_rows_as_spark_dataframe(shell, spark):
    run(shell, "%%viewdf -o losses\nSHOW STREAMS;\nSELECT loss FROM M WHERE loss > 20 ORDER BY loss")
    losses = shell.user_ns["losses"]
    assert isinstance(losses, DataFrame) and losses.sparkSession is spark
    assert [row.loss for row in losses.collect()] == [24]


def test_out_stores_a_show_table_as_spark_dataframe(shell):
    run(shell, "%viewdf -o views SHOW VIEWS")
    views = shell.user_ns["views"]
    assert isinstance(views, DataFrame)
    assert sorted(row["name"] for row in views.collect()) == ["Helper", "View2"]


def test_line_magic_keeps_quotes_and_explains(shell):
    text, _ = run(shell, f"%viewdf --explain {AT_1005}")
    assert paper_row(5, 87).search(text)
    assert "== Physical Plan ==" in text and "== Optimized Logical Plan ==" in text


def test_explain_is_a_no_op_for_other_statements(shell):
    text, _ = run(shell, "%viewdf --explain SHOW STREAMS")
    assert "Physical Plan" not in text and "(1 row)" in text


def test_explain_after_create_view_shows_the_fsm(shell, elsewhere):
    run(shell, f"%viewdf --warehouse {elsewhere}")
    text, captured = run(shell, "%%viewdf --explain\n"
                                "CREATE STREAM S (ts TIMESTAMP, k STRING, x INT) TIMESTAMP ts PARTITION LENGTH 60;\n"
                                "CREATE VIEW Up AS SELECT k, count(*) AS n FROM S PATTERN [a, b+]\n"
                                "  WHERE a.x > 0 AND b[i].x > b[i-1].x GROUP BY k")
    assert "Created view Up" in text and "Edges:" in text and "E[2][2]" in text
    assert "CREATE VIEW Up__helper AS" in text and "Next part of Up__helper: unknown" in text
    html = "".join(output.data.get("text/html", "") for output in captured.outputs)
    assert html.count("<svg") == 1 and "b[i].x &gt; b[i-1].x" in html


def test_explain_view_shows_a_summary_then_folded_viewdfs_and_plans(shell):
    text, captured = run(shell, "%viewdf EXPLAIN VIEW Helper")
    [markup] = [output.data["text/html"] for output in captured.outputs if "text/html" in output.data]
    summary, folded = markup.split("<details", 1)
    # first what a reader needs: the next part and the parts it reads; no ViewDF text and no plan yet
    assert "Next part: Helper[23668447] (2015-01-01 10:07:00), UPDATE, waiting." in summary
    assert "M[23668447]" in summary and "Helper[23668446]" in summary
    assert "CREATE VIEW" not in summary and "Physical Plan" not in summary
    titles = re.findall(r"<details class='viewdf-section'><summary>(.*?)</summary>", markup)
    assert titles == ["ViewDF of Helper",
                      "Query of Helper[23668446] (2015-01-01 10:06:00), the newest stored part",
                      "Spark plans of Helper[23668446] (2015-01-01 10:06:00), the newest stored part"]
    assert "<details open" not in markup                       # folded until opened
    plans = folded.split("<summary>Spark plans of ", 1)[1]
    assert "FileScan parquet" in plans and "ExistingRDD" not in plans   # the plans read the stored parts
    # a terminal gets every section, titled, after the summary
    assert text.index("Next part: Helper[") < text.index("--- ViewDF of Helper ---") \
        < text.index("--- Spark plans of Helper[23668446]")


def test_error_fails_the_cell_with_one_positioned_message_without_traceback(shell):
    text = fail(shell, "%%viewdf\nSHOW VIEWS;\nSELECT src,\n  nope FROM View2;\nSELECT 'later' || 'statement' AS marker")
    assert "Helper" in text  # the statement before the error still shows its rows
    assert "at line 4, column 3:" in text
    assert re.search(r"\n\s+nope FROM View2;\n\s+\^\^\^\^", text)
    assert "laterstatement" not in text   # the statement after the error did not run


def test_runtime_error_fails_the_cell_with_one_message(shell):
    text = fail(shell, "%viewdf SELECT 1 / 0 AS boom")
    assert "running the query: Division by zero" in text
    assert "Warning" not in text


def test_parse_error_runs_nothing(shell):
    text = fail(shell, "%%viewdf\nSHOW VIEWS;\nSHOW NOTHING")
    assert "at line 3, column 6:" in text and "^" in text
    assert "Helper" not in text


def test_error_lines_are_numbered_as_in_the_editor(shell):
    """In a cell the %%viewdf line is line 1, as the editor numbers it; a one-line %viewdf is line 1."""
    with capture_output():
        cell = shell.run_cell("%%viewdf\nSHOW VIEWS;\nSHOW NOTHING").error_in_exec
        line = shell.run_cell("%viewdf SHOW NOTHING").error_in_exec
    assert (cell.line, cell.column) == (3, 6)
    assert str(cell).splitlines()[1:] == ["  at line 3, column 6:", "    SHOW NOTHING", "         ^^^^^^^"]
    assert (line.line, line.column) == (1, 6)


@pytest.mark.parametrize("statement,suggestion", [
    ("CREAT STREAM S (ts TIMESTAMP) PARTITION LENGTH 60", "found 'CREAT'; did you mean CREATE?"),
    ("CREATE VIEW V AS INITIALISE V[i] AS SELECT * FROM M[i] UPDATE V[j] AS SELECT * FROM M[j]",
     "found 'INITIALISE'; did you mean INITIALIZE?"),
    ("CREATE VIEW V AS INITIALIZE V[i] AS SELECT * FROM M[i] UPDAT V[j] AS SELECT * FROM M[j]",
     "found 'UPDAT'; did you mean UPDATE?"),
    ("CREATE STREM S (ts TIMESTAMP) PARTITION LENGTH 60", "found 'STREM'; did you mean STREAM?"),
    ("SELEC * FROM M", "found 'SELEC'; did you mean SELECT?"),
])
def test_misspelt_keywords_get_a_suggestion(shell, statement, suggestion):
    text = fail(shell, f"%%viewdf\n{statement}")
    assert suggestion in text and "at line 2, column" in text


def test_unknown_words_get_no_suggestion(shell):
    text = fail(shell, "%viewdf FROBNICATE M")
    assert "found 'FROBNICATE'" in text and "did you mean" not in text


def test_errors_found_while_computing_parts_point_into_the_cell(shell, elsewhere):
    run(shell, f"%viewdf --warehouse {elsewhere}")
    cell = ("%%viewdf\nSHOW STREAMS; -- first the streams\n"
            "CREATE STREAM D (ts TIMESTAMP, x INT) PARTITION LENGTH 60;\n"
            "INSERT INTO D VALUES (TIMESTAMP '2020-01-01 00:00:00', 0);\n"
            "CREATE VIEW Inverse AS INITIALIZE Inverse[i] AS SELECT 1 / x AS y FROM D[i]\n"
            "  UPDATE Inverse[j] AS SELECT 1 / x AS y FROM D[j]")
    text = fail(shell, cell)
    # Found while computing Inverse's first part from its stored definition: the position is the cell's.
    assert "computing Inverse[26297280] (INITIALIZE): Division by zero" in text
    assert "at line 5, column 56:" in text
    assert "\n    CREATE VIEW Inverse AS INITIALIZE Inverse[i] AS SELECT 1 / x AS y FROM D[i]\n" + " " * 59 + "^^^^^" in text
    # Found while parsing: also the cell's position.
    text = fail(shell, "%%viewdf\nSHOW STREAMS; -- first the streams\n\nSELECT 1 FROM D WHERE")
    assert "at line 4, column" in text


def test_a_failing_statement_fails_the_cell_in_a_notebook_run(tmp_path):
    """Run All (nbclient, as papermill) stops at the failing %%viewdf cell; later cells do not run."""
    marker = tmp_path / "after.txt"
    notebook = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("%load_ext viewdf_magic"),
        nbformat.v4.new_code_cell(f"%%viewdf --warehouse {tmp_path / 'wh'}\n"
                                  "CREAT STREAM M (ts TIMESTAMP) PARTITION LENGTH 60"),
        nbformat.v4.new_code_cell(f"open({str(marker)!r}, 'w').write('ran')"),
    ])
    client = NotebookClient(notebook, timeout=120, kernel_name="python3", allow_errors=False)
    with pytest.raises(CellExecutionError) as failure:
        client.execute()
    assert "did you mean CREATE?" in str(failure.value)
    assert not marker.exists()
    error = [o for o in notebook.cells[1].outputs if o.output_type == "error"]
    assert len(error) == 1
    shown_lines = "\n".join(error[0].traceback)
    assert "at line 2, column 1:" in shown_lines and "^^^^^" in shown_lines
    assert "Traceback" not in shown_lines and "File " not in shown_lines
    assert notebook.cells[2].outputs == [] and notebook.cells[2].get("execution_count") is None


def test_config_lists_the_options(shell):
    text, _ = run(shell, "%config ViewDF")
    for option in ("ViewDF.displaylimit=<Int>", "ViewDF.warehouse=<Unicode>", "ViewDF.progress=<Bool>"):
        assert option in text
    text, _ = run(shell, "%config")
    assert text.count("ViewDF") == 1


def test_negative_displaylimit_is_rejected(shell, caplog):
    run(shell, "%config ViewDF.displaylimit = -1")
    assert "ViewDF.displaylimit must be 0 (all rows), None or a positive number" in caplog.text
    assert shell.run_line_magic("config", "ViewDF.displaylimit") == 10


def test_warehouse_choice(shell, paper, elsewhere):
    current, _ = run(shell, "%viewdf")
    assert f"Current warehouse: file:{paper.warehouse}\n" in current
    run(shell, f"%config ViewDF.warehouse = '{elsewhere}'")
    text, _ = run(shell, "%viewdf SHOW STREAMS")
    assert "(0 rows)" in text  # the configured warehouse, new and empty
    chosen, _ = run(shell, f"%viewdf --warehouse {paper.warehouse}")
    assert chosen == current
    text, _ = run(shell, "%viewdf SHOW STREAMS")
    assert "(1 row)" in text


def test_step_shows_full_step_reports(shell, elsewhere):
    text, _ = run(shell, f"""%%viewdf --warehouse {elsewhere}
SET MAINTENANCE MANUAL;
CREATE STREAM S (ts TIMESTAMP, v INT) TIMESTAMP ts PARTITION LENGTH 60;
CREATE VIEW V AS INITIALIZE V[i] AS SELECT v FROM S[i] UPDATE V[j] AS SELECT v + 1 AS v FROM S[j];
INSERT INTO S VALUES (TIMESTAMP '2015-01-01 10:00:00', 41), (TIMESTAMP '2015-01-01 10:01:00', 41);
STEP V 2""")
    assert "Computed 2 view parts." in text
    assert "V[23668441] (2015-01-01 10:01:00) UPDATE: 1 row in " in text
    assert "S[j] = S[23668441] (2015-01-01 10:01:00, 1 row)" in text
    assert "SELECT v + 1 AS v FROM S[23668441]" in text and re.search(r"rows:\n\s+v\n\s+42", text)


@pytest.mark.parametrize("line,statement", [
    ("pending", "SHOW PENDING"),
    ("maintenance manual", "SET MAINTENANCE manual"),
    ("step", "STEP"),
    ("step V -n 2 --plan", "STEP V 2 WITH PLAN"),
    ("step --all", "STEP ALL"),
    ("SELECT 'step' AS s", "SELECT 'step' AS s"),
])
def test_line_shorthands_become_statements(line, statement):
    from viewdf_magic.notebook.magic import shortcut

    assert shortcut(line) == statement


def test_stepping_with_line_shorthands(shell, tmp_path):
    run(shell, f"""%%viewdf --warehouse {tmp_path / 'steps'}
CREATE STREAM S (ts TIMESTAMP, v INT) TIMESTAMP ts PARTITION LENGTH 60;
CREATE VIEW V AS INITIALIZE V[i] AS SELECT v FROM S[i] UPDATE V[j] AS SELECT v + 1 AS v FROM S[j]""")
    text, _ = run(shell, "%viewdf maintenance manual")
    assert "Maintenance is manual." in text
    run(shell, "%viewdf INSERT INTO S VALUES (TIMESTAMP '2015-01-01 10:00:00', 1), "
               "(TIMESTAMP '2015-01-01 10:01:00', 2)")
    text, _ = run(shell, "%viewdf pending")
    assert re.search(r"V\s+23668440\s+2015-01-01 10:00:00\s+INITIALIZE\s+S\[i\]\s+S\[23668440\]\s+True\s+True", text)
    text, _ = run(shell, "%viewdf step V --plan")
    assert "V[23668440] (2015-01-01 10:00:00) INITIALIZE: 1 row in " in text and "Physical Plan" in text
    text, _ = run(shell, "%viewdf step --all")
    assert "Computed 1 view part." in text
    text, _ = run(shell, "%viewdf maintenance auto")
    assert "Maintenance is auto." in text


def test_connect_moves_the_notebook_to_a_session_and_reopens_warehouses_on_it(shell, spark, paper, tmp_path):
    shell.user_ns.pop("spark", None)
    text, _ = run(shell, f"%viewdf connect --master local[2] --conf spark.sql.shuffle.partitions=3 "
                         f"--warehouse {paper.warehouse}")
    assert text.strip() == f"Spark {spark.version} on local[2]; warehouse file:{paper.warehouse}"
    assert shell.user_ns["spark"] is spark and spark.conf.get("spark.sql.shuffle.partitions") == "3"
    text, _ = run(shell, f"%viewdf {AT_1004}")
    assert paper_row(4, 71).search(text)
    spark.conf.set("spark.sql.shuffle.partitions", "2")


@pytest.mark.parametrize("line,message", [
    ("connect", "usage: %viewdf connect"),
    ("connect --master local[2] --remote sc://h:1", "usage: %viewdf connect"),
    ("connect --master local[2] --conf nokeyvalue", "usage: %viewdf connect"),
    ("connect --master local[3]", "this process already runs a Spark session on local[2]; stop it"),
])
def test_connect_errors(shell, spark, line, message):
    with capture_output() as captured:
        shell.run_cell(f"%viewdf {line}")
    assert message in captured.stderr and "Traceback" not in captured.stderr
    assert shell.user_ns["spark"] is spark


@pytest.fixture(scope="module", autouse=True)
def terminal_ipython(tmp_path_factory):
    """The plain ``ipython`` executable running the paper example, fed cells as typed in a terminal
    (a cell magic ends at two blank lines), with its own embedded Spark.

    It starts before this module's first test and runs alongside the in-process ones; the
    fixture yields a function that waits for it and returns (exit code, stdout, stderr).
    """
    folder = tmp_path_factory.mktemp("terminal")
    script = folder / "paper.ipy"
    script.write_text(textwrap.dedent("""\
        %load_ext viewdf_magic
        %config ViewDF.progress = False
        %%viewdf --warehouse {warehouse}
        {ddl}
        {insert}


        %%viewdf
        {at_1004}


        %viewdf {at_1005}
        exit
        """).format(warehouse=folder / "wh", ddl=PAPER_DDL.strip(), insert=PAPER_INSERT,
                    at_1004=AT_1004, at_1005=AT_1005))
    env = {**os.environ, "IPYTHONDIR": str(folder / "ipython")}
    with script.open() as stdin, (folder / "out").open("w") as out, (folder / "err").open("w") as err:
        process = subprocess.Popen([sys.executable, "-m", "IPython", "--simple-prompt", "--colors=nocolor"],
                                   stdin=stdin, stdout=out, stderr=err, env=env)

    def finished() -> tuple[int, str, str]:
        code = process.wait(timeout=180)
        return code, (folder / "out").read_text(), (folder / "err").read_text()
    yield finished
    process.kill()
    process.wait()


def test_real_ipython_in_a_terminal(terminal_ipython):
    code, out, err = terminal_ipython()
    assert code == 0, err
    assert "Created view View2" in out
    assert paper_row(4, 71).search(out) and paper_row(5, 87).search(out)
    assert "Traceback" not in out + err


def test_a_final_query_is_the_value_of_the_line_and_of_the_cell(shell, spark, displaylimit):
    displaylimit(2)
    value, formats = returned(shell, "%viewdf SELECT loss FROM M WHERE loss > 14 ORDER BY loss")
    assert isinstance(value, DataFrame) and value.sparkSession is spark
    assert [row.loss for row in value.collect()] == [15, 16, 20, 24]
    assert f"Showing the first 2 rows; {CUT}" in formats["text/plain"]
    assert "<td>15</td>" in formats["text/html"] and "<td>20</td>" not in formats["text/html"]
    value, _ = returned(shell, "%%viewdf\nSHOW STREAMS;\nSELECT max(loss) AS peak FROM M")
    assert [row.peak for row in value.collect()] == [24]
    value, _ = returned(shell, "%%viewdf\nSELECT 1 AS one;\nSHOW STREAMS")      # a query, but not the last
    assert value is None


def test_assignment_from_the_line_magic(shell):
    run(shell, "peaks = %viewdf SELECT src, max(loss) AS peak FROM M GROUP BY src")
    assert [tuple(row) for row in shell.user_ns["peaks"].collect()] == [("10.0.0.1", 24)]


def test_other_spark_dataframes_keep_their_own_display(shell, spark):
    _, formats = returned(shell, "%viewdf SELECT 1 AS one")
    assert "(1 row)" in formats["text/plain"]
    other = spark.range(3)
    formats, _ = shell.display_formatter.format(other)
    assert formats["text/plain"] == "DataFrame[id: bigint]" and "text/html" not in formats


def test_autopandas_returns_and_stores_pandas(shell):
    shell.run_line_magic("config", "ViewDF.autopandas = True")
    try:
        value, _ = returned(shell, "%viewdf SELECT loss FROM M ORDER BY loss")
        run(shell, "%viewdf -o shown SHOW VIEWS")
    finally:
        shell.run_line_magic("config", "ViewDF.autopandas = False")
    assert isinstance(value, pd.DataFrame) and value["loss"].tolist() == sorted(LOSSES)
    assert isinstance(shell.user_ns["shown"], pd.DataFrame)
    assert sorted(shell.user_ns["shown"]["name"]) == ["Helper", "View2"]


def test_capture_stores_the_rows_instead_of_showing_them(shell):
    value, _ = returned(shell, "%%viewdf high <<\nSELECT loss FROM M WHERE loss >= 20 ORDER BY loss")
    assert value is None
    assert [row.loss for row in shell.user_ns["high"].collect()] == [20, 24]
    text, _ = run(shell, "%viewdf low << SELECT loss FROM M WHERE loss < 10 ORDER BY loss")
    assert [row.loss for row in shell.user_ns["low"].collect()] == [6, 7]
    assert "(2 rows)" not in text
    # << inside a statement is Spark's shift, not a capture
    value, _ = returned(shell, "%viewdf SELECT 1 << 3 AS shifted")
    assert [row.shifted for row in value.collect()] == [8]


def test_help_lists_options_statements_and_commands(shell):
    for line in ("%viewdf --help", "%viewdf -h", "%%viewdf --help\nSELECT 1"):
        text, _ = run(shell, line)
        assert "--warehouse PATH" in text and "-o VAR" in text and "--explain" in text
        assert "CREATE [OR REPLACE] VIEW [IF NOT EXISTS]" in text and "%viewdf replay STREAM --from" in text
        assert "autopandas" in text


def test_help_begins_with_the_usage_and_says_what_o_stores(shell):
    text, _ = run(shell, "%viewdf --help")
    assert text.startswith("usage: %viewdf [--warehouse PATH] [-o VAR] [--explain]\n\nRun ViewDF statements: ")
    assert "::" not in text
    assert (" -o VAR, --out VAR Store the last rows produced in the variable VAR: a Spark DataFrame, or pandas with "
            "%config ViewDF.autopandas = True. --explain ") in re.sub(r"\s+", " ", text)   # as wrapped to any width

def test_options_are_not_abbreviated(shell, paper, tmp_path):
    with capture_output() as captured:
        outcome = shell.run_cell(f"%%viewdf --warehous {tmp_path / 'typo'}\nSHOW STREAMS")
    assert not outcome.success and "unrecognized arguments: --warehous" in captured.stderr
    assert not (tmp_path / "typo").exists()


def test_verify_leaves_max_difference_empty_when_compared_exactly(shell, elsewhere):
    run(shell, f"""%%viewdf --warehouse {elsewhere}
CREATE STREAM S (ts TIMESTAMP, v INT) PARTITION LENGTH 60;
INSERT INTO S VALUES (TIMESTAMP '2015-01-01 10:00:00', 1), (TIMESTAMP '2015-01-01 10:01:00', 2);
CREATE VIEW Twice AS INITIALIZE Twice[i] AS SELECT 2 * v AS w FROM S[i] UPDATE Twice[j] AS SELECT 2 * v AS w FROM S[j]
  RECOMPUTE Twice[k] AS SELECT 2 * v AS w FROM S[k]""")
    text, captured = run(shell, "%viewdf VERIFY VIEW Twice")
    assert "Twice: all 2 parts equal their recomputation." in text
    html = captured.outputs[0].data["text/html"]
    cells = re.findall(r"<td>(.*?)</td>", html)
    assert cells == ["23668440", "2015-01-01 10:00:00", "1", "0", "0", "", "True",
                     "23668441", "2015-01-01 10:01:00", "1", "0", "0", "", "True"]
    assert re.search(r"23668440\s+2015-01-01 10:00:00\s+1\s+0\s+0\s+True", text) and "NaN" not in text


def test_lateness_command_plots_the_late_arrivals_and_refuses_a_view(shell):
    """``%viewdf lateness M`` returns the lateness figure (the paper's rows all came on time: no dots, and
    no repair seconds); a view's name is refused with the usual one-line error."""
    from matplotlib.figure import Figure

    figure, formats = returned(shell, "%viewdf lateness M")
    assert isinstance(figure, Figure)
    left, right = figure.axes
    assert [t.get_text() for t in left.texts] == ["no late rows"]
    assert [bar.get_width() for bar in right.patches] == [0.0, 0.0]        # Helper and View2
    assert "no stream named 'View2'" in fail(shell, "%viewdf lateness View2")
