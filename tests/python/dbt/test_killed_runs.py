"""A build killed with SIGKILL mid-write, then run again, gives exactly what an uninterrupted
build gives: nothing lost, nothing twice.

Each killed build runs `dbt run` in a process of its own state folder (its own metastore): the
models alone, since data tests write nothing a kill could leave half done. Each rerun after a
kill is a fresh process; where a rerun succeeds, the next killed build runs in its process, on
its warm session (a JVM start less: this is the suite's longest test). The last build reads its
results in the same process; the uninterrupted build they must equal runs on the suite's shared
session.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from conftest import dbt_target_path

PROJECT = Path(__file__).resolve().parents[3]
CHANGELAKE = Path(sys.executable).parent / "changelake"
DEMO = PROJECT / "python_udfs" / "demo_data" / "landing"


# what each query reads, and from which public model
QUERIES = {
    "changes": (
        "change_id, op, key_json, before_json, after_json, linked_key_json",
        "cdc_change_log",
    ),
    "history": (
        "feed, table_name, key_json, version_number, row_json, "
        "valid_from_position, valid_to_position, is_current, is_deleted",
        "cdc_history",
    ),
    "quarantine": ("feed, landed_line, error_reason", "cdc_quarantine"),
}


def _results_sql(schema: str) -> str:
    """One query reading them all: each row as JSON text, tagged with its query."""
    return " union all ".join(
        f"select '{name}' as query, to_json(struct({columns})) as row from {schema}.{model}"
        for name, (columns, model) in QUERIES.items()
    )


def _env(state: Path, args: Sequence[str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CHANGELAKE_", "PYSPARK"))}
    env.update(
        # dbt's parsed project, kept per vars between these builds' processes
        DBT_TARGET_PATH=str(dbt_target_path(state.parent / "targets", "changelake", args)),
        CHANGELAKE_STATE_DIR=str(state),
        CHANGELAKE_LANDING_ROOT=str(state.parent / "landing"),
        CHANGELAKE_DRIVER_MEMORY="1g",
        # as the suite's shared session (conftest): two shuffle partitions for a few records
        CHANGELAKE_SHUFFLE_PARTITIONS="2",
    )
    return env


def _vars(settings: str) -> list[str]:
    """dbt's `--vars` with ``settings``; the history is compacted where each step says, not
    after every run as a small store is"""
    return ["--vars", "{" + settings + ", changelake_history_small_rows: 0}"]


def _build(
    state: Path, kill_when: Path | Callable[[], bool] | None = None, *args: str
) -> int | None:
    """Run a build (with dbt ``args``); with ``kill_when`` (a path, or a test), SIGKILL it as
    soon as that path exists or the test is true."""
    with (state.parent / "runtime.log").open("a") as runtime_log:
        proc = subprocess.Popen(
            [str(CHANGELAKE), "dbt", "run", *args],
            env=_env(state, args),
            cwd=state.parent,
            stdout=subprocess.DEVNULL,
            stderr=runtime_log,  # the runtime's own lines (`changelake: ...`), and dbt's errors
            start_new_session=True,
        )
    if kill_when is None:
        return proc.wait(timeout=900)
    _kill(proc, kill_when)
    return None


def _kill(proc: subprocess.Popen, kill_when: Path | Callable[[], bool]) -> None:
    """SIGKILL ``proc``'s build as soon as ``kill_when`` (a path, or a test) holds."""
    ready = kill_when.exists if isinstance(kill_when, Path) else kill_when
    deadline = time.monotonic() + 600
    while not ready() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    killed = proc.poll() is None
    if killed:
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)
    assert killed, f"the build ended before {kill_when} held: no kill happened"


# builds in one process, each asked for by a line on stdin (its dbt target folder and args as
# JSON), each followed by a line `built: <exit code>` on stdout: the builds after the first run
# on its warm session, as in a long-lived process (`changelake server`, a scheduler's worker)
WARM_BUILDS = """
import json, os, sys
from python_udfs.project import run_dbt
for line in sys.stdin:
    target, args = json.loads(line)
    os.environ["DBT_TARGET_PATH"] = target
    code, _ = run_dbt(["run", *args])
    print(f"built: {code}", flush=True)
"""


def _build_then_kill(
    state: Path, land: Callable[[], None], kill_when: Callable[[], bool], *args: str
) -> None:
    """In one process: a build, which must succeed; then, once ``land`` has landed files, a
    build (with dbt ``args``) on the warm session, SIGKILLed as soon as ``kill_when`` holds.
    (Each killed build's rerun is a fresh process: the kill takes the warm session with it.)"""
    out = state.parent / "warm-builds.out"

    def ask(*build_args: str) -> None:
        target = _env(state, build_args)["DBT_TARGET_PATH"]
        assert proc.stdin is not None
        proc.stdin.write(json.dumps([target, list(build_args)]) + "\n")
        proc.stdin.flush()

    with (state.parent / "runtime.log").open("a") as runtime_log, out.open("w") as stdout:
        proc = subprocess.Popen(
            [sys.executable, "-c", WARM_BUILDS],
            env=_env(state, ()),
            cwd=state.parent,
            stdin=subprocess.PIPE,
            stdout=stdout,  # a file: dbt's output cannot fill a pipe and stall the build
            stderr=runtime_log,
            text=True,
            start_new_session=True,
        )
    try:
        ask()
        deadline = time.monotonic() + 900
        while "built: " not in out.read_text() and proc.poll() is None:
            assert time.monotonic() < deadline, "the first build did not end"
            time.sleep(0.1)
        assert "built: 0" in out.read_text(), out.read_text()[-2000:]
        land()
        ask(*args)
        _kill(proc, kill_when)
    finally:
        if proc.poll() is None:  # a failed step above: the test stops what it started
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=60)
    assert out.read_text().count("built: ") == 1, "the second build ended before the kill"


def _rows(rows) -> dict[str, list]:
    out: dict[str, list] = {name: [] for name in QUERIES}
    for query, row in rows:
        out[query].append(row)
    return {name: sorted(rows) for name, rows in out.items()}


# the last build: `dbt run` and, on its warm session, the results (one JVM start, not two)
LAST_BUILD = """
import json, sys
from python_udfs.project import RUNTIME, run_dbt
code, _ = run_dbt(["run", *sys.argv[2:]])
if code == 0:
    rows = RUNTIME.session.sql(sys.argv[1]).collect()
    print("results:" + json.dumps([[r.query, r.row] for r in rows]))
sys.exit(code)
"""


def _last_build(state: Path, *args: str) -> dict[str, list]:
    """Run the last build (with dbt ``args``) and read its results in the same process."""
    done = subprocess.run(
        [sys.executable, "-c", LAST_BUILD, _results_sql("changelake"), *args],
        env=_env(state, args),
        cwd=state.parent,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "Using incubator modules" not in done.stderr  # the Java shim drops the flag
    with (state.parent / "runtime.log").open("a") as runtime_log:
        runtime_log.write(done.stderr)
    (line,) = [line for line in done.stdout.splitlines() if line.startswith("results:")]
    return _rows(json.loads(line.removeprefix("results:")))


def _land_demo(root: Path, feeds: set[str] | None = None) -> None:
    for feed in DEMO.iterdir():
        if feeds is not None and feed.name not in feeds:
            continue
        (root / feed.name).mkdir(parents=True, exist_ok=True)
        for file in feed.iterdir():
            (root / feed.name / file.name).write_bytes(file.read_bytes())


def _land_items(root: Path, name: str, first_lsn: int) -> None:
    """A kcat file of 30 Debezium PostgreSQL changes to a table of its own (schema-less), five
    keys updated in turn: each file closes ~25 versions, more than the demo's history holds."""
    from test_history import message

    records = []
    for step in range(30):
        lsn, key = first_lsn + step, step % 5
        op = "c" if step < 5 and first_lsn == 1 else "u"
        records.append(message(lsn, op, key, None, {"id": key, "v": f"{name}-{step}"}))
    (root / "pg_inventory").mkdir(parents=True, exist_ok=True)
    text = "\n".join(json.dumps(r) for r in records) + "\n"
    (root / "pg_inventory" / f"{name}.jsonl").write_text(text)


@pytest.mark.long(16)
def test_builds_killed_mid_write_then_rerun_equal_uninterrupted_builds(dbt, spark, tmp_path):
    """Two landings, built in turn. The first build is killed twice (while the decoded tables
    are written, then while the history is), the second while a run ledger is compacted (made
    due at once), then while compaction writes the history's base layer (made due at one layer
    after the base), then while the run's start merges table segments (made due at once),
    then, its base committed, while the partitions no reader sees any more are dropped (by the
    compaction, and at the run's end once the views name the new base).
    Two more landings follow, the second built with a compaction due that merges the first base
    into its new one, killed while that base is written and run again; its compaction drops
    what the kill while dropping left.
    The results equal one uninterrupted build of every landing (what uninterrupted builds in
    turn give: incremental equals full refresh), and no rerun had a killed write's folder to
    remove at start-up (the embedded target's step, which the other targets lack)."""
    # three demo feeds first (a DataWorks update pair, a Canal DDL and delete, an OGG
    # truncate; their decoded tables are written by the same path as every feed's), then the
    # Debezium PostgreSQL one: each further feed would add its model's work to every build
    first = {"canal_inventory", "dataworks_inventory", "ogg_inventory"}
    # the uninterrupted build of every landing, on the suite's shared session
    _land_demo(dbt.landing_root, first | {"pg_inventory"})
    _land_items(dbt.landing_root, "items-a", 1)
    _land_items(dbt.landing_root, "items-b", 100)
    dbt("run")
    expected = _rows(spark.sql(_results_sql(dbt.schema)).collect())
    assert expected["changes"]
    assert expected["history"]

    killed = tmp_path / "killed" / "state"
    killed.mkdir(parents=True)
    _land_demo(killed.parent / "landing", first)

    warehouse = killed / "warehouse" / "changelake.db"
    store = warehouse / "int_history_versions"
    # killed while the decoded tables are being written
    _build(killed, kill_when=warehouse / "decoded_dataworks_inventory")
    # killed again, this time while the history is being written
    _build(killed, kill_when=store)

    def written(folder: Path, marker: str) -> Callable[[], bool]:
        # files whose path holds `marker`, in the committer's temporary folder or published
        # (the committer renames and removes folders while this looks: a vanished one is a miss)
        def found() -> bool:
            try:
                return any(marker in str(path) for path in folder.rglob("*"))
            except FileNotFoundError:
                return False

        return found

    # the rerun, then, in its process, the Debezium PostgreSQL feed's build, killed while the
    # run's start compacts the ledgers (due after one commit here)
    compact_at_once = _vars("changelake_ledger_max_tail: 1")
    _build_then_kill(
        killed,
        lambda: _land_demo(killed.parent / "landing", {"pg_inventory"}),
        written(warehouse, "segment=compacted-"),
        *compact_at_once,
    )
    base_layer_written = written(store, "-base")
    # killed while compaction writes the base layer (due at one layer since the newest base)
    compact_every_layer = _vars("changelake_history_max_layers: 1")
    _build(killed, base_layer_written, *compact_every_layer)

    def merge_written() -> bool:
        # a data file of a merged segment (in the committer's temporary folder or published)
        try:
            return any(
                "segment=merged-" in str(path) and path.name.startswith("part-")
                for path in warehouse.rglob("*")
            )
        except FileNotFoundError:
            return False

    # killed while the run's start merges the segments of the decoded tables and the change
    # log (due after one consumed batch here)
    _build(killed, merge_written, *_vars("changelake_segments_max_tail: 1"))

    # the rerun's compaction commits its base, then the partitions no reader sees any more
    # (every one there now: the killed run's base layer, dropped by the compaction, and the
    # layer and the base it merged, dropped at the run's end once the views name the new base)
    # are dropped: killed while they are, after the first is gone
    partitions = sorted(store.glob("batch_id=*/part=*"))
    bases_before = set(store.glob("batch_id=*-base"))
    assert partitions
    _build(killed, lambda: not all(path.exists() for path in partitions), *compact_every_layer)
    left = [path for path in partitions if path.exists()]
    assert left, "every partition was dropped before the kill: it did not land mid-drop"
    (first_base,) = {path.name for path in set(store.glob("batch_id=*-base")) - bases_before}

    # two more layers; the second's compaction (due at two layers) merges the first base, whose
    # versions are fewer than the two layers', into the new one: killed while it is written
    _land_items(killed.parent / "landing", "items-a", 1)
    every_second = _vars("changelake_history_max_layers: 2, changelake_history_max_share: 1000")

    def second_base_written() -> bool:
        try:
            return any(
                "-base" in str(path) and first_base not in str(path) for path in store.rglob("*")
            )
        except FileNotFoundError:
            return False

    # the rerun builds the first layer; in its process, the second's build is killed
    _build_then_kill(
        killed,
        lambda: _land_items(killed.parent / "landing", "items-b", 100),
        second_base_written,
        *every_second,
    )
    results = _last_build(killed, *every_second)

    # no kill left a folder that only the embedded target's start removes (the cluster and
    # Connect targets have no such step): first builds create their tables before writing
    runtime_log = (killed.parent / "runtime.log").read_text()
    assert "changelake: Spark" in runtime_log
    assert "removed the remains of a killed write" not in runtime_log

    assert results == expected
    # one base: the merged first base's partitions, the killed runs' base layers and what the
    # kill while dropping left are dropped (by the next compaction: no reader saw them)
    assert not [path for path in left if path.exists()]
    bases = {path.name for path in store.glob("batch_id=*-base")}
    assert len(bases) == 1, bases
    assert first_base not in bases, bases
