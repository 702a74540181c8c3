"""The report: report.md and its plot, rendered from real sample runs (no training)."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

from reprokit.names import PLOT, REPORT
from reprokit.report.markdown import (
    hosts_and_links_lines,
    markdown,
    rerender,
    speed_table,
)
from reprokit.report.results import RunResults
from reprokit.run.backends import Exposure
from reprokit.run_folders import RunInfo
from tests.support import SAMPLES

RUNS = SAMPLES / "runs"


def sample(name: str) -> tuple[RunInfo, RunResults]:
    return RunInfo.load(RUNS / name), RunResults.load(RUNS / name / "results.json")


def test_the_speed_table_puts_the_run_beside_the_article_each_figure_with_its_interval():
    info, results = sample("lesson-quick")
    table = speed_table(info, results)
    assert "| speed-up (cluster / standalone) | 1.74x | 1.76x (1.75-1.84) |" in table
    assert "| cluster examples/sec (1 ps + 2 workers) | 170.0 | 1425.0 (1418.2-1455.5) |" in table
    assert table[0].endswith("by the kit's clock (within one repetition (bootstrap of steps); 5 and 5 timed intervals) |")


def test_the_report_opens_with_the_three_part_verdict_and_why():
    info, results = sample("lesson-quick")
    text = markdown(RUNS / "lesson-quick", info, results, PLOT)
    assert text.startswith("# Reproduction report: logs PASS, claim REPRODUCED, learning SAME\n\n```\nlogs:     PASS  (32 rules, 0 failed)\n"
                           "claim:    REPRODUCED  speed-up 1.76x (95% CI 1.75-1.84, n=1, 10 step rates)")
    assert "- **speedup: REPRODUCED**: the interval (within one repetition (bootstrap of steps)) 1.75-1.84" \
           " lies inside the band; from 1 repetition the interval covers the steps within the runs, not" \
           " run-to-run drift." in text
    assert "| cluster | 50 | 13,056 | 0.890 (0.884-0.896) | 9000 of 10112 | eval_cluster.log |" in text


def test_the_report_shows_verdict_rules_threads_and_how_it_ran():
    info, results = sample("lesson-quick")
    text = markdown(RUNS / "lesson-quick", info, results, PLOT)
    assert text.startswith("# Reproduction report: logs PASS, claim REPRODUCED, learning SAME\n")
    assert "| PASS | filling_shuffle_buffer_once_per_tower | cluster |" in text
    assert "- cluster: no input thread died" in text
    assert "| program | lesson |" in text and "| kit fix: request id fix | on (" in text
    assert f"![examples/sec between step lines, by the kit's clock]({PLOT})" in text
    assert "**Exposed:**" not in text  # the servers had only the run's own namespace


def test_a_warning_and_a_dead_thread_are_shown_with_their_evidence():
    info, results = sample("hosts-1gbit")
    text = markdown(RUNS / "hosts-1gbit", info, results, None)
    assert "| WARN | no_python_traceback | cluster |" in text
    assert "- cluster: dead input threads per tower: tower_0: 1 of 17 (tensorflow.python.framework." in text


def test_the_hosts_section_shows_each_hosts_address_link_and_bytes_per_step():
    _, results = sample("hosts-1gbit")
    lines = hosts_and_links_lines(results)
    assert lines[0].startswith("Every host's link: 1gbit (tbf, both directions; no added delay).")
    assert "| worker1 | 10.231.0.12 | 4.31 MB | 4.33 MB |" in "\n".join(lines)
    assert [] == hosts_and_links_lines(sample("lesson-quick")[1])


def test_servers_reachable_beyond_the_run_are_said_at_the_top():
    info, results = sample("lesson-quick")
    exposed = dataclasses.replace(results, exposure=Exposure("every interface of this machine, TCP ports 2222-2224",
                                                             beyond_run=True))
    assert "> **Exposed:** the servers were reachable on every interface of this machine" in \
        markdown(RUNS / "lesson-quick", info, exposed, None)


def test_report_renders_a_run_again_from_its_results(tmp_path: Path):
    run = tmp_path / "lesson-quick"
    shutil.copytree(RUNS / "lesson-quick", run)
    written = rerender(run)
    assert [run / "results.json", run / PLOT, run / REPORT] == written
    assert (run / PLOT).read_bytes().startswith(b"\x89PNG")
    assert "**logs PASS, claim REPRODUCED, learning SAME**" in (run / REPORT).read_text()
