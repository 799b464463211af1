"""Finding the problems of a peer's checkout, as the peer lays them out (nothing is run here).

- **KernelBench**: level folders `level1`, `level2`, ... (directly under the path, or under its `KernelBench/`
  folder), each holding one Python file per problem, named `<number>_<Name>.py`.
- **GPU MODE reference-kernels**: problem folders (anywhere under the path, usually `problems/<group>/<name>/`)
  that hold `reference.py` and `task.yml`; the files the problem imports (`task.py`, `utils.py`, ...) are named
  by task.yml's `files` list (`{"name": "utils.py", "source": "../utils.py"}`) or found beside it.
"""

from __future__ import annotations

import fnmatch
import re
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from workbench.harness.protocol.probe import PeerKind
from workbench.importer.errors import PackError
from workbench.importer.yamlish import loads

MAX_SOURCE_BYTES = 1_000_000  # a problem file larger than this is not a problem of either format
_LEVEL = re.compile(r"level(\d+)")
_KB_FILE = re.compile(r"(\d+)_(.+)\.py")


class PeerProblem(BaseModel):
    """One problem of a pack: where it is, the task it becomes, and its files' text."""

    model_config = ConfigDict(frozen=True)

    pack: PeerKind
    name: str  # as the summary shows it: "level1/19_ReLU.py", "pmpp_v2/vectoradd_py"
    rel_path: str  # relative to the pack's root
    task_id: str
    level: int | None = None
    sources: dict[str, str]  # module name -> text; `main` among them
    main: str
    manifest: dict[str, object] = {}  # GPU MODE: task.yml as read
    problem: str | None = None  # why it cannot be read (then sources may be empty)


def slug(text: str, limit: int = 48) -> str:
    """Lower-case letters, digits and single underscores."""
    return re.sub(r"_+", "_", re.sub(r"[^a-z0-9]", "_", text.lower())).strip("_")[:limit].strip("_") or "problem"


def _read(path: Path) -> str:
    if path.stat().st_size > MAX_SOURCE_BYTES:
        raise PackError(f"{path}: larger than {MAX_SOURCE_BYTES} bytes")
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise PackError(f"{path}: not UTF-8 text") from None


def repo_commit(path: Path) -> str | None:
    """The commit the checkout holding `path` is at, read from its .git folder (no git is run), or None."""
    for folder in [path, *path.parents]:
        git = folder / ".git"
        if git.is_file():  # a worktree or submodule: "gitdir: <path>"
            text = git.read_text(encoding="utf-8", errors="replace").strip()
            if not text.startswith("gitdir:"):
                return None
            git = (folder / text.removeprefix("gitdir:").strip()).resolve()
        if not git.is_dir():
            continue
        try:
            head = (git / "HEAD").read_text(encoding="utf-8").strip()
        except OSError:
            return None
        if not head.startswith("ref:"):
            return head if re.fullmatch(r"[0-9a-f]{40}", head) else None
        ref = head.removeprefix("ref:").strip()
        for base in (git, git / ".." if (git / "commondir").is_file() else git):
            loose = base / ref
            if loose.is_file():
                return loose.read_text(encoding="utf-8").strip() or None
        packed = git / "packed-refs"
        if packed.is_file():
            for line in packed.read_text(encoding="utf-8").splitlines():
                sha, _, name = line.partition(" ")
                if name.strip() == ref:
                    return sha
        return None
    return None


def _check_root(root: Path) -> Path:
    if not root.exists():
        raise PackError(f"{root}: no such folder")
    if not root.is_dir():
        raise PackError(f"{root}: not a folder (give the peer's checkout or one of its problem folders)")
    return root.resolve()


def kernelbench_problems(root: Path, level: int | None = None, pattern: str | None = None) -> list[PeerProblem]:
    """Every problem file of the levels under `root` (one level with `level`; names matching `pattern`)."""
    root = _check_root(root)
    bases = [root, root / "KernelBench"]
    levels: dict[int, Path] = {}
    for base in bases:
        if base.is_dir():
            for child in base.iterdir():
                match = _LEVEL.fullmatch(child.name)
                if child.is_dir() and match:
                    levels.setdefault(int(match[1]), child)
    if _LEVEL.fullmatch(root.name):  # the path is a level folder itself
        levels.setdefault(int(_LEVEL.fullmatch(root.name)[1]), root)  # type: ignore[index]
    if not levels:
        raise PackError(
            f"{root}: no KernelBench level folders (level1, level2, ... here or under KernelBench/); "
            "give the KernelBench checkout, or use `import gpumode` for a GPU MODE checkout"
        )
    if level is not None:
        if level not in levels:
            raise PackError(f"{root}: no level{level} folder (found levels {', '.join(map(str, sorted(levels)))})")
        levels = {level: levels[level]}
    found: list[PeerProblem] = []
    for number in sorted(levels):
        files = [p for p in levels[number].iterdir() if p.is_file() and _KB_FILE.fullmatch(p.name)]
        files.sort(key=lambda p: int(_KB_FILE.fullmatch(p.name)[1]))  # type: ignore[index]
        for path in files:
            name = f"level{number}/{path.name}"
            if pattern and not (fnmatch.fnmatch(path.name, pattern) or fnmatch.fnmatch(name, pattern)):
                continue
            problem_number, title = _KB_FILE.fullmatch(path.name).groups()  # type: ignore[union-attr]
            task_id = f"kb_l{number}_{problem_number}_{slug(title)}"
            rel = str(path.relative_to(root)) if path.is_relative_to(root) else path.name
            try:
                sources, problem = {"problem": _read(path)}, None
            except PackError as exc:
                sources, problem = {}, exc.message
            found.append(
                PeerProblem(
                    pack="kernelbench",
                    name=name,
                    rel_path=rel,
                    task_id=task_id,
                    level=number,
                    sources=sources,
                    main="problem",
                    problem=problem,
                )
            )
    return found


def _gpumode_files(folder: Path, manifest: dict[str, object]) -> dict[str, str]:
    """reference.py and the modules it may import: task.yml's `files` (not the submission or the harness's
    eval.py), else task.py and utils.py beside it or one folder up."""
    sources = {"reference": _read(folder / "reference.py")}
    listed = manifest.get("files")
    entries = [e for e in listed if isinstance(e, dict)] if isinstance(listed, list) else []
    for entry in entries:
        name, source = str(entry.get("name", "")), str(entry.get("source", ""))
        module = name.removesuffix(".py")
        if not name.endswith(".py") or module in ("reference", "submission", "eval") or source.startswith("@"):
            continue
        path = (folder / source).resolve()
        if path.is_file():
            sources[module] = _read(path)
    for module in ("task", "utils"):
        for candidate in (folder / f"{module}.py", folder.parent / f"{module}.py"):
            if module not in sources and candidate.is_file():
                sources[module] = _read(candidate)
    return sources


def gpumode_problems(root: Path, pattern: str | None = None) -> list[PeerProblem]:
    """Every folder under `root` holding reference.py and task.yml (names matching `pattern`)."""
    root = _check_root(root)
    folders = sorted({p.parent for p in root.rglob("task.yml") if (p.parent / "reference.py").is_file()})
    if not folders:
        raise PackError(
            f"{root}: no GPU MODE problems (folders holding reference.py and task.yml); give the reference-kernels "
            "checkout, or use `import kernelbench` for a KernelBench checkout"
        )
    found: list[PeerProblem] = []
    for folder in folders:
        rel = folder.relative_to(root)
        name = "/".join(rel.parts[-2:]) if len(rel.parts) >= 2 else folder.name
        if pattern and not (fnmatch.fnmatch(folder.name, pattern) or fnmatch.fnmatch(name, pattern)):
            continue
        task_id = f"gm_{slug(name.replace('/', '_'), 60)}"
        try:
            manifest = loads(_read(folder / "task.yml"))
            sources, problem = _gpumode_files(folder, manifest), None
        except ValueError as exc:
            manifest, sources, problem = {}, {}, f"task.yml: {exc}"
        except PackError as exc:
            manifest, sources, problem = {}, {}, exc.message
        found.append(
            PeerProblem(
                pack="gpumode",
                name=name,
                rel_path=str(rel),
                task_id=task_id,
                sources=sources,
                main="reference",
                manifest=manifest,
                problem=problem,
            )
        )
    return found
