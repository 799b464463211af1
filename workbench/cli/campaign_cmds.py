"""`campaign plan | run | status`: the paper's experiment matrix from one campaign file (workbench/campaign/)."""

from __future__ import annotations

import json
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from workbench.cli.common import EXIT_FAILED, EXIT_OK, GuidanceDir, TasksDir, catalog, fail, stdout, user_errors, write_stdout

if TYPE_CHECKING:
    from workbench.campaign.plan import Unit
    from workbench.campaign.scheduler import Snapshot
    from workbench.campaign.spec import Campaign

campaign_app = typer.Typer(help="Run a matrix of agent sessions (models x tasks x guidance) to the end, resumably.")

FileArg = Annotated[Path, typer.Argument(metavar="FILE", help="The campaign file (TOML).")]


def _load(path: Path, tasks_dir: Path | None, guidance_dir: Path | None) -> tuple[Campaign, list[Unit]]:
    from workbench.campaign.plan import expand
    from workbench.campaign.spec import load_campaign

    campaign = load_campaign(path)
    return campaign, expand(campaign, catalog(tasks_dir, guidance_dir))


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    seconds = int(seconds)
    hours, rest = divmod(seconds, 3600)
    return f"{hours}h{rest // 60:02d}m" if hours else f"{rest // 60}m{rest % 60:02d}s"


@campaign_app.command("plan")
def plan_cmd(file: FileArg, tasks_dir: TasksDir = None, guidance_dir: GuidanceDir = None) -> None:
    """Print the sessions the campaign would run (those already finished marked) and an estimate of their cost
    and GPU hours, from the file's [estimate] assumptions (a fraction of max_turns per session, tokens and GPU
    seconds per turn). Nothing is run or written."""
    from rich.table import Table

    from workbench.campaign.plan import estimate
    from workbench.campaign.status import campaign_status

    with user_errors():
        campaign, units = _load(file, tasks_dir, guidance_dir)
        rows = {r.unit.key: r for r in campaign_status(campaign, units).rows}
    judge = campaign.spec.judge
    judged_by = f"; judged by {judge.provider} {judge.model}" if judge is not None else ""
    table = Table(title=f"campaign {campaign.name}: {len(units)} session(s) in {campaign.sessions_dir}{judged_by}")
    columns = ["session", "kind", "gpu", "state", "est. $", *(["est. judge $"] if judge else []), "est. GPU h"]
    for column in columns:
        table.add_column(column, justify="right" if column.startswith("est") else "left")
    session_usd: float | None = 0.0
    judge_usd: float | None = 0.0
    total_gpu = 0.0
    left = judge_runs = 0
    for unit in units:
        guess = estimate(campaign, unit)
        row = rows[unit.key]
        state = row.state
        todo = state not in ("finished", "judged", "gave_up")
        judge_todo = guess.judged and state not in {"judged", "gave_up"}  # a finished session is judged next
        if state == "finished" and row.status.attempt_failed:  # a failed attempt scores 0 without a model call
            guess = replace(guess, judge_usd=0.0)
        left += todo
        judge_runs += judge_todo
        if todo:
            total_gpu += guess.gpu_hours
            session_usd = None if session_usd is None or guess.usd is None else session_usd + guess.usd
        if judge_todo:
            judge_usd = None if judge_usd is None or guess.judge_usd is None else judge_usd + guess.judge_usd
        cells = [unit.session_id, unit.kind, "yes" if unit.needs_gpu and campaign.spec.device == "cuda" else "no", state]
        cells.append(_usd(guess.usd))
        if judge:
            cells.append(_usd(guess.judge_usd) if judge_todo else "-")
        table.add_row(*cells, f"{guess.gpu_hours:.2f}")
    console = stdout()
    console.print(table)
    total = None if session_usd is None or (judge_runs and judge_usd is None) else session_usd + (judge_usd or 0.0)
    cost = "n/a (a model has no price)" if total is None else f"${total:,.2f}"
    if judge is not None:
        cost += f" (sessions {_usd_total(session_usd)}, {judge_runs} judge run(s) {_usd_total(judge_usd)})"
    console.print(f"left to run: {left} of {len(units)} session(s); estimated cost {cost}, GPU time {total_gpu:.1f} h")


def _usd(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def _usd_total(value: float | None) -> str:
    return "n/a" if value is None else f"${value:,.2f}"


class _Live:
    """The live progress display: counts, elapsed, estimated remaining, spend, the latest ended job."""

    def __init__(self, name: str) -> None:
        import sys

        from rich.live import Live

        self.name = name
        self.tty = sys.stdout.isatty()
        self.live = Live(refresh_per_second=2, console=stdout(), transient=False) if self.tty else None
        self.last_job = ""
        self.last_print = 0.0

    def line(self, s: Snapshot) -> str:
        from workbench.campaign.status import usd

        return (
            f"campaign {self.name}: {s.done}/{s.total} done"
            + (f" ({s.failed_attempts} failed attempt(s), scored 0)" if s.failed_attempts else "")
            + f", {s.running} running, {s.queued} queued, {s.failed} given up"
            + (f", {s.elsewhere} run elsewhere" if s.elsewhere else "")
            + f" | elapsed {_duration(s.elapsed)}, remaining ~{_duration(s.remaining_s())} | spend {usd(s.spend_usd)}"
        )

    def __call__(self, s: Snapshot) -> None:
        text = self.line(s) + (f"\n  last: {s.last}" if s.last else "")
        if self.live is not None:
            self.live.update(text)
            return
        if s.last != self.last_job or time.time() - self.last_print > 5:  # a job ended, or a heartbeat
            write_stdout(text.replace("\n  ", " | ") + "\n")
            self.last_job, self.last_print = s.last, time.time()

    def __enter__(self) -> _Live:
        if self.live is not None:
            self.live.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.live is not None:
            self.live.stop()


@campaign_app.command("run")
def run_cmd(
    file: FileArg,
    executor: Annotated[str, typer.Option("--executor", help="local (processes here) or ray.")] = "local",
    address: Annotated[
        str | None,
        typer.Option("--address", help="Ray: an existing cluster (ray://head:10001, or auto); default: a local instance."),
    ] = None,
    retry_failed: Annotated[
        bool, typer.Option("--retry-failed", help="Give sessions the campaign gave up on their retries again.")
    ] = False,
    tasks_dir: TasksDir = None,
    guidance_dir: GuidanceDir = None,
) -> None:
    """Run every session of the campaign that is not finished, with a live progress display.

    Local executor: one coding session per GPU of `gpus` at a time (its evaluations and sandbox see only that
    GPU), design runs and judging beside them up to `cpu_slots`. Ray executor: each session is a Ray task
    asking for one GPU (or none), on an existing cluster with --address or a local instance; the sessions
    directory must be shared by every node. Rerunning skips finished sessions, resumes sessions that were cut
    off (no logged model call is repeated, no budget spent twice) and retries failed ones up to `retries`
    (--retry-failed: sessions given up on get their retries again).
    Exit code 0 when every session finished, 1 when some failed for good, 2 for bad usage.
    """
    from workbench.campaign.pools import LocalPool, Pool, RayPool, job_command
    from workbench.campaign.scheduler import Scheduler
    from workbench.campaign.status import campaign_status, is_done

    if executor not in ("local", "ray"):
        raise fail(f"--executor must be local or ray (got {executor!r})")
    if address and executor != "ray":
        raise fail("--address is for --executor ray")
    with user_errors():
        campaign, units = _load(file, tasks_dir, guidance_dir)
        from workbench.campaign.plan import preflight

        # keys and prices first, and one call to each model with sessions left (a missing key or a wrong base
        # URL would fail every session of its model)
        status = campaign_status(campaign, units)
        left = {row.unit.model.name for row in status.rows if not is_done(row.state, status.judged)}
        preflight(campaign, probe=left)
        campaign.sessions_dir.mkdir(parents=True, exist_ok=True)

        def command_for(job):  # type: ignore[no-untyped-def]
            return job_command(campaign.path, job, tasks_dir and tasks_dir.resolve(), guidance_dir and guidance_dir.resolve())

        spec = campaign.spec
        pool: Pool
        if executor == "ray":
            pool = RayPool(command_for, Path.cwd(), address, None if address else spec.cpu_slots + 1, spec.gpu_model)
        else:
            workers = spec.cpu_slots + (len(spec.gpus) if isinstance(spec.gpus, list) else 64)
            pool = LocalPool(command_for, Path.cwd(), max_workers=workers)
        display = _Live(campaign.name)
        try:
            with display:
                snapshot = Scheduler(campaign, units, pool, on_update=display, retry_failed=retry_failed).run()
        except KeyboardInterrupt:
            raise fail("interrupted; `campaign run` again resumes the campaign where it stopped", 130) from None
        finally:
            pool.close()
        write_stdout(display.line(snapshot) + "\n")
        status = campaign_status(campaign, units)
    for row in status.rows:
        if row.gave_up:
            write_stdout(f"failed: {row.unit.session_id}: {row.gave_up}\n")
    raise typer.Exit(EXIT_OK if all(r.state in ("finished", "judged") for r in status.rows) else EXIT_FAILED)


@campaign_app.command("status")
def status_cmd(
    file: FileArg,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON (counts, cells, every unit).")] = False,
    tasks_dir: TasksDir = None,
    guidance_dir: GuidanceDir = None,
) -> None:
    """Show the campaign's progress from the sessions on disk: per model and guidance configuration the
    sessions done, passed, running and failed, and the spend; with --json every unit too. Exit code 0 when
    every session is finished, 1 otherwise."""
    from rich.table import Table

    from workbench.campaign.status import campaign_status, usd

    with user_errors():
        campaign, units = _load(file, tasks_dir, guidance_dir)
        status = campaign_status(campaign, units)
    if as_json:
        write_stdout(json.dumps(status.to_json(), indent=2) + "\n")
    else:
        table = Table(title=f"campaign {campaign.name} ({campaign.sessions_dir})")
        columns = ("model", "guidance", "kind", "done", "passed", "failed attempts", "skipped", "running", "faults", "spend")
        for column in columns:
            table.add_column(column, justify="left" if column in ("model", "guidance", "kind") else "right")
        for cell in status.cells():
            table.add_row(cell.model, cell.guidance, cell.kind, f"{cell.done}/{cell.total}", str(cell.passed),
                          str(cell.failed_attempts), str(cell.skipped), str(cell.running), str(cell.failed),
                          usd(cell.spend_usd))  # fmt: skip
        console = stdout()
        console.print(table)
        counts = ", ".join(f"{n} {state}" for state, n in sorted(status.counts().items()))
        attempts = f" ({status.failed_attempts} failed attempt(s), scored 0)" if status.failed_attempts else ""
        attempts += f" ({status.skipped} skipped: more device memory than the GPU had)" if status.skipped else ""
        console.print(
            f"{len(status.rows)} session(s), {status.done} done{attempts}: {counts}; spend {usd(status.spend_usd)}",
            highlight=False,
        )
    raise typer.Exit(EXIT_OK if status.complete and not any(r.gave_up for r in status.rows) else EXIT_FAILED)


@campaign_app.command("unit", hidden=True)
def unit_cmd(
    file: FileArg,
    key: Annotated[str, typer.Argument(help="The unit's key (as in its session id after the campaign name).")],
    step: Annotated[str, typer.Option("--step", help="run or judge.")] = "run",
    tasks_dir: TasksDir = None,
    guidance_dir: GuidanceDir = None,
) -> None:
    """One unit of a campaign (what `campaign run` starts per job): run or judge its session, then exit 0 when
    the step reached its goal, 1 otherwise."""
    from workbench.campaign.work import judge_unit, run_unit

    if step not in ("run", "judge"):
        raise fail(f"--step must be run or judge (got {step!r})")
    with user_errors():
        campaign, units = _load(file, tasks_dir, guidance_dir)
        unit = next((u for u in units if u.key == key), None)
        if unit is None:
            raise fail(f"campaign {campaign.name} has no unit {key!r}")
        cat = catalog(tasks_dir, guidance_dir)
        status = run_unit(campaign, cat, unit) if step == "run" else judge_unit(campaign, cat, unit)
    write_stdout(f"{unit.session_id}: {status.state}" + (f" ({status.reason})" if status.reason else "") + "\n")
    goal = ("finished", "judged") if step == "run" else ("judged",)
    raise typer.Exit(EXIT_OK if status.state in goal else EXIT_FAILED)


__all__ = ["campaign_app"]
