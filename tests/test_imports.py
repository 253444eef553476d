"""``import viewdf_magic`` stays light: Spark, widgets and plotting load only when used."""

from __future__ import annotations

import subprocess
import sys


HEAVY = ("pyspark", "ipywidgets", "matplotlib", "IPython")


def loaded_after(statement: str, modules: tuple[str, ...] = HEAVY) -> set[str]:
    """Which of ``modules`` (by default heavy top-level packages) a fresh interpreter has loaded after ``statement``."""
    probe = (f"{statement}\nimport sys\n"
             f"print(' '.join(m for m in {modules!r} if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True)
    return set(done.stdout.split())


def test_the_package_loads_nothing_heavy():
    assert loaded_after("import viewdf_magic") == set()


def test_the_command_line_does_not_load_widgets_or_plotting():
    assert loaded_after("import viewdf_magic.cli") & {"ipywidgets", "matplotlib"} == set()


def test_public_names_still_resolve():
    assert loaded_after("from viewdf_magic import Warehouse, Replay, ViewDFError") >= {"pyspark", "ipywidgets"}


def test_the_pipeline_stream_writer_loads_no_warehouse():
    """Spark's Python workers import viewdf_magic.pipeline_sink to unpickle the stream table's writer; its tasks
    write Parquet with pyarrow and need neither the warehouse nor the parser (only the commit does)."""
    assert loaded_after("import viewdf_magic.pipeline_sink", ("viewdf_magic.warehouse", "viewdf_magic.language.parser",
                                                               "sqlglot")) == set()
