"""Running a Spark Declarative Pipeline (``spark-pipelines run``) as a child process: against the Spark Connect
server the command starts for itself, or against a long-lived one (``--remote``), whose catalog must then
outlive a run as the pipeline's datasets do."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pandas as pd

# PySpark 4.3.0's pipeline client stops on the observed metrics a Python data source's workers send after the
# run (SPARK-59135, fixed upstream): the run is complete, the command exits 1.
KNOWN_CLIENT_BUG = re.compile(r"UNKNOWN_RESPONSE\] Unknown response: Plan observed\(__python_accumulator__")


def land_csv(folder: Path, name: str, rows: pd.DataFrame) -> None:
    """``rows`` as CSV file ``name`` in ``folder/landing``, written aside and then moved in whole, so that a file
    source never reads half a file."""
    aside = folder / f".{name}"
    rows.to_csv(aside, index=False, date_format="%Y-%m-%d %H:%M:%S")
    os.replace(aside, folder / "landing" / name)


def lasting_catalog(folder: Path) -> dict[str, str]:
    """A Spark Connect server's configuration whose catalog outlives a run (the default in-memory catalog
    forgets the pipeline's datasets, and the next run finds their folders taken): Hive's metastore from the
    pyspark wheel, in Derby, and the datasets' folders (``spark-warehouse``), all under ``folder``."""
    return {"spark.sql.catalogImplementation": "hive",
            "spark.sql.warehouse.dir": str(folder / "spark-warehouse"),
            "spark.hadoop.javax.jdo.option.ConnectionURL": f"jdbc:derby:;databaseName={folder / 'metastore'};create=true",
            "spark.driver.extraJavaOptions": f"-Dderby.stream.error.file={folder / 'derby.log'}"}


def run_pipeline(folder: Path, remote: str | None = None, submit_options: tuple[str, ...] = (),
                 timeout: float = 1800.0) -> str:
    """``spark-pipelines [--remote <remote>] [submit_options] run`` in ``folder`` with this Python (Spark's
    Python workers need ``viewdf_magic``); its output. Raises ``RuntimeError`` unless the run completed, and
    kills the command's process group after ``timeout`` seconds."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("SPARK_")}
    env.update(PYSPARK_PYTHON=sys.executable, PATH=f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}")
    target = ("--remote", remote) if remote else ()
    command = [str(Path(sys.executable).parent / "spark-pipelines"), *target, *submit_options, "run"]
    child = subprocess.Popen(command, cwd=folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True, start_new_session=True)
    try:
        output, _ = child.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)       # the CLI, its JVM and Python workers
        output, _ = child.communicate()
    if "Run is COMPLETED" not in output or not (child.returncode == 0 or KNOWN_CLIENT_BUG.search(output)):
        raise RuntimeError(f"spark-pipelines run failed in {folder} (exit code {child.returncode}):\n{output[-6000:]}")
    return output
