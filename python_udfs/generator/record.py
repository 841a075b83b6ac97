"""A Kafka record as the encoders produce it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson


@dataclass
class Record:
    topic: str
    route: Any  # partition routing key (None: partition 0)
    key: str | None
    value: str | None
    headers: list[str] = field(default_factory=list)
    timestamp_ms: int = 0


def dumps(value: Any) -> str:
    return orjson.dumps(value).decode()
