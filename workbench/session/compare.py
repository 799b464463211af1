"""Two sessions side by side, for `session compare A B`: who worked how (driver, model, guidance), how far they
got (state, revisions, the submission's status and speedup, per workload), what it cost (tokens, dollars),
their speedup over revisions, and the diff between their final kernels.

    comparison = compare(store, store.resolve(a), store.resolve(b))
    text = comparison.diff                  # unified diff of the final solutions ("" when the same)
    comparison.sides[0].curve               # [(rev, geometric-mean speedup)] of the revisions that passed

Two sessions of different tasks are refused (UsageError) unless asked for (`any_task`): their kernels solve
different problems, so their diff and their speedups say nothing about each other.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from rich.table import Table

from workbench.errors import UsageError
from workbench.llm.usage import Usage
from workbench.session.diff import unified
from workbench.session.format import format_speedup
from workbench.session.layout import SessionRef
from workbench.session.store import SessionStore, SessionView
from workbench.session.workspace import WorkspaceError

if TYPE_CHECKING:
    from matplotlib.figure import Figure


@dataclass
class Side:
    """One session of a comparison."""

    id: str
    task: str
    guidance: str
    who: str  # the driver, with the agent's provider and model
    state: str  # SessionState.status_word
    revisions: int
    final_rev: int | None  # the submission, else the best evaluated revision
    final_status: str | None
    final_speedup: float | None
    workloads: dict[str, float | None]  # the final revision's latency per workload (ms; None: not timed)
    curve: list[tuple[int, float]]  # (revision, geometric-mean speedup) of every passed, timed revision
    passed: int = 0  # revisions that passed (timed or not)
    device: str = ""  # as session.toml names it
    usage: Usage = field(default_factory=Usage)
    cost_usd: float | None = None  # None: no priced model call
    code: str | None = None  # the final revision's solution (None: none, or unreadable)

    @property
    def label(self) -> str:
        return f"{self.who} · {self.guidance} ({self.id[-4:]})"

    @property
    def untimed(self) -> str:
        """Why the session has no speedup curve ("" when it has one)."""
        if self.curve:
            return ""
        if self.passed:
            return f"{self.passed} passing revision(s), none timed (no latencies on {self.device})"
        return "no passing revision"


@dataclass
class Comparison:
    sides: tuple[Side, Side]
    diff: str  # the final solutions' unified diff ("" when they are the same)

    @property
    def same_task(self) -> bool:
        return self.sides[0].task == self.sides[1].task

    @property
    def title(self) -> str:
        left, right = self.sides
        return f"{left.task}: two sessions" if self.same_task else f"two sessions of different tasks: {left.task} vs {right.task}"


def _side(store: SessionStore, ref: SessionRef, view: SessionView) -> Side:
    state, config = view.state, view.config
    final = state.best()  # the submission, else the best evaluated revision
    agent = config.agent
    who = config.driver + (f" {agent.provider} {agent.model}" if agent is not None else "")
    usage = Usage()
    priced = [call.cost_usd for call in state.model_calls if call.cost_usd is not None]
    for call in state.model_calls:
        usage = usage + call.usage
    curve = [
        (r.rev, r.geomean_speedup)
        for r in state.ordered()
        if r.report is not None and r.report.passed and r.geomean_speedup is not None
    ]
    code = None
    if final is not None:
        try:
            code = store.workspace(ref).read_text(final.sha, config.solution)
        except (WorkspaceError, KeyError, ValueError, OSError):
            code = None
    return Side(
        id=ref.id,
        task=config.task,
        guidance=config.guidance,
        who=who,
        state=state.status_word(store.is_running(ref))[0],
        revisions=len(state.revisions),
        final_rev=final.rev if final is not None else None,
        final_status=final.status if final is not None else None,
        final_speedup=final.geomean_speedup if final is not None else None,
        workloads={w.name: w.latency_ms for w in final.workloads} if final is not None else {},
        curve=[(rev, speedup) for rev, speedup in curve if speedup is not None],
        passed=sum(1 for r in state.ordered() if r.passed),
        device=config.device,
        usage=usage,
        cost_usd=sum(priced) if priced else None,
        code=code,
    )


def compare(store: SessionStore, a: SessionRef, b: SessionRef, *, any_task: bool = False) -> Comparison:
    """Both sessions as read now, and the diff from A's final solution to B's. UsageError for two sessions of
    different tasks unless `any_task`."""
    first, second = store.load(a), store.load(b)
    if first.config.task != second.config.task and not any_task:
        raise UsageError(
            f"{a.id} is a {first.config.task} session and {b.id} a {second.config.task} session: compare two "
            "sessions of one task (--any-task compares them anyway)"
        )
    left, right = _side(store, a, first), _side(store, b, second)
    label = "solution.py"
    diff = (
        unified(left.code, right.code, label, f"{left.id} rev {left.final_rev}", f"{right.id} rev {right.final_rev}")
        if (left.code is not None or right.code is not None)
        else ""
    )
    return Comparison((left, right), diff)


def comparison_table(comparison: Comparison) -> Table:
    """The two sessions side by side, as `session compare` and the workbench show them."""
    left, right = comparison.sides
    table = Table(title=comparison.title, title_justify="left")
    table.add_column("")
    table.add_column(left.id, overflow="fold")
    table.add_column(right.id, overflow="fold")

    def cost(side: Side) -> str:
        return "-" if side.cost_usd is None else f"${side.cost_usd:.4f}"

    rows = [
        *([] if comparison.same_task else [("task", left.task, right.task)]),
        ("who", left.who, right.who),
        ("guidance", left.guidance, right.guidance),
        ("state", left.state, right.state),
        ("revisions", str(left.revisions), str(right.revisions)),
        ("final revision", str(left.final_rev or "-"), str(right.final_rev or "-")),
        ("final status", left.final_status or "-", right.final_status or "-"),
        ("final speedup", format_speedup(left.final_speedup), format_speedup(right.final_speedup)),
        ("tokens in / out", *(f"{side.usage.input_tokens:,} / {side.usage.output_tokens:,}" for side in (left, right))),
        ("cost", cost(left), cost(right)),
    ]
    for name in sorted(set(left.workloads) | set(right.workloads)):
        cells = [side.workloads.get(name) for side in (left, right)]
        rows.append((f"{name} (ms)", *("-" if ms is None else f"{ms:.4g}" for ms in cells)))
    for row in rows:
        table.add_row(*row)
    return table


def comparison_json(c: Comparison) -> dict[str, object]:
    """The stable JSON shape of `session compare --json`."""
    return {
        "sessions": [
            {
                "id": s.id,
                "task": s.task,
                "guidance": s.guidance,
                "who": s.who,
                "state": s.state,
                "revisions": s.revisions,
                "passed_revisions": s.passed,
                "final_rev": s.final_rev,
                "final_status": s.final_status,
                "final_speedup": s.final_speedup,
                "workloads_ms": s.workloads,
                "speedup_by_revision": [{"rev": rev, "speedup": speedup} for rev, speedup in s.curve],
                "untimed": s.untimed or None,  # why there is no speedup by revision
                "input_tokens": s.usage.input_tokens,
                "output_tokens": s.usage.output_tokens,
                "cost_usd": s.cost_usd,
            }
            for s in c.sides
        ],
        "same_task": c.same_task,
        "diff": c.diff,
    }


def curve_figure(c: Comparison) -> Figure:
    """Both sessions' speedup over revisions (integer revision ticks); a session without a timed passing
    revision is named in the legend with the reason it is not drawn. UsageError when neither has one: there
    is nothing to plot (a CPU session has no latencies)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: PLC0415 (only for --plot)
    from matplotlib.figure import Figure  # noqa: PLC0415
    from matplotlib.ticker import MaxNLocator  # noqa: PLC0415

    if not any(side.curve for side in c.sides):
        why = "; ".join(f"{side.id}: {side.untimed}" for side in c.sides)
        raise UsageError(f"--plot: neither session has a timed passing revision, so there is no speedup to draw ({why})")
    figure = Figure(figsize=(7, 4.5), dpi=120)
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    for side in c.sides:
        if side.curve:
            revs, speedups = zip(*side.curve, strict=True)
            axes.plot(revs, speedups, marker="o", label=side.label)
        else:  # named, never dropped in silence
            axes.plot([], [], linestyle="none", marker="x", color="grey", label=f"{side.label}: not drawn, {side.untimed}")
    axes.axhline(1.0, color="grey", linewidth=0.8, linestyle="--")
    axes.xaxis.set_major_locator(MaxNLocator(integer=True))
    axes.set_xlabel("revision")
    axes.set_ylabel("speedup over the reference\n(geometric mean over workloads)")
    left, right = c.sides
    tasks = left.task if c.same_task else f"{left.task} vs {right.task} (different tasks)"
    axes.set_title(f"{tasks}: speedup by revision (passing, timed revisions)", fontsize=10)
    axes.legend(fontsize=8)
    figure.tight_layout()
    return figure


def plot_curves(c: Comparison, path: str) -> None:
    """`curve_figure` in a PNG file (matplotlib's Agg canvas, imported only here)."""
    curve_figure(c).savefig(path)
