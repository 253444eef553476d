"""The ``viewdf`` command: run a file of ViewDF statements, watch a landing folder, or the demo."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from .demo import HISTORY_MINUTES, run_demo
from .errors import Interrupted, ViewDFError
from .notebook.render import ResultView, error_text
from .warehouse import Warehouse

ROW_LIMIT = 1000
ALL_ROWS_HINT = "Use --limit 0 to print them all."


def main(argv: list[str] | None = None) -> int:
    """Run the command line ``argv`` (default: ``sys.argv[1:]``); return the exit code."""
    args = _parser().parse_args(argv)
    try:
        return args.command(args)
    except ViewDFError as error:
        print(error_text(error, color=sys.stderr.isatty()), file=sys.stderr)
        return 1


def run_file(args: argparse.Namespace) -> int:
    """``viewdf run FILE``: run its statements, printing each one's message and rows."""
    try:
        text = Path(args.file).read_text(encoding="utf-8")
    except OSError as error:
        print(f"viewdf: cannot read {args.file}: {error.strerror}", file=sys.stderr)
        return 2
    warehouse = Warehouse(args.warehouse, progress=sys.stderr.isatty())
    for result in warehouse.run_iter(text):
        print(ResultView.of(result, args.limit, ALL_ROWS_HINT).text() + "\n")
    return 0


def watch_folder(args: argparse.Namespace) -> int:
    """``viewdf watch FOLDER --into STREAM``: load the files that land in a folder as they come (``LOAD`` of
    the folder takes only the files it has not taken before), with a status line, until Ctrl-C."""
    warehouse = Warehouse(args.warehouse, progress=False)
    quoted = "'" + args.folder.replace("'", "''") + "'"
    statement = f"LOAD {quoted} INTO {args.into}" + (f" FORMAT {args.format}" if args.format else "") \
        + (" MOVE" if args.move else "")
    start_files = len(warehouse.reads.state(args.into).loaded) if warehouse.reads.definition(args.into) else 0
    files = 0
    try:
        while True:
            result = warehouse.run(statement)[-1]
            taken = len(warehouse.reads.state(args.into).loaded) - start_files
            if taken > files:
                print(f"\r\033[K{result.message}", flush=True)
                files = taken
            if args.once:
                break
            print(f"\r\033[Kwatching {args.folder}: {files} new files taken; checked at "
                  f"{time.strftime('%H:%M:%S')} (Ctrl-C stops)", end="", file=sys.stderr, flush=True)
            time.sleep(args.every)
    except (KeyboardInterrupt, Interrupted) as stop:
        if isinstance(stop, Interrupted):
            print(f"\r\033[K{stop.message}", file=sys.stderr)
    print(f"\r\033[Kwatched {args.folder}: {files} new files taken into {args.into}", file=sys.stderr)
    return 0


def show_demo(args: argparse.Namespace) -> int:
    """``viewdf demo``: the paper's network-monitoring example, minute by minute."""
    run_demo(args.warehouse, args.pairs, args.history)
    return 0


def count(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, not {value}")
    return value


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="viewdf", description="Run a file of ViewDF statements, or the paper's network-monitoring demo.")
    commands = parser.add_subparsers(required=True, metavar="COMMAND")

    run = commands.add_parser("run", help="run the statements of a .viewdf file")
    run.add_argument("file", metavar="FILE", help="a file of ';'-separated ViewDF statements")
    run.add_argument("--warehouse", metavar="PATH", default="viewdf-warehouse",
                     help="the warehouse to use (default: %(default)s)")
    run.add_argument("--limit", metavar="N", type=count, default=ROW_LIMIT,
                     help="rows to print per result; 0 prints all (default: %(default)s)")
    run.set_defaults(command=run_file)

    watch = commands.add_parser("watch", help="load the files that land in a folder into a stream, as they come")
    watch.add_argument("folder", metavar="FOLDER", help="the landing folder (write each file elsewhere, then move it in)")
    watch.add_argument("--into", metavar="STREAM", required=True, help="the stream (or table) to load into")
    watch.add_argument("--warehouse", metavar="PATH", default="viewdf-warehouse",
                       help="the warehouse to use (default: %(default)s)")
    watch.add_argument("--format", choices=("csv", "parquet", "json"), help="the files' format (default: from their names)")
    watch.add_argument("--every", metavar="SECONDS", type=float, default=2.0,
                       help="seconds between looks at the folder (default: %(default)s)")
    watch.add_argument("--once", action="store_true", help="look once and exit")
    watch.add_argument("--move", action="store_true",
                       help="remove each file from the folder once its rows are committed (LOAD .. MOVE)")
    watch.set_defaults(command=watch_folder)

    demo = commands.add_parser("demo", help="run the paper's network-monitoring example headless")
    demo.add_argument("--warehouse", metavar="PATH", help="where to build it (default: a temporary warehouse)")
    demo.add_argument("--pairs", metavar="N", type=count, default=4,
                      help="source/destination pairs besides the paper's (default: %(default)s)")
    demo.add_argument("--history", metavar="MINUTES", type=count, default=HISTORY_MINUTES,
                      help="minutes of history before the last comparison; 0 leaves it out (default: %(default)s)")
    demo.set_defaults(command=show_demo)
    return parser
