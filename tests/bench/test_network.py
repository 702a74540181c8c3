"""The network lesson's prediction: compute time plus the busiest link's bytes over its bandwidth."""

from __future__ import annotations

import pytest

from reprokit.bench.network import bandwidth_name, busiest, predict

# The unshaped run: 256 examples a step at 1280 ex/s is 0.2 s a step; the ps moves 17 MB a step.
NETWORK = {"hosts": {"ps": {"sent_per_step": 8_500_000, "received_per_step": 8_500_000},
                     "worker0": {"sent_per_step": 4_250_000, "received_per_step": 4_250_000},
                     "client": {"sent": 10}}}
POINTS = [{"link": "none", "bits_per_s": None, "rate": 1280.0, "network": NETWORK},
          {"link": "1gbit", "bits_per_s": 1e9, "rate": 800.0, "network": NETWORK}]


def test_the_busiest_host_is_the_one_whose_link_carries_most_bytes_per_step():
    assert ("ps", 17_000_000) == busiest(NETWORK)
    assert busiest({"hosts": {}}) is None


def test_a_link_adds_the_busiest_hosts_bytes_over_its_bandwidth_to_the_compute_time():
    """1 Gbit/s: 0.2 s + 17 MB x 8 / 1e9 = 0.336 s a step, 256 / 0.336 = 761.9 ex/s."""
    prediction = predict(POINTS, standalone_rate=1000.0, workers=2)
    assert (0.2, "ps", 17_000_000) == (pytest.approx(prediction["compute_step_s"]), prediction["busiest_host"],
                                       prediction["bytes_per_step"])
    assert 256 / 0.336 == pytest.approx(prediction["points"]["1gbit"])
    # One CPU does 256 examples in 0.256 s: the link may add 0.056 s, 17 MB in 0.056 s is 2.43 Gbit/s.
    assert 17_000_000 * 8 / 0.056 == pytest.approx(prediction["beats_one_cpu_above_bits_per_s"])
    assert not prediction["never_beats_one_cpu"]
    assert 41 == len(prediction["curve"])


def test_a_cluster_slower_than_one_cpu_on_unshaped_links_never_beats_it():
    prediction = predict(POINTS, standalone_rate=1500.0, workers=2)
    assert prediction["never_beats_one_cpu"] and prediction["beats_one_cpu_above_bits_per_s"] is None


def test_without_an_unshaped_run_there_is_nothing_to_predict_from():
    assert "add `none` to --link" in predict(POINTS[1:], 1000.0, 2)["why_not"]


def test_bandwidths_read_as_a_person_writes_them():
    assert ("2.43 Gbit/s", "100 Mbit/s", "n/a") == (bandwidth_name(2.43e9), bandwidth_name(1e8), bandwidth_name(None))
