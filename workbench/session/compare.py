"""Two sessions side by side, for `session compare A B`: who worked how (driver, model, guidance), how far they
got (state, revisions, the submission's status and speedup, per workload), what it cost (tokens, dollars),
their speedup over revisions, and the diff between their final kernels.

    comparison = compare(store, store.resolve(a), store.resolve(b))
    text = comparison.diff                  # unified diff of the final solutions ("" when the same)
    comparison.sides[0].curve               # [(rev, geometric-mean speedup)] of the revisions that passed
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rich.table import Table

from workbench.llm.usage import Usage
from workbench.session.diff import unified
from workbench.session.format import format_speedup
from workbench.session.layout import SessionRef
from workbench.session.store import SessionStore, SessionView
from workbench.session.workspace import WorkspaceError


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
    usage: Usage = field(default_factory=Usage)
    cost_usd: float | None = None  # None: no priced model call
    code: str | None = None  # the final revision's solution (None: none, or unreadable)


@dataclass
class Comparison:
    sides: tuple[Side, Side]
    diff: str  # the final solutions' unified diff ("" when they are the same)


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
        state=state.status_word()[0],
        revisions=len(state.revisions),
        final_rev=final.rev if final is not None else None,
        final_status=final.status if final is not None else None,
        final_speedup=final.geomean_speedup if final is not None else None,
        workloads={w.name: w.latency_ms for w in final.workloads} if final is not None else {},
        curve=[(rev, speedup) for rev, speedup in curve if speedup is not None],
        usage=usage,
        cost_usd=sum(priced) if priced else None,
        code=code,
    )


def compare(store: SessionStore, a: SessionRef, b: SessionRef) -> Comparison:
    """Both sessions as read now, and the diff from A's final solution to B's."""
    left, right = _side(store, a, store.load(a)), _side(store, b, store.load(b))
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
    table = Table(title=f"{left.task}: two sessions", title_justify="left")
    table.add_column("")
    table.add_column(left.id, overflow="fold")
    table.add_column(right.id, overflow="fold")

    def cost(side: Side) -> str:
        return "-" if side.cost_usd is None else f"${side.cost_usd:.4f}"

    rows = [
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
                "final_rev": s.final_rev,
                "final_status": s.final_status,
                "final_speedup": s.final_speedup,
                "workloads_ms": s.workloads,
                "speedup_by_revision": [{"rev": rev, "speedup": speedup} for rev, speedup in s.curve],
                "input_tokens": s.usage.input_tokens,
                "output_tokens": s.usage.output_tokens,
                "cost_usd": s.cost_usd,
            }
            for s in c.sides
        ],
        "diff": c.diff,
    }


def plot_curves(c: Comparison, path: str) -> None:
    """Both sessions' speedup over revisions in one PNG (matplotlib's Agg canvas, imported here only)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: PLC0415 (only for --plot)
    from matplotlib.figure import Figure  # noqa: PLC0415

    figure = Figure(figsize=(7, 4), dpi=120)
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    for side in c.sides:
        if side.curve:
            revs, speedups = zip(*side.curve, strict=True)
            axes.plot(revs, speedups, marker="o", label=f"{side.who} · {side.guidance} ({side.id[-4:]})")
    axes.axhline(1.0, color="grey", linewidth=0.8, linestyle="--")
    axes.set_xlabel("revision")
    axes.set_ylabel("speedup over the reference (geometric mean, passed revisions)")
    axes.set_title(f"{c.sides[0].task}: two sessions")
    if any(side.curve for side in c.sides):
        axes.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path)
