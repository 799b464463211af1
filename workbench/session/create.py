"""`session new`: a session directory with its session.toml and a workspace whose first commit is the template."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path

from workbench.catalog import Catalog, GuidanceConfig, Task, render
from workbench.catalog.imported import IMPORTED_LABEL, import_record
from workbench.errors import SessionError, UsageError
from workbench.harness.host import sandbox
from workbench.session.command_paths import command_paths
from workbench.session.config import (
    CommandConfig,
    DriverConfig,
    HumanConfig,
    ReplayConfig,
    SessionConfig,
    collect_versions,
    new_session_id,
    write_config,
)
from workbench.session.integrity import create_key
from workbench.session.layout import BRIEF_NAME, SessionRef
from workbench.session.store import SessionStore
from workbench.session.workspace import Workspace

PUBLIC_TASK_FILES = ("task.toml", "reference.py", "inputs.py", "template.py")  # plus the description
TEMPLATE_AUTHOR = "template"


DESIGN_FILE = "model_design.json"  # where a design session's proposal lands (the agent's submit_design)


def design_brief_text(task: Task, guidance_text: str) -> str:
    """The brief of a design session (the agent's design mode): propose a design, write no code."""
    spec = task.spec
    parts = [
        f"# Task {spec.id}: {spec.title}: propose a design",
        "",
        "Propose a design for an efficient Triton implementation of this task; do not write code. Nothing is",
        "evaluated in this session. The task's public files are under `task/`"
        + (" and the expert design guidance is in `task/guidance.md`." if guidance_text else ".")
        + " Submit the design once with `submit_design`: L1 entries (each algorithmic change and its",
        "correctness, performance and dataflow consequences), L2 stages and edges (placement, layout, ownership,",
        "lifetimes, reuse, parallelism at the registered shapes, adoption checks) and L3 mechanisms tied to",
        f"the L1/L2 items they serve (with their pitfalls and what must be measured). It is saved as `{DESIGN_FILE}`.",
        "",
        "## Requirements an implementation of the design must meet",
        "",
        *(f"- {line}" for line in spec.requirements),
        "",
        "## Registered workloads",
        "",
        *(f"- `{w.name}`: " + ", ".join(f"{k}={v}" for k, v in w.axes.items()) for w in spec.workloads),
        "",
        "## Description",
        "",
        task.description_text().strip(),
        "",
    ]
    if guidance_text:
        parts += [guidance_text.strip(), ""]
    return "\n".join(parts)


def brief_text(task: Task, guidance_text: str, config: SessionConfig) -> str:
    """The task brief given to any driver: what to do, where, how it is judged, and the guidance."""
    if config.design_mode:
        return design_brief_text(task, guidance_text)
    spec = task.spec
    where = (
        "on the CPU under the Triton interpreter (smoke workloads, no timing)"
        if config.device == "cpu"
        else (f"on {config.device} (correctness, then latency against the PyTorch reference)")
    )
    parts = [
        f"# Task {spec.id}: {spec.title}",
        "",
        f"Write `{config.solution}` in this folder: a Python module whose `run(...)` implements the task with",
        "Triton kernels. It starts as the task's template. Every change you save is committed as a revision",
        f"and evaluated {where}. The task's public files are under `task/`"
        + (" and the expert design guidance is in `task/guidance.md`." if guidance_text else "."),
        "",
        "## Requirements",
        "",
        *(f"- {line}" for line in spec.requirements),
        "",
        "## Description",
        "",
        task.description_text().strip(),
        "",
    ]
    if guidance_text:
        parts += [guidance_text.strip(), ""]
    return "\n".join(parts)


def workspace_files(task: Task, guidance_text: str, brief: str, solution: str | None) -> dict[str, str]:
    """The first commit: the template as the solution (none in a design session: `solution` None), the
    public task files, the brief. Never expert.py or a rubric."""
    files = {BRIEF_NAME: brief}
    if solution is not None:
        files[solution] = task.file("template.py").read_text(encoding="utf-8")
    for name in (*PUBLIC_TASK_FILES, task.spec.description):
        files[f"task/{name}"] = task.file(name).read_text(encoding="utf-8")
    if guidance_text:
        files["task/guidance.md"] = guidance_text
    return files


def create_session(
    store: SessionStore,
    catalog: Catalog,
    task_id: str,
    *,
    guidance: GuidanceConfig | None = None,
    driver: DriverConfig | None = None,
    device: str = "cpu",
    workloads: list[str] | None = None,
    eval_timeout_s: float | None = None,
    now: datetime | None = None,
    session_id: str | None = None,
    repetition: int | None = None,
    rerun_of: str | None = None,
) -> SessionRef:
    """Validate the request, then write sessions/<id>/ (session.toml, workspace/). UsageError for bad input.

    `guidance`: the configuration (default "none"); a replay keeps the recorded session's, and any other
    value is refused (the replay would be labelled with guidance it never had).
    `driver`: the driver and its settings (default: a human); its fields were validated when it was built
    (`session.options.driver_from_options` for the CLI and the launch dialog). `session_id`: a chosen id
    instead of a new one (a campaign names its sessions after their cell); the directory is made
    exclusively, so of two processes creating the same id one gets FileExistsError. `repetition`: which
    repetition of its configuration the session is (a campaign's); reports average over repetitions.
    `rerun_of`: the session this one reruns with changes (recorded; it must exist and be of the same task)."""
    driver = driver or HumanConfig()
    task = catalog.task(task_id)  # CatalogError names the known tasks
    if rerun_of is not None:
        origin = store.load(store.resolve(rerun_of)).config
        if origin.task != task.id:
            raise UsageError(f"session {origin.id} is a {origin.task} session: a rerun keeps the task, not {task.id}")
        rerun_of = origin.id
    if isinstance(driver, CommandConfig) and not driver.unsandboxed:
        info = sandbox.status(device)
        if info.kind == "none":
            raise UsageError(
                f"the command driver's sandbox cannot start here ({info.detail}); pass --unsandboxed "
                "to run the command without one (recorded in session.toml)"
            )
        home = Path.home()
        hidden = [p for p in sandbox.default_hidden([store.root, catalog.tasks_dir, catalog.guidance_dir]) if p != home]
        names = ["solution.py", "task", BRIEF_NAME, ".git"]  # what the workspace will hold
        found = command_paths(driver.command, hidden=hidden, home=home, cwd=Path.cwd(), workspace_names=names)
        if found.problems:
            raise UsageError("the command would not find its files in its sandbox: " + "; ".join(found.problems))
    if isinstance(driver, ReplayConfig):
        source = store.load(store.resolve(driver.from_session)).config
        if source.task != task.id:
            raise UsageError(f"session {source.id} is a {source.task} session, not {task.id}")
        if guidance is not None and guidance != source.guidance:
            raise UsageError(
                f"a replay keeps the recorded session's guidance: {source.id} ran with {source.guidance}, not {guidance} "
                "(leave --guidance out)"
            )
        guidance = source.guidance
        driver = ReplayConfig(from_session=source.id)
    guidance = guidance or "none"
    for name in workloads or []:
        task.workload(name)  # UsageError naming the known workloads
    guidance_text = ""
    if guidance != "none":
        shipped = catalog.guidance(task.id)
        if shipped is None:
            if import_record(task) is not None:
                raise UsageError(f"task {task.id} is imported ({IMPORTED_LABEL}): only --guidance none runs on it")
            raise UsageError(f"task {task.id} ships no guidance; use --guidance none")
        guidance_text = render(shipped, guidance)
    created = (now or datetime.now(UTC)).astimezone(UTC).replace(microsecond=0)
    config = SessionConfig(
        id=session_id or new_session_id(task.id, created),
        task=task.id,
        guidance=guidance,
        driver_config=driver,
        device=device,
        workloads=workloads or None,
        eval_timeout_s=eval_timeout_s,
        created=created,
        versions=collect_versions(),
        repetition=repetition,
        rerun_of=rerun_of,
        imported_from=record.origin() if (record := import_record(task)) is not None else None,
    )
    session_dir = store.root / config.id
    try:
        session_dir.mkdir(parents=True, exist_ok=False)
    except FileExistsError:
        raise  # two processes made the same id: the caller's to handle (a campaign's retry)
    except OSError as exc:  # a read-only or full sessions folder, a file in the way: the user's to fix
        raise SessionError(f"cannot create the session in {store.root}: {exc.strerror or exc} (see --sessions-dir)") from None
    try:
        create_key(session_dir)
        write_config(session_dir, config)
        brief = brief_text(task, guidance_text, config)
        Workspace.create(
            session_dir / "workspace",
            workspace_files(task, guidance_text, brief, None if config.design_mode else config.solution),
            TEMPLATE_AUTHOR,
            f"template of {task.id}",
        )
    except (OSError, SessionError) as exc:  # nothing half-made is left behind
        shutil.rmtree(session_dir, ignore_errors=True)
        if isinstance(exc, SessionError):
            raise
        raise SessionError(f"cannot write the session {session_dir}: {exc.strerror or exc}") from None
    return SessionRef(config.id, session_dir)
