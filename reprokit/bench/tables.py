"""Tables and plots of `invoke bench` and `invoke sweep` results, each figure with its 95% interval.

A figure prints as `1.34x (1.21-1.49)` (judge.speed's format_estimate, brief); a line above each
table says what the brackets are (the 95% interval, n, the method in short, the rates behind
it). Plots draw the same intervals as error bars.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from reprokit.bench.findings import (
    CEILING_CPUS,
    KIT_CLOCK,
    NO_LEVER,
    NONE_CHANGE,
    AblationRow,
    BenchResults,
    BenchRun,
    Ceiling,
    NetworkResults,
    SweepResults,
)
from reprokit.bench.network import bandwidth_name, busiest
from reprokit.figures import new_figure, write_figure
from reprokit.judge.speed import Estimate, format_estimate, format_number, format_share, speedup_ceiling
from reprokit.report.results import ArticleFigures
from reprokit.run.thread_cpu import GROUPS, ThreadCpu

if TYPE_CHECKING:
    from matplotlib.axes import Axes

COLOURS = ("tab:orange", "tab:green", "tab:purple")


def interval_line(estimates: Iterable[Estimate | None], what: str) -> str:
    """What the brackets of a table are: the 95% interval, n, the method (short), the samples."""
    present = [e for e in estimates if e is not None]
    if not present:
        return f"{what}: no figure (no run logged a step after warm-up)"
    ns = sorted({e.n for e in present})
    methods = list(dict.fromkeys(e.method for e in present))
    fewest, most = min(e.samples for e in present), max(e.samples for e in present)
    return (f"{what}: 95% CI in brackets, n = {'/'.join(map(str, ns))}; method: {'; '.join(methods)}; "
            f"{fewest if fewest == most else f'{fewest}-{most}'} rates behind each figure")


def ceiling_name(ceiling: Ceiling) -> str:
    return f"the machine's ceiling: {CEILING_CPUS} {ceiling.program} standalones at once, one per CPU"


def _ceiling_lines(ceiling: Ceiling | None) -> list[str]:
    """What the ceiling row and the share column are, above the table."""
    if ceiling is None:
        return []
    return [f"ceiling: {CEILING_CPUS} {ceiling.program} standalones at once, each pinned to one CPU, their step "
            "rates pooled and doubled, over one alone; share of ceiling = a row's speed-up / the ceiling's "
            "(a ratio of two estimates, shown without an interval of its own)"]


def speedup_cell(estimate: Estimate | None, workers: int, cpus: int) -> str:
    """A speed-up as a table shows it; IMPOSSIBLE after one whose whole interval lies above what
    ``workers`` on ``cpus`` CPUs (against one standalone on one) can do: a fault of the measurement."""
    cell = format_estimate(estimate, brief=True)
    ceiling = speedup_ceiling(workers, cpus, 1)
    if estimate is not None and estimate.low > ceiling:
        cell += f" IMPOSSIBLE (above {ceiling:.2f}x)"
    return cell


def timed_by_line(runs: Iterable[BenchRun]) -> list[str]:
    """A line for a file of a kit that did not time runs itself: its rates are the programs' own."""
    if all(run.rates_by == KIT_CLOCK for run in runs):
        return []
    return ["rates: what the programs printed of their own speed (a file of a kit that did not yet time the "
            "step lines itself), not the kit's clock"]


def bench_lines(r: BenchResults, article: ArticleFigures) -> list[str]:
    ceiling = r.ceiling
    runs = [run for rep in r.repetition_results for run in (*rep.standalone.values(), *rep.clusters)]
    lines = [f"rule: {r.warmup_rule}; {r.repetitions} repetitions, {r.steps} steps a run; "
             f"request-id fix {r.request_id_fix}",
             interval_line([row.speedup for row in r.rows] + ([ceiling.speedup] if ceiling else []),
                           "speed-ups (cluster / its program's standalone, paired by repetition)"),
             *_ceiling_lines(ceiling), *timed_by_line(runs), "",
             "| row | standalone ex/s | cluster ex/s | speed-up | efficiency | per repetition |"
             + (" share of ceiling |" if ceiling else ""),
             "| --- | ---: | ---: | ---: | ---: | --- |" + (" ---: |" if ceiling else "")]
    for row in r.rows:
        lines.append(f"| {row.name} | {format_estimate(row.standalone_rate, '', 1, brief=True)} | "
                     f"{format_estimate(row.cluster_rate, '', 1, brief=True)} | "
                     f"{speedup_cell(row.speedup, r.workers, row.cpu_share.cpus)} | {format_share(row.efficiency)} | "
                     f"{', '.join(format_number(s, 2, 'x') for s in row.per_repetition)} |"
                     + (f" {format_share(row.share_of_ceiling)} |" if ceiling else ""))
    if ceiling:
        efficiency = ceiling.speedup.value / CEILING_CPUS if ceiling.speedup else None
        lines.append(f"| {ceiling_name(ceiling)} | {format_estimate(ceiling.standalone_rate, '', 1, brief=True)} | "
                     f"{format_estimate(ceiling.two_cpus_rate, '', 1, brief=True)} | "
                     f"{format_estimate(ceiling.speedup, brief=True)} | {format_share(efficiency)} | "
                     f"{', '.join(format_number(s, 2, 'x') for s in ceiling.per_repetition)} | 100.0% |")
    lines.append(f"| the article (2017) | {article.standalone_rate:.0f} | {article.cluster_rate:.0f} | "
                 f"{article.speedup:.2f}x | {100 * article.speedup / article.workers:.1f}% | |"
                 + (" |" if ceiling else ""))
    if r.baseline:
        base = r.baseline
        per_repetition = ", ".join(format_number(v, 2, "x") for v in base.per_repetition)
        lines += ["", f"the lesson's baseline: its standalone runs at {format_estimate(base.ratio, brief=True)} of the "
                  f"article's (per repetition {per_repetition}; the floor is {base.floor:.2f}x): "
                  f"{'fair' if base.ok else 'TOO WEAK: its speed-up is not fair'}"]
    target = r.target
    if target.lesson_speedup is not None:
        gap = target.speedup - target.lesson_speedup.value
        lines.append(f"target: {target.speedup:.2f}x on {r.workers} workers; the lesson reaches "
                     f"{format_estimate(target.lesson_speedup, brief=True)}"
                     + ("" if target.met else f", {gap:.2f}x short"))
    if r.ablation:
        when = "in every repetition" if r.variants_each_repetition else "once, beside the last repetition"
        lines += ["", "ablation: the article's cluster trainer with each change of the lesson alone (run "
                  f"{when}); speed-up over its program's standalone, gain over the article's cluster in the "
                  "same repetitions (the column beside it); the first and last rows are the table's article "
                  "and lesson rows",
                  interval_line([a.speedup for a in r.ablation], "ablation"), "",
                  *_ablation_table(r.ablation, "the article's cluster")]
    for program, levers in r.levers.items():
        lines += ["", f"the {program} program's levers (settings of its cluster trainer that keep what it learns), "
                  "each a row run in every repetition beside the program's own; speed-up over its standalone, "
                  "gain over its own cluster paired by repetition",
                  interval_line([a.speedup for a in levers], "levers"), "",
                  *_ablation_table(levers, f"the {program} cluster", ceiling is not None)]
    bound = r.input_free_bound
    lines += ["", f"input-free bound of one core: {format_estimate(bound.rate, '', 1, brief=True)} ex/s (one run); "
              f"the article's standalone reaches {format_share(bound.standalone_share)} of it"]
    for name, b in r.breakdown.items():
        lines += ["", f"one traced {name} step: {b.wall_ms} ms wall"]
        lines += [f"  {part:<26} {ms:8.1f} ms  {100 * share:5.1f}%" for part, ms, share in b.rows()]
        for d in b.devices:
            lines.append(f"    {d.device}: busy {d.busy_ms:.1f} ms, idle {d.longest_idle_ms:.1f} ms "
                         f"from +{d.idle_from_ms:.1f} ms")
            if d.collectives:
                lines.append(f"      its last compute op ends at +{d.compute_end_ms:.1f} ms; its collectives start at "
                             + ", ".join(f"+{start:.1f} ({ms:.1f} ms)" for start, ms in d.collectives))
    lines.append("")
    for program, variables in r.placement.items():
        homes = sorted(set(variables.values()))
        lines.append(f"the {program} program's variables live on {', '.join(homes) or 'n/a'}")
    lines += ["", "CPU kept busy per role during a cluster run (cores on average):"]
    for row in r.rows:
        share = row.cpu_share
        lines.append(f"  {row.name}: " + ", ".join(f"{k} {v:.2f}" for k, v in share.roles.items())
                     + f" (of {share.cpus} usable)")
    lines += thread_lines(r)
    if r.loss:
        lines += ["", f"{r.loss.steps}-step clusters: " + "; ".join(
            f"{program} program step {v.step} loss {format_number(v.loss, 2)}, dead input threads "
            f"{v.dead_input_threads}" for program, v in r.loss.programs.items())]
    o = r.overheads
    lines += ["", f"kit overheads: verify + apply {o.verify_and_apply_s} s; cluster ready -> first logged step "
              f"{o.cluster_ready_to_first_step_s} s; teardown {o.teardown_s} s"]
    return lines


def _ablation_table(rows: Sequence[AblationRow], reference: str, ceiling: bool = False) -> list[str]:
    """Changes (or levers) side by side: each one's cluster beside the reference cluster of the
    same repetitions, its speed-up, its gain over the reference, and its share of the ceiling."""
    lines = [f"| change | cluster ex/s | {reference}, same repetitions | speed-up | gain |"
             + (" share of ceiling |" if ceiling else ""),
             "| --- | ---: | ---: | ---: | ---: |" + (" ---: |" if ceiling else "")]
    for a in rows:
        gain = ("reference" if a.change in (NONE_CHANGE, NO_LEVER)
                else format_estimate(a.gain, "%", 0, brief=True, change=True))
        share = f" {format_share(a.share_of_ceiling)} |" if ceiling else ""
        lines.append(f"| {a.change} | {format_estimate(a.cluster_rate, '', 1, brief=True)} | "
                     f"{format_estimate(a.reference, '', 1, brief=True)} | "
                     f"{format_estimate(a.speedup, brief=True)} | {gain} |{share}")
    return lines


def thread_lines(r: BenchResults) -> list[str]:
    """Who took each role's CPU in the middle repetition, by thread group: each program's
    standalone, then each row's cluster, role by role."""
    if not r.repetition_results:
        return []
    middle = len(r.repetition_results) // 2
    rep = r.repetition_results[middle]
    runs: list[tuple[str, BenchRun]] = [(f"{program} standalone", rep.standalone[program])
                                        for program in dict.fromkeys(row.program for row in r.rows)]
    runs += list(zip([row.name for row in r.rows], rep.clusters))
    sampled = [(name, run.threads) for name, run in runs if run.threads is not None]
    head = ["", f"CPU per role by thread group while the main role logged steps (repetition {middle + 1}): "
                "CPU milliseconds per step of the main role, cores on average in brackets, from each "
                "thread's CPU time in /proc; a step's wall time, and what one CPU's worth of it the "
                "role's threads left unused"]
    if not sampled:
        return head + ["  not sampled: threads are read from /proc on the local and hosts backends only"]
    groups = [g for g in GROUPS if any(g in roles for _, t in sampled for roles in t.roles.values())]
    lines = head + ["", "| run | role | window | a step | threads | " + " | ".join(groups) + " | all | one CPU's rest |",
                    "| --- | --- | ---: | ---: | ---: | " + " | ".join("---:" for _ in groups) + " | ---: | ---: |"]
    for name, threads in sampled:
        window = f"{threads.wall_s:.0f} s, steps {threads.first_step}-{threads.last_step}"
        wall = threads.wall_ms_per_step()
        for role, found in threads.roles.items():
            cells = [_thread_cell(threads, role, [g]) if g in found else "-" for g in groups]
            count = sum(g.threads for g in found.values())
            used = threads.ms_per_step(role, found)
            rest = "-" if wall is None or used is None else f"{max(0.0, wall - used):.1f} ms"
            lines.append(f"| {name} | {role} | {window} | " + ("-" if wall is None else f"{wall:.1f} ms")
                         + f" | {count} | " + " | ".join(cells) + f" | {_thread_cell(threads, role, found)} "
                         f"| {rest} |")
    return lines


def _thread_cell(threads: ThreadCpu, role: str, groups: Iterable[str]) -> str:
    ms, cores = threads.ms_per_step(role, groups), threads.cores(role, groups)
    return f"({cores:.2f})" if ms is None else f"{ms:.1f} ms ({cores:.2f})"


def _errors(estimates: Sequence[Estimate | None]) -> tuple[list[float], list[list[float]]]:
    """Values and matplotlib's asymmetric error bars ([below], [above]) of the estimates."""
    values = [e.value if e else 0.0 for e in estimates]
    below = [e.value - e.low if e else 0.0 for e in estimates]
    above = [e.high - e.value if e else 0.0 for e in estimates]
    return values, [below, above]


# The bars of the bench's plot: one colour per row, the ceiling's last.
BAR_COLOURS = ("tab:blue", "tab:cyan", "tab:green", "tab:purple", "tab:brown", "tab:pink", "tab:olive")
CEILING_COLOUR = "tab:gray"


def bench_bars(r: BenchResults) -> list[tuple[str, Estimate | None, list[float | None], str]]:
    """Each bar of the plot: its label, its speed-up, its per-repetition figures, its colour."""
    bars = [(f"{row.program}\n{'+'.join(row.levers) or row.tuning}", row.speedup, row.per_repetition,
             BAR_COLOURS[i % len(BAR_COLOURS)]) for i, row in enumerate(r.rows)]
    if r.ceiling:
        bars.append((f"ceiling\n{CEILING_CPUS} at once", r.ceiling.speedup, r.ceiling.per_repetition, CEILING_COLOUR))
    return bars


def plot_bench(r: BenchResults, path: Path, article: ArticleFigures) -> Path:
    fig, (left, right) = new_figure(11, 4.4, columns=2)
    bars = bench_bars(r)
    names = [name for name, _, _, _ in bars]
    x = list(range(len(names)))
    for i, (_, _, per_repetition, _) in enumerate(bars):
        left.scatter([i] * len(per_repetition), [s or 0 for s in per_repetition], color="grey",
                     s=12, zorder=3, label="a repetition" if i == 0 else None)
    values, errors = _errors([speedup for _, speedup, _, _ in bars])
    left.bar(x, values, yerr=errors, capsize=4, color=[colour for _, _, _, colour in bars])
    left.axhline(r.workers, color="black", linestyle="--", linewidth=1, label=f"limit ({r.workers}x)")
    left.axhline(r.target.speedup, color="tab:green", linestyle=":", linewidth=1,
                 label=f"target ({r.target.speedup:.2f}x)")
    left.axhline(article.speedup, color="tab:red", linestyle="-.", linewidth=1,
                 label=f"the article, 2017 ({article.speedup:.2f}x)")
    left.axhline(1.0, color="grey", linestyle=":", linewidth=1)
    left.set_xticks(x, names, fontsize=8)
    left.set(title="speed-up over its program's standalone (1 CPU), 95% CI", ylabel="cluster / standalone")
    left.legend(fontsize=7)
    changed = [(a.change, a) for a in r.ablation] + [(f"{program}: {a.change}", a)
                                                     for program, levers in r.levers.items() for a in levers]
    if changed:
        changes = [name for name, _ in changed]
        values, errors = _errors([a.speedup for _, a in changed])
        right.barh(range(len(changes)), values, xerr=errors, capsize=4, color="tab:olive")
        right.set_yticks(range(len(changes)), changes, fontsize=8)
        right.axvline(1.0, color="grey", linestyle=":", linewidth=1)
        right.axvline(r.workers, color="black", linestyle="--", linewidth=1)
        right.set(title="ablation: what each change of the lesson, or lever, buys",
                  xlabel="speed-up over its program's standalone")
        right.invert_yaxis()
    return write_figure(fig, path)


def _program_head(program: str, standalone: Estimate | None, header: str, rule: str) -> list[str]:
    """A program's table in a sweep opens with its standalone rate, the baseline of its speed-ups."""
    return ["", f"{program}: standalone (1 CPU) {format_estimate(standalone, '', 1, brief=True)} ex/s", "", header,
            rule]


def sweep_lines(r: SweepResults) -> list[str]:
    lines = [f"{r.cpus} CPUs usable; rule: {r.warmup_rule}",
             interval_line([p.speedup for data in r.programs.values() for p in data.points],
                           "speed-ups (each point's cluster / its program's standalone)")]
    for program, data in r.programs.items():
        lines += _program_head(program, data.standalone_rate, "| workers | ex/s | speed-up | ideal | note |",
                               "| ---: | ---: | ---: | ---: | --- |")
        for p in data.points:
            note = f"oversubscribed: {p.workers} workers on {r.cpus} CPUs" if p.oversubscribed else ""
            lines.append(f"| {p.workers} | {format_estimate(p.rate, '', 1, brief=True)} | "
                         f"{speedup_cell(p.speedup, p.workers, r.cpus)} | {p.workers}.00x | {note} |")
    return lines


def plot_sweep(r: SweepResults, path: Path, article: ArticleFigures) -> Path:
    fig, (ax,) = new_figure(6.5, 4.5)
    ns = sorted({p.workers for data in r.programs.values() for p in data.points})
    top = max(ns + [2])
    ax.plot([1, top], [1, top], "k--", linewidth=1, label="ideal (N x standalone)")
    ax.axhline(r.cpus, color="grey", linestyle=":", linewidth=1, label=f"limit of this machine's {r.cpus} CPUs")
    for (program, data), colour in zip(r.programs.items(), COLOURS):
        values, errors = _errors([p.speedup for p in data.points])
        ax.errorbar([p.workers for p in data.points], values, yerr=errors, fmt="o-", capsize=4, color=colour,
                    label=f"{program} program, this machine (95% CI)")
    ax.plot([1, article.workers], [1.0, article.speedup], "s", color="tab:blue",
            label=f"article ({article.standalone_rate:.0f} -> {article.cluster_rate:.0f} ex/s)")
    if top > r.cpus:
        ax.axvspan(r.cpus + 0.5, top + 0.5, color="red", alpha=0.08,
                   label=f"more workers than the {r.cpus} CPUs: oversubscribed")
    ax.set(title="cluster speed-up over standalone (1 CPU)", xlabel="workers", ylabel="speed-up")
    ax.set_xticks(sorted(set(ns + [1, 2])))
    ax.legend(fontsize=8)
    return write_figure(fig, path)


def network_sweep_lines(r: NetworkResults) -> list[str]:
    lines = [f"{r.workers} workers on simulated hosts; rule: {r.warmup_rule}",
             interval_line([p.speedup for data in r.programs.values() for p in data.points],
                           "speed-ups (each link's cluster / its program's standalone)")]
    for program, data in r.programs.items():
        pred = data.prediction
        lines += _program_head(program, data.standalone_rate,
                               "| link | ex/s | speed-up | predicted ex/s | busiest host: MB per step |",
                               "| --- | ---: | ---: | ---: | --- |")
        for p in data.points:
            load = busiest(p.cluster.network)
            lines.append(f"| {p.link} | {format_estimate(p.rate, '', 1, brief=True)} | "
                         f"{format_estimate(p.speedup, brief=True)} | {format_number(pred.points.get(p.link), 1)} | "
                         + (f"{load[0]}: {load[1] / 1e6:.2f}" if load else "n/a") + " |")
        if pred.why_not:
            lines.append(f"prediction: {pred.why_not}")
        elif pred.never_beats_one_cpu:
            lines.append("the cluster does not beat one CPU even on unshaped links")
        else:
            lines.append(f"prediction: compute {1000 * (pred.compute_step_s or 0):.0f} ms a step + "
                         f"{(pred.bytes_per_step or 0) / 1e6:.2f} MB over the {pred.busiest_host}'s link; "
                         f"the cluster beats one CPU above {bandwidth_name(pred.beats_one_cpu_above_bits_per_s)}")
    return lines


def _right_edge(ax: Axes, x: float, estimate: Estimate | None, colour: str, label: str) -> None:
    values, errors = _errors([estimate])
    ax.errorbar([x], values, yerr=errors, fmt="D", capsize=4, color=colour, label=label)


def plot_network(r: NetworkResults, path: Path, article: ArticleFigures) -> Path:
    fig, (ax,) = new_figure(7.5, 4.8)
    ax.axhline(r.workers, color="black", linestyle="--", linewidth=1, label=f"ideal ({r.workers}x)")
    ax.axhline(1.0, color="grey", linestyle=":", linewidth=1, label="one CPU (1x)")
    ax.axhline(article.speedup, color="tab:blue", linestyle="-.", linewidth=1,
               label=f"article ({article.speedup:.2f}x, one host)")
    top = 1e11
    for (program, data), colour in zip(r.programs.items(), COLOURS):
        alone = data.standalone_rate.value if data.standalone_rate else 0
        shaped = [p for p in data.points if p.bits_per_s]
        values, errors = _errors([p.speedup for p in shaped])
        ax.errorbar([p.bits_per_s or 0 for p in shaped], values, yerr=errors, fmt="o", capsize=4, color=colour,
                    label=f"{program}: measured (95% CI)")
        for p in data.points:
            if not p.bits_per_s:
                _right_edge(ax, top, p.speedup, colour, f"{program}: unshaped (right edge)")
        curve = data.prediction.curve
        if curve and alone:
            ax.plot([c[0] for c in curve], [c[1] / alone for c in curve], "-", color=colour, alpha=0.6,
                    label=f"{program}: predicted (compute + bytes / bandwidth)")
    ax.set_xscale("log")
    ax.set(title="cluster speed-up over one CPU, by link bandwidth", xlabel="every host's link (bit/s)",
           ylabel="speed-up")
    ax.legend(fontsize=7)
    return write_figure(fig, path)
