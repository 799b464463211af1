"""The launch dialog without a runner: Tab order, the replay/workload/timeout options, the remembered
guidance, the default idle exit of a human session and where its workspace is shown; the agent driver's
fields, their checks and the warning about a missing API key.

`start_runner` is replaced by a recorder, so a session is created for real (session.toml, git workspace)
but no runner process starts.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from textual.containers import Vertical
from textual.widgets import Checkbox, Input, Select, SelectionList, Static

from workbench.session.config import DEFAULT_MAX_TURNS, CommandConfig, load_config
from workbench.session.layout import SessionRef
from workbench.tui.app import WorkbenchApp
from workbench.tui.context import DEFAULT_IDLE_EXIT_MIN, WorkbenchContext
from workbench.tui.screens import launch as launch_module
from workbench.tui.screens.launch import LaunchScreen
from workbench.tui.screens.session_view import SessionViewScreen

from .conftest import EXAMPLE_ID, SIZE, settle

Started = list[tuple[SessionRef, float | None]]


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch) -> Started:
    """Every runner the dialog would start: (session, idle exit in seconds)."""
    calls: Started = []

    def record(context: WorkbenchContext, ref: SessionRef, idle_exit_s: float | None) -> tuple[int, str]:
        calls.append((ref, idle_exit_s))
        return 4242, str(ref.dir / launch_module.RUNNER_LOG)

    monkeypatch.setattr(launch_module, "start_runner", record)
    return calls


async def open_dialog(app: WorkbenchApp, pilot) -> LaunchScreen:  # type: ignore[no-untyped-def]
    await settle(pilot)
    await pilot.press("n")
    await settle(pilot)
    assert isinstance(app.screen, LaunchScreen)
    return app.screen


def notices(app: WorkbenchApp) -> list[str]:
    return [n.message for n in app._notifications]


def test_the_runner_command_carries_the_idle_exit(context: WorkbenchContext) -> None:
    assert context.runner_command("abc", 1800)[-2:] == ["--idle-exit", "1800"]
    assert "--idle-exit" not in context.runner_command("abc")


@pytest.mark.slow  # a Pilot session of 4-5 s; the dialog/screen keeps quicker tests in the fast subset
@pytest.mark.asyncio
async def test_tab_reaches_every_field_the_command_one_included(make_app: Callable[[], WorkbenchApp]) -> None:
    """Issue 30, item 11: only the chosen driver's fields are shown, right below the driver; choosing one keeps
    the focus on the driver and Tab goes on to its first field (it skipped it before), so nothing typed lands
    in another driver's field (the digits-only idle field dropped a command typed there)."""
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        dialog = await open_dialog(app, pilot)
        seen = [app.focused.id if app.focused else None]
        for _ in range(10):
            await pilot.press("tab")
            seen.append(app.focused.id if app.focused else None)
        assert seen[:4] == ["launch-task", "launch-guidance", "launch-driver", "launch-idle"]  # the human driver's field
        assert {"launch-device", "launch-timeout", "launch-workloads", "launch-start"} <= set(seen)
        assert not {"launch-command", "launch-from", "launch-provider"} & set(seen)  # other drivers' fields: hidden
        dialog.query_one("#launch-driver", Select).focus()
        await pilot.press("enter", "down", "enter")  # the command driver
        await pilot.pause()
        assert dialog.query_one("#launch-driver", Select).value == "command"
        assert app.focused is not None and app.focused.id == "launch-driver"
        assert not dialog.query_one("#launch-row-human").display and dialog.query_one("#launch-row-command").display
        await pilot.press("tab")
        assert app.focused is not None and app.focused.id == "launch-command"
        await pilot.press(*"echo hi")
        assert dialog.request().settings == CommandConfig(command="echo hi")


@pytest.mark.asyncio
async def test_a_human_session_gets_an_idle_exit_and_its_workspace_is_shown(
    make_app: Callable[[], WorkbenchApp], started: Started
) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        dialog = await open_dialog(app, pilot)
        idle = dialog.query_one("#launch-idle", Input)
        assert idle.value == str(DEFAULT_IDLE_EXIT_MIN)  # shown, and editable
        idle.value = "5"
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert len(started) == 1
        ref, idle_exit_s = started[0]
        assert idle_exit_s == 300
        solution = ref.workspace / "solution.py"
        assert solution.is_file()
        assert any(str(solution) in text and "5 min" in text for text in notices(app))
        view = app.screen
        assert isinstance(view, SessionViewScreen) and view.ref.id == ref.id
        await settle(pilot)
        assert f"edit: {solution}" in str(view.query_one("#session-header", Static).content)
        assert app.notices == []


@pytest.mark.asyncio
async def test_an_empty_idle_exit_means_never_and_a_bad_one_is_refused(
    make_app: Callable[[], WorkbenchApp], started: Started
) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        dialog = await open_dialog(app, pilot)
        dialog.query_one("#launch-idle", Input).value = "soon"
        await pilot.press("ctrl+s")
        assert "idle exit" in str(dialog.query_one("#launch-error", Static).content) and started == []
        dialog.query_one("#launch-idle", Input).value = ""
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert len(started) == 1 and started[0][1] is None


@pytest.mark.asyncio
async def test_replay_workloads_and_timeout_reach_the_session(make_app: Callable[[], WorkbenchApp], started: Started) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        dialog = await open_dialog(app, pilot)
        workloads = dialog.query_one("#launch-workloads", SelectionList)
        names = [str(workloads.get_option_at_index(i).value) for i in range(workloads.option_count)]
        assert "smoke_b8_m64_n200" in names and len(names) == 5  # 3 gpu + 2 cpu smoke
        workloads.select("smoke_b8_m64_n200")
        source = dialog.query_one("#launch-from", Select)
        source.value = EXAMPLE_ID  # choosing a session to replay picks the replay driver
        await pilot.pause()
        assert dialog.query_one("#launch-driver", Select).value == "replay"
        dialog.query_one("#launch-timeout", Input).value = "90"
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert len(started) == 1
        ref, idle_exit_s = started[0]
        config = load_config(ref.dir)
        assert (config.driver, config.from_session) == ("replay", EXAMPLE_ID)
        assert config.workloads == ["smoke_b8_m64_n200"] and config.eval_timeout_s == 90
        assert idle_exit_s is None  # only a human session ends when idle
        assert isinstance(app.screen, SessionViewScreen)
        await settle(pilot)
        assert f"replay of: {EXAMPLE_ID}" in str(app.screen.query_one("#session-header", Static).content)


@pytest.mark.asyncio
async def test_the_replay_driver_needs_a_session_to_replay(make_app: Callable[[], WorkbenchApp], started: Started) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        dialog = await open_dialog(app, pilot)
        dialog.query_one("#launch-driver", Select).value = "replay"
        await pilot.press("ctrl+s")
        assert "replay" in str(dialog.query_one("#launch-error", Static).content) and started == []


@pytest.mark.slow  # a Pilot session of 4-5 s; the dialog/screen keeps quicker tests in the fast subset
@pytest.mark.asyncio
async def test_the_guidance_level_is_remembered_within_the_app(context: WorkbenchContext) -> None:
    app = WorkbenchApp(context)
    async with app.run_test(size=SIZE) as pilot:
        dialog = await open_dialog(app, pilot)
        assert dialog.query_one("#launch-guidance", Select).value == "none"
        dialog.query_one("#launch-guidance", Select).value = "L1+L2"
        await pilot.press("escape")
        assert not isinstance(app.screen, LaunchScreen)
        dialog = await open_dialog(app, pilot)
        assert dialog.query_one("#launch-guidance", Select).value == "L1+L2"
        assert app.context.launch.guidance == "L1+L2"
    # the choice lives in that app's context (the dialog above read it from there): a new context, as another app
    # gets, starts from the default again (no module-level state)
    roots = (context.tasks_dir, context.guidance_dir, context.sessions_dir, context.examples_dir)
    assert WorkbenchContext(*roots).launch.guidance == "none"


# ---- the agent driver ------------------------------------------------------------------------------------

SECRET = "sk-test-0123456789abcdef"  # a key in the environment: never shown, never written


def agent_fields(dialog: LaunchScreen) -> Vertical:
    return dialog.query_one("#launch-agent", Vertical)


async def choose_agent(dialog: LaunchScreen, pilot) -> None:  # type: ignore[no-untyped-def]
    dialog.query_one("#launch-driver", Select).value = "agent"
    await pilot.pause()


def error_text(dialog: LaunchScreen) -> str:
    return str(dialog.query_one("#launch-error", Static).content)


@pytest.mark.asyncio
async def test_the_agent_driver_creates_an_agent_session_with_the_chosen_fields(
    make_app: Callable[[], WorkbenchApp], started: Started, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        dialog = await open_dialog(app, pilot)
        assert not agent_fields(dialog).display  # the human driver: no agent fields
        dialog.query_one("#launch-driver", Select).focus()
        await pilot.press("enter", *["down"] * 3, "enter")  # the agent: Tab goes on to its first field
        await pilot.pause()
        assert dialog.query_one("#launch-driver", Select).value == "agent" and agent_fields(dialog).display
        await pilot.press("tab")
        assert app.focused is not None and app.focused.id == "launch-provider"
        assert dialog.query_one("#launch-turns", Input).value == str(DEFAULT_MAX_TURNS)
        dialog.query_one("#launch-provider", Select).value = "anthropic"
        dialog.query_one("#launch-model", Input).value = "claude-test-1"
        dialog.query_one("#launch-turns", Input).value = "25"
        dialog.query_one("#launch-max-usd", Input).value = "2.5"
        dialog.query_one("#launch-unpriced", Checkbox).value = True
        dialog.query_one("#launch-mode", Select).value = "design"
        await pilot.pause()
        assert not dialog.query_one("#launch-key-warning", Static).display  # the key is set
        assert "ANTHROPIC_API_KEY" in str(dialog.query_one("#launch-key-hint", Static).content)
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert len(started) == 1
        ref, idle_exit_s = started[0]
        config = load_config(ref.dir)
        agent = config.agent
        assert agent is not None and config.driver == "agent"
        assert (agent.provider, agent.model, agent.base_url) == ("anthropic", "claude-test-1", None)
        assert (agent.max_turns, agent.max_usd, agent.allow_unpriced, agent.mode) == (25, 2.5, True, "design")
        assert idle_exit_s is None
        assert SECRET not in (ref.dir / "session.toml").read_text(encoding="utf-8")
        assert any("the agent (anthropic claude-test-1, up to 25 turns)" in text for text in notices(app))
        assert not any(SECRET in text for text in notices(app))
        view = app.screen
        assert isinstance(view, SessionViewScreen) and view.ref.id == ref.id
        await settle(pilot)
        header = str(view.query_one("#session-header", Static).content)
        assert "agent: anthropic claude-test-1 · mode design · budget 25 turns, $2.50 max · unpriced allowed" in header
        assert SECRET not in header
        assert "turns 0/25" in str(view.query_one("#agent-status", Static).content)
        assert app.notices == []
        choices = app.context.launch  # remembered for the next time the dialog opens
        remembered = (choices.driver, choices.provider, choices.model, choices.max_turns)
        assert remembered == ("agent", "anthropic", "claude-test-1", "25")
        await pilot.press("n")
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, LaunchScreen) and agent_fields(dialog).display
        assert dialog.query_one("#launch-model", Input).value == "claude-test-1"
        assert dialog.query_one("#launch-mode", Select).value == "design"
        assert dialog.query_one("#launch-unpriced", Checkbox).value is True


@pytest.mark.asyncio
async def test_bad_agent_fields_are_refused_in_the_dialog(make_app: Callable[[], WorkbenchApp], started: Started) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        dialog = await open_dialog(app, pilot)
        await choose_agent(dialog, pilot)
        await pilot.press("ctrl+s")  # no model
        assert "needs a model" in error_text(dialog)
        model = dialog.query_one("#launch-model", Input)
        model.value = "   "
        await pilot.press("ctrl+s")
        assert "needs a model" in error_text(dialog)
        model.value = "gpt-test"
        for field, value, said in (
            ("#launch-turns", "0", "turns: a whole number of at least 1"),
            ("#launch-turns", "-3", "turns: a whole number of at least 1"),
            ("#launch-turns", "2.5", "turns: a whole number of at least 1"),
            ("#launch-max-usd", "-1", "max USD: a number greater than 0"),
            ("#launch-max-usd", "0", "max USD: a number greater than 0"),
            ("#launch-max-usd", "lots", "max USD: a number greater than 0"),
            ("#launch-base-url", "localhost:8000", "base URL: an http:// or https:// address"),
        ):
            box = dialog.query_one(field, Input)
            before = box.value
            box.value = value
            await pilot.press("ctrl+s")
            assert said in error_text(dialog), (field, value)
            box.value = before
        assert started == [] and isinstance(app.screen, LaunchScreen)  # refused inline, nothing created
        assert list(app.context.sessions_dir.iterdir()) == []
        assert app.notices == []
        dialog.query_one("#launch-turns", Input).value = ""  # empty: the default budget
        await pilot.press("ctrl+s")
        await settle(pilot)
        agent = load_config(started[0][0].dir).agent
        assert len(started) == 1 and agent is not None and agent.max_turns == DEFAULT_MAX_TURNS


@pytest.mark.asyncio
async def test_a_missing_key_is_warned_about_but_does_not_block(
    make_app: Callable[[], WorkbenchApp], started: Started, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        dialog = await open_dialog(app, pilot)
        await choose_agent(dialog, pilot)
        warning = dialog.query_one("#launch-key-warning", Static)
        dialog.query_one("#launch-provider", Select).value = "openai-responses"
        await pilot.pause()
        assert warning.display and "OPENAI_API_KEY is not set" in str(warning.content)
        dialog.query_one("#launch-provider", Select).value = "anthropic"
        await pilot.pause()
        assert not warning.display  # that one is set
        dialog.query_one("#launch-provider", Select).value = "openai"
        dialog.query_one("#launch-base-url", Input).value = "http://localhost:8000/v1"
        await pilot.pause()
        assert not warning.display  # a local server may need no key
        dialog.query_one("#launch-base-url", Input).value = ""
        await pilot.pause()
        assert warning.display
        dialog.query_one("#launch-model", Input).value = "gpt-test"
        await pilot.press("ctrl+s")  # warned, not refused
        await settle(pilot)
        assert len(started) == 1
        config = load_config(started[0][0].dir)
        assert config.agent is not None
        assert (config.agent.provider, config.agent.model, config.agent.base_url) == ("openai", "gpt-test", None)
        assert any("OPENAI_API_KEY is not set" in text for text in notices(app))
        assert not any(SECRET in text for text in notices(app))


@pytest.mark.asyncio
async def test_n_opens_on_the_highlighted_task_and_the_task_is_remembered(make_app: Callable[[], WorkbenchApp]) -> None:
    """Issue 30, item 11: `n` ignored the highlighted task, and the Task field reset each time while the other
    fields were remembered; ctrl+s was not in the footer."""
    from textual.widgets import DataTable

    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        table = app.screen.query_one(DataTable)  # the tasks area opens first
        tasks = [str(key.value) for key in table.rows]
        assert len(tasks) >= 2
        table.focus()
        table.move_cursor(row=1)
        await settle(pilot)
        await pilot.press("n")
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, LaunchScreen)
        assert dialog.query_one("#launch-task", Select).value == tasks[1]
        assert "ctrl+s" in {key.key for key in dialog.query("FooterKey")}  # type: ignore[attr-defined]
        dialog.query_one("#launch-task", Select).value = tasks[0]
        await pilot.pause()
        await pilot.press("escape")
        await settle(pilot)
        await pilot.press("c")  # the campaigns area highlights no task: the one chosen last time comes back
        await settle(pilot)
        await pilot.press("n")
        await settle(pilot)
        assert app.screen.query_one("#launch-task", Select).value == tasks[0]


@pytest.mark.asyncio
async def test_an_agent_whose_provider_does_not_answer_makes_no_session(
    context: WorkbenchContext, started: Started, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 30: the dialog checks the provider first (one call, not retried); a wrong base URL used to leave
    a failed session behind after a minute of retries."""
    import dataclasses
    import socket

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    app = WorkbenchApp(dataclasses.replace(context, check_providers=True))
    async with app.run_test(size=SIZE) as pilot:
        dialog = await open_dialog(app, pilot)
        dialog.query_one("#launch-driver", Select).value = "agent"
        dialog.query_one("#launch-provider", Select).value = "openai"
        dialog.query_one("#launch-model", Input).value = "gpt-4.1"
        dialog.query_one("#launch-base-url", Input).value = f"http://127.0.0.1:{port}/v1"
        await pilot.pause()
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert isinstance(app.screen, LaunchScreen)
        error = str(dialog.query_one("#launch-error", Static).content)
        assert "check the base URL" in error and "no session was made" in error and SECRET not in error
        assert started == [] and not any(context.sessions_dir.iterdir())


@pytest.mark.asyncio
async def test_rerun_with_changes_fills_the_dialog_and_records_the_origin(
    make_app: Callable[[], WorkbenchApp], context: WorkbenchContext, started: Started
) -> None:
    """Issue 30, session actions: N in a session's view opens the launch dialog with its settings; a change
    (another model here) starts a new session of the same task that records what it reruns."""
    from .agent_session import MODEL, agent_session

    ref = agent_session(context.sessions_dir)
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.open_session(ref)
        await settle(pilot)
        await pilot.press("N")
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, LaunchScreen)
        assert f"Rerun {ref.id}" in str(dialog.query_one("#launch-title", Static).content)
        assert dialog.query_one("#launch-driver", Select).value == "agent"
        assert dialog.query_one("#launch-model", Input).value == MODEL
        assert dialog.query_one("#launch-max-usd", Input).value == "5"
        dialog.query_one("#launch-model", Input).value = "claude-other"
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert len(started) == 1
        new = load_config(started[0][0].dir)
        assert new.rerun_of == ref.id and new.task == load_config(ref.dir).task
        assert new.agent is not None and new.agent.model == "claude-other" and new.agent.max_usd == 5.0
