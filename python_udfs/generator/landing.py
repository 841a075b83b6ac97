"""Delivery: partitions, batches, late files, re-delivered overlaps, malformed records,
written as kcat lines or Kafka Connect sink files."""

from __future__ import annotations

import gzip
import random
import zlib
from pathlib import Path

from python_udfs.generator.record import Record, dumps

PARTITIONS = 2
# records per landed file at most, like a Kafka Connect sink's flush.size: a landed file is read
# as one row (so each record keeps its file and line), which must fit in an executor's memory
FILE_RECORDS = 10_000
# topics landed in a feed of their own (dtle's DDL topic has its own envelope format)
FEED_OF_TOPIC = {"dtle.schema-changes": "dtle_inventory_ddl"}


MALFORMED = (
    '{"schema": {"type": "struct"}, "payload": {"op": "c", "after": {"id": 1',  # cut short
    "this is not JSON at all",
    '{"type": "INSERT", "data": "not a list", "database": "inventory", "table": "x"}',
)


class Landing:
    """Writes one feed's records into ``batch-NNNN/<feed>/`` files, kcat or Connect shape."""

    def __init__(self, out: Path, feed: str, shape: str, batches: int, rng: random.Random) -> None:
        self.out, self.feed, self.shape, self.batches, self.rng = out, feed, shape, batches, rng
        self.offsets: dict[tuple[str, int], int] = {}
        self.buffers: dict[tuple[str, int, int], list[tuple[int, str]]] = {}
        self.tail: dict[tuple[str, int], list[tuple[int, str]]] = {}
        self.records = 0  # distinct Kafka records (by topic, partition, offset)
        self.lines = 0  # landed lines, re-deliveries included
        self.malformed = 0  # distinct malformed records
        self.bad_offsets: set[tuple[str, int, int]] = set()
        self.malformed_lines = 0  # landed malformed lines, re-deliveries included

    def partition(self, record: Record) -> int:
        if record.route is None:
            return 0
        return zlib.crc32(repr(record.route).encode()) % PARTITIONS

    def add(self, batch: int, record: Record) -> None:
        partition = self.partition(record)
        offset = self.offsets.get((record.topic, partition), 0)
        self.offsets[(record.topic, partition)] = offset + 1
        self.records += 1
        if self.shape == "connect":
            if record.value is None:
                return  # the sink drops tombstones (behavior.on.null.values=ignore)
            line = record.value
        else:
            line = dumps(
                {
                    "topic": record.topic,
                    "partition": partition,
                    "offset": offset,
                    "tstype": "create",
                    "ts": record.timestamp_ms + 50,
                    "broker": 0,
                    "headers": record.headers,
                    "key": record.key,
                    "payload": record.value,
                }
            )
        self.buffers.setdefault((record.topic, partition, batch), []).append((offset, line))

    def add_malformed(self, batch: int, topic: str, text: str) -> None:
        self.malformed += 1
        record = Record(topic, None, None, text, [], 0)
        partition = self.partition(record)
        self.bad_offsets.add((topic, partition, self.offsets.get((topic, partition), 0)))
        self.add(batch, record)

    def flush(self) -> None:
        for (topic, partition, batch), lines in sorted(self.buffers.items()):
            overlap: list[tuple[int, str]] = []
            previous = self.tail.get((topic, partition))
            if self.shape == "kcat" and previous and len(previous) > 1 and self.rng.random() < 0.5:
                # re-delivered after a consumer restart: the previous file's last records again
                overlap = previous[-self.rng.randint(1, min(3, len(previous) - 1)) :]
            self.tail[(topic, partition)] = lines
            lines = overlap + lines
            late = batch + 1 < self.batches and partition == 1 and self.rng.random() < 0.3
            if late and len(lines) > 1:
                # the end of this partition's file lands one batch late, as a file of its own
                cut = len(lines) - min(25, len(lines) // 10 + 1)
                self._write(batch, topic, partition, lines[:cut])
                self._write(batch + 1, topic, partition, lines[cut:])
            else:
                self._write(batch, topic, partition, lines)
        self.buffers.clear()

    def _write(self, batch: int, topic: str, partition: int, lines: list[tuple[int, str]]) -> None:
        """Write ``lines`` as files of at most FILE_RECORDS records (a sink's flush size)."""
        folder = self.out / f"batch-{batch:04d}" / FEED_OF_TOPIC.get(topic, self.feed)
        folder.mkdir(parents=True, exist_ok=True)
        self.lines += len(lines)
        # the quarantine holds every landed bad line: a re-delivered one is there twice
        self.malformed_lines += sum((topic, partition, o) in self.bad_offsets for o, _ in lines)
        for first in range(0, len(lines), FILE_RECORDS):
            chunk = lines[first : first + FILE_RECORDS]
            start, end = chunk[0][0], chunk[-1][0]
            text = "\n".join(line for _, line in chunk) + "\n"
            if self.shape == "connect":
                path = folder / f"{topic}+{partition}+{start:010d}.json.gz"
                path.write_bytes(gzip.compress(text.encode(), mtime=0))
            else:
                # kcat files are named by their first and last offsets: a re-delivered range
                # never takes the name of an earlier file
                path = folder / f"{topic}-{partition}-{start:012d}-{end:012d}.jsonl"
                path.write_text(text)
