"""Start the untrusted solution process inside bubblewrap (`bwrap`): the launcher's command line.

Threat: a solution is arbitrary Python and GPU code written by an adversarial agent that wants a
better score than it earned. Run as an ordinary process it could read the expert solution, the
guidance, other sessions or the harness's scratch (and copy answers), rewrite the task or the harness
on disk, read secrets from the environment or the home directory (API keys), talk to the network or
to host daemons' sockets, signal or inspect the checker, or leave a process running after the
evaluation. Inside the sandbox that `wrap` builds, the process sees:

- the host's root file system read-only (`--ro-bind / /`): nothing it writes outside the scratch
  survives; the repository, HOME and /etc cannot be changed;
- hidden paths masked: directories by an empty tmpfs (remounted read-only), files by /dev/null. By
  default (`default_hidden`) the user's home directory, every child of the repository except the
  `workbench` package and the virtual environment that runs the interpreter, and /run (host daemons'
  sockets: a read-only mount does not stop `connect()` on a Unix socket), plus what the harness adds
  (task, guidance and sessions roots, its own scratch);
- the read-only paths the interpreter needs re-exposed inside hidden ones (`default_readable`), and
  the writable paths the caller names;
- a private, empty /tmp (a tmpfs; the scratch and working directory), a private /dev with only the
  basic nodes (null, zero, random, tty, ...; plus the GPU's device nodes when the device is CUDA,
  never the host's disks), a private /dev/shm, its own /proc;
- no network (its own, empty network namespace: no loopback service and no abstract Unix socket of
  the host), its own pid, ipc and uts (where possible also cgroup) namespaces: no host process is
  visible or can be signalled or traced;
- an environment holding exactly the variables the caller passes (`--clearenv`), no capabilities,
  a new session (no terminal injection), and death when its parent dies (`--die-with-parent`).

GPU access: where the process's CUDA_VISIBLE_DEVICES names GPUs by index in PCI bus order
(CUDA_DEVICE_ORDER=PCI_BUS_ID, as a campaign pins each session), only those GPUs' /dev/nvidiaN nodes are
bound, so the process cannot open the other GPUs whatever it sets; otherwise every GPU's node is bound
and CUDA_VISIBLE_DEVICES only narrows what CUDA shows.

What it does NOT do: it does not limit CPU time, memory, the number of processes or the
size of /tmp and /dev/shm (tmpfs in RAM: a solution can fill memory); the checker's deadline and OS
limits are the defence there. Whatever on the host is readable and not hidden can be read (/etc,
/usr, /sys, other folders of the machine); where the harness runs as root, the process keeps uid 0
without capabilities, so root-owned files with owner-only permissions are readable too. /proc/1 inside is
bwrap itself: its environment is the one bwrap was started with, so start bwrap with
`launcher_env()` only. No defence against kernel or driver exploits. When bwrap is missing or cannot
start (or `D2K_SANDBOX=off`), `wrap` returns the command unchanged and says so in `SandboxInfo`
(kind "none"); the evaluation report carries that line.

Order of mount arguments: bwrap applies them left to right and a later mount lands on top of an
earlier one at or below its path. `wrap` emits the fixed base (`/`, /dev, the GPU nodes, /proc, /tmp,
/dev/shm) first, then the hidden, readable and writable paths sorted by depth (fewest path components
first; at the same path hidden, then readable, then writable), so the most specific rule for a path
wins: a readable path inside a hidden directory is visible again, and a hidden path inside a readable
or writable one stays hidden. The tmpfs of each hidden directory is remounted read-only at the very
end (`--remount-ro`), after bwrap has made the mount points of the paths re-exposed inside it. Rules
for /, or for /tmp, /dev, /proc or a folder above them, are dropped: they would undo the base.

Imports only the standard library and `workbench.paths` (no torch; note that importing it as
`workbench.harness.sandbox` first runs the package's __init__, which does import torch).
"""

from __future__ import annotations

import contextlib
import functools
import glob
import os
import pwd
import re
import shutil
import site
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from workbench import paths

BWRAP_ENV = "D2K_BWRAP"  # a bwrap binary; when set, it alone is used
SWITCH_ENV = "D2K_SANDBOX"  # "off" starts solutions unsandboxed
OFF_VALUES = ("off", "0", "no", "false", "none")
INSTALL_HINT = "run scripts/install_bwrap.sh"
PROBE_TIMEOUT_S = 20.0
# Device nodes a GPU process needs: NVIDIA (nvidiactl, nvidiaN, nvidia-uvm, nvidia-uvm-tools,
# nvidia-modeset, nvidia-caps/ for MIG) and AMD ROCm (kfd, dri/). Bound one by one rather than the
# host's whole /dev, which holds disks and other devices that a process of uid 0 could open.
GPU_DEVICE_GLOBS = ("/dev/nvidia*", "/dev/kfd", "/dev/dri")
BASE_MOUNTS = (Path("/dev"), Path("/proc"), Path("/tmp"))  # mounted first by every sandbox; never undone
NAMESPACE_ARGS: tuple[str, ...] = (
    "--unshare-net",
    "--unshare-pid",
    "--unshare-ipc",
    "--unshare-uts",
    "--unshare-cgroup-try",
    "--die-with-parent",
    "--new-session",
    "--cap-drop",
    "ALL",
)


@dataclass(frozen=True)
class SandboxInfo:
    """How a solution process is confined: `kind`, and `detail` for people (the report's line)."""

    kind: Literal["bubblewrap", "none"]
    detail: str


# -- finding and probing bwrap ------------------------------------------------------------------
def local_bwrap() -> Path:
    """Where scripts/install_bwrap.sh puts bwrap: the repository's git-ignored .tools/ folder."""
    return paths.TOOLS_DIR / "bubblewrap" / "usr" / "bin" / "bwrap"


def _executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def find_bwrap() -> Path | None:
    """The bwrap binary to use, or None: $D2K_BWRAP (when set, it alone decides), the repository's
    .tools/bubblewrap/usr/bin/bwrap, then `bwrap` on PATH."""
    explicit = os.environ.get(BWRAP_ENV)
    if explicit:
        path = Path(explicit)
        return path if _executable(path) else None
    local = local_bwrap()
    if _executable(local):
        return local
    found = shutil.which("bwrap")
    return Path(found) if found else None


def launcher_env() -> dict[str, str]:
    """The environment to start bwrap itself with (PATH only): bwrap is pid 1 inside the sandbox, and
    the sandboxed process can read /proc/1/environ."""
    return {"PATH": os.environ.get("PATH") or "/usr/bin:/bin"}


def _is_gpu(device: str) -> bool:
    return device.startswith("cuda")


NVIDIA_GPUS = Path("/proc/driver/nvidia/gpus")  # one folder per GPU, named by PCI bus id


def visible_gpu_minors(env: Mapping[str, str]) -> set[int] | None:
    """The device minors (/dev/nvidiaN) of the GPUs an environment's CUDA_VISIBLE_DEVICES names, or None
    when that cannot be told for sure (then every GPU's node is bound, as before).

    Only indices in PCI bus order are mapped (CUDA_DEVICE_ORDER=PCI_BUS_ID, which a campaign sets when it
    pins a session to a GPU): index i is the i-th GPU by bus id in the driver's list, and its minor is the
    "Device Minor" of that GPU's information file."""
    visible = env.get("CUDA_VISIBLE_DEVICES")
    if visible is None or env.get("CUDA_DEVICE_ORDER", os.environ.get("CUDA_DEVICE_ORDER")) != "PCI_BUS_ID":
        return None
    entries = [v.strip() for v in visible.split(",") if v.strip()]
    if not all(e.isdigit() for e in entries):
        return None  # UUIDs or MIG names: not mapped here
    try:
        gpus = sorted(NVIDIA_GPUS.iterdir(), key=lambda p: p.name.lower())
        minors: set[int] = set()
        for entry in entries:
            info = (gpus[int(entry)] / "information").read_text()
            found = re.search(r"Device Minor:\s*(\d+)", info)
            if found is None:
                return None
            minors.add(int(found.group(1)))
    except (OSError, IndexError):
        return None
    return minors


def _gpu_device_nodes(minors: set[int] | None = None) -> list[str]:
    """The GPU device nodes to bind: with `minors`, of the other NVIDIA GPUs only their /dev/nvidiaN is left
    out (the control, UVM and MIG nodes every CUDA process needs stay)."""
    nodes: list[str] = []
    for pattern in GPU_DEVICE_GLOBS:
        for node in sorted(glob.glob(pattern)):
            number = re.fullmatch(r"/dev/nvidia(\d+)", node)
            if minors is not None and number is not None and int(number.group(1)) not in minors:
                continue
            nodes.append(node)
    return nodes


def _base_args(gpu: bool, minors: set[int] | None = None) -> list[str]:
    """The fixed first mounts: read-only root, a minimal /dev (+ GPU nodes), /proc, private /tmp, /dev/shm."""
    args = ["--ro-bind", "/", "/", "--dev", "/dev"]
    if gpu:
        for node in _gpu_device_nodes(minors):
            args += ["--dev-bind", node, node]
    return [*args, "--proc", "/proc", "--tmpfs", "/tmp", "--tmpfs", "/dev/shm"]


@functools.cache
def _probe(bwrap: str, gpu: bool) -> str | None:
    true = "/bin/true" if _executable(Path("/bin/true")) else (shutil.which("true") or "/bin/true")
    command = [bwrap, *_base_args(gpu), *NAMESPACE_ARGS, "--clearenv", "--chdir", "/tmp", "--", true]
    try:
        done = subprocess.run(
            command, stdin=subprocess.DEVNULL, capture_output=True, timeout=PROBE_TIMEOUT_S, env=launcher_env(), check=False
        )
    except subprocess.TimeoutExpired:
        return f"no answer within {PROBE_TIMEOUT_S:g} s"
    except OSError as exc:
        return str(exc)
    if done.returncode == 0:
        return None
    lines = done.stderr.decode(errors="replace").strip().splitlines()
    return lines[0] if lines else f"exit code {done.returncode}"


def probe(bwrap: Path, device: str) -> str | None:
    """Start the sandbox once with /bin/true (the flags of `wrap`, no extra paths): None when it works,
    else why not (bwrap's first line on stderr). Cached per process for each (bwrap, GPU or not)."""
    return _probe(str(bwrap), _is_gpu(device))


@functools.cache
def _version(bwrap: str) -> str:
    try:
        done = subprocess.run(
            [bwrap, "--version"], stdin=subprocess.DEVNULL, capture_output=True, timeout=PROBE_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return "bubblewrap"
    text = done.stdout.decode(errors="replace").strip()
    return text.splitlines()[0] if text else "bubblewrap"


def _confinement(gpu: bool) -> str:
    devices = "minimal /dev with the GPU device nodes" if gpu else "minimal /dev"
    return (
        "read-only root, private /tmp, no network, own pid/ipc/uts namespaces, "
        f"{devices}, no capabilities, clean environment, dies with its parent"
    )


def status(device: str) -> SandboxInfo:
    """Whether a solution process on `device` would be sandboxed here, and how, or why not."""
    switch = os.environ.get(SWITCH_ENV, "")
    if switch.strip().lower() in OFF_VALUES:
        return SandboxInfo("none", f"disabled by {SWITCH_ENV}={switch}")
    bwrap = find_bwrap()
    if bwrap is None:
        explicit = os.environ.get(BWRAP_ENV)
        if explicit:
            return SandboxInfo("none", f"bwrap not found: {BWRAP_ENV}={explicit} is no executable file")
        return SandboxInfo("none", f"bwrap not found ({INSTALL_HINT})")
    failure = probe(bwrap, device)
    if failure is not None:
        return SandboxInfo("none", f"bwrap failed to start: {failure}")
    return SandboxInfo("bubblewrap", f"{_version(str(bwrap))}: {_confinement(_is_gpu(device))}")


# -- what a solution may see ---------------------------------------------------------------------
def _home_dirs() -> list[Path]:
    homes = [Path.home()]
    with contextlib.suppress(KeyError):
        homes.append(Path(pwd.getpwuid(os.getuid()).pw_dir))
    return homes


def _inside(child: Path, parent: Path) -> bool:
    return Path(os.path.realpath(child)).is_relative_to(os.path.realpath(parent))


def _unique(items: Sequence[Path]) -> list[Path]:
    return list(dict.fromkeys(items))


def default_hidden(extra: Sequence[Path] = ()) -> list[Path]:
    """Paths a solution must never see: the home directory, every child of the repository except the
    `workbench` package and the folder holding the running interpreter (the venv), /run (host
    daemons' sockets), plus `extra` (the harness's task, guidance, sessions roots and scratch)."""
    hidden: list[Path] = [*_home_dirs(), Path("/run"), Path("/var/run")]
    package = paths.REPO_ROOT / "workbench"
    try:
        children = sorted(paths.REPO_ROOT.iterdir())
    except OSError:
        children = []
    for child in children:
        if child == package or _inside(Path(sys.prefix), child):
            continue
        hidden.append(child)
    hidden.extend(Path(p) for p in extra)
    return _unique(hidden)


def default_readable() -> list[Path]:
    """What the interpreter needs even where it lies inside a hidden directory: its prefixes, its
    site-packages, the folder of its (resolved) executable, and the `workbench` package."""
    readable = [Path(sys.prefix), Path(sys.base_prefix), Path(sys.exec_prefix)]
    sites = [*site.getsitepackages(), site.getusersitepackages()]
    readable.extend(Path(p) for p in sites if p and Path(p).is_dir())
    readable.append(Path(sys.executable).resolve().parent)
    readable.append(paths.REPO_ROOT / "workbench")
    return _unique(readable)


# -- the command line ----------------------------------------------------------------------------
def _existing(path: Path) -> Path | None:
    """The path with symlinks resolved, or None when it does not exist."""
    resolved = Path(os.path.realpath(path))
    return resolved if resolved.exists() else None


def _covers_base(path: Path) -> bool:
    """Whether a rule for `path` would undo a fixed mount: / itself, or /tmp, /dev, /proc or one above
    them (a readable /tmp would show the host's /tmp instead of the private one)."""
    return any(base == path or base.is_relative_to(path) for base in BASE_MOUNTS)


def _mount_args(hidden: Sequence[Path], readable: Sequence[Path], writable: Sequence[Path]) -> list[str]:
    """Masks, read-only and writable binds, the most specific last (see the module's docstring).
    Paths that do not exist, and paths that would undo a fixed mount (`_covers_base`), are skipped."""
    rules: dict[tuple[Path, int], None] = {}
    for rank, group in enumerate((hidden, readable, writable)):
        for path in group:
            resolved = _existing(Path(path))
            if resolved is not None and not _covers_base(resolved):
                rules[(resolved, rank)] = None
    ordered = sorted(rules, key=lambda rule: (len(rule[0].parts), rule[1], str(rule[0])))
    bound = {path for path, rank in ordered if rank > 0}
    args: list[str] = []
    remount: list[str] = []
    for path, rank in ordered:
        p = str(path)
        if rank == 0 and path.is_dir():
            args += ["--tmpfs", p]
            if path not in bound:
                remount += ["--remount-ro", p]
        elif rank == 0:
            args += ["--ro-bind", "/dev/null", p]
        elif rank == 1:
            args += ["--ro-bind", p, p]
        else:
            args += ["--bind", p, p]
    return args + remount


def _env_args(env: Mapping[str, str]) -> list[str]:
    args = ["--clearenv"]
    for key, value in env.items():
        if not key or "=" in key or "\0" in key or "\0" in value:
            raise ValueError(f"cannot pass the environment variable {key!r} into the sandbox")
        args += ["--setenv", key, value]
    return args


def wrap(
    argv: list[str],
    *,
    device: str,
    env: dict[str, str],
    readable: Sequence[Path] = (),
    hidden: Sequence[Path] = (),
    writable: Sequence[Path] = (),
    network: bool = False,
    chdir: Path | None = None,
) -> tuple[list[str], SandboxInfo]:
    """The command line that runs `argv` sandboxed with exactly the environment `env`, and how.

    Returns (bwrap + flags + "--" + argv, kind "bubblewrap"), or (argv unchanged, kind "none") when
    $D2K_SANDBOX is "off" or bwrap is not found or does not start here; then the caller must pass
    `env` itself. `device` is the torch device string: "cuda..." binds the GPU's device nodes.
    `hidden` paths are masked, `readable` ones (re-)exposed read-only, `writable` ones bound
    read-write; symlinks are resolved, and paths that do not exist or would undo the fixed mounts
    (/, or /tmp, /dev, /proc or a folder above them) are skipped. Start the returned command
    with `launcher_env()` as its environment; descriptors passed to it (subprocess's pass_fds) reach
    argv's process with the same numbers. `network=True` keeps the host's network (a coding agent
    calls its model's API); `chdir` is the working directory inside (default /tmp).
    """
    info = status(device)
    if info.kind == "none":
        return list(argv), info
    bwrap = find_bwrap()
    assert bwrap is not None
    mounts = _mount_args(hidden, readable, writable)
    namespaces = [a for a in NAMESPACE_ARGS if not (network and a == "--unshare-net")]
    minors = visible_gpu_minors(env) if _is_gpu(device) else None
    command = [
        str(bwrap),
        *_base_args(_is_gpu(device), minors),
        *mounts,
        *namespaces,
        *_env_args(env),
        "--chdir",
        str(chdir or "/tmp"),
        "--",
        *argv,
    ]
    masked = sum(1 for k, flag in enumerate(mounts) if flag == "--tmpfs" or mounts[k : k + 2] == ["--ro-bind", "/dev/null"])
    detail = info.detail.replace("no network, ", "network, ") if network else info.detail
    if minors is not None:
        detail += f", GPU device node(s) {', '.join(f'/dev/nvidia{m}' for m in sorted(minors))} only"
    return command, SandboxInfo(info.kind, f"{detail}, {masked} host paths hidden" if masked else detail)
