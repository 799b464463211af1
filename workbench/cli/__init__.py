"""The `d2k-workbench` command: one typer app; each subcommand is a thin call into a package."""

from __future__ import annotations

import typer

from workbench.cli.catalog_cmds import catalogue_table, guidance_cmd, tasks_app
from workbench.cli.bench_cmd import bench_app
from workbench.cli.eval_cmd import eval_cmd
from workbench.cli.common import GuidanceDir, TasksDir, catalog, stdout, user_errors

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


@app.callback(invoke_without_command=True)
def root(ctx: typer.Context, tasks_dir: TasksDir = None, guidance_dir: GuidanceDir = None) -> None:
    """With no command: open the workbench (for now, the task catalogue)."""
    if ctx.invoked_subcommand is not None:
        return
    with user_errors():
        stdout().print(catalogue_table(catalog(tasks_dir, guidance_dir)))
        stdout().print("Run `d2k-workbench --help` for the commands.")


def main() -> None:
    app()
