"""The `cluster` and `connect` profile targets, run for real against servers on loopback.

Each test starts its own Spark servers bound to 127.0.0.1 on free ports, runs
`changelake dbt build` against them in a subprocess, and stops them.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pyspark
import pytest

from python_udfs import runtime

CHANGELAKE = Path(sys.executable).parent / "changelake"
SPARK_HOME = Path(pyspark.__file__).parent
SAMPLE = (
    Path(__file__).resolve().parents[3] / "python_udfs" / "demo_data" / "landing" / "pg_inventory"
)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for_port(port: int, proc: subprocess.Popen, log: Path, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"server exited with {proc.returncode}: {log.read_text()[-2000:]}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.5)
    pytest.fail(
        f"nothing listening on 127.0.0.1:{port} after {timeout}s: {log.read_text()[-2000:]}"
    )


def _server_env(tmp_path: Path) -> dict[str, str]:
    runtime.ensure_java(tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CHANGELAKE_", "PYSPARK"))}
    env.update(
        SPARK_HOME=str(SPARK_HOME),
        SPARK_LOCAL_IP="127.0.0.1",
        SPARK_WORKER_DIR=str(tmp_path / "worker"),
        SPARK_LOG_DIR=str(tmp_path / "logs"),
        PYSPARK_PYTHON=sys.executable,
        JAVA_HOME=os.environ["JAVA_HOME"],
    )
    return env


class Servers:
    """Background Spark processes, stopped (and waited for) at teardown."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp_path = tmp_path
        self.procs: list[subprocess.Popen] = []

    def start(self, name: str, args: list[str], port: int) -> None:
        log = self.tmp_path / f"{name}.log"
        proc = subprocess.Popen(
            args,
            env=_server_env(self.tmp_path),
            cwd=self.tmp_path,
            stdout=log.open("w"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.procs.append(proc)
        _wait_for_port(port, proc, log)

    def stop(self) -> None:
        for proc in reversed(self.procs):
            proc.terminate()
        for proc in self.procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


@pytest.fixture
def servers(tmp_path: Path) -> Iterator[Servers]:
    started = Servers(tmp_path)
    try:
        yield started
    finally:
        started.stop()


def _build(tmp_path: Path, target: str, **env: str) -> subprocess.CompletedProcess:
    landing = tmp_path / "landing"
    shutil.copytree(SAMPLE, landing / "pg_inventory")
    run_env = {k: v for k, v in os.environ.items() if not k.startswith(("CHANGELAKE_", "PYSPARK"))}
    run_env.update(
        CHANGELAKE_LANDING_ROOT=str(landing),
        CHANGELAKE_STATE_DIR=str(tmp_path / "state"),
        SPARK_LOCAL_IP="127.0.0.1",
        **env,
    )
    client = tmp_path / "client"
    client.mkdir()
    return subprocess.run(
        [str(CHANGELAKE), "dbt", "build", "--target", target],
        cwd=client,
        env=run_env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )


@pytest.mark.long(3)
def test_cluster_target_runs_on_a_standalone_cluster(servers, tmp_path):
    master_port, worker_port = _free_port(), _free_port()
    spark_class = str(SPARK_HOME / "bin" / "spark-class")
    servers.start(
        "master",
        [
            spark_class,
            "org.apache.spark.deploy.master.Master",
            "--host",
            "127.0.0.1",
            "--port",
            str(master_port),
            "--webui-port",
            str(_free_port()),
        ],
        master_port,
    )
    servers.start(
        "worker",
        [
            spark_class,
            "org.apache.spark.deploy.worker.Worker",
            "--host",
            "127.0.0.1",
            "--port",
            str(worker_port),
            "--webui-port",
            str(_free_port()),
            "--cores",
            "1",
            "--memory",
            "2g",
            f"spark://127.0.0.1:{master_port}",
        ],
        worker_port,
    )
    out = _build(tmp_path, "cluster", CHANGELAKE_SPARK_MASTER=f"spark://127.0.0.1:{master_port}")
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert f"master spark://127.0.0.1:{master_port}" in out.stderr
    # 8 of the 9 demo feeds have no landed file here: a warning names them
    assert "Completed with 1 warning" in out.stdout
    assert "WARN 8 assert_every_declared_feed_has_landed_files" in out.stdout
    assert "8 declared feed(s) have no landed file: canal_inventory (" in out.stdout
    assert " ERROR=0 " in out.stdout
    # the UDF ran in an executor of the worker, which got the package shipped to it
    shipped = list((tmp_path / "worker").glob("app-*/*/python_udfs.zip"))
    assert shipped, "python_udfs.zip was not shipped to the executor"


@pytest.mark.long(3)
def test_connect_target_runs_on_a_spark_connect_server(servers, tmp_path):
    port = _free_port()
    servers.start(
        "connect",
        [
            str(SPARK_HOME / "bin" / "spark-submit"),
            "--class",
            "org.apache.spark.sql.connect.service.SparkConnectServer",
            "--master",
            "local[2]",
            "--conf",
            "spark.connect.grpc.binding.address=127.0.0.1",
            "--conf",
            f"spark.connect.grpc.binding.port={port}",
            "--conf",
            "spark.sql.catalogImplementation=hive",
            "--conf",
            f"spark.sql.warehouse.dir={tmp_path / 'server-warehouse'}",
            "--conf",
            "spark.hadoop.javax.jdo.option.ConnectionURL="
            f"jdbc:derby:;databaseName={tmp_path / 'server-metastore'};create=true",
            "--conf",
            "spark.ui.enabled=false",
            # a few records: two shuffle partitions, as the suite's embedded session
            "--conf",
            "spark.sql.shuffle.partitions=2",
        ],
        port,
    )
    out = _build(tmp_path, "connect", CHANGELAKE_SPARK_REMOTE=f"sc://127.0.0.1:{port}")
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert "target 'connect'" in out.stderr
    # 8 of the 9 demo feeds have no landed file here: a warning names them
    assert "Completed with 1 warning" in out.stdout
    assert "WARN 8 assert_every_declared_feed_has_landed_files" in out.stdout
    assert "8 declared feed(s) have no landed file: canal_inventory (" in out.stdout
    assert " ERROR=0 " in out.stdout
    # the tables live in the server's warehouse, not the client's
    assert (tmp_path / "server-warehouse" / "changelake.db" / "decoded_pg_inventory").is_dir()
    assert not (tmp_path / "state" / "warehouse").exists()
