"""The patch engine: DEP-3 headers, one file diff per patch, strict application (no fuzz, no offset)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from reprokit.errors import PatchError
from reprokit.sources import patches as patchlib
from reprokit.sources.workspace import expected_files
from tests.support import REPO, read_lines

ROOT = REPO
UPSTREAM = ROOT / "upstream"
PATCHES = ROOT / "patches"
TRAINER = "cifar10_multi_gpu_train.py"
SERIES = [str(p.relative_to(PATCHES)) for p in patchlib.read_series(PATCHES)]
LESSON = [name for name in SERIES if name.startswith("lesson/")]


def source_text(patch: patchlib.Patch) -> str:
    """What a patch applies to: upstream's file, or the trainer an earlier patch made."""
    return expected_files(UPSTREAM, PATCHES)[patch.source_name]


def parse_error(path: Path) -> PatchError:
    with pytest.raises(PatchError) as caught:
        patchlib.parse_patch(path)
    return caught.value


def real(name: str) -> patchlib.Patch:
    return patchlib.parse_patch(PATCHES / name)


# The real patches

def test_series_lists_the_articles_patches_then_the_lessons_then_tf2_apart():
    """patches/series gives the order: the article's standalone and cluster patches, then the
    lesson's, in a folder of their own, each stacked on the article's trainer of its mode, then
    today's TensorFlow, in a folder of its own: the port of the lesson's standalone trainer, and
    each strategy stacked on that port; then surviving a lost worker, stacked on the lesson's
    cluster trainer."""
    assert ["cifar10_standalone_train.patch", "cifar10_cluster_train.patch",
            "lesson/cifar10_lesson_standalone_train.patch", "lesson/cifar10_lesson_cluster_train.patch",
            "tf2/cifar10_tf2_standalone_train.patch", "tf2/cifar10_tf2_mirrored_train.patch",
            "tf2/cifar10_tf2_ps_train.patch", "faults/cifar10_lesson_resumable_train.patch"] == SERIES
    assert ["cifar10_standalone_train.py", "cifar10_cluster_train.py"] == [real(n).source_name for n in LESSON]
    assert ["cifar10_lesson_standalone_train.py", "cifar10_tf2_standalone_train.py",
            "cifar10_tf2_standalone_train.py", "cifar10_lesson_cluster_train.py"] == \
        [real(n).source_name for n in SERIES[4:]]


def test_standalone_patch_turns_the_trainer_into_the_standalone_trainer_in_one_hunk():
    """The standalone patch reads the multi-GPU trainer and writes the standalone one, +1 -1."""
    patch = real("cifar10_standalone_train.patch")
    assert (TRAINER, "cifar10_standalone_train.py") == (patch.source_name, patch.target_name)
    assert (1, 1, 1) == (len(patch.hunks), patch.added, patch.removed)


def test_cluster_patch_turns_the_trainer_into_the_cluster_trainer_in_five_hunks():
    """The cluster patch reads the multi-GPU trainer and writes the cluster one, +10 -11."""
    patch = real("cifar10_cluster_train.patch")
    assert (TRAINER, "cifar10_cluster_train.py") == (patch.source_name, patch.target_name)
    assert (5, 10, 11) == (len(patch.hunks), patch.added, patch.removed)


@pytest.mark.parametrize("name", SERIES)
def test_every_real_patch_has_a_complete_dep3_header(name):
    """Each patch carries every DEP-3 field the kit requires, and is not forwarded upstream; the
    lesson's say in their first line that they are the lesson, not the article's."""
    patch = real(name)
    assert [] == [f for f in patchlib.REQUIRED_FIELDS if not patch.fields.get(f)]
    assert "not-needed" == patch.fields["Forwarded"]
    assert patch.summary.startswith("The lesson" if name in LESSON else "Today's TensorFlow" if name.startswith("tf2/")
                                    else "Surviving a lost worker" if name.startswith("faults/") else "The article's ")


@pytest.mark.parametrize("name", LESSON)
def test_the_lessons_changes_are_named_groups_of_hunks_for_the_ablation(name):
    """Ablation- fields name each change by its hunks; together they cover every hunk once."""
    patch = real(name)
    groups = patch.ablation()
    assert "input-pipeline" in groups
    hunks = sorted(n for numbers in groups.values() for n in numbers)
    assert list(range(1, len(patch.hunks) + 1)) == hunks


def test_a_change_field_is_keyed_by_its_normal_diff_position():
    """changes_why() maps '51c51' to the why written in the Change-51c51 field."""
    whys = real("cifar10_standalone_train.patch").changes_why()
    assert ["51c51"] == list(whys)
    assert whys["51c51"].startswith("max_steps 1000000 -> 1000.")


def test_standalone_patch_changes_only_the_max_steps_default_at_line_51():
    """Applying the standalone patch changes line 51 and nothing else."""
    before = read_lines(UPSTREAM / TRAINER)
    after = patchlib.apply(real("cifar10_standalone_train.patch"), before)
    assert len(before) == len(after)
    assert [50] == [i for i, (b, a) in enumerate(zip(before, after)) if b != a]
    assert "tf.app.flags.DEFINE_integer('max_steps', 1000," == after[50]


def test_cluster_patch_adds_the_ps_address_after_line_46():
    """Applying the cluster patch inserts PS_NODE as line 47 and shortens the file by one line."""
    before = read_lines(UPSTREAM / TRAINER)
    after = patchlib.apply(real("cifar10_cluster_train.patch"), before)
    assert len(before) - 1 == len(after)
    assert 'PS_NODE = os.environ.get("PS_NODE", "172.17.0.2")' == after[46]
    assert before[:46] == after[:46]


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.skip(f"`{name}` is not installed: cannot cross-check the patches with it")
    return path


@pytest.mark.parametrize("name", SERIES)
def test_git_apply_check_accepts_every_real_patch(name, tmp_path):
    """`git apply --check` accepts each patch against the file it applies to (named as its target)."""
    patch = real(name)
    # A traditional diff that renames is applied by git to its target name.
    (tmp_path / patch.target_name).write_text(source_text(patch))
    result = subprocess.run([_tool("git"), "apply", "--check", "-v", str(patch.path)],
                            cwd=tmp_path, capture_output=True, text=True)
    assert 0 == result.returncode, result.stderr


@pytest.mark.parametrize("name", SERIES)
def test_gnu_patch_dry_run_accepts_every_real_patch_without_fuzz_or_offset(name, tmp_path):
    """`patch --dry-run -F0 FILE PATCH` applies each patch with no fuzz and no offset."""
    patch = real(name)
    source = tmp_path / patch.source_name
    source.write_text(source_text(patch))
    result = subprocess.run([_tool("patch"), "--dry-run", "-F0", str(source), str(PATCHES / name)],
                            capture_output=True, text=True)
    assert 0 == result.returncode, result.stdout + result.stderr
    assert "offset" not in result.stdout and "fuzz" not in result.stdout, result.stdout
    assert source_text(patch) == source.read_text()


# Malformed patches: each sample has one fault, and the message names it and says what to do

def test_a_broken_hunk_header_is_named_by_hunk_and_line(patch_sample):
    """'@@ -48,7 +48 7 @@' is refused as hunk 1's broken header at line 21, with what was expected."""
    error = parse_error(patch_sample("broken_hunk_header.patch"))
    assert ("broken_hunk_header.patch", 1, 21) == (error.patch, error.hunk, error.line)
    assert "@@ -START,COUNT +START,COUNT @@" == error.expected
    assert error.found.startswith("@@ -48,7 +48 7 @@")
    assert "hunk 1 has a broken header" in str(error)
    assert "fix the patch file" in str(error)


def test_a_broken_last_hunk_header_is_refused_instead_of_dropping_the_hunk(patch_sample):
    """A last hunk whose header lacks its closing '@@' is an error, not a patch with 4 hunks."""
    error = parse_error(patch_sample("last_hunk_header_broken.patch"))
    assert (5, 103) == (error.hunk, error.line)
    assert "@@ -201,9 +200,9 rates count num_workers batches per step" == error.found


def test_hunk_counts_larger_than_the_hunk_are_refused(patch_sample):
    """'@@ -48,9 +48,9 @@' over 7 lines each: the hunk ends short, and the message says by how much."""
    error = parse_error(patch_sample("hunk_counts_too_large.patch"))
    assert (1, 29) == (error.hunk, error.line)
    assert "2 more source and 2 more target lines" == error.expected
    assert "<end of file>" == error.found
    assert "hunk 1 (@@ -48,9 +48,9 @@) ends at the end of the file, short of its header's counts" in str(error)
    assert "fix the counts in the hunk header" in str(error)


def test_hunk_counts_smaller_than_the_hunk_are_refused_instead_of_dropping_lines(patch_sample):
    """'@@ -48,5 +48,5 @@' over 7 lines each: the first line past the counts is named."""
    error = parse_error(patch_sample("hunk_counts_too_small.patch"))
    assert (1, 28) == (error.hunk, error.line)
    assert " tf.app.flags.DEFINE_integer('num_gpus', 1," == error.found
    assert "hunk 1 (@@ -48,5 +48,5 @@) has more lines than its header counts, from line 28" in str(error)


def test_crlf_line_endings_are_refused_with_a_way_to_convert_them(patch_sample):
    """A patch with CRLF endings is refused at line 1, and the hint names dos2unix."""
    path = patch_sample("crlf_line_endings.patch")
    assert b"\r\n" in path.read_bytes()
    error = parse_error(path)
    assert ("crlf_line_endings.patch", 1) == (error.patch, error.line)
    assert "CRLF line ending at line 1" in str(error)
    assert "dos2unix" in str(error)


def test_a_missing_dep3_field_is_named(patch_sample):
    """A header without Origin: says so and lists the fields every patch needs."""
    error = parse_error(patch_sample("missing_dep3_field.patch"))
    assert "missing_dep3_field.patch" == error.patch
    assert "DEP-3 header lacks Origin\n" in str(error)
    assert "every patch opens with Description, Author, Origin, Forwarded and Last-Update" in str(error)


def test_two_file_diffs_in_one_patch_are_refused(patch_sample):
    """A patch holds exactly one file diff; the sample's second one is refused."""
    error = parse_error(patch_sample("two_files.patch"))
    assert "two_files.patch: holds 2 file diffs, expected exactly 1" in str(error)


def test_an_empty_patch_file_is_refused_as_empty(patch_sample):
    """A 0-byte patch is called empty, with the two ways out."""
    error = parse_error(patch_sample("empty.patch"))
    assert "empty.patch: is empty" in str(error)
    assert "or remove it from patches/series" in str(error)


def test_a_header_without_a_diff_is_refused(patch_sample):
    """A DEP-3 header with no diff after it holds 0 file diffs."""
    error = parse_error(patch_sample("header_without_diff.patch"))
    assert "header_without_diff.patch: holds 0 file diffs, expected exactly 1" in str(error)


def test_a_series_naming_a_missing_file_is_refused(patch_sample, tmp_path):
    """A series that names a patch that does not exist says which one."""
    for p in PATCHES.glob("*.patch"):
        shutil.copy(p, tmp_path)
    shutil.copy(patch_sample("missing_file.series"), tmp_path / "series")
    with pytest.raises(PatchError) as caught:
        patchlib.read_series(tmp_path)
    assert f"{tmp_path / 'series'} names cifar10_missing_train.patch, which does not exist" in str(caught.value)
    assert "git checkout patches/" in str(caught.value)


def test_a_patches_folder_without_series_is_refused(tmp_path):
    """No series file: the message says what to create."""
    with pytest.raises(PatchError, match="no series file") as caught:
        patchlib.read_series(tmp_path)
    assert "one patch file name per line" in str(caught.value)


def test_series_comments_and_blank_lines_are_ignored(tmp_path):
    """'#' starts a comment and blank lines name nothing, as in quilt."""
    (tmp_path / "a.patch").write_text("")
    (tmp_path / "series").write_text("# the order\n\na.patch  # first\n")
    assert [tmp_path / "a.patch"] == patchlib.read_series(tmp_path)


# Strict application

def _upstream_copy(tmp_path: Path) -> Path:
    copy = tmp_path / "upstream"
    shutil.copytree(UPSTREAM, copy)
    return copy


def test_a_context_line_that_no_longer_matches_upstream_names_hunk_line_expected_and_found(tmp_path):
    """Edit one context line of a copy of upstream: hunk 2 of the cluster patch names line 123."""
    upstream = _upstream_copy(tmp_path)
    lines = read_lines(upstream / TRAINER)
    assert '  """Trains CIFAR-10 for FLAGS.max_steps steps."""' == lines[122]
    lines[122] = '  """Trains CIFAR-10."""'
    (upstream / TRAINER).write_text("\n".join(lines) + "\n")
    with pytest.raises(PatchError) as caught:
        patchlib.apply(real("cifar10_cluster_train.patch"), read_lines(upstream / TRAINER))
    error = caught.value
    assert ("cifar10_cluster_train.patch", 2, 123) == (error.patch, error.hunk, error.line)
    assert ('  """Trains CIFAR-10 for FLAGS.max_steps steps."""', '  """Trains CIFAR-10."""') == (
        error.expected, error.found)
    assert "hunk 2 (@@ -121,7 @@) does not match cifar10_multi_gpu_train.py at line 123" in str(error)
    assert "restore upstream/ (`git checkout upstream/`) or re-review the patch" in str(error)


def test_mismatches_lists_every_hunk_that_does_not_match():
    """Two edited lines in two hunks give two errors, one per hunk, in order."""
    lines = read_lines(UPSTREAM / TRAINER)
    lines[43] = "# edited"  # hunk 1 starts at line 44
    lines[200] = "# edited"  # hunk 5 starts at line 201
    errors = patchlib.mismatches(real("cifar10_cluster_train.patch"), lines)
    assert [(1, 44), (5, 201)] == [(e.hunk, e.line) for e in errors]


def test_a_hunk_at_the_wrong_line_is_refused_although_its_lines_are_one_line_up(patch_sample):
    """No offset: the sample's lines sit at 48, its header says 49, so line 49 is reported."""
    patch = patchlib.parse_patch(patch_sample("offset_hunk.patch"))
    with pytest.raises(PatchError) as caught:
        patchlib.apply(patch, read_lines(UPSTREAM / TRAINER))
    assert (1, 49) == (caught.value.hunk, caught.value.line)
    assert ("", "tf.app.flags.DEFINE_string('train_dir', '/tmp/cifar10_train',") == (
        caught.value.expected, caught.value.found)


def test_a_source_shorter_than_the_hunk_reports_the_end_of_the_file():
    """A truncated source: the missing line is found as '<end of file>'."""
    lines = read_lines(UPSTREAM / TRAINER)[:50]
    (error,) = patchlib.mismatches(real("cifar10_standalone_train.patch"), lines)
    assert (51, "<end of file>") == (error.line, error.found)


def test_a_patch_applied_to_its_own_result_says_already_applied():
    """Upstream replaced by the patched file: the message says already applied and how to restore."""
    patch = real("cifar10_standalone_train.patch")
    patched = patchlib.apply(patch, read_lines(UPSTREAM / TRAINER))
    assert patchlib.applied_to(patch, patched)
    with pytest.raises(PatchError) as caught:
        patchlib.apply(patch, patched)
    assert "cifar10_standalone_train.patch is already applied to cifar10_multi_gpu_train.py" in str(caught.value)
    assert "git checkout upstream/" in str(caught.value)


def test_problems_is_empty_when_the_patch_applies():
    """problems() finds nothing wrong with a real patch on the real upstream."""
    assert [] == patchlib.problems(real("cifar10_cluster_train.patch"), read_lines(UPSTREAM / TRAINER))


def test_applied_to_is_false_on_the_original():
    """The untouched upstream trainer does not already show the cluster changes."""
    assert not patchlib.applied_to(real("cifar10_cluster_train.patch"), read_lines(UPSTREAM / TRAINER))
