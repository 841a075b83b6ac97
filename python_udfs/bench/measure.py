"""Samplers and timers every section of the benchmark uses."""

from __future__ import annotations

import statistics
import threading
import time
from collections.abc import Callable
from typing import Any


class Sampler:
    """Calls ``_sample`` every ``interval`` seconds on a thread while the block runs."""

    def __init__(self, interval: float) -> None:
        self.interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _sample(self) -> None:
        raise NotImplementedError

    def _run(self) -> None:
        while not self._stop.is_set():
            self._sample()
            self._stop.wait(self.interval)

    def __enter__(self) -> Any:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._sample()


class MemoryPeaks(Sampler):
    """Samples resident memory (psutil) of the JVM, the Python workers and this process."""

    def __init__(self, interval: float = 0.2) -> None:
        import psutil

        super().__init__(interval)
        self.me = psutil.Process()
        self.peaks = {"jvm": 0, "python_workers": 0, "driver": 0}

    def _sample(self) -> None:
        import psutil

        jvm = workers = 0
        for child in self.me.children(recursive=True):
            try:
                name = child.name()
                rss = child.memory_info().rss
            except psutil.Error:
                continue
            if name == "java":
                jvm += rss
            elif name.startswith("python"):
                workers += rss
        for name, value in (("jvm", jvm), ("python_workers", workers)):
            self.peaks[name] = max(self.peaks[name], value)
        self.peaks["driver"] = max(self.peaks["driver"], self.me.memory_info().rss)


def timed(action: Callable[[], Any]) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def median_seconds(action: Callable[[], Any], rounds: int) -> float:
    return statistics.median(timed(action) for _ in range(rounds))


def read_seconds(spark: Any, sql: str, rounds: int = 3) -> float:
    """Median seconds to read every row of ``sql`` (written to the noop sink)."""
    return median_seconds(lambda: noop(spark.sql(sql)), rounds)


def current_against_parquet(spark: Any, schema: str) -> tuple[int, float, float]:
    """The rows of ``schema``'s ``cdc_current``, the median seconds to read them all, and to
    read a parquet table of the same rows (made here, then dropped)."""
    copy = f"{schema}.bench_current_copy"
    spark.sql(f"drop table if exists {copy}")
    spark.sql(f"create table {copy} using parquet as select * from {schema}.cdc_current")
    rows = spark.table(copy).count()
    current = read_seconds(spark, f"select * from {schema}.cdc_current", 5)
    parquet = read_seconds(spark, f"select * from {copy}", 5)
    spark.sql(f"drop table {copy}")
    return rows, current, parquet


def noop(frame: Any) -> None:
    frame.write.format("noop").mode("overwrite").save()
