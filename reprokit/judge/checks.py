"""Check parsed log records against the rules of reprokit.judge.rules; fold verdicts into PASS/FAIL.

Every rule checked yields one Verdict, passing or not, and every failure carries its evidence
(file, line number, text). results.json keeps the verdicts as they are, with MAX_EVIDENCE lines
of evidence each.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from reprokit.judge.logs import LogRecord, StepFields
from reprokit.judge.speed import SpeedError, intervals
from reprokit.judge.rules import (
    MODES,
    SCOPES,
    ClockCheck,
    CompareCheck,
    OrderCheck,
    PatternCheck,
    ReferenceCheck,
    Rule,
    RulesError,
    StepsCheck,
    TrendCheck,
    Value,
)

# Fewer timed intervals than this, and a program's figures are too few to hold to the kit's clock.
MIN_INTERVALS = 3
# The evidence lines a verdict shows, in the summary and in results.json: enough to see why,
# not a whole log.
MAX_EVIDENCE = 10


@dataclass(frozen=True)
class Evidence:
    """A line that shows why; ``line`` is None when the evidence is a whole file searched."""

    path: Path
    line: int | None
    text: str


@dataclass(frozen=True)
class Verdict:
    """One rule checked on one mode's records; ``severity`` is the rule's."""

    rule: str
    mode: str
    passed: bool
    severity: str
    message: str
    evidence: list[Evidence]


@dataclass(frozen=True)
class Summary:
    """All verdicts folded: ``lines`` end with ``PASS`` or ``FAIL``; ``text`` joins them."""

    passed: bool
    checked: int
    failed: list[str]
    lines: list[str]
    warned: list[str] = field(default_factory=list)  # warning rules that did not hold

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


def check_logs(
    mode: str,
    records: list[LogRecord],
    rules: list[Rule],
    context: Mapping[str, int],
    scope: set[str],
    *,
    program: str,
    sources: Sequence[Path] | None = None,
) -> list[Verdict]:
    """Check every rule for ``mode`` and ``program`` whose scope is in ``scope``; one verdict per rule.

    Give the trainer's records: ``standalone.log``, or the cluster's ``client.log``.
    ``sources`` names the files searched, for the messages about missing lines; by default,
    the files the records come from (pass it when a log may be empty).
    """
    if mode not in MODES:
        raise RulesError(f"unknown mode {mode!r}; expected one of {MODES}")
    if not scope or not scope <= set(SCOPES):
        raise RulesError(f"scope must be a non-empty subset of {SCOPES}, got {sorted(scope)}")
    files = list(sources) if sources is not None else list(dict.fromkeys(r.path for r in records))
    return [_Checker(rule, mode, records, context, files).verdict()
            for rule in rules if mode in rule.applies_to and rule.scope in scope
            and (not rule.programs or program in rule.programs)]


def summarize(verdicts: Sequence[Verdict]) -> Summary:
    """One line per verdict with each failure's evidence under it, counts, then PASS or FAIL.

    No verdict at all is a FAIL: a check that checked nothing has shown nothing. A warning
    rule that does not hold is shown as WARN, with its evidence, and does not fail the verdict.
    """
    lines: list[str] = []
    for v in verdicts:
        word = "PASS" if v.passed else ("WARN" if v.severity == "warning" else "FAIL")
        lines.append(f"{word} {v.rule} [{v.mode}]: {v.message}")
        if not v.passed:
            for e in v.evidence[:MAX_EVIDENCE]:
                lines.append(f"    {e.path}{'' if e.line is None else f':{e.line}'}: {e.text}")
            if len(v.evidence) > MAX_EVIDENCE:
                lines.append(f"    ... and {len(v.evidence) - MAX_EVIDENCE} more")
    failed = [v.rule for v in verdicts if not v.passed and v.severity != "warning"]
    warned = [v.rule for v in verdicts if not v.passed and v.severity == "warning"]
    lines.append(f"{len(verdicts)} rules checked, {len(failed)} failed"
                 + (f", {len(warned)} warnings" if warned else "") if verdicts else "no rule was checked")
    passed = bool(verdicts) and not failed
    lines.append("PASS" if passed else "FAIL")
    return Summary(passed, len(verdicts), failed, lines, warned)


Outcome = tuple[bool, str, list[Evidence]]


def _ev(record: LogRecord) -> Evidence:
    return Evidence(record.path, record.line, record.text)


def _lines(n: int) -> str:
    return f"{n} line" if n == 1 else f"{n} lines"


class _Checker:
    """One rule against one set of records; one method per kind of check, each an Outcome."""

    def __init__(self, rule: Rule, mode: str, records: list[LogRecord],
                 context: Mapping[str, int], files: list[Path]) -> None:
        self.rule, self.mode, self.records, self.context, self.files = (
            rule, mode, records, context, files)
        self.steps: list[tuple[LogRecord, StepFields]] = [
            (r, r.step) for r in records if r.step is not None]

    def verdict(self) -> Verdict:
        c = self.rule.check
        if isinstance(c, PatternCheck):
            outcome = self.pattern(c)
        elif isinstance(c, StepsCheck):
            outcome = self.step_sequence(c)
        elif isinstance(c, OrderCheck):
            outcome = self.order(c)
        elif isinstance(c, ReferenceCheck):
            outcome = self.reference(c)
        elif isinstance(c, CompareCheck):
            outcome = self.compare(c)
        elif isinstance(c, ClockCheck):
            outcome = self.clock(c)
        else:
            outcome = self.trend(c)
        passed, message, evidence = outcome
        return Verdict(self.rule.name, self.mode, passed, self.rule.severity, message, evidence)

    def resolve(self, value: Value, key: str) -> int:
        if isinstance(value, int):
            return value
        if value not in self.context:
            raise RulesError(
                f"rule {self.rule.name!r}: {key} names the context variable {value!r},"
                f" which was not passed (given: {', '.join(sorted(self.context)) or 'none'})",
                "build the context with reprokit.judge.rules.run_context or article_context")
        return self.context[value]

    def named(self, value: Value, key: str) -> str:
        number = self.resolve(value, key)
        return f"{number} ({value})" if isinstance(value, str) else str(number)

    def looked_in(self) -> str:
        if not self.files:
            return "looked in no file: no records were given"
        sizes = {path: sum(r.path == path for r in self.records) for path in self.files}
        return "looked in " + ", ".join(f"{path} ({_lines(n)})" for path, n in sizes.items())

    def none_found(self, what: str, expected: str) -> Outcome:
        evidence = [Evidence(path, None, f"no {what} in this file") for path in self.files]
        return False, f"expected {expected}; found no {what}; {self.looked_in()}", evidence

    def pattern(self, c: PatternCheck) -> Outcome:
        hits = [r for r in self.records
                if (c.kind is None or r.kind == c.kind) and c.regex.search(r.text)]
        want = self.resolve(c.value, f"count.{c.relation}")
        ok = {"exactly": len(hits) == want, "at_least": len(hits) >= want,
              "at_most": len(hits) <= want}[c.relation]
        among = f" of kind {c.kind!r}" if c.kind else ""
        expected = f"{c.relation.replace('_', ' ')} {self.named(c.value, 'count')}"
        verb = "matches" if len(hits) == 1 else "match"
        message = f"{_lines(len(hits))}{among} {verb} /{c.regex.pattern}/, expected {expected}"
        if ok:
            return True, message, [_ev(r) for r in hits]
        if len(hits) > want:  # too many: the lines themselves are the evidence
            return False, message, [_ev(r) for r in hits]
        evidence = [_ev(r) for r in hits] or [
            Evidence(p, None, "no matching line in this file") for p in self.files]
        return False, f"{message}; {self.looked_in()}", evidence

    def step_sequence(self, c: StepsCheck) -> Outcome:
        every, first = self.resolve(c.every, "steps.every"), self.resolve(c.first, "steps.first")
        if every < 1:
            raise RulesError(f"rule {self.rule.name!r}: steps.every must be at least 1")
        last = None if c.last is None else self.resolve(c.last, "steps.last")
        span = f"step lines every {every} steps from step {first}"
        if c.last is not None:
            span += f" to step {self.named(c.last, 'steps.last')}"
        if not self.steps:
            return self.none_found("step line", span)
        problems: list[str] = []
        evidence: list[Evidence] = []
        expected, seen = first, dict[int, LogRecord]()
        prev: tuple[LogRecord, StepFields] | None = None
        for r, f in self.steps:
            if f.step == expected:
                expected += every
            elif f.step in seen:
                problems.append(f"step {f.step} at {r.where} repeats {seen[f.step].where}")
                evidence += [_ev(seen[f.step]), _ev(r)]
            elif f.step < expected:
                problems.append(f"step {f.step} at {r.where} comes after a later step")
                evidence.append(_ev(r))
            else:
                after = "first" if prev is None else f"after step {prev[1].step}"
                problems.append(f"expected step {expected} {after}, found step {f.step} at {r.where}")
                evidence += ([] if prev is None else [_ev(prev[0])]) + [_ev(r)]
                expected = f.step + every
            seen.setdefault(f.step, r)
            prev = (r, f)
        top = max(seen)
        if last is not None and top != last:
            why = "the log stops early" if top < last else "it goes past the last step"
            problems.append(f"the last step line is step {top} at {seen[top].where}: {why}")
            evidence.append(_ev(seen[top]))
        if problems:
            return False, f"expected {span}, each once: " + "; ".join(problems), evidence
        return True, f"{len(self.steps)} {span}", [_ev(self.steps[0][0]), _ev(seen[top])]

    def order(self, c: OrderCheck) -> Outcome:
        problems, notes, evidence = [], [], []
        for path in dict.fromkeys(r.path for r in self.records):
            lines = [r for r in self.records if r.path == path]
            later = next((r for r in lines if c.later.search(r.text)), None)
            if later is None:
                notes.append(f"{path}: no line matches /{c.later.pattern}/, nothing to order")
                continue
            late = [r for r in lines if r.line > later.line and c.earlier.search(r.text)]
            first = f"the first line matching /{c.later.pattern}/ at {later.where}"
            if late:
                problems.append(f"expected every line matching /{c.earlier.pattern}/ before"
                                f" {first}; {_lines(len(late))} after it")
                evidence += [_ev(later)] + [_ev(r) for r in late]
            else:
                notes.append(f"every line matching /{c.earlier.pattern}/ comes before {first}")
                evidence.append(_ev(later))
        if problems:
            return False, "; ".join(problems), evidence
        return True, "; ".join(notes) or "no records: nothing to order", evidence

    def reference(self, c: ReferenceCheck) -> Outcome:
        low = "-inf" if c.lower is None else f"{c.lower:g}"
        high = "inf" if c.upper is None else f"{c.upper:g}"
        bounds = f"[{low}, {high}]" + (f" {c.unit}" if c.unit else "")
        if c.value is not None:
            bounds += f" (reference {c.value:g})"
        if not self.steps:
            return self.none_found("step line", f"a step line whose {c.field} lies in {bounds}")
        chosen = {"first": self.steps[:1], "last": self.steps[-1:], "all": self.steps}[c.at]

        def inside(f: StepFields) -> bool:  # nan compares false with everything: it fails
            v = float(getattr(f, c.field))
            return (c.lower is None or v >= c.lower) and (c.upper is None or v <= c.upper)

        bad = [(r, f) for r, f in chosen if not inside(f)]
        shown = ", ".join(f"step {f.step}: {getattr(f, c.field):g}" for _, f in (bad or chosen)[:5])
        which = f"the {c.at} step line's" if c.at != "all" else f"all {len(chosen)} step lines'"
        if bad:
            return (False, f"{len(bad)} of {len(chosen)} step lines have {c.field} outside"
                    f" {bounds}: {shown}", [_ev(r) for r, _ in bad])
        return True, f"{which} {c.field} within {bounds}: {shown}", [_ev(chosen[0][0])]

    def compare(self, c: CompareCheck) -> Outcome:
        if not self.steps:
            return self.none_found("step line", f"step lines to compare {c.field} on")
        if len(self.steps) == 1:
            only = self.steps[0][0]
            return True, f"only one step line ({only.where}): nothing to compare", [_ev(only)]
        ends = {"first": self.steps[0], "last": self.steps[-1]}
        (ra, fa), (rb, fb) = ends[c.at], ends[c.other]
        va, vb = float(getattr(fa, c.field)), float(getattr(fb, c.field))
        ok = va < vb if c.relation == "below" else va > vb
        message = (f"{c.field} at the {c.at} step line (step {fa.step}: {va:g}) is"
                   f" {'' if ok else 'not '}{c.relation} the {c.other} one's (step {fb.step}: {vb:g})")
        return ok, message, sorted([_ev(ra), _ev(rb)], key=lambda e: e.line or 0)

    def trend(self, c: TrendCheck) -> Outcome:
        if not self.steps:
            return self.none_found("step line", f"step lines to judge the trend of {c.field} on")
        (first_record, first), later = self.steps[0], self.steps[1:]
        if len(later) < c.window:
            return (True, f"not judged: {len(later) + 1} step line{'s' if later else ''}, and the trend needs the"
                    f" first plus a window of {c.window} (a run of {10 * c.window + 1} steps or more)",
                    [_ev(first_record)])
        window = later[-c.window:]
        values = [float(getattr(f, c.field)) for _, f in window]
        median, start = statistics.median(values), float(getattr(first, c.field))
        ok = median < start if c.relation == "below" else median > start
        shown = ", ".join(f"step {f.step}: {getattr(f, c.field):g}" for _, f in window)
        message = (f"the median {c.field} of the last {c.window} step lines ({shown}) is {median:g},"
                   f" {'' if ok else 'not '}{c.relation} the first one's (step {first.step}: {start:g})")
        return ok, message, [_ev(first_record), *(_ev(r) for r, _ in window)]

    def clock(self, c: ClockCheck) -> Outcome:
        examples = self.resolve(c.examples, "clock.examples")
        try:
            agreement = clock_agreement(self.records, examples)
        except SpeedError as error:
            return False, error.message, [Evidence(path, None, "no timestamps of the kit's") for path in self.files]
        if agreement is None:
            timed = len(self.steps) - 1 if self.steps else 0
            return (True, f"not judged: fewer than {MIN_INTERVALS} timed intervals between step lines ({max(timed, 0)}),"
                    " and agreement needs them", [_ev(r) for r, _ in self.steps[:1]])
        ok = c.lower <= agreement.ratio <= c.upper
        message = (f"the program's own examples/sec is {agreement.ratio:.2f}x the kit's clock (median over the "
                   f"{agreement.intervals} intervals between step lines of each closing line's figure over the "
                   f"interval's rate, {self.named(c.examples, 'clock.examples')} examples a step as planned; medians "
                   f"{agreement.own:.1f} and {agreement.kit:.1f}), {'within' if ok else 'outside'} "
                   f"[{c.lower:g}, {c.upper:g}]")
        if not ok:
            message += (": its timer or its count of examples disagrees with what the kit measured"
                        if agreement.ratio > c.upper else ": it says it is slower than the kit measured it")
        return ok, message, [_ev(r) for r, f in self.steps if f.step in agreement.closing]


@dataclass(frozen=True)
class ClockAgreement:
    """A program's own figures against the kit's clock, over one log's timed intervals."""

    ratio: float  # the median of each closing line's examples/sec over its interval's rate
    own: float  # the median of the program's own figures on those lines
    kit: float  # the median of the kit's rates
    intervals: int
    closing: frozenset[int]  # the steps of the lines that close an interval


def clock_agreement(records: Sequence[LogRecord], examples: int) -> ClockAgreement | None:
    """The program's figures held to the kit's clock (``examples`` a step, as planned); None with
    fewer than MIN_INTERVALS intervals. Each line's claim is paired with the interval it closes, so
    that a run still speeding up (its steps at the end of an interval quicker than the interval's
    mean) moves few pairs."""
    timed = intervals(records)
    if len(timed) < MIN_INTERVALS:
        return None
    ratio = statistics.median(i.reported / i.rate(examples) for i in timed)
    return ClockAgreement(ratio, statistics.median(i.reported for i in timed),
                          statistics.median(i.rate(examples) for i in timed), len(timed),
                          frozenset(i.last for i in timed))
