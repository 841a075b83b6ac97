"""Thin Spark wrappers around the pure decoders; the return type is declared once, here.

SQL usage (after ``register``)::

    select changelake_decode('debezium', key, payload, headers) as changes from raw
    select changelake_versions(collect_list(struct(change_id, op, position, ...))) from changes
    select changelake_folder_exists('/landing/pg_inventory')
    select changelake_line_in_block(_metadata.file_path, _metadata.file_block_start) from lines
    select changelake_gzip_lines(content) from files   -- a binaryFile table

``headers`` is the flat kcat list ``[name1, value1, name2, value2, ...]`` (array<string>).
"""

from __future__ import annotations

import contextlib
import gc
import os
import zlib
from collections.abc import Iterator
from typing import Any
from urllib.parse import unquote, urlparse

import pyarrow as pa

from python_udfs.layout import SPARK_SCHEMA
from python_udfs.registry import decode_unchecked, header_pairs, parse_format

UDF_NAMES = (
    "changelake_decode",
    "changelake_versions",
    "changelake_folder_exists",
    "changelake_line_in_block",
    "changelake_gzip_lines",
)


def decode_batch(
    envelope_format: pa.Array,
    key: pa.Array,
    value: pa.Array,
    headers: pa.Array,
    arrow_type: pa.DataType,
) -> pa.Array:
    """Decode one Arrow batch of records into one Arrow array of change-record lists.

    The records leave Arrow as Python values once (``to_pylist``), and the decoded dicts go
    back in one ``pa.array`` call, whose conversion runs in pyarrow's C++ rather than per
    value in Python (faster than a row-at-a-time Arrow UDF: docs/decisions.md).
    """
    with _without_cycle_collection():
        formats, *rest = (a.to_pylist() for a in (envelope_format, key, value, headers))
        decoded = [
            decode_unchecked(f, k, v, header_pairs(h))
            for f, k, v, h in zip(formats, *rest, strict=True)
        ]
        try:
            return pa.array(decoded, type=arrow_type)
        except (pa.ArrowException, TypeError, ValueError, OverflowError):
            # some record has a field of the wrong type: one bad message must not fail the batch
            return pa.array(_conformed(decoded, formats, arrow_type), type=arrow_type)


@contextlib.contextmanager
def _without_cycle_collection() -> Iterator[None]:
    """Python's cycle collector paused while a batch decodes. Decoding makes some ten dicts and
    lists a record, and every 700 of them start a collection (now and then one that walks
    every object the worker holds); they form no cycles and are freed by reference counting
    when the batch is done, so those collections find nothing but cost time (docs/decisions.md).
    The collector is left as it was found and resumes on its own thresholds."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _conformed(
    decoded: list[list[dict[str, Any]]], formats: list[str | None], arrow_type: pa.DataType
) -> list[list[dict[str, Any]]]:
    """Each Kafka record's decoded records, or its one error record where a field does not
    have its layout type (or, failing that check, Arrow cannot convert them)."""
    from python_udfs.layout import conform, error_record

    out = []
    for records, envelope_format in zip(decoded, formats, strict=True):
        name = parse_format(str(envelope_format))[0]
        records = conform(records, name)
        try:
            pa.array([records], type=arrow_type)
        except (pa.ArrowException, TypeError, ValueError, OverflowError) as exc:
            records = [error_record(name, f"not convertible to the layout: {exc}"[:1000])]
        out.append(records)
    return out


def folder_exists(path: str | None) -> bool | None:
    """Whether ``path`` is a folder, where the Python worker can tell: a local path or a
    ``file:`` URI. None for any other file system (``s3a://``, ``hdfs://``, ...), which Spark
    reads through Hadoop and Python cannot see: unknown, never a guess. Spark's own listing of a
    missing folder returns no file without an error, as an empty one does; this tells them apart.
    """
    if path is None:
        return None
    parsed = urlparse(path)
    if parsed.scheme not in ("", "file"):
        return None
    return os.path.isdir(unquote(parsed.path) if parsed.scheme else path)


def lines_in_blocks(batches: Iterator[tuple[pa.Array, pa.Array]]) -> Iterator[pa.Array]:
    """Each line's index within its file block, over the rows of one Spark task in scan order.

    Spark reads a large text file as blocks (splits), each line in exactly one block and each
    block's lines in file order, one block after another within a task; the rows of a block are
    contiguous, so the index is a counter that restarts when (file, block start) changes. With
    the line count of each earlier block this gives the line's exact number in its file,
    without holding the file in memory (``macros/decoded/``). Must see every row of the
    scan, in order: registered as nondeterministic, so no filter is moved below it.
    """
    block: tuple[str | None, int | None] | None = None
    index = 0
    for paths, starts in batches:
        out = []
        for key in zip(paths.to_pylist(), starts.to_pylist(), strict=True):
            if key != block:
                block, index = key, 0
            out.append(index)
            index += 1
        yield pa.array(out, type=pa.int64())


# a compressed file is inflated 64 KiB of its bytes at a time, at most 1 MiB of text a step
_GZIP_IN = 1 << 16
_GZIP_OUT = 1 << 20


def gzip_line_count(content: bytes | memoryview | None) -> int | None:
    """The lines of a whole gzip file (one member or several, as Hadoop's codec reads them)
    that hold a byte besides a carriage return, as the text reader splits them on '\\n'; None
    when ``content`` is not whole gzip: cut short (a writer that died, or a file still being
    written), not gzip at all, empty, or followed by bytes that are neither a member nor NUL
    padding. Inflated in steps and counted as it goes, so the text held is a step's, whatever
    the file inflates to (``content`` itself, the compressed bytes, is held whole).

    Spark's text reader does not tell a whole stream from one cut short: it reads a cut file up
    to the cut and (with ignoreCorruptFiles) drops the rest without a word. This count is how a
    decoded model knows which compressed files it may read line by line, and what the
    accounting expects to find in them (``macros/decoded/``, ``macros/landing/``).
    """
    if content is None:
        return None
    try:
        return _count_lines(_inflated(byte_chunks(memoryview(content))))
    except (zlib.error, EOFError):
        return None


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


def byte_chunks(data: memoryview) -> Iterator[memoryview]:
    """``data`` in the steps a compressed file is inflated in."""
    return (data[i : i + _GZIP_IN] for i in range(0, len(data), _GZIP_IN))


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


def gzip_line_counts(contents: pa.Array) -> pa.Array:
    """``gzip_line_count`` of each file's bytes (a binaryFile table's ``content``)."""
    counts = [
        None if not content.is_valid else gzip_line_count(content.as_buffer())
        for content in contents
    ]
    return pa.array(counts, type=pa.int64())


def decode_types(spark: Any) -> tuple[Any, pa.DataType]:
    """The decode UDF's return type in Spark and in Arrow (timestamps in the session's zone)."""
    from pyspark.sql.pandas.types import to_arrow_type
    from pyspark.sql.types import _parse_datatype_string

    spark_type = _parse_datatype_string(SPARK_SCHEMA)
    zone = spark.conf.get("spark.sql.session.timeZone") or "UTC"
    return spark_type, to_arrow_type(spark_type, timezone=zone)


def register(spark: Any) -> list[str]:
    """Register the UDFs on ``spark`` (classic or Spark Connect); both run on Arrow batches."""
    from pyspark.sql.functions import arrow_udf, udf

    from python_udfs.scd2 import VERSIONS_SCHEMA, versions_row

    spark_type, arrow_type = decode_types(spark)

    def changelake_decode(
        envelope_format: pa.Array, key: pa.Array, value: pa.Array, headers: pa.Array
    ) -> pa.Array:
        return decode_batch(envelope_format, key, value, headers, arrow_type)

    spark.udf.register("changelake_decode", arrow_udf(changelake_decode, spark_type))
    versions_udf = udf(versions_row, returnType=VERSIONS_SCHEMA, useArrow=True)
    spark.udf.register("changelake_versions", versions_udf)
    exists_udf = udf(folder_exists, returnType="boolean", useArrow=True)
    spark.udf.register("changelake_folder_exists", exists_udf)
    line_udf = arrow_udf(lines_in_blocks, "bigint").asNondeterministic()
    spark.udf.register("changelake_line_in_block", line_udf)
    spark.udf.register("changelake_gzip_lines", arrow_udf(gzip_line_counts, "bigint"))
    return list(UDF_NAMES)
