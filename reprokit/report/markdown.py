"""The report of a run: results.json, report.md and a plot, all from one results dict."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from reprokit.files import write_figure, write_json, write_text
from reprokit.names import PLOT, REPORT, RESULTS


def _fmt(value: float | None, digits: int = 1, suffix: str = "") -> str:
    return "n/a" if value is None else f"{value:.{digits}f}{suffix}"


def speed_table(results: dict[str, Any]) -> list[str]:
    art, speed = results["article"], results.get("speed") or {}
    workers = results["options"]["workers"]
    rows = [
        ("standalone examples/sec (median)", _fmt(art["standalone_rate"]), _fmt(speed.get("standalone_rate"))),
        (f"cluster examples/sec (1 ps + {workers} workers)", _fmt(art["cluster_rate"]),
         _fmt(speed.get("cluster_rate"))),
        ("speed-up (cluster / standalone)", _fmt(art["speedup"], 2, "x"), _fmt(speed.get("speedup"), 2, "x")),
        ("scaling efficiency (speed-up / workers)",
         _fmt(100 * art["speedup"] / art["workers"], 1, "%"),
         _fmt(None if speed.get("efficiency") is None else 100 * speed["efficiency"], 1, "%")),
    ]
    lines = ["| figure | article (2017) | this run |", "| --- | ---: | ---: |"]
    lines += [f"| {a} | {b} | {c} |" for a, b, c in rows]
    return lines


def markdown(results: dict[str, Any], plot_name: str | None) -> str:
    m, data, layout, backend = results["machine"], results.get("data") or {}, results["layout"], results["backend"]
    out = [f"# Reproduction report: {results['verdict']}", ""]
    if results.get("error"):
        out += [f"**Error:** {results['error']}", ""]
    if data.get("notice"):
        out += [f"> **Data:** {data['notice']}", ""]
    out += speed_table(results)
    out += ["", f"Speed rule: {(results.get('speed') or {}).get('warmup_rule', 'n/a')}.",
            "The ratios are the figures to compare; absolute rates depend on the machine.", ""]
    if plot_name:
        out += [f"![examples/sec per logged step]({plot_name})", ""]
    out += ["## Rules (expected_logs/)", "", "| verdict | rule | mode | detail |", "| --- | --- | --- | --- |"]
    for v in results["rules"]:
        detail = v["message"].replace("|", "\\|").replace("\n", " ")
        word = "PASS" if v["passed"] else ("WARN" if v.get("severity") == "warning" else "**FAIL**")
        out.append(f"| {word} | {v['rule']} | {v['mode']} | {detail} |")
        if not v["passed"]:
            for e in v["evidence"][:3]:
                where = e["path"] + (f":{e['line']}" if e["line"] is not None else "")
                out.append(f"| | | | `{where}`: {e['text'][:100].replace('|', '/')} |")
    out += ["", "## How it ran", "", "| what | value |", "| --- | --- |"]
    facts = [
        ("steps", results["options"]["steps"]), ("workers", results["options"]["workers"]),
        ("CPU layout", f"{layout['name']}: " + ", ".join(f"{r}={c}" for r, c in sorted(layout["cpus"].items()))),
        ("kit settings", f"{results['tuning']['name']}: {results['tuning']['why']}" if results.get("tuning") else "n/a"),
        *[(k, v) for k, v in backend.items() if v],
        ("interfaces the cluster saw", ", ".join(
            ((results["modes"].get("cluster") or {}).get("outcome") or {}).get("interfaces") or []) or "n/a"),
        ("data", f"{data.get('source', 'n/a')}" + (" (generated)" if data.get("synthetic") else "")),
        ("TensorFlow", m["tensorflow"]), ("Python", m["python"]),
        ("CPU", f"{m['cpu_model']} ({m['cpus_usable']} usable of {m['cpu_count']})"),
        ("platform", m["platform"]), ("finished", results["finished"]),
    ]
    out += [f"| {k} | {v} |" for k, v in facts]
    out += ["", "## Stages", "", "| stage | status | seconds | log |", "| --- | --- | ---: | --- |"]
    out += [f"| {s['name']} | {s['status']} | {s['seconds']} | {s['log']} |" for s in results["stages"]]
    out += ["", "## Checksums", ""]
    for group, sums in results["checksums"].items():
        out += [f"- {group}/{name}: `{digest[:16]}…`" for name, digest in sums.items()]
    out += ["", f"**{results['verdict']}**", ""]
    return "\n".join(out)


def plot(results: dict[str, Any], path: Path) -> Path | None:
    """examples/sec per logged step for both modes, the article's figures as reference lines."""
    modes = {m: d["steps"] for m, d in results["modes"].items() if d["steps"]}
    if not modes:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    art = results["article"]
    fig, ax = plt.subplots(figsize=(8, 4.5), dpi=110)
    colours = {"standalone": "tab:blue", "cluster": "tab:orange"}
    for mode, steps in modes.items():
        ax.plot([s["step"] for s in steps], [s["examples_per_sec"] for s in steps], marker="o", markersize=3,
                color=colours.get(mode), label=f"{mode} (this run)")
    ax.axhline(art["standalone_rate"], color="tab:blue", linestyle="--", linewidth=1,
               label=f"standalone, article ({art['standalone_rate']:.0f})")
    ax.axhline(art["cluster_rate"], color="tab:orange", linestyle="--", linewidth=1,
               label=f"cluster, article ({art['cluster_rate']:.0f})")
    speed = results.get("speed")
    title = "examples/sec per logged step"
    if speed:
        title += f": speed-up {speed['speedup']:.2f}x here vs {art['speedup']:.2f}x in the article"
    ax.set(title=title, xlabel="step", ylabel="examples/sec")
    ax.set_yscale("log")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    write_figure(fig, path)
    plt.close(fig)
    return path


def write_all(run_dir: Path, results: dict[str, Any]) -> list[Path]:
    """Write results.json, the plot and report.md; return the paths written."""
    written = [write_json(run_dir / RESULTS, results)]
    png = plot(results, run_dir / PLOT)
    if png:
        written.append(png)
    written.append(write_text(run_dir / REPORT, markdown(results, png.name if png else None)))
    return written


def rerender(run_dir: Path) -> list[Path]:
    """`invoke report RUN`: the same report again from the run's results.json."""
    path = run_dir / RESULTS
    if not path.is_file():
        from reprokit.errors import KitError

        raise KitError(f"{path} is missing", "the run did not get to its report stage; run it again")
    return write_all(run_dir, json.loads(path.read_text()))
