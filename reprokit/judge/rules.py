"""Expected logs as rules: the vocabulary of ``expected_logs/rules.yaml`` and its loader.

The vocabulary is documented at the top of the YAML file. Rules are data: patterns are regular
expressions, numbers are numbers, and a name such as ``towers`` is looked up in the context the
caller passes; nothing is evaluated. Every rule checked yields one :class:`Verdict`, passing or
not, and every failure carries its evidence (file, line number, text).

This module is the vocabulary and its loader. Checking, and folding the verdicts into lines that
end in one ``PASS`` or ``FAIL`` (``summarize``), live in :mod:`reprokit.judge.checks`, with the verdict
types.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn, Union

from reprokit.errors import KitError
from reprokit.judge.datafile import load_section, vocabulary_hint
from reprokit.judge.logs import LOG_EVERY
from reprokit.judge.speed import examples_per_step
from reprokit.names import MODES  # re-exported: checks.py reads it from here
from reprokit.programs import PROGRAMS

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


@dataclass(frozen=True)
class TrendCheck:
    """The median of a step field over the last ``window`` step lines (the first one never among
    them) is ``relation`` (below, above) its value at the first step line. One batch's spike
    moves a median of three or more lines by at most one place, so it cannot flip the verdict."""

    field: str
    window: int
    relation: str


@dataclass(frozen=True)
class ClockCheck:
    """What the program prints of its own speed agrees with the kit's clock: the median, over the
    timed intervals, of each closing line's examples/sec over the kit's rate of that interval
    (``examples`` a step as the plan gave them), lies within [lower, upper]. A program whose timer
    runs slow, or that counts examples it did not train, falls outside."""

    lower: float
    upper: float
    examples: Value


Check = Union[PatternCheck, StepsCheck, OrderCheck, ReferenceCheck, CompareCheck, TrendCheck, ClockCheck]


@dataclass(frozen=True)
class Rule:
    name: str
    description: str
    applies_to: tuple[str, ...]
    scope: str
    check: Check
    severity: str = "error"  # "warning": reported, but does not fail the verdict
    programs: tuple[str, ...] = ()  # the programs whose logs it describes; () for every program


# --- loading -------------------------------------------------------------------------------

_COMMON = ("name", "description", "applies_to", "scope")
_OPTIONAL_COMMON = ("severity", "programs")
SEVERITIES = ("error", "warning")
_KINDS: dict[str, tuple[set[str], set[str]]] = {  # kind -> (required, optional) sub-keys
    "pattern": (set(), set()),  # a string, not a mapping; its companions are below
    "steps": ({"every", "first"}, {"last"}),
    "order": ({"earlier", "later"}, set()),
    "reference": ({"field", "at"}, {"value", "lower", "upper", "unit"}),
    "compare": ({"field", "at"}, {"below", "above"}),
    "trend": ({"field", "window"}, {"below", "above"}),
    "clock": ({"lower", "upper", "examples"}, set()),
}
_PATTERN_COMPANIONS = ("count", "kind")


def load_rules(path: Path) -> list[Rule]:
    """Read and validate a rules file; raise RulesError naming the rule and key at fault."""
    hint = vocabulary_hint(path)
    entries = load_section(path, "rules", list, RulesError, "rules")
    assert isinstance(entries, list)  # load_section checked it
    rules: list[Rule] = []
    for index, entry in enumerate(entries, start=1):
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
            if key not in _COMMON and key not in _OPTIONAL_COMMON and key not in _KINDS and not companion:
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
        severity = entry.get("severity", "error")
        if severity not in SEVERITIES:
            self.fail(f"'severity' must be one of {SEVERITIES}, got {severity!r}")
        programs = entry.get("programs", [])
        if not isinstance(programs, list) or not all(isinstance(p, str) and p in PROGRAMS for p in programs):
            self.fail(f"'programs' must list program names (patches/series: {', '.join(PROGRAMS)}), got {programs!r}")
        return Rule(name, description.strip(), tuple(modes), scope, self.check(kinds[0], entry), severity,
                    tuple(programs))

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
        if kind == "clock":
            lower, upper = (self.number(body[k], f"clock.{k}") for k in ("lower", "upper"))
            if lower is None or upper is None or not 0 < lower < 1 < upper:
                self.fail(f"clock needs 0 < lower < 1 < upper (a ratio of medians), got {lower} and {upper}")
            return ClockCheck(lower, upper, self.value(body["examples"], "clock.examples"))
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
            self.fail(f"{kind} needs exactly one of below, above")
        if kind == "trend":
            window = body["window"]
            if isinstance(window, bool) or not isinstance(window, int) or window < 3:
                self.fail(f"trend.window must be a whole number of at least 3 (a median that one spike"
                          f" cannot flip), got {window!r}")
            if body[relations[0]] != "first":
                self.fail(f"trend.{relations[0]} must be first, got {body[relations[0]]!r}")
            return TrendCheck(body["field"], window, relations[0])
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

def article_context(mode: str, workers: int) -> dict[str, int]:
    """The context for a log of unknown length (the article's): one input tower per worker, and
    one process, which the judge counts again for a cluster restarted as a whole."""
    if mode not in MODES:
        raise RulesError(f"unknown mode {mode!r}; expected one of {MODES}")
    towers = 1 if mode == "standalone" else workers
    return {"towers": towers, "incarnations": 1, "tower_starts": towers}


def run_context(mode: str, max_steps: int, workers: int) -> dict[str, int]:
    """The context for our finished run of ``max_steps`` steps: towers, last_logged_step and the
    examples the plan gives a step (examples_per_step)."""
    if max_steps < 1:
        raise RulesError(f"max_steps must be at least 1, got {max_steps}")
    last = ((max_steps - 1) // LOG_EVERY) * LOG_EVERY
    return {**article_context(mode, workers), "last_logged_step": last,
            "examples_per_step": examples_per_step(mode, workers)}
