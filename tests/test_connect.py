"""Spark Connect: a server started from the pyspark distribution runs the same views, repairs and
errors as local mode, with the catalog written by this side through the client's filesystem."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from deployment_scenario import run_scenario
from viewdf_magic.deploy.connect_server import ConnectServer

SCENARIO = Path(__file__).with_name("deployment_scenario.py")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with ConnectServer(master="local[2]", log_dir=str(tmp_path_factory.mktemp("connect-logs"))) as running:
        yield running


def test_the_scenario_on_spark_connect_equals_local_mode(server, spark, tmp_path):
    # A Connect client switches the whole process to Connect mode, so it runs in a child process.
    child = subprocess.run([sys.executable, str(SCENARIO), "--remote", server.url, str(tmp_path / "connect")],
                           capture_output=True, text=True, timeout=600,
                           env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])})
    assert child.returncode == 0, child.stderr[-3000:]
    remote = json.loads(child.stdout.splitlines()[-1])
    local = run_scenario(spark, str(tmp_path / "local"))
    assert remote == local
    assert remote["repaired"] > 0 and remote["late"] and remote["error"][1] is not None
    # the parts were written by the server into the folder whose catalog this side wrote
    assert any((tmp_path / "connect" / "data").rglob("*.parquet"))
    assert not list((tmp_path / "connect" / "_viewdf" / "probes").iterdir())
