"""A Spark standalone cluster on localhost: one master and N worker processes, started from the
pyspark pip distribution with ``bin/spark-class`` (pip's pyspark has no ``sbin/start-master.sh``).

    with StandaloneCluster(workers=2, cores=1, memory="1g") as cluster:
        spark = SparkSession.builder.master(cluster.master_url).getOrCreate()

``python -m viewdf_magic.deploy.standalone`` starts one, prints its master URL and waits for Ctrl-C,
so a notebook can ``%viewdf connect --master spark://127.0.0.1:PORT``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path
from types import TracebackType

from .processes import HOST, SPARK_HOME, free_port, log_tail, stop_groups


class StandaloneCluster:
    """A master and ``workers`` workers (``cores`` cores and ``memory`` each) on 127.0.0.1.

    Every process runs in its own process group (a worker's executors are in the worker's), so
    ``stop`` ends all of them. Logs go to ``log_dir`` (a fresh temporary folder by default):
    ``master.log``, ``worker-<n>.log``, and each worker's work folder ``worker-<n>/`` with the
    executors' ``stdout`` and ``stderr`` per application.
    """

    def __init__(self, workers: int = 2, cores: int = 1, memory: str = "1g", log_dir: str | Path | None = None,
                 timeout: float = 120.0) -> None:
        self.workers = workers
        self.cores = cores
        self.memory = memory
        self.timeout = timeout
        self.log_dir = Path(log_dir) if log_dir is not None else Path(tempfile.mkdtemp(prefix="viewdf-standalone-"))
        self.port = free_port()
        self.webui_port = free_port()
        self._processes: list[tuple[subprocess.Popen, Path]] = []

    @property
    def master_url(self) -> str:
        """``spark://127.0.0.1:PORT``, for ``SparkSession.builder.master``."""
        return f"spark://{HOST}:{self.port}"

    @property
    def webui_url(self) -> str:
        return f"http://{HOST}:{self.webui_port}"

    def worker_dir(self, index: int) -> Path:
        """Worker ``index``'s work folder: ``<app id>/<executor id>/stderr`` per executor it ran."""
        return self.log_dir / f"worker-{index}"

    def status(self) -> dict:
        """The master's state as its web UI serves it (``/json/``): ``aliveworkers``, ``cores``,
        ``coresused``, ``workers``, ``activeapps``, ``completedapps``, ..."""
        with urllib.request.urlopen(f"{self.webui_url}/json/", timeout=5) as response:
            return json.load(response)

    def start(self) -> StandaloneCluster:
        """Start the master and the workers; return once every worker has registered."""
        self.log_dir.mkdir(parents=True, exist_ok=True)
        try:
            self._launch("master", "org.apache.spark.deploy.master.Master", "--host", HOST,
                         "--port", str(self.port), "--webui-port", str(self.webui_port))
            for index in range(self.workers):
                self.worker_dir(index).mkdir(exist_ok=True)
                self._launch(f"worker-{index}", "org.apache.spark.deploy.worker.Worker", self.master_url,
                             "--host", HOST, "--cores", str(self.cores), "--memory", self.memory,
                             "--webui-port", str(free_port()), "--work-dir", str(self.worker_dir(index)))
            self._wait_for_workers()
        except BaseException:
            self.stop()
            raise
        return self

    def _launch(self, name: str, main_class: str, *arguments: str) -> None:
        log = self.log_dir / f"{name}.log"
        env = dict(os.environ, SPARK_HOME=str(SPARK_HOME), SPARK_LOCAL_IP=HOST,
                   SPARK_DAEMON_MEMORY=os.environ.get("SPARK_DAEMON_MEMORY", "256m"))
        with open(log, "ab") as out:
            process = subprocess.Popen([str(SPARK_HOME / "bin" / "spark-class"), main_class, *arguments],
                                       stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                       env=env, start_new_session=True)
        self._processes.append((process, log))

    def _wait_for_workers(self) -> None:
        deadline = time.monotonic() + self.timeout
        alive = 0
        while time.monotonic() < deadline:
            for process, log in self._processes:
                if process.poll() is not None:
                    raise RuntimeError(f"{log.stem} exited with code {process.returncode} while the cluster "
                                       f"started; the end of {log}:\n{log_tail(log)}")
            try:
                alive = self.status()["aliveworkers"]
            except (OSError, ValueError):        # the master's web UI is not up yet, or not serving JSON yet
                alive = 0
            if alive >= self.workers:
                return
            time.sleep(0.5)
        tails = "\n".join(f"--- {log}:\n{log_tail(log)}" for _, log in self._processes)
        raise TimeoutError(f"{alive} of {self.workers} Spark workers registered with {self.master_url} within "
                           f"{self.timeout:.0f} s; the end of the logs:\n{tails}")

    def stop(self) -> None:
        """End every process group this cluster started (a worker's executors are in the worker's)."""
        stop_groups([process for process, _ in reversed(self._processes)])
        self._processes = []

    def __enter__(self) -> StandaloneCluster:
        return self.start()

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--cores", type=int, default=1, help="cores per worker")
    parser.add_argument("--memory", default="1g", help="memory per worker")
    parser.add_argument("--log-dir", help="default: a new temporary folder")
    args = parser.parse_args()
    with StandaloneCluster(args.workers, args.cores, args.memory, args.log_dir) as cluster:
        print(f"Spark standalone master: {cluster.master_url}  (web UI {cluster.webui_url}, logs {cluster.log_dir})")
        print(f"In a notebook: %viewdf connect --master {cluster.master_url}   Ctrl-C stops the cluster.",
              flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            print("Stopping the cluster.")


if __name__ == "__main__":
    main()
