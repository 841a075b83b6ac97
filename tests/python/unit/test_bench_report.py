"""The benchmark page's rendering: goals beside their figures, and a saved run rendered again."""

from __future__ import annotations

import json

from python_udfs.bench import report


def test_a_missed_goal_says_by_how_much():
    assert report._verdict(1.2, 1.2) == "met"
    assert report._verdict(20_000, 20_000, at_most=False) == "met"
    # a near miss reads as a percentage, never as "by 1.00x"
    assert report._verdict(1.2052, 1.2) == "**missed** by 0.4%"
    assert report._verdict(2.39, 1.2) == "**missed** by 1.99x"
    assert report._verdict(5_000, 20_000, at_most=False) == "**missed** by 4.00x"
    assert report._verdict(19_000, 20_000, at_most=False) == "**missed** by 5.3%"


def test_saved_measurements_render_as_the_run_rendered_them(tmp_path):
    """`changelake bench --render` reads a run's results file: JSON turns the age runs'
    numbers (keys of `fresh`) into text, and the tables come out as from the run itself."""
    age_runs = [
        {
            "run": n,
            "seconds": 20.0 + n % 3,
            "storage": 1000 * n,
            "current": 0.1,
            "key_history": 0.2,
            "typed_current": 0.3,
            "heap": 200.0,
            "nodes": {},
        }
        for n in range(1, 15)
    ]
    age = {
        "runs": age_runs,
        "runs_count": 14,
        "increment": 10,
        "fresh": {2: 2000, 14: 10000},
        "idle": 5.0,
        "matched": True,
        "current_read": 0.1,
        "parquet_read": 0.1,
    }
    largest = {"events": 1000, "incremental": 1.0, "full_refresh": 20.0}
    rendered = "\n".join(report.render_age(age, largest))
    saved = json.loads(json.dumps(age))
    assert list(saved["fresh"]) == ["2", "14"]
    assert "\n".join(report.render_age(saved, largest)) == rendered
    assert (
        "| storage / fresh full refresh (worst of runs 2, 14: run 14) | <= 1.50 | 1.40 | met |"
        in rendered
    )
    assert "The same figures as medians of runs 2-11 and 5-14:" in rendered
    assert "| build s | 21.00 | 21.00 | 1.00 |" in rendered
    # saved before the reads' rows were counted: no per-row figures
    assert "a row" not in rendered
    # with the rows counted: the rows late against early, and each read's time a row
    for run in age_runs:
        run.update(current_rows=1000 * run["run"], key_history_rows=2, typed_current_rows=500)
    rendered = "\n".join(report.render_age(age, largest))
    assert "| cdc_current rows | 6,500 | 9,500 | 1.46 |" in rendered
    assert "| cdc_current read, microseconds a row | 15.48 | 10.56 | 0.68 |" in rendered
    assert "| typed current read, microseconds a row | 600.00 | 600.00 | 1.00 |" in rendered
