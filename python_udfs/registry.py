"""The decoder registry: each envelope format's name and its pure decoder, and ``decode``.

No Spark here: the Spark wrappers (:mod:`python_udfs.spark_udfs`) import this module.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

from python_udfs import canal, dataworks, debezium, dtle, maxwell, ogg, tencent
from python_udfs.layout import conform, error_record

Headers = Sequence[tuple[str, "str | None"]] | None
Decoder = Callable[..., list[dict[str, Any]]]

_DECODERS: dict[str, Decoder] = {
    "debezium": debezium.decode,
    "dtle_ddl": dtle.decode,
    "dataworks": dataworks.decode,
    "tencent": tencent.decode,
    "canal": canal.decode,
    "maxwell": maxwell.decode,
    "ogg": ogg.decode,
}

ENVELOPE_FORMATS: tuple[str, ...] = tuple(sorted(_DECODERS))


def decode(
    envelope_format: str, key: str | None, value: str | None, headers: Headers = None
) -> list[dict[str, Any]]:
    """Decode one Kafka record of ``envelope_format`` into common-layout records.

    ``envelope_format`` is a name from :data:`ENVELOPE_FORMATS`, optionally followed by
    options: ``"tencent;time_zone=UTC"``. Never raises: an unknown format or an undecodable
    record gives one record whose ``decode_error`` says why.
    """
    name = parse_format(str(envelope_format))[0]
    return conform(decode_unchecked(envelope_format, key, value, headers), name)


def decode_unchecked(
    envelope_format: str, key: str | None, value: str | None, headers: Headers = None
) -> list[dict[str, Any]]:
    """:func:`decode` without the final check of every field's type against the layout: the
    Spark UDF leaves that check to Arrow's conversion and runs it only when that fails."""
    name, decoder, options = _resolved(str(envelope_format))
    if decoder is None:
        return [
            error_record(
                name,
                f"unknown envelope format {name!r}; known: {', '.join(ENVELOPE_FORMATS)}",
            )
        ]
    problem = _headers_problem(headers)
    if problem:
        return [error_record(name, problem)]
    return decoder(key, value, list(headers) if headers else None, options)


@functools.lru_cache(maxsize=256)
def _resolved(envelope_format: str) -> tuple[str, Decoder | None, dict[str, str]]:
    """The format's name, its decoder (None if unknown) and options, worked out once per text
    (a feed sends one format text with every record). The options are read, never changed."""
    name, options = parse_format(envelope_format)
    return name, _DECODERS.get(name), options


def _headers_problem(headers: Any) -> str | None:
    """Why ``headers`` is not a sequence of (name, value) text pairs, or None."""
    if headers is None:
        return None
    if isinstance(headers, (str, bytes, dict)) or not isinstance(headers, Sequence):
        return f"headers are not a list of (name, value) pairs: {type(headers).__name__}"
    for pair in headers:
        if (
            not isinstance(pair, (tuple, list))
            or len(pair) != 2
            or not isinstance(pair[0], str)
            or not (pair[1] is None or isinstance(pair[1], str))
        ):
            return f"a header is not a (name, value) pair of text: {str(pair)[:60]!r}"
    return None


def parse_format(text: str) -> tuple[str, dict[str, str]]:
    """Split ``"name;key=value;..."`` into the format name and its options."""
    name, *parts = text.split(";")
    options = {}
    for part in parts:
        option, _, setting = part.partition("=")
        if option.strip():
            options[option.strip()] = setting.strip()
    return name.strip(), options


def header_pairs(headers: list[str | None] | None) -> list[tuple[str, str | None]] | None:
    """The flat kcat header list ``[name1, value1, name2, value2, ...]`` as (name, value) pairs.

    >>> header_pairs(["__debezium.oldkey", '{"id": 1}', "trace", None])
    [('__debezium.oldkey', '{"id": 1}'), ('trace', None)]
    >>> header_pairs(None) is None
    True
    """
    if not headers:
        return None
    return [(str(headers[i]), headers[i + 1]) for i in range(0, len(headers) - 1, 2)]
