"""Every example message of the five seed documents, and a handful of samples of the formats
the seeds do not cover (Canal, Maxwell, GoldenGate, format options), decoded field by field.

``fixtures/seeds/cases.json`` holds each seed example as the document gives it, with the
document's own JSON typos fixed (each case lists its fixes), beside the exact records it must
decode to; ``fixtures/formats/cases.jsonl`` does the same for the other samples. A field not
listed in an expected record must be null.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
from pathlib import Path

import pytest

from python_udfs import FIELD_NAMES, decode

FIXTURES = Path(__file__).parents[1] / "fixtures"
CASES = json.loads((FIXTURES / "seeds" / "cases.json").read_text())
FORMAT_CASES = [
    json.loads(line) for line in (FIXTURES / "formats" / "cases.jsonl").read_text().splitlines()
]


def _expected(fields: dict) -> dict:
    out = dict.fromkeys(FIELD_NAMES)
    for name, value in fields.items():
        if name.endswith("_at") and value is not None:
            value = dt.datetime.fromisoformat(value)
        elif isinstance(value, str) and value.startswith("base64:"):
            value = base64.b64decode(value[len("base64:") :])
        out[name] = value
    return out


def test_every_seed_document_has_cases():
    assert {c["seed"] for c in CASES} == {"000", "001", "002", "003", "004"}


@pytest.mark.parametrize(
    "case", CASES + FORMAT_CASES, ids=[c["name"] for c in CASES + FORMAT_CASES]
)
def test_seed_example_decodes_exactly(case):
    headers = [tuple(h) for h in case["headers"] or []]
    got = decode(case["format"], case["key"], case["value"], headers)
    assert [r["decode_error"] for r in got] == [None] * len(got)
    assert got == [_expected(e) for e in case["expected"]]
