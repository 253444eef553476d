"""Spark Connect: a server started from the pyspark distribution runs the same views, repairs and
errors as local mode, with the catalog written by this side through the client's filesystem.
CI runs the scenario's short form; ``./run stress`` the full one."""

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


@pytest.mark.parametrize("smoke", [True, pytest.param(False, marks=pytest.mark.stress)], ids=["smoke", "full"])
def test_the_scenario_on_spark_connect_equals_local_mode(server, spark, tmp_path, smoke):
    # A Connect client switches the whole process to Connect mode, so it runs in a child process,
    # while this process runs the scenario in local mode.
    child = subprocess.Popen([sys.executable, str(SCENARIO), "--remote", server.url, *(["--smoke"] if smoke else []),
                              str(tmp_path / "connect")],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])})
    try:
        local = run_scenario(spark, str(tmp_path / "local"), smoke=smoke)
        out, err = child.communicate(timeout=600)
    finally:
        child.kill()
        child.wait()
    assert child.returncode == 0, err[-3000:]
    remote = json.loads(out.splitlines()[-1])
    assert remote == local
    assert remote["repaired"] > 0 and remote["late"]
    # the MATCH_RECOGNIZE view's search ran on the server: per src, a loss and a higher one right after it (the
    # late rows of minutes 1 and 3 make both matches)
    assert sorted((json.loads(row)["src"], json.loads(row)["low"], json.loads(row)["high"])
                  for row in remote["Climbs"]) == [("a", 24, 30), ("b", 0, 30)]
    if not smoke:
        assert remote["error"][1] is not None and remote["explained"]
        assert all("equal their recomputation" in message for message in remote["verified"].values())
    # the parts were written by the server into the folder whose catalog this side wrote
    assert any((tmp_path / "connect" / "data").rglob("*.parquet"))
    assert not list((tmp_path / "connect" / "_viewdf" / "probes").iterdir())
