"""Charts as rich Text for a terminal: task speedups as horizontal bars, an S'perf curve as a column plot.
Used by the workbench's Results screen; pure functions of the results (no Textual here)."""

from __future__ import annotations

import math

from rich.text import Text

from workbench.scoring import metrics
from workbench.scoring.results import Curve, Results

_EIGHTHS = " ▏▎▍▌▋▊▉"
_LEVELS = " ▁▂▃▄▅▆▇█"


def hbar(fraction: float, width: int) -> str:
    """A bar of `fraction` of `width` cells, in eighths."""
    cells = max(0.0, min(1.0, fraction)) * width
    full = int(cells)
    part = _EIGHTHS[int((cells - full) * 8)] if full < width else ""
    return ("█" * full + part.strip()).ljust(width)


def task_bars(results: Results, width: int = 40) -> Text:
    """Per task, one bar per model and configuration: its task speedup (scaled to the largest); a failed or
    untimed task says so. A `│` marks the baseline (1.0x)."""
    text = Text()
    if not results.tasks:
        return Text("no code sessions to chart", style="dim")
    pairs = list(dict.fromkeys((c.group, c.config) for c in results.cells))
    runs = {(g, c, task): results.task_runs(g, c, task) for g, c in pairs for task in results.tasks}
    speedups = [r.speedup for r in runs.values() if r.speedup is not None]
    top = max([1.0, *speedups])
    label_width = min(36, max((len(f"{g} {c}") for g, c in pairs), default=10))
    one = round(width / top) if top else 0
    over = " (geometric mean over repetitions)" if results.repeated else ""
    text.append(f"task speedup against {results.provenance.baseline}{over} (│ = 1.0x, full bar = {top:.2f}x)\n", style="dim")
    for task in results.tasks:
        text.append(f"{task}\n", style="bold")
        for g, c in pairs:
            cell = runs[(g, c, task)]
            label = f"{g} {c}"
            label = label if len(label) <= label_width else label[: label_width - 1] + "…"
            text.append(f"  {label:<{label_width}} ")
            count = f" ({cell.correct}/{cell.runs} correct)" if cell.runs > 1 else ""
            if cell.speedup is not None:
                bar = hbar(cell.speedup / top, width)
                if 0 < one < width:
                    bar = bar[:one] + ("│" if bar[one] == " " else bar[one]) + bar[one + 1 :]
                text.append(bar, style="green" if cell.speedup >= 1 else "yellow")
                text.append(f" {cell.speedup:.2f}x{count}\n")
            elif cell.ran == 0:
                text.append("not run\n", style="dim")
            elif cell.correct:
                text.append(f"correct, untimed{count}\n", style="cyan")
            elif cell.skipped == cell.ran:
                text.append(f"skipped: more device memory than the GPU had{count}\n", style="cyan")
            else:
                statuses = ", ".join(sorted({c.status for c in cell.cells if c.session is not None and not c.skipped}))
                text.append(f"✗ {statuses}{count}\n", style="red")
    return text


def curve_plot(curve: Curve | None, width: int = 60, height: int = 8) -> Text:
    """A column plot of an S'perf curve: one column per step bucket, y from 0 to the curve's maximum."""
    if curve is None or not curve.points:
        return Text("no S'perf curve: no evaluated revision", style="dim")
    horizon = max(curve.points[-1][0], 1)
    columns = max(1, min(width, horizon + 1))
    values = []
    for col in range(columns):
        step = math.floor(col * horizon / max(columns - 1, 1))
        values.append(curve.value_at(step) or metrics.FALLBACK)
    top = max(*values, metrics.FALLBACK)
    text = Text(f"S'perf over {curve.axis}s ({curve.group}, {curve.config}; {metrics.FALLBACK} before the first eligible)\n")
    for row in range(height, 0, -1):
        label = f"{top * row / height:6.2f} │" if row in (height, max(1, height // 2)) else "       │"
        text.append(label, style="dim")
        line = []
        for value in values:
            filled = value / top * height - (row - 1)
            line.append(_LEVELS[max(0, min(8, round(filled * 8)))])
        text.append("".join(line) + "\n", style="green")
    text.append("  0.00 └" + "─" * columns + "\n", style="dim")
    text.append(f"        0{str(horizon).rjust(columns - 1)}  ({curve.axis})\n", style="dim")
    final = curve.points[-1][1]
    text.append(f"final S'perf {final:.2f} at {curve.axis} {curve.points[-1][0]}")
    return text
