"""The ``%%viewdf`` cell magic and ``%viewdf`` line magic, configured with ``%config ViewDF``."""

from __future__ import annotations

import argparse
import shlex
import sys

import pandas as pd
import pyarrow as pa
from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring
from IPython.display import display
from pyspark.sql import DataFrame, SparkSession
from traitlets import Bool, Int, TraitError, Unicode, observe, validate

from ..catalog.filesystem import qualify
from ..errors import ViewDFError
from ..language.statements import CreateQueryView, CreateViewDF, Query
from ..language.tokens import quote_name
from ..maintainer.execute import explain_text
from ..session import connect_session, is_spark_session
from ..warehouse import Result, Warehouse
from .batches import NetworkStream, Source
from .lineage import LineageViewer
from .render import ResultView, error_text
from .replay import Replay

ALL_ROWS_HINT = "Set %config ViewDF.displaylimit = 0 or use -o VAR to get them all."


@magics_class
class ViewDF(Magics):
    """Runs ViewDF statements against a warehouse on the notebook's Spark session."""

    displaylimit = Int(10, allow_none=True, help=(
        "Rows of a result to display; 0 or None shows them all.")).tag(config=True)
    warehouse = Unicode("viewdf-warehouse", help=(
        "Warehouse used when no --warehouse was given; relative paths are relative to the "
        "working directory.")).tag(config=True)
    progress = Bool(True, help="Show a progress bar while maintenance computes many view parts.").tag(config=True)

    def __init__(self, shell) -> None:  # type: ignore[no-untyped-def]
        self._open: dict[str, Warehouse] = {}     # by qualified path: one Warehouse object per warehouse
        self._current: str | None = None          # the path last chosen with --warehouse
        super().__init__(shell=shell)

    @validate("displaylimit")
    def _check_displaylimit(self, proposal):  # type: ignore[no-untyped-def]
        if proposal.value is not None and proposal.value < 0:
            raise TraitError("ViewDF.displaylimit must be 0 (all rows), None or a positive number")
        return proposal.value

    @observe("warehouse")
    def _use_configured_warehouse(self, change) -> None:  # type: ignore[no-untyped-def]
        self._current = None

    @observe("progress")
    def _reopen_warehouses(self, change) -> None:  # type: ignore[no-untyped-def]
        self._open.clear()

    @line_cell_magic
    @magic_arguments()
    @argument("--warehouse", metavar="PATH",
              help="Open (or reuse) the warehouse at PATH and make it the current one.")
    @argument("-o", "--out", metavar="VAR",
              help="Store the last rows produced as a Spark DataFrame in the variable VAR.")
    @argument("--explain", action="store_true", help="Also show Spark's logical and physical plans of queries, "
                                                      "and EXPLAIN VIEW of each view the cell creates.")
    def viewdf(self, line: str, cell: str | None = None) -> Replay | LineageViewer | None:
        """Run ViewDF statements: those of the cell (``%%viewdf``) or the one on the line (``%viewdf``).

        With no statement, ``%viewdf [--warehouse PATH]`` tells which warehouse is current.
        ``%viewdf replay ...`` and ``%viewdf lineage ...`` return a widget; ``%viewdf connect
        --master URL | --remote sc://HOST:PORT`` moves the notebook to a cluster or Spark Connect.
        """
        if cell is None:
            args, text = split_line(self.viewdf.parser, line)
            if text.split()[:1] == ["connect"]:
                return self._connect(args.warehouse, text)
            if text.split()[:1] in (["replay"], ["lineage"]):
                return self._widget(args.warehouse, text)
            text = shortcut(text)
        else:
            args, text = parse_argstring(self.viewdf, line), cell
        if args.out is not None and not args.out.isidentifier():
            raise UsageError(f"-o needs a Python variable name, not {args.out!r}")
        try:
            warehouse = self._warehouse(args.warehouse)
            if not text.strip():
                print(f"Current warehouse: {warehouse.path}")
                return
            last = self._run(warehouse, text, args.explain)
        except ViewDFError as error:
            self._show(error)
            return
        if args.out is not None:
            self._store(args.out, warehouse, last)

    def _show(self, error: ViewDFError) -> None:
        """A ViewDFError as the user sees it: message, position and caret, on stderr."""
        print(error_text(error, color=self.shell.colors.lower() != "nocolor"), file=sys.stderr)

    def _widget(self, path: str | None, text: str) -> Replay | LineageViewer | None:
        """``replay STREAM --from SOURCE ...`` or ``lineage [VIEW]`` on the chosen warehouse."""
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
            views = [v.strip() for v in args.views.split(",")] if args.views else None
            return Replay(warehouse, args.stream, self._source(args), views, args.naive, args.speed)
        except ViewDFError as error:
            self._show(error)
            return None

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
            self._show(error)
            return
        print(f"Spark {spark.version} on {args.remote or args.master}; warehouse {warehouse.path}")

    def _source(self, args: argparse.Namespace) -> Source:
        """``--from``: ``network`` (the synthetic stream), a DataFrame variable, or a file path."""
        if args.source == "network":
            return NetworkStream(args.parts, args.pairs, args.selectivity, args.rows_per_part)
        value = self.shell.user_ns.get(args.source)
        return value if isinstance(value, (pd.DataFrame, DataFrame)) else args.source

    def _warehouse(self, path: str | None) -> Warehouse:
        """The chosen warehouse, opened once per path, on the user's ``spark`` session if there is one."""
        where = qualify(path) if path is not None else self._current or qualify(self.warehouse)
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

    def _run(self, warehouse: Warehouse, text: str, explain: bool) -> Result | None:
        """Show each statement's outcome as it finishes (with ``explain``: a query's plans first, and
        after a CREATE VIEW its EXPLAIN VIEW).

        Return the last Result that produced rows.
        """
        last = None
        for result in warehouse.run_iter(text):
            if explain and isinstance(result.statement, Query):
                print(explain_text(result.frame, mode="extended"))
            display(ResultView.of(result, self.displaylimit, ALL_ROWS_HINT))
            if explain and isinstance(result.statement, (CreateViewDF, CreateQueryView)):
                for shown in warehouse.run(f"EXPLAIN VIEW {quote_name(result.statement.name.text)}"):
                    display(ResultView.of(shown, self.displaylimit, ALL_ROWS_HINT))
            if result.has_rows:
                last = result
        return last

    def _store(self, name: str, warehouse: Warehouse, result: Result | None) -> None:
        if result is None:
            print(f"No statement produced rows; {name} was not set.", file=sys.stderr)
            return
        frame = result.frame
        if frame is None:   # a pandas table; through Arrow, empty and all-NULL columns get a type too
            frame = warehouse.spark.createDataFrame(pa.Table.from_pandas(result.table, preserve_index=False))
        self.shell.user_ns[name] = frame


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
    connect = argparse.ArgumentParser(prog="%viewdf connect", add_help=False, exit_on_error=False)
    where = connect.add_mutually_exclusive_group(required=True)
    where.add_argument("--master", help="spark://HOST:7077, yarn, k8s://..., local[*]")
    where.add_argument("--remote", help="a Spark Connect server, sc://HOST:15002")
    connect.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", help="Spark settings")
    connect.add_argument("--warehouse", metavar="PATH", help="the warehouse to open on the new session")
    return {"replay": replay, "lineage": lineage, "connect": connect}


SUBCOMMAND_PARSERS = _subcommand_parsers()


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
        statement_start = lexer.instream.tell()
    return parser.parse_args(words), line[statement_start:].strip()


def _parses(parser: argparse.ArgumentParser, words: list[str]) -> bool:
    """Whether ``words`` are complete options (an option still missing its value is not)."""
    try:
        parser.parse_args(words)
    except UsageError:
        return False
    return True


def register(ipython) -> None:  # type: ignore[no-untyped-def]
    """Register the magics and make ``%config ViewDF`` reach them, replacing any from an earlier load."""
    magics = ViewDF(ipython)
    ipython.register_magics(magics)
    ipython.configurables[:] = [c for c in ipython.configurables if not isinstance(c, ViewDF)] + [magics]
