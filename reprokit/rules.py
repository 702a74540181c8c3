"""Expected logs as rules: load the vocabulary of ``expected_logs/rules.yaml``, check records.

The vocabulary is documented at the top of the YAML file. Rules are data: patterns are regular
expressions, numbers are numbers, and a name such as ``towers`` is looked up in the context the
caller passes; nothing is evaluated. Every rule checked yields one :class:`Verdict`, passing or
not, and every failure carries its evidence (file, line number, text). :func:`summarize` folds
the verdicts into lines that end in one ``PASS`` or ``FAIL`` line.

The module is longer than our usual 250 lines: the loader and the five checks share the rule
types, and keeping them together keeps the vocabulary in one place.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple, NoReturn, Union

import yaml

from .errors import KitError
from .logs import LOG_EVERY, LogRecord, StepFields

MODES = ("standalone", "cluster")
SCOPES = ("format", "run")
FIELDS = ("step", "loss", "examples_per_sec", "sec_per_batch")
RECORD_KINDS = ("step", "filling_queue", "other")

# A number written in the rules, or the name of a context variable such as ``towers``.
Value = Union[int, str]


class RulesError(KitError):
    """The rules file is malformed, or a rule needs a context variable the caller did not pass."""


@dataclass(frozen=True)
class PatternCheck:
    """Lines matching ``regex`` (among records of ``kind``, if given) number ``relation value``."""

    regex: re.Pattern[str]
    relation: str  # exactly | at_least | at_most
    value: Value
    kind: str | None = None


@dataclass(frozen=True)
class StepsCheck:
    """The step lines are ``first, first + every, ...`` each once, up to ``last`` if given."""

    every: Value
    first: Value
    last: Value | None = None


@dataclass(frozen=True)
class OrderCheck:
    """In each file, every line matching ``earlier`` precedes the first line matching ``later``."""

    earlier: re.Pattern[str]
    later: re.Pattern[str]


@dataclass(frozen=True)
class ReferenceCheck:
    """A step field at the first, the last or every step line lies within [lower, upper]."""

    field: str
    at: str  # first | last | all
    lower: float | None
    upper: float | None
    value: float | None = None
    unit: str = ""


@dataclass(frozen=True)
class CompareCheck:
    """A step field at the ``at`` step line is ``relation`` (below, above) its value at ``other``."""

    field: str
    at: str  # first | last
    relation: str
    other: str


Check = Union[PatternCheck, StepsCheck, OrderCheck, ReferenceCheck, CompareCheck]


@dataclass(frozen=True)
class Rule:
    name: str
    description: str
    applies_to: tuple[str, ...]
    scope: str
    check: Check


class Evidence(NamedTuple):
    """A line that shows why; ``line`` is None when the evidence is a whole file searched."""

    path: Path
    line: int | None
    text: str


@dataclass(frozen=True)
class Verdict:
    rule: str
    mode: str
    passed: bool
    message: str
    evidence: list[Evidence]


@dataclass(frozen=True)
class Summary:
    """All verdicts folded: ``lines`` end with ``PASS`` or ``FAIL``; ``text`` joins them."""

    passed: bool
    checked: int
    failed: list[str]
    lines: list[str]

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


# --- loading -------------------------------------------------------------------------------

_COMMON = ("name", "description", "applies_to", "scope")
_KINDS: dict[str, tuple[set[str], set[str]]] = {  # kind -> (required, optional) sub-keys
    "pattern": (set(), set()),  # a string, not a mapping; its companions are below
    "steps": ({"every", "first"}, {"last"}),
    "order": ({"earlier", "later"}, set()),
    "reference": ({"field", "at"}, {"value", "lower", "upper", "unit"}),
    "compare": ({"field", "at"}, {"below", "above"}),
}
_PATTERN_COMPANIONS = ("count", "kind")


def load_rules(path: Path) -> list[Rule]:
    """Read and validate a rules file; raise RulesError naming the rule and key at fault."""
    hint = f"see the vocabulary in the comment block at the top of {path}"
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as err:
        raise RulesError(f"cannot read the rules file {path}: {err}") from None
    except yaml.YAMLError as err:
        raise RulesError(f"{path} is not valid YAML: {err}", hint) from None
    if not isinstance(data, dict) or set(data) != {"rules"} or not isinstance(data["rules"], list):
        raise RulesError(f"{path}: expected one top-level key, 'rules', holding a list", hint)
    rules: list[Rule] = []
    for index, entry in enumerate(data["rules"], start=1):
        rule = _Reader(path, index, hint).rule(entry)
        if any(r.name == rule.name for r in rules):
            raise RulesError(f"{path}: rule {rule.name!r} is defined twice", hint)
        rules.append(rule)
    return rules


class _Reader:
    """Reads one rule's mapping; every complaint names the rule (once its name is known)."""

    def __init__(self, path: Path, index: int, hint: str) -> None:
        self.path, self.label, self.hint = path, f"rule #{index}", hint

    def fail(self, problem: str) -> NoReturn:
        raise RulesError(f"{self.path}: {self.label}: {problem}", self.hint)

    def rule(self, entry: Any) -> Rule:
        if not isinstance(entry, dict):
            self.fail(f"expected a mapping, got {entry!r}")
        name = entry.get("name")
        if not isinstance(name, str) or not re.fullmatch(r"[a-z][a-z0-9_]*", name):
            self.fail(f"'name' must be a snake_case string, got {name!r}")
        self.label = f"rule {name!r}"
        kinds = [key for key in entry if key in _KINDS]
        for key in entry:
            companion = key in _PATTERN_COMPANIONS and kinds == ["pattern"]
            if key not in _COMMON and key not in _KINDS and not companion:
                self.fail(f"unknown key {key!r}")
        if len(kinds) != 1:
            self.fail(f"needs exactly one check among {', '.join(_KINDS)}; has {kinds or 'none'}")
        missing = [key for key in _COMMON if key not in entry]
        if missing:
            self.fail(f"missing {', '.join(missing)}")
        description, modes, scope = entry["description"], entry["applies_to"], entry["scope"]
        if not isinstance(description, str) or not description.strip():
            self.fail("'description' must be a non-empty string")
        if not isinstance(modes, list) or not modes or not set(modes) <= set(MODES):
            self.fail(f"'applies_to' must list modes among {MODES}, got {modes!r}")
        if scope not in SCOPES:
            self.fail(f"'scope' must be one of {SCOPES}, got {scope!r}")
        return Rule(name, description.strip(), tuple(modes), scope, self.check(kinds[0], entry))

    def check(self, kind: str, entry: dict[str, Any]) -> Check:
        if kind == "pattern":
            if "count" not in entry:
                self.fail("a pattern needs a count")
            count = self.mapping(entry["count"], "count", {"exactly", "at_least", "at_most"})
            if len(count) != 1:
                self.fail("count needs exactly one of exactly, at_least, at_most")
            (relation, value), = count.items()
            record_kind = entry.get("kind")
            if record_kind is not None and record_kind not in RECORD_KINDS:
                self.fail(f"'kind' must be one of {RECORD_KINDS}, got {record_kind!r}")
            regex = self.regex(entry["pattern"], "pattern")
            return PatternCheck(regex, relation, self.value(value, f"count.{relation}"), record_kind)
        required, optional = _KINDS[kind]
        body = self.mapping(entry[kind], kind, required | optional)
        missing = sorted(required - set(body))
        if missing:
            self.fail(f"{kind} needs {', '.join(missing)}")
        if kind == "steps":
            if body["every"] == 0:
                self.fail("steps.every must be at least 1")
            last = body.get("last")
            return StepsCheck(self.value(body["every"], "steps.every"),
                              self.value(body["first"], "steps.first"),
                              None if last is None else self.value(last, "steps.last"))
        if kind == "order":
            return OrderCheck(self.regex(body["earlier"], "order.earlier"),
                              self.regex(body["later"], "order.later"))
        if body["field"] not in FIELDS:
            self.fail(f"{kind}.field must be one of {FIELDS}, got {body['field']!r}")
        if kind == "reference":
            if body["at"] not in ("first", "last", "all"):
                self.fail(f"reference.at must be first, last or all, got {body['at']!r}")
            lower, upper, value = (self.number(body.get(k), f"reference.{k}")
                                   for k in ("lower", "upper", "value"))
            if lower is None and upper is None:
                self.fail("reference needs a lower or an upper bound")
            return ReferenceCheck(body["field"], body["at"], lower, upper, value,
                                  str(body.get("unit", "")))
        relations = [key for key in ("below", "above") if key in body]
        if len(relations) != 1:
            self.fail("compare needs exactly one of below, above")
        ends = (body["at"], body[relations[0]])
        if not set(ends) <= {"first", "last"} or ends[0] == ends[1]:
            self.fail(f"compare.at and compare.{relations[0]} must be first and last, got {ends}")
        return CompareCheck(body["field"], body["at"], relations[0], body[relations[0]])

    def mapping(self, body: Any, key: str, allowed: set[str]) -> dict[str, Any]:
        if not isinstance(body, dict):
            self.fail(f"{key} must be a mapping with keys among {sorted(allowed)}")
        for sub in body:
            if sub not in allowed:
                self.fail(f"unknown key {key}.{sub} (known: {', '.join(sorted(allowed))})")
        return body

    def regex(self, text: Any, key: str) -> re.Pattern[str]:
        if not isinstance(text, str):
            self.fail(f"{key} must be a string holding a regular expression")
        try:
            return re.compile(text)
        except re.error as err:
            self.fail(f"{key} is not a valid regular expression ({err}): {text}")

    def value(self, value: Any, key: str) -> Value:
        if isinstance(value, str) and value.isidentifier():
            return value
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            self.fail(f"{key} must be a whole number >= 0 or a context variable, got {value!r}")
        return value

    def number(self, value: Any, key: str) -> float | None:
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
            self.fail(f"{key} must be a number, got {value!r}")
        return None if value is None else float(value)


# --- context -------------------------------------------------------------------------------

def article_context(mode: str, workers: int = 2) -> dict[str, int]:
    """The context for a log of unknown length (the article's): one input tower per worker."""
    if mode not in MODES:
        raise RulesError(f"unknown mode {mode!r}; expected one of {MODES}")
    return {"towers": 1 if mode == "standalone" else workers}


def run_context(mode: str, max_steps: int, workers: int = 2) -> dict[str, int]:
    """The context for our finished run of ``max_steps`` steps: towers and last_logged_step."""
    if max_steps < 1:
        raise RulesError(f"max_steps must be at least 1, got {max_steps}")
    last = ((max_steps - 1) // LOG_EVERY) * LOG_EVERY
    return {**article_context(mode, workers), "last_logged_step": last}


# --- checking ------------------------------------------------------------------------------

def check_logs(
    mode: str,
    records: list[LogRecord],
    rules: list[Rule],
    context: Mapping[str, int],
    scope: set[str],
    *,
    sources: Sequence[Path] | None = None,
) -> list[Verdict]:
    """Check every rule for ``mode`` whose scope is in ``scope``; one verdict per rule.

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
            for rule in rules if mode in rule.applies_to and rule.scope in scope]


def summarize(verdicts: Sequence[Verdict], max_evidence: int = 10) -> Summary:
    """One line per verdict with each failure's evidence under it, counts, then PASS or FAIL.

    No verdict at all is a FAIL: a check that checked nothing has shown nothing.
    """
    lines: list[str] = []
    for v in verdicts:
        lines.append(f"{'PASS' if v.passed else 'FAIL'} {v.rule} [{v.mode}]: {v.message}")
        if not v.passed:
            for e in v.evidence[:max_evidence]:
                lines.append(f"    {e.path}{'' if e.line is None else f':{e.line}'}: {e.text}")
            if len(v.evidence) > max_evidence:
                lines.append(f"    ... and {len(v.evidence) - max_evidence} more")
    failed = [v.rule for v in verdicts if not v.passed]
    lines.append(f"{len(verdicts)} rules checked, {len(failed)} failed"
                 if verdicts else "no rule was checked")
    passed = bool(verdicts) and not failed
    lines.append("PASS" if passed else "FAIL")
    return Summary(passed, len(verdicts), failed, lines)


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
        else:
            outcome = self.compare(c)
        return Verdict(self.rule.name, self.mode, *outcome)

    def resolve(self, value: Value, key: str) -> int:
        if isinstance(value, int):
            return value
        if value not in self.context:
            raise RulesError(
                f"rule {self.rule.name!r}: {key} names the context variable {value!r},"
                f" which was not passed (given: {', '.join(sorted(self.context)) or 'none'})",
                "build the context with reprokit.rules.run_context or article_context")
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
