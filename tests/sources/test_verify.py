"""`invoke verify`'s checks: one verdict per check, every failure with its evidence, nothing changed."""

from __future__ import annotations

import shutil

import pytest

from reprokit import views
from reprokit.sources import workspace
from reprokit.sources.verify import Check, run_checks
from tests.support import read_lines

TRAINER = "cifar10_multi_gpu_train.py"
CHECK_NAMES = [
    "upstream/cifar10_input.py", "upstream/cifar10.py", f"upstream/{TRAINER}", "upstream/cifar10_eval.py",
    "parse cifar10_standalone_train.patch", "strict cifar10_standalone_train.patch",
    "parse cifar10_cluster_train.patch", "strict cifar10_cluster_train.patch",
    "parse cifar10_lesson_standalone_train.patch", "strict cifar10_lesson_standalone_train.patch",
    "parse cifar10_lesson_cluster_train.patch", "strict cifar10_lesson_cluster_train.patch",
    "parse cifar10_tf2_standalone_train.patch", "strict cifar10_tf2_standalone_train.patch",
    "parse cifar10_tf2_mirrored_train.patch", "strict cifar10_tf2_mirrored_train.patch",
    "parse cifar10_tf2_ps_train.patch", "strict cifar10_tf2_ps_train.patch",
    "parse cifar10_lesson_resumable_train.patch", "strict cifar10_lesson_resumable_train.patch",
    "state cifar10_standalone_train.patch", "state cifar10_cluster_train.patch",
    "state cifar10_lesson_standalone_train.patch", "state cifar10_lesson_cluster_train.patch",
    "state cifar10_tf2_standalone_train.patch", "state cifar10_tf2_mirrored_train.patch",
    "state cifar10_tf2_ps_train.patch", "state cifar10_lesson_resumable_train.patch",
    "expected_logs",
]


def by_name(checks: list[Check]) -> dict[str, Check]:
    return {c.name: c for c in checks}


def failed(checks: list[Check]) -> list[str]:
    return [c.name for c in checks if not c.ok]


def test_every_check_passes_on_the_real_repository(repo_root, settings_for, tmp_path):
    """The committed upstream, patches and expected logs pass all ten checks, in order."""
    settings = settings_for(repo_root)
    # The real build/ is whatever the last apply left; judge a fresh, absent one instead.
    settings = type(settings)(**{**settings.__dict__, "sources_dir": tmp_path / "patched"})
    checks = run_checks(settings)
    assert CHECK_NAMES == [c.name for c in checks]
    assert [] == failed(checks)
    assert "every hunk's context and removed lines match" in by_name(checks)["strict cifar10_cluster_train.patch"].detail
    assert "not applied (patched/cifar10_cluster_train.py)" == by_name(checks)["state cifar10_cluster_train.patch"].detail


def test_verify_changes_nothing(kit, settings_for):
    """run_checks inspects only: the kit's inputs are unchanged and no build folder appears."""
    before = {p: p.read_bytes() for p in sorted(kit.rglob("*")) if p.is_file()}
    run_checks(settings_for(kit))
    assert before == {p: p.read_bytes() for p in sorted(kit.rglob("*")) if p.is_file()}
    assert not (kit / "build").exists()


def test_the_state_checks_say_applied_after_apply(kit, settings_for):
    """After an apply every patch's state is 'applied'."""
    s = settings_for(kit)
    workspace.apply_all(s.upstream_dir, s.patches_dir, s.sources_dir)
    states = [c.detail for c in run_checks(s) if c.name.startswith("state ")]
    assert [f"applied (patched/{name})" for name in ("cifar10_standalone_train.py", "cifar10_cluster_train.py",
            "cifar10_lesson_standalone_train.py", "cifar10_lesson_cluster_train.py",
            "cifar10_tf2_standalone_train.py", "cifar10_tf2_mirrored_train.py", "cifar10_tf2_ps_train.py",
            "cifar10_lesson_resumable_train.py")] == states


def test_a_drifted_upstream_file_fails_its_check_naming_the_file(kit, settings_for):
    """cifar10.py changed: its check fails as DRIFTED with both sums; the patch checks still pass."""
    path = kit / "upstream" / "cifar10.py"
    path.write_text(path.read_text() + "# drift\n")
    checks = run_checks(settings_for(kit))
    assert ["upstream/cifar10.py", "patch state"] == failed(checks)
    detail = by_name(checks)["upstream/cifar10.py"].detail
    assert detail.startswith("DRIFTED: sha256 ") and "recorded 9d373a3df5790af0…" in detail
    assert "git checkout upstream/" in detail


def test_a_missing_upstream_file_fails_as_missing(kit, settings_for):
    """A deleted cifar10_input.py fails its check as MISSING."""
    (kit / "upstream" / "cifar10_input.py").unlink()
    check = by_name(run_checks(settings_for(kit)))["upstream/cifar10_input.py"]
    assert (False, "MISSING: restore it with `git checkout upstream/`") == (check.ok, check.detail)


def test_a_context_line_that_no_longer_matches_fails_the_strict_check_naming_hunk_and_line(kit, settings_for):
    """An edited context line: strict fails naming hunk 4 and line 188, with expected and found."""
    path = kit / "upstream" / TRAINER
    lines = read_lines(path)
    lines[187] = "    # edited"
    path.write_text("\n".join(lines) + "\n")
    checks = by_name(run_checks(settings_for(kit)))
    assert checks["strict cifar10_standalone_train.patch"].ok
    strict = checks["strict cifar10_cluster_train.patch"]
    assert not strict.ok
    assert "hunk 4 (@@ -187,9 @@) does not match cifar10_multi_gpu_train.py at line 188" in strict.detail
    assert "expected: \"    # Soft placement lets '/gpu:%d' fall back" in strict.detail
    assert "found:    '    # edited'" in strict.detail


def test_an_upstream_trainer_that_is_already_patched_fails_strict_as_already_applied(kit, settings_for):
    """Upstream's trainer replaced by the standalone one: the strict check says already applied."""
    files = workspace.expected_files(kit / "upstream", kit / "patches")
    (kit / "upstream" / TRAINER).write_text(files["cifar10_standalone_train.py"])
    strict = by_name(run_checks(settings_for(kit)))["strict cifar10_standalone_train.patch"]
    assert not strict.ok
    assert strict.detail.startswith("cifar10_standalone_train.patch is already applied to " + TRAINER)


def test_a_malformed_patch_fails_its_parse_check_and_skips_its_strict_check(kit, settings_for, patch_sample):
    """A broken hunk header in the cluster patch: its parse check fails with the hunk and line."""
    shutil.copy(patch_sample("last_hunk_header_broken.patch"), kit / "patches" / "cifar10_cluster_train.patch")
    checks = run_checks(settings_for(kit))
    parse = by_name(checks)["parse cifar10_cluster_train.patch"]
    assert not parse.ok
    assert "line 103: hunk 5 has a broken header" in parse.detail
    assert "strict cifar10_cluster_train.patch" not in by_name(checks)
    assert "patch state" in failed(checks)


def test_a_series_naming_a_missing_file_fails_one_check_and_the_others_still_run(kit, settings_for, patch_sample):
    """The series names a missing patch: a FAIL line says which; upstream and logs are still checked."""
    shutil.copy(patch_sample("missing_file.series"), kit / "patches" / "series")
    checks = run_checks(settings_for(kit))
    assert ["patches/series", "patch state"] == failed(checks)
    assert "names cifar10_missing_train.patch, which does not exist" in by_name(checks)["patches/series"].detail
    assert by_name(checks)["expected_logs"].ok and by_name(checks)[f"upstream/{TRAINER}"].ok


def test_a_hand_edited_generated_trainer_fails_its_state_check(kit, settings_for):
    """An edited build/patched/cifar10_cluster_train.py is 'conflicting', with the way out."""
    s = settings_for(kit)
    workspace.apply_all(s.upstream_dir, s.patches_dir, s.sources_dir)
    (s.sources_dir / "cifar10_cluster_train.py").write_text("edited\n")
    check = by_name(run_checks(s))["state cifar10_cluster_train.patch"]
    assert not check.ok
    assert check.detail.startswith("conflicting (patched/cifar10_cluster_train.py): ")
    assert "`invoke apply-patches --force`" in check.detail


def test_the_verify_view_prints_a_table_and_ends_in_pass(kit, settings_for):
    """views.verify writes a header, one line per check and a final PASS line, and returns True."""
    lines: list[str] = []
    assert views.verify(lines.append, settings_for(kit))
    assert ["check", "detail"] == lines[0].split()
    assert set(lines[1]) == {"-", " "}
    assert len(CHECK_NAMES) + 3 == len(lines)
    assert all(l.startswith("ok  ") for l in lines[2:-1])
    assert f"verify: PASS (0 of {len(CHECK_NAMES)} checks failed)" == lines[-1]


def test_the_verify_view_ends_in_fail_with_a_fail_line_naming_the_drifted_file(kit, settings_for):
    """A drifted upstream file: a FAIL line names it, the last line says FAIL, and the view returns False."""
    path = kit / "upstream" / TRAINER
    path.write_text(path.read_text() + "# drift\n")
    lines: list[str] = []
    assert not views.verify(lines.append, settings_for(kit))
    fail_lines = [l for l in lines if l.startswith("FAIL")]
    assert fail_lines and f"upstream/{TRAINER}" in fail_lines[0] and "DRIFTED" in fail_lines[0]
    assert lines[-1].startswith("verify: FAIL (")


@pytest.mark.parametrize("sample", ["crlf_line_endings.patch", "missing_dep3_field.patch", "two_files.patch"])
def test_each_malformed_sample_in_place_of_the_standalone_patch_fails_its_parse_check(
        sample, kit, settings_for, patch_sample):
    """Any refused patch shows up as a failing parse check whose detail names the sample's fault."""
    shutil.copy(patch_sample(sample), kit / "patches" / "cifar10_standalone_train.patch")
    parse = by_name(run_checks(settings_for(kit)))["parse cifar10_standalone_train.patch"]
    assert not parse.ok
    assert {"crlf_line_endings.patch": "CRLF line ending at line 1",
            "missing_dep3_field.patch": "DEP-3 header lacks Origin",
            "two_files.patch": "holds 2 file diffs"}[sample] in parse.detail
