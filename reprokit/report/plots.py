"""The run's plot: examples/sec per logged step of both modes, the article's figures beside them."""

from __future__ import annotations

from pathlib import Path

from reprokit.figures import new_figure, write_figure
from reprokit.report.results import RunResults


def speed_plot(results: RunResults, path: Path) -> Path | None:
    """None when no mode logged a step (a run that failed early has nothing to draw)."""
    modes = {m: d.steps for m, d in results.modes.items() if d.steps}
    if not modes:
        return None
    art = results.article
    fig, (ax,) = new_figure()
    colours = {"standalone": "tab:blue", "cluster": "tab:orange"}
    for mode, steps in modes.items():
        ax.plot([s.step for s in steps], [s.examples_per_sec for s in steps], marker="o", markersize=3,
                color=colours.get(mode), label=f"{mode} (this run)")
    ax.axhline(art.standalone_rate, color="tab:blue", linestyle="--", linewidth=1,
               label=f"standalone, article ({art.standalone_rate:.0f})")
    ax.axhline(art.cluster_rate, color="tab:orange", linestyle="--", linewidth=1,
               label=f"cluster, article ({art.cluster_rate:.0f})")
    title = "examples/sec per logged step"
    if results.speed:
        up = results.speed.speedup
        # Two lines: the figure with its interval does not fit beside the title on one.
        title += (f"\nspeed-up {up.value:.2f}x (95% CI {up.low:.2f}-{up.high:.2f}) here"
                  f" vs {art.speedup:.2f}x in the article")
    ax.set(title=title, xlabel="step", ylabel="examples/sec")
    ax.set_yscale("log")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    return write_figure(fig, path)
