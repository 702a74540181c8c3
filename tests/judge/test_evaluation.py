"""reprokit.judge.evaluation and expected_logs/eval_rules.yaml: the tutorial's precision @ 1, read,
bounded and judged; and, slowly, a briefly trained model measured above chance for real."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from reprokit.commands import run
from reprokit.errors import KitError
from reprokit.judge.checks import Summary, summarize
from reprokit.judge.claims import load_claims
from reprokit.judge.evaluation import (
    BATCH_SIZE,
    EvalError,
    Evaluation,
    NoCheckpointError,
    counted_examples,
    eval_argv,
    eval_verdicts,
    evaluate,
    latest_checkpoint,
    parse_eval_log,
    require_checkpoint,
    step_of,
    wilson,
)
from reprokit.judge.rules import load_rules
from reprokit.names import MODES
from tests.support import REPO, SAMPLES
from tests.support.kit import RECORDS, STEPS, KitInputs

RULES = REPO / "expected_logs" / "eval_rules.yaml"
LOGS = SAMPLES / "logs"
CHANCE = load_claims(REPO / "expected_logs" / "claims.yaml").learning.chance  # a ten-class guess


def judge_eval_log(log: Path, mode: str, rules_path: Path) -> Summary:
    """An eval log of the article's program against the eval rules, as a run's judgement checks it."""
    return summarize(eval_verdicts(log, mode, load_rules(rules_path), "article"))
GOOD = LOGS / "eval_good.log"  # a real eval of a 21-step standalone checkpoint, 200 test records

# Bad samples and the rules each must fail, and no other.
BAD = [
    ("eval_no_checkpoint.log", {"precision_reported_once", "checkpoint_found"}),
    ("eval_malformed_precision.log", {"precision_reported_once", "precision_lines_well_formed"}),
    ("eval_traceback.log", {"precision_reported_once", "no_python_traceback"}),
]


def state_file(folder: Path, *steps: int) -> None:
    """A checkpoint state file as tf.train.Saver writes it, the last step newest."""
    folder.mkdir(parents=True, exist_ok=True)
    newest = f'model_checkpoint_path: "{folder}/model.ckpt-{steps[-1]}"\n'
    every = "".join(f'all_model_checkpoint_paths: "{folder}/model.ckpt-{s}"\n' for s in steps)
    (folder / "checkpoint").write_text(newest + every)


# --- the rules -------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_the_rules_pass_a_real_eval_log_under_either_mode(mode: str) -> None:
    """The real eval log passes all four rules, judged as the standalone's or the cluster's."""
    summary = judge_eval_log(GOOD, mode, RULES)
    assert (True, 4, []) == (summary.passed, summary.checked, summary.failed)
    assert "PASS" == summary.lines[-1]


@pytest.mark.parametrize(("name", "failing"), BAD)
def test_each_broken_eval_log_fails_exactly_its_rules(name: str, failing: set[str]) -> None:
    """A missing checkpoint, a two-decimal precision line, a traceback: each fails its rules only."""
    summary = judge_eval_log(LOGS / name, "standalone", RULES)
    assert (False, failing) == (summary.passed, set(summary.failed))
    assert "FAIL" == summary.lines[-1]


def test_two_precision_lines_fail_the_once_rule_with_both_as_evidence(tmp_path: Path) -> None:
    """An eval that ran twice (no --run_once) prints two precision lines: precision_reported_once fails."""
    log = tmp_path / "eval.log"
    log.write_text(GOOD.read_text() + "2026-12-03 17:29:05.324900: precision @ 1 = 0.641\n")
    summary = judge_eval_log(log, "cluster", RULES)
    assert ["precision_reported_once"] == summary.failed
    assert any(line.endswith("precision @ 1 = 0.641") for line in summary.lines)


# --- reading a log ---------------------------------------------------------------------------


def test_the_real_log_gives_precision_count_step_and_interval() -> None:
    """0.633 of 256 counted (2 batches of 128 for 200 records) is 162 right, at step 20."""
    result = parse_eval_log(GOOD.read_text(), 200, towers=1, log=GOOD)
    low, high = wilson(162, 256)
    assert Evaluation(20, 0.633, 162, 256, low, high, 21 * BATCH_SIZE, GOOD) == result
    assert (True, True) == (result.ok, low > CHANCE)


def test_without_a_restoring_line_the_step_comes_from_the_checkpoint_state() -> None:
    """A log that does not say what it restored takes the step from the checkpoint's name; the
    checkpoint of step 999 holds 1000 steps of a batch per tower."""
    text = "2026-12-03 17:24:05.324900: precision @ 1 = 0.500\n"
    result = parse_eval_log(text, 10000, towers=2, log=Path("e.log"), checkpoint="/r/model.ckpt-999")
    assert (999, 10112, 5056, 1000 * BATCH_SIZE * 2) == (result.step, result.counted, result.correct,
                                                          result.examples_seen)


def test_a_log_without_a_checkpoint_gives_an_error_and_no_numbers() -> None:
    """"No checkpoint file found": the result says so, names the log, and holds no precision."""
    path = LOGS / "eval_no_checkpoint.log"
    result = parse_eval_log(path.read_text(), 200, towers=1, log=path)
    assert (None, None, 0, None, 256, 0) == (result.step, result.precision, result.correct, result.low,
                                             result.counted, result.examples_seen)
    assert f"the eval program found no checkpoint ('No checkpoint file found'); see {path}" == result.error
    assert False is result.ok


def test_a_malformed_precision_line_is_not_read_as_a_precision() -> None:
    """A two-decimal line is not the tutorial's format: no precision is read from it."""
    path = LOGS / "eval_malformed_precision.log"
    result = parse_eval_log(path.read_text(), 200, towers=1, log=path)
    assert None is result.precision
    assert result.error.startswith("the eval log has no 'precision @ 1 = ' line in the tutorial's format")


# --- numbers ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("examples", "counted"), [(10000, 10112), (200, 256), (128, 128), (129, 256), (1, 128)])
def test_the_eval_counts_whole_batches_of_128(examples: int, counted: int) -> None:
    """ceil(num_examples / 128) batches: 10000 examples count as 79 batches, 10112 examples."""
    assert counted == counted_examples(examples)


def test_the_wilson_interval_of_8_in_10_is_the_hand_computed_one() -> None:
    """p = 0.8, n = 10, z = 1.959964: centre 0.99207/1.38415 = 0.71674, half 0.31361/1.38415 = 0.22658."""
    assert (0.4902, 0.9433) == pytest.approx(wilson(8, 10), abs=1e-4)


def test_the_wilson_interval_never_collapses_at_zero_or_all() -> None:
    """0 of 10 gives [0, z^2/(n+z^2)] = [0, 3.84146/13.84146] = [0, 0.27753]; 10 of 10 mirrors it."""
    assert (0.0, 0.27753) == pytest.approx(wilson(0, 10), abs=1e-5)
    assert (1 - 0.27753, 1.0) == pytest.approx(wilson(10, 10), abs=1e-5)


@pytest.mark.parametrize(("successes", "trials"), [(0, 0), (11, 10), (-1, 10)])
def test_the_wilson_interval_refuses_impossible_counts(successes: int, trials: int) -> None:
    """No trials, or more successes than trials, or fewer than none: an error, not an interval."""
    with pytest.raises(EvalError, match="a proportion needs 0 <= correct <= counted"):
        wilson(successes, trials)


# --- the command line and the checkpoint -----------------------------------------------------


def test_the_eval_command_line_runs_the_tutorials_program_once_on_the_train_dir() -> None:
    """python, the patched folder's cifar10_eval.py, the tutorial's flags, and --run_once."""
    argv = eval_argv("/venv/bin/python", Path("/kit/build/patched"), Path("/runs/r1/train_standalone"),
                     Path("/runs/r1/eval_standalone"), Path("/kit/data"), 200)
    assert ["/venv/bin/python", "/kit/build/patched/cifar10_eval.py",
            "--checkpoint_dir=/runs/r1/train_standalone", "--eval_dir=/runs/r1/eval_standalone",
            "--data_dir=/kit/data", "--num_examples=200", "--run_once"] == argv


def test_the_command_line_refuses_an_empty_test_set() -> None:
    """num_examples 0 would divide nothing: refused before anything runs."""
    with pytest.raises(KitError, match="num_examples must be at least 1, got 0"):
        eval_argv("python", Path("s"), Path("c"), Path("e"), Path("d"), 0)


@pytest.mark.parametrize(("path", "step"), [("/r/model.ckpt-20", 20), ("model.ckpt-999", 999), ("/r/model.ckpt", None)])
def test_the_step_is_the_number_after_the_last_dash(path: str, step: int | None) -> None:
    """As the tutorial reads it: model.ckpt-20 is step 20; a name without one has no step."""
    assert step == step_of(path)


def test_the_newest_checkpoint_is_the_one_the_state_file_names_first(tmp_path: Path) -> None:
    """model_checkpoint_path, not the first of all_model_checkpoint_paths."""
    state_file(tmp_path / "train", 0, 1000, 1999)
    assert f"{tmp_path}/train/model.ckpt-1999" == latest_checkpoint(tmp_path / "train")


def test_a_folder_without_a_checkpoint_is_a_kit_error_naming_it_and_the_fix(tmp_path: Path) -> None:
    """No 'checkpoint' file: NoCheckpointError (a KitError) names the folder and says what to pass."""
    with pytest.raises(NoCheckpointError) as caught:
        require_checkpoint(tmp_path)
    assert isinstance(caught.value, KitError)
    assert f"no checkpoint to evaluate in {tmp_path}" in caught.value.message
    assert "train_dir of a finished training run" in caught.value.hint


def test_evaluate_runs_nothing_without_a_checkpoint(tmp_path: Path) -> None:
    """The check comes first: nothing is echoed, run or logged."""
    echoed: list[str] = []
    log = tmp_path / "eval.log"
    with pytest.raises(NoCheckpointError):
        evaluate(sys.executable, tmp_path, tmp_path / "train", tmp_path / "eval", tmp_path, 200, log, echoed.append,
                 towers=1)
    assert ([], False) == (echoed, log.exists())


# --- evaluate() with stand-in programs (no TensorFlow) ---------------------------------------


def stand_in(folder: Path, body: str) -> Path:
    """A sources folder whose cifar10_eval.py is ``body``: it sees the flags the kit passes."""
    folder.mkdir()
    (folder / "cifar10_eval.py").write_text("import sys\n" + body)
    return folder


def test_evaluate_echoes_the_command_logs_the_output_and_reads_it(tmp_path: Path) -> None:
    """The program's whole output lands in the log; the result is read from it."""
    sources = stand_in(tmp_path / "src", "print('flags:', ' '.join(sys.argv[1:]))\n"
                                         "print('2026-12-03 17:24:05.324900: precision @ 1 = 0.750')\n")
    state_file(tmp_path / "train", 30)
    echoed: list[str] = []
    log = tmp_path / "logs" / "eval_cluster.log"
    result = evaluate(sys.executable, sources, tmp_path / "train", tmp_path / "eval", tmp_path / "data", 200, log,
                      echoed.append, towers=2)
    flags = (f"flags: --checkpoint_dir={tmp_path}/train --eval_dir={tmp_path}/eval --data_dir={tmp_path}/data "
             "--num_examples=200 --run_once")
    assert f"{flags}\n2026-12-03 17:24:05.324900: precision @ 1 = 0.750\n" == log.read_text()
    assert [f"$ {sys.executable} {sources}/cifar10_eval.py " + flags.removeprefix("flags: ")] == echoed
    assert (30, 0.75, 192, 256, 31 * BATCH_SIZE * 2, "") == (result.step, result.precision, result.correct,
                                                             result.counted, result.examples_seen, result.error)


def test_a_failing_eval_program_gives_a_result_with_its_exit_code_and_last_lines(tmp_path: Path) -> None:
    """Exit code 1 after a traceback: the error names the command, the code, the last line and the log."""
    sources = stand_in(tmp_path / "src", "raise ValueError('Failed to find file: test_batch.bin')\n")
    state_file(tmp_path / "train", 20)
    log = tmp_path / "eval.log"
    result = evaluate(sys.executable, sources, tmp_path / "train", tmp_path / "eval", tmp_path, 200, log, towers=1)
    assert (20, None, 0, 21 * BATCH_SIZE, False) == (result.step, result.precision, result.correct,
                                                     result.examples_seen, result.ok)
    assert "exited with code 1" in result.error
    assert "ValueError: Failed to find file: test_batch.bin" in result.error
    assert result.error.endswith(f"see {log}")
    assert "Traceback (most recent call last):" in log.read_text()


# --- for real --------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.usefixtures("no_leftover_processes")
def test_a_briefly_trained_standalone_model_is_measured_above_chance(tmp_path: Path, kit_inputs: KitInputs) -> None:
    """21 steps of the patched standalone trainer on generated data, then the tutorial's eval of its
    checkpoint: the checkpoint holds the moving averages, the whole 95% interval of precision @ 1
    lies above a ten-class guess (21 steps gave 0.62-0.64 here; 11 steps already 0.56-0.59), and
    the eval log passes its rules."""
    train_dir = tmp_path / "train_standalone"
    run([sys.executable, str(kit_inputs.sources_dir / "cifar10_standalone_train.py"), f"--max_steps={STEPS}",
         f"--data_dir={kit_inputs.data_dir}", f"--train_dir={train_dir}"], timeout=300)
    saved = subprocess.run(
        [sys.executable, "-c", "import sys, tensorflow as tf\n"
         "print('\\n'.join(n for n, _ in tf.train.list_variables(tf.train.latest_checkpoint(sys.argv[1]))))",
         str(train_dir)], capture_output=True, text=True, timeout=120, check=True).stdout.split()
    shadow = "/ExponentialMovingAverage"
    averaged = {n.removesuffix(shadow) for n in saved if n.endswith(shadow)}
    weights = {n for n in saved if not n.endswith(shadow)} - {"global_step"}
    assert (10, weights) == (len(averaged), averaged)

    log = tmp_path / "eval_standalone.log"
    result = evaluate(sys.executable, kit_inputs.sources_dir, train_dir, tmp_path / "eval_standalone",
                      kit_inputs.data_dir, RECORDS, log, towers=1, timeout=300)
    assert ("", STEPS - 1, counted_examples(RECORDS)) == (result.error, result.step, result.counted)
    assert result.low is not None and result.low > CHANCE, result
    assert judge_eval_log(log, "standalone", RULES).passed, judge_eval_log(log, "standalone", RULES).text
