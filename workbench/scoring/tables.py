"""`Results` -> tables in the shape of the paper's, and their renderers: rich (terminal), Markdown, CSV, JSON.

A `Table` holds raw values (numbers, text, None); each column's kind says how a person reads it ("93.1%",
"1.23x", "$4.56"). Markdown and the terminal show the formatted text; CSV and JSON keep the raw values.

| id | what |
| --- | --- |
| sessions | the sessions that count: one per model, configuration and task |
| table1 | correctness over model-task pairs and the Performance Score S_perf (paper Table 1) |
| table2 | judge scores: JS_design and JS_impl per configuration (paper Table 2) |
| judge_levels | the judge's mean per level behind table2 |
| table4 | geometric-mean speedup over tasks for the groups correct everywhere (paper Table 4) |
| task_speedups | the task speedup of every model, configuration and task (over repetitions: geometric mean, sd, runs correct) |
| table5 | fast_p at p = 1, 1.5, 2 over all tasks (paper Table 5) |
| table6 | tokens by bucket and cost per model and configuration (paper Table 6) |
| ablation | S_perf per guidance configuration (paper Figure 3's data) |
| sperf_turns | S'perf at a few turns (paper Figure 4's data) |
| workloads | per workload: latency, baseline, speedup and the fraction of the roofline (means over repetitions) |
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict
from rich.table import Table as RichTable
from rich.text import Text

from workbench.errors import UsageError
from workbench.harness.host.version import harness_version
from workbench.llm.usage import Spend
from workbench.scoring import metrics
from workbench.scoring.results import Results, TaskCell, TaskRuns, WorkloadScore, p_key
from workbench.scoring.verdicts import LEVELS

Kind = Literal["text", "int", "percent", "speedup", "score", "js", "tokens", "usd", "ms", "fraction"]
Cell = str | int | float | None
FORMATS: tuple[str, ...] = ("table", "md", "csv", "json")
CHECKPOINTS: tuple[int, ...] = (1, 2, 5, 10, 25, 50, 100, 200, 350)  # sperf_turns' columns (up to the horizon)


class Column(BaseModel):
    model_config = ConfigDict(frozen=True)

    key: str
    title: str
    kind: Kind = "text"


class Table(BaseModel):
    id: str
    title: str
    columns: list[Column]
    rows: list[list[Cell]]
    notes: list[str] = []

    def records(self) -> list[dict[str, Cell]]:
        return [dict(zip([c.key for c in self.columns], row, strict=True)) for row in self.rows]

    def column(self, key: str) -> list[Cell]:
        index = [c.key for c in self.columns].index(key)
        return [row[index] for row in self.rows]


def format_cell(value: Cell, kind: Kind) -> str:
    """How a person reads a value: "-" for none, text as it is, numbers by the column's kind."""
    if value is None:
        return "-"
    if isinstance(value, str):
        return value
    match kind:
        case "percent":
            return f"{value * 100:.1f}%"
        case "speedup":
            return f"{value:.2f}x"
        case "score":
            return f"{value:.2f}"
        case "fraction":
            return f"{value:.3f}"
        case "js":
            return f"{value:.1f}"
        case "tokens":
            return f"{int(value):,}"
        case "usd":
            return f"${value:,.2f}"
        case "ms":
            return f"{value:.4g}"
        case _:
            return str(value)


def _ratio(n: int, total: int) -> str:
    return f"{n}/{total}"


SKIPPED_NOTE = (
    "skipped: a task whose workloads need more device memory than the GPU had (task.toml device_memory_gib) is "
    "counted apart, neither correct nor failed, and left out of correctness, S_perf and fast_p"
)


# ---- the tables ----------------------------------------------------------------------------------------


def sessions_table(r: Results) -> Table:
    providers = {g.label: g.provider for g in r.groups}
    rows: list[list[Cell]] = []
    for c in r.cells:
        if c.session is not None:
            rows.append([c.session, c.group, providers.get(c.group), c.config, c.repetition, c.task, c.device_name])
            rows[-1] += [c.rev, c.status, c.speedup, c.js_impl, _graded_by(c)]
    columns = [
        Column(key="session", title="session"),
        Column(key="model", title="model"),
        Column(key="provider", title="provider"),
        Column(key="config", title="guidance"),
        Column(key="repetition", title="rep", kind="int"),
        Column(key="task", title="task"),
        Column(key="device", title="device"),
        Column(key="rev", title="submitted rev", kind="int"),
        Column(key="status", title="status"),
        Column(key="speedup", title="task speedup", kind="speedup"),
        Column(key="js_impl", title="JS_impl", kind="js"),
        Column(key="harness", title="harness"),
    ]
    title = "Sessions scored (the latest per model, configuration, repetition and task)"
    older = sum(1 for c in r.cells if c.session is not None and c.older_harness)
    notes = (
        [
            f'harness "older": {older} session(s) graded by an older harness than this one ({harness_version()}); '
            "`d2k-workbench regrade SESSION` evaluates their result again"
        ]
        if older
        else []
    )
    return Table(id="sessions", title=title, columns=columns, rows=rows, notes=notes)


def _graded_by(cell: TaskCell) -> str | None:
    """ "current" or "older": which harness graded the status shown (None: nothing evaluated)."""
    if cell.harness_version is None:
        return None
    return "older" if cell.older_harness else "current"


def _baseline_label(r: Results) -> str:
    return "baseline (reference)" if not r.provenance.baseline_sessions else "baseline (baseline sessions)"


def table1(r: Results) -> Table:
    repeated = any(s.repetitions > 1 for s in r.scores)  # a spread and a count per configuration, then
    columns = [Column(key="model", title="model")]
    for c in r.configs:
        columns += [
            Column(key=f"correct[{c}]", title=f"correct {c}"),
            Column(key=f"correctness[{c}]", title=f"correctness {c}", kind="percent"),
            Column(key=f"sperf[{c}]", title=f"S_perf {c}", kind="score"),
        ]
        if repeated:
            columns += [
                Column(key=f"sperf_sd[{c}]", title=f"S_perf sd {c}", kind="score"),
                Column(key=f"repetitions[{c}]", title=f"reps {c}", kind="int"),
            ]
    width = 5 if repeated else 3
    rows: list[list[Cell]] = []
    for g in r.groups:
        if not any(s.group == g.label for s in r.scores):
            continue
        row: list[Cell] = [g.label]
        for c in r.configs:
            s = r.group_scores(g.label, c)
            cells: list[Cell] = [_ratio(s.passed, s.tasks), s.correctness, s.sperf] if s else [None, None, None]
            if repeated:
                cells += [s.sperf_sd, s.repetitions] if s else [None, None]
            row += cells
        rows.append(row)
    rows.append([_baseline_label(r), *([None, None, 1.0] + [None] * (width - 3)) * len(r.configs)])
    overall: list[Cell] = ["overall"]
    for c in r.configs:
        o = r.overall_for(c)
        overall += ([_ratio(o.passed, o.pairs), o.correctness, o.sperf] if o else [None, None, None]) + [None] * (width - 3)
    rows.append(overall)
    notes = [
        f"correctness: correct final submissions over model-task pairs ({len(r.tasks)} task(s); a task not run counts as failed)",
        f"S_perf: mean over all tasks of the task speedup (geometric mean over workloads) against {r.provenance.baseline}, "
        f"{metrics.PENALTY} for a failed task; the baseline scores 1.0; overall: geometric mean over the models",
        *(
            [
                "repetitions: S_perf and correctness are means over a model's repetitions of the configuration (each "
                "scored over every task, then averaged), sd their sample standard deviation, correct the task runs "
                "over all repetitions"
            ]
            if repeated
            else []
        ),
        *([SKIPPED_NOTE] if any(c.skipped for c in r.cells) else []),
    ]
    return Table(
        id="table1", title="Table 1: correctness and Performance Score (S_perf)", columns=columns, rows=rows, notes=notes
    )


def table2(r: Results) -> Table:
    columns = [Column(key="model", title="model"), Column(key="js_design", title="JS_design", kind="js")]
    for c in r.configs:
        columns += [Column(key=f"js_impl[{c}]", title=f"JS_impl {c}", kind="js"), Column(key=f"judged[{c}]", title=f"judged {c}")]
    rows: list[list[Cell]] = []
    design = {d.group: d for d in r.design}
    for g in r.groups:
        row: list[Cell] = [g.label, design[g.label].js_design if g.label in design else None]
        for c in r.configs:
            s = r.group_scores(g.label, c)
            row += [s.js_impl, _ratio(s.judged, s.tasks)] if s else [None, None]
        rows.append(row)
    mean_row: list[Cell] = ["mean over models", _mean([d.js_design for d in r.design])]
    for c in r.configs:
        mean_row += [_mean([s.js_impl for s in r.scores if s.config == c]), None]
    rows.append(mean_row)
    notes = [
        "JS = mean of the effective L1, L2, L3 scores (0-100), only when all three are valid; effective: the latest "
        "review of a level, else the judge's score; a failed task scores 0",
        "JS_impl: the judge on the submitted code; JS_design: on independent design proposals (agent_mode design)",
    ]
    return Table(id="table2", title="Table 2: LLM judge scores (JS_design, JS_impl)", columns=columns, rows=rows, notes=notes)


def judge_levels(r: Results) -> Table:
    columns = [
        Column(key="model", title="model"),
        Column(key="config", title="guidance"),
        *(Column(key=level, title=level, kind="js") for level in LEVELS),
        Column(key="js", title="JS", kind="js"),
        Column(key="judged", title="judged"),
    ]
    rows: list[list[Cell]] = [
        [s.group, s.config, *(s.levels[level] for level in LEVELS), s.js_impl, _ratio(s.judged, s.tasks)] for s in r.scores
    ]
    rows += [
        [d.group, "design", *(d.levels[level] for level in LEVELS), d.js_design, _ratio(d.judged, d.sessions)] for d in r.design
    ]
    return Table(id="judge_levels", title="Judge scores by level (means over tasks)", columns=columns, rows=rows)


def table4(r: Results) -> Table:
    fully = r.overall[0].fully_correct if r.overall else []
    columns = [Column(key="model", title="model")] + [
        Column(key=f"speedup[{c}]", title=f"speedup {c}", kind="speedup") for c in r.configs
    ]
    rows: list[list[Cell]] = []
    for label in fully:
        row: list[Cell] = [label]
        for c in r.configs:
            s = r.group_scores(label, c)
            row.append(s.geomean_speedup if s else None)
        rows.append(row)
    rows.append(["geometric mean", *(o.geomean_speedup for o in r.overall)])
    left_out = [g.label for g in r.groups if g.label not in fully and any(s.group == g.label for s in r.scores)]
    notes = [
        f"geometric mean over all {len(r.tasks)} task(s) of the task speedup against {r.provenance.baseline}, for the models "
        "correct (and timed) on every task in every configuration"
    ]
    if left_out:
        notes.append(f"not correct and timed everywhere, left out: {', '.join(left_out)}")
    return Table(
        id="table4", title="Table 4: speedup of the models correct on every task", columns=columns, rows=rows, notes=notes
    )


def task_speedups(r: Results) -> Table:
    """Per task, each model and configuration's task speedup; over repetitions the geometric mean of the
    correct, timed runs with its spread and how many runs were correct."""
    pairs = [(s.group, s.config) for s in r.scores]
    repeated = r.repeated
    columns = [Column(key="task", title="task")]
    for g, c in pairs:
        columns.append(Column(key=f"{g}[{c}]", title=f"{g} {c}", kind="speedup"))
        if repeated:
            columns += [
                Column(key=f"sd {g}[{c}]", title="sd", kind="score"),
                Column(key=f"correct {g}[{c}]", title="correct"),
            ]
    rows: list[list[Cell]] = []
    for task in r.tasks:
        row: list[Cell] = [task]
        for g, c in pairs:
            runs = r.task_runs(g, c, task)
            row.append(_speedup_cell(runs))
            if repeated:
                row += [runs.speedup_sd, _ratio(runs.correct, runs.runs)]
        rows.append(row)
    notes = []
    if repeated:
        notes.append(
            "over repetitions: the geometric mean of the correct, timed runs' task speedups, sd their sample standard "
            "deviation, correct the runs correct out of all (a run not made counts as not correct)"
        )
    title = "Task speedups (geometric mean over workloads" + (", then over repetitions)" if repeated else ")")
    return Table(id="task_speedups", title=title, columns=columns, rows=rows, notes=notes)


def _speedup_cell(runs: TaskRuns) -> Cell:
    """The speedup, else why there is none: every run not made, failed (with the status when there is one
    run), or correct but untimed."""
    if runs.speedup is not None:
        return runs.speedup
    if runs.ran == 0:
        return "not run"
    if runs.correct:
        return "untimed"
    if runs.skipped == runs.ran:
        return "skipped"
    statuses = sorted({c.status for c in runs.cells if c.session is not None and not c.skipped})
    return f"failed ({', '.join(statuses)})"


def table5(r: Results) -> Table:
    columns = [Column(key="model", title="model")]
    for c in r.configs:
        columns += [Column(key=f"fast_{p_key(p)}[{c}]", title=f"fast_{p_key(p)} {c}", kind="percent") for p in metrics.FAST_P]
    rows: list[list[Cell]] = []
    for g in r.groups:
        if not any(s.group == g.label for s in r.scores):
            continue
        row: list[Cell] = [g.label]
        for c in r.configs:
            s = r.group_scores(g.label, c)
            row += [s.fast_p[p_key(p)] if s else None for p in metrics.FAST_P]
        rows.append(row)
    overall: list[Cell] = ["all pairs"]
    for o in r.overall:
        overall += [o.fast_p[p_key(p)] for p in metrics.FAST_P]
    rows.append(overall)
    notes = [f"fast_p: tasks correct with task speedup above p, over all {len(r.tasks)} task(s) (failed and not run included)"]
    return Table(id="table5", title="Table 5: fast_p", columns=columns, rows=rows, notes=notes)


TOKEN_BUCKETS: tuple[str, ...] = ("uncached_input", "cache_read", "cache_write", "output", "reasoning")
TOKEN_TITLES = {"output": "output (visible)"}


def table6(r: Results) -> Table:
    columns = [
        Column(key="model", title="model"),
        Column(key="config", title="guidance"),
        Column(key="sessions", title="sessions", kind="int"),
        Column(key="turns", title="turns", kind="int"),
        *(Column(key=b, title=TOKEN_TITLES.get(b, b.replace("_", " ")), kind="tokens") for b in TOKEN_BUCKETS),
        Column(key="total_tokens", title="total", kind="tokens"),
        Column(key="cost_usd", title="cost", kind="usd"),
        Column(key="unpriced_calls", title="unpriced calls", kind="int"),
    ]

    def row(label: str, config: str, sessions: int, turns: int | None, t: Spend) -> list[Cell]:
        cost = t.cost_usd if t.calls > t.unpriced_calls else None
        total = t.input_tokens + t.output_tokens
        return [label, config, sessions, turns, *(getattr(t, b) for b in TOKEN_BUCKETS), total, cost, t.unpriced_calls]

    rows = [row(t.group, t.config, t.sessions, t.turns, t.tokens) for t in r.tokens]
    for config in dict.fromkeys(t.config for t in r.tokens):
        mine = [t for t in r.tokens if t.config == config]
        total = sum((t.tokens for t in mine), Spend())
        turns = [t.turns for t in mine if t.turns is not None]
        rows.append(row("total", config, sum(t.sessions for t in mine), sum(turns) if turns else None, total))
    notes = [
        "turns are model turns (the model calls of agent sessions); human, command and replay sessions have none "
        "(-) and add none to the total",
        "tokens of the model calls of the sessions that count (model_call events); output is the visible output only: "
        "reasoning (thinking) tokens are their own column, billed at the output price; the five columns sum to the "
        "total the provider reports",
        "cost from the price table at the time of each call; with unpriced calls it is a lower bound",
    ]
    return Table(id="table6", title="Table 6: tokens and cost", columns=columns, rows=rows, notes=notes)


def ablation(r: Results) -> Table:
    columns = [Column(key="model", title="model")] + [Column(key=c, title=f"S_perf {c}", kind="score") for c in r.configs]
    rows: list[list[Cell]] = []
    for g in r.groups:
        if not any(s.group == g.label for s in r.scores):
            continue
        rows.append([g.label, *((s.sperf if (s := r.group_scores(g.label, c)) else None) for c in r.configs)])
    return Table(
        id="ablation",
        title="Guidance ablation: S_perf per configuration (Figure 3)",
        columns=columns,
        rows=rows,
        notes=["guidance is cumulative: none, L1, L1+L2, L1+L2+L3"],
    )


def sperf_turns(r: Results) -> Table:
    curves = [s.curve for s in r.scores if s.curve is not None]
    horizon = max((c.points[-1][0] for c in curves if c.points), default=0)
    checkpoints = [step for step in CHECKPOINTS if step < horizon]
    columns = [Column(key="model", title="model"), Column(key="config", title="guidance"), Column(key="axis", title="steps")]
    columns += [Column(key=str(step), title=f"@{step}", kind="score") for step in checkpoints]
    columns += [Column(key="final", title="final", kind="score"), Column(key="last_step", title="last step", kind="int")]
    rows: list[list[Cell]] = []
    for curve in curves:
        last = curve.points[-1] if curve.points else (0, None)
        rows.append([curve.group, curve.config, curve.axis, *(curve.value_at(step) for step in checkpoints), last[1], last[0]])
    notes = [
        f"S'perf: per task the best eligible task speedup so far, {metrics.FALLBACK} before the first eligible (correct, "
        "timed) submission; mean over all tasks; steps are turns for agent sessions, revisions otherwise"
    ]
    return Table(id="sperf_turns", title="S'perf over turns (Figure 4)", columns=columns, rows=rows, notes=notes)


def workloads(r: Results) -> Table:
    columns = [
        Column(key="model", title="model"),
        Column(key="config", title="guidance"),
        Column(key="task", title="task"),
        Column(key="workload", title="workload"),
        Column(key="latency_ms", title="latency ms", kind="ms"),
        Column(key="baseline_ms", title="baseline ms", kind="ms"),
        Column(key="speedup", title="speedup", kind="speedup"),
        Column(key="roofline_ms", title="roofline ms", kind="ms"),
        Column(key="roofline_fraction", title="of roofline", kind="fraction"),
        Column(key="library_ms", title="library ms", kind="ms"),
        Column(key="library_speedup", title="vs library", kind="speedup"),
    ]
    repeated = r.repeated
    if repeated:
        columns.append(Column(key="runs", title="correct runs", kind="int"))
    rows: list[list[Cell]] = []
    for c in r.cells:
        if c.repetition != 1 and repeated:
            continue  # the first repetition's row stands for all of them
        if not repeated:
            rows += [[c.group, c.config, c.task, *_workload_cells(w)] for w in c.workloads]
            continue
        runs = r.task_runs(c.group, c.config, c.task)
        correct = sum(cell.correct for cell in runs.cells)
        rows += [[c.group, c.config, c.task, *_workload_cells(w), correct] for w in runs.workload_means()]
    notes = [
        "roofline: max(FLOPs / peak FLOP rate, bytes / peak bandwidth) from the task's [roofline] formulas (the reference's "
        "work) and the device's datasheet peaks; a design that does less work than the reference can exceed 1",
        "library: the task's library baseline (the best library call for the job, task.toml [library]) timed in the same "
        "evaluation, and the speedup over it; '-' where the task has none or nothing was timed",
    ]
    if repeated:
        notes.append("over the correct repetitions: mean latencies and roofline fraction, geometric-mean speedup")
    return Table(
        id="workloads", title="Per workload: speedup and fraction of the roofline", columns=columns, rows=rows, notes=notes
    )


def _workload_cells(w: WorkloadScore) -> list[Cell]:
    return [w.name, w.latency_ms, w.baseline_ms, w.speedup, w.roofline_ms, w.roofline_fraction, w.library_ms, w.library_speedup]


def _mean(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return metrics.mean(present) if present else None


def paired(r: Results) -> Table:
    """Guided against unguided runs of one model and task, repetition by repetition (a campaign pairs them:
    the same task, budget and repetition), and per model, task and configuration the mean difference and how
    often the guided run did better."""
    columns = [
        Column(key="model", title="model"),
        Column(key="task", title="task"),
        Column(key="config", title="guidance"),
        Column(key="pairs", title="pairs", kind="int"),
        Column(key="unguided", title="unguided speedup (mean)", kind="speedup"),
        Column(key="guided", title="guided speedup (mean)", kind="speedup"),
        Column(key="difference", title="mean difference", kind="score"),
        Column(key="better", title="guided better"),
    ]
    failed = metrics.PENALTY  # a failed run counts as S_perf does it

    def value(cell: TaskCell) -> float | None:
        """The run's speedup, the penalty when it failed, None when it passed untimed or was skipped (no pair
        then)."""
        return cell.speedup if cell.speedup is not None else (None if cell.correct or cell.skipped else failed)

    by_key = {(c.group, c.config, c.task, c.repetition): c for c in r.cells if c.session is not None}
    rows: list[list[Cell]] = []
    untimed = 0  # pairs with a run that passed without a latency: no difference to take
    for g in r.groups:
        for task in r.tasks:
            for config in (c for c in r.configs if c != "none"):
                matched = [
                    (value(base), value(guided))
                    for (group, conf, t, rep), guided in by_key.items()
                    if group == g.label and conf == config and t == task
                    and (base := by_key.get((g.label, "none", task, rep))) is not None
                ]  # fmt: skip
                pairs = [(a, b) for a, b in matched if a is not None and b is not None]
                untimed += len(matched) - len(pairs)
                if not pairs:
                    continue
                differences = [b - a for a, b in pairs]
                rows.append(
                    [
                        g.label, task, config, len(pairs),
                        metrics.mean([a for a, _ in pairs]), metrics.mean([b for _, b in pairs]), metrics.mean(differences),
                        f"{sum(d > 0 for d in differences)}/{len(pairs)}",
                    ]
                )  # fmt: skip
    notes = [
        "each guided run against the unguided run of the same model, task and repetition; speedup as in S_perf "
        f"({failed} for a failed run); guided better: in how many pairs the difference is positive"
    ]
    if untimed:
        notes.append(
            f"{untimed} pair(s) left out: a run passed without a latency (the CPU) or was skipped, so there is no difference"
        )
    return Table(id="paired", title="Guided against unguided, paired by repetition", columns=columns, rows=rows, notes=notes)


BUILDERS = {
    "sessions": sessions_table,
    "table1": table1,
    "table2": table2,
    "judge_levels": judge_levels,
    "table4": table4,
    "task_speedups": task_speedups,
    "table5": table5,
    "table6": table6,
    "ablation": ablation,
    "paired": paired,
    "sperf_turns": sperf_turns,
    "workloads": workloads,
}
TABLE_IDS: tuple[str, ...] = tuple(BUILDERS)


def build_tables(results: Results, only: Sequence[str] = ()) -> list[Table]:
    """The tables (all, or those named in `only`, in TABLE_IDS order). UsageError for an unknown name."""
    unknown = [name for name in only if name not in BUILDERS]
    if unknown:
        raise UsageError(f"unknown table {', '.join(unknown)}; expected some of: {', '.join(TABLE_IDS)}")
    return [build(results) for name, build in BUILDERS.items() if not only or name in only]


# ---- renderers -----------------------------------------------------------------------------------------


def rich_tables(tables: Sequence[Table]) -> list[Any]:
    """One rich Table per table (title above, notes as the caption)."""
    rendered = []
    for table in tables:
        out = RichTable(
            title=Text(table.title, style="bold"),
            title_justify="left",
            caption=Text("\n".join(table.notes), style="dim") if table.notes else None,
            caption_justify="left",
        )
        for column in table.columns:
            justify: Literal["left", "right"] = "left" if column.kind == "text" else "right"
            out.add_column(Text(column.title), justify=justify, overflow="fold", no_wrap=column.key == "session")  # ids whole
        for row in table.rows:
            out.add_row(*(Text(format_cell(v, c.kind)) for v, c in zip(row, table.columns, strict=True)))
        rendered.append(out)
    return rendered


def _md_escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(tables: Sequence[Table], caption: str) -> str:
    lines = [f"_{_md_escape(caption)}_", ""]
    for table in tables:
        lines += [f"### {table.title}", ""]
        lines.append("| " + " | ".join(_md_escape(c.title) for c in table.columns) + " |")
        lines.append("|" + "|".join(" --- " if c.kind == "text" else " ---: " for c in table.columns) + "|")
        for row in table.rows:
            lines.append(
                "| " + " | ".join(_md_escape(format_cell(v, c.kind)) for v, c in zip(row, table.columns, strict=True)) + " |"
            )
        lines.append("")
        lines += [f"- {_md_escape(note)}" for note in table.notes]
        if table.notes:
            lines.append("")
    return "\n".join(lines)


def render_csv(tables: Sequence[Table]) -> str:
    """Raw values; several tables become sections, each after a `# id: title` line and before a blank line."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    for table in tables:
        if len(tables) > 1:
            buffer.write(f"# {table.id}: {table.title}\n")
        writer.writerow([c.title for c in table.columns])
        writer.writerows([["" if v is None else v for v in row] for row in table.rows])
        if len(tables) > 1:
            buffer.write("\n")
    return buffer.getvalue()


def render_json(results: Results, tables: Sequence[Table]) -> str:
    """The whole results (every number, the S'perf curves, the provenance) and the tables as lists of rows."""
    data = {
        "provenance": results.provenance.model_dump(mode="json"),
        "tables": {
            t.id: {
                "title": t.title,
                "columns": [c.model_dump() for c in t.columns],
                "rows": t.records(),
                "notes": t.notes,
            }
            for t in tables
        },
        "results": results.model_dump(mode="json", exclude={"provenance"}),
    }
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
