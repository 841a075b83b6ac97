"""The docs site in a real browser: `dbt docs generate`, served on 127.0.0.1, opened in headless
Chromium (Debian's `chromium`, installed by `make browser`). The rendered pages must show the
overview, a mart's column descriptions and the lineage graph."""

from __future__ import annotations

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

pytestmark = pytest.mark.dbt


def chromium() -> str:
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    if os.environ.get("CI"):
        pytest.fail("chromium is missing: `make test` installs it with `make browser`")
    pytest.skip("chromium is missing and this is not CI: run `make browser` (root, apt-get)")


@pytest.fixture(scope="module")
def site(spark, tmp_path_factory) -> Iterator[tuple[str, dict]]:
    """The generated site, served on 127.0.0.1 for the module; (base URL, manifest)."""
    from python_udfs.project import run_dbt

    target = tmp_path_factory.mktemp("docs")
    # the manifest (descriptions, lineage) from parse; the site without compiling SQL or
    # reading the warehouse's catalog, so nothing needs to be built first
    for args in (["parse"], ["docs", "generate", "--no-compile", "--empty-catalog"]):
        code, result = run_dbt([*args, "--target-path", str(target)])
        assert code == 0, result.exception
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(target))
    handler.log_message = lambda *args: None  # type: ignore[method-assign]
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        manifest = json.loads((target / "manifest.json").read_text())
        yield f"http://127.0.0.1:{server.server_address[1]}/index.html", manifest
    finally:
        server.shutdown()
        server.server_close()


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
