"""Tables and plots of `invoke bench` and `invoke sweep` results."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from reprokit.bench.network import bandwidth_name, busiest
from reprokit.files import write_figure
from reprokit.judge.speed import ARTICLE_SPEEDUP, ARTICLE_WORKERS


def _f(value: float | None, fmt: str = "{:.1f}") -> str:
    return "n/a" if value is None else fmt.format(value)


def bench_lines(r: dict[str, Any]) -> list[str]:
    lines = [f"rule: {r['warmup_rule']}", "", "| repetition | standalone ex/s | cluster ex/s | speed-up | efficiency |",
             "| ---: | ---: | ---: | ---: | ---: |"]
    for i, rep in enumerate(r["repetition_results"], start=1):
        lines.append(f"| {i} | {_f(rep['standalone']['rate'])} | {_f(rep['cluster']['rate'])} | "
                     f"{_f(rep['speedup'], '{:.2f}x')} | {_f(rep['efficiency'] and 100 * rep['efficiency'], '{:.1f}%')} |")
    m = r["median"]
    lines.append(f"| **median** | {_f(m['standalone_rate'])} | {_f(m['cluster_rate'])} | "
                 f"{_f(m['speedup'], '{:.2f}x')} | {_f(100 * m['efficiency'], '{:.1f}%')} |")
    lines.append(f"| article | 98 | 170 | {ARTICLE_SPEEDUP:.2f}x | {100 * ARTICLE_SPEEDUP / ARTICLE_WORKERS:.1f}% |")
    bound = r["input_free_bound"]
    lines += ["", f"input-free bound of one core: {_f(bound['rate'])} ex/s; standalone reaches "
              f"{_f(bound['standalone_share'] and 100 * bound['standalone_share'], '{:.1f}%')} of it"]
    for mode, b in r["breakdown"].items():
        lines += ["", f"one traced {mode} step: {b['wall_ms']} ms wall"]
        for name, ms in (("compute", b["compute_ms"]), ("input pipeline wait", b["input_ms"]),
                         ("ps (averaging, updates)", b["ps_ms"]), ("transfers and waiting", b["other_ms"])):
            share = 100 * ms / b["wall_ms"] if b["wall_ms"] else 0
            lines.append(f"  {name:<26} {ms:8.1f} ms  {share:5.1f}%")
        for d in b["devices"]:
            lines.append(f"    {d['device']}: busy {d['busy_ms']:.1f} ms, idle {d['longest_idle_ms']:.1f} ms "
                         f"from +{d['idle_from_ms']:.1f} ms")
    p = r["placement"]
    homes = sorted(set(p["variables"].values()))
    lines += ["", f"placement: the model variables live on {', '.join(homes) or 'n/a'}",
              f"  cluster as the article's program places them: {_f(p['article_rate'])} ex/s; "
              f"with the variables on the ps: {_f(p['variables_on_ps_rate'])} ex/s"]
    share = r.get("cpu_share") or {}
    if share:
        lines += ["", "CPU used per role during one cluster run (cores busy on average, of "
                  f"{share['cpus']} usable): " + ", ".join(f"{k} {v:.2f}" for k, v in share["roles"].items())]
    o = r["overheads"]
    lines += ["", f"kit overheads: verify + apply {o['verify_and_apply_s']} s; cluster ready -> first logged step "
              f"{o['cluster_ready_to_first_step_s']} s; teardown {o['teardown_s']} s"]
    return lines


def plot_bench(r: dict[str, Any], path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    reps = r["repetition_results"]
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4), dpi=110)
    x = range(1, len(reps) + 1)
    left.plot(x, [p["standalone"]["rate"] for p in reps], "o-", label="standalone (1 CPU)")
    left.plot(x, [p["cluster"]["rate"] for p in reps], "s-", label=f"cluster ({r['workers']} workers)")
    if r["input_free_bound"]["rate"]:
        left.axhline(r["input_free_bound"]["rate"], color="grey", linestyle=":", label="input-free bound, 1 CPU")
    left.set(title="examples/sec per repetition", xlabel="repetition", ylabel="examples/sec", xticks=list(x))
    left.set_ylim(bottom=0)
    left.legend(fontsize=8)
    right.bar(x, [p["speedup"] or 0 for p in reps], color="tab:orange", label="this run")
    right.axhline(r["workers"], color="black", linestyle="--", linewidth=1, label=f"limit ({r['workers']}x)")
    right.axhline(ARTICLE_SPEEDUP, color="tab:blue", linestyle="--", linewidth=1, label="article (1.74x)")
    right.axhline(1.85, color="tab:green", linestyle=":", linewidth=1, label="target (1.85x)")
    right.set(title=f"speed-up, median {r['median']['speedup']:.2f}x", xlabel="repetition",
              ylabel="cluster / standalone", xticks=list(x))
    right.legend(fontsize=8)
    fig.tight_layout()
    write_figure(fig, path)
    plt.close(fig)
    return path


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
    fig.tight_layout()
    write_figure(fig, path)
    plt.close(fig)
    return path


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
    fig.tight_layout()
    write_figure(fig, path)
    plt.close(fig)
    return path
