"""The never-raise contract shared by every decoder."""

from __future__ import annotations

import binascii
import functools
from collections.abc import Callable
from typing import Any

from python_udfs.layout import error_record
from python_udfs.values import MalformedInput, parse_json

Records = list[dict[str, Any]]
Decoder = Callable[..., Records]

# Errors that mean "this input is not what the envelope promises": reported as themselves.
INPUT_ERRORS = (MalformedInput, binascii.Error, UnicodeError)


def never_raises(envelope_format: str) -> Callable[[Decoder], Decoder]:
    """Wrap a decoder so any failure becomes one error record naming what went wrong."""

    def wrap(decoder: Decoder) -> Decoder:
        @functools.wraps(decoder)
        def safe(*args: Any, **kwargs: Any) -> Records:
            try:
                return decoder(*args, **kwargs)
            except INPUT_ERRORS as exc:
                return [error_record(envelope_format, str(exc)[:1000])]
            except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
                reason = f"{type(exc).__name__}: {exc}"
                return [error_record(envelope_format, f"unexpected shape: {reason}"[:1000])]
            except RecursionError:
                return [error_record(envelope_format, "input nested too deeply")]
            except Exception as exc:  # the contract: a decoder never raises
                reason = f"unexpected {type(exc).__name__}: {exc}"
                return [error_record(envelope_format, reason[:1000])]

        return safe

    return wrap


def require_object(value: Any, where: str) -> dict[str, Any]:
    """``value`` if it is a JSON object, else a :class:`MalformedInput` naming ``where``."""
    if not isinstance(value, dict):
        raise MalformedInput(f"{where} is not a JSON object: {str(value)[:60]!r}")
    return value


def names(value: Any, where: str) -> list[str] | None:
    """A list of column names (text, or numbers as text); None when absent or empty; a
    :class:`MalformedInput` naming ``where`` for anything else."""
    if value is None or value == []:
        return None
    if not isinstance(value, list):
        raise MalformedInput(f"{where} is not a JSON array: {str(value)[:60]!r}")
    for name in value:
        if not isinstance(name, (str, int)) or isinstance(name, bool):
            raise MalformedInput(f"{where} holds a {type(name).__name__}, not a name: {name!r:.60}")
    return [str(name) for name in value]


def value_object(value: str | None, label: str) -> dict[str, Any]:
    """The record's value parsed as a JSON object; a named error when absent or not one."""
    if value is None:
        raise MalformedInput(f"{label} record without a value")
    return require_object(parse_json(value, "value"), "value")
