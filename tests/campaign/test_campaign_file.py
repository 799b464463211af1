"""The campaign file and its plan: validation with file, line and key; the units and their fixed session
ids; pairing; the estimate; `campaign plan` and `campaign status` before anything ran."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from workbench.campaign.plan import estimate, expand
from workbench.campaign.spec import CampaignError, load_campaign
from workbench.catalog import Catalog
from workbench.cli import app

from .helpers import TASK_IDS, make_suite, write_campaign

BASE = "http://127.0.0.1:9/v1"
PROVIDER = 'provider = "openai"\nmodel = "local-coder"'
PRICE = "price = { input = 0.2, output = 0.6 }"


@pytest.fixture
def suite(tiny_tasks: Path, tmp_path: Path) -> tuple[Path, Path]:
    return make_suite(tiny_tasks, tmp_path / "suite")


def test_the_matrix_expands_to_one_unit_per_cell_with_fixed_ids(suite: tuple[Path, Path], tmp_path: Path) -> None:
    campaign = load_campaign(write_campaign(tmp_path / "c.toml", BASE, extra="repetitions = 2\ndesign_runs = true\n"))
    units = expand(campaign, Catalog(*suite))
    assert len(units) == 2 * 3 * 2 * 2 * 2  # models x tasks x configs x repetitions x (code, design)
    ids = [u.session_id for u in units]
    assert len(set(ids)) == len(ids)
    assert "mini--coder-7b--muon_b--L1L2L3--r2--design" in ids and "mini--gpt-4.1--muon_a--none--r1" in ids
    assert expand(campaign, Catalog(*suite)) == units  # the same file always gives the same units
    assert campaign.sessions_dir == (tmp_path / "sessions").resolve()  # relative to the file
    # pairs: the guided and unguided runs of one model, task, repetition and kind
    pairs: dict[str, set[str]] = {}
    for unit in units:
        pairs.setdefault(unit.pair, set()).add(unit.guidance)
    assert all(configs == {"none", "L1+L2+L3"} for configs in pairs.values())
    assert sum(u.needs_gpu for u in units) == len(units) // 2  # design runs need no GPU


def test_a_category_selects_its_tasks_and_an_unknown_task_is_named(suite: tuple[Path, Path], tmp_path: Path) -> None:
    tasks, guidance = suite
    path = write_campaign(tmp_path / "c.toml", BASE)
    text = path.read_text().replace(json.dumps(list(TASK_IDS)), '{ category = "optimizer" }')
    path.write_text(text)
    catalog = Catalog(tasks, guidance)
    assert catalog.task("muon_a").spec.category == "optimizer"
    assert {u.task for u in expand(load_campaign(path), catalog)} == set(TASK_IDS)
    path.write_text(text.replace('"optimizer"', '"nonsense"'))
    with pytest.raises(CampaignError, match="no task in category 'nonsense'"):
        expand(load_campaign(path), catalog)
    path.write_text(text.replace('{ category = "optimizer" }', '["muon_a", "muon_z"]'))
    with pytest.raises(CampaignError, match=r"unknown task\(s\) \['muon_z'\]"):
        expand(load_campaign(path), catalog)


@pytest.mark.parametrize(
    ("edit", "line", "key", "message"),
    [
        (("max_turns = 6", "max_turns = 0"), 5, "max_turns", "greater than or equal to 1"),
        (('guidance = ["none", "L1+L2+L3"]', 'guidance = ["none", "L4"]'), 4, "guidance[1]", "L1+L2+L3"),
        (
            ('provider = "openai"\nmodel = "local-coder"', 'provider = "opnai"\nmodel = "local-coder"'),
            17,
            "models[1].provider",
            "one of",
        ),
        (
            ("price = { input = 0.2, output = 0.6 }", "price = { input = -1, output = 0.6 }"),
            21,
            "models[1].price.input",
            "greater than or equal to 0",
        ),
        (("retries = 1", "retries = 1\ncolour = 3"), 10, "colour", "unknown key"),
        (('tasks = ["muon_a"', "tasks = [1"), 3, "tasks", "list of task ids"),
        (('label = "coder-7b"', 'label = "gpt-4.1"'), None, "(top level)", "share a name"),
    ],
)
def test_a_bad_campaign_file_names_its_line_and_key(
    tmp_path: Path, edit: tuple[str, str], line: int | None, key: str, message: str
) -> None:
    path = write_campaign(tmp_path / "c.toml", BASE)
    text = path.read_text()
    assert edit[0] in text
    path.write_text(text.replace(edit[0], edit[1], 1))
    with pytest.raises(CampaignError) as caught:
        load_campaign(path)
    error = caught.value
    assert error.key == key and message in str(error), str(error)
    assert error.line == line, str(error)
    assert str(error).startswith(f"{path}:{line}: {key}:" if line else f"{path}: {key}:")


def test_unreadable_toml_and_a_missing_file_are_one_line_errors(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text('name = "x"\nmodels = [\n')
    with pytest.raises(CampaignError, match=r"c.toml:\d+: not valid TOML"):
        load_campaign(path)
    with pytest.raises(CampaignError, match="file not found"):
        load_campaign(tmp_path / "nope.toml")
    done = CliRunner().invoke(app, ["campaign", "plan", str(tmp_path / "nope.toml")])
    assert done.exit_code == 2 and "file not found" in done.output


def test_the_estimate_uses_the_models_price_and_caps_at_the_dollar_budget(suite: tuple[Path, Path], tmp_path: Path) -> None:
    path = write_campaign(tmp_path / "c.toml", BASE)
    path.write_text(path.read_text().replace("max_usd = 1.0", "max_usd = 0.05"))
    campaign = load_campaign(path)
    units = expand(campaign, Catalog(*suite))
    gpt = next(u for u in units if u.model.name == "gpt-4.1")
    coder = next(u for u in units if u.model.name == "coder-7b")
    # defaults: 40% of 6 turns -> 2.4 turns of 30k input (80% cached) and 1.5k output
    per_turn_gpt = (6000 * 2.0 + 24000 * 0.5 + 1500 * 8.0) / 1e6  # gpt-4.1 from the shipped table
    per_turn_coder = (6000 * 0.2 + 24000 * 0.2 + 1500 * 0.6) / 1e6  # the file's price; cache reads at input
    assert per_turn_gpt * 2.4 > 0.05 and estimate(campaign, gpt).usd == pytest.approx(0.05)  # capped by max_usd
    assert estimate(campaign, coder).usd == pytest.approx(per_turn_coder * 2.4)
    assert estimate(campaign, gpt).gpu_hours == 0  # a CPU campaign


@pytest.mark.parametrize(
    ("judge_model", "extra", "judge_usd"),
    [
        ("gpt-4.1", "", (30_000 * 2.0 + 4_000 * 8.0) / 1e6),  # the table's price for the assumed tokens
        ("gpt-4.1", "judge_usd = 0.25", 0.25),  # the file's own figure
        ("judge-without-price", "", None),
    ],
)
def test_plan_prices_each_judge_run_apart(
    suite: tuple[Path, Path], tmp_path: Path, judge_model: str, extra: str, judge_usd: float | None
) -> None:
    tasks, guidance = suite
    path = write_campaign(tmp_path / "c.toml", BASE)
    judge = f'\n[judge]\nprovider = "openai"\nmodel = "{judge_model}"\nbase_url = "{BASE}"\n'
    path.write_text(path.read_text().replace("retries = 1\n", f"retries = 1\n[estimate]\n{extra}\n") + judge)
    campaign = load_campaign(path)
    units = expand(campaign, Catalog(*suite))
    coder = next(u for u in units if u.model.name == "coder-7b")
    guess = estimate(campaign, coder)
    assert guess.judged and guess.judge_usd == (pytest.approx(judge_usd) if judge_usd is not None else None)
    assert guess.usd == pytest.approx((6000 * 0.2 + 24000 * 0.2 + 1500 * 0.6) / 1e6 * 2.4)  # the session alone
    planned = CliRunner().invoke(app, ["campaign", "plan", str(path), "--tasks-dir", str(tasks), "--guidance-dir", str(guidance)])
    assert planned.exit_code == 0, planned.output
    assert f"judged by openai {judge_model}" in " ".join(planned.output.split()) and "est. judge $" in planned.output
    if judge_usd is None:
        assert "estimated cost n/a" in planned.output and "12 judge run(s) n/a" in planned.output
    else:
        assert f"12 judge run(s) ${12 * judge_usd:,.2f}" in planned.output


def test_plan_and_status_before_any_run(suite: tuple[Path, Path], tmp_path: Path) -> None:
    tasks, guidance = suite
    path = write_campaign(tmp_path / "c.toml", BASE)
    runner = CliRunner()
    dirs = ["--tasks-dir", str(tasks), "--guidance-dir", str(guidance)]
    planned = runner.invoke(app, ["campaign", "plan", str(path), *dirs])
    assert planned.exit_code == 0, planned.output
    assert "left to run: 12 of 12 session(s)" in planned.output and "mini--coder-7b--muon_c--L1L2L3--r1" in planned.output
    status = runner.invoke(app, ["campaign", "status", str(path), "--json", *dirs])
    assert status.exit_code == 1  # not complete
    data = json.loads(status.output)
    assert data["total"] == 12 and data["counts"] == {"pending": 12} and data["spend_usd"] == 0
    assert {(c["model"], c["guidance"]) for c in data["cells"]} == {
        (m, g) for m in ("gpt-4.1", "coder-7b") for g in ("none", "L1+L2+L3")
    }
    assert not (tmp_path / "sessions").exists()  # plan and status write nothing


def test_run_checks_keys_and_prices_before_anything_starts(
    suite: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tasks, guidance = suite
    path = write_campaign(tmp_path / "c.toml", BASE)
    dirs = ["--tasks-dir", str(tasks), "--guidance-dir", str(guidance)]
    text = path.read_text()
    path.write_text(text.replace(f'base_url = "{BASE}"\n', "", 1))  # gpt-4.1 from OpenAI itself: it needs a key
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    done = CliRunner().invoke(app, ["campaign", "run", str(path), *dirs])
    assert done.exit_code == 2 and "model gpt-4.1" in done.output and "OPENAI_API_KEY" in done.output, done.output
    assert not (tmp_path / "sessions").exists()  # nothing was started
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    path.write_text(text.replace(PRICE + "\n", ""))  # local-coder has no price now
    done = CliRunner().invoke(app, ["campaign", "run", str(path), *dirs])
    assert done.exit_code == 2 and "model coder-7b" in done.output and "no price" in done.output, done.output
    assert not (tmp_path / "sessions").exists()


def test_run_calls_each_model_once_before_anything_starts(
    suite: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 30: a wrong base URL failed every session of its model, each after a minute of retries. The
    campaign's models with sessions left now answer one small call first (port 9 of 127.0.0.1: nothing there)."""
    tasks, guidance = suite
    path = write_campaign(tmp_path / "c.toml", BASE)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    started = time.monotonic()
    done = CliRunner().invoke(app, ["campaign", "run", str(path), "--tasks-dir", str(tasks), "--guidance-dir", str(guidance)])
    assert done.exit_code == 2 and "check the base URL" in done.output, done.output
    assert time.monotonic() - started < 30
    assert not (tmp_path / "sessions").exists()  # nothing was started
