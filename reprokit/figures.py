"""Figures: matplotlib set up once (no display: the Agg backend), and written whole.

Every plot of the kit (a run's speed plot, the bench, sweep and network plots) starts with
:func:`new_figure` and ends with :func:`write_figure`, so the backend choice, the size and
resolution, and the atomic write live here and nowhere else.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import TYPE_CHECKING

from reprokit.files import write_bytes

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

DPI = 110


def new_figure(width: float = 8.0, height: float = 4.5, columns: int = 1) -> tuple[Figure, list[Axes]]:
    """A figure of ``columns`` side-by-side axes, drawn without a display."""
    import matplotlib

    matplotlib.use("Agg")  # before pyplot: no display on servers, CI or containers
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, columns, figsize=(width, height), dpi=DPI, squeeze=False)
    return figure, list(axes[0])


def write_figure(figure: Figure, path: Path) -> Path:
    """A finished figure as a PNG, laid out, written whole like every other generated file, and
    closed (pyplot keeps every open figure)."""
    import matplotlib.pyplot as plt

    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    plt.close(figure)
    return write_bytes(path, buffer.getvalue())
