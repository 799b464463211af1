"""Scoring: the paper's metrics computed from session logs and their evaluation reports.

    collected = collect([Path("sessions")])                          # collect.py: sessions -> SessionRecord
    results = build_results(collected.records, catalog=catalog)      # report.py: filter, baseline, score
    tables = build_tables(results)                                   # tables.py: Table 1, 2, 4, 5, 6, ...
    print(render_markdown(tables, results.provenance.caption()))
    write_figures(results, Path("figures"))                          # figures.py (imports matplotlib)

Modules: verdicts (the judge's dict shapes, effective scores), records (what a session contributes),
collect, baseline (reference or baseline sessions; the device-model rule), metrics (pure functions),
roofline, results (grouping and aggregation), report, tables, figures, termcharts (terminal charts),
testing (synthetic sessions for tests). Nothing here writes a session. docs/scoring.md has the definitions.
"""

from workbench.scoring.baseline import Baseline, check_devices, reference_baseline, sessions_baseline
from workbench.scoring.collect import Collected, collect, find_sessions, read_session
from workbench.scoring.records import SessionRecord
from workbench.scoring.report import build_results, make_baseline
from workbench.scoring.results import Results, filter_records, score, session_curve
from workbench.scoring.tables import (
    FORMATS,
    TABLE_IDS,
    Table,
    build_tables,
    render_csv,
    render_json,
    render_markdown,
    rich_tables,
)

__all__ = [
    "FORMATS",
    "TABLE_IDS",
    "Baseline",
    "Collected",
    "Results",
    "SessionRecord",
    "Table",
    "build_results",
    "build_tables",
    "check_devices",
    "collect",
    "filter_records",
    "find_sessions",
    "make_baseline",
    "read_session",
    "reference_baseline",
    "render_csv",
    "render_json",
    "render_markdown",
    "rich_tables",
    "score",
    "session_curve",
    "sessions_baseline",
]
