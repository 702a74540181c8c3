"""The report of a run: report.md and its plot, rendered from run.json and results.json."""

from __future__ import annotations

from pathlib import Path

from reprokit.files import write_text
from reprokit.judge.threads import INPUT_THREADS_PER_TOWER
from reprokit.names import PLOT, REPORT
from reprokit.report.plots import speed_plot
from reprokit.report.results import RunResults
from reprokit.runs import RunInfo


def _fmt(value: float | None, digits: int = 1, suffix: str = "") -> str:
    return "n/a" if value is None else f"{value:.{digits}f}{suffix}"


def speed_table(info: RunInfo, results: RunResults) -> list[str]:
    art, speed = results.article, results.speed or {}
    rows = [
        ("standalone examples/sec (median)", _fmt(art["standalone_rate"]), _fmt(speed.get("standalone_rate"))),
        (f"cluster examples/sec (1 ps + {info.workers} workers)", _fmt(art["cluster_rate"]),
         _fmt(speed.get("cluster_rate"))),
        ("speed-up (cluster / standalone)", _fmt(art["speedup"], 2, "x"), _fmt(speed.get("speedup"), 2, "x")),
        ("scaling efficiency (speed-up / workers)",
         _fmt(100 * art["speedup"] / art["workers"], 1, "%"),
         _fmt(None if speed.get("efficiency") is None else 100 * speed["efficiency"], 1, "%")),
    ]
    return ["| figure | article (2017) | this run |", "| --- | ---: | ---: |"] + [f"| {a} | {b} | {c} |" for a, b, c in rows]


def dead_threads_lines(results: RunResults) -> list[str]:
    """Dead input threads per tower of each mode, or a line saying there were none."""
    lines = []
    for mode, data in results.modes.items():
        dead = data.get("dead_input_threads") or {}
        if dead:
            towers = ", ".join(f"{tower}: {len(reasons)} of {INPUT_THREADS_PER_TOWER}" for tower, reasons in dead.items())
            reasons = sorted({r.split(":", 1)[0] for rs in dead.values() for r in rs if r})
            lines.append(f"- {mode}: dead input threads per tower: {towers} ({', '.join(reasons) or 'no reason logged'})")
        elif data.get("steps"):
            lines.append(f"- {mode}: no input thread died")
    return lines


MODEL_BYTES = 1_068_298 * 4  # the model's float32 parameters: what a worker pulls, and pushes as gradients


def network_lines(results: RunResults) -> list[str]:
    """The hosts backend's hosts: address, link and bytes per step, beside the model's size."""
    network = ((results.modes.get("cluster") or {}).get("outcome") or {}).get("network") or {}
    if not network.get("hosts"):
        return []
    mb = lambda value: "n/a" if value is None else f"{value / 1e6:.2f} MB"  # noqa: E731
    lines = [f"Every host's link: {network['link']} (tbf, both directions; no added delay). "
             f"Bytes per step from {network.get('per_step_from') or 'n/a'}; the model's parameters are "
             f"{MODEL_BYTES / 1e6:.2f} MB, what a worker pulls and pushes as gradients when they live on the ps.",
             "", "| host | address | sent per step | received per step | sent in all | received in all |",
             "| --- | --- | ---: | ---: | ---: | ---: |"]
    for role, row in network["hosts"].items():
        lines.append(f"| {role} | {row['address']} | {mb(row.get('sent_per_step'))} | "
                     f"{mb(row.get('received_per_step'))} | {mb(row['sent'])} | {mb(row['received'])} |")
    return lines


def markdown(info: RunInfo, results: RunResults, plot_name: str | None) -> str:
    m, data, backend = results.machine, results.data or {}, results.backend
    out = [f"# Reproduction report: {results.verdict}", ""]
    if results.error:
        out += [f"**Error:** {results.error}", ""]
    if data.get("notice"):
        out += [f"> **Data:** {data['notice']}", ""]
    exposure = results.exposure or {}
    if exposure.get("beyond_run"):
        out += [f"> **Exposed:** the servers were reachable on {exposure['where']} for the length of the run.", ""]
    out += speed_table(info, results)
    out += ["", f"Speed rule: {(results.speed or {}).get('warmup_rule', 'n/a')}.",
            "The ratios are the figures to compare; absolute rates depend on the machine.", ""]
    if plot_name:
        out += [f"![examples/sec per logged step]({plot_name})", ""]
    out += ["## Rules (expected_logs/)", "", "| verdict | rule | mode | detail |", "| --- | --- | --- | --- |"]
    for v in results.rules:
        detail = v["message"].replace("|", "\\|").replace("\n", " ")
        word = "PASS" if v["passed"] else ("WARN" if v.get("severity") == "warning" else "**FAIL**")
        out.append(f"| {word} | {v['rule']} | {v['mode']} | {detail} |")
        if not v["passed"]:
            for e in v["evidence"][:3]:
                where = e["path"] + (f":{e['line']}" if e["line"] is not None else "")
                out.append(f"| | | | `{where}`: {e['text'][:100].replace('|', '/')} |")
    threads = dead_threads_lines(results)
    if threads:
        out += ["", "## Input threads", ""] + threads
    hosts = network_lines(results)
    if hosts:
        out += ["", "## Hosts and links", ""] + hosts
    out += ["", "## How it ran", "", "| what | value |", "| --- | --- |"]
    cluster = (results.modes.get("cluster") or {}).get("outcome") or {}
    facts = [
        ("program", info.program), ("steps", info.steps), ("workers", info.workers),
        ("CPU layout", f"{info.layout}: " + ", ".join(f"{r}={c}" for r, c in sorted(info.cpus.items()))),
        ("kit settings", f"{results.tuning['name']}: {results.tuning['why']}"),
        *[(f"kit fix: {name.replace('_', ' ')}", state) for name, state in results.kit_fixes.items()],
        *[(k, v) for k, v in backend.items() if v],
        ("servers listened on", exposure.get("where", "n/a")),
        ("interfaces the cluster saw", ", ".join(cluster.get("interfaces") or []) or "n/a"),
        ("data", f"{data.get('source', 'n/a')}" + (" (generated)" if data.get("synthetic") else "")),
        ("TensorFlow", m["tensorflow"]), ("Python", m["python"]),
        ("CPU", f"{m['cpu_model']} ({m['cpus_usable']} usable of {m['cpu_count']})"),
        ("platform", m["platform"]), ("started", info.started), ("finished", results.finished),
    ]
    out += [f"| {k} | {v} |" for k, v in facts]
    out += ["", "## Stages", "", "| stage | status | seconds | log |", "| --- | --- | ---: | --- |"]
    out += [f"| {s['name']} | {s['status']} | {s['seconds']} | {s['log']} |" for s in results.stages]
    out += ["", "## Checksums", ""]
    for group, sums in results.checksums.items():
        out += [f"- {group}/{name}: `{digest[:16]}…`" for name, digest in sums.items()]
    out += ["", f"**{results.verdict}**", ""]
    return "\n".join(out)


def write_all(run_dir: Path, results: RunResults) -> list[Path]:
    """Write results.json, the plot and report.md, each whole; return the paths written."""
    info = RunInfo.load(run_dir)
    written = [results.save(run_dir)]
    png = speed_plot(results, run_dir / PLOT)
    if png:
        written.append(png)
    written.append(write_text(run_dir / REPORT, markdown(info, results, png.name if png else None)))
    return written


def rerender(run_dir: Path) -> list[Path]:
    """`invoke report RUN`: the same report again from the run's results.json."""
    return write_all(run_dir, RunResults.load(run_dir))
