"""The review screen: one revision's judgement beside the code it cites.

Top: the candidate at the revision (its solution, or a design's canonical model_design.json) and the expert
implementation, side by side, both syntax-highlighted. Bottom: the judge's citations per level (score, whether
they verified) and, for the selected entry, the score with its reviews, the rationale and the rubric's
properties of the level (each marked realised, partial or missing). Selecting a citation highlights its lines
in the candidate and scrolls to them, and on the expert side highlights and scrolls to the evidence of the
criterion it supports (the expert's functions its `expert_evidence` names).

Keys: `j` runs the judge in a subprocess (`python -m workbench.cli.judge_cmds run ...`, its progress shown
below), `c` confirms the selected level's score and `o` changes it, each with a reason (a `review` event,
written in a worker through `workbench.judge.record_review`, which takes the session's lock for the append),
`r` reads the log again.
A shipped example shows the same, read-only: judging and reviewing it are refused with a notice.

Opened from a session view on a revision: `app.push_screen(ReviewScreen(ref, rev))` (rev None: the revision
with the latest verdict, else the submission).
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass

from rich.syntax import Syntax
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.widgets import Button, Header, Input, Label, OptionList, Select, Static
from textual.widgets.option_list import Option

from workbench.catalog.guidance import LEVEL_NAMES, LEVELS, Level, RubricCriterion
from workbench.judge.evidence import EvidenceSpan
from workbench.judge.scores import Judgement
from workbench.judge.sessions import ReviewMaterial, default_author, load_material, record_review
from workbench.judge.verdict import Citation, LevelVerdict
from workbench.llm import PROVIDER_NAMES
from workbench.session.layout import SessionRef
from workbench.tui.screens.base import STYLES, WorkbenchModal, WorkbenchScreen
from workbench.tui.widgets.code_view import CodeView, highlight_python
from workbench.tui.widgets.footer import WorkbenchFooter

CONTEXT_LINES = 2  # lines shown above a highlighted range when scrolling to it
HIGHLIGHT = "on #264f78"
MARKS = {"realized": ("✓", "green"), "partial": ("◐", "yellow"), "missing": ("✗", "red")}
DONE = {"confirm": "confirmed", "change": "changed"}
KEY_ENV = {"openai": "OPENAI_API_KEY", "openai-responses": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}


def highlight_json(text: str) -> list[Text]:
    """Numbered, syntax-highlighted lines of JSON (a design's canonical text)."""
    if not text:
        return []
    highlighted = Syntax(text, "json", theme="ansi_dark").highlight(text)
    highlighted.rstrip()
    lines = highlighted.split("\n", allow_blank=True)
    width = len(str(len(lines)))
    return [Text.assemble((f"{n:>{width}} ", "dim"), line) for n, line in enumerate(lines, start=1)]


class HighlightedCode(CodeView):
    """A code pane whose highlighted lines (1-based) get a background, and that scrolls to a line."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.highlighted: set[int] = set()

    def highlight(self, spans: list[tuple[int, int]], focus: int | None = None) -> None:
        """Highlight the inclusive line ranges `spans` and scroll so that line `focus` is near the top."""
        self.highlighted = {n for start, end in spans for n in range(start, end + 1)}
        self._strips.clear()
        self.refresh()
        if focus is not None:
            top = max(0, focus - 1 - CONTEXT_LINES)
            self.scroll_to(0, top, animate=False, immediate=True, force=True)
            # again once laid out: new lines change the scrollbars and so how far the view can scroll
            self.call_after_refresh(self.scroll_to, 0, top, animate=False, immediate=True, force=True)

    def _line(self, index: int) -> Text:
        line = super()._line(index)
        if index + 1 not in self.highlighted or not self.text:
            return line
        marked = line.copy()
        marked.pad_right(max(0, self.virtual_size.width - 1 - marked.cell_len))
        marked.stylize(HIGHLIGHT)
        return marked


# --- messages of the screen's workers ---------------------------------------------------------------------


class ReviewLoaded(Message):
    def __init__(self, material: ReviewMaterial, candidate: list[Text], expert: list[Text]) -> None:
        super().__init__()
        self.material = material
        self.candidate = candidate
        self.expert = expert


class JudgeProgress(Message):
    def __init__(self, line: str) -> None:
        super().__init__()
        self.line = line


class JudgeFinished(Message):
    def __init__(self, code: int, last: str) -> None:
        super().__init__()
        self.code = code
        self.last = last


class ReviewRecorded(Message):
    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text


# --- dialogs ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class JudgeSettings:
    provider: str
    model: str
    base_url: str | None


@dataclass(frozen=True)
class ReviewChoice:
    score: float | None  # None: confirm the judge's score
    reason: str
    author: str


class JudgeDialog(WorkbenchModal):
    """Provider, model and base URL of the judge (the key comes from the environment, never from here)."""

    CSS_PATH = STYLES / "review.tcss"
    BINDINGS = [Binding("escape", "cancel", "Cancel", id="judge.cancel")]

    def __init__(self, settings: JudgeSettings) -> None:
        super().__init__()
        self.settings = settings

    def compose(self) -> ComposeResult:
        with Vertical(id="judge-dialog", classes="review-dialog"):
            yield Static("Run the judge", classes="dialog-title")
            with Horizontal(classes="dialog-field"):
                yield Label("Provider")
                yield Select(
                    [(p, p) for p in PROVIDER_NAMES],
                    value=self.settings.provider,
                    allow_blank=False,
                    compact=True,
                    id="judge-provider",
                )
            with Horizontal(classes="dialog-field"):
                yield Label("Model")
                yield Input(self.settings.model, placeholder="e.g. gpt-4.1", compact=True, id="judge-model")
            with Horizontal(classes="dialog-field"):
                yield Label("Base URL")
                yield Input(self.settings.base_url or "", placeholder="(the provider's API)", compact=True, id="judge-base-url")
            yield Static("", id="judge-error", classes="dialog-error")
            with Horizontal(classes="dialog-buttons"):
                yield Button("Judge", variant="primary", id="judge-ok", compact=True)
                yield Button("Cancel", id="judge-cancel", compact=True)

    def on_mount(self) -> None:
        self.query_one("#judge-model", Input).focus()

    @on(Button.Pressed, "#judge-ok")
    @on(Input.Submitted)
    def action_submit(self) -> None:
        model = self.query_one("#judge-model", Input).value.strip()
        if not model:
            self.query_one("#judge-error", Static).update("give the model's name")
            return
        provider = str(self.query_one("#judge-provider", Select).value)
        base_url = self.query_one("#judge-base-url", Input).value.strip() or None
        self.dismiss(JudgeSettings(provider, model, base_url))

    @on(Button.Pressed, "#judge-cancel")
    def action_cancel(self) -> None:
        self.dismiss(None)


class ReviewDialog(WorkbenchModal):
    """Confirm (score fixed) or change one level's score, with a reason and an author."""

    CSS_PATH = STYLES / "review.tcss"
    BINDINGS = [Binding("escape", "cancel", "Cancel", id="review_dialog.cancel")]

    def __init__(self, level: Level, judge_score: float | None, current: float | None, confirm: bool) -> None:
        super().__init__()
        self.level = level
        self.judge_score = judge_score
        self.current = current
        self.confirm = confirm

    def compose(self) -> ComposeResult:
        judge = "invalid" if self.judge_score is None else f"{self.judge_score:g}"
        title = f"{'Confirm' if self.confirm else 'Change'} {self.level} (judge: {judge})"
        shown = self.judge_score if self.confirm else self.current
        with Vertical(id="review-dialog", classes="review-dialog"):
            yield Static(title, classes="dialog-title")
            with Horizontal(classes="dialog-field"):
                yield Label("Score (0-100)")
                yield Input("" if shown is None else f"{shown:g}", disabled=self.confirm, compact=True, id="review-score")
            with Horizontal(classes="dialog-field"):
                yield Label("Reason")
                yield Input("", placeholder="why (kept with the review)", compact=True, id="review-reason")
            with Horizontal(classes="dialog-field"):
                yield Label("Author")
                yield Input(default_author(), compact=True, id="review-author")
            yield Static("", id="review-error", classes="dialog-error")
            with Horizontal(classes="dialog-buttons"):
                yield Button("Record", variant="primary", id="review-ok", compact=True)
                yield Button("Cancel", id="review-cancel", compact=True)

    def on_mount(self) -> None:
        self.query_one("#review-reason" if self.confirm else "#review-score", Input).focus()

    def _error(self, text: str) -> None:
        self.query_one("#review-error", Static).update(text)

    @on(Button.Pressed, "#review-ok")
    @on(Input.Submitted)
    def action_submit(self) -> None:
        score: float | None = None
        if not self.confirm:
            raw = self.query_one("#review-score", Input).value.strip()
            try:
                score = float(raw)
            except ValueError:
                self._error(f"the score must be a number from 0 to 100 (got {raw!r})")
                return
            if not 0 <= score <= 100:
                self._error(f"the score must be from 0 to 100 (got {score:g})")
                return
        reason = self.query_one("#review-reason", Input).value.strip()
        author = self.query_one("#review-author", Input).value.strip()
        if not reason:
            self._error("say why: the reason is kept with the review")
            self.query_one("#review-reason", Input).focus()
            return
        if not author:
            self._error("give the author")
            return
        self.dismiss(ReviewChoice(score, reason, author))

    @on(Button.Pressed, "#review-cancel")
    def action_cancel(self) -> None:
        self.dismiss(None)


# --- the screen -------------------------------------------------------------------------------------------


def _score(value: float | None) -> str:
    return "invalid" if value is None else f"{value:g}"


def short(criterion: str, level: Level) -> str:
    """A criterion's id without its level's prefix ("L2.c.symmetric_gemm_add" -> "symmetric_gemm_add")."""
    for prefix in (f"{level}.c.", f"{level}."):
        if criterion.startswith(prefix):
            return criterion.removeprefix(prefix)
    return criterion


def level_of(option_id: str | None) -> Level | None:
    """The level an option of the citations list belongs to ("level-L1", "cit-L1-0")."""
    if option_id is None:
        return None
    for level in LEVELS:
        if f"-{level}" in option_id:
            return level
    return None


class ReviewScreen(WorkbenchScreen):
    """A revision's judgement: candidate and expert side by side, citations, scores, rubric; judge and review."""

    CSS_PATH = STYLES / "review.tcss"
    AUTO_FOCUS = "#citations"
    BINDINGS = [
        Binding("escape", "back", "Back", id="review.back"),
        Binding("j", "judge", "Run judge", id="review.judge"),
        Binding("c", "confirm", "Confirm score", id="review.confirm"),
        Binding("o", "change", "Change score", id="review.change"),
        Binding("r", "reload", "Reload", show=False, id="review.reload"),
    ]

    def __init__(self, ref: SessionRef, rev: int | None = None) -> None:
        super().__init__()
        self.ref = ref
        self.rev = rev
        self.material: ReviewMaterial | None = None
        self.selected: str | None = None  # the highlighted option's id
        self.judging = False
        self.settings = JudgeSettings(
            os.environ.get("D2K_JUDGE_PROVIDER", "openai"),
            os.environ.get("D2K_JUDGE_MODEL", ""),
            os.environ.get("D2K_JUDGE_BASE_URL") or None,
        )

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(Text(self.ref.id, style="bold"), id="review-header")
        with Horizontal(id="review-code"):
            with Vertical(id="candidate-pane"):
                yield Static("candidate", id="candidate-title", classes="pane-title")
                yield HighlightedCode(id="candidate")
            with Vertical(id="expert-pane"):
                yield Static("expert", id="expert-title", classes="pane-title")
                yield HighlightedCode(id="expert")
        with Horizontal(id="review-bottom"):
            yield OptionList(id="citations")
            with VerticalScroll(id="detail-pane"):
                yield Static(id="detail")
        yield Static(id="judge-progress")
        yield WorkbenchFooter()

    def on_mount(self) -> None:
        self.sub_title = "Review"
        self.query_one("#judge-progress", Static).display = False
        self.load_review()

    # ---- loading -----------------------------------------------------------------------------------

    @work(thread=True, exclusive=True, group="review-load", name="reading the judgement", exit_on_error=False)
    def load_review(self) -> None:
        material = load_material(self.context.store, self.ref, self.context.catalog, self.rev)
        highlight = highlight_json if material.kind == "design" else highlight_python
        expert = material.material.expert_source if material.material is not None else None
        self.post_message(ReviewLoaded(material, highlight(material.text), highlight_python(expert or "")))

    def on_review_loaded(self, message: ReviewLoaded) -> None:
        material = message.material
        first = self.material is None
        self.material, self.rev = material, material.rev
        if material.problem:
            self.notify(material.problem, severity="warning")
        if first:
            self.query_one("#candidate", HighlightedCode).show(
                material.text, message.candidate, f"revision {material.rev} has no {material.file}"
            )
            expert = material.material.expert_source if material.material is not None else None
            self.query_one("#expert", HighlightedCode).show(
                expert or "", message.expert, "the task ships no expert implementation"
            )
        self.query_one("#candidate-title", Static).update(
            Text.assemble(("candidate ", "bold"), f"{material.file} @ revision {material.rev}")
        )
        self.query_one("#expert-title", Static).update(Text.assemble(("expert ", "bold"), "expert.py"))
        self.update_header()
        self.fill_citations()

    @property
    def judgement(self) -> Judgement | None:
        return self.material.judgement if self.material is not None else None

    def level_verdict(self, level: Level) -> LevelVerdict | None:
        judgement = self.judgement
        if judgement is None or judgement.verdict is None:
            return None
        return judgement.verdict.levels.get(level)

    def update_header(self) -> None:
        material = self.material
        text = Text(self.ref.id, style="bold")
        if self.ref.read_only:
            text.append("  (shipped example, read-only)", style="dim")
        if material is None:
            self.query_one("#review-header", Static).update(text)
            return
        config = material.view.config
        revision = material.view.state.revisions[material.rev]
        status = revision.status or revision.eval_state
        what = "design" if material.kind == "design" else f"code · {status}"
        text.append(f"\nrevision {material.rev} · {what} · task {config.task} · guidance {config.guidance}")
        judgement = material.judgement
        verdict = judgement.verdict if judgement is not None else None
        if judgement is None or verdict is None:
            text.append("\nnot judged yet: j runs the judge", style="yellow")
        else:
            js = judgement.js
            label = "JS_design" if material.kind == "design" else "JS_impl"
            shown = f"{js:.1f}" if js is not None else "n/a"
            who = f"{verdict.provider} {verdict.judge}" if verdict.model_called else "no model (the revision failed)"
            state = "verified" if verdict.complete else "incomplete: a level is invalid"
            text.append(
                f"\n{label} {shown} (effective) · judge: {who} · {state}", style="green" if verdict.complete else "yellow"
            )
            if verdict.reasks:
                text.append(f" · {len(verdict.reasks)} re-ask(s)", style="dim")
        self.query_one("#review-header", Static).update(text)

    def fill_citations(self) -> None:
        options = self.query_one("#citations", OptionList)
        keep = self.selected
        options.clear_options()
        judgement = self.judgement
        if judgement is None or judgement.verdict is None:
            options.add_option(Option(Text("not judged yet: j runs the judge", style="dim"), id="none", disabled=True))
            self.selected = None
            self.show_detail()
            return
        for level in LEVELS:
            found = judgement.verdict.levels.get(level)
            effective = judgement.effective(level)
            review = judgement.latest_review(level)
            line = Text.assemble((f"{level} {_score(effective):>7}", "bold"))
            if found is not None and not found.valid:
                line.append("  judge: invalid", style="red")
            if review is not None:
                line.append(f"  {DONE[review.action]}", style="cyan")
            options.add_option(Option(line, id=f"level-{level}"))
            for index, citation in enumerate(found.citations if found is not None else []):
                ok = found is not None and index < len(found.verification) and found.verification[index].ok
                mark = ("✓", "green") if ok else ("✗", "red")
                options.add_option(
                    Option(
                        Text.assemble(
                            "  ",
                            mark,
                            f" {citation.start_line:>4}-{citation.end_line:<4} ",
                            (short(citation.criterion, level), "dim"),
                        ),
                        id=f"cit-{level}-{index}",
                    )
                )
        ids = [options.get_option_at_index(i).id for i in range(options.option_count)]
        wanted = keep if keep in ids else next((i for i in ids if i and i.startswith("cit-")), ids[0] if ids else None)
        if wanted is not None:
            options.highlighted = ids.index(wanted)
            self.select(wanted)

    # ---- selection ---------------------------------------------------------------------------------

    @on(OptionList.OptionHighlighted, "#citations")
    def _highlighted(self, event: OptionList.OptionHighlighted) -> None:
        if event.option.id != self.selected:
            self.select(event.option.id)

    @on(OptionList.OptionSelected, "#citations")
    def _selected(self, event: OptionList.OptionSelected) -> None:
        self.select(event.option.id)

    def citation(self, option_id: str | None) -> tuple[Level, int, Citation] | None:
        level = level_of(option_id)
        if option_id is None or level is None or not option_id.startswith("cit-"):
            return None
        index = int(option_id.rsplit("-", 1)[1])
        found = self.level_verdict(level)
        if found is None or index >= len(found.citations):
            return None
        return level, index, found.citations[index]

    def evidence(self, criterion: str) -> list[EvidenceSpan]:
        material = self.material.material if self.material is not None else None
        return material.evidence.get(criterion, []) if material is not None else []

    def select(self, option_id: str | None) -> None:
        """Show the entry `option_id`: a citation's lines and its criterion's evidence, or a whole level."""
        self.selected = option_id
        candidate = self.query_one("#candidate", HighlightedCode)
        expert = self.query_one("#expert", HighlightedCode)
        cited = self.citation(option_id)
        level = level_of(option_id)
        if cited is not None:
            _, _, citation = cited
            candidate.highlight([(citation.start_line, citation.end_line)], citation.start_line)
            spans = self.evidence(citation.criterion)
            expert.highlight([(s.start_line, s.end_line) for s in spans], spans[0].start_line if spans else None)
            self.query_one("#expert-title", Static).update(
                Text.assemble(
                    ("expert ", "bold"),
                    "expert.py · ",
                    (", ".join(s.name for s in spans) or "no function named", "bold"),
                    f" (evidence of {citation.criterion})",
                )
            )
        elif level is not None:
            found = self.level_verdict(level)
            ranges = [(c.start_line, c.end_line) for c in found.citations] if found is not None else []
            candidate.highlight(ranges, ranges[0][0] if ranges else None)
            expert.highlight([])
            self.query_one("#expert-title", Static).update(Text.assemble(("expert ", "bold"), "expert.py"))
        else:
            candidate.highlight([])
            expert.highlight([])
        self.show_detail()

    def show_detail(self) -> None:
        self.query_one("#detail", Static).update(self.detail_text())

    def criteria_of(self, level: Level) -> list[RubricCriterion]:
        material = self.material.material if self.material is not None else None
        return material.rubric.for_level(level) if material is not None else []

    def detail_text(self) -> Text:
        level = level_of(self.selected)
        judgement = self.judgement
        if level is None or judgement is None:
            return Text(
                "Nothing judged yet. j runs the judge on this revision (the key comes from the environment).", style="dim"
            )
        found = self.level_verdict(level)
        text = Text()
        text.append(f"{level}: {LEVEL_NAMES[level]}\n", style="bold")
        text.append(f"score {_score(judgement.effective(level))}", style="bold")
        text.append(f" (judge {_score(judgement.judge_score(level))}")
        if found is not None and not found.valid and found.proposed_score is not None:
            text.append(f", proposed {found.proposed_score:g} but not verified")
        text.append(")\n")
        for _, review in judgement.reviews:
            if review.level == level:
                text.append(
                    f"  {DONE[review.action]} {review.score:g} by {review.author} on {review.time:%Y-%m-%d}: {review.reason}\n",
                    style="cyan",
                )
        cited = self.citation(self.selected)
        if cited is not None and found is not None:
            _, index, citation = cited
            check = found.verification[index] if index < len(found.verification) else None
            text.append(f"\ncitation {index + 1}: {citation.file} {citation.start_line}-{citation.end_line} ", style="bold")
            if check is not None and check.ok:
                text.append("verified\n", style="green")
            else:
                text.append("failed verification\n", style="red")
                for error in check.errors if check is not None else []:
                    text.append(f"  {error}\n", style="red")
            criterion = next((c for c in self.criteria_of(level) if c.id == citation.criterion), None)
            if criterion is not None:
                text.append(f"supports {criterion.id}: ", style="bold")
                text.append(criterion.property.strip() + "\n")
                text.append("expert evidence: ", style="dim")
                text.append(criterion.expert_evidence.strip() + "\n", style="dim")
        if found is not None and found.errors:
            text.append("\nverification errors:\n", style="red")
            for error in found.errors:
                text.append(f"  {error}\n", style="red")
        if found is not None and found.rationale:
            text.append("\nrationale: ", style="bold")
            text.append(found.rationale.strip() + "\n")
        criteria = self.criteria_of(level)
        if criteria:
            text.append(f"\nrubric {level}:\n", style="bold")
            for criterion in criteria:
                group = next((g for g in MARKS if found is not None and criterion.id in getattr(found, g)), None)
                mark, style = MARKS[group] if group else ("·", "dim")
                text.append(f"  {mark} ", style=style)
                text.append(criterion.id, style="bold")
                text.append(f" ({group or 'not named'}): {criterion.property.strip()}\n")
        return text

    # ---- judge -------------------------------------------------------------------------------------

    def _writable(self, what: str) -> bool:
        if self.ref.read_only:
            self.notify(
                f"{self.ref.id} is a shipped example (read-only): copy its folder into the sessions root to {what} it",
                severity="warning",
            )
            return False
        return True

    def action_judge(self) -> None:
        if self.judging:
            self.notify("the judge is already running on this revision", severity="warning")
            return
        if self.material is None or not self._writable("judge"):
            return
        self.app.push_screen(JudgeDialog(self.settings), self._judge_chosen)

    def _judge_chosen(self, settings: object) -> None:
        if not isinstance(settings, JudgeSettings) or self.material is None:
            return
        self.settings = settings
        variable = KEY_ENV.get(settings.provider)
        if settings.base_url is None and variable and not os.environ.get(variable):
            self.notify(f"{variable} is not set: the judge's call to {settings.provider} will fail", severity="warning")
        self.judging = True
        progress = self.query_one("#judge-progress", Static)
        progress.display = True
        progress.update(f"judge: starting {settings.provider} {settings.model} on revision {self.material.rev}")
        self.run_judge_process(settings, self.material.rev)

    def judge_command(self, settings: JudgeSettings, rev: int) -> list[str]:
        """The judge's command line (this interpreter, this app's roots)."""
        context = self.context
        command = [sys.executable, "-m", "workbench.cli.judge_cmds", "run", self.ref.id, "--revision", str(rev)]
        command += ["--provider", settings.provider, "--model", settings.model]
        if settings.base_url:
            command += ["--base-url", settings.base_url]
        return [
            *command,
            "--sessions-dir",
            str(context.sessions_dir),
            "--tasks-dir",
            str(context.tasks_dir),
            "--guidance-dir",
            str(context.guidance_dir),
        ]

    @work(thread=True, exclusive=True, group="judge", name="running the judge", exit_on_error=False)
    def run_judge_process(self, settings: JudgeSettings, rev: int) -> None:
        env = dict(os.environ)
        if self.context.examples_dir is not None:
            env["D2K_EXAMPLES_DIR"] = str(self.context.examples_dir)
        last = ""
        with subprocess.Popen(
            self.judge_command(settings, rev),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            text=True,
            env=env,
        ) as process:
            assert process.stdout is not None
            for raw in process.stdout:
                line = raw.rstrip()
                if line:
                    last = line
                    self.post_message(JudgeProgress(line))
            code = process.wait()
        self.post_message(JudgeFinished(code, last))

    def on_judge_progress(self, message: JudgeProgress) -> None:
        self.query_one("#judge-progress", Static).update(f"judge: {message.line}")

    def on_judge_finished(self, message: JudgeFinished) -> None:
        self.judging = False
        self.query_one("#judge-progress", Static).display = False
        if message.code == 0:
            self.notify("the judge's verdict is recorded: every level verified")
        elif message.code == 1:
            self.notify(f"the judge finished: {message.last}", severity="warning")
        else:
            self.notify(f"the judge failed: {message.last}", severity="error", timeout=10)
        self.load_review()

    # ---- reviews -----------------------------------------------------------------------------------

    def _review(self, confirm: bool) -> None:
        level = level_of(self.selected)
        judgement = self.judgement
        if judgement is None or judgement.verdict is None or level is None:
            self.notify("nothing judged to review here: j runs the judge", severity="warning")
            return
        if not self._writable("review"):
            return
        judge_score = judgement.judge_score(level)
        if confirm and judge_score is None:
            self.notify(f"{level} has no valid judge score to confirm: o changes it", severity="warning")
            return
        self.app.push_screen(
            ReviewDialog(level, judge_score, judgement.effective(level), confirm),
            lambda choice: self._review_chosen(level, choice),
        )

    def action_confirm(self) -> None:
        self._review(confirm=True)

    def action_change(self) -> None:
        self._review(confirm=False)

    def _review_chosen(self, level: Level, choice: object) -> None:
        if isinstance(choice, ReviewChoice) and self.material is not None:
            self.write_review(level, choice, self.material.rev)

    @work(thread=True, group="review-write", name="recording the review", exit_on_error=False)
    def write_review(self, level: Level, choice: ReviewChoice, rev: int) -> None:
        kind = self.material.kind if self.material is not None else None
        review = record_review(
            self.context.store,
            self.ref,
            level,
            reason=choice.reason,
            score=choice.score,
            author=choice.author,
            rev=rev,
            kind=kind,
        )
        self.post_message(
            ReviewRecorded(f"{level} {DONE[review.action]}: {review.score:g} (judge {_score(review.original_score)})")
        )

    def on_review_recorded(self, message: ReviewRecorded) -> None:
        self.notify(f"review recorded: {message.text}")
        self.load_review()

    def action_reload(self) -> None:
        """Read the log again (a verdict or review written by another process since)."""
        self.load_review()

    def action_back(self) -> None:
        self.app.pop_screen()


__all__ = ["HighlightedCode", "JudgeDialog", "JudgeSettings", "ReviewChoice", "ReviewDialog", "ReviewScreen"]
