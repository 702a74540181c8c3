"""The report of a run: report.md and its plot, rendered from run.json and results.json."""

from __future__ import annotations

from pathlib import Path

from reprokit.files import write_text
from reprokit.judge.claims import LEARNING_POWER
from reprokit.judge.speed import format_estimate, format_number, format_share
from reprokit.judge.threads import INPUT_THREADS_PER_TOWER
from reprokit.names import PLOT, REPORT, RESULTS, eval_dir, train_dir
from reprokit.report.plots import speed_plot
from reprokit.report.results import RunResults
from reprokit.run_folders import RunInfo


def speed_table(info: RunInfo, results: RunResults) -> list[str]:
    """The article's figures beside this run's, each of ours with its 95% interval."""
    art, speed = results.article, results.speed
    rows = [
        ("standalone examples/sec", format_number(art.standalone_rate, 1),
         format_estimate(speed.standalone if speed else None, "", 1, brief=True)),
        (f"cluster examples/sec (1 ps + {info.workers} workers)", format_number(art.cluster_rate, 1),
         format_estimate(speed.cluster if speed else None, "", 1, brief=True)),
        ("speed-up (cluster / standalone)", format_number(art.speedup, 2, "x"),
         format_estimate(speed.speedup if speed else None, brief=True)),
        ("scaling efficiency (speed-up / workers)", format_share(art.speedup / art.workers),
         format_share(speed.efficiency if speed else None)),
    ]
    if speed is not None and speed.reported is not None:
        # The article's figures are its programs' own: beside them, ours say what they claimed.
        rows.append(("speed-up the programs report of themselves (not judged)", format_number(art.speedup, 2, "x"),
                     format_estimate(speed.reported, brief=True)))
    samples = "" if speed is None else (f" by the kit's clock ({speed.speedup.method}; {speed.standalone.samples} and "
                                        f"{speed.cluster.samples} timed intervals)")
    told = art.line_times()
    return ["| figure | article (2017) | this run, 95% CI" + samples + " |", "| --- | ---: | ---: |"] + \
        [f"| {a} | {b} | {c} |" for a, b, c in rows] + (["", told] if told else [])


def dead_threads_lines(results: RunResults) -> list[str]:
    """Dead input threads per tower of each mode, or a line saying there were none."""
    lines = []
    for mode, data in results.modes.items():
        dead = data.dead_input_threads
        if dead:
            towers = ", ".join(f"{tower}: {len(reasons)} of {INPUT_THREADS_PER_TOWER}" for tower, reasons in dead.items())
            reasons = sorted({r.split(":", 1)[0] for rs in dead.values() for r in rs if r})
            lines.append(f"- {mode}: dead input threads per tower: {towers} ({', '.join(reasons) or 'no reason logged'})")
        elif data.steps:
            lines.append(f"- {mode}: no input thread died")
    return lines


MODEL_BYTES = 1_068_298 * 4  # the model's float32 parameters: what a worker pulls, and pushes as gradients


def hosts_and_links_lines(results: RunResults) -> list[str]:
    """The hosts backend's hosts: address, link and bytes per step, beside the model's size."""
    cluster = results.modes.get("cluster")
    network = cluster.outcome.network if cluster and cluster.outcome else {}
    hosts = network.get("hosts")
    if not isinstance(hosts, dict) or not hosts:
        return []

    def mb(value: object) -> str:
        return f"{value / 1e6:.2f} MB" if isinstance(value, (int, float)) else "n/a"

    lines = [f"Every host's link: {network.get('link')} (tbf, both directions; no added delay). "
             f"Bytes per step from {network.get('per_step_from') or 'n/a'}; the model's parameters are "
             f"{MODEL_BYTES / 1e6:.2f} MB, what a worker pulls and pushes as gradients when they live on the ps.",
             "", "| host | address | sent per step | received per step | sent in all | received in all |",
             "| --- | --- | ---: | ---: | ---: | ---: |"]
    for role, row in hosts.items():
        lines.append(f"| {role} | {row.get('address')} | {mb(row.get('sent_per_step'))} | "
                     f"{mb(row.get('received_per_step'))} | {mb(row.get('sent'))} | {mb(row.get('received'))} |")
    return lines


def faults_lines(results: RunResults) -> list[str]:
    """Each mode's injected faults and restarts (reprokit/run/faults.py): a timeline, and what it cost."""
    lines: list[str] = []
    for mode, data in results.modes.items():
        recovery = data.outcome.recovery if data.outcome else {}
        if not recovery:
            continue
        restarts = recovery.get("restarts") or {}
        restarted = ", ".join(f"{role} {n} time{'s' if n > 1 else ''}" for role, n in restarts.items())
        lost = recovery.get("seconds_lost")
        cost = (f"; the steps after the first fault took {lost} s beyond the pace before it "
                f"({recovery.get('pace_s_per_step')} s a step)") if lost is not None else ""
        again = recovery.get("functions_run_again")
        if again is not None:
            cost += f"; the coordinator put {again} function{'' if again == 1 else 's'} back, to run again"
        redone = recovery.get("steps_redone")
        if redone:
            cost += f"; at least {redone} step{'' if redone == 1 else 's'} ran again, from the last checkpoint"
        elif redone is not None:
            cost += "; no logged step ran again: it resumed from its last checkpoint"
        lines += [f"The {mode} run: faults {', '.join(recovery.get('faults') or []) or 'none'}; "
                  f"restarted: {restarted or 'no role'}{cost}.", "",
                  "| seconds | last logged step | role | what | detail |", "| ---: | ---: | --- | --- | --- |"]
        for e in recovery.get("events") or []:
            step = "" if e["step"] is None else e["step"]
            lines.append(f"| {e['t']:.1f} | {step} | {e['role']} | {e['what']} | {e['detail'].replace('|', '/')} |")
        lines.append("")
    return lines


def evaluation_lines(run_dir: Path, results: RunResults) -> list[str]:
    """precision @ 1 of each mode's last checkpoint, and where TensorBoard finds each mode's events."""
    lines = ["| mode | step | examples seen | precision @ 1 (95% CI) | correct of counted | eval log |",
             "| --- | ---: | ---: | ---: | ---: | --- |"]
    for mode, data in results.modes.items():
        e = data.evaluation
        if e is None:
            continue
        shown = e.error.replace("|", "/") if e.error or e.precision is None else \
            f"{e.precision:.3f} ({format_number(e.low, 3)}-{format_number(e.high, 3)})"
        lines.append(f"| {mode} | {e.step if e.step is not None else 'n/a'} | {e.examples_seen:,} | {shown} | "
                     f"{e.correct} of {e.counted} | {e.log.name} |")
    folders = [folder(run_dir, mode) for folder in (train_dir, eval_dir) for mode in results.modes]
    folders = [f for f in folders if f.is_dir()]
    if folders:
        spec = ",".join(f"{f.name}:{f}" for f in folders)
        lines += ["", "TensorBoard event folders: " + ", ".join(f"`{f.name}/`" for f in folders)
                  + f". Open them with `tensorboard --logdir_spec {spec}`."]
    return lines


def markdown(run_dir: Path, info: RunInfo, results: RunResults, plot_name: str | None) -> str:
    m, data, backend = results.machine, results.data, results.backend
    out = [f"# Reproduction report: {results.verdict}", ""]
    if results.verdict_lines:
        out += ["```", *results.verdict_lines, "```", ""]
    if results.error:
        out += [f"**Error:** {results.error}", ""]
    if data and data.notice:
        out += [f"> **Data:** {data.notice}", ""]
    exposure = results.exposure
    if exposure and exposure.beyond_run:
        out += [f"> **Exposed:** the servers were reachable on {exposure.where} for the length of the run.", ""]
    for verdict in (results.claim, results.learning, results.updates):
        if verdict is not None:
            out += [f"- **{verdict.claim}: {verdict.status}**: {verdict.reason}."]
    if results.learning is not None:
        out += ["", f"What the learning verdict can see: {LEARNING_POWER}"]
    out += ["", "## Speed", ""] + speed_table(info, results)
    speed = results.speed
    out += ["", f"Speed rule: {speed.warmup_rule if speed else 'n/a'}.",
            f"Intervals: {speed.method if speed else 'n/a'}",
            "The ratios are the figures to compare; absolute rates depend on the machine.", ""]
    if plot_name:
        out += [f"![examples/sec between step lines, by the kit's clock]({plot_name})", ""]
    faults = faults_lines(results)
    if faults:
        out += ["## Faults and restarts", ""] + faults
    evaluated = evaluation_lines(run_dir, results)
    if len(evaluated) > 2:
        out += ["## Learning: precision @ 1 on the test set", ""] + evaluated + [""]
    out += ["## Rules (expected_logs/)", "", "| verdict | rule | mode | detail |", "| --- | --- | --- | --- |"]
    for v in results.rules:
        detail = v.message.replace("|", "\\|").replace("\n", " ")
        word = "PASS" if v.passed else ("WARN" if v.severity == "warning" else "**FAIL**")
        out.append(f"| {word} | {v.rule} | {v.mode} | {detail} |")
        if not v.passed:
            for e in v.evidence[:3]:
                where = str(e.path) + (f":{e.line}" if e.line is not None else "")
                out.append(f"| | | | `{where}`: {e.text[:100].replace('|', '/')} |")
    threads = dead_threads_lines(results)
    if threads:
        out += ["", "## Input threads", ""] + threads
    hosts = hosts_and_links_lines(results)
    if hosts:
        out += ["", "## Hosts and links", ""] + hosts
    out += ["", "## How it ran", "", "| what | value |", "| --- | --- |"]
    cluster = results.modes.get("cluster")
    interfaces = cluster.outcome.interfaces if cluster and cluster.outcome else []
    facts: list[tuple[str, object]] = [
        ("program", info.program), ("steps", info.steps), ("workers", info.workers),
        ("CPU layout", f"{info.layout}: " + ", ".join(f"{r}={c}" for r, c in sorted(info.cpus.items()))),
        ("kit settings", f"{results.tuning.name}: {results.tuning.why}"),
        *[(f"kit fix: {name.replace('_', ' ')}", state) for name, state in results.kit_fixes.items()],
        *[(k, v) for k, v in backend.items() if v],
        ("servers listened on", exposure.where if exposure else "n/a"),
        ("interfaces the cluster saw", ", ".join(interfaces) or "n/a"),
        ("data", (data.source + (" (generated)" if data.synthetic else "")) if data else "n/a"),
        ("TensorFlow", m.tensorflow), ("Python", m.python),
        ("CPU", f"{m.cpu_model} ({m.cpus_usable} usable of {m.cpu_count})"),
        ("platform", m.platform), ("started", info.started), ("finished", results.finished),
    ]
    out += [f"| {k} | {v} |" for k, v in facts]
    out += ["", "## Stages", "", "| stage | status | seconds | log |", "| --- | --- | ---: | --- |"]
    out += [f"| {s.name} | {s.status} | {s.seconds} | {s.log} |" for s in results.stages]
    out += ["", "## Checksums", ""]
    for group, sums in results.checksums.items():
        out += [f"- {group}/{name}: `{digest[:16]}…`" for name, digest in sums.items()]
    out += ["", f"**{results.verdict}**", ""]
    return "\n".join(out)


def write_all(run_dir: Path, info: RunInfo, results: RunResults) -> list[Path]:
    """Write results.json, the plot and report.md, each whole; return the paths written."""
    written = [results.write(run_dir)]
    png = speed_plot(results, run_dir / PLOT)
    if png:
        written.append(png)
    written.append(write_text(run_dir / REPORT, markdown(run_dir, info, results, png.name if png else None)))
    return written


def rerender(run_dir: Path) -> list[Path]:
    """`invoke report RUN`: the same report again from the run's results.json."""
    return write_all(run_dir, RunInfo.load(run_dir), RunResults.load(run_dir / RESULTS))
