"""`session new`: a session directory with its session.toml and a workspace whose first commit is the template."""

from __future__ import annotations

from datetime import UTC, datetime

from workbench.catalog import Catalog, GuidanceConfig, Task, render
from workbench.errors import UsageError
from workbench.session.config import DRIVERS, SessionConfig, collect_versions, new_session_id, write_config
from workbench.session.integrity import create_key
from workbench.session.layout import BRIEF_NAME, SessionRef
from workbench.session.store import SessionStore
from workbench.session.workspace import Workspace

PUBLIC_TASK_FILES = ("task.toml", "reference.py", "inputs.py", "template.py")  # plus the description
TEMPLATE_AUTHOR = "template"


def brief_text(task: Task, guidance_text: str, config: SessionConfig) -> str:
    """The task brief given to any driver: what to do, where, how it is judged, and the guidance."""
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


def workspace_files(task: Task, guidance_text: str, brief: str, solution: str) -> dict[str, str]:
    """The first commit: the template as the solution, the public task files, the brief. Never expert.py or a rubric."""
    files = {solution: task.file("template.py").read_text(encoding="utf-8"), BRIEF_NAME: brief}
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
    guidance: GuidanceConfig = "none",
    driver: str = "human",
    command: str | None = None,
    from_session: str | None = None,
    device: str = "cpu",
    workloads: list[str] | None = None,
    eval_timeout_s: float | None = None,
    unsandboxed: bool = False,
    now: datetime | None = None,
) -> SessionRef:
    """Validate the request, then write sessions/<id>/ (session.toml, workspace/). UsageError for bad input."""
    if driver not in DRIVERS:
        raise UsageError(f"unknown driver {driver!r}; expected one of: {', '.join(DRIVERS)}")
    if driver == "command" and not (command and command.strip()):
        raise UsageError("--driver command needs --command CMD (the shell command to run in the workspace)")
    if driver != "command" and command:
        raise UsageError("--command is only for --driver command")
    if driver != "command" and unsandboxed:
        raise UsageError("--unsandboxed is only for --driver command")
    if driver == "command" and not unsandboxed:
        from workbench.harness import sandbox

        info = sandbox.status(device)
        if info.kind == "none":
            raise UsageError(
                f"the command driver's sandbox cannot start here ({info.detail}); pass --unsandboxed "
                "to run the command without one (recorded in session.toml)"
            )
    if driver == "replay" and not from_session:
        raise UsageError("--driver replay needs --from SESSION (the recorded session to replay)")
    if driver != "replay" and from_session:
        raise UsageError("--from is only for --driver replay")
    task = catalog.task(task_id)  # CatalogError names the known tasks
    if from_session:
        source = store.load(store.resolve(from_session)).config
        if source.task != task.id:
            raise UsageError(f"session {source.id} is a {source.task} session, not {task.id}")
        from_session = source.id
    for name in workloads or []:
        task.workload(name)  # UsageError naming the known workloads
    guidance_text = ""
    if guidance != "none":
        shipped = catalog.guidance(task.id)
        if shipped is None:
            raise UsageError(f"task {task.id} ships no guidance; use --guidance none")
        guidance_text = render(shipped, guidance)
    created = (now or datetime.now(UTC)).astimezone(UTC).replace(microsecond=0)
    config = SessionConfig(
        id=new_session_id(task.id, created),
        task=task.id,
        guidance=guidance,
        driver=driver,
        command=command,
        from_session=from_session,
        device=device,
        workloads=workloads or None,
        eval_timeout_s=eval_timeout_s,
        created=created,
        versions=collect_versions(),
        unsandboxed=unsandboxed,
    )
    session_dir = store.root / config.id
    session_dir.mkdir(parents=True, exist_ok=False)
    create_key(session_dir)
    write_config(session_dir, config)
    brief = brief_text(task, guidance_text, config)
    Workspace.create(
        session_dir / "workspace",
        workspace_files(task, guidance_text, brief, config.solution),
        TEMPLATE_AUTHOR,
        f"template of {task.id}",
    )
    return SessionRef(config.id, session_dir)
