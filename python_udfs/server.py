"""A local Spark Connect server over the project's embedded state, for a fast edit-run loop.

Every ``changelake dbt`` call on the embedded target starts a JVM before dbt does anything.
``changelake server start`` starts one Spark Connect server instead, bound to 127.0.0.1, on the
same metastore, warehouse and settings as the ``local`` target; while it runs, ``changelake
dbt`` (without ``--target``) connects to it, so a call pays only the client's start.
``changelake server stop`` stops it. The server holds the embedded metastore's lock for its
whole life: another process cannot open the metastore beside it, and the lock is gone with the
server, however it ends.

The Python UDFs are registered by each client session, as on any Connect target, and run in
the server's Python workers, which use this environment's Python and this checkout's
``python_udfs``; workers keep the code they imported, so an edit of it needs a restart.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from python_udfs import runtime

SERVER_FILE = "server.json"
DEFAULT_PORT = 15002
# spark-submit options that are not --conf settings
_SUBMIT_OPTIONS = {
    "spark.master": "--master",
    "spark.driver.memory": "--driver-memory",
    "spark.driver.extraJavaOptions": "--driver-java-options",
}


def _record(home: Path) -> Path:
    return runtime.state_dir(home) / SERVER_FILE


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # a zombie (exited, not yet reaped) is not alive
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][0] != "Z"
    except (OSError, IndexError):
        return True


def running(home: Path) -> dict[str, Any] | None:
    """The server this project's state folder has running: pid, port, remote, log; or None."""
    path = _record(home)
    try:
        server = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not _alive(int(server["pid"])):
        path.unlink(missing_ok=True)  # the server ended without `stop`
        return None
    return server


def _listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def submit_command(home: Path, port: int) -> list[str]:
    """The spark-submit command line: the ``local`` target's settings, served on loopback."""
    import pyspark

    target = runtime.load_target(home / "profiles", "local")
    command = [
        str(Path(pyspark.__file__).parent / "bin" / "spark-submit"),
        "--class",
        "org.apache.spark.sql.connect.service.SparkConnectServer",
    ]
    for key, value in sorted(target.params.items()):
        if key in _SUBMIT_OPTIONS:
            command += [_SUBMIT_OPTIONS[key], value]
        else:
            command += ["--conf", f"{key}={value}"]
    command += [
        "--conf",
        "spark.connect.grpc.binding.address=127.0.0.1",
        "--conf",
        f"spark.connect.grpc.binding.port={port}",
    ]
    return command


def start(home: Path, port: int = DEFAULT_PORT, timeout: float = 180) -> dict[str, Any]:
    """Start the server in the background and wait until it accepts connections."""
    server = running(home)
    if server is not None:
        raise runtime.ChangeLakeError(
            f"a server is already running on {server['remote']} (pid {server['pid']}); "
            "`changelake server stop` stops it"
        )
    if _listening(port):
        raise runtime.ChangeLakeError(
            f"port {port} on 127.0.0.1 is in use by another program: choose one with --port"
        )
    state = runtime.state_dir(home)
    os.environ["CHANGELAKE_STATE_DIR"] = str(state)
    os.environ["CHANGELAKE_HOME"] = str(home)
    runtime.log(runtime.ensure_java(home))
    lock = runtime.MetastoreLock(state)
    lock.acquire()
    log = state / "server.log"
    env = dict(os.environ)
    env.update(
        SPARK_LOCAL_IP="127.0.0.1",
        PYSPARK_PYTHON=sys.executable,
        PYSPARK_DRIVER_PYTHON=sys.executable,
    )
    env.pop("SPARK_REMOTE", None)
    try:
        with log.open("w") as out:
            # the lock's file descriptor goes to the server: the lock lives as long as it does
            proc = subprocess.Popen(
                submit_command(home, port),
                cwd=state,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                pass_fds=(lock.fd,),
            )
        lock.note_holder(f"pid {proc.pid}: the changelake Spark Connect server on port {port}")
    finally:
        lock.release()  # this process's copy; the server's keeps the lock
    remote = f"sc://127.0.0.1:{port}"
    server = {"pid": proc.pid, "port": port, "remote": remote, "log": str(log)}
    deadline = time.monotonic() + timeout
    while not _listening(port):
        if proc.poll() is not None:
            tail = log.read_text(errors="replace")[-1500:]
            raise runtime.ChangeLakeError(f"the server exited with {proc.returncode}: {tail}")
        if time.monotonic() > deadline:
            _terminate(proc.pid, port)
            raise runtime.ChangeLakeError(
                f"the server did not listen within {timeout:.0f} s: {log}"
            )
        time.sleep(0.5)
    _record(home).write_text(json.dumps(server))
    return server


def _terminate(pid: int, port: int | None = None, timeout: float = 60) -> None:
    """Stop the server's process group (spark-submit and the JVM it starts): SIGTERM, then
    SIGKILL after ``timeout`` seconds; return once it is gone and its port is closed."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGTERM)
    if not _gone(pid, port, timeout):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)
        _gone(pid, None, 10)


def _gone(pid: int, port: int | None, timeout: float) -> bool:
    """Wait until ``pid`` has ended and nothing listens on ``port``; False after ``timeout``."""
    deadline = time.monotonic() + timeout
    while _alive(pid) or (port is not None and _listening(port)):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True


def stop(home: Path) -> dict[str, Any] | None:
    """Stop the running server, if any; return what it was."""
    server = running(home)
    if server is not None:
        _terminate(int(server["pid"]), int(server["port"]))
    _record(home).unlink(missing_ok=True)
    return server


def main(argv: list[str]) -> int:
    """``changelake server start [--port N] | stop | status``."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="changelake server",
        description="A local Spark Connect server on the embedded state; `changelake dbt` "
        "uses it while it runs.",
    )
    parser.add_argument("action", choices=["start", "stop", "status"])
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help="default: 15002")
    opts = parser.parse_args(argv)
    home = runtime.project_dir()
    if opts.action == "start":
        server = start(home, opts.port)
        print(
            f"server on {server['remote']} (pid {server['pid']}, log {server['log']}): "
            "`changelake dbt` uses it until `changelake server stop`"
        )
    elif opts.action == "stop":
        server = stop(home)
        print(f"stopped the server on {server['remote']}" if server else "no server was running")
    else:
        server = running(home)
        print(f"server on {server['remote']} (pid {server['pid']})" if server else "no server")
    return 0
