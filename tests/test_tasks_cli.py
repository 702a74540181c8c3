"""The verbs as a person runs them: `python -m invoke verify | apply-patches | explain-patches`.

Each test runs invoke as a real subprocess in a scratch copy of the kit, and checks the exit
code, what it printed, and that a failure leaves no generated folder behind.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from reprokit.sources import teaching, workspace
from tests.support import REPO, read_lines
from tests.support.cli import invoke

ROOT = REPO
TRAINER = "cifar10_multi_gpu_train.py"
ALL_FILES = "cifar10.py, cifar10_cluster_train.py, cifar10_eval.py, cifar10_input.py, " \
            "cifar10_lesson_cluster_train.py, cifar10_lesson_resumable_train.py, cifar10_lesson_standalone_train.py, " \
            "cifar10_multi_gpu_train.py, " \
            "cifar10_standalone_train.py, cifar10_tf2_mirrored_train.py, cifar10_tf2_ps_train.py, " \
            "cifar10_tf2_standalone_train.py"


def snapshot(folder: Path) -> dict[str, bytes]:
    if not folder.exists():
        return {}
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


# invoke verify


def _edit_line_50(cli_kit, record_sums) -> None:
    """Change a context line both patches rely on (line 50), then re-record the sums as a reviewer would."""
    path = cli_kit / "upstream" / TRAINER
    lines = read_lines(path)
    lines[49] = "                           # edited"
    path.write_text("\n".join(lines) + "\n")
    record_sums(cli_kit / "upstream")

def test_verify_passes_on_a_fresh_copy_of_the_kit(cli_kit):
    """`invoke verify` exits 0, prints an ok line per check and ends in PASS."""
    result = invoke(cli_kit, "verify")
    assert (0, "") == (result.returncode, result.stderr)
    lines = result.stdout.splitlines()
    assert 29 == sum(l.startswith("ok  ") for l in lines)
    assert "verify: PASS (0 of 29 checks failed)" == lines[-1]
    assert not (cli_kit / "build").exists()


def test_verify_fails_with_a_fail_line_naming_a_drifted_upstream_file(cli_kit):
    """A changed upstream/cifar10.py: `invoke verify` exits 1 and a FAIL line names the file."""
    path = cli_kit / "upstream" / "cifar10.py"
    path.write_text(path.read_text() + "# drift\n")
    result = invoke(cli_kit, "verify")
    assert 1 == result.returncode
    (fail,) = [l for l in result.stdout.splitlines() if re.match(r"FAIL\s+upstream/", l)]
    assert re.match(r"FAIL\s+upstream/cifar10\.py\s+DRIFTED: sha256 ", fail)
    assert "verify: FAIL" in result.stderr


def test_verify_fails_naming_hunk_and_line_when_a_context_line_changed(cli_kit, record_sums):
    """An edited (and re-recorded) line 50: both article strict FAIL lines name their hunk 1 and
    line 50; the lesson's and tf2's, stacked on them, say their source cannot be made."""
    _edit_line_50(cli_kit, record_sums)
    result = invoke(cli_kit, "verify")
    assert 1 == result.returncode
    standalone, cluster, *stacked = [l for l in result.stdout.splitlines() if re.match(r"FAIL\s+strict ", l)]
    assert 6 == len(stacked) and all("cannot be made" in line for line in stacked)
    assert "cifar10_standalone_train.patch: hunk 1 (@@ -48,7 @@) does not match " \
           "cifar10_multi_gpu_train.py at line 50" in standalone
    assert "cifar10_cluster_train.patch: hunk 1 (@@ -44,14 @@) does not match " \
           "cifar10_multi_gpu_train.py at line 50" in cluster
    assert "found:    '                           # edited'" in result.stdout


def test_verify_fails_with_a_fail_line_when_the_series_names_a_missing_patch(cli_kit, patch_sample):
    """The series names a missing patch: exit 1, and a FAIL line names patches/series and the file."""
    shutil.copy(patch_sample("missing_file.series"), cli_kit / "patches" / "series")
    result = invoke(cli_kit, "verify")
    assert 1 == result.returncode
    assert re.search(r"^FAIL\s+patches/series\s+.*names cifar10_missing_train\.patch, which does not exist",
                     result.stdout, re.M)


# invoke apply-patches

def test_apply_patches_writes_the_folder_then_says_already_applied(cli_kit):
    """Idempotent: the first run writes build/patched, the second says already applied and changes nothing."""
    first = invoke(cli_kit, "apply-patches")
    assert (0, f"applied: wrote {cli_kit}/build/patched/ with {ALL_FILES}\n") == (first.returncode, first.stdout)
    expected = workspace.expected_files(cli_kit / "upstream", cli_kit / "patches")
    assert expected["cifar10_cluster_train.py"] == (cli_kit / "build" / "patched" / "cifar10_cluster_train.py").read_text()
    built = snapshot(cli_kit / "build")
    second = invoke(cli_kit, "apply-patches")
    assert (0, f"already applied: {cli_kit}/build/patched is current ({ALL_FILES})\n") == (
        second.returncode, second.stdout)
    assert built == snapshot(cli_kit / "build")


def test_apply_patches_dry_run_writes_nothing(cli_kit):
    """--dry-run says what it would write, exits 0 and makes no build folder."""
    result = invoke(cli_kit, "apply-patches", "--dry-run")
    assert 0 == result.returncode
    assert f"dry run: would write {cli_kit}/build/patched/ with {ALL_FILES}; every hunk applies strictly\n" == (
        result.stdout)
    assert not (cli_kit / "build").exists()


def test_apply_patches_clean_removes_the_folder_and_its_dry_run_does_not(cli_kit):
    """--clean --dry-run keeps build/patched; --clean removes it; a second --clean has nothing to undo."""
    invoke(cli_kit, "apply-patches")
    built = snapshot(cli_kit / "build")
    dry = invoke(cli_kit, "apply-patches", "--clean", "--dry-run")
    assert (0, f"dry run: would remove {cli_kit}/build/patched\n") == (dry.returncode, dry.stdout)
    assert built == snapshot(cli_kit / "build")
    clean = invoke(cli_kit, "apply-patches", "--clean")
    assert (0, f"removed {cli_kit}/build/patched\n") == (clean.returncode, clean.stdout)
    assert not (cli_kit / "build" / "patched").exists()
    again = invoke(cli_kit, "apply-patches", "--clean")
    assert (0, f"{cli_kit}/build/patched does not exist: nothing to undo\n") == (again.returncode, again.stdout)


MALFORMED = {
    "broken_hunk_header.patch": ["line 21: hunk 1 has a broken header",
                                 "expected: '@@ -START,COUNT +START,COUNT @@'",
                                 "found:    '@@ -48,7 +48 7 @@", "-> fix the patch file"],
    "last_hunk_header_broken.patch": ["line 103: hunk 5 has a broken header", "-> fix the patch file"],
    "hunk_counts_too_large.patch": ["hunk 1 (@@ -48,9 +48,9 @@) ends at the end of the file",
                                    "expected: '2 more source and 2 more target lines'",
                                    "-> fix the counts in the hunk header"],
    "hunk_counts_too_small.patch": ["hunk 1 (@@ -48,5 +48,5 @@) has more lines than its header counts, from line 28",
                                    "-> fix the counts in the hunk header"],
    "crlf_line_endings.patch": ["CRLF line ending at line 1", "-> convert the patch to LF endings", "dos2unix"],
    "missing_dep3_field.patch": ["DEP-3 header lacks Origin",
                                 "-> every patch opens with Description, Author, Origin, Forwarded and Last-Update"],
    "two_files.patch": ["holds 2 file diffs, expected exactly 1", "-> fix the patch file"],
    "empty.patch": ["is empty", "-> write the patch (DEP-3 header, then the unified diff)"],
    "header_without_diff.patch": ["holds 0 file diffs, expected exactly 1", "-> fix the patch file"],
    "not_utf8.patch": ["line 1 is not UTF-8 (byte b'\\xe9' at offset", "-> save the patch as UTF-8"],
}


@pytest.mark.parametrize("sample", sorted(MALFORMED))
def test_apply_patches_refuses_each_malformed_patch_and_writes_nothing(sample, cli_kit, patch_sample):
    """A malformed cluster patch: exit 1, a message naming the patch and its fault, and no build folder."""
    shutil.copy(patch_sample(sample), cli_kit / "patches" / "cifar10_cluster_train.patch")
    result = invoke(cli_kit, "apply-patches")
    assert 1 == result.returncode
    assert result.stderr.startswith(f"error: {cli_kit}/patches/cifar10_cluster_train.patch: "), result.stderr
    assert [] == [m for m in MALFORMED[sample] if m not in result.stderr], result.stderr
    assert "Traceback" not in result.stderr
    assert not (cli_kit / "build").exists()


def test_apply_patches_refuses_a_series_naming_a_missing_file(cli_kit, patch_sample):
    """The series names a missing patch: exit 1, the message names it, and no build folder."""
    shutil.copy(patch_sample("missing_file.series"), cli_kit / "patches" / "series")
    result = invoke(cli_kit, "apply-patches")
    assert 1 == result.returncode
    assert f"error: {cli_kit}/patches/series names cifar10_missing_train.patch, which does not exist" in result.stderr
    assert not (cli_kit / "build").exists()


def test_apply_patches_refuses_a_drifted_upstream_naming_the_file(cli_kit):
    """A changed upstream trainer: exit 1, UpstreamDriftError's message names it, and no build folder."""
    path = cli_kit / "upstream" / TRAINER
    path.write_text(path.read_text() + "# drift\n")
    result = invoke(cli_kit, "apply-patches")
    assert 1 == result.returncode
    assert result.stderr.startswith(f"error: upstream/{TRAINER} has sha256 ")
    assert "git checkout upstream/" in result.stderr
    assert not (cli_kit / "build").exists()


def test_apply_patches_refuses_a_context_line_that_no_longer_matches(cli_kit, record_sums):
    """An edited, re-recorded context line: exit 1 naming hunk, line, expected and found; no build folder."""
    _edit_line_50(cli_kit, record_sums)
    result = invoke(cli_kit, "apply-patches")
    assert 1 == result.returncode
    assert "cifar10_standalone_train.patch: hunk 1 (@@ -48,7 @@) does not match " \
           "cifar10_multi_gpu_train.py at line 50" in result.stderr
    assert "expected: '                           \"\"\"Directory for event logs and checkpoints.\"\"\")'" in (
        result.stderr)
    assert "found:    '                           # edited'" in result.stderr
    assert not (cli_kit / "build").exists()


def test_apply_patches_says_already_applied_when_upstream_holds_the_patched_trainer(cli_kit, record_sums):
    """Upstream's trainer replaced by the standalone one (sums re-recorded): exit 1, already applied."""
    files = workspace.expected_files(cli_kit / "upstream", cli_kit / "patches")
    (cli_kit / "upstream" / TRAINER).write_text(files["cifar10_standalone_train.py"])
    record_sums(cli_kit / "upstream")
    result = invoke(cli_kit, "apply-patches")
    assert 1 == result.returncode
    assert f"error: cifar10_standalone_train.patch is already applied to {TRAINER}" in result.stderr
    assert not (cli_kit / "build").exists()


def test_apply_patches_keeps_the_old_folder_when_a_later_patch_fails(cli_kit, patch_sample):
    """Atomic: a third patch that does not apply leaves the previous build/patched byte for byte."""
    assert 0 == invoke(cli_kit, "apply-patches").returncode
    built = snapshot(cli_kit / "build")
    shutil.copy(patch_sample("stale_context.patch"), cli_kit / "patches")
    with (cli_kit / "patches" / "series").open("a") as f:
        f.write("stale_context.patch\n")
    result = invoke(cli_kit, "apply-patches")
    assert 1 == result.returncode
    assert "stale_context.patch: hunk 1 (@@ -48,7 @@) does not match cifar10_multi_gpu_train.py at line 50" in (
        result.stderr)
    assert built == snapshot(cli_kit / "build")


def test_apply_patches_refuses_a_folder_it_did_not_make_unless_forced(cli_kit):
    """A hand-made build/patched: exit 1 with the way out; --force then replaces it."""
    (cli_kit / "build" / "patched").mkdir(parents=True)
    (cli_kit / "build" / "patched" / "notes.txt").write_text("mine\n")
    refused = invoke(cli_kit, "apply-patches")
    assert 1 == refused.returncode
    assert f"error: {cli_kit}/build/patched exists but was not made by the kit\n" \
           "  -> move it away, or pass --force to replace it\n" == refused.stderr
    assert {"patched/notes.txt": b"mine\n"} == snapshot(cli_kit / "build")
    forced = invoke(cli_kit, "apply-patches", "--force")
    assert 0 == forced.returncode
    assert not (cli_kit / "build" / "patched" / "notes.txt").exists()
    assert (cli_kit / "build" / "patched" / workspace.MARKER).is_file()


def test_apply_patches_refuses_to_throw_away_a_hand_edit_unless_forced(cli_kit):
    """An edited generated trainer: exit 1 naming it; --force restores the generated file."""
    assert 0 == invoke(cli_kit, "apply-patches").returncode
    edited = cli_kit / "build" / "patched" / "cifar10_cluster_train.py"
    original = edited.read_text()
    edited.write_text(original + "# my experiment\n")
    refused = invoke(cli_kit, "apply-patches")
    assert 1 == refused.returncode
    assert "was edited by hand since the kit wrote it: cifar10_cluster_train.py" in refused.stderr
    assert edited.read_text().endswith("# my experiment\n")
    assert 0 == invoke(cli_kit, "apply-patches", "--force").returncode
    assert original == edited.read_text()


def test_apply_patches_refuses_when_a_file_blocks_the_build_folder(cli_kit):
    """build is a plain file: exit 1 with a message naming it, not a traceback."""
    (cli_kit / "build").write_text("in the way\n")
    result = invoke(cli_kit, "apply-patches")
    assert 1 == result.returncode
    assert f"error: {cli_kit}/build is a file, so {cli_kit}/build/patched cannot be made" in result.stderr
    assert "Traceback" not in result.stderr


# invoke explain-patches

def test_explain_patches_normal_prints_each_diff_at_the_articles_positions(cli_kit):
    """--normal prints, per patch, the diff command and blocks at exactly the article's positions."""
    result = invoke(cli_kit, "explain-patches", "--normal")
    assert (0, "") == (result.returncode, result.stderr)
    sections = result.stdout.split("$ diff ")[1:]
    assert [f"upstream/{TRAINER} cifar10_standalone_train.py", f"upstream/{TRAINER} cifar10_cluster_train.py",
            "cifar10_standalone_train.py cifar10_lesson_standalone_train.py",
            "cifar10_cluster_train.py cifar10_lesson_cluster_train.py",
            "cifar10_lesson_standalone_train.py cifar10_tf2_standalone_train.py",
            "cifar10_tf2_standalone_train.py cifar10_tf2_mirrored_train.py",
            "cifar10_tf2_standalone_train.py cifar10_tf2_ps_train.py",
            "cifar10_lesson_cluster_train.py cifar10_lesson_resumable_train.py"] == [s.splitlines()[0] for s in sections]
    positions = [[l for l in s.splitlines()[1:] if re.fullmatch(r"\d+(,\d+)?[acd]\d+(,\d+)?", l)] for s in sections]
    assert [["51c51"], ["46a47", "51c52", "53,54c54,55", "124c125", "145,146c146,147", "190,192c191", "204c203",
                        "206c205"]] == positions[:2]  # the article's positions, unchanged by the lesson


def test_explain_patches_normal_prints_the_same_diff_as_teaching_normal_diff(cli_kit):
    """The task's output is the header line, then teaching.normal_diff, then a blank line, per patch."""
    files = workspace.expected_files(cli_kit / "upstream", cli_kit / "patches")
    pairs = [(f"upstream/{TRAINER}", TRAINER, "cifar10_standalone_train.py"),
             (f"upstream/{TRAINER}", TRAINER, "cifar10_cluster_train.py"),
             ("cifar10_standalone_train.py", "cifar10_standalone_train.py", "cifar10_lesson_standalone_train.py"),
             ("cifar10_cluster_train.py", "cifar10_cluster_train.py", "cifar10_lesson_cluster_train.py"),
             ("cifar10_lesson_standalone_train.py", "cifar10_lesson_standalone_train.py",
              "cifar10_tf2_standalone_train.py"),
             ("cifar10_tf2_standalone_train.py", "cifar10_tf2_standalone_train.py", "cifar10_tf2_mirrored_train.py"),
             ("cifar10_tf2_standalone_train.py", "cifar10_tf2_standalone_train.py", "cifar10_tf2_ps_train.py"),
             ("cifar10_lesson_cluster_train.py", "cifar10_lesson_cluster_train.py",
              "cifar10_lesson_resumable_train.py")]
    expected = "".join(
        f"$ diff {shown} {target}\n"
        f"{teaching.normal_diff(files[source].splitlines(), files[target].splitlines())}\n"
        for shown, source, target in pairs)
    assert expected == invoke(cli_kit, "explain-patches", "--normal").stdout


def test_explain_patches_gives_every_change_its_why(cli_kit):
    """The default teaching view exits 0 and has a Change- field for every change."""
    result = invoke(cli_kit, "explain-patches")
    assert 0 == result.returncode
    assert "== cifar10_cluster_train.patch: The article's cluster trainer" in result.stdout
    assert "   46a47: add PS_NODE, the parameter server's address." in result.stdout
    assert "(no Change- field explains this change)" not in result.stdout


@pytest.mark.parametrize("program", ["tf2-mirrored", "tf2-ps"])
def test_explain_patches_of_a_tf2_program_is_its_chain_ending_in_the_port_and_a_captioned_strategy(cli_kit, program):
    """--program: the patches that make the program's two trainers, in series order, from the
    tutorial's trainer to the port and then the strategy, every change captioned."""
    result = invoke(cli_kit, "explain-patches", "--program", program)
    assert (0, "") == (result.returncode, result.stderr)
    strategy = "mirrored" if program == "tf2-mirrored" else "ps"
    assert ["cifar10_standalone_train.patch", "cifar10_lesson_standalone_train.patch",
            "cifar10_tf2_standalone_train.patch", f"cifar10_tf2_{strategy}_train.patch"] == re.findall(
        r"^== (\S+):", result.stdout, re.MULTILINE)
    assert "(no Change- field explains this change)" not in result.stdout


def test_explain_patches_shows_one_patch_and_refuses_an_unknown_one_naming_the_series(cli_kit):
    one = invoke(cli_kit, "explain-patches", "--patch", "cifar10_tf2_ps_train")
    assert ["cifar10_tf2_ps_train.patch"] == re.findall(r"^== (\S+):", one.stdout, re.MULTILINE)
    unknown = invoke(cli_kit, "explain-patches", "--patch", "cifar10_tf3_train")
    assert 1 == unknown.returncode
    assert "error: no patch named cifar10_tf3_train in patches/series" in unknown.stderr
    assert "cifar10_tf2_mirrored_train.patch" in unknown.stderr
    both = invoke(cli_kit, "explain-patches", "--patch", "cifar10_tf2_ps_train", "--program", "tf2-ps")
    assert (1, "error: --patch and --program both choose what is shown") == (
        both.returncode, both.stderr.splitlines()[0])


def test_explain_patches_refuses_a_malformed_patch(cli_kit, patch_sample):
    """explain-patches goes through the same strict parser: a broken header exits 1 with its line."""
    shutil.copy(patch_sample("broken_hunk_header.patch"), cli_kit / "patches" / "cifar10_standalone_train.patch")
    result = invoke(cli_kit, "explain-patches", "--normal")
    assert 1 == result.returncode
    assert "line 21: hunk 1 has a broken header" in result.stderr


def test_explain_patches_placement_builds_a_session_programs_graph_and_shows_where_each_variable_lives(cli_kit):
    """--placement --program lesson: the program's placement in words (its Program's), then the
    devices of its graph, built here: every model variable on the ps."""
    result = invoke(cli_kit, "explain-patches", "--placement", "--program", "lesson")
    assert (0, "") == (result.returncode, result.stderr)
    shown = result.stdout.split("== Where the lesson program's variables live", 1)[1]
    assert "tf.train.replica_device_setter puts every variable on the ps" in shown
    devices = re.findall(r"^   (conv1/weights|softmax_linear/biases) +(\S+)$", shown, re.MULTILINE)
    assert [("conv1/weights", "/job:ps/task:0/device:CPU:0"), ("softmax_linear/biases", "/job:ps/task:0/device:CPU:0")] \
        == devices
    assert "every model variable lives on: /job:ps/task:0/device:CPU:0" in shown


def test_explain_patches_placement_of_a_tf2_program_is_its_newest_bench_or_says_how_to_measure_it(cli_kit):
    """A tf2 program's variables exist only in its running cluster: with no bench that ran it,
    the view says so and how to measure it; then a bench.json of the runs folder is read (a
    document of an older format passed over), and the newest one wins."""
    unmeasured = invoke(cli_kit, "explain-patches", "--placement", "--program", "tf2-ps")
    assert 0 == unmeasured.returncode
    assert "`invoke bench --programs tf2-ps` probes it" in unmeasured.stdout
    record = json.loads(next(iter(sorted((REPO / "docs" / "records").glob("bench-*.json")))).read_text())
    ps = "/job:ps/replica:0/task:0/device:CPU:0"
    for folder, devices, version in (("20261201-000000", {"cifar10/conv1/weights": "/job:elsewhere"}, 2),
                                     ("20261202-000000", {"cifar10/conv1/weights": ps}, 2),
                                     ("20261203-000000", {"cifar10/conv1/weights": "/job:old"}, 1)):
        (cli_kit / "runs" / folder).mkdir(parents=True)
        written = {**record, "placement": {"tf2-ps": devices}, "format_version": version}
        (cli_kit / "runs" / folder / "bench.json").write_text(json.dumps(written))
    measured = invoke(cli_kit, "explain-patches", "--placement", "--program", "tf2-ps")
    assert (0, "") == (measured.returncode, measured.stderr)
    assert "ParameterServerStrategy creates every variable on a ps" in measured.stdout
    assert "(its cluster, probed by the bench of runs/20261202-000000/bench.json):" in measured.stdout
    assert f"every model variable lives on: {ps}" in measured.stdout


# invoke bench (the check of its options only: a bench trains)

def test_bench_help_names_its_programs_and_tunings_options_and_invoke_yamls_keys(cli_kit):
    result = invoke(cli_kit, "--help", "bench")
    assert 0 == result.returncode
    text = " ".join(result.stdout.split())  # invoke wraps the help at the terminal's width
    assert "--programs=STRING the rows' programs: article, lesson, lesson-resumable, tf2-mirrored" in text
    assert "(default: bench_programs in invoke.yaml)" in text
    assert "--tunings=STRING the article's rows' kit settings: default, or default,tuned" in text
    assert "(default: bench_tunings in invoke.yaml)" in text


def test_bench_refuses_an_unknown_tuning_before_anything_runs(cli_kit):
    result = invoke(cli_kit, "bench", "--tunings", "default,fast")
    assert 1 == result.returncode
    assert "unknown tuning profile 'fast'" in result.stderr and "default, tuned" in result.stderr
    assert not (cli_kit / "runs").exists()


def test_bench_refuses_an_unknown_program_before_anything_runs(cli_kit):
    """One error line naming the program and the known ones; no run folder is made."""
    result = invoke(cli_kit, "bench", "--programs", "article,tf3")
    assert 1 == result.returncode
    assert "error: unknown --program 'tf3'" in result.stderr
    assert "article, lesson, lesson-resumable, tf2-mirrored, tf2-ps" in result.stderr
    assert not (cli_kit / "runs").exists()
