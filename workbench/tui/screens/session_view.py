"""The session view: live and stepping through one code path (a Timeline of events applied one at a time).

Live: a worker polls the log every 0.5 s; new events are recorded and, while following, applied at once.
Scrolling the event log up (or stepping back) stops following; the bar shows how many events wait.
Stepping (the view's own time travel, not the replay driver): `[` `]` move by revision, `{` `}` by event,
`<` `>` to the start or end, space plays; the header names the position ("stepping: revision 3/7").
An agent session also shows its transcript (the Agent tab: turns, tool calls with their arguments and
results, retries) and a status line of turns used, tokens by bucket and cost, all as of the position; both
come from the log alone, so a recorded agent session reads the same as a live one.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.timer import Timer
from textual.widgets import Header, Static, TabbedContent, TabPane, Tabs
from textual.worker import Worker, WorkerState

from workbench.session.config import AgentConfig, SessionConfig
from workbench.session.eventlog import LogTail
from workbench.session.events import Event
from workbench.session.format import submission_line
from workbench.session.layout import SessionRef
from workbench.session.state import SessionState
from workbench.session.workspace import WorkspaceError
from workbench.tui.code_source import CodeSource
from workbench.tui.context import DEFAULT_IDLE_EXIT_MIN
from workbench.tui.messages import CodeLoaded, EventsArrived, SessionLoaded
from workbench.tui.screens.base import STYLES, WorkbenchScreen
from workbench.tui.screens.launch import start_runner
from workbench.tui.timeline import Timeline
from workbench.tui.turns import format_usd, usage_text
from workbench.tui.widgets.code_view import CodeView
from workbench.tui.widgets.event_log import EventLog
from workbench.tui.widgets.footer import WorkbenchFooter
from workbench.tui.widgets.latency_chart import LatencyChart
from workbench.tui.widgets.revision_table import SUBMITTED, RevisionTable
from workbench.tui.widgets.turns_view import TurnsView

POLL_S = 0.5
PLAY_S = 0.3
REVISION_KEYS = Binding.Group("Revision", compact=True)  # the footer shows "[] Revision"
EVENT_KEYS = Binding.Group("Event", compact=True)


def latest_rev(state: SessionState, current: Event | None) -> int | None:
    """The revision the event `current` concerns, else the newest revision (None when there is none)."""
    rev = getattr(current, "rev", None)
    if isinstance(rev, int) and rev in state.revisions:
        return rev
    return max(state.revisions) if state.revisions else None


def revision_shas(state: SessionState, rev: int, diff_base: int | None) -> tuple[str, str | None] | None:
    """The commit of revision `rev` and the one its diff is taken from: `diff_base`'s when set (and another
    revision), else the previous revision's (None for the first)."""
    revisions = state.revisions
    if rev not in revisions:
        return None
    if diff_base is not None and diff_base != rev and diff_base in revisions:
        return revisions[rev].sha, revisions[diff_base].sha
    earlier = [r for r in revisions if r < rev]
    return revisions[rev].sha, (revisions[max(earlier)].sha if earlier else None)


class SessionViewScreen(WorkbenchScreen):
    """Revision table, code and diff of the selected revision, event log, latency chart, and for an agent its
    transcript and usage; live or stepping."""

    CSS_PATH = STYLES / "session_view.tcss"
    AUTO_FOCUS = "#revisions"
    BINDINGS = [
        Binding("escape", "back", "Back", id="session.back"),
        Binding(
            "left_square_bracket",
            "step_revision(-1)",
            "Previous revision",
            key_display="[",
            group=REVISION_KEYS,
            id="session.revision_back",
        ),
        Binding(
            "right_square_bracket",
            "step_revision(1)",
            "Next revision",
            key_display="]",
            group=REVISION_KEYS,
            id="session.revision_next",
        ),
        Binding("left_curly_bracket", "step(-1)", "Previous event", key_display="{", group=EVENT_KEYS, id="session.event_back"),
        Binding("right_curly_bracket", "step(1)", "Next event", key_display="}", group=EVENT_KEYS, id="session.event_next"),
        Binding("less_than_sign", "seek_start", "Start", key_display="<", show=False, id="session.start"),
        Binding("greater_than_sign", "seek_end", "End", key_display=">", show=False, id="session.end"),
        Binding("x", "stop_runner", "Stop run", id="session.stop"),
        Binding("R", "resume", "Resume", key_display="R", id="session.resume"),
        Binding("N", "rerun", "Rerun with changes", key_display="N", show=False, id="session.rerun"),
        Binding("space", "play", "Play", id="session.play"),
        Binding("f", "follow", "Follow", id="session.follow"),
        Binding("c", "tab('tab-code')", "Code", show=False, id="session.code"),
        Binding("d", "tab('tab-diff')", "Diff", show=False, id="session.diff"),
        Binding("b", "diff_base", "Diff base", show=False, id="session.diff_base"),
        Binding("r", "review", "Review (judge)", id="session.review"),
        Binding("e", "tab('tab-events')", "Events", show=False, id="session.events"),
        Binding("a", "tab('tab-agent')", "Agent transcript", show=False, id="session.agent"),
    ]

    RUNNER_START_S = 30.0  # a runner just started has this long to take the session's lock

    def __init__(self, ref: SessionRef, runner_started: bool = False) -> None:
        super().__init__()
        self.ref = ref
        # until then, a session not (yet) held by a runner reads "runner starting", not "runner stopped"
        self.runner_expected_until = time.monotonic() + self.RUNNER_START_S if runner_started else 0.0
        self.timeline = Timeline()
        self.config: SessionConfig | None = None
        self.tail: LogTail | None = None
        self.code: CodeSource | None = None
        self.running = False
        self._latest: SessionState | None = None  # `latest`, made when first asked for
        self.following = False
        self.playing = False
        self.code_rev: int | None = None  # the revision whose code is wanted
        self.shown_rev: int | None = None  # the revision whose code is on screen
        self.diff_base: int | None = None  # the Diff tab compares with this revision (None: the previous one)
        self._play_timer: Timer | None = None
        self._polling = False
        self._agent_shown = False  # whether the Agent tab and the usage line are shown
        self._transcript_built = False  # whether the Agent tab's transcript holds the events read so far

    # ---- layout ------------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(Text(self.ref.id, style="bold"), id="session-header")
        yield Static(id="agent-status")
        with Horizontal(id="session-body"):
            with Vertical(id="session-left"):
                yield RevisionTable(id="revisions")
                yield LatencyChart(id="latency")
            with TabbedContent(id="session-tabs", initial="tab-code"):
                with TabPane("Agent", id="tab-agent"):
                    yield TurnsView(id="turns")
                with TabPane("Code", id="tab-code"):
                    yield CodeView(id="code")
                with TabPane("Diff", id="tab-diff"):
                    yield CodeView(id="diff")
                with TabPane("Events", id="tab-events"):
                    yield EventLog(id="events")
        yield Static(id="replay-bar")
        yield WorkbenchFooter(held=True)  # built with the session's content (on_session_loaded, _load_ended)

    def on_mount(self) -> None:
        self.sub_title = "Session"
        self.query_one("#session-tabs", TabbedContent).hide_tab("tab-agent")  # shown for an agent session
        self._play_timer = self.set_interval(PLAY_S, self._play_tick, pause=True)
        self.load_session()

    # ---- loading and following ---------------------------------------------------------------------

    @work(thread=True, exclusive=True, group="load", name="opening the session", exit_on_error=False)
    def load_session(self) -> None:
        """The session as read now, and the code of the revision the view opens on and of the one before it,
        read and highlighted here: the view's first paint has its code (no second round through a worker
        and another layout), and the first move back finds its revision ready."""
        store = self.context.store
        view, tail = store.tail(self.ref)
        running = store.is_running(self.ref)
        problem, code = "", None
        try:
            code = CodeSource(store.workspace(self.ref), view.config.solution)
        except WorkspaceError as exc:
            problem = str(exc)
        rev = latest_rev(view.state, view.events[-1] if view.events else None)
        if code is not None and rev is not None:
            for shas in (revision_shas(view.state, r, None) for r in (rev, rev - 1)):
                # kept in the source's cache, where request_code finds them; a failure here is left to
                # request_code's worker, which reports it (the session itself opens either way)
                with contextlib.suppress(Exception):
                    if shas is not None:
                        code.code_and_diff(*shas)
        self.post_message(SessionLoaded(view, tail, running, code, problem))

    def on_session_loaded(self, message: SessionLoaded) -> None:
        view = message.view
        self.config, self.tail, self.running = view.config, message.tail, message.running
        self._latest = None  # made from the events read when first asked for (after the first paint)
        self.refresh_bindings()  # the stop and resume keys depend on the runner and the state read (a footer rebuild)
        self.code = message.code
        if message.problem:
            self.notify(message.problem, severity="warning")
        # at the end of every event read: the view's state is exactly that of applying them one at a time
        self.timeline = Timeline(list(view.events), len(view.events), view.state)
        self.query_one("#events", EventLog).set_events(view.events, 0)  # times since the first event
        self._transcript_built = False  # built when the session turns out to be an agent's (update_agent_status)
        self.following = True
        self.refresh_view(select_latest=True)
        if self.is_agent:  # an agent session opens on its transcript
            self.query_one("#session-tabs", TabbedContent).active = "tab-agent"
            # the Agent tab was just shown: once laid out, place the underline under it (it was measured hidden)
            self.call_after_refresh(self._place_tab_underline)
        if not self.ref.read_only:
            self.set_interval(POLL_S, self._poll)
        self.query_one(WorkbenchFooter).release(after_refresh=False)  # its keys depend on what was read

    @on(Worker.StateChanged)
    def _load_ended(self, event: Worker.StateChanged) -> None:
        """Opening failed (its notice comes from the app's error router): the footer is shown anyway."""
        if event.worker.group == "load" and event.state in (WorkerState.ERROR, WorkerState.CANCELLED):
            self.query_one(WorkbenchFooter).release(after_refresh=False)

    def _poll(self) -> None:
        if not self._polling and self.tail is not None:
            self._polling = True
            self.poll_events()

    @work(thread=True, group="poll", name="following the session", exit_on_error=False)
    def poll_events(self) -> None:
        assert self.tail is not None
        try:
            events = self.tail.poll()
            running = self.context.store.is_running(self.ref)
        finally:
            self._polling = False
        self.post_message(EventsArrived(events, running))

    def on_events_arrived(self, message: EventsArrived) -> None:
        word = self.latest.status_word()[0]
        for event in message.events:
            self.latest.apply(event)
        changed = message.running != self.running or word != self.latest.status_word()[0]
        self.running = message.running
        if changed:
            self.refresh_bindings()  # the stop key is enabled only while a runner runs
        if message.events:
            first_position = len(self.timeline.events) + 1
            self.timeline.extend(message.events)
            self.query_one("#events", EventLog).add_events(message.events)
            if self._transcript_built:
                self.query_one("#turns", TurnsView).add_events(message.events, first_position)
            if self.following:
                self.timeline.to_end()
                self.refresh_view(select_latest=True)
                return
        if message.events:
            self.update_agent_status()  # an agent's first events show its tab (the figures stay at the position)
        if message.events or changed:
            self.update_bar()

    @property
    def latest(self) -> SessionState:
        """The state after every event read, whatever the position shown (the timeline's events are those
        read: events that arrive are applied here before the timeline records them)."""
        if self._latest is None:
            self._latest = SessionState.from_events(self.timeline.events)
        return self._latest

    # ---- what is shown -----------------------------------------------------------------------------

    def _latest_rev(self) -> int | None:
        """The revision the current event concerns, else the newest one."""
        return latest_rev(self.timeline.state, self.timeline.current)

    @property
    def submitted_rev(self) -> int | None:
        """The submitted revision as the whole recorded log says (marked ★ at every position)."""
        submission = self.timeline.submission
        return submission.rev if submission is not None else None

    def refresh_view(self, select_latest: bool = False) -> None:
        """Make every pane show the state at the timeline's position."""
        state = self.timeline.state
        table = self.query_one("#revisions", RevisionTable)
        submitted = self.submitted_rev
        table.sync(state, submitted)
        if select_latest and (rev := self._latest_rev()) is not None:
            table.select_rev(rev)
        selected = table.selected_rev
        if selected is not None and selected != self.code_rev:
            self.request_code(selected)
        elif selected is None:
            self.code_rev = None
            self.query_one("#code", CodeView).show("", [], "no revision yet at this point")
            self.query_one("#diff", CodeView).show("", [], "no revision yet at this point")
        self.query_one("#latency", LatencyChart).update_revisions(state.ordered(), submitted, selected)
        self.query_one("#events", EventLog).show(self.timeline.position)
        self.update_header()
        self.update_agent_status()
        if self._transcript_built:
            self.query_one("#turns", TurnsView).show(self.timeline.position)
        self.update_bar()

    @property
    def live(self) -> bool:
        """Following a running session (else the position was stepped, or nothing runs the session)."""
        return self.running and self.following

    def position_label(self) -> str:
        """Where the view is: "live: revision 3/7" while following a running session, else
        "stepping: revision 3/7" (the revision the position concerns, of every recorded revision)."""
        return f"{'live' if self.live else 'stepping'}: {self._revision_text()}"

    def _revision_text(self) -> str:
        return f"revision {self._latest_rev() or 0}/{self.timeline.revision_count}"

    def update_header(self) -> None:
        config = self.config
        text = Text(self.ref.id, style="bold")
        if self.ref.read_only:
            text.append("  (shipped example, read-only)", style="dim")
        if config is not None:
            text.append(
                f"\ntask {config.task} · guidance {config.guidance} · driver {config.driver} · "
                f"device {config.device} · created {config.created:%Y-%m-%d %H:%M} UTC"
            )
            if config.command:
                text.append(f"\ncommand: {config.command}", style="dim")
            if config.agent is not None:
                text.append(f"\n{agent_line(config.agent)}", style="dim")
            if config.from_session:
                text.append(f"\nreplay of: {config.from_session}", style="dim")
            if not self.ref.read_only:
                where = self.ref.workspace / config.solution if config.driver == "human" else self.ref.workspace
                text.append(f"\n{'edit' if config.driver == 'human' else 'workspace'}: {where}", style="cyan")
        submission = self.timeline.submission  # the recorded one, whatever the position
        if submission is not None:
            line = submission_line(SessionState(submission=submission)) or ""
            if self.timeline.submission_ahead:  # stepped back before it: still shown, and said to come later
                line = line.replace("submission:", "submission (recorded later):", 1)
            text.append(f"\n{SUBMITTED} {line}", style="green" if submission.rev is not None else "red")
        self.query_one("#session-header", Static).update(text)

    @property
    def is_agent(self) -> bool:
        """An agent session (by its driver, or by the agent's events in its log)."""
        return (self.config is not None and self.config.driver == "agent") or self.timeline.has_agent_events

    def update_agent_status(self) -> None:
        """The Agent tab and the usage line, for an agent session: turns, tokens and cost as of the position."""
        agent = self.is_agent
        if agent and not self._transcript_built:  # only an agent's log is read into a transcript
            self._transcript_built = True
            self.query_one("#turns", TurnsView).set_events(list(self.timeline.events), self.timeline.position)
        if agent and not self._agent_shown:  # an agent session, or the first agent event of one
            self._agent_shown = True
            self.add_class("-agent")
            self.query_one("#agent-status", Static).display = True
            self.query_one("#session-tabs", TabbedContent).show_tab("tab-agent")
        if agent:
            settings = self.config.agent if self.config is not None else None
            max_turns = settings.max_turns if settings is not None else None
            self.query_one("#agent-status", Static).update(usage_text(self.timeline.usage, max_turns))

    def _place_tab_underline(self) -> None:
        tabs = self.query_one("#session-tabs", TabbedContent).query_one(Tabs)
        tabs._highlight_active(animate=False)  # Textual re-places it on resize only; the bar's width did not change

    def update_bar(self) -> None:
        timeline, live = self.timeline, self.live
        bar = Text()
        bar.append(" LIVE " if live else " stepping ", style="reverse bold yellow" if live else "reverse")
        bar.append(f"  {self._revision_text()} · event {timeline.position}/{len(timeline.events)}")
        bar.append("  ▶ playing" if self.playing else "  ⏸ paused" if timeline.position < len(timeline.events) else "")
        if live:
            bar.append("  following new events", style="green")
        elif timeline.waiting:
            bar.append(f"  {timeline.waiting} new event{'s' if timeline.waiting != 1 else ''} waiting", style="bold yellow")
            bar.append(" (f or > to follow)", style="dim")
        elif self.running:
            bar.append("  the session runs: f follows it", style="yellow")
        if self.running:
            self.runner_expected_until = 0.0  # it holds the session: a later stop is a stop
        if not self.running and timeline.state.finished is None and not self.ref.read_only and timeline.at_end:
            starting = time.monotonic() < self.runner_expected_until
            bar.append("  runner starting…" if starting else "  runner stopped", style="dim")
        bar.append("   [ ] revision  { } event  < > start/end  space play", style="dim")
        self.query_one("#replay-bar", Static).update(bar)
        self.sub_title = f"Session · {self.position_label()}"

    # ---- code of the selected revision -------------------------------------------------------------

    @on(RevisionTable.Highlighted, "#revisions")
    def _revision_highlighted(self, event: RevisionTable.Highlighted) -> None:
        if event.rev != self.code_rev:
            self.request_code(event.rev)
        self.query_one("#latency", LatencyChart).update_revisions(self.timeline.state.ordered(), self.submitted_rev, event.rev)

    def _shas(self, rev: int) -> tuple[str, str | None] | None:
        return revision_shas(self.timeline.state, rev, self.diff_base)

    def action_review(self) -> None:
        """The judge's verdict on the selected revision beside the expert solution (run, confirm, change)."""
        self.shell.open_review(self.ref, self.query_one("#revisions", RevisionTable).selected_rev)

    def action_diff_base(self) -> None:
        """Mark the selected revision as the Diff tab's base (any two revisions can be compared); on the
        base itself, go back to comparing each revision with the one before it."""
        rev = self.code_rev
        if rev is None:
            self.notify("select a revision first", severity="warning")
            return
        self.diff_base = None if self.diff_base == rev else rev
        self.notify(
            f"Diff: each revision against revision {rev}" if self.diff_base else "Diff: each revision against the one before it"
        )
        self.code_rev = None
        self.request_code(rev)

    def request_code(self, rev: int) -> None:
        shas = self._shas(rev)
        if shas is None or self.code is None:
            return
        self.code_rev = rev
        cached = self.code.cached(*shas)
        neighbours = [n for r in (rev - 1, rev + 1, rev - 2, rev + 2) if (n := self._shas(r)) is not None]
        if cached is None:
            self.load_code(rev, shas, neighbours)
            return
        self.show_code(rev, cached)
        # the neighbours are read once this revision is painted: the reading does not hold up its paint
        self.call_after_refresh(self.load_code, rev, None, neighbours)

    @work(thread=True, group="code", name="reading the revision from git", exit_on_error=False)
    def load_code(self, rev: int, shas: tuple[str, str | None] | None, neighbours: list[tuple[str, str | None]]) -> None:
        """Read and highlight one revision (when not cached), then the two on either side of it, so that moving
        is instant even when keys come faster than a revision is highlighted."""
        assert self.code is not None
        if shas is not None:
            self.post_message(CodeLoaded(rev, self.code.code_and_diff(*shas)))
        for neighbour in neighbours:
            self.code.code_and_diff(*neighbour)

    def on_code_loaded(self, message: CodeLoaded) -> None:
        if message.rev == self.code_rev:
            self.show_code(message.rev, message.rendered)

    def show_code(self, rev: int, rendered: tuple[str, list[Text], str, list[Text]]) -> None:
        code, code_lines, diff, diff_lines = rendered
        first = rev == min(self.timeline.state.revisions, default=rev) and self.diff_base in (None, rev)
        self.query_one("#code", CodeView).show(
            code, code_lines, f"revision {rev} has no {self.config.solution if self.config else 'file'}"
        )
        self.query_one("#diff", CodeView).show(
            diff,
            diff_lines,
            "first revision: nothing to compare with" if first else f"revision {rev} does not change the solution",
        )
        self.shown_rev = rev

    # ---- stepping controls -------------------------------------------------------------------------

    def _moved(self) -> None:
        self.following = self.timeline.at_end and self.running
        self.refresh_view(select_latest=True)

    def action_step(self, delta: int) -> None:
        self._pause()
        if self.timeline.step(delta):
            self._moved()
        else:
            self.update_bar()

    def action_step_revision(self, direction: int) -> None:
        self._pause()
        if self.timeline.step_revision(direction):
            self._moved()
        else:
            self.update_bar()

    def action_seek_start(self) -> None:
        self._pause()
        if self.timeline.seek(0):
            self._moved()

    def action_seek_end(self) -> None:
        self._pause()
        self.timeline.to_end()
        self.following = True
        self.refresh_view(select_latest=True)

    def action_follow(self) -> None:
        self.action_seek_end()
        self.query_one("#events", EventLog).scroll_end(animate=False)

    def action_play(self) -> None:
        if self.playing:
            self._pause()
            self.update_bar()
            return
        if self.timeline.at_end:
            self.timeline.seek(0)
        self.playing = True
        self.following = False
        assert self._play_timer is not None
        self._play_timer.resume()
        self._moved()

    def _pause(self) -> None:
        self.playing = False
        if self._play_timer is not None:
            self._play_timer.pause()

    def _play_tick(self) -> None:
        if not self.timeline.step(1):
            self._pause()
            self.following = self.running
        self.refresh_view(select_latest=True)

    @on(EventLog.Scrolled)
    def _log_scrolled(self, event: EventLog.Scrolled) -> None:
        if not event.at_bottom and self.following:
            self.following = False
            self.update_bar()

    def action_tab(self, pane: str) -> None:
        if pane == "tab-agent" and not self.is_agent:
            self.notify("this session has no agent transcript", severity="warning")
            return
        self.query_one("#session-tabs", TabbedContent).active = pane
        if pane == "tab-agent":
            self.query_one("#turns", TurnsView).focus()  # up/down select an entry, enter expands it

    def action_back(self) -> None:
        self.app.pop_screen()

    # ---- process control ---------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """The stop key shows in the footer always, dimmed (and inert) while no runner runs the session; the
        resume key likewise while there is nothing to resume."""
        if action == "stop_runner" and not self.running:
            return None
        if action == "resume" and not self.resumable:
            return None
        return True

    RESUMABLE = ("interrupted", "stopped", "failed")

    @property
    def resumable(self) -> bool:
        """Not being run, not a shipped example, and cut off, stopped or failed (a fixed key, a network back)."""
        return not self.running and not self.ref.read_only and self.latest.status_word()[0] in self.RESUMABLE

    def action_rerun(self) -> None:
        """A new session of the same task from this one's settings (another model, guidance or budget), its
        origin recorded."""
        if self.config is None:
            self.notify("the session is still being read", severity="warning")
            return
        self.shell.rerun(self.config)

    def action_resume(self) -> None:
        if not self.resumable:
            why = f"it is {self.latest.status_word()[0]}"
            if self.running or self.ref.read_only:
                why = "it is being run" if self.running else "a shipped example is never run"
            self.notify(f"nothing to resume: {why}", severity="warning")
            return
        self.resume_runner()

    @work(thread=True, group="process", name="resuming the session", exit_on_error=False)
    def resume_runner(self) -> None:
        idle = float(DEFAULT_IDLE_EXIT_MIN) * 60 if self.config is not None and self.config.driver == "human" else None
        pid, log = start_runner(self.context, self.ref, idle)
        self.app.call_from_thread(self.notify, f"resumed: a runner (pid {pid}) runs the session; its output goes to {log}")

    def action_stop_runner(self) -> None:
        if not self.running:
            self.notify("this session is not being run", severity="warning")
            return
        self.stop_runner()

    @work(thread=True, group="process", name="stopping the runner", exit_on_error=False)
    def stop_runner(self) -> None:
        pid = self.context.store.runner_pid(self.ref)
        if pid is None:
            self.app.call_from_thread(self.notify, "this session is not being run any more", severity="warning")
            return
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            self.app.call_from_thread(self.notify, "this session is not being run any more", severity="warning")
            return
        self.app.call_from_thread(self.notify, f"asked the runner (pid {pid}) to stop; it finishes queued evaluations")


def agent_line(agent: AgentConfig) -> str:
    """The agent's settings as the header shows them (never a key: that stays in the environment)."""
    budget = f"{agent.max_turns} turns" + (f", {format_usd(agent.max_usd)} max" if agent.max_usd is not None else "")
    parts = [f"agent: {agent.provider} {agent.model}", f"mode {agent.mode}", f"budget {budget}"]
    if agent.allow_unpriced:
        parts.append("unpriced allowed")
    if agent.base_url:
        parts.append(f"base URL {agent.base_url}")
    return " · ".join(parts)


__all__ = ["SessionViewScreen"]
