"""The run's plot: both modes' examples/sec by the kit's clock along the steps, what each program
said of its own speed beside it, and the article's figures."""

from __future__ import annotations

from pathlib import Path

from reprokit.figures import new_figure, write_figure
from reprokit.report.results import RunResults


def speed_plot(results: RunResults, path: Path) -> Path | None:
    """None when no mode logged a step (a run that failed early has nothing to draw). The title's
    interval is the runs' own; the claim line says the one it was judged on."""
    modes = {m: d for m, d in results.modes.items() if d.steps}
    if not modes:
        return None
    art = results.article
    fig, (ax,) = new_figure()
    colours = {"standalone": "tab:blue", "cluster": "tab:orange"}
    for mode, found in modes.items():
        colour = colours.get(mode)
        if found.intervals:
            ax.plot([i.last for i in found.intervals], [i.rate(found.examples_per_step) for i in found.intervals],
                    marker="o", markersize=3, color=colour, label=f"{mode}, this run (kit's clock)")
            ax.plot([i.last for i in found.intervals], [i.reported for i in found.intervals], linestyle=":",
                    linewidth=1, color=colour, alpha=0.7, label=f"{mode}, as the program reports itself")
        else:  # a results.json of a kit that did not time runs itself
            ax.plot([s.step for s in found.steps], [s.examples_per_sec for s in found.steps], marker="o",
                    markersize=3, color=colour, label=f"{mode}, this run (the program's own figures)")
    ax.axhline(art.standalone_rate, color="tab:blue", linestyle="--", linewidth=1,
               label=f"standalone, article ({art.standalone_rate:.0f})")
    ax.axhline(art.cluster_rate, color="tab:orange", linestyle="--", linewidth=1,
               label=f"cluster, article ({art.cluster_rate:.0f})")
    title = "examples/sec between step lines"
    if results.speed:
        up = results.speed.speedup
        # Two lines: the figure with its interval does not fit beside the title on one.
        title += (f"\nspeed-up {up.value:.2f}x (95% CI {up.low:.2f}-{up.high:.2f}, {up.method}) here"
                  f" vs {art.speedup:.2f}x in the article")
    ax.set(title=title, xlabel="step", ylabel="examples/sec")
    ax.set_yscale("log")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="lower right")
    return write_figure(fig, path)
