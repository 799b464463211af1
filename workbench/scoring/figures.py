"""PNG figures like the paper's, drawn with matplotlib's Agg canvas (no display, no pyplot state).

    paths = write_figures(results, Path("figures/"))   # figure3_ablation.png, figure4_sperf_turns.png

Each figure has labelled axes, a legend, and on its last line the data's provenance (sessions, device model,
dates, baseline). matplotlib is imported here only: the CLI imports this module only for --figures.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path

from matplotlib.artist import Artist
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import MaxNLocator

from workbench.scoring import metrics
from workbench.scoring.results import Results

SIZE_IN = (8.0, 4.8)
DPI = 120
LABEL_MAX = 40  # longer model or command labels are shortened in legends and ticks
# One colour per configuration, in the paper's order, from the Okabe-Ito palette (told apart with the common
# colour-vision deficiencies, and in greyscale by lightness): grey, orange, bluish green, blue.
CONFIG_COLOURS = {"none": "#999999", "L1": "#E69F00", "L1+L2": "#009E73", "L1+L2+L3": "#0072B2"}
# The S'perf curves: a colour per configuration, a line style per model (and a marker too past the fourth)
GROUP_STYLES = ("-", "--", "-.", ":")
GROUP_MARKERS = ("", "o", "s", "^", "D", "v")
GROUP_WIDTH_IN = 1.3  # the ablation figure grows with the models, so their labels keep room
LEGEND_ROWS = 26  # curves in one legend column beside the S'perf plot (two columns beyond)
LEGEND_COLUMN_IN = 3.6  # the width one legend column adds to the S'perf figure

ABLATION_X = "model"
ABLATION_Y = "Performance Score (S_perf)"
SPERF_Y = "S'perf (best eligible so far)"


def short(label: str) -> str:
    return label if len(label) <= LABEL_MAX else label[: LABEL_MAX - 1] + "…"


def tick(label: str) -> str:
    """A model's label under its bars: shortened, over at most two lines."""
    return "\n".join(textwrap.wrap(short(label), 22)[:2])


def _figure(results: Results, title: str, width_in: float = SIZE_IN[0]) -> Figure:
    figure = Figure(figsize=(width_in, SIZE_IN[1]), dpi=DPI)
    FigureCanvasAgg(figure)
    figure.subplots_adjust(left=0.1, right=0.97, top=0.88, bottom=0.3)  # room for slanted labels and a two-line caption
    figure.suptitle(title, fontsize=11)
    figure.text(0.01, 0.01, results.provenance.caption(), fontsize=6.5, ha="left", va="bottom", wrap=True)
    return figure


def ablation_figure(results: Results) -> Figure:
    """Figure 3: S_perf per model, one bar per guidance configuration; the baseline at 1.0."""
    groups = list(dict.fromkeys(s.group for s in results.scores))
    width_in = max(SIZE_IN[0], GROUP_WIDTH_IN * len(groups) + 1.5)
    figure = _figure(results, "Guidance ablation: Performance Score by configuration", width_in)
    axes = figure.add_subplot(1, 1, 1)
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
            elif s is not None:  # passed but not timed (the CPU), or nothing to score
                missing.append((x, "untimed" if s.untimed else "n/a"))
        bars = axes.bar(xs, heights, width=width * 0.95, label=config, color=CONFIG_COLOURS.get(config), edgecolor="#333333")
        axes.bar_label(bars, fmt="%.2f", fontsize=7, padding=2)
        for x, why in missing:
            axes.text(x, 0.02, why, ha="center", va="bottom", fontsize=6, rotation=90)
        drawn = drawn or bool(xs) or bool(missing)
    axes.axhline(1.0, color="#555555", linestyle="--", linewidth=0.8, label="baseline (1.0)")
    axes.set_xticks(range(len(groups)), [tick(g) for g in groups], fontsize=7)
    if len(groups) > 1:  # long labels of neighbours would meet: slanted, each ends under its own group
        for label in axes.get_xticklabels():
            label.set_rotation(20)
            label.set_horizontalalignment("right")
    axes.set_xlim(-0.6, max(len(groups), 1) - 0.4)
    axes.set_xlabel(ABLATION_X)
    axes.set_ylabel(ABLATION_Y)
    top = max([1.0, *(s.sperf for s in results.scores if s.sperf is not None)])
    axes.set_ylim(0, top * 1.2)
    if not drawn:
        axes.text(0.5, 0.5, "no scored sessions", transform=axes.transAxes, ha="center", va="center")
    # the legend's keys drawn here, so that a configuration with no bar (every session untimed) keeps its colour
    keys: list[Artist] = [Line2D([], [], color="#555555", linestyle="--", linewidth=0.8, label="baseline (1.0)")]
    keys += [Patch(facecolor=CONFIG_COLOURS.get(c, "#777777"), edgecolor="#333333", label=c) for c in configs]
    axes.legend(handles=keys, title="guidance", fontsize=8, title_fontsize=8, loc="upper left")
    return figure


def sperf_figure(results: Results) -> Figure:
    """Figure 4: S'perf over turns per model and configuration (0.1 before the first eligible submission)."""
    curves = [s.curve for s in results.scores if s.curve is not None and s.curve.points]
    columns = 1 if len(curves) <= LEGEND_ROWS else 2
    legend_in = LEGEND_COLUMN_IN * columns  # the legend beside the plot, never over it
    figure = _figure(results, "S'perf over turns", SIZE_IN[0] + legend_in)
    figure.subplots_adjust(left=0.1 * SIZE_IN[0] / (SIZE_IN[0] + legend_in), right=SIZE_IN[0] / (SIZE_IN[0] + legend_in) - 0.01)
    axes = figure.add_subplot(1, 1, 1)
    horizon = max((c.points[-1][0] for c in curves), default=1)
    right = max(horizon, 1) * 1.04 + 0.5  # a little room, so that a last step at the horizon shows
    order = list(dict.fromkeys(c.group for c in curves))
    styles = {
        group: (GROUP_STYLES[i % len(GROUP_STYLES)], GROUP_MARKERS[i // len(GROUP_STYLES) % len(GROUP_MARKERS)])
        for i, group in enumerate(order)
    }
    for curve in curves:
        xs = [x for x, _ in curve.points] + [right]  # the score stays where it ended
        ys = [y for _, y in curve.points]
        ys.append(ys[-1])
        axes.step(
            xs, ys, where="post", label=f"{short(curve.group)} ({curve.config})", linewidth=1.6,
            color=CONFIG_COLOURS.get(curve.config), linestyle=styles[curve.group][0], marker=styles[curve.group][1] or None,
            markersize=4,
        )  # fmt: skip
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
    axes.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0, ncols=columns)
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
