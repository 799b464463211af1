"""Drivers write the workspace: a person (human), a shell command (command), a recorded session (replay),
and the built-in agent (workbench.agent, handed to the runner by its caller), which implements the same
`Driver` protocol.

A driver only writes files (directly, or through `DriverContext.write_files` to make one revision at once)
and may log events; the runner commits, evaluates and records everything else.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Protocol

from workbench.catalog import Catalog
from workbench.errors import SessionError
from workbench.harness.host import sandbox
from workbench.harness.host.child import die_with_parent
from workbench.session.command_paths import command_paths
from workbench.session.config import SessionConfig
from workbench.session.events import DriverOutput, Event, Outcome
from workbench.session.layout import BRIEF_NAME
from workbench.session.state import MISSING_COMMAND_CODES, SessionState, outcome_of
from workbench.session.store import SessionStore

if TYPE_CHECKING:
    from workbench.harness.host.sandbox import SandboxInfo

MAX_OUTPUT_LINE = 4000  # characters of one driver_output line kept in the log
NOT_REPLAYED = ("task/", BRIEF_NAME, ".gitignore")  # each session writes its own copies of these


@dataclass(frozen=True)
class DriverResult:
    """Why the driver ended; exit_code for drivers that run a process; `outcome`: whether the run is a
    result (events.Outcome: "infrastructure" when it never started or broke for reasons not the agent's)."""

    reason: str
    exit_code: int | None = None
    outcome: Outcome = "completed"


class DriverContext(Protocol):
    """What the runner offers a driver. All methods may be called from any thread."""

    config: SessionConfig
    session_dir: Path
    workspace: Path
    brief: str
    stop: threading.Event  # set when the driver must end (Ctrl-C, SIGTERM); return promptly

    def emit(self, event: Event) -> Event:
        """Append an event (model_call, tool_call, ...) to the log; returns it with seq and ts set."""
        ...

    def state(self) -> SessionState:
        """The session's state so far (the log, including earlier runs). Read it, never change it."""
        ...

    def write_files(self, files: Mapping[str, bytes | None], message: str = "", replay_of: int | None = None) -> int | None:
        """Write (bytes) or delete (None) workspace files and commit them as one revision, queued for
        evaluation; returns its number, or None when nothing changed."""
        ...

    def commit(self, message: str = "") -> int | None:
        """Commit whatever changed in the workspace now, without waiting for the watcher's debounce."""
        ...

    def wait_evaluated(self, rev: int, timeout: float | None = None) -> bool:
        """Block until the revision was evaluated or skipped (False on timeout or when stopping)."""
        ...

    def idle_seconds(self) -> float:
        """Seconds since the last revision or finished evaluation; 0 while an evaluation runs or waits."""
        ...


class Driver(Protocol):
    """Something that writes kernel revisions into a session's workspace until it is done."""

    name: str

    def run(self, ctx: DriverContext) -> DriverResult:
        """Work until done or until ctx.stop is set. Called again (with the log so far) after a resume."""
        ...


# Makes the driver of a session kind that a package above this one provides (the built-in agent):
# the runner calls it with the session's config and catalogue; `workbench.agent.agent_driver()` is one.
DriverFactory = Callable[[SessionConfig, Catalog], Driver]


class HumanDriver:
    """A person edits the workspace in an editor; the session ends when idle (optional) or when stopped."""

    name = "human"

    def __init__(self, idle_exit: float | None = None, poll_s: float = 0.25) -> None:
        self.idle_exit = idle_exit
        self.poll_s = poll_s

    def run(self, ctx: DriverContext) -> DriverResult:
        while not ctx.stop.wait(self.poll_s):
            if self.idle_exit is not None and ctx.idle_seconds() >= self.idle_exit:
                return DriverResult(f"no new revision for {self.idle_exit:g} s")
        return DriverResult("stopped")


def _resolver_files() -> list[Path]:
    """Where /etc/resolv.conf really is (under /run on some systems, which the sandbox hides)."""
    resolv = Path("/etc/resolv.conf")
    return [resolv.resolve()] if resolv.exists() else []


RESULTS_NAME = "results.jsonl"  # in the session folder: the evaluation events, for the agent to read


class CommandDriver:
    """Runs a shell command in the workspace (any coding-agent CLI, a script) and logs its output.

    Unless the session is `unsandboxed`, the command runs in bubblewrap: the workspace writable, the
    evaluation results (results.jsonl, written by the runner) readable, the network kept (agents call
    their model's API), and the rest of the repository, the sessions root (the log included), the tasks
    and the guidance invisible; its whole process tree dies with the runner.
    """

    name = "command"

    def __init__(self, command: str, kill_grace_s: float = 5.0, hidden: Sequence[Path] = ()) -> None:
        self.command = command
        self.kill_grace_s = kill_grace_s
        self.hidden = list(hidden)
        self.sandbox: SandboxInfo | None = None

    def environment(self, ctx: DriverContext) -> dict[str, str]:
        """The command's environment: the runner's plus the brief and the session's paths."""
        return {
            **os.environ,
            "D2K_BRIEF": ctx.brief,
            "D2K_BRIEF_FILE": str(ctx.workspace / BRIEF_NAME),
            "D2K_TASK": str(ctx.workspace / "task"),
            "D2K_SOLUTION": str(ctx.workspace / ctx.config.solution),
            "D2K_SESSION_ID": ctx.config.id,
            "D2K_RESULTS": str(ctx.session_dir / RESULTS_NAME),
            "D2K_DEVICE": ctx.config.device,
        }

    def command_line(self, ctx: DriverContext) -> tuple[list[str], dict[str, str], SandboxInfo]:
        """The process to start, its environment, and how it is confined."""
        shell = shutil.which("bash") or "/bin/sh"
        argv, env = [shell, "-c", self.command], self.environment(ctx)
        if ctx.config.unsandboxed:
            return argv, env, sandbox.SandboxInfo("none", "unsandboxed: asked for with --unsandboxed")
        home = Path.home().resolve()
        hidden = [p for p in sandbox.default_hidden([ctx.session_dir.parent, *self.hidden]) if Path(p).resolve() != home]
        # .git read-only; the interpreter and the package re-exposed (a checkout under /tmp lies inside
        # the sandbox's private /tmp otherwise, and its venv would vanish)
        # what the command names on the host (an agent under /tmp, say): readable inside, unless hidden
        named = command_paths(self.command, hidden=hidden, home=home, workspace=ctx.workspace).exposed
        readable = [
            ctx.session_dir / RESULTS_NAME,
            ctx.workspace / ".git",
            *_resolver_files(),
            *sandbox.default_readable(),
            *named,
        ]
        command, info = sandbox.wrap(
            argv,
            device=ctx.config.device,
            env=env,
            hidden=hidden,
            readable=readable,
            writable=[ctx.workspace],
            network=True,
            chdir=ctx.workspace,
        )
        if info.kind == "none":
            raise SessionError(
                f"the command's sandbox cannot start ({info.detail}); create the session with --unsandboxed to run it without one"
            )
        return command, sandbox.launcher_env(), info

    def run(self, ctx: DriverContext) -> DriverResult:
        done = ctx.state().driver_finished
        if done is not None:  # a resumed session whose command had already exited: do not start it again
            return DriverResult(f"the command had already exited ({done.reason})", done.exit_code, outcome_of(done))
        (ctx.session_dir / RESULTS_NAME).touch()
        argv, env, self.sandbox = self.command_line(ctx)
        process = subprocess.Popen(
            argv,
            cwd=ctx.workspace,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            preexec_fn=die_with_parent,
            text=True,
            errors="replace",
            bufsize=1,
        )
        readers = [
            threading.Thread(target=self._pump, args=(stream, name, ctx), daemon=True)
            for stream, name in ((process.stdout, "stdout"), (process.stderr, "stderr"))
        ]
        for reader in readers:
            reader.start()
        stopped = False
        while process.poll() is None:
            if ctx.stop.wait(0.2):
                stopped = True
                self._terminate(process)
                break
        code = process.wait()
        for reader in readers:
            reader.join(timeout=5)
        if stopped:
            return DriverResult(f"stopped; the command was terminated (code {code})", code)
        # The exit code is the command's own word: 126/127 means "could not start" only when it changed nothing
        # in the workspace (its edits committed now, not after the watcher's debounce). A command that worked
        # and then exits 127 must not turn its own failed run into a discarded one that a campaign reruns.
        ctx.commit("edits made before the command exited")
        if code in MISSING_COMMAND_CODES and len(ctx.state().revisions) <= 1:  # revision 1: the task's template
            return DriverResult(
                f"the command could not be started: exit code {code} ({'not found' if code == 127 else 'not executable'})",
                code,
                "infrastructure",
            )
        return DriverResult(f"the command exited with code {code}", code, "agent_failed" if code != 0 else "completed")

    def _pump(self, stream: IO[str] | None, name: str, ctx: DriverContext) -> None:
        assert stream is not None
        for line in stream:
            ctx.emit(DriverOutput(stream=name, text=line.rstrip("\n")[:MAX_OUTPUT_LINE]))

    def _terminate(self, process: subprocess.Popen[str]) -> None:
        try:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(self.kill_grace_s)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


class ReplayDriver:
    """Writes the recorded revisions of another session into the workspace, one at a time, waiting for
    each to be evaluated here, so that every recorded revision is re-evaluated on this machine."""

    name = "replay"

    def __init__(self, store: SessionStore, source_id: str) -> None:
        self.store = store
        self.source_id = source_id

    def run(self, ctx: DriverContext) -> DriverResult:
        ref = self.store.resolve(self.source_id)
        recorded = self.store.load(ref).state.ordered()
        history = self.store.workspace(ref)
        done = max((r.replay_of or 0 for r in ctx.state().revisions.values()), default=0)
        done = max(done, 1)  # revision 1 is the template: the same in both sessions

        def replayable(sha: str) -> dict[str, bytes]:
            return {p: c for p, c in history.files_at(sha).items() if not p.startswith(NOT_REPLAYED)}

        previous = replayable(recorded[0].sha) if recorded else {}
        replayed = 0
        for revision in recorded:
            files = replayable(revision.sha)
            if revision.rev > done:
                if ctx.stop.is_set():
                    return DriverResult(f"stopped after replaying up to revision {done} of {ref.id}")
                changes: dict[str, bytes | None] = {**{p: None for p in previous if p not in files}, **files}
                message = f"replay of {ref.id} revision {revision.rev} (by {revision.author})"
                rev = ctx.write_files(changes, message, replay_of=revision.rev)
                if rev is not None:
                    replayed += 1
                    ctx.wait_evaluated(rev)
                done = revision.rev
            previous = files
        return DriverResult(f"replayed {ref.id}: {replayed} revision(s) this run, up to revision {done}")
