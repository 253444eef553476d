"""A Spark Connect server on localhost, started from the pyspark distribution's own script.

``python -m viewdf_magic.deploy.connect_server [--port P] [--master M]`` runs one until Ctrl-C;
in a notebook, ``%viewdf connect --remote sc://127.0.0.1:P`` then uses it."""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from .processes import HOST, SPARK_HOME, free_port, log_tail, stop_groups


def listening(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(0.5)
        return probe.connect_ex((HOST, port)) == 0


class ConnectServer:
    """``sbin/start-connect-server.sh --wait`` as a child process group; a context manager."""

    def __init__(self, port: int | None = None, master: str = "local[2]", conf: dict[str, str] | None = None,
                 log_dir: str | None = None, start_timeout: float = 180.0) -> None:
        self.port = port or free_port()
        self.master = master
        self.conf = {"spark.sql.session.timeZone": "UTC", "spark.sql.shuffle.partitions": "2",
                     "spark.ui.enabled": "false", **(conf or {}),
                     "spark.connect.grpc.binding.port": str(self.port)}
        self.log_dir = Path(log_dir or tempfile.mkdtemp(prefix="viewdf-connect-"))
        self.start_timeout = start_timeout
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"sc://{HOST}:{self.port}"

    def start(self) -> "ConnectServer":
        """Start the server and wait until it accepts connections."""
        script = SPARK_HOME / "sbin" / "start-connect-server.sh"
        command = ["bash", str(script), "--wait", "--master", self.master]
        for key, value in self.conf.items():
            command += ["--conf", f"{key}={value}"]
        env = {**os.environ, "SPARK_HOME": str(SPARK_HOME), "SPARK_LOG_DIR": str(self.log_dir),
               "SPARK_PID_DIR": str(self.log_dir)}
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.log = self.log_dir / "server.log"
        with open(self.log, "wb") as out:
            self.process = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT,
                                            start_new_session=True)
        deadline = time.monotonic() + self.start_timeout
        while not listening(self.port):
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"the Spark Connect server did not start on port {self.port}; the end of "
                                   f"{self.log}:\n{log_tail(self.log)}")
            time.sleep(0.5)
        return self

    def stop(self) -> None:
        """Stop the server and everything it started."""
        if self.process is not None:
            stop_groups([self.process], grace=30.0)

    def __enter__(self) -> "ConnectServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, default=15002)
    parser.add_argument("--master", default="local[*]")
    args = parser.parse_args()
    with ConnectServer(args.port, args.master) as server:
        print(f"Spark Connect server at {server.url} (logs in {server.log_dir}); Ctrl-C stops it", flush=True)
        assert server.process is not None      # started
        try:
            server.process.wait()
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
