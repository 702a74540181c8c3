"""The article's claims as data (``expected_logs/claims.yaml``), and the verdicts on them.

A reproduction ends in three lines: whether the logs look right (the rules), whether the speed-up
claim is reproduced, and whether the cluster learns as the standalone trainer does::

    logs:     PASS  (22 rules, 0 failed)
    claim:    NOT REPRODUCED  speed-up 0.63x (95% CI 0.61-0.65, n=1, 198 step rates) vs ...
    learning: SAME  precision @ 1 at the end of each mode's run: standalone 0.412 (...) ...

Each claim has its own statuses: the speed-up is REPRODUCED, NOT REPRODUCED or INCONCLUSIVE;
learning is SAME, DIFFERENT or INCONCLUSIVE. INCONCLUSIVE always says what is missing. The
vocabulary of the YAML file is documented at its top, as rules.yaml's is.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple, NoReturn

from reprokit.errors import KitError
from reprokit.judge.datafile import load_section, vocabulary_hint
from reprokit.judge.intervals import MIN_REPETITIONS_FOR_T, MIN_STEP_RATES, Estimate

SPEEDUP_STATUSES = ("REPRODUCED", "NOT REPRODUCED", "INCONCLUSIVE")
LEARNING_STATUSES = ("SAME", "DIFFERENT", "INCONCLUSIVE")
Z_95 = 1.959964  # the normal distribution's two-sided 95% quantile


class ClaimsError(KitError):
    """The claims file is malformed, or an evaluation's numbers contradict each other."""


@dataclass(frozen=True)
class SpeedupClaim:
    """The article's speed-up and the band of speed-ups that reproduce it (absolute bounds)."""

    description: str
    value: float
    standalone_rate: float
    cluster_rate: float
    lower: float
    upper: float
    workers: int


@dataclass(frozen=True)
class LearningClaim:
    """Cluster and standalone reach the same precision @ 1, within ``margin``, above ``chance``."""

    description: str
    margin: float
    chance: float


@dataclass(frozen=True)
class Claims:
    speedup: SpeedupClaim
    learning: LearningClaim


@dataclass(frozen=True)
class ClaimVerdict:
    """``line`` is what follows the label (``claim:``), status first; ``reason`` says why."""

    claim: str
    status: str
    line: str
    reason: str


@dataclass(frozen=True)
class Precision:
    """One mode's evaluation: precision @ 1 = correct / counted on the test set, of the
    checkpoint of ``step`` (0-based: step + 1 steps trained), which showed the model
    ``examples_seen`` examples ((step + 1) x 128 x towers)."""

    precision: float
    correct: int
    counted: int
    step: int
    examples_seen: int

    def __post_init__(self) -> None:
        if self.counted < 1 or not 0 <= self.correct <= self.counted:
            raise ClaimsError(f"an evaluation needs 0 <= correct <= counted and counted >= 1; "
                              f"got correct={self.correct}, counted={self.counted}")
        # cifar10_eval prints the precision with 3 decimals: allow that rounding, nothing more.
        if abs(self.precision - self.correct / self.counted) > 0.0005 + 1e-9:
            raise ClaimsError(f"precision {self.precision} is not correct / counted = "
                              f"{self.correct}/{self.counted} = {self.correct / self.counted:.4f}",
                              "build the Precision from the evaluation's own counts")


class Interval(NamedTuple):
    low: float
    high: float


# --- loading -------------------------------------------------------------------------------

_KEYS: dict[str, set[str]] = {  # claim -> its keys, every one required
    "speedup": {"description", "value", "standalone_rate", "cluster_rate", "lower", "upper", "workers"},
    "learning": {"description", "margin", "chance"},
}


def load_claims(path: Path) -> Claims:
    """Read and validate a claims file; raise ClaimsError naming the claim and key at fault."""
    hint = vocabulary_hint(path)
    entries = load_section(path, "claims", dict, ClaimsError, "claims")
    assert isinstance(entries, dict)  # load_section checked it
    unknown = [name for name in entries if name not in _KEYS]
    if unknown:
        raise ClaimsError(f"{path}: unknown claim {unknown[0]!r} (known: {', '.join(_KEYS)})", hint)
    missing = [name for name in _KEYS if name not in entries]
    if missing:
        raise ClaimsError(f"{path}: missing the claim {missing[0]!r}", hint)
    speedup = _Reader(path, "speedup", entries["speedup"], hint)
    value, lower, upper = (speedup.number(k) for k in ("value", "lower", "upper"))
    if not lower < value < upper:
        speedup.fail("lower", f"the band must hold the value: lower < value < upper, "
                              f"got {lower} < {value} < {upper}")
    workers = speedup.body["workers"]
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        speedup.fail("workers", f"must be a whole number >= 1, got {workers!r}")
    learning = _Reader(path, "learning", entries["learning"], hint)
    return Claims(
        SpeedupClaim(speedup.text("description"), value, speedup.number("standalone_rate"),
                     speedup.number("cluster_rate"), lower, upper, workers),
        LearningClaim(learning.text("description"), learning.share("margin"), learning.share("chance")),
    )


class _Reader:
    """One claim's mapping; every complaint names the claim and the key."""

    def __init__(self, path: Path, name: str, body: object, hint: str) -> None:
        self.path, self.name, self.hint = path, name, hint
        if not isinstance(body, dict):
            self.fail(None, f"expected a mapping with keys {', '.join(sorted(_KEYS[name]))}")
        for key in body:
            if key not in _KEYS[name]:
                self.fail(key, f"unknown key (known: {', '.join(sorted(_KEYS[name]))})")
        for key in sorted(_KEYS[name]):
            if key not in body:
                self.fail(key, "missing")
        self.body: dict[str, object] = body

    def fail(self, key: object, problem: str) -> NoReturn:
        where = f"claim {self.name!r}" + ("" if key is None else f": key {key!r}")
        raise ClaimsError(f"{self.path}: {where}: {problem}", self.hint)

    def text(self, key: str) -> str:
        value = self.body[key]
        if not isinstance(value, str) or not value.strip():
            self.fail(key, "must be a non-empty string")
        return value.strip()

    def number(self, key: str) -> float:
        value = self.body[key]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < math.inf:
            self.fail(key, f"must be a positive number, got {value!r}")
        return float(value)

    def share(self, key: str) -> float:
        value = self.number(key)
        if value >= 1:
            self.fail(key, f"must be a precision between 0 and 1, got {value!r}")
        return value


# --- intervals of precisions ---------------------------------------------------------------

def wilson(correct: int, counted: int, z: float = Z_95) -> Interval:
    """Wilson's score interval for the proportion correct / counted (95% with the default z)."""
    if counted < 1 or not 0 <= correct <= counted:
        raise ClaimsError(f"a proportion needs 0 <= correct <= counted, counted >= 1; got {correct}/{counted}")
    p, zz = correct / counted, z * z
    centre = (p + zz / (2 * counted)) / (1 + zz / counted)
    half = z / (1 + zz / counted) * math.sqrt(p * (1 - p) / counted + zz / (4 * counted * counted))
    return Interval(max(0.0, centre - half), min(1.0, centre + half))


def newcombe(base: tuple[int, int], other: tuple[int, int], z: float = Z_95) -> Interval:
    """Newcombe's hybrid score interval (his method 10) for p_other - p_base, each p given as
    (correct, counted): it combines the two Wilson intervals' distances from their proportions."""
    p1, p2 = base[0] / base[1], other[0] / other[1]
    (l1, u1), (l2, u2) = wilson(*base, z=z), wilson(*other, z=z)
    d = p2 - p1
    return Interval(d - math.sqrt((p2 - l2) ** 2 + (u1 - p1) ** 2),
                    d + math.sqrt((u2 - p2) ** 2 + (p1 - l1) ** 2))


# --- verdicts ------------------------------------------------------------------------------

def judge_speedup(claim: SpeedupClaim, estimate: Estimate | None) -> ClaimVerdict:
    """REPRODUCED when the interval lies inside the band, NOT REPRODUCED when wholly outside it,
    INCONCLUSIVE when it straddles a bound, or without a figure resting on enough steps."""
    article = f"vs the article's {claim.value:.2f}x (band {claim.lower:.2f}-{claim.upper:.2f})"
    if estimate is None:
        return ClaimVerdict("speedup", "INCONCLUSIVE", f"INCONCLUSIVE  speed-up not measured {article}",
                            "no speed-up figure: a run has no step rate after warm-up, or did not run")
    figure = f"speed-up {estimate.text(show_samples=True)} {article}"
    interval = f"the interval ({estimate.method}) {estimate.low:.2f}-{estimate.high:.2f}"
    if not estimate.enough:
        status = "INCONCLUSIVE"
        reason = (f"too thin: the thinnest run has {estimate.fewest} step rates, fewer than the "
                  f"{MIN_STEP_RATES} a figure needs; let the runs log more steps")
    elif claim.lower <= estimate.low and estimate.high <= claim.upper:
        status, reason = "REPRODUCED", f"{interval} lies inside the band"
    elif estimate.high < claim.lower:
        status, reason = "NOT REPRODUCED", f"{interval} lies wholly below the band's lower bound {claim.lower:.2f}"
    elif estimate.low > claim.upper:
        status, reason = "NOT REPRODUCED", f"{interval} lies wholly above the band's upper bound {claim.upper:.2f}"
    else:
        bounds = [f"{name} bound {bound:.2f}" for name, bound in (("lower", claim.lower), ("upper", claim.upper))
                  if estimate.low < bound < estimate.high]
        status = "INCONCLUSIVE"
        reason = f"{interval} straddles the band's {' and '.join(bounds)}; more repetitions would narrow it"
    if estimate.n < MIN_REPETITIONS_FOR_T and status != "INCONCLUSIVE":
        reason += f"; from {estimate.n} repetition{'' if estimate.n == 1 else 's'} the interval covers the steps" \
                  " within the runs, not run-to-run drift"
    return ClaimVerdict("speedup", status, f"{status}  {figure}", reason)


def judge_learning(claim: LearningClaim, standalone: Precision | None, cluster: Precision | None) -> ClaimVerdict:
    """SAME when the difference's interval lies within +/-margin and both modes beat chance;
    DIFFERENT when it lies wholly outside, or one mode beats chance and the other does not;
    INCONCLUSIVE otherwise, or when a mode has no evaluation."""
    modes = {"standalone": standalone, "cluster": cluster}
    absent = [name for name, p in modes.items() if p is None]
    if standalone is None or cluster is None:
        shown = "; ".join(f"{name} {_precision_text(p)}" for name, p in modes.items() if p is not None)
        line = f"INCONCLUSIVE  precision @ 1 not evaluated for the {' and the '.join(absent)}" \
               + (f" ({shown})" if shown else "")
        return ClaimVerdict("learning", "INCONCLUSIVE", line,
                            f"no evaluation of the {' and the '.join(absent)} run: nothing to compare")
    counts = (standalone.correct, standalone.counted), (cluster.correct, cluster.counted)
    low, high = newcombe(*counts)
    learned = [name for name, (correct, counted) in zip(modes, counts) if wilson(correct, counted).low > claim.chance]
    difference = f"the difference's interval {low:+.3f} to {high:+.3f}"
    if high < -claim.margin or low > claim.margin:
        status, reason = "DIFFERENT", f"{difference} lies wholly outside +/-{claim.margin:.2f}"
    elif len(learned) == 1:
        other = "cluster" if learned == ["standalone"] else "standalone"
        status = "DIFFERENT"
        reason = f"the {learned[0]} is above chance ({claim.chance:.2f}) and the {other} is not"
    elif not learned:
        status, reason = "INCONCLUSIVE", f"neither mode is above chance ({claim.chance:.2f}): neither learned"
    elif -claim.margin <= low and high <= claim.margin:
        status, reason = "SAME", f"{difference} lies within +/-{claim.margin:.2f} and both modes beat chance"
    else:
        status, reason = "INCONCLUSIVE", f"{difference} straddles the margin +/-{claim.margin:.2f}"
    per_step = f" (a cluster step has {cluster.examples_seen // (cluster.step + 1)} examples)"
    gap = cluster.correct / cluster.counted - standalone.correct / standalone.counted
    line = (f"{status}  precision @ 1 at the end of each mode's run: standalone {_precision_text(standalone)}, "
            f"cluster {_precision_text(cluster)}{per_step}; difference {gap:+.3f}"
            f" (95% CI {low:+.3f} to {high:+.3f}), margin +/-{claim.margin:.2f}")
    return ClaimVerdict("learning", status, line, reason)


def _precision_text(p: Precision) -> str:
    low, high = wilson(p.correct, p.counted)
    return f"{p.precision:.3f} (95% CI {low:.3f}-{high:.3f}) after {p.examples_seen:,} examples"


def three_part_lines(logs_passed: bool, rules_checked: int, rules_failed: int,
                     speedup: ClaimVerdict, learning: ClaimVerdict) -> list[str]:
    """The end of every reproduction: the logs' verdict, the speed-up claim's, learning's."""
    rules = f"{rules_checked} rule{'' if rules_checked == 1 else 's'}, {rules_failed} failed"
    return [f"{'logs:':<10}{'PASS' if logs_passed else 'FAIL'}  ({rules})",
            f"{'claim:':<10}{speedup.line}",
            f"{'learning:':<10}{learning.line}"]
