"""PNG figures like the paper's, drawn with matplotlib's Agg canvas (no display, no pyplot state).

    paths = write_figures(results, Path("figures/"))   # figure3_ablation.png, figure4_sperf_turns.png

Each figure has labelled axes, a legend, and on its last line the data's provenance (sessions, device model,
dates, baseline). matplotlib is imported here only: the CLI imports this module only for --figures.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from workbench.scoring import metrics
from workbench.scoring.results import Results

SIZE_IN = (8.0, 4.8)
DPI = 120
LABEL_MAX = 40  # longer model or command labels are shortened in legends and ticks
CONFIG_COLOURS = {"none": "#9e9e9e", "L1": "#64b5f6", "L1+L2": "#1e88e5", "L1+L2+L3": "#0d47a1"}

ABLATION_X = "model"
ABLATION_Y = "Performance Score (S_perf)"
SPERF_Y = "S'perf (best eligible so far)"


def short(label: str) -> str:
    return label if len(label) <= LABEL_MAX else label[: LABEL_MAX - 1] + "…"


def tick(label: str) -> str:
    """A model's label under its bars: shortened, over at most two lines."""
    return "\n".join(textwrap.wrap(short(label), 22)[:2])


def _figure(results: Results, title: str) -> Figure:
    figure = Figure(figsize=SIZE_IN, dpi=DPI)
    FigureCanvasAgg(figure)
    figure.subplots_adjust(left=0.1, right=0.97, top=0.88, bottom=0.24)
    figure.suptitle(title, fontsize=11)
    figure.text(0.01, 0.015, results.provenance.caption(), fontsize=7, ha="left", va="bottom", wrap=True)
    return figure


def ablation_figure(results: Results) -> Figure:
    """Figure 3: S_perf per model, one bar per guidance configuration; the baseline at 1.0."""
    figure = _figure(results, "Guidance ablation: Performance Score by configuration")
    axes = figure.add_subplot(1, 1, 1)
    groups = list(dict.fromkeys(s.group for s in results.scores))
    configs = results.configs
    width = 0.8 / max(len(configs), 1)
    drawn = False
    for i, config in enumerate(configs):
        xs, heights, missing = [], [], []
        for j, group in enumerate(groups):
            s = results.group_scores(group, config)
            x = j - 0.4 + width * (i + 0.5)
            if s is not None and s.sperf is not None:
                xs.append(x)
                heights.append(s.sperf)
            elif s is not None:
                missing.append(x)
        bars = axes.bar(xs, heights, width=width * 0.95, label=config, color=CONFIG_COLOURS.get(config))
        axes.bar_label(bars, fmt="%.2f", fontsize=7, padding=2)
        for x in missing:
            axes.text(x, 0.02, "n/a", ha="center", va="bottom", fontsize=7)
        drawn = drawn or bool(xs) or bool(missing)
    axes.axhline(1.0, color="#555555", linestyle="--", linewidth=0.8, label="baseline (1.0)")
    axes.set_xticks(range(len(groups)), [tick(g) for g in groups], fontsize=7)
    axes.set_xlim(-0.6, max(len(groups), 1) - 0.4)
    axes.set_xlabel(ABLATION_X)
    axes.set_ylabel(ABLATION_Y)
    top = max([1.0, *(s.sperf for s in results.scores if s.sperf is not None)])
    axes.set_ylim(0, top * 1.2)
    if not drawn:
        axes.text(0.5, 0.5, "no scored sessions", transform=axes.transAxes, ha="center", va="center")
    axes.legend(title="guidance", fontsize=8, title_fontsize=8, loc="upper left")
    return figure


def sperf_figure(results: Results) -> Figure:
    """Figure 4: S'perf over turns per model and configuration (0.1 before the first eligible submission)."""
    figure = _figure(results, "S'perf over turns")
    axes = figure.add_subplot(1, 1, 1)
    curves = [s.curve for s in results.scores if s.curve is not None and s.curve.points]
    horizon = max((c.points[-1][0] for c in curves), default=1)
    right = max(horizon, 1) * 1.04 + 0.5  # a little room, so that a last step at the horizon shows
    for curve in curves:
        xs = [x for x, _ in curve.points] + [right]  # the score stays where it ended
        ys = [y for _, y in curve.points]
        ys.append(ys[-1])
        axes.step(xs, ys, where="post", label=f"{short(curve.group)} ({curve.config})", linewidth=1.5)
    axes.axhline(metrics.FALLBACK, color="#999999", linestyle=":", linewidth=0.8, label=f"fallback ({metrics.FALLBACK})")
    axis_names = {c.axis for c in curves}
    xlabel = (
        "turn" if axis_names == {"turn"} else "revision" if axis_names == {"revision"} else "turn (revision without model calls)"
    )
    axes.set_xlabel(xlabel)
    axes.set_ylabel(SPERF_Y)
    axes.set_xlim(0, right)
    axes.xaxis.set_major_locator(MaxNLocator(integer=True))
    top = max([metrics.FALLBACK, *(y for c in curves for _, y in c.points)])
    axes.set_ylim(0, top * 1.15)
    if not curves:
        axes.text(0.5, 0.5, "no timed sessions", transform=axes.transAxes, ha="center", va="center")
    axes.legend(fontsize=8, loc="best")
    return figure


FIGURES: dict[str, Callable[[Results], Figure]] = {
    "figure3_ablation.png": ablation_figure,
    "figure4_sperf_turns.png": sperf_figure,
}


def write_figures(results: Results, folder: Path) -> list[Path]:
    """Write every figure as a PNG into `folder` (created); returns their paths."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name, draw in FIGURES.items():
        path = folder / name
        draw(results).savefig(path, dpi=DPI)
        written.append(path)
    return written
