"""The launch dialog: create a session (as `session new` does) and start its runner as a detached process.

Every field can be reached with Tab. The driver's own fields stay reachable whatever the driver: typing a
command picks the command driver, choosing a session to replay picks the replay driver. The built-in
agent's fields (provider, model, base URL, turns, dollar budget, unpriced models, mode) are shown only
while the agent driver is chosen. The API key is never asked for nor shown: the runner reads it from the
environment (OPENAI_API_KEY or ANTHROPIC_API_KEY; a local server at a base URL needs none), and the dialog
warns, without refusing, when that variable is unset. What the dialog was set to is kept in the app's
context (`WorkbenchContext.launch`) for the next time it opens.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Button, Checkbox, Input, Label, Select, SelectionList, Static

from workbench.catalog import CONFIGS, GuidanceConfig
from workbench.catalog.errors import CatalogError
from workbench.catalog.imported import IMPORTED_LABEL, import_record
from workbench.errors import UsageError, WorkbenchError
from workbench.session.config import (
    DEFAULT_MAX_TURNS,
    PROVIDERS,
    AgentConfig,
    AgentMode,
    CommandConfig,
    DriverConfig,
    SessionConfig,
)
from workbench.session.create import create_session
from workbench.session.layout import SessionRef
from workbench.session.options import driver_from_options
from workbench.tui.context import LaunchChoices, WorkbenchContext, gpu_devices
from workbench.tui.messages import LaunchOptionsLoaded, SessionLaunched
from workbench.tui.screens.base import STYLES, WorkbenchModal
from workbench.tui.widgets.footer import WorkbenchFooter

RUNNER_LOG = "runner.log"  # the runner's stdout/stderr, in the session directory
LAUNCH_DRIVERS = ("human", "command", "replay", "agent")
REMEMBERED_DRIVERS = ("human", "command", "agent")  # a replay needs its session chosen again
AGENT_MODES: tuple[AgentMode, ...] = ("code", "design")
KEY_VARIABLES = {"openai": "OPENAI_API_KEY", "openai-responses": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
KEY_HINT = (
    "API key: never asked for here; the runner reads OPENAI_API_KEY (openai, openai-responses) or "
    "ANTHROPIC_API_KEY from this app's environment (a local server at a base URL needs none)."
)


@dataclass(frozen=True)
class LaunchRequest:
    task: str
    guidance: GuidanceConfig
    settings: DriverConfig  # the driver and its settings, validated once (session.options)
    device: str
    workloads: list[str] | None = None  # None: the harness default
    eval_timeout_s: float | None = None  # None: the harness default
    idle_exit_s: float | None = None  # human driver: end after this long without a revision; None: never
    rerun_of: str | None = None  # the session this one reruns with changes (recorded in session.toml)

    @property
    def driver(self) -> str:
        return self.settings.kind


@dataclass(frozen=True)
class Launched:
    """A session created and its runner started."""

    ref: SessionRef
    driver: str
    pid: int
    log: str
    idle_exit_s: float | None
    request: LaunchRequest | None = None


def start_runner(context: WorkbenchContext, ref: SessionRef, idle_exit_s: float | None) -> tuple[int, str]:
    """Start `d2k-workbench session run ID` detached (it outlives the app); its pid and log file."""
    log_path = ref.dir / RUNNER_LOG
    with open(log_path, "ab") as log, open(os.devnull, "rb") as stdin:
        process = subprocess.Popen(
            context.runner_command(ref.id, idle_exit_s),
            cwd=ref.dir,
            stdin=stdin,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            close_fds=True,
        )
    return process.pid, str(log_path)


def launch(context: WorkbenchContext, request: LaunchRequest) -> Launched:
    """Check an agent's provider (one call, not retried: `workbench.agent.check`), create the session and
    start its runner. WorkbenchError for a bad request, or a provider that fails the check (no session made)."""
    settings = request.settings
    if isinstance(settings, AgentConfig) and context.check_providers:
        from workbench.agent import default_provider  # noqa: PLC0415 (the model SDKs: imported when an agent starts)
        from workbench.agent.check import check_provider  # noqa: PLC0415

        checked = check_provider(
            default_provider, settings.provider, settings.model, settings.base_url, allow_unpriced=settings.allow_unpriced
        )
        if checked.failure is not None:
            raise UsageError(f"{checked.failure} (no session was made)")
    ref = create_session(
        context.store,
        context.catalog,
        request.task,
        guidance=request.guidance,
        driver=request.settings,
        device=request.device,
        workloads=request.workloads,
        eval_timeout_s=request.eval_timeout_s,
        rerun_of=request.rerun_of,
    )
    idle_exit_s = request.idle_exit_s if request.driver == "human" else None
    pid, log = start_runner(context, ref, idle_exit_s)
    return Launched(ref, request.driver, pid, log, idle_exit_s, request)


def missing_key(provider: str, base_url: str | None, environ: Mapping[str, str] | None = None) -> str | None:
    """The variable that should hold the provider's API key when it is unset (and no base URL is given,
    whose local server may need none); None when there is nothing to warn about."""
    variable = KEY_VARIABLES.get(provider)
    env = os.environ if environ is None else environ
    if variable is None or base_url or env.get(variable, "").strip():
        return None
    return variable


def whole_number(text: str, what: str, default: int) -> int:
    """A field's whole number (>= 1), `default` when it is empty; UsageError naming the field otherwise."""
    text = text.strip()
    if not text:
        return default
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise UsageError(f"{what}: a whole number of at least 1")
    return value


def base_url_of(text: str) -> str | None:
    """The base URL field: None when empty; UsageError unless it is an http(s) address."""
    text = text.strip()
    if not text:
        return None
    if not text.startswith(("http://", "https://")) or len(text) <= len("https://"):
        raise UsageError("base URL: an http:// or https:// address (a compatible server), or empty")
    return text


def positive_number(text: str, what: str) -> float | None:
    """A field's number (> 0), or None when it is empty; UsageError naming the field otherwise."""
    text = text.strip()
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not value > 0 or value == float("inf"):
        raise UsageError(f"{what}: a number greater than 0, or empty")
    return value


def rerun_choices(config: SessionConfig, remembered: LaunchChoices) -> LaunchChoices:
    """The dialog's fields as the session `config` ran (a rerun with changes starts from them); fields its
    driver does not have keep what was typed last."""
    driver = config.driver_config
    choices = dataclasses.replace(
        remembered,
        task=config.task,
        guidance=config.guidance,
        driver=config.driver,
        device=config.device,
        eval_timeout_s="" if config.eval_timeout_s is None else f"{config.eval_timeout_s:g}",
    )
    if isinstance(driver, CommandConfig):
        choices.command = driver.command
    if isinstance(driver, AgentConfig):
        choices.provider, choices.model, choices.base_url = driver.provider, driver.model, driver.base_url or ""
        choices.max_turns, choices.agent_mode = str(driver.max_turns), driver.mode
        choices.max_usd = "" if driver.max_usd is None else f"{driver.max_usd:g}"
        choices.allow_unpriced = driver.allow_unpriced
    return choices


def started_notice(launched: Launched) -> str:
    """What the notification says once a session started; for a human session, where to edit."""
    ref = launched.ref
    if launched.driver == "human":
        ends = (
            f"it ends after {launched.idle_exit_s / 60:g} min without a new revision"
            if launched.idle_exit_s is not None
            else "it runs until stopped"
        )
        return (
            f"session {ref.id} started: edit {ref.workspace / 'solution.py'} (each save is a revision, evaluated "
            f"as it lands; {ends}, or press x in its view). Runner pid {launched.pid}, log {launched.log}"
        )
    agent = launched.request.settings if launched.request is not None else None
    if isinstance(agent, AgentConfig):
        where = f" at {agent.base_url}" if agent.base_url else ""
        variable = missing_key(agent.provider, agent.base_url)
        key = f"; {variable} is not set, so its calls may fail" if variable else ""
        return (
            f"session {ref.id} started: the agent ({agent.provider} {agent.model}{where}, up to "
            f"{agent.max_turns} turns{key}). Runner pid {launched.pid}, log {launched.log}, workspace {ref.workspace}"
        )
    return f"session {ref.id} started (runner pid {launched.pid}; log {launched.log}; workspace {ref.workspace})"


class LaunchScreen(WorkbenchModal):
    """Task, guidance, driver (human, a command, a replay or the agent) with its fields, device, evaluation
    options."""

    CSS_PATH = STYLES / "launch.tcss"
    BINDINGS = [
        Binding("escape", "cancel", "Cancel", id="launch.cancel"),
        Binding("ctrl+s", "start", "Start", id="launch.start"),
    ]

    def __init__(self, task_id: str | None = None, rerun: SessionConfig | None = None) -> None:
        super().__init__()
        self.task_id = rerun.task if rerun is not None else task_id
        self.rerun = rerun  # a session to rerun with changes: its settings fill the fields
        self.launching = False
        self._source_guidance: dict[str, str] = {}  # the replayable sessions' guidance (a replay keeps it)
        self._guidance_restricted = False  # the guidance choices cut to `none` for an imported task

    def compose(self) -> ComposeResult:
        try:
            tasks, problem = self.context.catalog.task_ids(), ""
        except CatalogError as exc:  # no tasks folder: the dialog says so instead of failing to open
            tasks, problem = [], exc.message
        devices = ["cpu", *gpu_devices()]
        choices = rerun_choices(self.rerun, self.context.launch) if self.rerun is not None else self.context.launch
        remembered = choices.task if choices.task in tasks else None
        initial_task = self.task_id if self.task_id in tasks else (remembered or (tasks[0] if tasks else Select.BLANK))
        with VerticalScroll(id="launch-dialog"):
            title = f"Rerun {self.rerun.id} with changes" if self.rerun is not None else "New session"
            yield Static(title, id="launch-title")
            with Horizontal(classes="launch-field"):
                yield Label("Task")
                yield Select([(t, t) for t in tasks], value=initial_task, allow_blank=not tasks, compact=True, id="launch-task")
            with Horizontal(classes="launch-field"):
                yield Label("Guidance")
                yield Select(
                    [(c, c) for c in CONFIGS], value=choices.guidance, allow_blank=False, compact=True, id="launch-guidance"
                )
            with Horizontal(classes="launch-field"):
                yield Label("Driver")
                driver = choices.driver if choices.driver in REMEMBERED_DRIVERS else "human"
                yield Select([(d, d) for d in LAUNCH_DRIVERS], value=driver, allow_blank=False, compact=True, id="launch-driver")
            yield from self.compose_agent(driver == "agent")
            with Horizontal(classes="launch-field", id="launch-row-command"):
                yield Label("Command")
                yield Input(
                    choices.command,
                    placeholder="command driver: shell command run in the workspace",
                    compact=True,
                    id="launch-command",
                )
            with Horizontal(classes="launch-field", id="launch-row-replay"):
                yield Label("Replay of")
                yield Select[str]([], prompt="replay driver: a recorded session of this task", compact=True, id="launch-from")
            with Horizontal(classes="launch-field", id="launch-row-human"):
                yield Label("Idle exit (min)")
                yield Input(
                    choices.idle_exit_min,
                    placeholder="human driver: minutes without a revision; empty: never",
                    compact=True,
                    id="launch-idle",
                )
            with Horizontal(classes="launch-field"):
                yield Label("Device")
                device = choices.device if choices.device in devices else "cpu"
                cpu = "cpu" if len(devices) > 1 else "cpu (no GPU found: the Triton interpreter)"
                yield Select(
                    [(cpu if d == "cpu" else d, d) for d in devices],
                    value=device,
                    allow_blank=False,
                    compact=True,
                    id="launch-device",
                )
            with Horizontal(classes="launch-field"):
                yield Label("Eval timeout (s)")
                yield Input(
                    choices.eval_timeout_s,
                    placeholder="per evaluation; empty: the harness default",
                    compact=True,
                    id="launch-timeout",
                )
            with Horizontal(classes="launch-field -tight"):
                yield Label("Workloads")
                yield SelectionList[str](compact=True, id="launch-workloads")
            yield Static("none ticked: the harness default (smoke workloads on cpu, all on a GPU)", classes="launch-hint")
            yield Static(problem, id="launch-error")
            with Horizontal(id="launch-buttons"):
                yield Button("Start", variant="primary", id="launch-start")
                yield Button("Cancel", id="launch-cancel")
        yield WorkbenchFooter()

    def compose_agent(self, shown: bool) -> ComposeResult:
        """The agent's fields, in a box shown only while the agent driver is chosen."""
        choices = rerun_choices(self.rerun, self.context.launch) if self.rerun is not None else self.context.launch
        agent = Vertical(id="launch-agent")
        agent.display = shown
        with agent:
            with Horizontal(classes="launch-field"):
                yield Label("Provider")
                provider = choices.provider if choices.provider in PROVIDERS else PROVIDERS[0]
                yield Select([(p, p) for p in PROVIDERS], value=provider, allow_blank=False, compact=True, id="launch-provider")
            with Horizontal(classes="launch-field"):
                yield Label("Model")
                yield Input(choices.model, placeholder="agent: the model's name at the provider", compact=True, id="launch-model")
            with Horizontal(classes="launch-field"):
                yield Label("Base URL")
                yield Input(
                    choices.base_url,
                    placeholder="optional: a compatible server (vLLM, SGLang, llama.cpp, ...)",
                    compact=True,
                    id="launch-base-url",
                )
            with Horizontal(classes="launch-field"):
                yield Label("Turns")
                turns = f"model calls at most; empty: {DEFAULT_MAX_TURNS}"
                max_turns = str(DEFAULT_MAX_TURNS) if choices.max_turns is None else choices.max_turns
                yield Input(max_turns, placeholder=turns, compact=True, id="launch-turns")
            with Horizontal(classes="launch-field"):
                yield Label("Max USD")
                budget = "optional: stop once the cost reaches this"
                yield Input(choices.max_usd, placeholder=budget, compact=True, id="launch-max-usd")
            with Horizontal(classes="launch-field"):
                yield Label("Mode")
                mode = choices.agent_mode if choices.agent_mode in AGENT_MODES else "code"
                yield Select(
                    [("code: write Triton kernels", "code"), ("design: propose a design", "design")],
                    value=mode,
                    allow_blank=False,
                    compact=True,
                    id="launch-mode",
                )
            with Horizontal(classes="launch-field"):
                yield Label("Unpriced")
                yield Checkbox(
                    "allow a model with no known price (its cost shows as unpriced)",
                    choices.allow_unpriced,
                    compact=True,
                    id="launch-unpriced",
                )
            yield Static(KEY_HINT, classes="launch-hint", id="launch-key-hint")
            yield Static("", id="launch-key-warning")

    def on_mount(self) -> None:
        self.query_one("#launch-task", Select).focus()
        self._show_driver_fields(str(self.query_one("#launch-driver", Select).value))
        self._load_options()
        self._update_key_warning()

    DRIVER_ROWS = {
        "agent": "#launch-agent",
        "command": "#launch-row-command",
        "replay": "#launch-row-replay",
        "human": "#launch-row-human",
    }

    def _show_driver_fields(self, driver: str) -> None:
        """Only the chosen driver's fields are shown, right below the driver: Tab from the driver reaches
        them first, and nothing typed lands in another driver's field."""
        for name, selector in self.DRIVER_ROWS.items():
            self.query_one(selector).display = name == driver

    # ---- what the chosen task offers: its workloads and the sessions a replay can re-run ---------------

    def _load_options(self) -> None:
        task = self.query_one("#launch-task", Select).value
        if isinstance(task, str):
            self.load_options(task)

    @work(thread=True, exclusive=True, group="launch-options", name="reading the task's workloads", exit_on_error=False)
    def load_options(self, task_id: str) -> None:
        try:
            task = self.context.catalog.task(task_id)
        except CatalogError as exc:  # a bad task: the dialog says so; Start would say it again
            self.app.call_from_thread(self._show_error, exc.message)
            workloads: list[tuple[str, str]] = []
        else:
            self.app.call_from_thread(self._offer_guidance, import_record(task) is not None)
            workloads = [(w.name, "gpu") for w in task.spec.workloads] + [
                (w.name, "cpu smoke") for w in task.spec.smoke_workloads
            ]
        rows = [r for r in self.context.store.summaries() if r.problem is None and r.task == task_id and r.revisions]
        sources = [
            (row.id, f"{row.id} ({'example' if row.read_only else row.driver}, {row.revisions} revisions)") for row in rows
        ]
        self.post_message(LaunchOptionsLoaded(task_id, workloads, sources, {row.id: row.guidance for row in rows}))

    def _offer_guidance(self, imported: bool) -> None:
        """An imported task (no guidance) is offered the unguided configuration only; the others all four."""
        select = self.query_one("#launch-guidance", Select)
        if imported:
            select.set_options([(f"none ({IMPORTED_LABEL})", "none")])
            select.value = "none"
            self._guidance_restricted = True
        elif self._guidance_restricted:
            select.set_options([(c, c) for c in CONFIGS])
            select.value = self.context.launch.guidance
            self._guidance_restricted = False

    def on_launch_options_loaded(self, message: LaunchOptionsLoaded) -> None:
        if message.task != self.query_one("#launch-task", Select).value:
            return  # the task changed since
        box = self.query_one("#launch-workloads", SelectionList)
        box.clear_options()
        box.add_options([(f"{name} ({kind})", name) for name, kind in message.workloads])
        self.query_one("#launch-from", Select).set_options([(label, source) for source, label in message.sources])
        self._source_guidance = message.source_guidance

    @on(Select.Changed, "#launch-task")
    def _task_changed(self) -> None:
        self._show_error("")
        self._load_options()
        self._remember()

    # ---- the driver's fields pick the driver; the choices are remembered ---------------------------

    @on(Select.Changed, "#launch-driver")
    def _driver_changed(self, event: Select.Changed) -> None:
        """The chosen driver's fields are shown (the others hidden); focus stays on the driver, and Tab goes
        on to the first of its fields."""
        self._show_driver_fields(str(event.value))
        self._update_key_warning()
        self._remember()

    @on(Select.Changed, "#launch-provider")
    @on(Input.Changed, "#launch-base-url")
    def _key_source_changed(self) -> None:
        self._update_key_warning()
        self._remember()

    def _update_key_warning(self) -> None:
        """Warn (never refuse) when the agent's provider needs a key that this environment lacks."""
        provider = str(self.query_one("#launch-provider", Select).value)
        base_url = self.query_one("#launch-base-url", Input).value.strip() or None
        variable = missing_key(provider, base_url)
        warning = self.query_one("#launch-key-warning", Static)
        warning.update(
            f"⚠ {variable} is not set: the agent's calls to {provider} will fail (set it before starting "
            "d2k-workbench, or give a base URL)"
            if variable
            else ""
        )
        warning.display = variable is not None

    @on(Input.Changed, "#launch-command")
    def _command_typed(self, event: Input.Changed) -> None:
        if event.value.strip():
            self.query_one("#launch-driver", Select).value = "command"
        self._remember()

    @on(Select.Changed, "#launch-from")
    def _source_chosen(self, event: Select.Changed) -> None:
        if isinstance(event.value, str):
            self.query_one("#launch-driver", Select).value = "replay"
            recorded = self._source_guidance.get(event.value)
            if recorded:  # a replay keeps the recorded session's guidance (create_session refuses another)
                self.query_one("#launch-guidance", Select).value = recorded

    @on(Select.Changed, "#launch-guidance")
    @on(Select.Changed, "#launch-device")
    @on(Select.Changed, "#launch-mode")
    @on(Input.Changed, "#launch-idle")
    @on(Input.Changed, "#launch-timeout")
    @on(Input.Changed, "#launch-model")
    @on(Input.Changed, "#launch-turns")
    @on(Input.Changed, "#launch-max-usd")
    @on(Checkbox.Changed, "#launch-unpriced")
    def _remember(self) -> None:
        """Keep the fields as they are now in the app's context, for the next time the dialog opens."""
        choices = self.context.launch
        task = self.query_one("#launch-task", Select).value
        if isinstance(task, str):
            choices.task = task
        guidance = self.query_one("#launch-guidance", Select).value
        if guidance in CONFIGS:
            choices.guidance = cast("GuidanceConfig", guidance)
        choices.driver = str(self.query_one("#launch-driver", Select).value)
        choices.command = self.query_one("#launch-command", Input).value
        choices.device = str(self.query_one("#launch-device", Select).value)
        choices.idle_exit_min = self.query_one("#launch-idle", Input).value
        choices.eval_timeout_s = self.query_one("#launch-timeout", Input).value
        choices.provider = str(self.query_one("#launch-provider", Select).value)
        choices.model = self.query_one("#launch-model", Input).value
        choices.base_url = self.query_one("#launch-base-url", Input).value
        choices.max_turns = self.query_one("#launch-turns", Input).value
        choices.max_usd = self.query_one("#launch-max-usd", Input).value
        choices.allow_unpriced = self.query_one("#launch-unpriced", Checkbox).value
        choices.agent_mode = str(self.query_one("#launch-mode", Select).value)

    # ---- start and cancel --------------------------------------------------------------------------

    @on(Button.Pressed, "#launch-start")
    def _start_pressed(self) -> None:
        self.action_start()

    @on(Button.Pressed, "#launch-cancel")
    def _cancel_pressed(self) -> None:
        self.action_cancel()

    @on(Input.Submitted)
    def _submitted(self) -> None:
        self.action_start()

    def request(self) -> LaunchRequest:
        task = self.query_one("#launch-task", Select).value
        if not isinstance(task, str):
            raise UsageError("choose a task")
        driver = str(self.query_one("#launch-driver", Select).value)
        command = self.query_one("#launch-command", Input).value.strip() or None
        source = self.query_one("#launch-from", Select).value
        if driver == "command" and not command:
            raise UsageError("the command driver needs a command")
        if driver == "replay" and not isinstance(source, str):
            raise UsageError("the replay driver needs a recorded session to replay (Replay of)")
        idle_min = positive_number(self.query_one("#launch-idle", Input).value, "idle exit (minutes)")
        workloads = [str(name) for name in self.query_one("#launch-workloads", SelectionList).selected]
        draft: dict[str, Any] = {}  # the fields of the chosen driver only; validated once, by session.options
        if driver == "command":
            draft["command"] = command
        if driver == "replay" and isinstance(source, str):
            draft["from_session"] = source
        if driver == "agent":
            draft = self.agent_draft()
        return LaunchRequest(
            task,
            cast("GuidanceConfig", self.query_one("#launch-guidance", Select).value),
            driver_from_options(driver, draft),
            str(self.query_one("#launch-device", Select).value),
            workloads=workloads or None,
            eval_timeout_s=positive_number(self.query_one("#launch-timeout", Input).value, "eval timeout (seconds)"),
            idle_exit_s=idle_min * 60 if idle_min is not None and driver == "human" else None,
            rerun_of=self.rerun.id if self.rerun is not None else None,
        )

    def agent_draft(self) -> dict[str, Any]:
        """The agent's fields as typed (numbers parsed; UsageError naming the first that is not one)."""
        provider = str(self.query_one("#launch-provider", Select).value)
        if provider not in PROVIDERS:
            raise UsageError(f"provider: one of {', '.join(PROVIDERS)}")
        model = self.query_one("#launch-model", Input).value.strip()
        if not model:
            raise UsageError("the agent driver needs a model (its name at the provider, e.g. gpt-5 or claude-sonnet-4-5)")
        mode = str(self.query_one("#launch-mode", Select).value)
        return {
            "provider": provider,
            "model": model,
            "base_url": base_url_of(self.query_one("#launch-base-url", Input).value),
            "max_turns": whole_number(self.query_one("#launch-turns", Input).value, "turns", DEFAULT_MAX_TURNS),
            "max_usd": positive_number(self.query_one("#launch-max-usd", Input).value, "max USD"),
            "allow_unpriced": self.query_one("#launch-unpriced", Checkbox).value,
            "mode": mode if mode in AGENT_MODES else "code",
        }

    def action_start(self) -> None:
        if self.launching:
            return
        try:
            request = self.request()
        except WorkbenchError as exc:
            self._show_error(str(exc))
            return
        self._remember()
        self.launching = True
        self._show_error("creating the session…")
        self.start_session(request)

    @work(thread=True, exclusive=True, group="launch", name="launching the session", exit_on_error=False)
    def start_session(self, request: LaunchRequest) -> None:
        try:
            launched = launch(self.context, request)
        except WorkbenchError as exc:
            self.app.call_from_thread(self._failed, str(exc))
            return
        except Exception:
            self.app.call_from_thread(self._failed, "could not start the session (see the notice)")
            raise
        self.post_message(SessionLaunched(launched.ref, launched.pid, launched.log, started_notice(launched)))

    def _show_error(self, text: str) -> None:
        self.query_one("#launch-error", Static).update(text)

    def _failed(self, text: str) -> None:
        self.launching = False
        self._show_error(text)

    def on_session_launched(self, message: SessionLaunched) -> None:
        self.notify(message.notice, title="Session started", timeout=20)
        self.dismiss(message.ref)

    def action_cancel(self) -> None:
        self.dismiss(None)
