"""The benchmark page: its results as Markdown tables, each goal beside its figure."""

from __future__ import annotations

import os
import platform
import statistics
from typing import Any

from python_udfs.bench.large import LARGE_FILE_SHAPES


def machine(spark: Any) -> str:
    import psutil

    java = spark.sparkContext._jvm.java.lang.System.getProperty("java.version")
    return (
        f"{os.cpu_count()} cores, {psutil.virtual_memory().total / 2**30:.0f} GiB RAM, "
        f"{platform.system()} {platform.machine()}, Python {platform.python_version()}, "
        f"Java {java}, Spark {spark.version} (`{spark.sparkContext.master}`)"
    )


def _mib(value: int) -> str:
    return f"{value / 2**20:,.0f} MiB"


def render(results: dict[str, Any]) -> str:
    """The benchmark's results as Markdown tables."""
    d = results["decode"]
    n = d["records"]
    lines = [
        f"Machine: {results['machine']}. Run of {results['date']}, "
        f"`changelake bench --events {results['events']}` ({results['rounds']} rounds, "
        "medians).",
        "",
        f"**Decode**, Debezium PostgreSQL with schemas, {n:,} records "
        f"(~{results['record_bytes']:,} bytes each), noop sink:",
        "",
        "| path | seconds | records/s | ratio to native |",
        "|---|---:|---:|---:|",
    ]
    bare = results["decode_schemaless"]
    for timings, name, label in (
        (d, "floor", "floor: read + write, no decoding"),
        (d, "native", "native `from_json` + SQL conversions, the after image alone"),
        (d, "native_layout", "native `from_json` + SQL, every column the layout holds"),
        (d, "transfer", "transfer: to the Python worker and back, no decoding"),
        (d, "udf", "ChangeLake UDF over the text rows (Arrow batches, orjson, schema cache)"),
        (d, "reader", "ChangeLake reader: the Python workers read and decode the files"),
        (bare, "native", "schemaless: native `from_json`, values as sent"),
        (bare, "native_layout", "schemaless: native, every column the layout holds"),
        (bare, "transfer", "schemaless: transfer, no decoding"),
        (bare, "udf", "schemaless: ChangeLake UDF"),
        (bare, "reader", "schemaless: ChangeLake reader"),
    ):
        if name not in timings:  # a results file from before the reader
            continue
        seconds = timings[name]
        ratio = seconds / timings["native"]
        lines.append(f"| {label} | {seconds:.2f} | {n / seconds:,.0f} | {ratio:.2f} |")
    lines += render_python_breakdown(d["python"], bare["python"])
    lines += ["", "**Decode per feed** (the reader, every generated record of the feed):", ""]
    lines += ["| feed | format | records | seconds | records/s |", "|---|---|---:|---:|---:|"]
    for f in results["per_format"]:
        lines.append(
            f"| {f['feed']} | {f['format']} | {f['records']:,} | {f['seconds']:.2f} | "
            f"{f['records'] / f['seconds']:,.0f} |"
        )
    lines += [
        "",
        "**Pipeline** (six feeds; first build of 99% of the changes, then the last 1% "
        "incrementally, then `--full-refresh` of everything; `dbt build` without the "
        "accounting test, which is timed on its own):",
        "",
        "| changes | Kafka records | first build s | +1% incremental s | full refresh s | "
        "changes/s (full) | incremental / full | same, models only | accounting test s | "
        "expected state |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for p in results["pipeline"]:
        lines.append(
            f"| {p['events']:,} | {p['records']:,} | {p['first_build']:.1f} | "
            f"{p['incremental']:.1f} | {p['full_refresh']:.1f} | "
            f"{p['events'] / p['full_refresh']:,.0f} | "
            f"{p['incremental'] / p['full_refresh']:.2f} | "
            f"{p['incremental_models'] / p['full_models']:.2f} | "
            f"{p['accounting_test']:.1f} | {'matched' if p['matched'] else 'DIFFERS'} |"
        )
    largest = results["pipeline"][-1]
    lines += [
        "",
        f"Where the time goes at {largest['events']:,} changes, by layer (dbt node seconds, "
        "summed over the build's threads):",
        "",
    ]
    lines += ["| layer | full refresh s | +1% incremental s |", "|---|---:|---:|"]
    full, increment = largest["layers"], largest.get("incremental_layers", {})
    for layer in sorted(set(full) | set(increment), key=lambda k: -full.get(k, 0.0)):
        lines.append(f"| {layer} | {full.get(layer, 0.0):.1f} | {increment.get(layer, 0.0):.1f} |")
    for key, title in (("full_slowest", "full refresh"), ("incremental_slowest", "+1% increment")):
        if largest.get(key):
            lines += ["", f"The {title}'s slowest nodes:", ""]
            lines += ["| node | seconds |", "|---|---:|"]
            lines += [f"| `{name}` | {seconds:.1f} |" for name, seconds in largest[key]]
    lines += ["", "**Peak resident memory** during the pipeline run:", ""]
    lines += ["| changes | JVM (driver + executor) | Python UDF workers | Python driver |"]
    lines += ["|---:|---:|---:|---:|"]
    for p in results["pipeline"]:
        m = p["memory"]
        lines.append(
            f"| {p['events']:,} | {_mib(m['jvm'])} | {_mib(m['python_workers'])} | "
            f"{_mib(m['driver'])} |"
        )
    lines += render_peer(results.get("peer") or [], results["pipeline"][-1])
    lines += render_large_files(results.get("large_files") or [])
    lines += render_decoder_goals(results)
    if results.get("age"):
        lines += render_age(results["age"], results["pipeline"][-1])
    return "\n".join(lines) + "\n"


def render_python_breakdown(schemas: dict[str, float], bare: dict[str, float]) -> list[str]:
    """Where the UDF's Python time goes, per record, with and without schema blocks."""
    lines = [
        "",
        "Where the UDF's Python time goes: microseconds a record on one core (this process, "
        f"no Spark; {schemas['records']:,} records spread evenly over the feed, best of 3). "
        "The transfer row above is the rest: the records moved to the Python workers and the "
        "results back, with Spark's conversions at both ends.",
        "",
        "| step | with schemas | schemaless |",
        "|---|---:|---:|",
    ]
    for name, label in (
        ("to_python", "Arrow columns to Python values"),
        ("parse", "key and value JSON parsed (schema blocks cut out and looked up)"),
        ("convert", "the rest of decoding: conversions, images as JSON, layout records"),
        ("to_arrow", "the results built as one Arrow array"),
        ("whole", "the whole batch, as the UDF runs it"),
    ):
        lines.append(f"| {label} | {schemas[name]:.2f} | {bare[name]:.2f} |")
    return lines


def _verdict(value: float, goal: float, at_most: bool = True) -> str:
    met = value <= goal if at_most else value >= goal
    if met:
        return "met"
    ratio = value / goal if at_most else goal / value
    # a near miss as a percentage (by 1.00x would read as met), a far one as a factor
    return (
        f"**missed** by {(ratio - 1) * 100:.1f}%" if ratio < 1.1 else f"**missed** by {ratio:.2f}x"
    )


def render_peer(peer: list[dict[str, Any]], largest: dict[str, Any]) -> list[str]:
    """ChangeLake against the peer on one feed: times, goals beside figures, and the counts
    where their tables differ."""
    if not peer:
        return []
    lines = [
        "",
        "**Against the Spark SQL a user would write** (`python_udfs/bench/peer.py`), one "
        "Debezium PostgreSQL feed landed at once, after a first `dbt run` of it (untimed): "
        "ChangeLake's `dbt run --full-refresh` and `dbt build --full-refresh` (tests included, "
        "the accounting test not) of the whole project, and the peer (`from_json` with "
        "explicit schemas, SCD-2 by window functions, parquet out; median of the rounds):",
        "",
        "| changes | Kafka records | landed MiB | peer s | run s | build s | run / peer "
        "| build / peer | expected state |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for p in peer:
        lines.append(
            f"| {p['events']:,} | {p['records']:,} | {p['bytes'] / 2**20:,.0f} | "
            f"{p['peer']:.1f} | {p['run']:.1f} | {p['build']:.1f} | "
            f"{p['run'] / p['peer']:.2f} | {p['build'] / p['peer']:.2f} | "
            f"{'matched' if p['matched'] else 'DIFFERS'} |"
        )
    big = peer[-1]
    small = min(peer, key=lambda p: p["events"])
    rows = [
        (
            f"`dbt run --full-refresh` / peer at {big['events']:,} changes",
            "<= 1.50",
            big["run"] / big["peer"],
            1.5,
        ),
        (
            f"`dbt build --full-refresh` / peer at {big['events']:,} changes",
            "<= 2.00",
            big["build"] / big["peer"],
            2.0,
        ),
        (
            f"`dbt run --full-refresh` of {small['events']:,} changes, seconds",
            "<= 15",
            small["run"],
            15.0,
        ),
        (
            f"`dbt build --full-refresh` of {small['events']:,} changes, seconds",
            "<= 15",
            small["build"],
            15.0,
        ),
        (
            f"+1% increment / full refresh at {largest['events']:,} changes (six feeds, above)",
            "<= 0.10",
            largest["incremental"] / largest["full_refresh"],
            0.1,
        ),
    ]
    lines += ["", "| goal | target | figure | |", "|---|---:|---:|---|"]
    lines += [
        f"| {label} | {target} | {figure:.2f} | {_verdict(figure, goal)} |"
        for label, target, figure, goal in rows
    ]
    lines += [
        "",
        f"Where ChangeLake's time goes at {big['events']:,} changes (dbt node seconds by layer, "
        "summed over the build's threads):",
        "",
        "| layer | run s | build s |",
        "|---|---:|---:|",
    ]
    run, build = big["run_layers"], big["build_layers"]
    for layer in sorted(set(run) | set(build), key=lambda k: -build.get(k, 0.0)):
        lines.append(f"| {layer} | {run.get(layer, 0.0):.1f} | {build.get(layer, 0.0):.1f} |")
    d = big["differences"]
    lines += [
        "",
        f"Where the tables differ at {big['events']:,} changes, and why (the peer does "
        "less, not the same faster):",
        "",
        "| | peer | ChangeLake | why |",
        "|---|---:|---:|---|",
        f"| versions (history rows) | {d['peer_versions']:,} | {d['versions']:,} | the peer "
        f"keeps {d['noop_kept']:,} updates that changed nothing as versions, and "
        f"{d['toast_kept']:,} versions hold a TOAST placeholder as a value |",
        f"| current rows | {d['peer_current']:,} | {d['current']:,} | the peer ignores "
        f"{d['truncates']:,} truncate(s): {d['open_after_truncate']:,} of its current rows "
        "predate one |",
        f"| records set aside | {d['unparsed']:,} dropped unseen | {d['quarantined']:,} "
        "quarantined with a reason | the peer's `from_json` gives null for a line it cannot "
        "parse, and the line is gone; ChangeLake also quarantines a well-formed record it "
        "cannot decode |",
    ]
    return lines


def render_large_files(large: list[dict[str, Any]]) -> list[str]:
    """One landed file per row, decoded through its decoded model alone."""
    if not large:
        return []
    lines = [
        "",
        "**Large landed files**, one file decoded by its feed's decoded model (default driver "
        "memory):",
        "",
        "| shape | file | records | seconds | records/s | peak heap in use | peak heap after GC "
        "| peak live heap | peak Python workers | line numbers and offsets "
        "| the accounting's count of its lines |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|",
    ]
    for f in large:
        exact = "exact" if f["exact"] else "**WRONG**"
        heaps = (f["heap_peak"], f["heap_after_gc"], f.get("heap_live", 0), f.get("python_peak", 0))
        if "landed_counted" in f:
            right = "exact" if f["landed_counted"] == f["records"] else "**WRONG**"
            counted = f"{right}, {f['count_seconds']:.1f} s, peak heap {_mib(f['count_heap_peak'])}"
        else:
            counted = "n/a"
        size = f"{f['bytes'] / 2**20:,.0f} MiB"
        if f.get("compressed_bytes"):
            size += f" of text, {f['compressed_bytes'] / 2**20:,.0f} MiB compressed"
        lines.append(
            f"| {f['shape']} | {size} | {f['records']:,} | "
            f"{f['seconds']:.1f} | {f['records'] / f['seconds']:,.0f} | "
            + " | ".join(_mib(h) if h else "n/a" for h in heaps)
            + f" | {exact} | {counted} |"
        )
    lines += [
        "",
        "Peak live heap: the same decode run again (`--full-refresh`) with a full garbage "
        "collection before each sample, once a second (those runs are not timed): what the "
        "decode holds alive, where the heap after GC above also counts garbage promoted to the "
        "old generation. The accounting's count: the landed records of the file as "
        "`assert_every_landed_record_is_accounted_for` counts them (its non-empty lines, read "
        "line by line by Spark's text reader; a compressed file's counted in the Python worker "
        "from its bytes), apart from the reader that decodes it, with the heap's peak in use "
        "while it ran. The decode runs in the Python workers, so the JVM heap holds little of "
        "it: the Python workers' peak resident memory (summed over the workers, so shared "
        "pages count more than once) is what grows if the reading holds a file. A compressed "
        "file is read in one task (gzip cannot be split): one core decodes it.",
    ]
    return lines


def render_decoder_goals(results: dict[str, Any]) -> list[str]:
    """The decoder's goals, each beside its figure; a goal this bench does not measure yet
    has its row all the same, saying so and why."""
    d = results["decode"]
    slowest = min(results["per_format"], key=lambda f: f["records"] / f["seconds"])
    largest = results["pipeline"][-1]
    bare = results["decode_schemaless"]
    rows = []
    for t, label in ((d, "Debezium PostgreSQL with schemas"), (bare, "schemaless Debezium")):
        if "native_layout" in t:
            rows.append(
                (
                    f"reader / native with the layout's columns, {label}",
                    "<= 1.00",
                    t["reader"] / t["native_layout"],
                    1.0,
                    True,
                )
            )
        if "reader" in t:
            target = (1.2, "<= 1.20") if "native_layout" in t else (1.0, "<= 1.00")
            rows.append(
                (
                    f"reader / native with the after image alone, {label}",
                    target[1],
                    t["reader"] / t["native"],
                    target[0],
                    True,
                )
            )
    rows += [
        (
            "UDF / native, Debezium PostgreSQL with schemas",
            "<= 1.00",
            d["udf"] / d["native"],
            1.0,
            True,
        ),
        (
            "UDF / native, schemaless Debezium (payloads alone)",
            "<= 1.00",
            results["decode_schemaless"]["udf"] / results["decode_schemaless"]["native"],
            1.0,
            True,
        ),
        (
            f"slowest feed's decode, records/s ({slowest['feed']})",
            ">= 60,000",
            slowest["records"] / slowest["seconds"],
            60_000,
            False,
        ),
        (
            f"full refresh at {largest['events']:,} changes, changes/s",
            ">= 20,000",
            largest["events"] / largest["full_refresh"],
            20_000,
            False,
        ),
    ]
    lines = ["", "**Decoder goals**:", "", "| goal | target | figure | |", "|---|---:|---:|---|"]
    for label, target, figure, goal, at_most in rows:
        shown = f"{figure:.2f}" if at_most else f"{figure:,.0f}"
        lines.append(f"| {label} | {target} | {shown} | {_verdict(figure, goal, at_most)} |")
    large = results.get("large_files") or []
    for shape in LARGE_FILE_SHAPES:
        runs = sorted((f for f in large if f["shape"] == shape), key=lambda f: f["bytes"])
        if len(runs) < 2 or not runs[0]["heap_after_gc"]:
            continue
        small, big = runs[0], runs[-1]
        measure = "heap_live" if small.get("heap_live") else "heap_after_gc"
        growth = big[measure] / small[measure]
        verdict = _verdict(growth, 1.5) if big["exact"] else "**missed**: line numbers or offsets"
        label = "peak live heap" if measure == "heap_live" else "peak heap after GC"
        lines.append(
            f"| a {big['bytes'] / 2**30:.1f} GiB {shape} file"
            + (" (its text)" if big.get("compressed_bytes") else "")
            + " decodes with the default driver "
            f"memory, lines and offsets exact; {label} against a {small['bytes'] / 2**20:,.0f} "
            f"MiB file | <= 1.50 | {growth:.2f} ({_mib(big[measure])}) | {verdict} |"
        )
        if small.get("python_peak") and big.get("python_peak"):
            growth = big["python_peak"] / small["python_peak"]
            lines.append(
                f"| the Python workers reading it (resident, summed) against the "
                f"{small['bytes'] / 2**20:,.0f} MiB file's | <= 1.50 | {growth:.2f} "
                f"({_mib(big['python_peak'])}) | {_verdict(growth, 1.5)} |"
            )
    return lines


def render_age(age: dict[str, Any], largest: dict[str, Any]) -> list[str]:
    """The goals of a run's cost at any age, each beside its figure, and the runs behind them."""
    runs = age["runs"]
    second, last = runs[min(1, len(runs) - 1)], runs[-1]
    # (run numbers are text in saved measurements: JSON keys)
    storage = {
        int(n): runs[int(n) - 1]["storage"] / size for n, size in age["fresh"].items() if size
    }
    worst = max(storage, key=storage.get)
    increment = largest["incremental"] / largest["full_refresh"]
    failed = [r["run"] for r in runs if r.get("failed")]
    rows = [
        ("builds that failed", "0", len(failed), 0.0),
        ("last build / second build", "<= 1.20", last["seconds"] / second["seconds"], 1.2),
        (
            f"storage / fresh full refresh (worst of runs {', '.join(map(str, storage))}: "
            f"run {worst})",
            "<= 1.50",
            storage[worst],
            1.5,
        ),
        (
            "read all of cdc_current, last / second",
            "<= 1.20",
            last["current"] / second["current"],
            1.2,
        ),
        (
            "read one key's cdc_history, last / second",
            "<= 1.20",
            last["key_history"] / second["key_history"],
            1.2,
        ),
        (
            "read a typed current model, last / second",
            "<= 1.20",
            last["typed_current"] / second["typed_current"],
            1.2,
        ),
        (
            f"+1% increment / full refresh at {largest['events']:,} changes",
            "<= 0.10",
            increment,
            0.1,
        ),
        (
            "`dbt build` with nothing new, seconds (warm session), right after the last run "
            "(with the maintenance it left due)",
            "< 10",
            age["idle"],
            10.0,
        ),
        # measurements saved before the three builds after it were taken have the first alone
        *(
            [
                (
                    "`dbt build` with nothing new, seconds (warm session), median of the three "
                    "builds after that one",
                    "< 10",
                    statistics.median(age["idle_after"]),
                    10.0,
                )
            ]
            if age.get("idle_after")
            else []
        ),
        (
            "read cdc_current / scan a parquet table of its rows, after the age runs"
            + (f" ({age['current_rows']:,} rows)" if "current_rows" in age else ""),
            "<= 1.50",
            age["current_read"] / age["parquet_read"],
            1.5,
        ),
    ]
    if "current_read" in largest:
        rows.append(
            (
                f"read cdc_current / scan a parquet table of its rows, at "
                f"{largest['events']:,} changes after the +1% ({largest['current_rows']:,} rows, "
                f"{largest['current_read']:.2f} s against {largest['parquet_read']:.2f} s)",
                "<= 1.50",
                largest["current_read"] / largest["parquet_read"],
                1.5,
            )
        )
    lines = [
        "",
        f"**Age**: {age['runs_count']} consecutive `dbt build` runs (tests included), each "
        f"after landing {age['increment']:,} more changes of one world"
        + (
            f" that ages without growing (customers and orders held at about "
            f"{age['steady_keys']:,} live rows a table and feed)"
            if "steady_keys" in age
            else ""
        )
        + "; expected state "
        f"{'matched' if age['matched'] else 'DIFFERS'} after the last.",
        "",
        "| goal | target | figure | |",
        "|---|---:|---:|---|",
    ]
    for label, target, figure, goal in rows:
        if isinstance(figure, int):  # a count: its goal is none
            verdict = f"**missed**: runs {', '.join(map(str, failed))}" if figure else "met"
            lines.append(f"| {label} | {target} | {figure} | {verdict} |")
        else:
            lines.append(f"| {label} | {target} | {figure:.2f} | {_verdict(figure, goal)} |")
    step = max(1, len(runs) // 10)
    shown = sorted({*range(0, len(runs), step), len(runs) - 1})
    lines += [
        "",
        "| run | build s | storage MiB | history store partitions | cdc_current read s "
        "| one key's history s | typed current s | driver heap after GC, MiB |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for i in shown:
        r = runs[i]
        mark = " (failed)" if r.get("failed") else ""
        lines.append(
            f"| {r['run']}{mark} | {r['seconds']:.1f} | {r['storage'] / 2**20:.1f} | "
            f"{r.get('history_partitions') or '-'} | {r['current']:.3f} | "
            f"{r['key_history']:.3f} | {r['typed_current']:.3f} | {r.get('heap', 0):.0f} |"
        )
    lines += [f"\nRun {r['run']} failed: {r['failed']}" for r in runs if r.get("failed")]
    lines += _render_age_medians(runs)
    if second.get("nodes") and last.get("nodes"):
        lines += [
            "",
            f"Where an age build's time goes, run {second['run']} against run {last['run']} "
            "(dbt node seconds by layer; 'outside nodes' is the rest of the build's wall time: "
            "parsing, run hooks, compiling):",
            "",
            f"| layer | run {second['run']} s | run {last['run']} s | last / second |",
            "|---|---:|---:|---:|",
        ]
        layers = sorted(
            set(second["nodes"]) | set(last["nodes"]), key=lambda k: -last["nodes"].get(k, 0.0)
        )
        for layer in layers:
            before, after = second["nodes"].get(layer, 0.0), last["nodes"].get(layer, 0.0)
            ratio = f"{after / before:.2f}" if before else "-"
            lines.append(f"| {layer} | {before:.1f} | {after:.1f} | {ratio} |")
    return lines


def _render_age_medians(runs: list[dict[str, Any]]) -> list[str]:
    """The age runs' figures as medians of ten runs early (from the second) and the last ten:
    one build or read against one other compares two draws, each off by a fifth or more."""
    if len(runs) < 12:
        return []
    early, late = runs[1:11], runs[-10:]
    lines = [
        "",
        f"The same figures as medians of runs {early[0]['run']}-{early[-1]['run']} and "
        f"{late[0]['run']}-{late[-1]['run']}:",
        "",
        f"| figure | runs {early[0]['run']}-{early[-1]['run']} "
        f"| runs {late[0]['run']}-{late[-1]['run']} | late / early |",
        "|---|---:|---:|---:|",
    ]
    for label, key in (
        ("build s", "seconds"),
        ("cdc_current read s", "current"),
        ("one key's history s", "key_history"),
        ("typed current s", "typed_current"),
    ):
        before = statistics.median(r[key] for r in early)
        after = statistics.median(r[key] for r in late)
        lines.append(f"| {label} | {before:.2f} | {after:.2f} | {after / before:.2f} |")
    # the reads per row returned (measurements saved before rows were counted have none):
    # (label, read, whether the figure is microseconds a row rather than the row count)
    for label, key, per_row in (
        ("cdc_current rows", "current", False),
        ("cdc_current read, microseconds a row", "current", True),
        ("one key's history rows", "key_history", False),
        ("typed current rows", "typed_current", False),
        ("typed current read, microseconds a row", "typed_current", True),
    ):
        if any(f"{key}_rows" not in r for r in early + late):
            continue

        def figure(r: dict[str, Any], key: str = key, per_row: bool = per_row) -> float:
            rows = r[f"{key}_rows"]
            return r[key] * 1e6 / max(1, rows) if per_row else rows

        before = statistics.median(figure(r) for r in early)
        after = statistics.median(figure(r) for r in late)
        shown = ".2f" if per_row else ",.0f"
        lines.append(
            f"| {label} | {before:{shown}} | {after:{shown}} | {after / max(before, 1e-9):.2f} |"
        )
    return lines


METHOD = """\
## Method

`make bench` (`changelake bench --write-docs`) runs every section below in one process on one
Spark session of the embedded target, on data from the demo generator
(`python_udfs/generator`), and writes this page and the run's results file
(`docs/benchmark/<date>-<commit>.json`). Figures are wall-clock seconds on the machine named
below; the ratios within one run are what compare across machines. No test asserts a time.

1. **Decode** of the Debezium PostgreSQL feed, schema blocks included: the floor (read the
   landed lines, write them to Spark's `noop` sink), native Spark twice (`from_json` with an
   explicit schema and SQL for the same conversions: the after image alone, and every column
   the layout holds: both images, key and key columns, column types from the schema blocks,
   unavailable columns, a changed key, positions, times, kinds), the transfer to the Python
   workers and back with no decoding, the UDF over text rows and the reader; medians of
   `--rounds`. The same records without schema blocks. Where the decoder's Python time goes,
   per record. Then every feed's decode.
2. **Pipeline**: every model from scratch over the six demo feeds (`dbt build` without the
   accounting test, which is timed on its own), at a tenth of the changes and at all of them.
3. **Incremental**: the generator's last 1% (late files included) built after the first build;
   its seconds over a full refresh's.
4. **Memory**: peak resident memory of the JVM, the Python workers and the driver.
5. **Against the Spark SQL a user would write**: one Debezium PostgreSQL feed of 5,000
   changes, a tenth of `--events` and all of them, built by ChangeLake (a first `dbt run`,
   untimed; then `dbt run --full-refresh` and `dbt build --full-refresh`, the whole project)
   and by a plain Spark SQL pipeline in the same session (`python_udfs/bench/peer.py`): the
   ratios, and the counts where the two disagree.
6. **Large files**: one landed file of 256 MiB and one of 1 GiB in each landing shape, decoded
   with the default driver memory: seconds, the JVM's heap peak, and whether every line kept
   its number.
7. **Age**: `--age-runs` consecutive `dbt build` runs over equal increments of a world that ages
   without growing: seconds per run, storage against a fresh full refresh of the same input,
   reads of `cdc_current`, one key's `cdc_history` and a typed current model; then builds with
   nothing new, and `cdc_current` against a parquet copy of its rows.

Re-render this page from a results file with `changelake bench --render <file> --write-docs`.
"""


def page(results: dict[str, Any], source: str) -> str:
    """``docs/benchmark.md``: the method, then the tables of one run, goals beside figures."""
    commit = results.get("commit", "unknown")
    return (
        "# Benchmark\n\n"
        f"Written by `make bench` from `{source}` (commit `{commit}`); do not edit by hand.\n\n"
        + METHOD
        + "\n## Results\n\n"
        + render(results)
    )
