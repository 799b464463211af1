"""The kernel calls the warm start's evaluation process makes before any solution code runs: fresh mounts
in its own mount namespace, then every capability dropped for good (solution/zygote.py).

The rule for the mounts: every writable mount the solution process sees is made for this evaluation, or
read-only; checked from the mount table. The zygote's writable mounts (its /proc, /dev, /dev/pts,
/dev/shm and /tmp: one file system each, which every evaluation of the zygote would share) are found in
/proc/self/mountinfo, not from a list of paths, and made read-only; new ones are mounted over them; then
`verify_mounts` reads the table again and raises unless each writable mount left is one made for this
evaluation (by its mount id), a device node (which holds no files; a read-only mount would not stop
writes to it anyway) or out of reach under another mount (the host's, when the sandbox binds its root).

Linux only (5.2 or later), through the C library (ctypes): mount(2), open_tree(2), move_mount(2), prctl(2)
and capset(2) have no Python wrappers.
Every call is checked; `drop_capabilities` ends by reading /proc/self/status and raises unless every
capability set is empty and no_new_privs is on, so a kernel that refused a step stops the evaluation's
start (the checker then starts the solution the plain way) instead of running it with privileges.
Imports only the standard library.
"""

from __future__ import annotations

import ctypes
import os
import re
import stat
from pathlib import Path
from typing import NamedTuple

MS_RDONLY = 0x1
MS_NOSUID = 0x2
MS_NODEV = 0x4
MS_NOEXEC = 0x8
MS_REMOUNT = 0x20
MS_BIND = 0x1000
MS_REC = 0x4000
MS_PRIVATE = 0x40000
CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_CAPBSET_DROP = 24
PR_SET_NO_NEW_PRIVS = 38
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
CAPABILITY_VERSION_3 = 0x20080522
SYS_OPEN_TREE = 428  # the same number on every architecture (added in Linux 5.2)
SYS_MOVE_MOUNT = 429
AT_FDCWD = -100
OPEN_TREE_CLONE = 0x1
AT_RECURSIVE = 0x8000
MOVE_MOUNT_F_EMPTY_PATH = 0x4
CAPABILITY_SETS = ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")


class ConfineError(OSError):
    """A kernel call of the confinement failed: the process must not run a solution."""


class _CapHeader(ctypes.Structure):
    _fields_ = (("version", ctypes.c_uint32), ("pid", ctypes.c_int))


class _CapData(ctypes.Structure):
    _fields_ = (("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32))


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise ConfineError(errno, f"{what}: {os.strerror(errno)}")


def prctl(option: int, value: int, what: str) -> None:
    _check(_libc().prctl(option, ctypes.c_ulong(value), ctypes.c_ulong(0), ctypes.c_ulong(0), ctypes.c_ulong(0)), what)


def mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    def c(text: str | None) -> bytes | None:
        return None if text is None else text.encode()

    result = _libc().mount(c(source), c(target), c(fstype), ctypes.c_ulong(flags), c(data))
    _check(result, f"mount {fstype or source} on {target}")


def unshare(flags: int) -> None:
    """unshare(2) (os.unshare from Python 3.12 only)."""
    _check(_libc().unshare(ctypes.c_int(flags)), "unshare")


def set_dumpable(on: bool) -> None:
    """Off: no process without CAP_SYS_PTRACE over this one may trace it or read its memory or descriptors
    (the zygote, whose image every evaluation's process starts from)."""
    prctl(PR_SET_DUMPABLE, 1 if on else 0, "prctl(PR_SET_DUMPABLE)")


class Mount(NamedTuple):
    """One line of /proc/self/mountinfo: the mount's id, its mount point and its per-mount options."""

    id: int
    point: str
    options: frozenset[str]

    @property
    def writable(self) -> bool:
        return "rw" in self.options


def mount_table() -> list[Mount]:
    """This mount namespace's mounts, in /proc/self/mountinfo's order (a mount before those on it)."""
    found = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        fields = line.split()
        if len(fields) > 5:
            point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), fields[4])
            found.append(Mount(int(fields[0]), point, frozenset(fields[5].split(","))))
    return found


def mount_points() -> list[str]:
    """This mount namespace's mount points, in /proc/self/mountinfo's order (a mount before those on it)."""
    return [m.point for m in mount_table()]


def _below(path: str, points: list[str]) -> list[str]:
    """The mount points strictly below `path` that lie on no other one below it, each once."""
    inside = [p for p in dict.fromkeys(points) if p.startswith(path.rstrip("/") + "/")]
    return [p for p in inside if not any(q != p and p.startswith(q.rstrip("/") + "/") for q in inside)]


def _new_mount(path: str, before: set[int]) -> int:
    """The id of the one mount at `path` whose id is not in `before` (the mount just made there)."""
    new = {m.id for m in mount_table() if m.point == path} - before
    if len(new) != 1:
        raise ConfineError(1, f"no single new mount on {path} in the mount table: {sorted(new)}")
    return new.pop()


def fresh_mount(path: str, fstype: str, flags: int, data: str | None) -> int:
    """Mount a new `fstype` on `path`, keeping what is mounted below it: each top mount below `path` is
    cloned with everything on it (its flags, read-only ones included) before, and moved onto the new
    file system after (open_tree and move_mount). What the new one shows is new; what was bound into the
    old one (the interpreter's files under /tmp, bwrap's read-only /proc/sys) is there as it was.
    Returns the new mount's id (the clones moved onto it have ids of their own, and are not fresh)."""
    libc = _libc()
    clones: list[tuple[str, int, bool]] = []
    try:
        for point in _below(path, mount_points()):
            fd = libc.syscall(SYS_OPEN_TREE, AT_FDCWD, point.encode(), OPEN_TREE_CLONE | os.O_CLOEXEC | AT_RECURSIVE)
            if fd < 0:
                _check(-1, f"open_tree {point}")
            clones.append((point, fd, Path(point).is_dir()))
        before = {m.id for m in mount_table()}
        mount(fstype, path, fstype, flags, data)
        new_id = _new_mount(path, before)
        for point, fd, is_dir in clones:
            target = Path(point)
            if not target.exists():  # its mount point in the new file system (a tmpfs: /proc has its own)
                target.parent.mkdir(parents=True, exist_ok=True)
                if is_dir:
                    target.mkdir()
                else:
                    target.touch()
            _check(
                libc.syscall(SYS_MOVE_MOUNT, fd, b"", AT_FDCWD, point.encode(), MOVE_MOUNT_F_EMPTY_PATH), f"move_mount {point}"
            )
    finally:
        for _, fd, _ in clones:
            os.close(fd)
    return new_id


def _symlinks(folder: str) -> dict[str, str]:
    """The symbolic links directly in `folder`, by name, and their targets."""
    return {link.name: str(link.readlink()) for link in Path(folder).iterdir() if link.is_symlink()}


def fresh_dev() -> set[int]:
    """A new /dev, as bwrap's --dev made the sandbox's: a tmpfs (nosuid, nodev: its device nodes are
    mounts of their own, kept by `fresh_mount`), the same symbolic links (fd, stdin, ptmx -> pts/ptmx,
    ...; read from the old /dev, none added) and a new devpts instance on /dev/pts (no pty of another
    evaluation shows there). The new mounts' ids."""
    links = _symlinks("/dev")
    fresh = {fresh_mount("/dev", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755")}
    for name, target in links.items():
        Path("/dev", name).symlink_to(target)
    if Path("/dev/pts").is_dir():
        fresh.add(fresh_mount("/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC, "newinstance,ptmxmode=0666,mode=620"))
    return fresh


def _on_top(path: str) -> tuple[int, int] | None:
    """The id and file mode of the mount a lookup of `path` reaches (the one on top there: a mount under
    another at the same point, or on one that is covered, is not), None if nothing is there."""
    try:
        fd = os.open(path, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        fields = dict(line.split(":", 1) for line in Path(f"/proc/self/fdinfo/{fd}").read_text().splitlines() if ":" in line)
        return int(fields["mnt_id"]), os.fstat(fd).st_mode
    finally:
        os.close(fd)


def _kept_flags(options: frozenset[str]) -> int:
    """The nosuid, nodev and noexec flags of a mount's per-mount options: a remount that dropped one that is
    locked (a mount made outside this user namespace) fails with EPERM."""
    return sum(flag for name, flag in (("nosuid", MS_NOSUID), ("nodev", MS_NODEV), ("noexec", MS_NOEXEC)) if name in options)


def writable_left(fresh: set[int]) -> list[Mount]:
    """The writable mounts a process reaches at their mount points that are neither in `fresh` (made for
    this evaluation) nor device nodes (a read-only mount would not stop writes to one, and it holds no
    files). A mount covered by another is out of reach (the solution process starts after the covering,
    holding no descriptor from before, and cannot unmount), so it is not counted."""
    left = []
    for m in mount_table():
        top = _on_top(m.point) if m.writable and m.id not in fresh else None
        if top is not None and top[0] == m.id and not (stat.S_ISCHR(top[1]) or stat.S_ISBLK(top[1])):
            left.append(m)
    return left


def read_only_rest(fresh: set[int]) -> None:
    """Bind-remount read-only every mount `writable_left` finds, keeping its nosuid, nodev and noexec flags.
    A mount is reached by its path only while it is on top there: call this before mounting over one
    (`fresh_mounts` does), so that what is covered is read-only too."""
    for m in writable_left(fresh):
        mount(None, m.point, None, MS_REMOUNT | MS_BIND | MS_RDONLY | _kept_flags(m.options))


def verify_mounts(fresh: set[int]) -> None:
    """Raise ConfineError if /proc/self/mountinfo shows a writable mount that `writable_left` finds."""
    left = writable_left(fresh)
    if left:
        raise ConfineError(1, f"writable mounts left that were not made for this evaluation: {[m.point for m in left]}")


def fresh_mounts(solution_dir: str) -> None:
    """In a mount namespace of this process's own (and as pid 1 of its own pid namespace), every writable
    mount the solution process sees is made for this evaluation, or read-only; checked from the mount
    table. First every writable mount (the zygote's /proc, /dev, /dev/pts, /dev/shm, /tmp: one file system
    each, shared by every evaluation of the zygote) becomes read-only, then new ones are mounted over them:
    /proc shows only this namespace's processes; /dev (`fresh_dev`), /tmp and /dev/shm are new and
    empty, with the sandbox's binds below them kept (device nodes, read-only files); `solution_dir` (made
    inside /tmp) is a tmpfs of its own for the solution's copy (`seal` makes it read-only). Device nodes
    stay writable: they hold no files. Ends by verifying the table (`verify_mounts`)."""
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    read_only_rest(set())
    fresh = {fresh_mount("/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None)}
    fresh |= fresh_dev()  # before /dev/shm: the new /dev/shm must end on top
    fresh.add(fresh_mount("/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777"))
    fresh.add(fresh_mount("/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777"))
    Path(solution_dir).mkdir(mode=0o755)
    fresh.add(fresh_mount(solution_dir, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=16m"))
    read_only_rest(fresh)  # the clones moved onto the new mounts are of read-only mounts already: a check
    verify_mounts(fresh)


def seal(path: str) -> None:
    """Remount the tmpfs at `path` read-only (before the capabilities go: afterwards nothing can undo it)."""
    mount(None, path, None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)


def drop_capabilities() -> None:
    """Empty every capability set (bounding and ambient included) and set no_new_privs, then verify."""
    last = int(Path("/proc/sys/kernel/cap_last_cap").read_text())
    for cap in range(last + 1):
        prctl(PR_CAPBSET_DROP, cap, f"prctl(PR_CAPBSET_DROP, {cap})")
    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, "prctl(PR_CAP_AMBIENT_CLEAR_ALL)")
    header = _CapHeader(CAPABILITY_VERSION_3, 0)
    data = (_CapData * 2)()
    _check(_libc().capset(ctypes.byref(header), data), "capset")
    prctl(PR_SET_NO_NEW_PRIVS, 1, "prctl(PR_SET_NO_NEW_PRIVS)")
    verify_unprivileged()


def verify_unprivileged() -> None:
    """Raise ConfineError unless /proc/self/status shows every capability set empty and no_new_privs on."""
    fields = dict(line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines() if ":" in line)
    left = [name for name in CAPABILITY_SETS if int(fields.get(name, "1").strip() or "1", 16) != 0]
    if left or fields.get("NoNewPrivs", "0").strip() != "1":
        raise ConfineError(1, f"capabilities left after the drop: {left or 'no_new_privs off'}")
