"""The docs site in a real browser: `dbt docs generate`, served on 127.0.0.1, opened in headless
Chromium (Debian's `chromium`, installed by `make browser`). The rendered pages must show the
overview, a mart's column descriptions and the lineage graph."""

from __future__ import annotations

import contextlib
import functools
import html
import http.server
import json
import os
import re
import shutil
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest


def chromium() -> str:
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    if os.environ.get("CI"):
        pytest.fail("chromium is missing: `make test` installs it with `make browser`")
    pytest.skip("chromium is missing and this is not CI: run `make browser` (root, apt-get)")


@contextlib.contextmanager
def serve(directory: Path) -> Iterator[str]:
    """``directory`` served on 127.0.0.1 (a free port) while in the block; its base URL."""
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(directory))
    handler.log_message = lambda *args: None  # type: ignore[method-assign]
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def generate_site(target: Path, *project_args: str) -> dict:
    """The docs site of the project in ``target``: the manifest (descriptions, lineage) from
    parse, then the site without compiling SQL or reading the warehouse's catalog, so nothing
    needs to be built first. Returns the manifest."""
    from python_udfs.project import run_dbt

    for args in (["parse"], ["docs", "generate", "--no-compile", "--empty-catalog"]):
        code, result = run_dbt([*args, "--target-path", str(target), *project_args])
        assert code == 0, result.exception
    return json.loads((target / "manifest.json").read_text())


@pytest.fixture(scope="module")
def site(spark, tmp_path_factory) -> Iterator[tuple[str, dict]]:
    """The project's generated site, served for the module; (index URL, manifest)."""
    target = tmp_path_factory.mktemp("docs")
    manifest = generate_site(target)
    with serve(target) as base:
        yield f"{base}/index.html", manifest


def rendered(url: str, tmp_path: Path) -> str:
    """The page's DOM once the site's JavaScript has run, from headless Chromium."""
    done = subprocess.run(
        [
            chromium(),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            f"--user-data-dir={tmp_path / 'profile'}",
            "--virtual-time-budget=20000",
            "--dump-dom",
            url,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_the_overview_shows_the_tables_and_as_of_queries(site, tmp_path):
    base, _ = site
    dom = rendered(f"{base}#!/overview", tmp_path)
    # the overview's markdown rendered: headings, the lineage diagram, the query examples
    assert 'id="reading-as-of-a-time"' in dom
    assert 'id="scd-2-columns"' in dom
    assert "typed_&lt;table&gt;_history" in dom
    assert "changelake_changes_between(ref('cdc_history')" in dom


def test_a_mart_page_shows_its_column_descriptions(site, tmp_path):
    base, manifest = site
    node = manifest["nodes"]["model.changelake.cdc_current"]
    dom = rendered(f"{base}#!/model/model.changelake.cdc_current", tmp_path)
    assert 'marked="column.description"' in dom  # descriptions rendered from markdown
    shown = 0
    for column in node["columns"].values():
        # the description's plain text up to its first markdown mark
        prefix = re.split(r"[`*_\[<]", column["description"])[0].strip()
        if len(prefix) < 8:
            continue
        assert f">{html.escape(column['name'], quote=False)}<" in dom, column["name"]
        assert html.escape(prefix, quote=False) in dom, (column["name"], prefix)
        shown += 1
    assert shown >= 5


def test_the_lineage_graph_shows(site, tmp_path):
    base, _ = site
    dom = rendered(f"{base}#!/model/model.changelake.cdc_history?g_v=1", tmp_path)
    # cytoscape draws the graph into canvas layers of its container, sized to the page
    assert 'id="cy"' in dom
    layer = re.search(r'<canvas[^>]*data-id="layer2-node"[^>]*>', dom)
    assert layer, "no graph node layer"
    assert int(re.search(r'width="(\d+)"', layer.group(0)).group(1)) > 100
