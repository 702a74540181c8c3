"""Every figure the docs and the patch headers quote comes from one recorded invocation.

A kit invocation's own document (bench.json, sweep.json, network.json, mutants.json; a
reproduction's results.json, with its run.json, in a folder of its own) is kept under
docs/records/ and listed, with its command and its date, in docs/records/README.md. A page says
where its figures come from with a marker, `<!-- figures: records/<file> -->`, which holds
until the next heading or marker (`<!-- figures end -->` ends one early); a patch says it with a
`Figures: docs/records/<file>` field, which holds for its Description and its Change- fields.
Within those, every figure (a decimal, a speed-up `1.57x`, a share `79.0%`, a change
`+34%`) must be one the kit prints from that record, and every date must be the record's: a
figure or a date changed by hand fails here, and so does a derived figure the kit did not print.

Pages and patches whose figures are not tied to a record yet are listed in UNRECORDED; no other
may quote a figure outside a marked part. Some may be quoted anywhere: what every report prints
(the article's figures, from claims.yaml, and the method of every figure: its 95% interval, the
drift it warns of), and the tutorial's hyperparameters as upstream/cifar10.py writes them.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from reprokit.bench.comparison import TARGET_SPEEDUP
from reprokit.bench.findings import BenchResults, NetworkResults, SweepResults
from reprokit.bench.tables import bench_lines, network_sweep_lines, sweep_lines
from reprokit.faults_table import FaultsResults
from reprokit.faults_table import report_lines as faults_report_lines
from reprokit.judge.speed import METHOD, format_number, format_share
from reprokit.mutation import MutantsResults, report_lines
from reprokit.names import RUN_FILE
from reprokit.report.markdown import markdown
from reprokit.report.results import RunResults
from reprokit.run_folders import RunInfo
from reprokit.sources.patches import parse_patch
from tests.support import REPO
from tests.support.kit import article_figures

RECORDS = REPO / "docs" / "records"
INDEX = RECORDS / "README.md"
MARKER = re.compile(r"<!-- figures: (records/[\w./-]+) -->")
END = re.compile(r"<!-- figures end -->")
HEADING = re.compile(r"^#{1,6} ", re.MULTILINE)
# A figure: a signed or plain number with a decimal point, or any number followed by x or %.
FIGURE = re.compile(r"(?<![\w.])[+-]?\d+(?:\.\d+)?[x%](?![\w])|(?<![\w.])[+-]?\d+\.\d+(?![\w.])")
DATE = re.compile(r"\b20\d\d-\d\d-\d\d\b")

# Pages and patches allowed to quote figures that no record holds: none. Keep it empty; a page
# that needs one records the invocation first.
UNRECORDED: set[str] = set()


@dataclass(frozen=True)
class Record:
    path: Path
    command: str
    date: str

    @functools.cache  # noqa: B019  (a few records, read once per test session)
    def rendering(self) -> str:
        """What the kit prints from the record: its tables, as `invoke bench` or `sweep` show them,
        or a reproduction's report, as `invoke report` writes it again from the run's documents."""
        article = article_figures()
        if self.path.name == RunResults.FILE:
            folder = self.path.parent
            return markdown(folder, RunInfo.load(folder), RunResults.load(self.path), None)
        if self.path.name.startswith("bench"):
            return "\n".join(bench_lines(BenchResults.load(self.path), article))
        if self.path.name.startswith("sweep"):
            return "\n".join(sweep_lines(SweepResults.load(self.path)))
        if self.path.name.startswith("mutants"):
            return "\n".join(report_lines(MutantsResults.load(self.path)))
        if self.path.name.startswith("network"):
            return "\n".join(network_sweep_lines(NetworkResults.load(self.path)))
        if self.path.name.startswith("faults"):
            return "\n".join(faults_report_lines(FaultsResults.load(self.path)))
        raise AssertionError(f"{self.path.name}: no reader for this kind of record")


def index() -> dict[str, Record]:
    """docs/records/README.md's table: | file | command | date (UTC) | ..."""
    found = {}
    for line in INDEX.read_text().splitlines():
        cells = [c.strip().strip("`") for c in line.strip().strip("|").split("|")]
        if len(cells) >= 3 and cells[0].endswith(".json"):
            found[f"records/{cells[0]}"] = Record(RECORDS / cells[0], cells[1], cells[2])
    return found


# A version is no figure: TensorFlow 2.21, Python 3.11, Ubuntu 24.04.
VERSION_OF = re.compile(r"(?:TensorFlow|TF|Python|Ubuntu|Debian|Docker|version)\W{0,2}$", re.IGNORECASE)


LINK_TARGET = re.compile(r"\]\([^)]*\)")  # a link's target is an address: `(lesson.md#why-not-185x-...)`


def figures(text: str) -> list[str]:
    text = LINK_TARGET.sub("]", text)
    return [m.group(0) for m in FIGURE.finditer(text) if not VERSION_OF.search(text[max(0, m.start() - 14):m.start()])]


# The tutorial's hyperparameters, as upstream/cifar10.py writes them: facts of the program, not measured.
HYPERPARAMETER = re.compile(r"^[A-Z_]+ = ([0-9.]+)\b", re.MULTILINE)


@functools.cache
def everywhere() -> frozenset[str]:
    """Figures any page may quote: the article's, as the kit's reports print them beside every
    run's (its own, and timed by its lines), those of the method every report states, the lesson's target, which every bench
    prints, and the tutorial's hyperparameters."""
    art = article_figures()
    printed = [format_number(art.standalone_rate, 1), format_number(art.cluster_rate, 1),
               format_number(art.speedup, 2, "x"), format_share(art.speedup / art.workers), METHOD,
               format_number(TARGET_SPEEDUP, 2, "x"), art.line_times(),
               *HYPERPARAMETER.findall((REPO / "upstream" / "cifar10.py").read_text())]
    return frozenset(figures(" ".join(printed)))


def marked_parts(text: str) -> list[tuple[str, str]]:
    """(record, the text it covers) for each marker of a page."""
    parts = []
    for match in MARKER.finditer(text):
        rest = text[match.end():]
        ends = [m.start() for m in (HEADING.search(rest), MARKER.search(rest), END.search(rest)) if m]
        parts.append((match.group(1), rest[:min(ends)] if ends else rest))
    return parts


def unmarked(text: str) -> str:
    """A page without its marked parts (and without code blocks, which quote commands)."""
    for _, part in marked_parts(text):
        text = text.replace(part, "")
    return re.sub(r"^```.*?^```", "", text, flags=re.MULTILINE | re.DOTALL)


def problems(part: str, record: Record) -> list[str]:
    """The figures and dates of ``part`` that the record does not give."""
    printed = set(figures(record.rendering())) | everywhere()
    wrong = [f"{figure}: not printed from {record.path.name}" for figure in figures(part) if figure not in printed]
    wrong += [f"{date}: {record.path.name} is of {record.date}" for date in DATE.findall(part)
              if date != record.date]
    return wrong


def quoting_files() -> dict[str, str]:
    """Every page and every patch header that could quote a figure: name -> its text to check."""
    pages = {str(p.relative_to(REPO)): p.read_text() for p in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]}
    for path in sorted((REPO / "patches").rglob("*.patch")):
        patch = parse_patch(path)
        figures_from = patch.fields.get("Figures", "").removeprefix("docs/")
        told = [text for name, text in patch.fields.items() if name == "Description" or name.startswith("Change-")]
        pages[str(path.relative_to(REPO))] = (f"<!-- figures: {figures_from} -->\n" if figures_from else "") \
            + "\n".join(told)
    return pages


def test_every_record_is_listed_with_its_command_and_date_and_loads() -> None:
    listed = index()
    on_disk = {f"records/{p.relative_to(RECORDS)}" for p in RECORDS.rglob("*.json") if p.name != RUN_FILE}
    assert on_disk == set(listed)
    for record in listed.values():
        assert record.command.startswith("invoke ") and DATE.fullmatch(record.date), record
        assert figures(record.rendering()), record


@pytest.mark.parametrize("name", sorted(quoting_files()))
def test_every_quoted_figure_and_date_is_its_records(name: str) -> None:
    text = quoting_files()[name]
    listed = index()
    wrong = []
    for source, part in marked_parts(text):
        assert source in listed, f"{name} cites {source}, which docs/records/README.md does not list"
        wrong += problems(part, listed[source])
    assert [] == wrong
    if name not in UNRECORDED:
        assert [] == [f for f in figures(unmarked(text)) if f not in everywhere()], \
            f"{name} quotes figures outside a part tied to a record"


def test_the_check_fails_on_a_figure_or_a_date_changed_by_hand() -> None:
    """Seen to fail where it should: the same part, one figure or the date edited."""
    record = next(iter(index().values()))
    text = record.rendering()
    row = next(line for line in text.splitlines() if line.startswith("| ") and figures(line))
    good = f"measured on {record.date}: {row}"
    assert [] == problems(good, record)
    figure = figures(row)[0]
    printed = set(figures(text)) | everywhere()
    digits, suffix = figure.rstrip("x%"), figure[len(figure.rstrip("x%")):]
    # The last digit bumped, as a hand edit would: the first such figure the record does not print.
    edited = next(e for bump in range(1, 10)
                  if (e := f"{digits[:-1]}{(int(digits[-1]) + bump) % 10}{suffix}") not in printed)
    assert [f"{edited}: not printed from {record.path.name}"] == problems(good.replace(figure, edited, 1), record)
    assert [f"2017-10-10: {record.path.name} is of {record.date}"] == problems(
        good.replace(record.date, "2017-10-10"), record)
