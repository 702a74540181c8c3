"""The generated folder (build/patched): built whole or not at all, current or refused."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from reprokit.errors import KitError, PatchError, UpstreamDriftError
from reprokit.sources import workspace
from tests.support import read_lines

TRAINER = "cifar10_multi_gpu_train.py"
ALL_FILES = ["cifar10.py", "cifar10_cluster_train.py", "cifar10_eval.py", "cifar10_input.py",
             "cifar10_lesson_cluster_train.py", "cifar10_lesson_resumable_train.py",
             "cifar10_lesson_standalone_train.py", TRAINER,
             "cifar10_standalone_train.py", "cifar10_tf2_mirrored_train.py", "cifar10_tf2_ps_train.py",
             "cifar10_tf2_standalone_train.py"]


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under `folder`, by relative path, with its bytes ({} when it does not exist)."""
    if not folder.exists():
        return {}
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def apply(kit: Path, **kwargs) -> workspace.ApplyResult:
    return workspace.apply_all(kit / "upstream", kit / "patches", kit / "build" / "patched", **kwargs)


@pytest.fixture
def out(kit: Path) -> Path:
    return kit / "build" / "patched"


def test_expected_files_are_upstream_plus_both_patched_trainers(kit):
    """The folder must hold the three upstream files and the two patched trainers."""
    files = workspace.expected_files(kit / "upstream", kit / "patches")
    assert ALL_FILES == sorted(files)
    assert (kit / "upstream" / "cifar10.py").read_text() == files["cifar10.py"]
    assert "tf.app.flags.DEFINE_integer('max_steps', 1000," == files["cifar10_standalone_train.py"].splitlines()[50]


def test_apply_writes_every_file_and_a_marker(kit, out):
    """A first apply writes the five files, as expected_files gives them, and the kit's marker."""
    result = apply(kit)
    assert (out, ALL_FILES, False, False) == (result.out_dir, result.files, result.already_applied, result.dry_run)
    expected = workspace.expected_files(kit / "upstream", kit / "patches")
    assert {n: t.encode() for n, t in expected.items()} == {
        n: b for n, b in snapshot(out).items() if n != workspace.MARKER}
    assert ALL_FILES == json.loads((out / workspace.MARKER).read_text())["files"]


def test_apply_makes_missing_parent_folders(kit):
    """A target whose parents do not exist yet is made, parents and all."""
    target = kit / "a" / "b" / "patched"
    workspace.apply_all(kit / "upstream", kit / "patches", target)
    assert ALL_FILES == sorted(p.name for p in target.glob("*.py"))


def test_a_second_apply_says_already_applied_and_rewrites_nothing(kit, out):
    """Idempotent: the second apply reports already applied and leaves every file as it was."""
    apply(kit)
    before = snapshot(out)
    mtimes = {p.name: p.stat().st_mtime_ns for p in out.iterdir()}
    assert apply(kit).already_applied
    assert before == snapshot(out)
    assert mtimes == {p.name: p.stat().st_mtime_ns for p in out.iterdir()}


def test_dry_run_writes_nothing_not_even_the_parent_folder(kit, out):
    """--dry-run checks every hunk and says what it would write, and makes no folder."""
    result = apply(kit, dry_run=True)
    assert (ALL_FILES, False, True) == (result.files, result.already_applied, result.dry_run)
    assert not out.parent.exists()


def test_dry_run_on_a_current_folder_says_already_applied(kit, out):
    """A dry run over a current folder reports already applied."""
    apply(kit)
    assert apply(kit, dry_run=True).already_applied


def test_clean_removes_the_folder_the_kit_made(kit, out):
    """--clean removes the generated folder; a second clean has nothing to undo."""
    apply(kit)
    assert workspace.clean(out)
    assert not out.exists()
    assert not workspace.clean(out)


def test_clean_as_a_dry_run_removes_nothing(kit, out):
    """clean(dry_run=True) says it would remove the folder and leaves it."""
    apply(kit)
    before = snapshot(out)
    assert workspace.clean(out, dry_run=True)
    assert before == snapshot(out)


def test_clean_refuses_a_folder_the_kit_did_not_make(out):
    """A build/patched without the kit's marker is not removed."""
    out.mkdir(parents=True)
    (out / "mine.py").write_text("x = 1\n")
    with pytest.raises(KitError, match="was not made by the kit; not removing it"):
        workspace.clean(out)
    assert {"mine.py": b"x = 1\n"} == snapshot(out)


def test_apply_refuses_a_folder_the_kit_did_not_make_without_force(kit, out):
    """A hand-made build/patched is left alone, and the message offers --force."""
    out.mkdir(parents=True)
    (out / "mine.py").write_text("x = 1\n")
    with pytest.raises(KitError) as caught:
        apply(kit)
    assert f"{out} exists but was not made by the kit\n  -> move it away, or pass --force to replace it" == str(
        caught.value)
    assert {"mine.py": b"x = 1\n"} == snapshot(out)


def test_apply_with_force_replaces_a_folder_the_kit_did_not_make(kit, out):
    """--force replaces the hand-made folder with the generated one."""
    out.mkdir(parents=True)
    (out / "mine.py").write_text("x = 1\n")
    apply(kit, force=True)
    assert sorted(ALL_FILES + [workspace.MARKER]) == sorted(snapshot(out))


def test_apply_with_force_replaces_a_file_where_the_folder_goes(kit, out):
    """--force also replaces a plain file standing at build/patched."""
    out.parent.mkdir(parents=True)
    out.write_text("not a folder\n")
    apply(kit, force=True)
    assert out.is_dir() and (out / workspace.MARKER).is_file()


def test_apply_refuses_when_a_file_stands_where_the_parent_folder_goes(kit, out):
    """build is a file: a KitError names it (no traceback), and nothing is written."""
    out.parent.write_text("not a folder\n")
    with pytest.raises(KitError) as caught:
        apply(kit)
    assert f"{out.parent} is a file, so {out} cannot be made" in str(caught.value)
    assert "not a folder\n" == out.parent.read_text()


def test_apply_refuses_a_generated_file_edited_by_hand_without_force(kit, out):
    """An edit in the generated cluster trainer is not thrown away silently: the file is named."""
    apply(kit)
    edited = out / "cifar10_cluster_train.py"
    edited.write_text(edited.read_text() + "# my experiment\n")
    before = snapshot(out)
    with pytest.raises(KitError) as caught:
        apply(kit)
    assert f"{out} was edited by hand since the kit wrote it: cifar10_cluster_train.py" in str(caught.value)
    assert "pass --force to replace them" in str(caught.value)
    assert before == snapshot(out)


def test_apply_with_force_replaces_a_generated_file_edited_by_hand(kit, out):
    """--force restores the edited file to upstream + patch."""
    apply(kit)
    first = snapshot(out)
    (out / "cifar10_cluster_train.py").write_text("edited\n")
    apply(kit, force=True)
    assert first == snapshot(out)


def test_apply_replaces_a_stale_untouched_folder_without_force(kit, out):
    """A folder made from an older series (nothing edited by hand) is simply rebuilt."""
    full_series = (kit / "patches" / "series").read_text()
    (kit / "patches" / "series").write_text("cifar10_standalone_train.patch\n")
    apply(kit)
    assert not (out / "cifar10_cluster_train.py").exists()
    (kit / "patches" / "series").write_text(full_series)
    result = apply(kit)
    assert (False, ALL_FILES) == (result.already_applied, sorted(p.name for p in out.glob("*.py")))


def test_a_failing_patch_late_in_the_series_leaves_no_folder(kit, out, patch_sample):
    """Atomic: the series' third patch does not apply, so build/patched is never made."""
    shutil.copy(patch_sample("stale_context.patch"), kit / "patches")
    with (kit / "patches" / "series").open("a") as f:
        f.write("stale_context.patch\n")
    with pytest.raises(PatchError) as caught:
        apply(kit)
    assert ("stale_context.patch", 1, 50) == (caught.value.patch, caught.value.hunk, caught.value.line)
    assert not out.exists()
    assert not out.parent.exists()


def test_a_failing_patch_late_in_the_series_keeps_the_old_folder(kit, out, patch_sample):
    """Atomic: with a good folder in place, a failing third patch leaves it byte for byte."""
    apply(kit)
    before = snapshot(out)
    shutil.copy(patch_sample("stale_context.patch"), kit / "patches")
    with (kit / "patches" / "series").open("a") as f:
        f.write("stale_context.patch\n")
    with pytest.raises(PatchError):
        apply(kit)
    assert before == snapshot(out)
    assert ["patched"] == [p.name for p in out.parent.iterdir()]


def test_a_write_failing_midway_keeps_the_old_folder_and_leaves_no_staging_folder(kit, out, monkeypatch):
    """Atomic: the disk fills after two files; the older build stays and the half-built one is gone."""
    full_series = (kit / "patches" / "series").read_text()
    (kit / "patches" / "series").write_text("cifar10_standalone_train.patch\n")
    apply(kit)  # an older build: the standalone trainer only
    (kit / "patches" / "series").write_text(full_series)
    before = snapshot(out)
    real_write_text = workspace.write_text
    written = []

    def fill_up(path, text):
        if len(written) == 2:
            raise OSError(28, "No space left on device")
        written.append(path.name)
        return real_write_text(path, text)

    monkeypatch.setattr(workspace, "write_text", fill_up)
    with pytest.raises(OSError, match="No space left on device"):
        apply(kit)
    monkeypatch.undo()
    assert 2 == len(written)
    assert before == snapshot(out)
    assert ["patched"] == [p.name for p in out.parent.iterdir()]


def test_a_drifted_upstream_file_stops_apply_before_anything_is_written(kit, out):
    """A changed upstream file raises UpstreamDriftError naming it; no folder is made."""
    path = kit / "upstream" / "cifar10.py"
    path.write_text(path.read_text() + "# drift\n")
    with pytest.raises(UpstreamDriftError, match=r"upstream/cifar10\.py has sha256 "):
        apply(kit)
    assert not out.exists()


def test_a_context_line_changed_and_recorded_stops_apply_at_its_hunk(kit, out, record_sums):
    """Upstream edited and its sum re-recorded: the strict check still names hunk 1 and line 44."""
    path = kit / "upstream" / TRAINER
    lines = read_lines(path)
    lines[43] = "# edited"
    path.write_text("\n".join(lines) + "\n")
    record_sums(kit / "upstream")
    with pytest.raises(PatchError) as caught:
        apply(kit)
    assert ("cifar10_cluster_train.patch", 1, 44, "", "# edited") == (
        caught.value.patch, caught.value.hunk, caught.value.line, caught.value.expected, caught.value.found)
    assert not out.exists()


def test_an_upstream_trainer_replaced_by_the_patched_one_says_already_applied(kit, out, record_sums):
    """Upstream's trainer replaced by the standalone trainer (sum re-recorded): already applied."""
    files = workspace.expected_files(kit / "upstream", kit / "patches")
    (kit / "upstream" / TRAINER).write_text(files["cifar10_standalone_train.py"])
    record_sums(kit / "upstream")
    with pytest.raises(PatchError, match="cifar10_standalone_train.patch is already applied to " + TRAINER):
        apply(kit)
    assert not out.exists()


def test_a_patch_of_a_file_upstream_lacks_is_refused(kit, patch_sample):
    """A patch whose source is not in upstream/ is named with the missing file."""
    text = patch_sample("stale_context.patch").read_text().replace("--- a/" + TRAINER, "--- a/cifar10_gone.py")
    (kit / "patches" / "gone.patch").write_text(text)
    (kit / "patches" / "series").write_text("gone.patch\n")
    with pytest.raises(PatchError, match="gone.patch patches cifar10_gone.py, which neither upstream/ nor an "
                                         "earlier patch of the series makes"):
        workspace.expected_files(kit / "upstream", kit / "patches")


def test_states_say_not_applied_then_applied_then_conflicting(kit, out):
    """Each patch's state follows the folder: absent, current, then edited by hand."""
    args = (kit / "upstream", kit / "patches", out)
    assert ["not applied"] * 8 == [s.state for s in workspace.states(*args)]
    apply(kit)
    assert ["applied"] * 8 == [s.state for s in workspace.states(*args)]
    (out / "cifar10_cluster_train.py").write_text("edited\n")
    standalone, cluster, *stacked = workspace.states(*args)
    assert ("applied", "conflicting", ["applied"] * 6) == (standalone.state, cluster.state,
                                                         [s.state for s in stacked])
    assert "run `invoke apply-patches --force`" in cluster.detail
