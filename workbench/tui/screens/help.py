"""The help screen: what each area is for and every key of the screen it was opened from."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import Static

from workbench.tui.screens.base import STYLES

ABOUT = """\
d2k-workbench: browse D2K-Bench tasks and their expert guidance, launch sessions, watch them live and replay them.

Areas:  t tasks   s sessions   m results   n new session   ctrl+p command palette (every key below is also a command)
Session view: the revision table (★ = the session's submission, marked at every position), the code of the
selected revision and its diff to the previous one (b marks the selected revision as the diff's base instead),
the event log, and latency by revision. Watching live
and stepping through a recorded session are the same view, its position moving over the recorded events
(this stepping is the view's own; the "replay" driver is something else: a new session re-running a
recorded one). [ ] step by revision (to where its evaluation ended), { } by event, < > to the start or
end, space plays event by event, f follows a live session; up/down select a revision's code without
moving the position. The header says where you are: "stepping: revision 3/7" or "live: revision 3/7".
A live session follows new events until you scroll the log up or step back; x stops its runner.
An agent session opens on its Agent tab (a): each turn's text, tool calls with their arguments and
results, retries (up/down select one, enter expands it in full), under a line of turns used of the budget,
tokens by bucket and cost so far, all as of the position. Its API key is read from the environment
(OPENAI_API_KEY or ANTHROPIC_API_KEY), never asked for or shown.
r opens the review of the selected revision: the candidate beside the expert solution, the judge's scores,
rationales and citations per level (selecting a citation shows its lines and the expert's evidence), keys
to run the judge, confirm a score or change it with a reason.
Sessions (s): † beside a session's best status: it was graded by an older harness than this one (the
harness changes; `d2k-workbench regrade ID` evaluates it again and records the new grade).
Results (m): the report's tables over the sessions root, filterable by task, model and configuration.
Sessions launched here keep running when the app closes (a human session ends after its idle time);
reopen the app to watch them again.
"""


class HelpScreen(ModalScreen[None]):
    """Keys of the screen underneath, generated from its active bindings."""

    CSS_PATH = STYLES / "help.tcss"
    BINDINGS = [
        Binding("escape", "dismiss", "Close", id="help.close"),
        Binding("q", "dismiss", "Close", show=False, id="help.close_q"),
    ]

    def __init__(self, under: Screen[object]) -> None:
        super().__init__()
        self.under = under

    def keys_table(self) -> Table:
        table = Table(
            title=f"Keys here ({type(self.under).__name__.removesuffix('Screen').lower()})",
            title_justify="left",
            expand=True,
            show_edge=False,
        )
        table.add_column("key", style="bold", no_wrap=True)
        table.add_column("does")
        table.add_column("id", style="dim")
        seen: set[tuple[str, str]] = set()
        for key, active in self.under.active_bindings.items():
            binding = active.binding
            if not binding.description or (key, binding.action) in seen:
                continue
            seen.add((key, binding.action))
            table.add_row(binding.key_display or self.app.get_key_display(binding), binding.description, binding.id or "")
        table.add_row("tab / shift+tab", "move between panes", "")
        table.add_row("escape", "back / close", "")
        return table

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-body"):
            yield Static(Text(ABOUT), id="help-about")
            context = getattr(self.app, "context", None)
            if context is not None:
                yield Static(
                    Text(
                        f"tasks {context.tasks_dir}\nguidance {context.guidance_dir}\nsessions {context.sessions_dir}",
                        style="dim",
                    ),
                    id="help-roots",
                )
            yield Static(self.keys_table(), id="help-keys")
            yield Static(Text("escape or ? closes this help", style="dim"), id="help-close")

    async def action_dismiss(self, result: None = None) -> None:
        self.dismiss(None)
