"""reprokit.judge.speed: a run's rates and speed-up by the kit's clock, each with its interval,
by the one estimator, and the programs' own speed-up beside it."""

from __future__ import annotations

import pytest

from reprokit.judge import speed as speedup
from reprokit.judge.logs import parse_log, step_fields
from reprokit.judge.speed import SpeedError, ratio_estimate
from tests.support import SAMPLES

LOGS = SAMPLES / "logs"
RUN = SAMPLES / "runs" / "lesson-quick"


def test_a_runs_figures_are_the_clocks_medians_and_the_speedup_their_ratio() -> None:
    """The lesson's real quick run: each mode's rate is the median of its five intervals (128 and
    256 examples a step), the speed-up their ratio, with the programs' own speed-up beside."""
    standalone = parse_log(RUN / "standalone.log", "standalone")
    cluster = parse_log(RUN / "client.log", "client")
    speed = speedup.run_speed(standalone, cluster, workers=2)
    alone, together = speedup.clock_rates(standalone, 128), speedup.clock_rates(cluster, 256)
    assert ratio_estimate([(together, alone)]) == speed.speedup
    assert speedup.rate_estimate([alone]) == speed.standalone
    assert speed.speedup.value / 2 == pytest.approx(speed.efficiency)
    assert (1, 10) == (speed.speedup.n, speed.speedup.samples)
    own = ratio_estimate([(speedup.reported_rates(step_fields(cluster)), speedup.reported_rates(step_fields(standalone)))])
    assert own == speed.reported
    assert speed.speedup.value != own.value  # two measurements, one of them the kit's


def test_a_run_with_no_two_step_lines_has_no_speed_and_says_what_to_do() -> None:
    """A run that logged step 0 only: the error says which run and what to do."""
    standalone = parse_log(RUN / "standalone.log", "standalone")
    cluster = [r for r in parse_log(RUN / "client.log", "client") if r.step is None or r.step.step == 0]
    with pytest.raises(SpeedError) as caught:
        speedup.run_speed(standalone, cluster, workers=2)
    assert "the cluster run has no two step lines to time (1 in all)" in caught.value.message
    assert "max_steps" in caught.value.hint
