"""The ``%%viewdf`` cell magic and ``%viewdf`` line magic, configured with ``%config ViewDF``."""

from __future__ import annotations

import argparse
import re
import shlex
import sys
from collections import OrderedDict
from typing import TYPE_CHECKING, Iterable

import pandas as pd
import pyarrow as pa
from matplotlib.figure import Figure
from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, magics_class
from IPython.core.magic_arguments import MagicHelpFormatter, argument, magic_arguments, parse_argstring
from IPython.display import display
from pyspark.sql import DataFrame, SparkSession
from traitlets import Bool, Int, TraitError, Unicode, observe, validate

from ..errors import ViewDFError
from ..language.statements import CreateQueryView, CreateViewDF, Query
from ..session import connect_session, is_spark_session
from ..engine.results import Result
from ..warehouse import Warehouse, statement_count, warehouse_location
from .batches import NetworkStream, Source
from .lateness_plot import lateness_figure
from .lineage import LineageViewer
from .render import ResultView, error_text
from .replay import Replay

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

ALL_ROWS_HINT = "Set %config ViewDF.displaylimit = 0 or use -o VAR to get them all."
RETURNED_RESULTS = 32      # query results the magics returned whose display they still know
CAPTURE = re.compile(r"(?P<options>.*?)(?:^|\s)(?P<variable>[A-Za-z_]\w*)\s*<<(?P<rest>.*)", re.DOTALL)
STATEMENTS_HELP = """\
Statements (';'-separated in a cell; see docs/language.md):
  CREATE [OR REPLACE] VIEW [IF NOT EXISTS] v [CASCADE] AS INITIALIZE v[i] AS ... UPDATE v[j] AS ...
  CREATE VIEW v AS SELECT ... FROM S PATTERN [...] | FROM S [WINDOW w] ...   (translated into ViewDFs)
  CREATE STREAM [IF NOT EXISTS] s (...) PARTITION LENGTH n;   CREATE TABLE [IF NOT EXISTS] t ...
  INSERT INTO s ...;  LOAD 'path' INTO s;  SELECT ...;  SHOW STREAMS|VIEWS|TABLES|PARTS x|PENDING|LATENESS
  DELETE FROM s [WHERE ...];  UPDATE s SET c = ... [WHERE ...];  EXPLAIN DELETE|UPDATE ...
  DESCRIBE x;  EXPLAIN VIEW v;  VERIFY VIEW v;  DROP STREAM|VIEW|TABLE [IF EXISTS] x [CASCADE]
  SEAL s THROUGH 'ts';  ALTER STREAM|VIEW x SET ...;  SET MAINTENANCE AUTO|MANUAL;  STEP ...;  VACUUM
Line-magic commands:
  %viewdf pending | maintenance manual|auto | step [VIEW] [-n N] [--plan] [--all]
  %viewdf replay STREAM --from SOURCE [--views V,W] [--naive] [--speed N]
  %viewdf lineage [VIEW] [--width N]
  %viewdf lateness STREAM   (late rows by parts behind, and the views' repair seconds, as a plot)
  %viewdf connect --master URL | --remote sc://HOST:PORT [--conf KEY=VALUE] [--warehouse PATH]
Results: x = %viewdf SELECT ... returns the rows (a Spark DataFrame; pandas with
%config ViewDF.autopandas = True); %%viewdf x << stores the last rows in x instead of showing them.
"""


class StatementFailed(ViewDFError):
    """A statement's error raised out of a magic, so the cell fails (Run All stops there), shown as
    its message and caret without a Python traceback, as IPython shows a UsageError."""

    color = True

    def _render_traceback_(self) -> list[str]:
        return error_text(self, self.color).splitlines()


def failed(error: ViewDFError, color: bool, cell: str | None = None) -> StatementFailed:
    """``error`` as a StatementFailed (in red when ``color``). An error in ``cell`` (a ``%%viewdf`` cell's body)
    numbers its lines as the editor does: the ``%%viewdf`` line is line 1."""
    first_line = 2 if cell is not None and error.text == cell else error.first_line
    shown = StatementFailed(error.message, text=error.text, position=error.position, end=error.end,
                            first_line=first_line)
    shown.color = color
    return shown




@magics_class
class ViewDF(Magics):
    """Runs ViewDF statements against a warehouse on the notebook's Spark session."""

    shell: InteractiveShell      # given when IPython registers the magics

    displaylimit = Int(10, allow_none=True, help=(
        "Rows of a result to display; 0 or None shows them all.")).tag(config=True)
    warehouse = Unicode("viewdf-warehouse", help=(
        "Warehouse used when no --warehouse was given; relative paths are relative to the "
        "working directory.")).tag(config=True)
    progress = Bool(True, help="Show a progress bar while maintenance computes many view parts.").tag(config=True)
    autopandas = Bool(False, help=(
        "Return and store (-o, <<) query results as pandas DataFrames instead of Spark DataFrames.")).tag(config=True)

    def __init__(self, shell) -> None:
        self._open: dict[str, Warehouse] = {}     # by qualified path: one Warehouse object per warehouse
        self._current: str | None = None          # the path last chosen with --warehouse
        self._returned: OrderedDict[int, tuple[DataFrame, ResultView]] = OrderedDict()   # by id of the frame
        super().__init__(shell=shell)

    @validate("displaylimit")
    def _check_displaylimit(self, proposal):
        if proposal.value is not None and proposal.value < 0:
            raise TraitError("ViewDF.displaylimit must be 0 (all rows), None or a positive number")
        return proposal.value

    @observe("warehouse")
    def _use_configured_warehouse(self, change) -> None:
        self._current = None

    @observe("progress")
    def _reopen_warehouses(self, change) -> None:
        self._open.clear()

    @line_cell_magic
    @magic_arguments()
    @argument("--warehouse", metavar="PATH",
              help="Open (or reuse) the warehouse at PATH and make it the current one.")
    @argument("-o", "--out", metavar="VAR",
              help="Store the last rows produced in the variable VAR: a Spark DataFrame, or pandas with "
                   "%%config ViewDF.autopandas = True.")
    @argument("--explain", action="store_true", help="Also show Spark's logical and physical plans of queries, "
                                                      "and EXPLAIN VIEW of each view the cell creates.")
    def viewdf(self, line: str, cell: str | None = None) -> object:
        """Run ViewDF statements: those of the cell (``%%viewdf``) or the one on the line (``%viewdf``).

        A failing statement fails the cell (the statements before it have taken effect). When the last
        statement is a query, its rows are returned (``x = %viewdf SELECT ...``): a Spark DataFrame, or
        pandas with ``%config ViewDF.autopandas = True``. ``%%viewdf x <<`` stores the last rows in ``x``
        instead. With no statement, ``%viewdf [--warehouse PATH]`` tells which warehouse is current.
        ``%viewdf replay ...`` and ``%viewdf lineage ...`` return a widget; ``%viewdf connect
        --master URL | --remote sc://HOST:PORT`` moves the notebook to a cluster or Spark Connect.
        ``%viewdf --help`` lists the options, statements and commands.
        """
        if _asks_for_help(line):
            print(self.viewdf.parser.format_help().rstrip()  # type: ignore[union-attr]  # @magic_arguments
                  + "\n\n" + STATEMENTS_HELP)
            return None
        line, capture = split_capture(self.viewdf.parser, line, cell is None)  # type: ignore[union-attr]  # @magic_arguments
        if cell is None:
            args, text = split_line(self.viewdf.parser, line)  # type: ignore[union-attr]  # @magic_arguments
            if text.split()[:1] == ["connect"]:
                self._connect(args.warehouse, text)
                return None
            if text.split()[:1] in (["replay"], ["lineage"], ["lateness"]):
                return self._widget(args.warehouse, text)
            text = shortcut(text)
        else:
            args, text = parse_argstring(self.viewdf, line), cell
        if args.out is not None and not args.out.isidentifier():
            raise UsageError(f"-o needs a Python variable name, not {args.out!r}")
        store_in = capture or args.out
        try:
            count = statement_count(text)      # bad input fails here, before a Spark session starts
            warehouse = self._warehouse(args.warehouse)
            if not count:
                print(f"Current warehouse: {warehouse.path}")
                return None
            last, final_query = self._run(warehouse, text, count, args.explain)
            if store_in is not None:
                self._store(store_in, warehouse, last)
            if final_query is not None and final_query.note and (capture is not None or self.autopandas):
                print(final_query.note, file=sys.stderr)     # its rows are not shown with it
            if final_query is None or capture is not None:
                return None
            return self._returned_value(final_query)      # its rows are fetched here, so errors fail the cell
        except ViewDFError as error:
            raise self._failed(error, cell) from None

    def _failed(self, error: ViewDFError, cell: str | None = None) -> StatementFailed:
        return failed(error, self.shell.colors.lower() != "nocolor", cell)

    def _widget(self, path: str | None, text: str) -> Replay | LineageViewer | Figure | None:
        """``replay STREAM --from SOURCE ...``, ``lineage [VIEW]`` or ``lateness STREAM`` (a plot) on the chosen
        warehouse."""
        words = shlex.split(text)
        parser = SUBCOMMAND_PARSERS[words[0]]
        try:
            args = parser.parse_args(words[1:])
        except (argparse.ArgumentError, SystemExit):
            raise UsageError(parser.format_usage().strip()) from None
        try:
            warehouse = self._warehouse(path)
            if words[0] == "lineage":
                return LineageViewer(warehouse, args.view, args.width)
            if words[0] == "lateness":
                definition = warehouse.reads.definition(args.stream)
                if definition is None or definition.kind != "stream":
                    raise ViewDFError(f"no stream named '{args.stream}'")
                return lateness_figure(warehouse, definition.name)
            views = [v.strip() for v in args.views.split(",")] if args.views else None
            return Replay(warehouse, args.stream, self._source(args), views, args.naive, args.speed)
        except ViewDFError as error:
            raise self._failed(error) from None

    def _connect(self, path: str | None, text: str) -> None:
        """``connect --master URL | --remote sc://HOST:PORT [--conf KEY=VALUE ...] [--warehouse PATH]``:
        the notebook's ``spark`` becomes that session, and warehouses reopen on it."""
        parser = SUBCOMMAND_PARSERS["connect"]
        try:
            args = parser.parse_args(shlex.split(text)[1:])
            conf = dict(item.split("=", 1) for item in args.conf)
        except (argparse.ArgumentError, SystemExit, ValueError):
            raise UsageError(parser.format_usage().strip()) from None
        try:
            spark = connect_session(args.master, args.remote, conf)
        except (ImportError, RuntimeError) as problem:
            raise UsageError(str(problem)) from None
        self.shell.user_ns["spark"] = spark
        self._open.clear()
        try:
            warehouse = self._warehouse(args.warehouse or path)
        except ViewDFError as error:
            raise self._failed(error) from None
        print(f"Spark {spark.version} on {args.remote or args.master}; warehouse {warehouse.path}")

    def _source(self, args: argparse.Namespace) -> Source:
        """``--from``: ``network`` (the synthetic stream), a DataFrame variable, or a file path."""
        if args.source == "network":
            return NetworkStream(args.parts, args.pairs, args.selectivity, args.rows_per_part)
        value = self.shell.user_ns.get(args.source)
        return value if isinstance(value, (pd.DataFrame, DataFrame)) else args.source

    def _warehouse(self, path: str | None) -> Warehouse:
        """The chosen warehouse, opened once per path, on the user's ``spark`` session if there is one."""
        where = warehouse_location(path) if path is not None else self._current or warehouse_location(self.warehouse)
        session = self._user_session()
        opened = self._open.get(where)
        if opened is None or (session is not None and opened.spark is not session):
            opened = self._open[where] = Warehouse(where, session, progress=self.progress)
        if path is not None:
            self._current = where
        return opened

    def _user_session(self) -> SparkSession | None:
        candidate = self.shell.user_ns.get("spark")
        return candidate if is_spark_session(candidate) else None

    def _run(self, warehouse: Warehouse, text: str, count: int,
             explain: bool) -> tuple[Result | None, Result | None]:
        """Show each statement's outcome as it finishes (with ``explain``: a query's plans first, and
        after a CREATE VIEW its EXPLAIN VIEW), except a query that ends the text: its rows are the
        magic's value.

        ``count`` is the number of statements in ``text``. Return the last Result that produced rows, and
        the last statement's Result if it is a query.
        """
        last = None
        for number, result in enumerate(warehouse.run_iter(text), start=1):
            if explain and isinstance(result.statement, Query):
                print(result.plans("extended"))
            if result.has_rows:
                last = result
            if number == count and isinstance(result.statement, Query):
                return last, result
            display(ResultView.of(result, self.displaylimit, ALL_ROWS_HINT))
            if explain and isinstance(result.statement, (CreateViewDF, CreateQueryView)):
                display(ResultView.of(warehouse.explain_view(result.statement.name.text), self.displaylimit,
                                      ALL_ROWS_HINT))
        return last, None

    def _returned_value(self, result: Result) -> DataFrame | pd.DataFrame:
        """A final query's rows as the magic returns them: pandas (autopandas), or a Spark DataFrame that
        IPython displays as the magic shows results (``displaylimit`` rows and a footer, fetched now)."""
        if self.autopandas:
            return result.to_pandas()
        frame = result.frame
        assert frame is not None
        view = ResultView.of(result, self.displaylimit, ALL_ROWS_HINT)
        assert self.shell.display_formatter is not None      # IPython shells have one
        formatters = self.shell.display_formatter.formatters   # by the concrete class (classic or Connect),
        formatters["text/html"].for_type(type(frame), self._frame_html)     # which has a __repr__ of its own
        formatters["text/plain"].for_type(type(frame), self._frame_text)
        self._returned[id(frame)] = (frame, view)
        while len(self._returned) > RETURNED_RESULTS:
            self._returned.popitem(last=False)
        return frame

    def _view_of(self, frame: DataFrame) -> ResultView | None:
        found = self._returned.get(id(frame))
        return found[1] if found is not None and found[0] is frame else None

    def _frame_html(self, frame: DataFrame) -> str | None:
        """IPython's HTML form of a DataFrame a magic returned (None, for Spark's own form, of others)."""
        view = self._view_of(frame)
        return view._repr_html_() if view is not None else None

    def _frame_text(self, frame: DataFrame, printer, cycle: bool) -> None:
        view = self._view_of(frame)
        printer.text(view.text() if view is not None else repr(frame))

    def _store(self, name: str, warehouse: Warehouse, result: Result | None) -> None:
        if result is None:
            print(f"No statement produced rows; {name} was not set.", file=sys.stderr)
            return
        if self.autopandas:
            self.shell.user_ns[name] = result.to_pandas()
            return
        frame = result.frame
        if frame is None:   # a pandas table; through Arrow, empty and all-NULL columns get a type too
            frame = warehouse.spark.createDataFrame(pa.Table.from_pandas(result.table, preserve_index=False))
        self.shell.user_ns[name] = frame


class HelpFormatter(MagicHelpFormatter):
    """IPython's formatter of magic help with argparse's ``usage:``; IPython's starts the usage with reST's
    ``::`` (for the docstring ``%viewdf?`` shows), which ``--help`` would print as it is."""

    def add_usage(self, usage: str | None, actions: Iterable[argparse.Action],
                  groups: Iterable[argparse._MutuallyExclusiveGroup], prefix: str | None = "usage: %") -> None:
        super().add_usage(usage, actions, groups, prefix)


# @magic_arguments gives the magic its argument parser, as .parser (IPython's types do not say so)
ViewDF.viewdf.parser.allow_abbrev = False  # type: ignore[union-attr]  # --warehous is a typo, not --warehouse
ViewDF.viewdf.parser.formatter_class = HelpFormatter  # type: ignore[union-attr]  # for --help


def shortcut(text: str) -> str:
    """Line-magic shorthands for stepping through maintenance, as statements:

    ``pending`` (SHOW PENDING), ``maintenance manual|auto`` (SET MAINTENANCE ...) and
    ``step [VIEW] [-n N] [--plan] [--all]`` (STEP [ALL | VIEW] [N] [WITH PLAN]).
    """
    words = text.split()
    if not words or words[0].lower() not in ("pending", "maintenance", "step"):
        return text
    command = words[0].lower()
    if command == "pending" and len(words) == 1:
        return "SHOW PENDING"
    if command == "maintenance" and len(words) == 2:
        return f"SET MAINTENANCE {words[1]}"
    if command != "step":
        return text
    parser = argparse.ArgumentParser(prog="%viewdf step", add_help=False, exit_on_error=False)
    parser.add_argument("view", nargs="?")
    parser.add_argument("-n", type=int, default=None)
    parser.add_argument("--plan", action="store_true")
    parser.add_argument("--all", action="store_true")
    try:
        args = parser.parse_args(words[1:])
    except (argparse.ArgumentError, SystemExit):
        raise UsageError("usage: %viewdf step [VIEW] [-n N] [--plan] [--all]") from None
    target = "ALL" if args.all else (args.view or "")
    count = "" if args.all or args.n is None else str(args.n)
    return " ".join(part for part in ("STEP", target, count, "WITH PLAN" if args.plan else "") if part)


def _subcommand_parsers() -> dict[str, argparse.ArgumentParser]:
    replay = argparse.ArgumentParser(prog="%viewdf replay", add_help=False, exit_on_error=False)
    replay.add_argument("stream")
    replay.add_argument("--from", dest="source", required=True,
                        help="a DataFrame variable, a CSV/Parquet/JSON path, or 'network' (synthetic)")
    replay.add_argument("--views", help="comma-separated views to show (default: all reading the stream)")
    replay.add_argument("--naive", action="store_true", help="also recompute each view part from scratch")
    replay.add_argument("--speed", type=float, default=2.0, help="at most this many parts per second")
    defaults = NetworkStream()
    replay.add_argument("--parts", type=int, default=defaults.parts, help="network: minutes to generate")
    replay.add_argument("--pairs", type=int, default=defaults.pairs, help="network: other (src, dest) pairs")
    replay.add_argument("--selectivity", type=float, default=defaults.selectivity,
                        help="network: share of rows with loss above 10")
    replay.add_argument("--rows-per-part", type=int, default=defaults.rows_per_part, help="network: rows per minute")
    lineage = argparse.ArgumentParser(prog="%viewdf lineage", add_help=False, exit_on_error=False)
    lineage.add_argument("view", nargs="?")
    lineage.add_argument("--width", type=int, default=48, help="columns shown (12, 24, 48 or 96)")
    lateness = argparse.ArgumentParser(prog="%viewdf lateness", add_help=False, exit_on_error=False)
    lateness.add_argument("stream")
    connect = argparse.ArgumentParser(prog="%viewdf connect", add_help=False, exit_on_error=False)
    where = connect.add_mutually_exclusive_group(required=True)
    where.add_argument("--master", help="spark://HOST:7077, yarn, k8s://..., local[*]")
    where.add_argument("--remote", help="a Spark Connect server, sc://HOST:15002")
    connect.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", help="Spark settings")
    connect.add_argument("--warehouse", metavar="PATH", help="the warehouse to open on the new session")
    return {"replay": replay, "lineage": lineage, "lateness": lateness, "connect": connect}


SUBCOMMAND_PARSERS = _subcommand_parsers()


def _asks_for_help(line: str) -> bool:
    """``-h`` or ``--help`` among the options that lead the line."""
    for word in line.split():
        if word in ("-h", "--help"):
            return True
        if not word.startswith("-"):
            return False
    return False


def split_capture(parser: argparse.ArgumentParser, line: str, statement_follows: bool) -> tuple[str, str | None]:
    """``[options] VAR << [statement]``: the line without ``VAR <<``, and VAR (None when the line has no
    capture). ``<<`` counts only where the words before VAR are complete options (not SQL's shift)."""
    match = CAPTURE.match(line)
    if match is None:
        return line, None
    options, variable, rest = match.group("options"), match.group("variable"), match.group("rest")
    if rest.strip() and not statement_follows:
        return line, None
    try:
        _, leftover = split_line(parser, options)
    except UsageError:
        return line, None
    if leftover:
        return line, None
    return f"{options} {rest}", variable


def split_line(parser: argparse.ArgumentParser, line: str) -> tuple[argparse.Namespace, str]:
    """Parse the options leading a ``%viewdf`` line; the rest, quotes untouched, is the statement."""
    lexer = shlex.shlex(line, posix=True)
    lexer.whitespace_split = True
    lexer.commenters = ""
    words: list[str] = []
    statement_start = 0
    while True:
        try:
            word = lexer.get_token()
        except ValueError:      # an unbalanced quote: it belongs to the statement
            break
        if word is None or (not word.startswith("-") and _parses(parser, words)):
            break
        words.append(word)
        statement_start = lexer.instream.tell()  # type: ignore[attr-defined]  # a StringIO; typeshed's protocol lacks tell
    return parser.parse_args(words), line[statement_start:].strip()


def _parses(parser: argparse.ArgumentParser, words: list[str]) -> bool:
    """Whether ``words`` are complete options (an option still missing its value is not)."""
    try:
        parser.parse_args(words)
    except UsageError:
        return False
    return True


def register(ipython) -> None:
    """Register the magics and make ``%config ViewDF`` reach them, replacing any from an earlier load."""
    magics = ViewDF(ipython)
    ipython.register_magics(magics)
    ipython.configurables[:] = [c for c in ipython.configurables if not isinstance(c, ViewDF)] + [magics]
