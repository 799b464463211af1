"""Start the untrusted solution process inside bubblewrap (`bwrap`): the launcher's command line.

Threat: a solution is arbitrary Python and GPU code written by an adversarial agent that wants a
better score than it earned. Run as an ordinary process it could read the expert solution, the
guidance, other sessions, another checkout of the project or the harness's scratch (and copy answers),
rewrite the task or the harness on disk, read secrets from the environment or the home directory (API
keys), talk to the network or to host daemons' sockets, signal or inspect the checker, or leave a
process running after the evaluation.

The solution process: `isolate`, an ALLOW-LIST. The root is bwrap's own empty tmpfs, remounted
read-only last; nothing of the machine is visible unless bound, whatever its path. Bound read-only: the
system folders (`SYSTEM_DIRS`: /usr, /lib*, /bin, /sbin, a top-level symlink of a merged /usr recreated
as the same symlink; `SYSTEM_FILES`: /etc/ld.so.cache for the loader and `ldconfig -p`, /etc/alternatives
for Debian's `cc`, which Triton compiles its launcher with on a GPU, and /sys), a one-line /etc/passwd
and /etc/group naming the process's own user (`pwd` lookups of torch and Triton), the interpreter
(`interpreter_paths`: prefixes, site-packages, the import-path entries of `SOLUTION_PACKAGES`, shared
libraries this process mapped elsewhere, the paths `PATH_ENV` variables name), and what the caller names
(the package's solution-side modules file by file, `module_files`; the solution file). Then the same
minimal /dev (+ GPU nodes), /proc, private /tmp and /dev/shm, namespaces and environment as below, plus a
user namespace of its own (`USER_NAMESPACE_ARGS`: there bwrap empties the capability bounding set); a
`hidden` path that lies inside a bound folder is masked there. bwrap reads all these arguments from a
pipe (`--args FD`, closed before the program starts) and runs as argv[0] "bwrap" with `launcher_env()`,
so /proc/1/cmdline inside (bwrap's init) is `bwrap --args N --` and the program's own argv, naming no
hidden path. `Launch` carries the command, the descriptors to pass and the environment to start it with.

The coding agents and the profile tool: `wrap`, the host's root with a deny-list (below); an agent CLI
needs much of the machine (its runtime, its configuration). Inside the sandbox that `wrap` builds, the
process sees:

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

Triton's cache: the caller (remote.py) points TRITON_CACHE_DIR, HOME and TMPDIR into the private /tmp,
or, unsandboxed, into fresh per-evaluation folders it removes afterwards.

Imports only the standard library and `workbench.paths` (no torch; note that importing it as
`workbench.harness.host.sandbox` first runs the package's __init__, which does import torch).
"""

from __future__ import annotations

import ast
import contextlib
import fcntl
import functools
import glob
import importlib.util
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


def _base_args(gpu: bool, minors: set[int] | None = None, *, root: bool = True) -> list[str]:
    """The fixed first mounts: the host's root read-only (not with `root=False`: bwrap's own empty root
    stays), a minimal /dev (+ GPU nodes), /proc, private /tmp, /dev/shm."""
    args = ["--ro-bind", "/", "/", "--dev", "/dev"] if root else ["--dev", "/dev"]
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


# -- the allow-list sandbox of the solution process ---------------------------------------------------
# System folders: programs, shared libraries, headers and the C compiler Triton builds its launcher with
# on a GPU. They hold no user data. A top-level one that is a symlink (/bin -> usr/bin on a merged /usr)
# is made the same symlink inside.
SYSTEM_DIRS = (Path("/usr"), Path("/bin"), Path("/sbin"), Path("/lib"), Path("/lib32"), Path("/lib64"), Path("/libx32"))
# Of /etc only what the dynamic loader and the compiler driver read: the library cache and the
# alternatives' symlinks (Debian's /usr/bin/cc -> /etc/alternatives/cc -> gcc). /sys: read-only kernel
# and device information (CPU topology for torch, PCI and NUMA data for the CUDA driver).
SYSTEM_FILES = (Path("/etc/ld.so.cache"), Path("/etc/alternatives"), Path("/sys"))
# Environment variables that name folders or files the interpreter's libraries need (bound read-only
# when set in the environment the process gets)
PATH_ENV = ("LD_LIBRARY_PATH", "CUDA_HOME", "CUDA_PATH", "TRITON_PTXAS_PATH", "TRITON_LIBCUDA_PATH")
# Packages the solution process imports; the import-path entry holding each is bound when it lies
# outside the interpreter's prefixes and site-packages (an unusual install)
SOLUTION_PACKAGES = ("torch", "triton", "numpy", "pydantic", "pydantic_core", "typing_extensions")
ARGS_PIPE_LIMIT = 1 << 20  # bwrap reads its arguments from a pipe (--args): at most this many bytes


def _system_args() -> list[str]:
    """Read-only binds of the system folders (`SYSTEM_DIRS`, `SYSTEM_FILES`); a top-level symlink (merged
    /usr) becomes the same symlink."""
    args: list[str] = []
    for path in SYSTEM_DIRS:
        if path.is_symlink():
            args += ["--symlink", str(path.readlink()), str(path)]
        elif path.is_dir():
            args += ["--ro-bind", str(path), str(path)]
    for path in SYSTEM_FILES:
        if path.exists():
            args += ["--ro-bind", str(path), str(path)]
    return args


def _system_covers(path: Path) -> bool:
    """Whether `path` is already visible through the system binds (or a top-level symlink of them)."""
    roots = [*SYSTEM_DIRS, *SYSTEM_FILES]
    return any(path == root or path.is_relative_to(root) for root in roots)


def _mapped_files() -> list[Path]:
    """The regular files this process has mapped (its shared libraries: the checker has imported torch);
    never device nodes (a CUDA process maps /dev/nvidia*: bound read-only they could not be opened)."""
    found: list[Path] = []
    with contextlib.suppress(OSError), open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
        for line in maps:
            fields = line.split(maxsplit=5)
            if len(fields) == 6 and fields[5].startswith("/") and not fields[5].rstrip().endswith("(deleted)"):
                found.append(Path(fields[5].rstrip()))
    return [path for path in _unique(found) if path.is_file() and not _in_kernel_folder(path)]


def _in_kernel_folder(path: Path) -> bool:
    """Whether `path` lies in /dev or /proc, which the sandbox mounts itself (a bind there would replace
    a device node by a read-only copy, or show the host's processes)."""
    return any(path == root or path.is_relative_to(root) for root in (Path("/dev"), Path("/proc")))


def _import_root(package: str) -> Path | None:
    """The import-path entry that holds `package`, or None when it is not installed."""
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin or not spec.has_location:
        return None
    origin = Path(spec.origin)
    top = origin.parent if origin.name == "__init__.py" else origin
    return top.parent


# What a sandboxed worker (the solution process, the profile tool's process) inherits from the caller's
# environment. CUDA_DEVICE_ORDER: the GPU index given below means the same GPU inside as outside (a
# campaign pins sessions by index in PCI bus order).
WORKER_PASSED_ENV = ("LD_LIBRARY_PATH", "CUDA_HOME", "CUDA_PATH", "TRITON_PTXAS_PATH", "TRITON_LIBCUDA_PATH", "CUDA_DEVICE_ORDER")


def worker_env(device: str) -> dict[str, str]:
    """The environment of a sandboxed worker on `device` ("cpu", "cuda" or "cuda:N"): a fixed base, the
    CUDA and Triton paths the caller has, and on a GPU only that GPU visible (as cuda:0 inside)."""
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": "/tmp",
        "PYTHONUNBUFFERED": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
        "TRITON_CACHE_DIR": "/tmp/triton-cache",
        "TMPDIR": "/tmp",
    }
    env.update({name: os.environ[name] for name in WORKER_PASSED_ENV if name in os.environ})
    if device == "cpu":
        env["TRITON_INTERPRET"] = "1"
        env["CUDA_VISIBLE_DEVICES"] = ""
        return env
    _, _, number = device.partition(":")
    if number and not number.isdigit():
        raise ValueError(f"bad device {device!r}")
    index = int(number or 0)
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    ids = [v.strip() for v in visible.split(",")] if visible else []
    env["CUDA_VISIBLE_DEVICES"] = ids[index] if index < len(ids) else str(index)
    return env


def interpreter_paths(env: Mapping[str, str] | None = None) -> list[Path]:
    """What the interpreter of this process needs beyond the system folders, read-only: its prefixes
    (the virtual environment and the installation it was made from), its site-packages, the import-path
    entries of `SOLUTION_PACKAGES`, the shared libraries this process has mapped where they lie outside
    those, and the files and folders that `env`'s `PATH_ENV` variables name."""
    found = [Path(p) for p in (sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix)]
    found.append(Path(os.path.realpath(sys.executable)))
    found.extend(Path(p) for p in site.getsitepackages() if Path(p).is_dir())
    roots = [_import_root(name) for name in SOLUTION_PACKAGES]
    found.extend(root for root in roots if root is not None)
    covered = [Path(os.path.realpath(p)) for p in found]
    for mapped in _mapped_files():
        if not _system_covers(mapped) and not any(mapped.is_relative_to(c) for c in covered):
            found.append(mapped)
    for name in PATH_ENV:
        for item in (env or {}).get(name, "").split(os.pathsep):
            if item and Path(item).is_absolute():
                found.append(Path(item))
    return [p for p in _unique(found) if p.exists() and not _system_covers(p) and not _covers_base(p) and p != Path("/")]


def import_path(interpreter: Sequence[Path]) -> list[str]:
    """The import path of a sandboxed interpreter: this package's root, then the entries of sys.path that
    lie inside the bound interpreter folders (`interpreter_paths`); it names nothing else. The running
    program's own folder (sys.path[0] for a script or `-m`; a console script's bin/ folder) is not the
    interpreter's, so it is left out: the path is the same whichever program asks (the host and the checker
    must agree on it for the warm start, host/solution_plan.py)."""
    own = set() if sys.flags.safe_path or not sys.path else {sys.path[0]}
    if sys.argv and sys.argv[0] and Path(sys.argv[0]).is_file():
        own.add(str(Path(sys.argv[0]).resolve().parent))
    found = [str(paths.IMPORT_ROOT)]
    for entry in sys.path:
        if entry in own or entry in found or not entry or not Path(entry).is_dir():
            continue
        if any(Path(entry).is_relative_to(p) for p in interpreter):
            found.append(entry)
    return found


def module_files(modules: Sequence[str], import_root: Path | None = None) -> list[Path]:
    """The source files of `modules` (dotted names under `import_root`, default the one this package is
    imported from), of their packages' __init__ files, and of every module of that root they import
    (followed through the whole tree, imports inside functions included; read from the source, so a
    module that imports more is followed at the next evaluation without a list to keep)."""
    root = import_root or paths.IMPORT_ROOT
    tops = {name.split(".")[0] for name in modules}

    def source(name: str) -> Path | None:
        base = root.joinpath(*name.split("."))
        for candidate in (base / "__init__.py", base.with_suffix(".py")):
            if candidate.is_file():
                return candidate
        return None

    found: dict[str, Path] = {}
    todo = list(modules)
    while todo:
        parts = todo.pop().split(".")
        for depth in range(1, len(parts) + 1):
            name = ".".join(parts[:depth])
            file = source(name)
            if file is None or name in found:
                continue
            found[name] = file
            try:
                tree = ast.parse(file.read_text(encoding="utf-8"), filename=str(file))
            except (OSError, SyntaxError, ValueError):
                continue
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    todo += [alias.name for alias in node.names if alias.name.split(".")[0] in tops]
                elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0 and node.module.split(".")[0] in tops:
                    todo += [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
    return sorted(found.values())


@dataclass
class Launch:
    """A command ready to start: `subprocess.Popen(command, executable=executable, env=env,
    pass_fds=[*yours, *pass_fds])`, then `close()` (also when the start fails)."""

    command: list[str]
    executable: str | None
    env: dict[str, str]
    pass_fds: tuple[int, ...]
    info: SandboxInfo

    def close(self) -> None:
        for fd in self.pass_fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        self.pass_fds = ()


def _args_pipe(args: Sequence[str]) -> int:
    """A pipe's read end holding `args` NUL-separated, for bwrap's --args (bwrap reads it and closes it
    before the program starts; a pipe once read holds nothing more)."""
    return _pipe(b"".join(arg.encode() + b"\0" for arg in args))


def _identity_files() -> dict[str, bytes]:
    """A one-line /etc/passwd and /etc/group naming only the process's own user (Python's pwd module, which
    torch and Triton call, raises without an entry for the uid), instead of the host's files."""
    uid, gid = os.getuid(), os.getgid()
    try:
        name = pwd.getpwuid(uid).pw_name
    except KeyError:
        name = "d2k"
    return {
        "/etc/passwd": f"{name}:x:{uid}:{gid}:{name}:/tmp:/usr/sbin/nologin\n".encode(),
        "/etc/group": f"{name}:x:{gid}:\n".encode(),
    }


def _pipe(data: bytes) -> int:
    """A pipe's read end holding `data` (for bwrap, which reads it before the program starts)."""
    if len(data) > ARGS_PIPE_LIMIT:
        raise ValueError(f"the sandbox's arguments take {len(data)} bytes, more than {ARGS_PIPE_LIMIT}")
    read, write = os.pipe()
    try:
        if len(data) > 60_000:
            fcntl.fcntl(write, fcntl.F_SETPIPE_SZ, ARGS_PIPE_LIMIT)
        view = memoryview(data)
        while view:
            view = view[os.write(write, view) :]
    except BaseException:
        os.close(read)
        raise
    finally:
        os.close(write)
    return read


def _bind_targets(path: Path) -> list[Path]:
    """Where a readable or writable path is bound inside: its real location, and the path as given
    where that differs (a symlink on the way) and does not go through a system symlink (/lib, /bin)."""
    given = Path(os.path.normpath(path.absolute()))
    real = Path(os.path.realpath(path))
    targets = [real]
    links = [d for d in SYSTEM_DIRS if d.is_symlink()]
    if given != real and not any(given.is_relative_to(link) for link in links):
        targets.append(given)
    return targets


def _isolated_mounts(hidden: Sequence[Path], readable: Sequence[Path], writable: Sequence[Path]) -> list[str]:
    """The binds of the empty root: each readable and writable path, and a mask on each hidden path that
    lies inside one of them or inside a system folder, ordered by depth (at the same path the mask
    last). A readable or writable path inside another of the same kind, with no hidden path between,
    is left out (already visible); a readable one inside a writable one stays read-only."""
    binds: dict[Path, int] = {}
    for rank, group in ((2, writable), (1, readable)):
        for path in group:
            if not Path(path).exists():
                continue
            for target in _bind_targets(Path(path)):
                if not _covers_base(target) and not _system_covers(target) and not _in_kernel_folder(target):
                    binds.setdefault(target, rank)

    def inside_bound(path: Path) -> bool:
        return _system_covers(path) or any(path != b and path.is_relative_to(b) for b in binds)

    masked = _unique([h for h in (Path(os.path.realpath(p)) for p in hidden) if h.exists() and inside_bound(h)])

    def redundant(path: Path, rank: int) -> bool:
        return any(
            other != path
            and path.is_relative_to(other)
            and other_rank == rank
            and not any(h != other and h.is_relative_to(other) and path.is_relative_to(h) for h in masked)
            for other, other_rank in binds.items()
        )

    rules = [(p, r) for p, r in binds.items() if not redundant(p, r)] + [(h, 0) for h in masked]
    rules.sort(key=lambda rule: (len(rule[0].parts), rule[1] == 0, str(rule[0])))
    args: list[str] = []
    remount: list[str] = []
    for path, rank in rules:
        p = str(path)
        if rank == 0 and path.is_dir():
            args += ["--tmpfs", p]
            remount += ["--remount-ro", p]
        elif rank == 0:
            args += ["--ro-bind", "/dev/null", p]
        else:
            args += ["--ro-bind" if rank == 1 else "--bind", p, p]
    return args + remount


# The allow-list sandbox's user namespace. bwrap empties the capability bounding set only in a user namespace
# it makes (or when it is installed setuid); started by uid 0 without one, it drops the held capabilities
# (--cap-drop ALL) but leaves the bounding set full. In a user namespace of its own, uid 0 is mapped to
# itself (the same files are readable) and the set is empty, as in the warm start's process (the zygote
# runs in this namespace too; its process empties the set itself, solution/confine.py).
USER_NAMESPACE_ARGS: tuple[str, ...] = ("--unshare-user",)


@functools.cache
def _probe_isolated(bwrap: str, gpu: bool, user_namespace: bool) -> str | None:
    true = "/bin/true" if _executable(Path("/bin/true")) else (shutil.which("true") or "/bin/true")
    namespaces = [*NAMESPACE_ARGS, *(USER_NAMESPACE_ARGS if user_namespace else ())]
    args = [*_base_args(gpu, root=False), *_system_args(), *namespaces, "--clearenv", "--remount-ro", "/", "--chdir", "/tmp"]
    launch = None
    try:
        launch = _args_pipe(args)
        done = subprocess.run(
            ["bwrap", "--args", str(launch), "--", true],
            executable=bwrap,
            pass_fds=[launch],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=PROBE_TIMEOUT_S,
            env=launcher_env(),
            check=False,
        )
    except subprocess.TimeoutExpired:
        return f"no answer within {PROBE_TIMEOUT_S:g} s"
    except OSError as exc:
        return str(exc)
    finally:
        if launch is not None:
            os.close(launch)
    if done.returncode == 0:
        return None
    lines = done.stderr.decode(errors="replace").strip().splitlines()
    return lines[0] if lines else f"exit code {done.returncode}"


# The warm start's zygote (solution/zygote.py) makes each evaluation's namespaces itself (mount, pid, ipc,
# network, uts), mounts that evaluation's fresh /proc, /tmp and /dev/shm, then drops every capability before
# any solution code runs. For that it alone gets CAP_SYS_ADMIN (the namespaces and mounts) and CAP_SETPCAP
# (to empty the bounding set), in the sandbox's user namespace (`USER_NAMESPACE_ARGS`): capabilities over the
# sandbox's namespaces only, never the host's.
ADMIN_ARGS: tuple[str, ...] = ("--cap-add", "CAP_SYS_ADMIN", "--cap-add", "CAP_SETPCAP")


def isolate_args(
    *,
    device: str,
    env: Mapping[str, str],
    readable: Sequence[Path],
    writable: Sequence[Path] = (),
    hidden: Sequence[Path] = (),
    chdir: Path | None = None,
    user_namespace: bool = True,
) -> list[str]:
    """bwrap's arguments for the allow-list sandbox (without the identity files, which `isolate` adds as
    pipes): two calls that return the same list start processes that see the same files. `user_namespace`
    False: without `USER_NAMESPACE_ARGS` (where bwrap cannot make one)."""
    gpu = _is_gpu(device)
    minors = visible_gpu_minors(env) if gpu else None
    return [
        *_base_args(gpu, minors, root=False),
        *_system_args(),
        *_isolated_mounts(hidden, readable, writable),
        *NAMESPACE_ARGS,
        *(USER_NAMESPACE_ARGS if user_namespace else ()),
        *_env_args(env),
        "--remount-ro",
        "/",
        "--chdir",
        str(chdir or "/tmp"),
    ]


def isolate(
    argv: list[str],
    *,
    device: str,
    env: dict[str, str],
    readable: Sequence[Path],
    writable: Sequence[Path] = (),
    hidden: Sequence[Path] = (),
    chdir: Path | None = None,
    admin: bool = False,
) -> Launch:
    """Run `argv` in the allow-list sandbox: an empty, read-only root with only the system folders
    (`SYSTEM_DIRS`, `SYSTEM_FILES`), `readable` (read-only) and `writable` bound, a minimal /dev (with the
    GPU's nodes for "cuda..." devices), its own /proc, a private /tmp and /dev/shm; `hidden` paths that
    lie inside a bound folder are masked there. bwrap reads its arguments from a pipe (`--args`), so its
    own command line, which every process inside can read as /proc/1/cmdline, is `bwrap --args N --`
    and `argv`. The process runs in a user namespace of its own, with an empty capability bounding set;
    where bwrap cannot make one here, without it (the info says so). Without a working bwrap (or with
    $D2K_SANDBOX off) the Launch runs `argv` with `env` unchanged and its info says why (kind "none").
    `admin`: the warm start's zygote only (`ADMIN_ARGS`; it needs the user namespace)."""
    info = status(device)
    user_namespace = True
    if info.kind == "bubblewrap":
        bwrap = find_bwrap()
        assert bwrap is not None
        failure = _probe_isolated(str(bwrap), _is_gpu(device), True)
        if failure is not None and not admin and _probe_isolated(str(bwrap), _is_gpu(device), False) is None:
            user_namespace = False
            info = SandboxInfo(info.kind, f"{info.detail}, no user namespace ({failure}): capability bounding set kept")
        elif failure is not None:
            info = SandboxInfo("none", f"bwrap failed to start with an empty root: {failure}")
    if info.kind == "none":
        return Launch(list(argv), None, dict(env), (), info)
    assert bwrap is not None
    minors = visible_gpu_minors(env) if _is_gpu(device) else None
    args = isolate_args(
        device=device, env=env, readable=readable, writable=writable, hidden=hidden, chdir=chdir, user_namespace=user_namespace
    )
    if admin:
        args[-4:-4] = ADMIN_ARGS
    fds: list[int] = []
    try:
        for dest, data in _identity_files().items():
            fds.append(_pipe(data))
            args[-4:-4] = ["--ro-bind-data", str(fds[-1]), dest]  # before the final remount and --chdir
        fds.append(_args_pipe(args))
    except BaseException:
        for fd in fds:
            os.close(fd)
        raise
    detail = info.detail.replace("read-only root", "empty read-only root (system folders, the interpreter and named files only)")
    if minors is not None:
        detail += f", GPU device node(s) {', '.join(f'/dev/nvidia{m}' for m in sorted(minors))} only"
    command = ["bwrap", "--args", str(fds[-1]), "--", *argv]
    return Launch(command, str(bwrap), launcher_env(), tuple(fds), SandboxInfo(info.kind, detail))
