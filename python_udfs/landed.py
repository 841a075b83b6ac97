"""The landed files, read and decoded in the Python worker: the data source ``changelake_landed``.

A feed's decoded model names the files its run tries (path, size, modification time), the
envelope format and the landing shape; each Spark task opens its files (or its byte range of a
large one) itself, splits the lines, reads the Kafka record of each (a kcat ``-J`` line, or the
value a line of a Kafka Connect sink file), decodes it and sends back the decoded columns. The
raw text never crosses from the JVM to Python; only a failed record's text comes back, for the
quarantine. SQL::

    create temporary view v using changelake_landed
        options (files '[["file:/landing/a.json", 1234, 1700000000000000]]',
                 format 'debezium', shape 'auto')
    select * from v

One row a decoded change (a Kafka record of several changes gives several rows, one that
decodes to none or fails gives one), and one marker row a file tried (``landed_line`` null),
readable or not. A ``.json.gz`` file is read only when it is whole gzip (checked before any of
its rows is sent); a file that cannot be read has its marker and no lines.
"""

from __future__ import annotations

import os
import re
import zlib
from collections.abc import Iterator, Sequence
from typing import Any

import orjson
import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from python_udfs.filesystems import list_files, open_file
from python_udfs.layout import FIELD_NAMES, FIELDS
from python_udfs.registry import decode_unchecked, header_pairs

# <topic>+<partition>+<startOffset>[+<endOffset>].json[.gz]: the Kafka Connect sink file name
# (S3 and GCS sinks; the HDFS sink adds the end offset). A topic name has no '+'.
SINK_NAME = re.compile(r"([^/+]+)[+]([0-9]+)[+]([0-9]+)([+][0-9]+)?[.]json([.]gz)?$")

# a row's columns: lineage and the Kafka record's fields, the layout's, then the quarantine's
# and the times (the decoded table's order, which adds its feed, batch and segment)
HEAD_FIELDS: tuple[tuple[str, str], ...] = (
    ("topic", "string"),
    ("kafka_partition", "int"),
    ("kafka_offset", "bigint"),
    ("landed_file", "string"),
    ("landed_line", "int"),
    ("landed_file_size", "bigint"),
)
TAIL_FIELDS: tuple[tuple[str, str], ...] = (
    ("error_reason", "string"),
    ("failed_raw_record", "string"),
    ("kafka_timestamp", "timestamp"),
    ("landed_at", "timestamp"),
)
SCHEMA: str = ", ".join(
    f"{name} {kind}" for name, kind in (*HEAD_FIELDS, *((n, t) for n, t, _ in FIELDS), *TAIL_FIELDS)
)

_SINK_NAME_ERROR = (
    "connect sink file name is not <topic>+<partition>+<startOffset>[+<endOffset>].json[.gz]"
)
_AUTO_HINT = (
    " (read as kcat lines: the file name is not"
    " <topic>+<partition>+<startOffset>[+<endOffset>].json[.gz])"
)
_BAD_UTF8 = "line is not valid UTF-8 (the raw record shows each invalid byte as U+FFFD)"

# a plain file is read (and a range's lines counted) in steps of this many bytes
_READ_BYTES = 8 << 20
# the smallest read of a plain file's range a task is given
_MIN_SPLIT = 4 << 20
# Kafka records decoded into one Arrow batch
_BATCH_LINES = 4096
_GZIP_IN = 1 << 16
_GZIP_OUT = 1 << 20


_INT32 = range(-(2**31), 2**31)
_INT64 = range(-(2**63), 2**63)


# ---------------------------------------------------------------------------------------------
# planning: which task reads what


def plan(
    files: Sequence[Sequence[Any]], split_bytes: int, text_bytes: dict[str, int] | None = None
) -> list[list[tuple[Any, ...]]]:
    """The tasks' reads: each a list of (path, size, landed_at_micros, start, end,
    lines_before), the byte range [start, end) of a file holding whole lines, the first of
    which is the file's line number ``lines_before`` (0-based). A plain file larger than
    ``split_bytes`` is cut at the line ends nearest the multiples of ``split_bytes``, its lines
    counted once, here, to number each range's first line; a compressed file is one range
    (read whole or not at all). Small files share a task up to ``split_bytes`` of text (a
    compressed file weighs what it inflates to: ``text_bytes`` by path, else
    :func:`text_bytes_of`).
    Every file also gets its marker row: from the task that reads its first range."""
    tasks: list[list[tuple[Any, ...]]] = []
    current: list[tuple[Any, ...]] = []
    current_bytes = 0
    for path, size, landed_at in files:
        ranges = (
            _ranges(path, size, split_bytes)
            if size > split_bytes and not path.endswith(".gz")
            else [(0, size, 0)]
        )
        for start, end, lines_before in ranges:
            # a task's share is the text it reads
            weight = end - start
            if path.endswith(".gz"):
                weight = (text_bytes or {}).get(path) or text_bytes_of(path, size)
            if current and current_bytes + weight > split_bytes:
                tasks.append(current)
                current, current_bytes = [], 0
            current.append((path, size, landed_at, start, end, lines_before))
            current_bytes += weight
    if current:
        tasks.append(current)
    return tasks


def text_bytes_of(path: str, size: int) -> int:
    """About how many bytes of text a gzip file inflates to: the size its last member's
    trailer records (modulo 4 GiB), at least the file's size; the file's size when it cannot
    be read. A compressed file is one task's read, so small ones share a task by this size,
    not by their compressed bytes (which would put a feed's every file in one task)."""
    if size < 18:  # shorter than an empty member: not gzip, nothing to weigh
        return size
    try:
        with open_file(path) as stream:
            stream.seek(size - 4)
            trailer = stream.read(4)
    except OSError:
        return size
    return max(size, int.from_bytes(trailer, "little")) if len(trailer) == 4 else size


def _ranges(path: str, size: int, split_bytes: int) -> list[tuple[int, int, int]]:
    """(start, end, lines before start) of each range of a plain file, cut after the first
    line end at or past each multiple of ``split_bytes``."""
    cuts: list[tuple[int, int]] = [(0, 0)]  # (offset, lines before it)
    lines = 0
    offset = 0
    target = split_bytes
    try:
        stream = open_file(path)
    except FileNotFoundError:
        return [(0, size, 0)]  # gone: its task finds it so and sends its marker alone
    with stream:
        while offset < size:
            chunk = stream.read(min(_READ_BYTES, size - offset))
            if not chunk:
                break
            base = offset
            offset += len(chunk)
            search = 0
            while base + len(chunk) > target:
                # the first line end at or past the target, within this chunk
                end = chunk.find(b"\n", max(search, target - base))
                if end < 0:
                    break
                lines += chunk.count(b"\n", search, end + 1)
                search = end + 1
                if base + search < size:
                    cuts.append((base + search, lines))
                target = base + search + split_bytes
            lines += chunk.count(b"\n", search)
    ends = [start for start, _ in cuts[1:]] + [size]
    return [(start, end, before) for (start, before), end in zip(cuts, ends, strict=True)]


# ---------------------------------------------------------------------------------------------
# reading: lines of a range


def range_lines(path: str, start: int, end: int) -> Iterator[bytes] | None:
    """The lines (without their '\\n') of the byte range [start, end) of a plain file, which
    starts a line and ends one (or the file). An empty line is a line. None when the file is
    gone (removed since it was listed): it was tried and could not be read."""
    try:
        stream = open_file(path)
    except FileNotFoundError:
        return None

    def lines() -> Iterator[bytes]:
        with stream:
            if start:
                stream.seek(start)
            yield from _split(_chunks(stream, end - start))

    return lines()


def _chunks(stream: Any, length: int, step: int = _READ_BYTES) -> Iterator[bytes]:
    """The next ``length`` bytes of ``stream``, ``step`` at a time (fewer if it ends)."""
    left = length
    while left > 0:
        chunk = stream.read(min(step, left))
        if not chunk:
            return
        left -= len(chunk)
        yield chunk


def _split(chunks: Iterator[bytes]) -> Iterator[bytes]:
    """Lines split on '\\n' over a stream of chunks; a last line without '\\n' is a line,
    a final '\\n' starts none. Line ends are found with ``find`` (a memchr), several times
    cheaper than ``split``'s byte-by-byte scan on lines of kilobytes."""
    pending = b""
    for chunk in chunks:
        data = pending + chunk if pending else chunk
        find = data.find
        start = 0
        end = find(b"\n")
        while end >= 0:
            yield data[start:end]
            start = end + 1
            end = find(b"\n", start)
        pending = data[start:]
    if pending:
        yield pending


def gzip_lines(path: str, size: int) -> Iterator[bytes] | None:
    """The lines of a whole gzip file, or None when it is not whole gzip (cut short, not gzip,
    bytes after its last member): the file is inflated once to check it before any line is
    given, then again for its lines, a step at a time (no more of it is held than a step)."""
    try:
        with open_file(path) as stream:
            for _ in _inflated(_chunks(stream, size, _GZIP_IN)):
                pass
    except (zlib.error, EOFError, FileNotFoundError):
        return None

    def lines() -> Iterator[bytes]:
        with open_file(path) as stream:
            yield from _split(_inflated(_chunks(stream, size, _GZIP_IN)))

    return lines()


def _inflated(chunks: Iterator[bytes | memoryview]) -> Iterator[bytes]:
    """The text of the gzip members in the bytes ``chunks`` give, in steps; EOFError when it
    is cut short or is not gzip, zlib.error when a member is damaged."""
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    pending: bytes | memoryview = b""
    exhausted = False
    while True:
        if not pending and not exhausted:
            chunk = next(chunks, None)
            exhausted = chunk is None
            pending = b"" if chunk is None else chunk
        if inflater.eof:
            # what follows a member: nothing, another member, or NUL padding to the end
            if not pending:
                if exhausted:
                    return
                continue
            if pending[:1] == b"\0":
                if bytes(pending).strip(b"\0") or any(bytes(c).strip(b"\0") for c in chunks):
                    raise EOFError("bytes after the last gzip member")
                return
            inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
        text = inflater.decompress(pending, _GZIP_OUT)
        pending = inflater.unused_data if inflater.eof else inflater.unconsumed_tail
        if text:
            yield text
        if not inflater.eof and not text and not pending and exhausted:
            raise EOFError("the gzip stream ends before its end marker")


def _count_lines(texts: Iterator[bytes]) -> int:
    """Lines of the concatenated ``texts`` that hold a byte besides '\\r', split on '\\n'."""
    lines = 0
    open_line = False  # whether the line not yet ended holds such a byte
    for text in texts:
        parts = text.split(b"\n")
        if len(parts) == 1:
            open_line = open_line or bool(parts[0].strip(b"\r"))
            continue
        lines += open_line or bool(parts[0].strip(b"\r"))
        lines += sum(1 for part in parts[1:-1] if part.strip(b"\r"))
        open_line = bool(parts[-1].strip(b"\r"))
    return lines + open_line


def landed_records(path: str) -> int:
    """The records landed in a file as the accounting counts them: its lines (a compressed
    file's inflated; none when it is not whole gzip, as the reader reads none of it) that hold
    a byte besides a carriage return. Counted apart from the reader's own line splitting
    (``split`` here, ``find`` there), so a reader that lost or doubled a line would not balance;
    0 for a file gone since it was listed."""
    compressed = path.endswith(".gz")
    try:
        with open_file(path) as stream:
            step = _GZIP_IN if compressed else _READ_BYTES
            chunks = iter(lambda: stream.read(step), b"")
            return _count_lines(_inflated(chunks) if compressed else chunks)
    except (zlib.error, EOFError, FileNotFoundError):
        return 0


# ---------------------------------------------------------------------------------------------
# the Kafka record of a line: kcat -J fields, as from_json with an explicit schema reads them


def _text(value: Any) -> str | None:
    if value is None or type(value) is str:
        return value
    if type(value) is bool:
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return orjson.dumps(value).decode()
    return str(value)


def _integer(value: Any, bounds: range) -> tuple[int | None, bool]:
    """(the value, whether it fits): a JSON integer within ``bounds``, or null."""
    if value is None:
        return None, True
    if type(value) is int and value in bounds:
        return value, True
    return None, False


def kcat_fields(line: str) -> tuple[dict[str, Any], str | None]:
    """The fields of a kcat ``-J`` line (topic, partition, offset, ts, headers, key, payload)
    and the reason it cannot be read (None when it can): a field of the wrong JSON type is
    null and makes the line malformed; the fields that could be read are kept."""
    try:
        parsed = orjson.loads(line)
    except orjson.JSONDecodeError:
        return {}, "malformed"
    if type(parsed) is not dict:
        return {}, "malformed"
    fields: dict[str, Any] = {}
    fine = True
    for name in ("topic", "key", "payload"):
        value = parsed.get(name)
        fields[name] = _text(value)
    fields["partition"], ok = _integer(parsed.get("partition"), _INT32)
    fine &= ok
    for name in ("offset", "ts"):
        fields[name], ok = _integer(parsed.get(name), _INT64)
        fine &= ok
    headers = parsed.get("headers")
    if headers is None or type(headers) is list:
        fields["headers"] = None if headers is None else [_text(h) for h in headers]
    else:
        fields["headers"] = None
        fine = False
    return fields, None if fine else "malformed"


# ---------------------------------------------------------------------------------------------
# decoding a task's reads into Arrow batches


# what a batch keeps of each Kafka record (a file's marker is one too)
_LINE = (
    "landed_file",
    "landed_file_size",
    "landed_at",
    "landed_line",
    "topic",
    "kafka_partition",
    "kafka_offset",
    "kafka_timestamp",
    "landing_error",
    "raw_record",
)


class _Batch:
    """The Kafka records of one Arrow batch in the making: their line values (:data:`_LINE`,
    a tuple a record) and their decoded records (None when not decoded)."""

    def __init__(self) -> None:
        self.rows: list[tuple[Any, ...]] = []
        self.decoded: list[list[dict[str, Any]] | None] = []

    def __len__(self) -> int:
        return len(self.decoded)

    def add(self, values: tuple[Any, ...], decoded: list[dict[str, Any]] | None) -> None:
        self.rows.append(values)
        self.decoded.append(decoded)

    def lines(self) -> dict[str, Sequence[Any]]:
        """The line values by column."""
        return dict(zip(_LINE, zip(*self.rows, strict=True), strict=True))


def read_task(
    reads: Sequence[tuple[Any, ...]],
    envelope_format: str,
    shape: str,
    schema: pa.Schema,
) -> Iterator[pa.RecordBatch]:
    """The Arrow batches of one task's reads (see :func:`plan`), in ``schema``."""
    from python_udfs.spark_udfs import _without_cycle_collection

    layout = pa.struct([schema.field(name) for name, _, _ in FIELDS])
    error_hint = _AUTO_HINT if shape == "auto" else ""
    batch = _Batch()
    with _without_cycle_collection():
        for path, size, landed_at, start, end, lines_before in reads:
            is_sink, sink = _sink(path, shape)
            if start == 0:
                # the file's marker: a file tried, readable or not
                batch.add(
                    (path, size, landed_at, None, *_marker_kafka(is_sink, sink), None, None), None
                )
            lines = (
                gzip_lines(path, size) if path.endswith(".gz") else range_lines(path, start, end)
            )
            if lines is None:
                continue
            for number, raw in enumerate(lines, lines_before):
                line = raw.rstrip(b"\r")
                if not line:
                    continue
                try:
                    text, line_error = line.decode("utf-8"), None
                except UnicodeDecodeError:
                    text, line_error = line.decode("utf-8", "replace"), _BAD_UTF8
                values, decoded = _record(
                    text, line_error, number, is_sink, sink, envelope_format, error_hint
                )
                batch.add((path, size, landed_at, number, *values), decoded)
                if len(batch) >= _BATCH_LINES:
                    yield _arrow(batch, schema, layout, envelope_format)
                    batch = _Batch()
        if len(batch):
            yield _arrow(batch, schema, layout, envelope_format)


def _sink(path: str, shape: str) -> tuple[bool, tuple[str, int | None, int | None]]:
    """Whether ``path`` is read as a Kafka Connect sink file, and the topic, partition and
    start offset its name gives ('' and nulls when it gives none)."""
    found = SINK_NAME.search(path)
    is_sink = shape == "connect" or (shape == "auto" and found is not None)
    if found is None:
        return is_sink, ("", None, None)
    partition, start = int(found.group(2)), int(found.group(3))
    return is_sink, (
        found.group(1),
        partition if partition in _INT32 else None,
        start if start in _INT64 else None,
    )


def _marker_kafka(is_sink: bool, sink: tuple[str, int | None, int | None]) -> tuple[Any, ...]:
    """topic, partition, offset and timestamp of a file's marker row."""
    if is_sink:
        return sink[0], sink[1], None, None
    return None, None, None, None


def _record(
    text: str,
    line_error: str | None,
    number: int,
    is_sink: bool,
    sink: tuple[str, int | None, int | None],
    envelope_format: str,
    error_hint: str,
) -> tuple[tuple[Any, ...], list[dict[str, Any]] | None]:
    """A line's (topic, partition, offset, timestamp, landing error, raw record) and its
    decoded records (None when it was not decoded)."""
    if is_sink:
        topic, partition, start = sink
        offset = None if start is None else start + number
        error = line_error or (_SINK_NAME_ERROR if start is None else None)
        if error:
            return (topic, partition, offset, None, error, text), None
        return (topic, partition, offset, None, None, text), decode_unchecked(
            envelope_format, None, text, None
        )
    if line_error:
        return (None, None, None, None, line_error, text), None
    fields, problem = kcat_fields(text)
    ts = fields.get("ts")
    values = (
        fields.get("topic"),
        fields.get("partition"),
        fields.get("offset"),
        None if ts is None or ts * 1000 not in _INT64 else ts * 1000,
    )
    if problem:
        return (*values, "malformed kcat JSON line" + error_hint, text), None
    if fields["topic"] is None or fields["offset"] is None:
        return (*values, "kcat record without topic or offset" + error_hint, text), None
    decoded = decode_unchecked(
        envelope_format, fields["key"], fields["payload"], header_pairs(fields["headers"])
    )
    return (*values, None, text), decoded


def _arrow(
    batch: _Batch, schema: pa.Schema, layout: pa.StructType, envelope_format: str
) -> pa.RecordBatch:
    """One Arrow batch: each Kafka record's line columns, repeated for each of its decoded
    records (once when it has none); a row's error is its line's, else its record's, and a
    failed row keeps the raw record."""
    from python_udfs.spark_udfs import _conformed

    decoded = batch.decoded
    try:
        records = pa.array(_flat(decoded), type=layout)
    except (pa.ArrowException, TypeError, ValueError, OverflowError):
        # some record has a field of the wrong type: one bad message must not fail the batch
        formats = [envelope_format] * len(decoded)
        conformed = _conformed([d or [] for d in decoded], formats, pa.list_(layout))
        decoded = [c if d else None for c, d in zip(conformed, decoded, strict=True)]
        records = pa.array(_flat(decoded), type=layout)
    repeats = [len(d) if d else 1 for d in decoded]
    lines = batch.lines()
    if any(r != 1 for r in repeats):
        lines = {
            name: [v for v, r in zip(values, repeats, strict=True) for _ in range(r)]
            for name, values in lines.items()
        }
    fields = records.flatten()
    decode_errors = fields[FIELD_NAMES.index("decode_error")].to_pylist()
    errors = [
        landing or decoding
        for landing, decoding in zip(lines["landing_error"], decode_errors, strict=True)
    ]
    failed = [
        raw if error else None for raw, error in zip(lines["raw_record"], errors, strict=True)
    ]
    tail = {
        "error_reason": errors,
        "failed_raw_record": failed,
        "kafka_timestamp": lines["kafka_timestamp"],
        "landed_at": lines["landed_at"],
    }
    columns = [pa.array(lines[name], type=schema.field(name).type) for name, _ in HEAD_FIELDS]
    columns.extend(fields)
    columns.extend(pa.array(tail[name], type=schema.field(name).type) for name, _ in TAIL_FIELDS)
    return pa.RecordBatch.from_arrays(columns, schema=schema)


def _flat(decoded: list[list[dict[str, Any]] | None]) -> list[dict[str, Any] | None]:
    out: list[dict[str, Any] | None] = []
    for records in decoded:
        if records:
            out.extend(records)
        else:
            out.append(None)
    return out


# ---------------------------------------------------------------------------------------------
# the Spark data source


class LandedReader(DataSourceReader):
    """Plans a run's files into tasks (on the driver) and reads a task (in a worker)."""

    def __init__(self, options: dict[str, str], schema: Any) -> None:
        self.files = orjson.loads(options["files"])
        self.envelope_format = options["format"]
        self.shape = options.get("shape", "auto")
        self.split_bytes = int(options.get("split_bytes", 128 << 20))
        self.schema = schema

    def partitions(self) -> list[InputPartition]:
        # tasks of a quarter of the bytes a core (planned on the driver: its cores stand for
        # the cluster's), at least _MIN_SPLIT, at most split_bytes
        text = {
            path: text_bytes_of(path, size) for path, size, _ in self.files if path.endswith(".gz")
        }
        total = sum(text.get(path, size) for path, size, _ in self.files)
        cores = os.cpu_count() or 2
        least = min(_MIN_SPLIT, self.split_bytes)
        split = min(self.split_bytes, max(least, total // (4 * cores)))
        return [InputPartition(task) for task in plan(self.files, split, text)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        from pyspark.sql.pandas.types import to_arrow_schema

        arrow_schema = to_arrow_schema(self.schema, timezone="UTC")
        yield from read_task(partition.value, self.envelope_format, self.shape, arrow_schema)


class LandedFiles(DataSource):
    """``changelake_landed``: options ``files`` (JSON: [[path, size, modification time in
    epoch microseconds], ...]), ``format`` (the envelope format text), ``shape`` (kcat,
    connect or auto) and ``split_bytes`` (the most a task reads)."""

    @classmethod
    def name(cls) -> str:
        return "changelake_landed"

    def schema(self) -> str:
        return SCHEMA

    def reader(self, schema: Any) -> DataSourceReader:
        return LandedReader(self.options, schema)


class LandedFileListing:
    """``changelake_landed_files(folder, glob)``: a row a landed file under ``folder`` whose
    name ``glob`` matches (hidden names left out, as Spark's listing leaves them): its path,
    size and modification time (epoch microseconds). Listed where the query runs, with the
    file system's credentials from that process's environment."""

    def eval(self, folder: str, glob: str | None) -> Iterator[tuple[str, int, int]]:
        yield from list_files(folder, glob or "*")


class LandedRecordCount:
    """``changelake_landed_records(folder, glob, files)``: a row a landed file (of ``files``,
    an array of paths, or of every file listed when it is null) with the records it holds as
    the accounting counts them (:func:`python_udfs.landed.landed_records`)."""

    def eval(
        self, folder: str, glob: str | None, files: list[str] | None
    ) -> Iterator[tuple[str, int]]:
        paths = [path for path, _, _ in list_files(folder, glob or "*")] if files is None else files
        for path in paths:
            yield path, landed_records(path)


# table functions: a feed folder's files, and the records landed in them
UDTF_NAMES = ("changelake_landed_files", "changelake_landed_records")


def register(spark: Any) -> list[str]:
    """Register the data source ``changelake_landed`` and the table functions
    ``changelake_landed_files`` and ``changelake_landed_records`` on ``spark``; return the
    table functions' SQL names."""
    from pyspark.sql.functions import udtf

    spark.dataSource.register(LandedFiles)
    listing = udtf(
        LandedFileListing,
        returnType="landed_file string, landed_file_size bigint, landed_at_micros bigint",
    )
    spark.udtf.register("changelake_landed_files", listing)
    records = udtf(LandedRecordCount, returnType="landed_file string, records_landed bigint")
    spark.udtf.register("changelake_landed_records", records)
    return list(UDTF_NAMES)
