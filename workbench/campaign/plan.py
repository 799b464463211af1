"""A campaign's units of work, expanded from its file, and what `campaign plan` estimates for them.

A unit is one agent session: (model, task, guidance configuration, repetition) coding on a GPU, or the
same cell's design run (no GPU). Judging is a step of a finished unit, not a unit of its own. Each unit's
session id is fixed by the cell (`<campaign>--<model>--<task>--<config>--r<rep>[--design]`), so a unit can
never get two sessions: creating the directory is exclusive, and a rerun finds it.

Pairing: the guided and unguided units of one (model, task, repetition) differ only in their guidance
configuration; they share the task files, the workloads, the tools, the device model and the budget.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Literal

from workbench.agent import default_provider
from workbench.agent.budget import check_priced, price_pricer
from workbench.agent.check import check_provider
from workbench.campaign.spec import Campaign, CampaignError, ModelEntry
from workbench.catalog import Catalog, GuidanceConfig
from workbench.errors import UsageError, WorkbenchError
from workbench.judge.providers import make_judge_provider
from workbench.llm.usage import Usage

UnitKind = Literal["code", "design"]
CONFIG_SLUG = {"none": "none", "L1": "L1", "L1+L2": "L1L2", "L1+L2+L3": "L1L2L3"}


@dataclass(frozen=True)
class Unit:
    """One session of the matrix."""

    campaign: str
    model: ModelEntry
    task: str
    guidance: GuidanceConfig
    repetition: int  # 1-based
    kind: UnitKind = "code"

    @property
    def key(self) -> str:
        """The cell, as it appears in the session id: unique within the campaign."""
        tail = "--design" if self.kind == "design" else ""
        return f"{self.model.slug}--{self.task}--{CONFIG_SLUG[self.guidance]}--r{self.repetition}{tail}"

    @property
    def session_id(self) -> str:
        return f"{self.campaign}--{self.key}"

    @property
    def needs_gpu(self) -> bool:
        return self.kind == "code"

    @property
    def pair(self) -> str:
        """Guided and unguided units of one model, task, repetition and kind share this."""
        return f"{self.model.slug}--{self.task}--r{self.repetition}--{self.kind}"


def campaign_tasks(campaign: Campaign, catalog: Catalog) -> list[str]:
    """The task ids the campaign names, checked against the catalog."""
    spec = campaign.spec
    known = catalog.task_ids()
    if spec.tasks == "all":
        return known
    if isinstance(spec.tasks, list):
        unknown = [t for t in spec.tasks if t not in known]
        if unknown:
            raise CampaignError(campaign.path, f"unknown task(s) {unknown}; known: {', '.join(known)}", key="tasks")
        if len(set(spec.tasks)) != len(spec.tasks):
            raise CampaignError(campaign.path, "a task is listed twice", key="tasks")
        return list(spec.tasks)
    category = spec.tasks.category
    chosen = [t for t in known if catalog.task(t).spec.category == category]
    if not chosen:
        categories = sorted({catalog.task(t).spec.category for t in known})
        raise CampaignError(campaign.path, f"no task in category {category!r}; categories: {', '.join(categories)}", key="tasks")
    return chosen


def expand(campaign: Campaign, catalog: Catalog) -> list[Unit]:
    """Every unit of the campaign, in a stable order (repetition, model, task, configuration)."""
    spec = campaign.spec
    tasks = campaign_tasks(campaign, catalog)
    for task_id in tasks:
        if any(g != "none" for g in spec.guidance) and catalog.guidance(task_id) is None:
            message = f'task {task_id} ships no guidance; leave it out or use guidance = ["none"]'
            raise CampaignError(campaign.path, message, key="guidance")
        for name in spec.workloads or []:
            try:
                catalog.task(task_id).workload(name)
            except WorkbenchError as exc:
                raise CampaignError(campaign.path, exc.message, key="workloads") from None
    kinds: list[UnitKind] = ["code", "design"] if spec.design_runs else ["code"]
    return [
        Unit(spec.name, model, task_id, config, rep, kind)
        for rep in range(1, spec.repetitions + 1)
        for model in spec.models
        for task_id in tasks
        for config in spec.guidance
        for kind in kinds
    ]


@dataclass(frozen=True)
class UnitEstimate:
    usd: float | None  # the session's model calls; None: the model has no price
    gpu_hours: float
    judged: bool = False  # the campaign judges the unit's session when it finishes
    judge_usd: float | None = None  # that judge run; None: no judge, or the judge model has no price


def judge_estimate(campaign: Campaign) -> float | None:
    """One judge run's dollars: the file's `judge_usd`, else the judge model's table price for the assumed
    tokens (None without a judge or when the table has no price for its model)."""
    spec = campaign.spec
    if spec.judge is None:
        return None
    if spec.estimate.judge_usd is not None:
        return spec.estimate.judge_usd
    usage = Usage(uncached_input=spec.estimate.judge_input_tokens, output=spec.estimate.judge_output_tokens)
    try:
        return price_pricer(None)(spec.judge.model, usage)
    except UsageError:
        return None


def model_priced(model: ModelEntry) -> bool:
    """Whether the model's calls have a price (its own, or the shipped table's): an unpriced model's spend is
    unknown from its first call on, and said so from the start."""
    return check_priced(model.model, True, None, price_pricer(model.price))


def estimate(campaign: Campaign, unit: Unit) -> UnitEstimate:
    """A rough cost and GPU time from the campaign's [estimate] assumptions (per turn, times the expected
    turns); design runs use no GPU; a judged unit adds one judge run, priced apart."""
    spec = campaign.spec
    est = spec.estimate
    turns = max(1.0, spec.max_turns * est.turns)
    cached = int(est.input_tokens_per_turn * est.cached_fraction)
    usage = Usage(uncached_input=est.input_tokens_per_turn - cached, cache_read=cached, output=est.output_tokens_per_turn)
    try:
        per_turn: float | None = price_pricer(unit.model.price)(unit.model.model, usage)
    except UsageError:
        per_turn = None
    usd = None if per_turn is None else per_turn * turns
    if usd is not None and spec.max_usd is not None:
        usd = min(usd, spec.max_usd)
    gpu_hours = 0.0 if not unit.needs_gpu or spec.device == "cpu" else turns * est.gpu_seconds_per_turn / 3600
    return UnitEstimate(usd, gpu_hours, judged=spec.judge is not None, judge_usd=judge_estimate(campaign))


def preflight(campaign: Campaign, probe: Collection[str] = ()) -> None:
    """Before anything runs: every model's provider can be built (its API key is set) and has a price (its
    own, the table's, or `allow_unpriced`), and so can the judge's; the models named in `probe` (those with
    sessions left to run) also answer one small call, not retried (`workbench.agent.check`). UsageError
    naming the model otherwise: without this, every session of a model with a missing key or a wrong base
    URL would fail and use up its retries."""
    spec = campaign.spec
    for model in spec.models:
        try:
            check_priced(model.model, spec.allow_unpriced, spec.max_usd, price_pricer(model.price))
            default_provider(model.provider, model.model, model.base_url)
        except WorkbenchError as exc:
            raise CampaignError(campaign.path, f"model {model.name}: {exc.message}", key="models") from None
    if spec.judge is not None:
        try:
            make_judge_provider(spec.judge.provider, spec.judge.model, spec.judge.base_url)
        except WorkbenchError as exc:
            raise CampaignError(campaign.path, f"judge {spec.judge.model}: {exc.message}", key="judge") from None
    for model in spec.models:  # then the calls: every file-level problem is said before any network wait
        if model.name in probe:
            pricer = price_pricer(model.price)
            url = model.base_url
            checked = check_provider(default_provider, model.provider, model.model, url, allow_unpriced=True, pricer=pricer)
            if checked.failure is not None:
                raise CampaignError(campaign.path, f"model {model.name}: {checked.failure}", key="models")


__all__ = [
    "CONFIG_SLUG",
    "Unit",
    "UnitEstimate",
    "UnitKind",
    "campaign_tasks",
    "estimate",
    "expand",
    "judge_estimate",
    "model_priced",
    "preflight",
]
