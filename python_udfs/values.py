"""Canonical value encodings shared by every decoder (see :mod:`python_udfs.layout`)."""

from __future__ import annotations

import datetime as dt
import re
from decimal import Decimal
from typing import Any

import orjson

MAX_MESSAGE_BYTES = 64 * 1024 * 1024
_EPOCH = dt.datetime(1970, 1, 1)


class MalformedInput(ValueError):
    """Input text that is not what its envelope promises; the message says where."""


def parse_json(text: str | bytes, where: str) -> Any:
    """Parse JSON text with orjson; raise :class:`MalformedInput` naming ``where`` on failure.

    orjson rejects nesting deeper than 1024 levels, which bounds deeply nested input; messages
    over 64 MiB are refused before parsing.
    """
    if len(text) > MAX_MESSAGE_BYTES:
        raise MalformedInput(f"{where} is {len(text)} bytes, over the {MAX_MESSAGE_BYTES} limit")
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise MalformedInput(f"malformed JSON in {where}: {exc}") from None


def dump_json(value: Any) -> str | None:
    """Render an image canonically: sorted keys, compact, UTF-8. None stays None."""
    if value is None:
        return None
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


def decimal_text(value: Decimal) -> str:
    """Exact decimal digits, no exponent: Decimal('1E+2') -> '100', Decimal('1.50') -> '1.50'."""
    if not value.is_finite():
        return str(value)
    return f"{value:f}"


def _fraction(nanos: int) -> str:
    """Fractional seconds: none, 6 digits (microseconds) or 9 digits when nanoseconds remain."""
    if nanos == 0:
        return ""
    if nanos % 1000 == 0:
        return f".{nanos // 1000:06d}"
    return f".{nanos:09d}"


def time_text(nanos_of_day: int) -> str:
    """Time of day from nanoseconds since midnight: 'HH:MM:SS[.ffffff[fff]]'."""
    seconds, nanos = divmod(nanos_of_day, 1_000_000_000)
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours:02d}:{minutes:02d}:{secs:02d}{_fraction(nanos)}"


def timestamp_text(nanos_since_epoch: int, zone: str | None) -> str:
    """ISO-8601 timestamp from nanoseconds since the epoch; ``zone`` 'Z' or None (no zone)."""
    seconds, nanos = divmod(nanos_since_epoch, 1_000_000_000)
    moment = _EPOCH + dt.timedelta(seconds=seconds)
    return moment.strftime("%Y-%m-%dT%H:%M:%S") + _fraction(nanos) + (zone or "")


_DIGITS = re.compile(r"(\d+)$")


def binlog_sequence(file: str) -> str:
    """Sortable form of a MySQL binlog file name: its numeric suffix zero-padded to 12 digits."""
    match = _DIGITS.search(file)
    if not match:
        return file
    return f"{file[: match.start()]}{int(match.group(1)):012d}"


_UTC_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
# Spark timestamps span years 1..9999; anything outside is a producer error, not a time.
_MIN_MS, _MAX_MS = -62_135_596_800_000, 253_402_300_799_999


def epoch_ms_utc(ms: Any, where: str = "timestamp") -> dt.datetime | None:
    """A UTC datetime from epoch milliseconds (int or digit text); None stays None.

    Raises :class:`MalformedInput` naming ``where`` for values outside years 1-9999 (a
    nanosecond count sent as milliseconds, for example).
    """
    if ms is None or ms == "":
        return None
    number = int(ms)
    if not _MIN_MS <= number <= _MAX_MS:
        raise MalformedInput(f"{where} {number} is out of range for epoch milliseconds")
    return _UTC_EPOCH + dt.timedelta(milliseconds=number)


def epoch_auto_utc(value: Any) -> dt.datetime | None:
    """A UTC datetime from an epoch in seconds or milliseconds, told apart by magnitude.

    Canal-shaped messages carry ``es``/``ts`` in milliseconds, but some producers (Tencent's
    DDL examples among them) send seconds: any value below 10^11 (year 5138 in seconds,
    1973 in milliseconds) is taken as seconds.
    """
    if value is None or value == "":
        return None
    number = int(value)
    return epoch_ms_utc(number * 1000 if abs(number) < 10**11 else number, "epoch")


def zone(text: str) -> dt.tzinfo:
    """A fixed offset (``+08:00``, ``-0530``, ``Z``, ``UTC``) or an IANA zone name."""
    if text in ("Z", "UTC", "utc"):
        return dt.timezone.utc
    match = re.fullmatch(r"([+-])(\d{2}):?(\d{2})", text)
    if match:
        sign = 1 if match.group(1) == "+" else -1
        minutes = int(match.group(2)) * 60 + int(match.group(3))
        return dt.timezone(sign * dt.timedelta(minutes=minutes))
    from zoneinfo import ZoneInfo

    return ZoneInfo(text)


def padded(value: Any, width: int) -> str:
    """A non-negative integer (int or digit text) as fixed-width text, so text order is numeric."""
    number = int(value)
    if number < 0:
        raise MalformedInput(f"negative position component {number}")
    return f"{number:0{width}d}"


def key_of(image: dict[str, Any] | None, columns: list[str] | None, where: str) -> str | None:
    """The canonical key JSON of ``image`` for ``columns``; None when either is missing."""
    if not columns or image is None:
        return None
    missing = [c for c in columns if c not in image]
    if missing:
        raise MalformedInput(f"{where} lacks key column(s) {missing}")
    return dump_json({c: image[c] for c in columns})


def changed_key(
    before: dict[str, Any] | None, after: dict[str, Any] | None, columns: list[str] | None
) -> str | None:
    """For an update that changes the primary key, the old key JSON; otherwise None.

    Only judged when the before image holds every key column (a partial before image, such
    as PostgreSQL's default replica identity without the key, says nothing).
    """
    if not columns or before is None or after is None:
        return None
    if any(c not in before for c in columns):
        return None
    old = {c: before[c] for c in columns}
    return dump_json(old) if any(after.get(c) != v for c, v in old.items()) else None
