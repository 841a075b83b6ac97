"""Section 5: large landed files, decoded with the default driver memory."""

from __future__ import annotations

import gzip
import json
import re
import shutil
import time
from pathlib import Path
from typing import Any

from python_udfs import generator, runtime
from python_udfs.bench.measure import MemoryPeaks, Sampler, timed
from python_udfs.bench.pipeline import compiled_sql, dbt_command, generate, world
from python_udfs.generator.landing import MALFORMED

# --------------------------------------------------------------------------------------------

# the smaller file fills every core (two splits of 128 MiB): a file of one split runs as one
# task and holds half the memory, which would count the cores, not the file's size
LARGE_FILE_BYTES = (256 * 2**20, 2**30)
# kcat lines, a Connect sink file, and a sink file compressed (.json.gz, a sink's gzip output)
LARGE_FILE_SHAPES = ("kcat", "sink", "sink.gz")
_OFFSET = re.compile(r'"offset":\s*\d+')


def write_large_file(
    lines: list[str], out: Path, size: int, kcat: bool, compressed: bool = False
) -> int:
    """``lines`` written over and over into ``out`` until it holds ``size`` bytes of text
    (``compressed``: gzip, of that text); kcat lines get consecutive offsets (a sink file's
    offsets are its lines). Returns the records."""
    written = records = 0
    # (level 1: the file's text is what is measured, and it compresses 1 GiB in seconds)
    with gzip.open(out, "wt", compresslevel=1) if compressed else out.open("w") as f:
        while written < size:
            for line in lines:
                if kcat:
                    line = _OFFSET.sub(f'"offset":{records}', line, count=1)
                f.write(line + "\n")
                written += len(line) + 1
                records += 1
                if written >= size:
                    break
    return records


class HeapPeak(Sampler):
    """Samples the JVM's heap (the driver's, which runs the tasks in local mode): ``peak``, the
    most in use (garbage included, so it grows with a job's length), and ``peak_after_gc``, the
    most left after a collection (the heap pools' usage after their last GC, summed; garbage
    promoted to the old generation counts until a collection of that generation). With
    ``live``, each sample first runs a full collection, so ``peak`` is the most the job held
    alive at the samples: its live set, which decides whether it fits (the collections slow
    the job: not a run to time). No figure (0) on Spark Connect."""

    def __init__(self, spark: Any, interval: float = 0.1, live: bool = False) -> None:
        super().__init__(interval)
        self.live = live
        jvm = getattr(spark, "_jvm", None)
        factory = jvm and jvm.java.lang.management.ManagementFactory
        self.bean = factory and factory.getMemoryMXBean()
        self.pools = factory and [
            pool
            for pool in factory.getMemoryPoolMXBeans()
            if str(pool.getType().name()) == "HEAP" and pool.getCollectionUsage() is not None
        ]
        self.peak = self.peak_after_gc = 0

    def _sample(self) -> None:
        if self.bean is None:
            return
        if self.live:
            self.bean.gc()
        self.peak = max(self.peak, int(self.bean.getHeapMemoryUsage().getUsed()))
        after_gc = sum(int(pool.getCollectionUsage().getUsed()) for pool in self.pools)
        self.peak_after_gc = max(self.peak_after_gc, after_gc)

    def __enter__(self) -> Any:
        if self.bean is not None:
            self.bean.gc()
        return super().__enter__()


def large_file_bench(
    spark: Any,
    work: Path,
    sizes: tuple[int, ...] = LARGE_FILE_BYTES,
    shapes: tuple[str, ...] = LARGE_FILE_SHAPES,
    live: bool = True,
) -> list[dict[str, Any]]:
    """Decode one landed file of each size in each shape through its decoded model alone;
    with ``live``, once more (untimed) to sample the live heap. A compressed file's size is
    its text's (``bytes``); ``compressed_bytes`` is the file's."""
    from python_udfs.project import land_files

    data = work / "large-source"
    # the files repeat these records to their size: under 64 MiB (the smoke test's files of
    # kilobytes) 2,000 generated changes serve as well as 20,000
    events = 20_000 if max(sizes) >= 2**26 else 2_000
    generate(
        data,
        events=events,
        keys=events // 40,
        batches=1,
        feeds=["pg_inventory", "sqlserver_inventory"],
    )
    (batch,) = generator.batch_folders(data)
    # the generator's few malformed records are left out: every record of the file decodes,
    # so a quarantined one is an error of the reading
    kcat_lines = [
        line
        for f in sorted((batch / "pg_inventory").iterdir())
        for line in f.read_text().splitlines()
        if json.loads(line)["payload"] not in MALFORMED
    ]
    sink_lines = [
        line
        for f in sorted((batch / "sqlserver_inventory").glob("server1.dbo.*.json.gz"))
        for line in gzip.decompress(f.read_bytes()).decode().splitlines()
        if line not in MALFORMED
    ]
    known = (
        ("kcat", "pg_inventory", "large-pg.jsonl", kcat_lines),
        ("sink", "sqlserver_inventory", "server1.dbo.orders+0+0.json", sink_lines),
        ("sink.gz", "sqlserver_inventory", "server1.dbo.orders+0+0.json.gz", sink_lines),
    )
    out = []
    home = runtime.project_dir()
    for size in sizes:
        for shape, feed, name, lines in (k for k in known if k[0] in shapes):
            source = work / "large-file" / feed
            shutil.rmtree(work / "large-file", ignore_errors=True)
            source.mkdir(parents=True)
            compressed = name.endswith(".gz")
            records = write_large_file(
                lines, source / name, size, kcat=shape == "kcat", compressed=compressed
            )
            landing = work / "landing-large"
            shutil.rmtree(landing, ignore_errors=True)
            schema = "bench_large"
            spark.sql(f"drop schema if exists {schema} cascade")
            with world(work, landing, schema):
                land_files(feed, [source], str(landing), home)
                with HeapPeak(spark) as heap, MemoryPeaks() as memory:
                    seconds = timed(
                        lambda feed=feed: dbt_command("run", "--select", f"decoded_{feed}")
                    )
                live_peak = 0
                if live:
                    # the same decode again, its live set sampled each second
                    with HeapPeak(spark, interval=1.0, live=True) as live_heap:
                        dbt_command("run", "--select", f"decoded_{feed}", "--full-refresh")
                    live_peak = live_heap.peak
                # the accounting test's count of the landed records (every non-empty line)
                landed_sql = compiled_sql("{{ changelake_landed_records() }}")
                with HeapPeak(spark) as count_heap:
                    started = time.perf_counter()
                    counted = spark.sql(
                        f"select sum(records_landed) from ({landed_sql}) as landed "
                        f"where feed = '{feed}'"
                    ).first()[0]
                    count_seconds = time.perf_counter() - started
            # a record's line is its place in the file, and so is its offset: the kcat lines
            # were numbered so, a sink file's name starts at offset 0
            lines_seen = spark.sql(
                f"select count(distinct landed_line), min(landed_line), max(landed_line), "
                f"count(error_reason), count_if(kafka_offset is distinct from landed_line) "
                f"from {schema}.decoded_{feed} where landed_line is not null"
            ).first()
            out.append(
                {
                    "shape": shape,
                    "bytes": size if compressed else (source / name).stat().st_size,
                    "compressed_bytes": (source / name).stat().st_size if compressed else 0,
                    "records": records,
                    "seconds": seconds,
                    "heap_peak": heap.peak,
                    "heap_after_gc": heap.peak_after_gc,
                    "heap_live": live_peak,
                    # the Python workers that read and decode the file (resident, summed)
                    "python_peak": memory.peaks["python_workers"],
                    "landed_counted": counted,
                    "count_seconds": count_seconds,
                    "count_heap_peak": count_heap.peak,
                    "exact": tuple(lines_seen[:3]) == (records, 0, records - 1)
                    and lines_seen[4] == 0,
                    "errors": lines_seen[3],
                }
            )
            spark.sql(f"drop schema if exists {schema} cascade")
            shutil.rmtree(landing, ignore_errors=True)
    shutil.rmtree(work / "large-file", ignore_errors=True)
    shutil.rmtree(data, ignore_errors=True)
    return out
