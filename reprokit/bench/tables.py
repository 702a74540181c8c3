"""Tables and plots of `invoke bench` and `invoke sweep` results."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from reprokit.bench.network import bandwidth_name, busiest
from reprokit.files import write_figure
from reprokit.judge.speed import ARTICLE_SPEEDUP, ARTICLE_WORKERS


def _f(value: float | None, fmt: str = "{:.1f}") -> str:
    return "n/a" if value is None else fmt.format(value)


def _x(value: float | None) -> str:
    return _f(value, "{:.2f}x")


def _pct(value: float | None) -> str:
    return _f(None if value is None else 100 * value, "{:.1f}%")


def bench_lines(r: dict[str, Any]) -> list[str]:
    lines = [f"rule: {r['warmup_rule']}; {r['repetitions']} repetitions, {r['steps']} steps a run; "
             f"request-id fix {r['kit_fixes']['request_id_fix']}", "",
             "| row | standalone ex/s | cluster ex/s | speed-up | efficiency | per repetition |",
             "| --- | ---: | ---: | ---: | ---: | --- |"]
    for row in r["rows"]:
        lines.append(f"| {row['name']} | {_f(row['standalone_rate'])} | {_f(row['cluster_rate'])} | "
                     f"{_x(row['speedup'])} | {_pct(row['efficiency'])} | "
                     f"{', '.join(_x(s) for s in row['per_repetition'])} |")
    lines.append(f"| the article (2017) | 98 | 170 | {ARTICLE_SPEEDUP:.2f}x | "
                 f"{100 * ARTICLE_SPEEDUP / ARTICLE_WORKERS:.1f}% | |")
    baseline, target = r.get("baseline"), r["target"]
    if baseline:
        lines += ["", f"the lesson's baseline: its standalone runs at {_x(baseline['median'])} of the article's "
                  f"(per repetition {', '.join(_x(v) for v in baseline['per_repetition'])}; the floor is "
                  f"{baseline['floor']:.2f}x): {'fair' if baseline['ok'] else 'TOO WEAK: its speed-up is not fair'}"]
    if target["lesson_speedup"] is not None:
        gap = target["speedup"] - target["lesson_speedup"]
        lines.append(f"target: {target['speedup']:.2f}x on {r['workers']} workers; the lesson reaches "
                     f"{_x(target['lesson_speedup'])}" + ("" if target["met"] else f", {gap:.2f}x short"))
    if r["ablation"]:
        lines += ["", "ablation: the article's cluster trainer with each change of the lesson alone "
                  "(speed-up over the lesson's standalone; gain over the article's cluster)", "",
                  "| change | cluster ex/s | speed-up | gain |", "| --- | ---: | ---: | ---: |"]
        lines += [f"| {a['change']} | {_f(a['cluster_rate'])} | {_x(a['speedup'])} | "
                  f"{_f(None if a['gain'] is None else 100 * (a['gain'] - 1), '{:+.0f}%')} |" for a in r["ablation"]]
    bound = r["input_free_bound"]
    lines += ["", f"input-free bound of one core: {_f(bound['rate'])} ex/s; the article's standalone reaches "
              f"{_pct(bound['standalone_share'])} of it"]
    for name, b in r["breakdown"].items():
        lines += ["", f"one traced {name} step: {b['wall_ms']} ms wall"]
        for part, ms in (("compute", b["compute_ms"]), ("input pipeline wait", b["input_ms"]),
                         ("ps (averaging, updates)", b["ps_ms"]), ("transfers and waiting", b["other_ms"])):
            share = 100 * ms / b["wall_ms"] if b["wall_ms"] else 0
            lines.append(f"  {part:<26} {ms:8.1f} ms  {share:5.1f}%")
        for d in b["devices"]:
            lines.append(f"    {d['device']}: busy {d['busy_ms']:.1f} ms, idle {d['longest_idle_ms']:.1f} ms "
                         f"from +{d['idle_from_ms']:.1f} ms")
    lines.append("")
    for program, variables in r["placement"].items():
        homes = sorted(set(variables.values()))
        lines.append(f"the {program} program's variables live on {', '.join(homes) or 'n/a'}")
    lines += ["", "CPU kept busy per role during a cluster run (cores on average):"]
    for row in r["rows"]:
        share = row["cpu_share"]
        lines.append(f"  {row['name']}: " + ", ".join(f"{k} {v:.2f}" for k, v in share["roles"].items())
                     + f" (of {share['cpus']} usable)")
    if r.get("loss"):
        loss = r["loss"]
        lines += ["", f"{loss['steps']}-step clusters: " + "; ".join(
            f"{program} program step {v['step']} loss {_f(v['loss'], '{:.2f}')}, dead input threads "
            f"{v['dead_input_threads']}" for program, v in loss["programs"].items())]
    o = r["overheads"]
    lines += ["", f"kit overheads: verify + apply {o['verify_and_apply_s']} s; cluster ready -> first logged step "
              f"{o['cluster_ready_to_first_step_s']} s; teardown {o['teardown_s']} s"]
    return lines


def plot_bench(r: dict[str, Any], path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.4), dpi=110)
    names = [row["name"].replace(" program, ", "\n") for row in r["rows"]]
    x = range(len(names))
    for i, row in enumerate(r["rows"]):
        left.scatter([i] * len(row["per_repetition"]), [s or 0 for s in row["per_repetition"]], color="grey",
                     s=12, zorder=3, label="a repetition" if i == 0 else None)
    left.bar(x, [row["speedup"] or 0 for row in r["rows"]], color=["tab:blue", "tab:cyan", "tab:green"][:len(names)])
    left.axhline(r["workers"], color="black", linestyle="--", linewidth=1, label=f"limit ({r['workers']}x)")
    left.axhline(r["target"]["speedup"], color="tab:green", linestyle=":", linewidth=1,
                 label=f"target ({r['target']['speedup']:.2f}x)")
    left.axhline(ARTICLE_SPEEDUP, color="tab:red", linestyle="-.", linewidth=1, label="the article, 2017 (1.74x)")
    left.axhline(1.0, color="grey", linestyle=":", linewidth=1)
    left.set_xticks(list(x), names, fontsize=8)
    left.set(title="speed-up over its program's standalone (1 CPU)", ylabel="cluster / standalone")
    left.legend(fontsize=7)
    if r["ablation"]:
        changes = [a["change"] for a in r["ablation"]]
        right.barh(range(len(changes)), [a["speedup"] or 0 for a in r["ablation"]], color="tab:olive")
        right.set_yticks(range(len(changes)), changes, fontsize=8)
        right.axvline(1.0, color="grey", linestyle=":", linewidth=1)
        right.axvline(r["workers"], color="black", linestyle="--", linewidth=1)
        right.set(title="ablation: what each change of the lesson buys", xlabel="speed-up over the lesson's standalone")
        right.invert_yaxis()
    return write_figure(fig, path)


def sweep_lines(r: dict[str, Any]) -> list[str]:
    lines = [f"{r['cpus']} CPUs usable; rule: {r['warmup_rule']}"]
    for program, data in r["programs"].items():
        lines += ["", f"{program}: standalone (1 CPU) {_f(data['standalone_rate'])} ex/s", "",
                  "| workers | ex/s | speed-up | ideal | note |", "| ---: | ---: | ---: | ---: | --- |"]
        for p in data["points"]:
            note = f"oversubscribed: {p['workers']} workers on {r['cpus']} CPUs" if p["oversubscribed"] else ""
            lines.append(f"| {p['workers']} | {_f(p['rate'])} | {_f(p['speedup'], '{:.2f}x')} | "
                         f"{p['workers']}.00x | {note} |")
    return lines


def plot_sweep(r: dict[str, Any], path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 4.5), dpi=110)
    ns = sorted({p["workers"] for data in r["programs"].values() for p in data["points"]})
    top = max(ns + [2])
    ax.plot([1, top], [1, top], "k--", linewidth=1, label="ideal (N x standalone)")
    ax.axhline(r["cpus"], color="grey", linestyle=":", linewidth=1,
               label=f"limit of this machine's {r['cpus']} CPUs")
    for (program, data), colour in zip(r["programs"].items(), ("tab:orange", "tab:green", "tab:purple")):
        ax.plot([p["workers"] for p in data["points"]], [p["speedup"] or 0 for p in data["points"]], "o-",
                color=colour, label=f"{program} program, this machine")
    ax.plot([1, 2], [1.0, ARTICLE_SPEEDUP], "s", color="tab:blue", label="article (98 -> 170 ex/s)")
    if top > r["cpus"]:
        ax.axvspan(r["cpus"] + 0.5, top + 0.5, color="red", alpha=0.08,
                   label=f"more workers than the {r['cpus']} CPUs: oversubscribed")
    ax.set(title="cluster speed-up over standalone (1 CPU)", xlabel="workers", ylabel="speed-up")
    ax.set_xticks(sorted(set(ns + [1, 2])))
    ax.legend(fontsize=8)
    return write_figure(fig, path)


def network_lines(r: dict[str, Any]) -> list[str]:
    lines = [f"{r['workers']} workers on simulated hosts; rule: {r['warmup_rule']}"]
    for program, data in r["programs"].items():
        pred = data["prediction"]
        lines += ["", f"{program}: standalone (1 CPU) {_f(data['standalone_rate'])} ex/s", "",
                  "| link | ex/s | speed-up | predicted ex/s | busiest host: MB per step |",
                  "| --- | ---: | ---: | ---: | --- |"]
        for p in data["points"]:
            load = busiest(p["network"])
            predicted = (pred.get("points") or {}).get(p["link"])
            lines.append(f"| {p['link']} | {_f(p['rate'])} | {_f(p['speedup'], '{:.2f}x')} | {_f(predicted)} | "
                         + (f"{load[0]}: {load[1] / 1e6:.2f}" if load else "n/a") + " |")
        if "why_not" in pred:
            lines.append(f"prediction: {pred['why_not']}")
        elif pred["never_beats_one_cpu"]:
            lines.append("the cluster does not beat one CPU even on unshaped links")
        else:
            lines.append(f"prediction: compute {1000 * pred['compute_step_s']:.0f} ms a step + "
                         f"{pred['bytes_per_step'] / 1e6:.2f} MB over the {pred['busiest_host']}'s link; "
                         f"the cluster beats one CPU above {bandwidth_name(pred['beats_one_cpu_above_bits_per_s'])}")
    return lines


def plot_network(r: dict[str, Any], path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.5, 4.8), dpi=110)
    workers = r["workers"]
    ax.axhline(workers, color="black", linestyle="--", linewidth=1, label=f"ideal ({workers}x)")
    ax.axhline(1.0, color="grey", linestyle=":", linewidth=1, label="one CPU (1x)")
    ax.axhline(ARTICLE_SPEEDUP, color="tab:blue", linestyle="-.", linewidth=1, label="article (1.74x, one host)")
    top = 1e11
    for (program, data), colour in zip(r["programs"].items(), ("tab:orange", "tab:green", "tab:purple")):
        alone = data["standalone_rate"] or 0
        shaped = [p for p in data["points"] if p["bits_per_s"]]
        ax.plot([p["bits_per_s"] for p in shaped], [(p["speedup"] or 0) for p in shaped], "o", color=colour,
                label=f"{program}: measured")
        unshaped = [p for p in data["points"] if not p["bits_per_s"]]
        for p in unshaped:
            ax.plot([top], [p["speedup"] or 0], "D", color=colour, label=f"{program}: unshaped (right edge)")
        curve = data["prediction"].get("curve") or []
        if curve and alone:
            ax.plot([c[0] for c in curve], [c[1] / alone for c in curve], "-", color=colour, alpha=0.6,
                    label=f"{program}: predicted (compute + bytes / bandwidth)")
    ax.set_xscale("log")
    ax.set(title="cluster speed-up over one CPU, by link bandwidth", xlabel="every host's link (bit/s)",
           ylabel="speed-up")
    ax.legend(fontsize=7)
    return write_figure(fig, path)
