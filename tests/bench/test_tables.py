"""The benchmark's table and plot, from a real bench.json (no training)."""

from __future__ import annotations

import json
from pathlib import Path

from reprokit.bench.tables import bench_lines, plot_bench
from tests.support import SAMPLES

BENCH = json.loads((SAMPLES / "bench" / "bench.json").read_text())


def test_the_table_has_the_three_rows_and_the_article():
    text = "\n".join(bench_lines(BENCH))
    for row in ("article program, default settings", "article program, tuned settings",
                "lesson program, default settings", "the article (2017) | 98 | 170 | 1.74x"):
        assert f"| {row}" in text


def test_the_baseline_and_the_target_are_judged_in_words():
    lines = bench_lines(BENCH)
    baseline = next(line for line in lines if line.startswith("the lesson's baseline:"))
    assert ("TOO WEAK" in baseline) == (not BENCH["baseline"]["ok"])
    target = next(line for line in lines if line.startswith("target: 1.85x on 2 workers"))
    assert ("short" in target) == (not BENCH["target"]["met"])


def test_the_ablation_shows_each_change_alone_then_all():
    text = "\n".join(bench_lines(BENCH))
    assert "| none (the article's program) |" in text
    assert "| input-pipeline alone |" in text and "| variables-on-ps alone |" in text
    assert "| all (the lesson) |" in text


def test_where_the_variables_live_and_where_the_time_goes_are_shown():
    text = "\n".join(bench_lines(BENCH))
    assert "the article program's variables live on /job:worker/task:0" in text
    assert "the lesson program's variables live on /job:ps/task:0" in text
    assert "one traced lesson cluster step:" in text


def test_the_plot_is_a_png(tmp_path: Path):
    assert plot_bench(BENCH, tmp_path / "bench.png").read_bytes().startswith(b"\x89PNG")
