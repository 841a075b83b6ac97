"""Landing on an S3 API object store: the feeds' files in a bucket of a moto S3 server (started
on 127.0.0.1 by the test, stopped after it), read by builds whose process environment holds the
credentials and endpoint, as a cluster's workers would (`AWS_ACCESS_KEY_ID`,
`AWS_SECRET_ACCESS_KEY`, `AWS_REGION`, `AWS_ENDPOINT_URL`) and `CHANGELAKE_LANDING_ROOT` an
`s3://` URI. The builds run in a process of their own (the suite's shared session started
without that environment), one after another on its warm session."""

from __future__ import annotations

import gzip
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import dbt_target_path

PROJECT = Path(__file__).resolve().parents[3]
DEMO = PROJECT / "python_udfs" / "demo_data" / "landing"
BUCKET = "changelake-landing"
ROOT = f"s3://{BUCKET}/cdc"

# builds and queries in one process, each asked for by a line on stdin (JSON: ["dbt", args] or
# ["sql", query]), each answered by one line on stdout: "done: <JSON>"
STEPS = """
import json, sys
from python_udfs.project import RUNTIME, run_dbt
for line in sys.stdin:
    kind, arg = json.loads(line)
    if kind == "dbt":
        answer, _ = run_dbt(arg)
    else:
        answer = [list(r) for r in RUNTIME.session.sql(arg).collect()]
    print("done: " + json.dumps(answer, default=str), flush=True)
"""


@pytest.fixture
def s3_endpoint(tmp_path):
    """A moto S3 server on 127.0.0.1 for the test; stopped after it."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with (tmp_path / "moto.log").open("w") as log:
        server = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
            stdout=log,
            stderr=subprocess.STDOUT,  # its request log, line by line: the test reads it
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert server.poll() is None, (tmp_path / "moto.log").read_text()
                assert time.monotonic() < deadline, "the S3 server did not start"
                time.sleep(0.2)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.terminate()
        server.wait(timeout=30)


class Steps:
    """The build process: dbt commands and queries, answered in turn."""

    def __init__(self, env: dict[str, str], cwd: Path) -> None:
        self.out = cwd / "steps.out"
        with (cwd / "runtime.log").open("a") as log, self.out.open("w") as stdout:
            self.proc = subprocess.Popen(
                [sys.executable, "-c", STEPS],
                env=env,
                cwd=cwd,
                stdin=subprocess.PIPE,
                stdout=stdout,  # a file: dbt's output cannot fill a pipe and stall the build
                stderr=log,
                text=True,
            )
        self.answered = 0

    def ask(self, kind: str, arg) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps([kind, arg]) + "\n")
        self.proc.stdin.flush()

    def answer(self):
        deadline = time.monotonic() + 900
        while True:
            answers = [
                line for line in self.out.read_text().splitlines() if line.startswith("done: ")
            ]
            if len(answers) > self.answered:
                self.answered += 1
                return json.loads(answers[self.answered - 1].removeprefix("done: "))
            assert self.proc.poll() is None, "the build process ended"
            assert time.monotonic() < deadline, "a step did not end"
            time.sleep(0.1)

    def dbt(self, *args: str) -> int:
        self.ask("dbt", list(args))
        return self.answer()

    def sql(self, query: str) -> list[list]:
        self.ask("sql", query)
        return self.answer()

    def stop(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=120)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=60)


@pytest.mark.long(3)
def test_feeds_landed_on_s3_build_incrementally_and_each_file_is_read_once(s3_endpoint, tmp_path):
    """Every demo feed landed in a bucket: a build reads every file (its data tests, the
    accounting among them, pass); one with nothing new reads none; a file landed again under
    its name and size is not read again; a file landed while a build runs is read once, by that
    build or the next; the feed health sees the folders and `dbt source freshness` the files."""
    import boto3

    credentials = {
        "AWS_ACCESS_KEY_ID": "changelake-test",
        "AWS_SECRET_ACCESS_KEY": "changelake-test",
        "AWS_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": s3_endpoint,
    }
    s3 = boto3.client(
        "s3",
        endpoint_url=s3_endpoint,
        region_name="us-east-1",
        aws_access_key_id="changelake-test",
        aws_secret_access_key="changelake-test",
    )
    s3.create_bucket(Bucket=BUCKET)

    def land(feed: str, name: str, body: bytes) -> None:
        s3.put_object(Bucket=BUCKET, Key=f"cdc/{feed}/{name}", Body=body)

    for folder in sorted(DEMO.iterdir()):
        for file in folder.iterdir():
            land(folder.name, file.name, file.read_bytes())

    state = tmp_path / "state"
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("CHANGELAKE_", "PYSPARK", "AWS_"))
    }
    env.update(
        credentials,
        DBT_TARGET_PATH=str(dbt_target_path(tmp_path / "targets", "changelake", ())),
        CHANGELAKE_STATE_DIR=str(state),
        CHANGELAKE_LANDING_ROOT=ROOT,
        CHANGELAKE_DRIVER_MEMORY="1g",
        CHANGELAKE_SHUFFLE_PARTITIONS="2",
        PYTHONUNBUFFERED="1",  # dbt's lines reach the steps' output as they are written
    )
    steps = Steps(env, tmp_path)
    decoded_sql = " union all ".join(
        f"select '{f.name}' as feed, landed_file, landed_line from changelake.decoded_{f.name}"
        for f in sorted(DEMO.iterdir())
    )
    counts = (
        f"select feed, count_if(landed_line is null), count_if(landed_line is not null), "
        f"count_if(landed_file not like '{ROOT}/%') from ({decoded_sql}) group by feed"
    )
    try:
        assert steps.dbt("build") == 0
        first = {feed: rest for feed, *rest in steps.sql(counts)}
        # every feed, one marker a file, every line read, every path in the bucket
        assert set(first) == {f.name for f in DEMO.iterdir()}
        assert all(
            markers == 1 and lines > 0 and outside == 0
            for markers, lines, outside in first.values()
        )
        health = steps.sql(
            "select feed, has_landing_folder, files_listed from changelake.cdc_feed_health"
        )
        assert {tuple(r) for r in health} == {(f.name, True, 1) for f in DEMO.iterdir()}

        # nothing new, then the same file landed again (same name and size): nothing read
        assert steps.dbt("build") == 0
        pg = next(DEMO.glob("pg_inventory/*"))
        land("pg_inventory", pg.name, pg.read_bytes())
        assert steps.dbt("build") == 0
        assert {feed: rest for feed, *rest in steps.sql(counts)} == first

        # a file landed while a build runs, once it has listed the feed's folder (the server's
        # log shows the listing): not read by that build, read once by the next
        lines = [
            line
            for line in gzip.decompress(
                next(DEMO.glob("sqlserver_inventory/*")).read_bytes()
            ).splitlines()
            if line.strip()
        ]
        late = "server1.dbo.customers+0+1000.json.gz"
        log = tmp_path / "moto.log"
        listing = "prefix=cdc/sqlserver_inventory/"
        listed_before = log.read_text().count(listing)
        steps.ask("dbt", ["build"])
        deadline = time.monotonic() + 300
        while log.read_text().count(listing) == listed_before:
            assert time.monotonic() < deadline, "the build did not list the feed's folder"
            time.sleep(0.02)
        land("sqlserver_inventory", late, gzip.compress(b"\n".join(lines) + b"\n"))
        assert steps.answer() == 0
        read_late = (
            f"select count_if(landed_line is null), count(distinct landed_line), "
            f"min(kafka_offset) from changelake.decoded_sqlserver_inventory "
            f"where landed_file = '{ROOT}/sqlserver_inventory/{late}'"
        )
        assert steps.sql(read_late) == [[0, 0, None]]
        assert steps.dbt("build") == 0
        assert steps.sql(read_late) == [[1, len(lines), 1000]]
        assert steps.dbt("build") == 0
        assert steps.sql(read_late) == [[1, len(lines), 1000]]

        # freshness from the listing: files landed just now
        assert steps.dbt("source", "freshness") == 0
    finally:
        steps.stop()
