"""reprokit.judge.logs: each line of a real log file becomes one record, with its step fields."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest

from reprokit.judge.logs import (
    LogError,
    StepFields,
    parse_line,
    parse_log,
    resumed_log,
    step_fields,
)
from tests.support import REPO
from tests.support import SAMPLES as ALL_SAMPLES

ROOT = REPO
ARTICLE = ROOT / "expected_logs" / "article"
SAMPLES = ALL_SAMPLES / "logs"


def test_the_article_standalone_log_parses_into_one_record_per_line() -> None:
    """The standalone excerpt has two download lines, one Filling queue line and six steps."""
    records = parse_log(ARTICLE / "standalone.log", "standalone")
    expected = ["other", "other", "filling_queue"] + ["step"] * 6
    assert expected == [r.kind for r in records]
    assert list(range(1, 10)) == [r.line for r in records]
    assert {"standalone"} == {r.role for r in records}


def test_a_step_line_yields_its_numbers() -> None:
    """The article's step 0 line gives back the four printed numbers; its datetime stays in the text."""
    record = parse_log(ARTICLE / "standalone.log", "standalone")[3]
    expected = StepFields(0, 4.68, 12.8, 9.998)
    assert expected == record.step
    assert "2017-10-10 14:43:30.635849: step 0, loss = 4.68 (12.8 examples/sec; 9.998 sec/batch)" \
        == record.text


def test_the_article_cluster_log_has_two_filling_queue_lines_then_steps_0_to_50() -> None:
    """One input pipeline per worker tower: two Filling queue lines before the steps."""
    records = parse_log(ARTICLE / "cluster.log", "client")
    assert ["filling_queue", "filling_queue"] == [r.kind for r in records[:2]]
    assert [0, 10, 20, 30, 40, 50] == [s.step for s in step_fields(records)]


def test_the_launcher_prefix_is_stripped_and_its_time_kept() -> None:
    """A prefixed line keeps the trainer's text as printed and the launcher's time apart."""
    records = parse_log(SAMPLES / "standalone_run.log", "standalone")
    step0 = records[7]
    assert "2026-12-02 15:40:12.345678: step 0, loss = 4.69 (11.4 examples/sec; 11.200 sec/batch)" \
        == step0.text
    assert datetime(2026, 12, 2, 15, 40, 12, 346109) == step0.logged_at
    assert "step" == step0.kind
    assert not any(r.text.startswith("2026-12-02T") for r in records)


def test_a_launcher_prefix_without_a_fraction_of_a_second_is_stripped_too() -> None:
    """``datetime.isoformat()`` drops the fraction when it is zero; the parser accepts that."""
    record = parse_log(SAMPLES / "standalone_run.log", "standalone")[2]
    assert "non-resource variables are not supported in the long term" == record.text
    assert datetime(2026, 12, 2, 15, 39, 58) == record.logged_at


def test_lines_without_a_launcher_prefix_have_no_logged_at() -> None:
    """The article's logs carry no launcher prefix, so no record has a launcher time."""
    records = parse_log(ARTICLE / "cluster.log", "client")
    assert [None] * len(records) == [r.logged_at for r in records]


def test_a_step_timestamp_without_microseconds_is_parsed() -> None:
    """``str(datetime.now())`` prints no fraction when the microseconds are zero: still a step line."""
    record = parse_log(SAMPLES / "cluster_run.log", "client")[10]
    assert ("step", "2026-12-02 15:40:42: step 30, ") == (record.kind, record.text[:30])
    assert record.step is not None and 30 == record.step.step


def test_a_carriage_return_inside_a_line_does_not_split_it() -> None:
    """The download progress bar's \\r stays in its line, so line numbers agree with grep -n."""
    records = parse_log(SAMPLES / "standalone_run.log", "standalone")
    assert 10 == len(records)
    assert "\r>> Downloading cifar-10-binary.tar.gz 100.0%" in records[4].text


def test_a_tensorflow_line_with_a_timestamp_is_not_a_step() -> None:
    """A TensorFlow C++ log line starts with a datetime too, yet it is "other"."""
    record = parse_log(SAMPLES / "cluster_run.log", "client")[3]
    assert "other" == record.kind
    assert record.text.startswith("2026-12-02 15:39:58.900123: I tensorflow/")


def test_a_malformed_step_line_is_other_and_untimestamped_steps_are_steps() -> None:
    """A step report missing its ';' is not a step; one missing its datetime still is."""
    malformed = parse_log(SAMPLES / "malformed_step_line.log", "standalone")
    assert ["step", "other", "step"] == [r.kind for r in malformed[7:]]
    bare = parse_log(SAMPLES / "untimestamped_steps.log", "standalone")
    assert ["step 0,", "step 10", "step 20"] == [r.text[:7] for r in bare if r.kind == "step"]
    assert [0, 10, 20] == [s.step for s in step_fields(bare)]


def test_negative_and_nan_numbers_parse_so_that_rules_can_judge_them() -> None:
    """The parser takes what %.1f printed; the reference rules decide what is wrong."""
    negative = step_fields(parse_log(SAMPLES / "negative_rate.log", "standalone"))[2]
    assert (-149.8, -0.854) == (negative.examples_per_sec, negative.sec_per_batch)
    kind, fields, _, _ = parse_line("2017-10-10 14:43:30.635849: step 0, loss = nan "
                                    "(12.8 examples/sec; 9.998 sec/batch)")
    assert "step" == kind
    assert fields is not None and fields.loss != fields.loss  # nan is not equal to itself


def test_windows_line_endings_are_not_part_of_the_text(tmp_path: Path) -> None:
    """A log written with \\r\\n endings yields the same texts as one written with \\n."""
    crlf = tmp_path / "standalone.log"
    crlf.write_bytes((ARTICLE / "standalone.log").read_bytes().replace(b"\n", b"\r\n"))
    expected = [r.text for r in parse_log(ARTICLE / "standalone.log", "standalone")]
    assert expected == [r.text for r in parse_log(crlf, "standalone")]


def test_a_missing_log_file_raises_a_log_error_naming_the_file_and_role() -> None:
    """A role that never started leaves no log; the error says which and where to look."""
    missing = SAMPLES / "no_such_run" / "worker1.log"
    with pytest.raises(LogError) as caught:
        parse_log(missing, "worker1")
    assert str(missing) in str(caught.value)
    assert "worker1" in caught.value.message


def test_a_record_says_where_it_is_as_path_colon_line() -> None:
    """``where`` is the form an editor opens."""
    record = parse_log(ARTICLE / "cluster.log", "client")[2]
    assert f"{ARTICLE / 'cluster.log'}:3" == record.where


def test_a_resumed_log_drops_the_steps_the_next_incarnation_ran_again(tmp_path: Path) -> None:
    """worker0 logged steps 0 to 30, was lost, and its next incarnation resumed from step 20's
    checkpoint: read as one run, the log has steps 0, 10, then 20 to 50 from the second, and each
    incarnation's header line."""
    def log(name: str, steps: range) -> Path:
        lines = ["Filling shuffle buffer with 20000 CIFAR records before starting to train."]
        lines += [f"2026-12-07 05:00:00.000000: step {s}, loss = 4.60 (900.0 examples/sec; 0.142 sec/batch)"
                  for s in steps]
        path = tmp_path / name
        path.write_text("\n".join(lines) + "\n")
        return path

    paths = [log("worker0.log", range(0, 40, 10)), log("worker0.2.log", range(20, 60, 10))]
    records = resumed_log(paths, "worker0")
    assert [0, 10, 20, 30, 40, 50] == [f.step for f in step_fields(records)]
    assert [paths[0]] * 2 + [paths[1]] * 4 == [r.path for r in records if r.step is not None]
    assert 2 == sum(r.text.startswith("Filling shuffle buffer") for r in records)
    assert parse_log(paths[0], "worker0") == resumed_log(paths[:1], "worker0")  # one incarnation: its log
