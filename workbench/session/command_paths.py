"""The files a command driver's command names, seen from inside its sandbox.

The command runs in bubblewrap with the session's workspace as its working directory, a private /tmp and
the repository, the sessions root, the tasks and the guidance hidden. A command such as
`/tmp/my-agent/run.sh` or `python agent.py` (relative to where the user typed it) would then fail with
"No such file or directory" and exit code 127, and only the session's events would say so.

So the paths a command names are looked at when the session is created and when it runs: an absolute path
that exists on the host is made readable inside (its folder, so that a script's neighbours come along; the
file alone where that folder would be /, or would hold the home directory), unless it lies in a hidden
folder, which is a problem to report; a relative path that exists where the user is but not in the
workspace is a problem too (the command does not run where it was typed).
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

SCRIPT_SUFFIXES = (".py", ".sh", ".js", ".ts", ".rb", ".pl")  # a bare relative word that names a script
SYSTEM_FOLDERS = (Path("/usr"), Path("/bin"), Path("/sbin"), Path("/lib"), Path("/lib64"))  # read-only in every sandbox
# folders shared by everything on the host: only the file named in them is exposed, never the folder
SHARED_FOLDERS = (Path("/"), Path("/tmp"), Path("/var/tmp"), Path("/dev/shm"), Path("/home"), Path("/usr"), Path("/opt"))


@dataclass(frozen=True)
class CommandPaths:
    exposed: list[Path] = field(default_factory=list)  # made readable inside the sandbox
    problems: list[str] = field(default_factory=list)  # paths the command names that it will not find there


def _candidates(command: str) -> list[str]:
    """The command's words, and the value of each `--option=value` word."""
    try:
        words = shlex.split(command)
    except ValueError:  # unbalanced quotes: the shell will say so
        return []
    found = []
    for word in words:
        found.append(word)
        if "=" in word:
            found.append(word.split("=", 1)[1])
    return found


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def command_paths(
    command: str,
    *,
    hidden: Sequence[Path],
    home: Path,
    workspace: Path | None = None,
    cwd: Path | None = None,
    workspace_names: Sequence[str] = (),
) -> CommandPaths:
    """What of `command`'s paths to expose in its sandbox, and what cannot work. `hidden`: the folders the
    sandbox hides; `cwd`: where the user typed the command (relative paths are checked against it);
    `workspace_names`: the first parts of the paths a new session's workspace will hold."""
    exposed: list[Path] = []
    problems: list[str] = []
    masks = [h.resolve() for h in hidden]
    home = home.resolve()
    for word in _candidates(command):
        path = Path(word).expanduser()
        if not path.is_absolute():
            if path.parts and path.parts[0] in workspace_names:
                continue
            if cwd is not None and ("/" in word or path.suffix in SCRIPT_SUFFIXES):
                here = cwd / path
                if here.exists() and (workspace is None or not (workspace / path).exists()):
                    problems.append(
                        f"{word!r} is relative to {cwd}, but the command runs in the session's workspace: "
                        f"give it as an absolute path ({here.resolve()})"
                    )
            continue
        if not path.exists():
            continue
        resolved = path.resolve()
        if any(_inside(resolved, system) for system in SYSTEM_FOLDERS):
            continue  # the sandbox shows them already
        if workspace is not None and _inside(resolved, workspace.resolve()):
            continue
        mask = next((m for m in masks if _inside(resolved, m)), None)
        if mask is not None:
            problems.append(
                f"{word!r} lies in {mask}, which the command's sandbox hides; move it elsewhere "
                "or create the session with --unsandboxed"
            )
            continue
        folder = resolved if resolved.is_dir() else resolved.parent
        if folder in SHARED_FOLDERS or _inside(home, folder):
            folder = resolved  # never a whole home directory, /tmp or the root: only what was named
        if folder not in exposed:
            exposed.append(folder)
    return CommandPaths(exposed, problems)
