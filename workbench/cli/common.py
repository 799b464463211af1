"""What every CLI command shares: root options, the error-to-exit-code rule, consoles."""

from __future__ import annotations

import inspect
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

from workbench import paths
from workbench.catalog import Catalog
from workbench.errors import WorkbenchError

if TYPE_CHECKING:  # the agent and session packages are imported by the commands that run them
    from workbench.agent import ProviderFactory
    from workbench.session.store import SessionStore

# Exit codes used by every command.
EXIT_OK = 0
EXIT_FAILED = 1  # the thing evaluated failed
EXIT_USAGE = 2  # bad usage, or a bad task/guidance file

TasksDir = Annotated[
    Path | None,
    typer.Option("--tasks-dir", help=f"Root of task folders (default: {paths.default_help('tasks')})."),
]
GuidanceDir = Annotated[
    Path | None,
    typer.Option("--guidance-dir", help=f"Root of guidance folders (default: {paths.default_help('guidance')})."),
]
SessionsDir = Annotated[
    Path | None,
    typer.Option("--sessions-dir", help=f"Root of session folders (default: {paths.default_help('sessions')})."),
]
ROOT_OPTIONS = ("tasks_dir", "guidance_dir", "sessions_dir")  # given before a subcommand, they reach it


def pass_roots_down(ctx: typer.Context) -> None:
    """Make the root folders given before the subcommand (`d2k-workbench --tasks-dir X tasks`, as the
    top-level help shows them) the defaults of every subcommand that takes them. A subcommand's own
    option still wins; the environment variables and the checkout's folders come after both."""
    given = {
        name: str(ctx.params[name])
        for name in ROOT_OPTIONS
        if ctx.params.get(name) is not None and getattr(ctx.get_parameter_source(name), "name", "") == "COMMANDLINE"
    }
    if given:
        ctx.default_map = {**(ctx.default_map or {}), **_defaults_below(ctx.command, given)}


def _defaults_below(command: object, given: dict[str, str]) -> dict[str, object]:
    """A click default map giving `given` to every command under `command` that has such parameters."""
    found: dict[str, object] = {}
    for name, sub in (getattr(command, "commands", None) or {}).items():
        below: dict[str, object] = {p.name: given[p.name] for p in getattr(sub, "params", []) if p.name in given}
        below.update(_defaults_below(sub, given))
        if below:
            found[name] = below
    return found


@dataclass(frozen=True)
class CliServices:
    """What the commands get from whoever started the CLI (``app(args, obj=CliServices(...))``): the model
    providers of agent sessions run in this process. The installed command uses the real APIs; the scripted
    CLI (``python -m workbench.cli.scripted``) and tests hand in a scripted model."""

    provider_factory: ProviderFactory | None = None  # None: the real APIs (workbench.agent.default_provider)


def services(ctx: typer.Context) -> CliServices:
    """The running command's services (the defaults when none were handed in)."""
    return ctx.obj if isinstance(ctx.obj, CliServices) else CliServices()


def session_store(sessions_dir: Path | None) -> SessionStore:
    """The sessions root of --sessions-dir, else D2K_SESSIONS_DIR, else ./sessions, with the shipped examples
    (D2K_EXAMPLES_DIR, else the checkout's sessions/examples)."""
    from workbench.session.store import SessionStore

    return SessionStore(paths.sessions_root(sessions_dir), paths.examples_root())


def stdout() -> Console:
    """The console for results; wide when piped so that tables are not wrapped mid-word."""
    return Console(width=None if sys.stdout.isatty() else 160)


def stderr() -> Console:
    return Console(stderr=True)


def catalog(tasks_dir: Path | None, guidance_dir: Path | None) -> Catalog:
    return Catalog(paths.tasks_root(tasks_dir), paths.guidance_root(guidance_dir))


def fail(message: str, code: int = EXIT_USAGE) -> typer.Exit:
    """Print message on stderr (as it is: brackets in it are not markup) and return the Exit to raise."""
    from rich.markup import escape

    stderr().print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)
    return typer.Exit(code)


@contextmanager
def user_errors() -> Iterator[None]:
    """Turn the errors a user can cause (workbench.errors: bad files, bad values, unusable sessions) into
    one line on stderr and exit code 2. Anything else is a bug and keeps its traceback."""
    try:
        yield
    except WorkbenchError as exc:
        raise fail(exc.message) from None


def write_stdout(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()


def reflow_help(*apps: typer.Typer) -> None:
    """Give each command of `apps` its docstring with every paragraph on one line, as its help: typer's
    rich help keeps the source's line breaks after the first paragraph, and the terminal then breaks
    those lines again mid-sentence."""
    for typer_app in apps:
        for info in typer_app.registered_commands:
            if info.help is None and info.callback is not None and info.callback.__doc__:
                paragraphs = inspect.cleandoc(info.callback.__doc__).split("\n\n")
                info.help = "\n\n".join(" ".join(paragraph.split()) for paragraph in paragraphs)
