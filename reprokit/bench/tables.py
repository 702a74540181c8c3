"""Tables and plots of `invoke bench` and `invoke sweep` results."""

from __future__ import annotations

from pathlib import Path
from typing import Any

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
    lines = [f"standalone (1 CPU): {_f(r['standalone_rate'])} ex/s; {r['cpus']} CPUs usable", "",
             "| workers | ex/s | speed-up | ideal | note |", "| ---: | ---: | ---: | ---: | --- |"]
    for p in r["points"]:
        note = f"oversubscribed: {p['workers']} workers on {r['cpus']} CPUs" if p["oversubscribed"] else ""
        lines.append(f"| {p['workers']} | {_f(p['rate'])} | {_f(p['speedup'], '{:.2f}x')} | {p['workers']}.00x | {note} |")
    return lines


def plot_sweep(r: dict[str, Any], path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 4.5), dpi=110)
    ns = [p["workers"] for p in r["points"]]
    top = max(ns + [2])
    ax.plot([1, top], [1, top], "k--", linewidth=1, label="ideal (N x standalone)")
    ax.axhline(r["cpus"], color="grey", linestyle=":", linewidth=1,
               label=f"limit of this machine's {r['cpus']} CPUs")
    ax.plot(ns, [p["speedup"] or 0 for p in r["points"]], "o-", color="tab:orange", label="this machine")
    ax.plot([1, 2], [1.0, ARTICLE_SPEEDUP], "s", color="tab:blue", label="article (98 -> 170 ex/s)")
    if any(p["oversubscribed"] for p in r["points"]):
        ax.axvspan(r["cpus"] + 0.5, top + 0.5, color="red", alpha=0.08,
                   label=f"more workers than the {r['cpus']} CPUs: oversubscribed")
    ax.set(title="cluster speed-up over standalone (1 CPU)", xlabel="workers", ylabel="speed-up")
    ax.set_xticks(sorted(set(ns + [1, 2])))
    ax.legend(fontsize=8)
    fig.tight_layout()
    write_figure(fig, path)
    plt.close(fig)
    return path
