"""`invoke verify`: inspect before anything changes; one verdict per check."""

from __future__ import annotations

from dataclasses import dataclass

from reprokit.errors import KitError
from reprokit.judge.claims import load_claims
from reprokit.judge.judgement import judge_article
from reprokit.programs import PROGRAMS
from reprokit.settings import Settings
from reprokit.sources import series, workspace
from reprokit.sources.upstream import check_upstream


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str


def _upstream_checks(settings: Settings) -> list[Check]:
    checks = []
    for c in check_upstream(settings.upstream_dir):
        if c.ok:
            detail = f"sha256 {c.found[:16]}… as recorded"  # type: ignore[index]
        elif c.found is None:
            detail = "MISSING: restore it with `git checkout upstream/`"
        else:
            detail = (f"DRIFTED: sha256 {c.found[:16]}…, recorded {c.expected[:16]}…; "
                      "restore it with `git checkout upstream/`")
        checks.append(Check(f"upstream/{c.name}", c.ok, detail))
    return checks


def _patch_checks(settings: Settings) -> list[Check]:
    try:
        walked = series.walk(settings.upstream_dir, settings.patches_dir, strict=False)
    except KitError as exc:
        return [Check("patches/series", False, str(exc))]
    checks = []
    for step in walked.steps:
        patch = step.patch
        if patch is None:
            checks.append(Check(f"parse {step.path.name}", False, "; ".join(str(e) for e in step.errors)))
            continue
        checks.append(Check(
            f"parse {patch.name}", True,
            f"{patch.source_name} -> {patch.target_name}: {len(patch.hunks)} hunks, "
            f"+{patch.added} -{patch.removed}; {patch.summary}"))
        errors = step.errors if step.source is not None else [
            KitError(f"its source {patch.source_name} cannot be made: it is not in upstream/, and the earlier "
                     "patch that makes it is missing or does not apply (see its line above)")]
        checks.append(Check(
            f"strict {patch.name}", not errors,
            "every hunk's context and removed lines match at the stated lines (no fuzz, no offset)"
            if not errors else "; ".join(str(e) for e in errors)))
    return checks


def _state_checks(settings: Settings) -> list[Check]:
    try:
        states = workspace.states(settings.upstream_dir, settings.patches_dir, settings.sources_dir)
    except KitError as exc:
        return [Check("patch state", False, str(exc))]
    return [Check(f"state {s.patch}", s.state != "conflicting",
                  f"{s.state} ({settings.sources_dir.name}/{s.target})" + (f": {s.detail}" if s.detail else ""))
            for s in states]


def _rules_check(settings: Settings) -> Check:
    try:
        article = load_claims(settings.claims, list(PROGRAMS)).speedup["article"]
        summary = judge_article(settings.article_logs, settings.rules, article.workers)
    except KitError as exc:
        return Check("expected_logs", False, str(exc))
    detail = (f"the article's logs pass all {summary.checked} format rules" if summary.passed
              else "the article's logs fail: " + ", ".join(summary.failed))
    return Check("expected_logs", summary.passed, detail)


def run_checks(settings: Settings) -> list[Check]:
    """Every check, in order; none of them changes anything."""
    try:
        upstream = _upstream_checks(settings)
    except KitError as exc:
        upstream = [Check("upstream checksums", False, str(exc))]
    return upstream + _patch_checks(settings) + _state_checks(settings) + [_rules_check(settings)]
