"""The teaching view: the article's normal diffs, exactly, and a why for every change."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from reprokit.sources import patches as patchlib
from reprokit.sources import teaching, workspace
from tests.support import REPO

ROOT = REPO
UPSTREAM = ROOT / "upstream"
PATCHES = ROOT / "patches"
TRAINER = "cifar10_multi_gpu_train.py"
SERIES = [str(p.relative_to(PATCHES)) for p in patchlib.read_series(PATCHES)]

# The article's two listings, as it prints them (section 3 of the article; see
# ../shared/spec/article.md for the table of the same hunks and their reasons).
ARTICLE_STANDALONE = """\
51c51
< tf.app.flags.DEFINE_integer('max_steps', 1000000,
---
> tf.app.flags.DEFINE_integer('max_steps', 1000,
"""
ARTICLE_CLUSTER = """\
46a47
> PS_NODE = "172.17.0.2"
51c52
< tf.app.flags.DEFINE_integer('max_steps', 1000000,
---
> tf.app.flags.DEFINE_integer('max_steps', 1000,
53,54c54,55
< tf.app.flags.DEFINE_integer('num_gpus', 1,
<                             \"\"\"How many GPUs to use.\"\"\")
---
> tf.app.flags.DEFINE_integer('num_workers', 2,
>                             \"\"\"How many WorkerServers to use.\"\"\")
124c125
<   with tf.Graph().as_default(), tf.device('/cpu:0'):
---
>   with tf.Graph().as_default(), tf.device('/job:ps/task:0/cpu:0'):
145,146c146,147
<       for i in xrange(FLAGS.num_gpus):
<         with tf.device('/gpu:%d' % i):
---
>       for i in xrange(FLAGS.num_workers):
>         with tf.device('/job:worker/task:%d/cpu:0' % i):
190,192c191
<     sess = tf.Session(config=tf.ConfigProto(
<         allow_soft_placement=True,
<         log_device_placement=FLAGS.log_device_placement))
---
>     sess = tf.Session("grpc://%s:2222" % PS_NODE)
204c203
<         num_examples_per_step = FLAGS.batch_size * FLAGS.num_gpus
---
>         num_examples_per_step = FLAGS.batch_size * FLAGS.num_workers
206c205
<         sec_per_batch = duration / FLAGS.num_gpus
---
>         sec_per_batch = duration / FLAGS.num_workers
"""
# The kit's one deliberate difference: the ps address and port come from the environment,
# with the article's values as defaults (documented in the cluster patch's Description).
KIT_FOR_ARTICLE = {
    'PS_NODE = os.environ.get("PS_NODE", "172.17.0.2")': 'PS_NODE = "172.17.0.2"',
    '    sess = tf.Session("grpc://%s:%s" % (PS_NODE, os.environ.get("PS_PORT", "2222")))':
        '    sess = tf.Session("grpc://%s:2222" % PS_NODE)',
}
POSITIONS = {
    "cifar10_standalone_train.patch": ["51c51"],
    "cifar10_cluster_train.patch": ["46a47", "51c52", "53,54c54,55", "124c125", "145,146c146,147",
                                    "190,192c191", "204c203", "206c205"],
    # The lesson's, against the article's trainers it is stacked on.
    "lesson/cifar10_lesson_standalone_train.patch": ["58a59,103", "63c108", "71,72c116,117", "194,195d238"],
    "lesson/cifar10_lesson_cluster_train.patch": ["59a60,104", "64c109", "72,73c117,118", "147c192,195",
                                                  "193,194d240"],
    # Today's TensorFlow: the port, against the lesson's standalone trainer (train() is rewritten).
    "tf2/cifar10_tf2_standalone_train.patch": [
        "17c17", "19,26c19,22", "30c26", "38d33", "43c38", "47c42,46", "49,56c48,53", "59,60c56,57", "62,64c59,61",
        "67,68c64", "75,76d70", "80c74", "86c80", "94,101c88,90", "104,105c93,100", "107,108d101", "110,111c103,113",
        "114c116,119", "116,138c121,130", "141,164c133,139", "169,173c144,148", "175,183c150,165", "185,239c167,172",
        "242c175", "247c180", "249c182", "257,258c190,194", "263c199", "268,270c204,206", "275c211"],
    # Each strategy against the TF2 standalone trainer (the port): only what tf.distribute changes.
    "tf2/cifar10_tf2_mirrored_train.patch": [
        "17c17", "19,22c19,24", "24c26,28", "26c30,33", "33a41", "141a150,158", "144c161,171", "150,151c177,178",
        "153,159c180,198", "167,169c206,220", "172,173c223,238", "175c240", "179,180c244,245", "182c247",
        "189c254", "197c262", "199a265,269", "204,206d273"],
    # Surviving a lost worker, against the lesson's cluster trainer.
    "faults/cifar10_lesson_resumable_train.patch": ["57a58,60", "240a244,251", "242c253", "262,263c273,274",
                                                    "270c281,283"],
    "tf2/cifar10_tf2_ps_train.patch": [
        "17c17", "19,22c19,25", "24c27,30", "26c32", "107a114,121", "121c135,136", "134c149,150", "139c155,158",
        "144c163,171", "150,151c177,178", "153,165c180,197", "172c204,207", "174,176c209,220", "180c224",
        "182c226"],
}
# GNU diff and difflib align a rewritten function differently (both correct, other block edges);
# the article's and the lesson's small patches come out the same from both, the tf2 ones not.
SAME_AS_GNU_DIFF = [name for name in SERIES if not name.startswith("tf2/")]


@pytest.fixture(scope="module")
def generated() -> dict[str, str]:
    return workspace.expected_files(UPSTREAM, PATCHES)


def before_after(name: str, generated: dict[str, str]) -> tuple[patchlib.Patch, list[str], list[str]]:
    """A patch, the file it applies to (upstream's, or an earlier patch's), and its result."""
    patch = patchlib.parse_patch(PATCHES / name)
    return patch, generated[patch.source_name].splitlines(), generated[patch.target_name].splitlines()


@pytest.mark.parametrize("name", SERIES)
def test_each_patched_trainer_differs_from_its_source_at_the_stated_positions(name, generated):
    """diff upstream/cifar10_multi_gpu_train.py <patched> names exactly the article's blocks, in
    order; the lesson's diffs against the article's trainers name theirs."""
    _, before, after = before_after(name, generated)
    assert POSITIONS[name] == [block.name for block in teaching.normal_blocks(before, after)]


def test_the_standalone_normal_diff_is_the_articles_listing(generated):
    """The standalone trainer's normal diff is the article's listing, line for line."""
    _, before, after = before_after("cifar10_standalone_train.patch", generated)
    assert ARTICLE_STANDALONE == teaching.normal_diff(before, after)


def test_the_cluster_normal_diff_is_the_articles_listing_but_for_the_ps_address_from_the_environment(generated):
    """The cluster trainer's normal diff is the article's, once the two environment lines read as its."""
    _, before, after = before_after("cifar10_cluster_train.patch", generated)
    diff = teaching.normal_diff(before, after)
    for kit_line, article_line in KIT_FOR_ARTICLE.items():
        assert 1 == diff.count("> " + kit_line + "\n"), kit_line
        diff = diff.replace("> " + kit_line + "\n", "> " + article_line + "\n")
    assert ARTICLE_CLUSTER == diff


def test_the_cluster_patch_header_documents_the_environment_difference():
    """The Description says PS_NODE and PS_PORT come from the environment, with the article's defaults."""
    description = patchlib.parse_patch(PATCHES / "cifar10_cluster_train.patch").fields["Description"]
    assert "PS_NODE and PS_PORT" in description
    assert 'PS_NODE = "172.17.0.2" and port 2222' in description


@pytest.mark.parametrize("name", SAME_AS_GNU_DIFF)
def test_normal_diff_prints_what_the_diff_program_prints(name, generated, tmp_path):
    """teaching.normal_diff equals `diff <source> <patched>` (exit 1: the files differ)."""
    tool = shutil.which("diff")
    if tool is None:
        pytest.skip("`diff` is not installed: cannot cross-check normal_diff with it")
    patch, before, after = before_after(name, generated)
    source, target = tmp_path / "source" / patch.source_name, tmp_path / patch.target_name
    source.parent.mkdir()
    source.write_text(generated[patch.source_name])
    target.write_text(generated[patch.target_name])
    result = subprocess.run([tool, str(source), str(target)], capture_output=True, text=True)
    assert (1, "") == (result.returncode, result.stderr)
    assert result.stdout == teaching.normal_diff(before, after)


@pytest.mark.parametrize(
    "before, after",
    [
        (["a", "b", "c"], ["a", "c"]),
        (["a", "b", "c", "d"], ["a", "d"]),
        (["a"], ["x", "a"]),
        (["a"], ["a", "x", "y"]),
        (["a", "b"], ["x", "y", "z"]),
        (["a", "b", "c"], ["a", "B", "c", "d"]),
    ],
    ids=["delete one", "delete two", "insert at start", "append two", "change all", "change and append"],
)
def test_normal_blocks_name_each_kind_of_change_as_diff_does(before, after, tmp_path):
    """Deletions, insertions and changes at the edges are named as `diff` names them."""
    tool = shutil.which("diff")
    if tool is None:
        pytest.skip("`diff` is not installed: cannot cross-check normal_blocks with it")
    (tmp_path / "before").write_text("\n".join(before) + "\n")
    (tmp_path / "after").write_text("\n".join(after) + "\n")
    result = subprocess.run([tool, "before", "after"], cwd=tmp_path, capture_output=True, text=True)
    assert result.stdout == teaching.normal_diff(before, after)


def test_normal_diff_of_equal_files_is_empty():
    """No change, no output, as `diff` prints nothing for equal files."""
    assert "" == teaching.normal_diff(["a", "b"], ["a", "b"])


@pytest.mark.parametrize("name", SERIES)
def test_every_change_of_every_patch_has_its_change_field(name, generated):
    """Docs test: one Change-<pos> field per normal-diff block, and none that names no block."""
    patch, before, after = before_after(name, generated)
    assert patch.fields["Description"].strip()
    assert POSITIONS[name] == list(patch.changes_why())


@pytest.mark.parametrize("name", SERIES)
def test_the_teaching_view_explains_every_hunk_and_every_change(name, generated):
    """explain() titles the patch and each hunk, and gives each change its why, never the fallback."""
    patch, before, after = before_after(name, generated)
    view = teaching.explain(patch, before, after)
    assert view.startswith(f"== {patch.name}: {patch.summary}\n")
    assert "(no Change- field explains this change)" not in view
    hunks = len(patch.hunks)
    titles = [l.split("  ")[0] for l in view.splitlines() if l.startswith("-- hunk")]
    assert [f"-- hunk {n}/{hunks}" for n in range(1, hunks + 1)] == titles
    for position, why in patch.changes_why().items():
        assert f"   {position}: {why.splitlines()[0]}" in view


def test_a_change_without_its_field_is_shown_with_the_fallback(generated, tmp_path):
    """Remove Change-51c51 and the teaching view says that no field explains that change."""
    text = (PATCHES / "cifar10_standalone_train.patch").read_text()
    start = text.index("Change-51c51:")
    end = text.index("--- a/")
    (tmp_path / "p.patch").write_text(text[:start] + text[end:])
    patch = patchlib.parse_patch(tmp_path / "p.patch")
    _, before, after = before_after("cifar10_standalone_train.patch", generated)
    assert "   51c51: (no Change- field explains this change)" in teaching.explain(patch, before, after)
