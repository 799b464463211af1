"""One call from sessions to scored results, as the CLI and the workbench ask for them.

results = build_results(collect(paths).records, baseline_records=collect([base]).records, catalog=catalog)
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from workbench.catalog import Catalog
from workbench.scoring.baseline import Baseline, reference_baseline, sessions_baseline
from workbench.scoring.records import SessionRecord
from workbench.scoring.results import Results, filter_records, score


def make_baseline(baseline_records: Sequence[SessionRecord] | None, pick: str = "first-correct") -> Baseline:
    """The reference baseline when no baseline sessions are given, else `sessions_baseline(...)`."""
    return reference_baseline() if baseline_records is None else sessions_baseline(baseline_records, pick)


def build_results(
    records: Sequence[SessionRecord],
    *,
    baseline_records: Sequence[SessionRecord] | None = None,
    pick: str = "first-correct",
    catalog: Catalog | None = None,
    tasks: Sequence[str] = (),
    models: Sequence[str] = (),
    configs: Sequence[str] = (),
    device_model: str | None = None,
    now: datetime | None = None,
) -> Results:
    """Filter the records, make the baseline and score. UsageError for a filter that matches nothing, a bad
    baseline, or latencies from several device models."""
    if baseline_records is not None and device_model:
        baseline_records = filter_records(baseline_records, device_model=device_model)
    baseline = make_baseline(baseline_records, pick)
    kept = filter_records(records, tasks=tasks, models=models, configs=configs, device_model=device_model)
    return score(kept, baseline, catalog, now=now)
