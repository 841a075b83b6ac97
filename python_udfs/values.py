"""Canonical value encodings shared by every decoder (see :mod:`python_udfs.layout`)."""

from __future__ import annotations

import datetime as dt
import json
import re
from decimal import Decimal
from typing import Any

import orjson

MAX_MESSAGE_BYTES = 64 * 1024 * 1024
_EPOCH = dt.datetime(1970, 1, 1)


class MalformedInput(ValueError):
    """Input text that is not what its envelope promises; the message says where."""


# Digits and '.' marked 'd', every other byte ' ': a run of 17 marks may be a number a float
# would round (a translate-and-find in C, far cheaper than a regex scan: docs/decisions.md).
_NUMBER_MARKS = bytes(100 if (48 <= b <= 57 or b == 46) else 32 for b in range(256))
_LONG_RUN = b"d" * 17
_INT64 = range(-(2**63), 2**64)


def _has_lossy_number(text: str | bytes) -> bool:
    """Whether ``text`` holds a JSON number orjson would round: an integer of 20 digits or
    more (past 64 bits), or a decimal of 16 or more significant digits (MySQL DECIMAL(38,19),
    BIGINT UNSIGNED). Digit runs inside strings can make it say yes; that costs time only."""
    data = text.encode() if isinstance(text, str) else text
    marked = data.translate(_NUMBER_MARKS)
    start = marked.find(_LONG_RUN)
    while start >= 0:
        end = start + len(_LONG_RUN)
        while end < len(marked) and marked[end] == 100:
            end += 1
        if end - start >= 20 or b"." in data[start:end]:
            return True
        start = marked.find(_LONG_RUN, end)
    return False


def _exact_int(text: str) -> int | Decimal:
    number = int(text)
    return number if number in _INT64 else Decimal(text)


def _exact_float(text: str) -> float | Decimal:
    """A float where it holds the number written (as orjson would give), else the Decimal."""
    number = float(text)
    exact = Decimal(text)
    return number if Decimal(repr(number)) == exact else exact


def parse_json(text: str | bytes, where: str) -> Any:
    """Parse JSON text with orjson; raise :class:`MalformedInput` naming ``where`` on failure.

    orjson rejects nesting deeper than 1024 levels, which bounds deeply nested input; messages
    over 64 MiB are refused before parsing. A message holding a number orjson would round (see
    ``_has_lossy_number``) is parsed by the standard library instead, the numbers a float cannot
    hold as :class:`~decimal.Decimal`, so every digit survives into the images.
    """
    if len(text) > MAX_MESSAGE_BYTES:
        raise MalformedInput(f"{where} is {len(text)} bytes, over the {MAX_MESSAGE_BYTES} limit")
    try:
        if not _has_lossy_number(text):
            return orjson.loads(text)
        return json.loads(text, parse_float=_exact_float, parse_int=_exact_int)
    except (orjson.JSONDecodeError, ValueError) as exc:
        raise MalformedInput(f"malformed JSON in {where}: {exc}") from None
    except RecursionError:
        raise MalformedInput(f"{where} is nested too deeply") from None


def _number_fragment(value: Any) -> Any:
    """orjson's hook for what it cannot render: a Decimal is written with its digits (equal
    values alike: trailing fractional zeros dropped, never an exponent)."""
    if isinstance(value, Decimal) and value.is_finite():
        return orjson.Fragment(decimal_text(value.normalize()))
    raise TypeError(f"not JSON: {type(value).__name__}")


def dump_json(value: Any) -> str | None:
    """Render an image canonically: sorted keys, compact, UTF-8. None stays None.

    Exact numbers (:class:`~decimal.Decimal`, from ``parse_json``) keep their digits. Images
    nested deeper than orjson writes (254 levels) are written by the standard library in the
    same canonical form.
    """
    if value is None:
        return None
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS, default=_number_fragment).decode()
    except orjson.JSONEncodeError as exc:
        if "Recursion limit" not in str(exc):
            raise
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


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
    # whole seconds: isoformat writes no fraction, and four digits of year (strftime's %Y
    # writes 999 for the year 999)
    moment = _EPOCH + dt.timedelta(seconds=seconds)
    return moment.isoformat() + _fraction(nanos) + (zone or "")


# digits a number sent as text may have (a 64-bit value has 20); longer is not a position
MAX_NUMBER_DIGITS = 40


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def whole_number(value: Any, where: str) -> int:
    """An integer sent as a JSON number or as digit text; :class:`MalformedInput` naming
    ``where`` for anything else (a list, an object, a fraction, 10,000 digits)."""
    if type(value) is int:
        return value
    if type(value) is float and value.is_integer():
        return int(value)
    if type(value) is str:
        digits = value.strip()
        if 0 < len(digits.lstrip("+-")) <= MAX_NUMBER_DIGITS and digits.lstrip("+-").isdigit():
            return int(digits)
    raise MalformedInput(f"{where} is not a whole number: {_shown(value)}")


def binlog_sequence(file: Any, where: str = "binlog file") -> str:
    """Sortable form of a MySQL binlog file name: its numeric suffix zero-padded to 12 digits."""
    if type(file) is not str:
        raise MalformedInput(f"{where} is not text: {_shown(file)}")
    stem = file.rstrip("0123456789")
    suffix = file[len(stem) :]
    if not suffix:
        return file
    if len(suffix) > MAX_NUMBER_DIGITS:
        raise MalformedInput(f"{where} ends in {len(suffix)} digits, not a binlog sequence")
    return f"{stem}{int(suffix):012d}"


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
    number = whole_number(ms, where)
    if not _MIN_MS <= number <= _MAX_MS:
        raise MalformedInput(f"{where} {number} is out of range for epoch milliseconds")
    return _UTC_EPOCH + dt.timedelta(milliseconds=number)


def epoch_auto_utc(value: Any, where: str = "epoch") -> dt.datetime | None:
    """A UTC datetime from an epoch in seconds or milliseconds, told apart by magnitude.

    Canal-shaped messages carry ``es``/``ts`` in milliseconds, but some producers (Tencent's
    DDL examples among them) send seconds: any value below 10^11 (year 5138 in seconds,
    1973 in milliseconds) is taken as seconds.
    """
    if value is None or value == "":
        return None
    number = whole_number(value, where)
    return epoch_ms_utc(number * 1000 if abs(number) < 10**11 else number, where)


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


def padded(value: Any, width: int, where: str = "position") -> str:
    """A non-negative integer (int or digit text) as fixed-width text, so text order is numeric."""
    number = whole_number(value, where)
    if number < 0:
        raise MalformedInput(f"{where} is negative: {number}")
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
