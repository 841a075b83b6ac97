"""The shape of macros/ (docs/architecture.md, "The code"): files by concern, no two folders
calling each other both ways, run state in one file, every macro called from another file
documented in macros/_macros.yml and every `_` macro used in its own file only."""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

import pytest
import yaml

MACROS = Path(__file__).resolve().parents[3] / "macros"
PROJECT = MACROS.parent
DEFINED = re.compile(r"{%-?\s*(macro|materialization|test)\s+(\w+)")
COMMENT = re.compile(r"{#.*?#}", re.S)


def _concern(path: Path) -> str:
    parts = path.relative_to(MACROS).parts
    return parts[0] if len(parts) > 1 else path.stem


@pytest.fixture(scope="module")
def macros() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for path in sorted(MACROS.rglob("*.sql")):
        for kind, name in DEFINED.findall(path.read_text()):
            if kind != "materialization":
                assert name not in found, f"{name} is defined in {found.get(name)} and {path}"
                found[name] = path
    return found


def _calls(text: str, names: dict[str, Path]) -> set[str]:
    code = COMMENT.sub("", text)
    return {name for name in names if re.search(rf"\b{name}\s*\(", code)}


def test_no_macro_file_is_over_400_lines():
    long = {
        p.name: n for p in MACROS.rglob("*.sql") if (n := len(p.read_text().splitlines())) > 400
    }
    assert long == {}


def test_no_two_concerns_call_each_other_both_ways(macros):
    calls: dict[tuple[str, str], set[str]] = defaultdict(set)
    for path in MACROS.rglob("*.sql"):
        for name in _calls(path.read_text(), macros):
            if _concern(macros[name]) != _concern(path):
                calls[(_concern(path), _concern(macros[name]))].add(name)
    both = sorted((a, b) for a, b in calls if (b, a) in calls and a < b)
    assert both == [], {pair: (calls[pair], calls[pair[::-1]]) for pair in both}


def test_run_state_lives_in_one_file():
    touching = [
        p.relative_to(MACROS).as_posix()
        for p in MACROS.rglob("*.sql")
        if "graph.setdefault" in COMMENT.sub("", p.read_text())
    ]
    assert touching == ["run_state.sql"]


def test_a_private_macro_is_used_in_its_own_file_only(macros):
    private = {name: path for name, path in macros.items() if name.startswith("_")}
    sources = [
        p
        for folder in ("macros", "models", "tests")
        for p in (PROJECT / folder).rglob("*")
        if p.suffix in (".sql", ".yml", ".md") and p.is_file()
    ]
    outside = {
        (name, p.relative_to(PROJECT).as_posix())
        for p in sources
        for name in _calls(p.read_text(), private)
        if p != private[name]
    }
    assert outside == set()


def test_every_public_macro_is_documented_with_its_arguments(macros):
    documented = {
        m["name"]: [a["name"] for a in m.get("arguments", [])]
        for m in yaml.safe_load((MACROS / "_macros.yml").read_text())["macros"]
    }
    public = {name: path for name, path in macros.items() if not name.startswith("_")}
    assert sorted(documented) == sorted(public)
    for name, path in public.items():
        signature = re.search(rf"macro\s+{name}\((.*?)\)", path.read_text(), re.S).group(1)
        arguments = [a.split("=")[0].strip() for a in signature.split(",") if a.strip()]
        assert documented[name] == arguments, name
