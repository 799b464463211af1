"""The kernel calls the warm start's evaluation process makes before any solution code runs: fresh mounts
in its own mount namespace, then every capability dropped for good (solution/zygote.py).

Linux only, through the C library (ctypes): mount(2), prctl(2) and capset(2) have no Python wrappers.
Every call is checked; `drop_capabilities` ends by reading /proc/self/status and raises unless every
capability set is empty and no_new_privs is on, so a kernel that refused a step stops the evaluation's
start (the checker then starts the solution the plain way) instead of running it with privileges.
Imports only the standard library.
"""

from __future__ import annotations

import ctypes
import os
from pathlib import Path

MS_RDONLY = 0x1
MS_NOSUID = 0x2
MS_NODEV = 0x4
MS_NOEXEC = 0x8
MS_REMOUNT = 0x20
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


def fresh_mounts(solution_dir: str) -> None:
    """In a mount namespace of this process's own (and as pid 1 of its own pid namespace): mount changes
    stay here, /proc shows only this namespace's processes, /tmp and /dev/shm are new and empty, and
    `solution_dir` (made inside /tmp) is a tmpfs of its own for the solution's copy."""
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777")
    mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777")
    Path(solution_dir).mkdir(mode=0o755)
    mount("tmpfs", solution_dir, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=16m")


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
