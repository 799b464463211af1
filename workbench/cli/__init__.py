"""The `d2k-workbench` command: one typer app; each subcommand is a thin call into a package."""

from __future__ import annotations

import typer

from workbench.cli.agent_cmds import check_provider_cmd, design_cmd, run_cmd
from workbench.cli.bench_cmd import bench_app
from workbench.cli.campaign_cmds import campaign_app
from workbench.cli.catalog_cmds import catalogue_table, guidance_cmd, tasks_app
from workbench.cli.common import (
    GuidanceDir,
    SessionsDir,
    TasksDir,
    catalog,
    fail,
    pass_roots_down,
    reflow_help,
    stdout,
    user_errors,
)
from workbench.cli.eval_cmd import eval_cmd
from workbench.cli.import_cmd import import_app
from workbench.cli.judge_cmds import judge_app, review_cmd
from workbench.cli.regrade_cmd import regrade_cmd
from workbench.cli.report_cmd import report
from workbench.cli.session_cmds import replay_cmd, session_app

app = typer.Typer(
    name="d2k-workbench",
    help="D2K-Bench workbench: expert-guided GPU kernel tasks, evaluation, sessions and review.",
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="rich",
)
app.add_typer(tasks_app, name="tasks")
app.command("guidance")(guidance_cmd)
app.command("eval")(eval_cmd)
app.add_typer(bench_app, name="bench")
app.add_typer(session_app, name="session")
app.command("replay")(replay_cmd)
app.command("regrade")(regrade_cmd)
app.command("run")(run_cmd)
app.command("design")(design_cmd)
app.command("check-provider")(check_provider_cmd)
app.command("report")(report)
app.add_typer(judge_app, name="judge")
app.command("review")(review_cmd)
app.add_typer(campaign_app, name="campaign")
app.add_typer(import_app, name="import")
reflow_help(app, tasks_app, bench_app, session_app, judge_app, campaign_app, import_app)


@app.callback(invoke_without_command=True)
def root(
    ctx: typer.Context, tasks_dir: TasksDir = None, guidance_dir: GuidanceDir = None, sessions_dir: SessionsDir = None
) -> None:
    """With no command: open the workbench (the Textual app); `--help` lists the commands."""
    if ctx.invoked_subcommand is not None:
        pass_roots_down(ctx)
        return
    with user_errors():
        catalog(tasks_dir, guidance_dir).task_ids()  # a missing tasks folder is an error before the screen opens
        try:
            import textual  # noqa: F401

            from workbench.tui import run_app  # imported here: other commands do not pay for Textual
        except ImportError as exc:
            stdout().print(catalogue_table(catalog(tasks_dir, guidance_dir)))
            raise fail(f"the workbench needs Textual ({exc}); the catalogue is above, `--help` lists the commands") from None
        run_app(tasks_dir, guidance_dir, sessions_dir)


def main() -> None:
    app()
