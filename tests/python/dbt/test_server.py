"""`changelake server`: a local Spark Connect server that `changelake dbt` uses while it runs.

Runs the commands as a user does (subprocesses, a state folder of the test's own), on a free
port of 127.0.0.1, and stops the server however the test ends.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_targets import CHANGELAKE, SAMPLE, _free_port

from python_udfs import runtime, server


@pytest.fixture
def state(tmp_path: Path) -> Iterator[Path]:
    """The test's state folder; a server left running in it is stopped at teardown."""
    folder = tmp_path / "state"
    folder.mkdir()
    yield folder
    record = folder / server.SERVER_FILE
    if record.exists():
        left = json.loads(record.read_text())
        server._terminate(left["pid"], left["port"])


def _changelake(state: Path, landing: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CHANGELAKE_", "SPARK_"))}
    env.update(CHANGELAKE_STATE_DIR=str(state), CHANGELAKE_LANDING_ROOT=str(landing))
    return subprocess.run(
        [str(CHANGELAKE), *args],
        cwd=state,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


@pytest.mark.long(2)
def test_dbt_runs_on_the_local_server_until_it_is_stopped(state, tmp_path):
    landing = tmp_path / "landing"
    shutil.copytree(SAMPLE, landing / "pg_inventory")
    port = _free_port()

    started = _changelake(state, landing, "server", "start", "--port", str(port))
    assert started.returncode == 0, started.stdout + started.stderr
    assert f"server on sc://127.0.0.1:{port}" in started.stdout
    pid = json.loads((state / server.SERVER_FILE).read_text())["pid"]

    again = _changelake(state, landing, "server", "start", "--port", str(port))
    assert again.returncode == 2
    assert f"a server is already running on sc://127.0.0.1:{port} (pid {pid})" in again.stderr

    # the server holds the embedded metastore: nothing else can open it beside it
    with pytest.raises(runtime.ChangeLakeError, match="the changelake Spark Connect server"):
        runtime.MetastoreLock(state).acquire()

    models = ["--select", "decoded_pg_inventory", "stg_landing__pg_inventory"]
    for _ in range(2):
        built = _changelake(state, landing, "dbt", "run", *models)
        assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
        assert f"using the local server on sc://127.0.0.1:{port}" in built.stderr
        assert "target 'connect'" in built.stderr
        assert "Completed successfully" in built.stdout
    # the server's warehouse is the embedded target's: the same tables, the same folder
    assert (state / "warehouse" / "changelake.db" / "decoded_pg_inventory").is_dir()

    stopped = _changelake(state, landing, "server", "stop")
    assert stopped.returncode == 0, stopped.stderr
    assert f"stopped the server on sc://127.0.0.1:{port}" in stopped.stdout
    assert not server._listening(port)
    assert not server._alive(pid)
    assert _changelake(state, landing, "server", "status").stdout.strip() == "no server"
    # the lock went with the server
    lock = runtime.MetastoreLock(state)
    lock.acquire()
    lock.release()
