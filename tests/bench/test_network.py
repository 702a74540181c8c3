"""The network lesson's prediction: compute time plus the busiest link's bytes over its bandwidth."""

from __future__ import annotations

from pathlib import Path

import pytest

from reprokit.bench.findings import (
    BenchRun,
    NetworkPoint,
    NetworkProgram,
    NetworkResults,
    rate_of,
    speedup_of,
)
from reprokit.bench.network import bandwidth_name, busiest, predict
from reprokit.bench.tables import network_sweep_lines, plot_network
from reprokit.judge.speed import Estimate, format_estimate
from reprokit.run.tuning import PROFILES
from tests.support.kit import article_figures

# The unshaped run: 256 examples a step at 1280 ex/s is 0.2 s a step; the ps moves 17 MB a step.
NETWORK: dict[str, object] = {"hosts": {"ps": {"sent_per_step": 8_500_000, "received_per_step": 8_500_000},
                                        "worker0": {"sent_per_step": 4_250_000, "received_per_step": 4_250_000},
                                        "client": {"sent": 10}}}


def cluster(*rates: float) -> BenchRun:
    return BenchRun("cluster", 2, "article", "cluster", sorted(rates)[len(rates) // 2], list(rates), network=NETWORK)


def point(link: str, bits_per_s: float | None, rate: float) -> NetworkPoint:
    return NetworkPoint(link, bits_per_s, cluster(rate), Estimate(rate, rate, rate, 1, 1, 1, "a test's figure"), None)


POINTS = [point("none", None, 1280.0), point("1gbit", 1e9, 800.0)]


def test_the_busiest_host_is_the_one_whose_link_carries_most_bytes_per_step() -> None:
    assert ("ps", 17_000_000) == busiest(NETWORK)
    assert busiest({"hosts": {}}) is None


def test_a_link_adds_the_busiest_hosts_bytes_over_its_bandwidth_to_the_compute_time() -> None:
    """1 Gbit/s: 0.2 s + 17 MB x 8 / 1e9 = 0.336 s a step, 256 / 0.336 = 761.9 ex/s."""
    prediction = predict(POINTS, standalone_rate=1000.0, workers=2)
    assert (0.2, "ps", 17_000_000) == (pytest.approx(prediction.compute_step_s), prediction.busiest_host,
                                       prediction.bytes_per_step)
    assert 256 / 0.336 == pytest.approx(prediction.points["1gbit"])
    # One CPU does 256 examples in 0.256 s: the link may add 0.056 s, 17 MB in 0.056 s is 2.43 Gbit/s.
    assert 17_000_000 * 8 / 0.056 == pytest.approx(prediction.beats_one_cpu_above_bits_per_s)
    assert not prediction.never_beats_one_cpu
    assert 41 == len(prediction.curve)


def test_a_cluster_slower_than_one_cpu_on_unshaped_links_never_beats_it() -> None:
    prediction = predict(POINTS, standalone_rate=1500.0, workers=2)
    assert prediction.never_beats_one_cpu and prediction.beats_one_cpu_above_bits_per_s is None


def test_without_an_unshaped_run_there_is_nothing_to_predict_from() -> None:
    assert "add `none` to --link" in (predict(POINTS[1:], 1000.0, 2).why_not or "")


def test_bandwidths_read_as_a_person_writes_them() -> None:
    assert ("2.43 Gbit/s", "100 Mbit/s", "n/a") == (bandwidth_name(2.43e9), bandwidth_name(1e8), bandwidth_name(None))


def test_the_network_table_and_plot_show_each_links_speedup_with_its_interval(tmp_path: Path) -> None:
    """Each point is one pair (its cluster, the standalone): the within-run interval."""
    alone = BenchRun("standalone", 1, "article", "standalone", 1000.0, [990.0, 1000.0, 1010.0, 1005.0, 995.0])
    runs = {"none": cluster(1270.0, 1280.0, 1290.0, 1275.0, 1285.0), "1gbit": cluster(790.0, 800.0, 810.0, 805.0)}
    points = [NetworkPoint(link, bits, runs[link], rate_of([runs[link]]), speedup_of([(runs[link], alone)]))
              for link, bits in (("none", None), ("1gbit", 1e9))]
    results = NetworkResults("folder", 31, "rule", "method", 2, PROFILES["default"], ["none", "1gbit"],
                             {"article": NetworkProgram(alone, rate_of([alone]), points,
                                                        predict(points, 1000.0, 2))})
    lines = network_sweep_lines(results)
    assert points[1].speedup is not None and "within one repetition (bootstrap of steps)" == points[1].speedup.method
    assert any(line.startswith(f"| 1gbit | {format_estimate(points[1].rate, '', 1, brief=True)} | "
                               f"{format_estimate(points[1].speedup, brief=True)} |") for line in lines)
    assert "method: within one repetition (bootstrap of steps)" in lines[1]
    assert plot_network(results, tmp_path / "network.png", article_figures()).read_bytes().startswith(b"\x89PNG")
