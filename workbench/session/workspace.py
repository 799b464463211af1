"""The session workspace: a git repository in which every revision of the kernel files is one commit."""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from git import Commit, Repo
from git.exc import BadName, BadObject, GitCommandError, GitCommandNotFound, InvalidGitRepositoryError, NoSuchPathError

from workbench.errors import SessionError
from workbench.session.secrets import find_secret

IGNORED = (
    "__pycache__/",
    "*.pyc",
    ".pytest_cache/",
    ".mypy_cache/",
    "*.swp",
    "*~",
    ".DS_Store",
    # where agents and tools keep credentials and settings: never committed
    ".env",
    ".env.*",
    "*.pem",
    "*.key",
    ".netrc",
    ".npmrc",
    ".pypirc",
    ".aws/",
    ".config/",
    ".claude/",
    ".codex/",
    ".aider*",
    ".cursor/",
    ".gemini/",
    ".continue/",
    ".openhands/",
    ".cache/",
)
_EMAIL_DOMAIN = "d2k-workbench.invalid"
_SEP_RECORD, _SEP_FIELD = "\x1e", "\x1f"


class WorkspaceError(SessionError):
    """The workspace is missing or is not a usable git repository."""


class SecretInWorkspace(WorkspaceError):
    """A file about to be committed holds the value of a secret environment variable."""


@dataclass(frozen=True)
class CommitInfo:
    """One commit of the workspace history (oldest first, first-parent line)."""

    sha: str
    author: str
    message: str
    files: list[str]
    time: int  # unix seconds (author date)


class Workspace:
    """A GitPython repository with the few operations a session needs.

    Thread-safe: GitPython's Repo reads objects through long-lived `git cat-file` processes whose pipes two
    threads must not share (the runner commits while its evaluation thread reads a revision's file; an
    interleaved read returns another object's bytes), so every operation holds the workspace's lock."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._lock = threading.RLock()
        try:
            self.repo = Repo(self.path)
        except (InvalidGitRepositoryError, NoSuchPathError):
            raise WorkspaceError(f"{self.path} is not a git repository") from None
        # Every git command works on this repository and no other. GitPython runs git in the process's
        # own working directory when the workspace's folder is gone (deleted under a running session),
        # and git would then find, stage and commit to whatever repository holds that directory; with
        # GIT_DIR and GIT_WORK_TREE pinned it fails instead ("not a git repository").
        git_dir = Path(self.repo.git_dir).resolve()
        self.repo.git.update_environment(GIT_DIR=str(git_dir), GIT_WORK_TREE=str(self.path.resolve()))

    @classmethod
    def create(cls, path: Path, files: dict[str, str], author: str, message: str) -> Workspace:
        """Make the repository, write files (plus a .gitignore) and commit them as the first revision."""
        path.mkdir(parents=True, exist_ok=False)
        Repo.init(path, initial_branch="main")
        for name, text in {".gitignore": "\n".join(IGNORED) + "\n", **files}.items():
            target = path / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
        workspace = cls(path)
        with workspace.repo.config_writer() as config:  # for any git command a person runs in here
            config.set_value("user", "name", "d2k-workbench")
            config.set_value("user", "email", f"session@{_EMAIL_DOMAIN}")
        if workspace.commit_all(author, message) is None:
            raise WorkspaceError(f"nothing to commit in new workspace {path}")
        return workspace

    def clear_stale_locks(self) -> None:
        """Remove git lock files left by a process killed mid-command (call only while holding the session lock)."""
        for name in ("index.lock", "HEAD.lock", "refs/heads/main.lock"):
            (self.path / ".git" / name).unlink(missing_ok=True)

    def _identity(self, author: str) -> dict[str, str]:
        email = f"{''.join(c if c.isalnum() else '-' for c in author) or 'driver'}@{_EMAIL_DOMAIN}"
        return {
            "GIT_AUTHOR_NAME": author,
            "GIT_AUTHOR_EMAIL": email,
            "GIT_COMMITTER_NAME": "d2k-workbench",
            "GIT_COMMITTER_EMAIL": f"session@{_EMAIL_DOMAIN}",
        }

    def commit_all(self, author: str, message: str, secrets: Mapping[str, str] | None = None) -> CommitInfo | None:
        """Stage everything (honouring .gitignore) and commit it; None when nothing changed. Raises
        SecretInWorkspace (and stages nothing) when a staged file holds one of `secrets`' values."""
        with self._lock:
            if not Path(self.repo.git_dir).is_dir():
                raise WorkspaceError(f"the workspace {self.path} is gone: nothing committed")
            git = self.repo.git
            with git.custom_environment(**self._identity(author)):
                git.add("-A")
                staged = git.diff("--cached", "--name-only")
                if not staged:
                    return None
                for name in staged.splitlines():
                    path = self.path / name
                    found = find_secret(path.read_bytes(), secrets or {}) if path.is_file() else None
                    if found is not None:
                        git.reset("-q")
                        raise SecretInWorkspace(f"{name} holds the value of {found}")
                git.commit("-q", "--no-verify", "--no-gpg-sign", "--allow-empty-message", "-m", message)
            return self.commit_info(self.repo.head.commit.hexsha)

    def problem(self) -> str | None:
        """None when the repository works (HEAD resolves), else what git says is wrong."""
        with self._lock:
            if not Path(self.repo.working_dir).is_dir():  # git cannot even start there (the folder was deleted)
                return f"the workspace {self.repo.working_dir} is gone"
            try:
                self.repo.git.rev_parse("--verify", "HEAD")
            except GitCommandError as exc:
                return (exc.stderr or str(exc)).strip().splitlines()[-1][:200]
            except GitCommandNotFound as exc:  # deleted between the check above and git's start
                return f"git could not start in the workspace: {exc}"[:200]
            return None

    def head(self) -> str | None:
        with self._lock:
            try:
                return self.repo.head.commit.hexsha
            except ValueError:
                return None

    def history(self) -> list[CommitInfo]:
        """Every commit on the first-parent line from the first to HEAD, oldest first."""
        with self._lock:
            if self.head() is None:
                return []
            raw = self.repo.git.log(
                "--first-parent",
                "--reverse",
                "--root",
                "--name-only",
                "--no-renames",
                f"--format={_SEP_RECORD}%H{_SEP_FIELD}%an{_SEP_FIELD}%at{_SEP_FIELD}%B{_SEP_FIELD}",
            )
            commits = []
            for record in raw.split(_SEP_RECORD)[1:]:
                sha, author, when, message, names = record.split(_SEP_FIELD)
                files = [line for line in names.splitlines() if line.strip()]
                commits.append(CommitInfo(sha, author, message.strip(), files, int(when)))
            return commits

    def _commit(self, sha: str) -> Commit:
        """The commit `sha`; WorkspaceError when this workspace does not hold it (a session log can name a
        commit its workspace lost: a rewritten or restored repository)."""
        try:
            commit = self.repo.commit(sha)
            commit.tree  # noqa: B018 (reading it is what fails for a missing object)
        except (ValueError, BadName, BadObject) as exc:
            raise WorkspaceError(f"commit {sha[:12]} is not in the workspace {self.path}") from exc
        return commit

    def commit_info(self, sha: str) -> CommitInfo:
        with self._lock:
            commit = self._commit(sha)
            names = self.repo.git.diff_tree("--no-commit-id", "--name-only", "-r", "--root", "--no-renames", sha)
            return CommitInfo(
                commit.hexsha,
                commit.author.name or "",
                str(commit.message).strip(),
                [n for n in names.splitlines() if n.strip()],
                int(commit.authored_date),
            )

    def read_bytes(self, sha: str, path: str) -> bytes | None:
        """A file's content at a commit, or None when it does not exist there."""
        with self._lock:
            try:
                blob = self._commit(sha).tree / path
            except KeyError:
                return None
            return bytes(blob.data_stream.read())

    def read_text(self, sha: str, path: str) -> str | None:
        data = self.read_bytes(sha, path)
        return None if data is None else data.decode("utf-8", errors="replace")

    def files_at(self, sha: str) -> dict[str, bytes]:
        """Every file of a commit's tree, path -> content."""
        with self._lock:
            return {
                str(item.path): bytes(item.data_stream.read())  # type: ignore[union-attr]
                for item in self._commit(sha).tree.traverse()
                if item.type == "blob"  # type: ignore[union-attr]
            }

    def export_bundle(self, dest: Path) -> Path:
        """Write the whole history to one git bundle file (safe to commit inside another repository)."""
        with self._lock:
            dest.parent.mkdir(parents=True, exist_ok=True)
            self.repo.git.bundle("create", str(dest.resolve()), "--all")
            return dest

    @classmethod
    def from_bundle(cls, bundle: Path, cache_root: Path | None = None) -> Workspace:
        """A read-only clone of a bundle, cached by the bundle's content hash under the temp folder."""
        digest = hashlib.sha256(bundle.read_bytes()).hexdigest()[:16]
        root = cache_root or Path(tempfile.gettempdir()) / f"d2k-workbench-bundles-{os.getuid()}"
        target = root / f"{bundle.parent.name}-{digest}"
        if not (target / ".git").is_dir():
            root.mkdir(parents=True, exist_ok=True)
            staging = Path(tempfile.mkdtemp(prefix=".clone-", dir=root))
            try:
                Repo.clone_from(str(bundle.resolve()), staging / "repo", branch="main")
                try:
                    (staging / "repo").rename(target)
                except OSError:  # another reader finished first
                    if not (target / ".git").is_dir():
                        raise
            except GitCommandError as exc:
                raise WorkspaceError(f"cannot read bundle {bundle}: {exc.stderr.strip()}") from None
            finally:
                shutil.rmtree(staging, ignore_errors=True)
        return cls(target)
