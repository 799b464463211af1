"""The agent's tools, confined to the session's workspace.

Code mode: list_files, read_file, write_file, edit_file, run_tests, benchmark, profile, submit.
Design mode: list_files, read_file, submit_design.

Paths are relative to the workspace. Absolute paths, `..`, anything under `.git`, and symlinks whose
target lies outside the workspace are refused (the path is resolved, symlinks followed, before the check).
Every write is one revision, committed at once and queued for evaluation (`DriverContext.write_files`).
`run_tests` and `benchmark` report the evaluation of the revision that holds the workspace as it is (the
harness evaluates every revision as it lands; they wait for that one). A tool never raises for the
model's mistakes: bad arguments, missing files and refused paths are error results (`ToolOutcome.ok`
False) with a message that says what to do instead.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from workbench.agent.design import DESIGN_SCHEMA_HINT, tool_parameters, validate_design
from workbench.catalog import Task
from workbench.llm import ToolSpec
from workbench.session.create import DESIGN_FILE
from workbench.session.drivers import DriverContext
from workbench.session.state import RevisionState

if TYPE_CHECKING:
    import threading

Mode = Literal["code", "design"]
MAX_OUTPUT = 16_000  # characters of one tool result; longer ones keep their head and tail
MAX_WRITE = 1_000_000  # characters one write_file may write
WAIT_STEP_S = 1.0


class ToolError(Exception):
    """The tool could not do what was asked; the message goes back to the model as an error result."""


class Stopped(Exception):
    """The session is being stopped while the tool waited; its result is not logged (a resume runs it again)."""


class Profiler(Protocol):
    """What the profile tool runs (`profile.SandboxedProfiler` on GPU sessions; none elsewhere)."""

    def profile(self, task: Task, solution: Path, workload: str, stop: threading.Event) -> str:
        """The profile's text; ToolError when it cannot be made, Stopped when the session is stopped."""
        ...


@dataclass(frozen=True)
class ToolOutcome:
    """A tool's result: its text, whether it succeeded, and for submit/submit_design why the agent's work ends."""

    content: str
    ok: bool = True
    ends: str | None = None


def truncate(text: str, limit: int = MAX_OUTPUT) -> str:
    """The text, or its head and tail with a marker saying how much of the middle was cut."""
    if len(text) <= limit:
        return text
    keep = limit - 200
    head, tail = text[: keep // 2], text[len(text) - keep // 2 :]
    cut = len(text) - len(head) - len(tail)
    lines = text.count("\n", len(head), len(text) - len(tail))
    return f"{head}\n[... {cut} characters ({lines} lines) cut from the middle of this output ...]\n{tail}"


# ---- arguments -----------------------------------------------------------------------------------


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


class NoArgs(_Args):
    pass


class ReadFileArgs(_Args):
    path: str = Field(min_length=1)
    start_line: int | None = Field(default=None, ge=1)
    end_line: int | None = Field(default=None, ge=1)


class WriteFileArgs(_Args):
    path: str = Field(min_length=1)
    content: str = Field(max_length=MAX_WRITE)


class EditFileArgs(_Args):
    path: str = Field(min_length=1)
    old: str = Field(min_length=1)
    new: str


class WorkloadsArgs(_Args):
    workloads: list[str] | None = None


class ProfileArgs(_Args):
    workload: str | None = None


class SubmitArgs(_Args):
    note: str | None = None


class SubmitDesignArgs(_Args):
    design: Any


def _string(description: str) -> dict[str, Any]:
    return {"type": "string", "description": description}


def _object(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


WORKLOADS = {
    "type": "array",
    "items": {"type": "string"},
    "description": "Report only these workloads (default: all the session evaluates).",
}
SPECS: dict[str, tuple[str, dict[str, Any], type[_Args]]] = {
    "list_files": ("List the workspace's files (relative paths and sizes).", _object({}, []), NoArgs),
    "read_file": (
        "Read a workspace file with numbered lines; start_line/end_line (1-based, inclusive) select a range.",
        _object(
            {
                "path": _string("Path relative to the workspace, e.g. solution.py or task/reference.py."),
                "start_line": {"type": "integer", "minimum": 1, "description": "First line to show (default 1)."},
                "end_line": {"type": "integer", "minimum": 1, "description": "Last line to show (default: the end)."},
            },
            ["path"],
        ),
        ReadFileArgs,
    ),
    "write_file": (
        "Write a whole workspace file (created or replaced). Every write is a revision, committed and queued for "
        "evaluation at once; run_tests waits for its result.",
        _object(
            {"path": _string("Path relative to the workspace."), "content": _string("The file's complete new content.")},
            ["path", "content"],
        ),
        WriteFileArgs,
    ),
    "edit_file": (
        "Replace one exact, unique occurrence of `old` by `new` in a workspace file (whitespace matters). The edit is "
        "a revision, like write_file.",
        _object(
            {
                "path": _string("Path relative to the workspace."),
                "old": _string("The exact text to replace; it must occur exactly once."),
                "new": _string("The replacement text."),
            },
            ["path", "old", "new"],
        ),
        EditFileArgs,
    ),
    "run_tests": (
        "Check correctness through the evaluation harness: the workspace as it is becomes a revision (if it changed) "
        "and its evaluation is reported per workload (status, error against the tolerance, the failure's message).",
        _object({"workloads": WORKLOADS}, []),
        WorkloadsArgs,
    ),
    "benchmark": (
        "Latency and speedup against the PyTorch reference per workload, from the same evaluation as run_tests "
        "(GPU sessions only: the CPU runs kernels under the Triton interpreter and times nothing).",
        _object({"workloads": WORKLOADS}, []),
        WorkloadsArgs,
    ),
    "profile": (
        "Per-kernel device times (torch.profiler) and each Triton kernel's registers, spills and shared memory, for the "
        "current solution on one workload (GPU sessions only).",
        _object({"workload": _string("The workload to profile (default: the first the session evaluates).")}, []),
        ProfileArgs,
    ),
    "submit": (
        "End your work on the task. The session's submission is the passing revision with the highest geometric-mean "
        "speedup (on the CPU, the last passing one), so make sure your best revision passed.",
        _object({"note": _string("Optional: a short note on what you submit.")}, []),
        SubmitArgs,
    ),
    "submit_design": (
        "Submit your design proposal (once it is valid, the session ends). " + DESIGN_SCHEMA_HINT,
        tool_parameters(),
        SubmitDesignArgs,
    ),
}
CODE_TOOLS = ("list_files", "read_file", "write_file", "edit_file", "run_tests", "benchmark", "profile", "submit")
DESIGN_TOOLS = ("list_files", "read_file", "submit_design")


def tool_names(mode: Mode) -> tuple[str, ...]:
    return CODE_TOOLS if mode == "code" else DESIGN_TOOLS


def tool_specs(mode: Mode) -> list[ToolSpec]:
    """The tools offered to the model in this mode, in a fixed order (the prompt prefix never changes)."""
    return [ToolSpec(name=name, description=SPECS[name][0], parameters=SPECS[name][1]) for name in tool_names(mode)]


def _validation_message(exc: ValidationError) -> str:
    parts = []
    for error in exc.errors(include_url=False):
        where = ".".join(str(p) for p in error["loc"]) or "arguments"
        parts.append(f"{where}: {error['msg']}")
    return "; ".join(parts)


# ---- the toolbox ---------------------------------------------------------------------------------


class ToolBox:
    """The tools of one agent session, bound to its driver context."""

    def __init__(
        self,
        ctx: DriverContext,
        mode: Mode,
        workloads: list[str],
        task: Task | None = None,
        profiler: Profiler | None = None,
        registered_workloads: list[str] | None = None,
    ) -> None:
        self.ctx = ctx
        self.mode = mode
        self.root = ctx.workspace.resolve()
        self.workloads = workloads  # the workloads every revision is evaluated on
        self.registered = registered_workloads or workloads  # the task's registered (GPU) workloads
        self.task = task
        self.profiler = profiler
        self.names = tool_names(mode)
        self.handlers: dict[str, Callable[[Any], ToolOutcome]] = {
            "list_files": self.list_files,
            "read_file": self.read_file,
            "write_file": self.write_file,
            "edit_file": self.edit_file,
            "run_tests": self.run_tests,
            "benchmark": self.benchmark,
            "profile": self.profile,
            "submit": self.submit,
            "submit_design": self.submit_design,
        }

    @property
    def specs(self) -> list[ToolSpec]:
        return tool_specs(self.mode)

    def call(self, name: str, arguments: dict[str, Any] | None, raw_arguments: str = "") -> ToolOutcome:
        """Run one tool call; every mistake of the model is an error result. Raises only Stopped."""
        if name not in self.names:
            return ToolOutcome(f"unknown tool {name!r}; the tools are: {', '.join(self.names)}", ok=False)
        if arguments is None:
            shown = raw_arguments if len(raw_arguments) <= 300 else raw_arguments[:300] + "..."
            return ToolOutcome(f"the arguments of {name} were not a JSON object: {shown!r}", ok=False)
        try:
            parsed = SPECS[name][2].model_validate(arguments)
        except ValidationError as exc:
            return ToolOutcome(f"bad arguments for {name}: {_validation_message(exc)}", ok=False)
        try:
            outcome = self.handlers[name](parsed)
        except ToolError as exc:
            return ToolOutcome(str(exc), ok=False)
        except (OSError, UnicodeError) as exc:
            return ToolOutcome(f"{name} failed: {type(exc).__name__}: {exc}", ok=False)
        return outcome

    # ---- paths ---------------------------------------------------------------------------------

    def resolve(self, raw: str) -> tuple[Path, str]:
        """The absolute path inside the workspace and its workspace-relative name, or ToolError."""
        if "\x00" in raw:
            raise ToolError("a path may not hold a NUL character")
        pure = PurePosixPath(raw.strip())
        if pure.is_absolute() or raw.strip().startswith("~"):
            raise ToolError(f"{raw!r} is an absolute path; give a path relative to the workspace (e.g. solution.py)")
        if ".." in pure.parts:
            raise ToolError(f"{raw!r} uses '..'; paths must stay inside the workspace")
        target = Path(os.path.realpath(self.root / pure))
        if target != self.root and not target.is_relative_to(self.root):
            raise ToolError(f"{raw!r} points outside the workspace (a symlink to {target}); it is not accessible")
        relative = target.relative_to(self.root)
        if relative.parts and relative.parts[0] == ".git":
            raise ToolError(f"{raw!r} is inside .git, which is not accessible (the session's history is kept by the runner)")
        return target, relative.as_posix()

    # ---- reading -------------------------------------------------------------------------------

    def list_files(self, _: NoArgs) -> ToolOutcome:
        lines = []
        for folder, dirs, files in os.walk(self.root):
            links = [d for d in dirs if (Path(folder) / d).is_symlink()]  # listed, never walked into
            dirs[:] = sorted(d for d in dirs if d not in (".git", "__pycache__") and d not in links)
            for name in sorted([*files, *links]):
                path = Path(folder) / name
                relative = path.relative_to(self.root).as_posix()
                if path.is_symlink():
                    lines.append(f"{relative} -> {path.readlink()}")
                    continue
                lines.append(f"{relative}  ({path.stat().st_size} bytes)")
        return ToolOutcome("\n".join(lines) if lines else "(the workspace is empty)")

    def read_file(self, args: ReadFileArgs) -> ToolOutcome:
        target, name = self.resolve(args.path)
        if target.is_dir():
            raise ToolError(f"{name or '.'} is a folder; list_files shows the files")
        if not target.is_file():
            raise ToolError(f"{name} does not exist; list_files shows the files")
        lines = target.read_text(encoding="utf-8", errors="replace").splitlines()
        start = args.start_line or 1
        end = min(args.end_line or len(lines), len(lines))
        if args.end_line is not None and args.end_line < start:
            raise ToolError(f"end_line {args.end_line} is before start_line {start}")
        if not lines:
            return ToolOutcome(f"{name} is empty")
        if start > len(lines):
            raise ToolError(f"{name} has {len(lines)} lines; start_line {start} is past its end")
        width = len(str(end))
        body = "\n".join(f"{n:>{width}}  {lines[n - 1]}" for n in range(start, end + 1))
        header = f"{name}: lines {start}-{end} of {len(lines)}"
        return ToolOutcome(f"{header}\n{body}")

    # ---- writing -------------------------------------------------------------------------------

    def _commit_file(self, name: str, content: str, what: str) -> str:
        errors = len(self.ctx.state().errors)
        rev = self.ctx.write_files({name: content.encode("utf-8")}, f"{what} {name}")
        if rev is None:
            refused = [e for e in self.ctx.state().errors[errors:] if e.where == "commit"]
            if refused:  # e.g. the content holds the value of a secret environment variable
                raise ToolError(refused[-1].message)
            return f"{name} unchanged (the same content as before): no new revision"
        return f"revision {rev}: {what} {name} ({len(content.encode('utf-8'))} bytes); queued for evaluation"

    def write_file(self, args: WriteFileArgs) -> ToolOutcome:
        target, name = self.resolve(args.path)
        if not name:
            raise ToolError("give a file's path, not the workspace itself")
        if target.is_dir():
            raise ToolError(f"{name} is a folder")
        return ToolOutcome(self._commit_file(name, args.content, "wrote"))

    def edit_file(self, args: EditFileArgs) -> ToolOutcome:
        target, name = self.resolve(args.path)
        if not target.is_file():
            raise ToolError(f"{name or '.'} is not a file; list_files shows the files")
        text = target.read_text(encoding="utf-8")
        count = text.count(args.old)
        if count == 0:
            raise ToolError(
                f"`old` was not found in {name} (it must match exactly, whitespace included); read_file shows the text"
            )
        if count > 1:
            starts, at = [], -1
            for _ in range(count):
                at = text.index(args.old, at + 1)
                starts.append(text.count("\n", 0, at) + 1)
            lines = ", ".join(str(n) for n in starts[:10])
            raise ToolError(f"`old` occurs {count} times in {name} (at lines {lines}); include more context so that it is unique")
        return ToolOutcome(self._commit_file(name, text.replace(args.old, args.new, 1), "edited"))

    # ---- evaluation ----------------------------------------------------------------------------

    def evaluated_revision(self, why: str) -> RevisionState:
        """Commit the workspace as it is (when it changed) and wait for that revision's evaluation; with
        nothing changed, the last revision's. Raises Stopped when the session is stopped meanwhile."""
        rev = self.ctx.commit(why)
        state = self.ctx.state()
        if rev is None:
            known = list(state.revisions)
            if not known:
                raise ToolError("the workspace has no revision yet")
            rev = max(known)
        while True:
            revision = state.revisions[rev]
            if revision.skip_reason == "template":
                raise ToolError(
                    f"the workspace is still the task's template (revision {rev}), whose run raises NotImplementedError: "
                    "there is nothing to evaluate yet. Write your kernel into the solution file first."
                )
            if revision.eval_state == "skipped" and revision.superseded_by is not None:
                rev = revision.superseded_by
                continue
            if revision.eval_state == "finished":
                return revision
            if self.ctx.stop.is_set():
                raise Stopped
            self.ctx.wait_evaluated(rev, WAIT_STEP_S)

    def _chosen(self, requested: list[str] | None) -> list[str]:
        if not requested:
            return self.workloads
        unknown = [w for w in requested if w not in self.workloads]
        if unknown:
            raise ToolError(f"unknown workload(s) {', '.join(unknown)}; this session evaluates: {', '.join(self.workloads)}")
        return requested

    def run_tests(self, args: WorkloadsArgs) -> ToolOutcome:
        wanted = self._chosen(args.workloads)
        revision = self.evaluated_revision("run_tests")
        return ToolOutcome(correctness_text(revision, wanted, self.ctx.config.device))

    def benchmark(self, args: WorkloadsArgs) -> ToolOutcome:
        if self.ctx.config.device == "cpu":
            raise ToolError(
                "benchmark needs a GPU session: timing needs a GPU, and this session evaluates on the CPU under the Triton "
                "interpreter, where nothing is timed. run_tests checks correctness here."
            )
        wanted = self._chosen(args.workloads)
        revision = self.evaluated_revision("benchmark")
        return ToolOutcome(timing_text(revision, wanted))

    def profile(self, args: ProfileArgs) -> ToolOutcome:
        if self.ctx.config.device == "cpu" or self.profiler is None or self.task is None:
            raise ToolError(
                "profile needs a GPU session: it reads per-kernel device times and the compiled kernels' registers, "
                "spills and shared memory, none of which exist when this session runs kernels on the CPU under the "
                "Triton interpreter. run_tests checks correctness here."
            )
        workload = args.workload or self.workloads[0]
        if workload not in self.registered and workload not in self.workloads:
            known = list(dict.fromkeys([*self.workloads, *self.registered]))
            raise ToolError(f"unknown workload {workload!r}; known: {', '.join(known)}")
        rev = self.ctx.commit("profile")
        state = self.ctx.state()
        rev = rev if rev is not None else max(list(state.revisions))
        solution = self.root / self.ctx.config.solution
        if not solution.is_file():
            raise ToolError(f"{self.ctx.config.solution} does not exist; write it first")
        text = self.profiler.profile(self.task, solution, workload, self.ctx.stop)
        return ToolOutcome(f"profile of revision {rev} ({self.ctx.config.solution}) on {workload}\n{text}")

    # ---- ending --------------------------------------------------------------------------------

    def submit(self, args: SubmitArgs) -> ToolOutcome:
        rev = self.ctx.commit("submit")
        note = f" ({args.note.strip()})" if args.note and args.note.strip() else ""
        committed = f" The last edits became revision {rev}." if rev is not None else ""
        text = (
            f"Submitted{note}.{committed} Your work on the task ends here: the runner finishes the queued evaluations "
            "and submits the passing revision with the highest geometric-mean speedup (on the CPU, the last passing one)."
        )
        return ToolOutcome(text, ends=f"the agent submitted{note}")

    def submit_design(self, args: SubmitDesignArgs) -> ToolOutcome:
        data = args.design
        if isinstance(data, str):  # some models send the object as a JSON string
            try:
                data = json.loads(data)
            except ValueError:
                raise ToolError("design must be a JSON object (it was a string that is not JSON)") from None
        design, problems = validate_design(data, self.registered)
        if design is None:
            shown = "\n".join(f"- {p}" for p in problems[:60])
            more = f"\n(and {len(problems) - 60} more)" if len(problems) > 60 else ""
            raise ToolError(f"the design is not valid ({len(problems)} problem(s)); fix them and submit again:\n{shown}{more}")
        text = json.dumps(design.model_dump(mode="json"), indent=2, ensure_ascii=False) + "\n"
        rev = self.ctx.write_files({DESIGN_FILE: text.encode("utf-8")}, "the agent's design proposal")
        where = f"revision {rev}" if rev is not None else "unchanged from the last revision"
        return ToolOutcome(
            f"The design is valid and saved as {DESIGN_FILE} ({where}). The session ends.",
            ends=f"the agent submitted a valid design ({DESIGN_FILE})",
        )


# ---- reports as the model reads them -------------------------------------------------------------


def _header(revision: RevisionState) -> str:
    report = revision.report
    assert report is not None
    return f"revision {revision.rev} ({revision.sha[:10]}): {report.status}"


def _workload_filter(revision: RevisionState, wanted: list[str]) -> list[Any]:
    report = revision.report
    assert report is not None
    return [w for w in report.workloads if w.name in wanted] or list(report.workloads)


def correctness_text(revision: RevisionState, wanted: list[str], device: str) -> str:
    report = revision.report
    assert report is not None
    lines = [_header(revision)]
    for w in _workload_filter(revision, wanted):
        err = ""
        if w.rel_err is not None and w.error_bound is not None:
            relation = "<=" if w.rel_err <= w.error_bound else ">"
            err = f", error {w.rel_err:.3g} {relation} bound {w.error_bound:.3g}"
        if w.law_text():
            err += f", {w.law_text()}"
        trials = f", {w.trials} checked call(s)" if w.trials else ""
        lines.append(f"  {w.name}: {w.status}{err}{trials}" + (f": {w.message.strip()}" if w.message.strip() else ""))
    if report.violations:
        lines.append("rules broken:")
        lines += [f"  - {v.describe()}" for v in report.violations]
    if report.message.strip() and not report.passed:
        lines += ["message:", report.message.strip()]
    if report.passed:
        timing = "no timing on the CPU" if device == "cpu" else "benchmark shows its latency and speedup"
        lines.append(f"every workload is within the tolerance ({timing})")
    return "\n".join(lines)


def timing_text(revision: RevisionState, wanted: list[str]) -> str:
    report = revision.report
    assert report is not None
    if not report.passed:
        return f"{_header(revision)}: a revision that fails is not timed; run_tests shows why.\n" + correctness_text(
            revision, wanted, report.device
        )
    lines = [_header(revision)]
    for w in _workload_filter(revision, wanted):
        if w.latency_ms is None:
            lines.append(f"  {w.name}: not timed" + (f" ({w.timing_note})" if w.timing_note else ""))
            continue
        reference = f", reference {w.reference_ms:.4f} ms" if w.reference_ms is not None else ""
        speedup = f", speedup {w.speedup:.3f}x" if w.speedup is not None else ""
        spread = f" (min {w.latency.min_ms:.4f}, {w.latency.reps} calls)" if w.latency is not None else ""
        lines.append(f"  {w.name}: {w.latency_ms:.4f} ms{spread}{reference}{speedup}")
    geomean = report.geomean_speedup()
    if geomean is not None:
        lines.append(f"geometric-mean speedup over all workloads: {geomean:.3f}x")
    return "\n".join(lines)
