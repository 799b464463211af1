"""The solution process's warm start (solution/zygote.py, host/solution_pool.py, checker/launch.py): it is
taken where the sandbox is the same, it passes what the plain start passes, and it keeps every evaluation
as fresh as a new bwrap would: nothing one solution writes, starts or holds reaches the next, the solution
holds no capability and cannot see the zygote, and a sandbox the zygote was not made for is never used."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from pathlib import Path

import pytest
from pooled_evaluate import process_pool

from workbench import paths
from workbench.catalog import Catalog
from workbench.harness.checker.host_times import descendants
from workbench.harness.checker.launch import launch_warm
from workbench.harness.host import sandbox, solution_plan
from workbench.harness.host.checker_pool import CheckerPool
from workbench.harness.host.evaluate import evaluate
from workbench.harness.host.solution_pool import SolutionZygotes
from workbench.harness.protocol.report import EvalReport

pytestmark = pytest.mark.slow  # each test starts a zygote (an interpreter importing torch) and evaluations

REPO = paths.REPO_ROOT
TASK = Catalog(REPO / "tasks", REPO / "guidance").task("rmsnorm_bwd")
NAIVE = (REPO / "tests" / "solutions" / "rmsnorm_bwd_naive.py").read_text().replace("from __future__ import annotations", "")
WORKLOAD = ["smoke_m64_n256"]
PROBE = sandbox.status("cpu")
needs_bwrap = pytest.mark.skipif(PROBE.kind != "bubblewrap", reason=f"no sandbox on this machine: {PROBE.detail}")

# Import-time code of probe solutions (the module's top, before the honest kernels): the static policy
# refuses most of what a probe needs, so these evaluations run with static_policy=False (the sandbox is
# the defence under test). A probe reports by raising: the report's message carries the text.
LEAVE_TRACES = """
import ctypes, os, time
open("/tmp/left-by-the-last", "w").write("secret answers")
open("/dev/shm/left-by-the-last", "w").write("secret answers")
if os.fork() == 0:  # a process left behind, in a session of its own
    os.setsid()
    time.sleep(300)
    os._exit(0)
"""
LOOK_AROUND = """
import ctypes, json, os
_seen = {
    "files": [p for p in ("/tmp/left-by-the-last", "/dev/shm/left-by-the-last") if os.path.exists(p)],
    "pids": sorted(int(p) for p in os.listdir("/proc") if p.isdigit()),
    "me": os.getpid(),
    "status": {k: v.strip() for k, v in (l.split(":", 1) for l in open("/proc/self/status") if ":" in l)
               if k.startswith("Cap") or k == "NoNewPrivs"},
    "mount": ctypes.CDLL(None, use_errno=True).mount(b"tmpfs", b"/tmp", b"tmpfs", 0, None),
    "solution": __file__,
}
raise RuntimeError("SEEN " + json.dumps(_seen))
"""

# Everything a solution can leave where a process that starts later could look: a regular file, a FIFO and a
# bound UNIX socket in every writable mount (from the mount table: each mount point whose per-mount
# options say rw and that is a directory), a System V shared memory segment, a POSIX message queue and a
# process in a session of its own. The next evaluation looks at the top of every mount point (writable or
# not) for the planted names, asks the kernel for the segment and the queue by key and name, and lists the
# processes it sees. Both report in one line (a report keeps 400 characters of a message).
HOARD_COMMON = """
import ctypes, json, os, socket, time
_TOKEN = "d2k-hoard-TOKEN"
_KEY = 0x0D2C5E55
_libc = ctypes.CDLL(None, use_errno=True)
def _mounts(rw):
    out = []
    for _l in open("/proc/self/mountinfo"):
        _f = _l.split()
        _p = _f[4].replace("\\\\040", " ")
        if ("rw" in _f[5].split(",")) == rw and os.path.isdir(_p) and _p not in out:
            out.append(_p)
    return out
def _mq_open():
    for _lib in (_libc, "librt.so.1"):
        try:
            _f = (_lib if not isinstance(_lib, str) else ctypes.CDLL(_lib, use_errno=True)).mq_open
        except (OSError, AttributeError):
            continue
        _f.restype = ctypes.c_int
        return _f
    return None
"""
HOARD = (
    HOARD_COMMON
    + """
def _plant(where):
    got = ""
    makers = (("f", lambda p: open(p, "x").close()), ("p", os.mkfifo), ("s", lambda p: socket.socket(socket.AF_UNIX).bind(p)))
    for kind, make in makers:
        try:
            make(os.path.join(where, _TOKEN + "-" + kind))
            got += kind
        except OSError:
            pass
    return got
_planted = {d: _plant(d) for d in _mounts(True)}
_shm = _libc.shmget(_KEY, 4096, 0o1000 | 0o600)  # IPC_CREAT
_mq = _mq_open()
_mq = "none" if _mq is None else _mq(("/" + _TOKEN).encode(), os.O_CREAT | os.O_RDWR, 0o600, None)
if os.fork() == 0:
    os.setsid()
    time.sleep(300)
    os._exit(0)
raise RuntimeError("SEEN " + json.dumps({"planted": _planted, "shm": _shm, "mq": _mq, "pid": os.getpid()}))
"""
)
LOOK_FOR_HOARD = (
    HOARD_COMMON
    + """
_found = []
for _d in _mounts(True) + _mounts(False):
    try:
        _found += [os.path.join(_d, _n) for _n in os.listdir(_d) if _n.startswith(_TOKEN)]
    except OSError:
        pass
_mq = _mq_open()
raise RuntimeError("SEEN " + json.dumps({
    "found": _found,
    "shm": _libc.shmget(_KEY, 0, 0),
    "mq": "none" if _mq is None else _mq(("/" + _TOKEN).encode(), os.O_RDONLY),
    "pids": sorted(int(p) for p in os.listdir("/proc") if p.isdigit()),
    "writable": _mounts(True),
}))
"""
)

# Every mount point the process sees (the mount on top at each), with whether it is read-only, less the
# solution's own (bound at its path by a plain start, copied into /tmp/.d2k-solution by a warm one) and the
# zygote's own modules (harness code that only the warm start's sandbox binds)
MOUNTS = """
import hashlib, json, os
_name = os.path.basename(__file__)
_top = {f[4]: f[5].split(",")[0] for f in (l.split() for l in open("/proc/self/mountinfo"))}  # the last mount wins
_zygote = set(json.loads(ZYGOTE_FILES))
_mounts = sorted(
    (p, mode) for p, mode in _top.items()
    if not p.endswith("/" + _name) and not p.startswith("/tmp/.d2k-solution") and p not in _zygote
)
raise RuntimeError("SEEN " + json.dumps({"count": len(_mounts), "digest": hashlib.sha256(repr(_mounts).encode()).hexdigest(),
    "writable": [m for m, mode in _mounts if mode == "rw"]}))
"""

# What the process shares with others in memory and descriptors: a writable shared mapping inherited from the
# zygote would carry one evaluation's writes into the zygote's image and every later evaluation's process
SHARED = """
import json, os, stat
_maps = [l.split() for l in open("/proc/self/maps")]
def _kind(fd):
    mode = os.fstat(fd).st_mode
    return "fifo" if stat.S_ISFIFO(mode) else "socket" if stat.S_ISSOCK(mode) else "char" if stat.S_ISCHR(mode) else "other"
raise RuntimeError("SEEN " + json.dumps({
    "shared": [l[1] + " " + (l[5] if len(l) > 5 else "(anonymous)") for l in _maps if l[1][3] == "s"],
    "fds": sorted((int(f), _kind(int(f))) for f in os.listdir("/proc/self/fd") if os.path.exists("/proc/self/fd/" + f)),
}))
"""

ZYGOTE_FILES = sorted(
    {str(p) for p in sandbox.module_files(solution_plan.ZYGOTE_MODULES)}
    - {str(p) for p in sandbox.module_files(solution_plan.SOLUTION_MODULES)}
)
MOUNTS = MOUNTS.replace("ZYGOTE_FILES", repr(json.dumps(ZYGOTE_FILES)))


def probe_solution(tmp_path: Path, name: str, top: str) -> Path:
    path = tmp_path / name
    path.write_text(top + "\n" + NAIVE)
    return path


def seen(report: EvalReport) -> dict[str, object]:
    assert "SEEN " in report.message, report.message
    text = report.message.split("SEEN ", 1)[1]
    return json.loads(text[: text.rindex("}") + 1])


def running(pid: int) -> bool:
    """Whether `pid` is a process that has not ended (a zombie has)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def zygote_tree(pool: CheckerPool) -> set[int]:
    return {pid for root in pool.solutions.zygote_pids() for pid in descendants(root)}


ZYGOTE_ALONE = 3  # bwrap, bwrap's init in the sandbox, the zygote: no keeper, no solution process


def settle(pool: CheckerPool) -> int:
    """How many processes a zygote's tree holds once its keepers have ended (right after their report)."""
    deadline = time.monotonic() + 10
    alone = ZYGOTE_ALONE * len(pool.solutions.zygote_pids())  # the pool is this test process's: one per sandbox
    while len(tree := zygote_tree(pool)) > alone and time.monotonic() < deadline:
        time.sleep(0.05)
    return len(tree) // len(pool.solutions.zygote_pids())


@needs_bwrap
def test_the_warm_start_is_taken_and_passes_as_the_plain_start(tmp_path: Path) -> None:
    naive = REPO / "tests" / "solutions" / "rmsnorm_bwd_naive.py"
    pool = process_pool()
    reports = [evaluate(TASK, naive, "cpu", WORKLOAD, pool=pool, timing=False) for _ in range(2)]
    plain = evaluate(TASK, naive, "cpu", WORKLOAD, timing=False)
    assert [r.status for r in reports] == ["passed", "passed"] == [plain.status] * 2
    assert all("warm start" in r.sandbox for r in reports) and "warm start" not in plain.sandbox
    assert reports[0].workloads[0].rel_err != reports[1].workloads[0].rel_err  # fresh secret inputs each time


@needs_bwrap
def test_nothing_one_solution_leaves_reaches_the_next(tmp_path: Path) -> None:
    leave = probe_solution(tmp_path, "leave.py", LEAVE_TRACES)
    look = probe_solution(tmp_path, "look.py", LOOK_AROUND)
    pool = process_pool()
    first = evaluate(TASK, leave, "cpu", WORKLOAD, pool=pool, timing=False, static_policy=False)
    assert first.status == "passed" and "warm start" in first.sandbox
    assert settle(pool) == ZYGOTE_ALONE  # the process left behind died with its namespace
    second = evaluate(TASK, look, "cpu", WORKLOAD, pool=pool, timing=False, static_policy=False)
    found = seen(second)
    assert "warm start" in second.sandbox
    assert found["files"] == []  # a fresh /tmp and /dev/shm
    assert found["pids"] == [1, found["me"]] == [1, 2]  # its own pid namespace: its init, itself, nothing else


@needs_bwrap
def test_nothing_a_solution_plants_in_any_writable_mount_or_ipc_reaches_the_next(tmp_path: Path) -> None:
    token = os.urandom(4).hex()
    hoard = probe_solution(tmp_path, "hoard.py", HOARD.replace("TOKEN", token))
    look = probe_solution(tmp_path, "look.py", LOOK_FOR_HOARD.replace("TOKEN", token))
    pool = process_pool()
    first = evaluate(TASK, hoard, "cpu", WORKLOAD, pool=pool, timing=False, static_policy=False)
    assert "warm start" in first.sandbox
    left = seen(first)
    planted = left["planted"]
    assert isinstance(planted, dict)
    # Not vacuous: a file, a FIFO and a socket went into /tmp, /dev/shm and /dev (/dev is a new tmpfs of this
    # evaluation's own, writable as under a plain bwrap), and the segment and the queue were made
    assert planted["/tmp"] == planted["/dev"] == planted["/dev/shm"] == "fps", planted
    assert left["shm"] != -1 and left["mq"] != -1
    assert settle(pool) == ZYGOTE_ALONE  # the process left behind died with its namespace
    second = evaluate(TASK, look, "cpu", WORKLOAD, pool=pool, timing=False, static_policy=False)
    assert "warm start" in second.sandbox
    found = seen(second)
    names = found["found"]
    assert isinstance(names, list)
    assert [name for name in names if name.startswith("/dev/")] == []  # the finding: /dev was the zygote's own
    assert names == []  # in no mount, writable or read-only
    assert found["shm"] == -1  # no segment under the key: a new IPC namespace
    assert found["mq"] in (-1, "none")  # no queue of the name ("none": this C library has no mq_open)
    assert found["pids"] == [1, 2]  # its init and itself: the process left behind is gone
    assert sorted(found["writable"]) == sorted(planted)  # type: ignore[call-overload]  # the same mounts, each new


@needs_bwrap
@pytest.mark.parametrize("start", ["warm", "plain"])
def test_the_solution_holds_no_capability_and_cannot_mount(tmp_path: Path, start: str) -> None:
    """Either start, the same: no capability held, none in the bounding set (the warm start's confinement
    empties it; the plain start's bwrap does in the sandbox's user namespace), no_new_privs, no mount."""
    look = probe_solution(tmp_path, "look.py", LOOK_AROUND)
    pool = process_pool() if start == "warm" else None  # no pool: a fresh checker, which starts it the plain way
    report = evaluate(TASK, look, "cpu", WORKLOAD, pool=pool, timing=False, static_policy=False)
    assert ("warm start" in report.sandbox) == (start == "warm"), report.sandbox
    found = seen(report)
    status = found["status"]
    assert isinstance(status, dict)
    caps = {k: int(v, 16) for k, v in status.items() if k.startswith("Cap")}
    assert caps == dict.fromkeys(("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"), 0)
    assert status["NoNewPrivs"] == "1" and found["mount"] == -1
    if start == "warm":
        assert str(found["solution"]).startswith("/tmp/.d2k-solution/")  # its copy, in a read-only tmpfs


@needs_bwrap
def test_a_hanging_solution_is_killed_with_everything_it_started(tmp_path: Path) -> None:
    hang = probe_solution(tmp_path, "hang.py", LEAVE_TRACES + "\nwhile True:\n    time.sleep(1)\n")
    pool = process_pool()
    report = evaluate(TASK, hang, "cpu", WORKLOAD, pool=pool, timing=False, static_policy=False, timeout_s=20)
    assert report.status == "timeout"
    assert settle(pool) == ZYGOTE_ALONE


@needs_bwrap
def test_a_zygote_made_for_another_sandbox_is_refused(tmp_path: Path) -> None:
    naive = REPO / "tests" / "solutions" / "rmsnorm_bwd_naive.py"
    zygotes = SolutionZygotes()
    try:
        connected = zygotes.connect(naive, "cpu", [])
        assert connected is not None
        conn, digest = connected
        other = [tmp_path]  # a path masked for this evaluation only would not change the sandbox here ...
        assert launch_warm(conn, "0" * len(digest), naive, "cpu", other) is None  # ... but another digest does
        assert conn.fileno() == -1  # closed: its keeper ends
    finally:
        zygotes.close()


def test_without_a_sandbox_there_is_no_warm_start(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(sandbox.SWITCH_ENV, "off")
    zygotes = SolutionZygotes()
    try:
        naive = REPO / "tests" / "solutions" / "rmsnorm_bwd_naive.py"
        assert zygotes.connect(naive, "cpu", []) is None
        assert zygotes.connect(naive, "cpu", []) is None
        assert zygotes.zygote_pids() == []
    finally:
        zygotes.close()


@needs_bwrap
def test_a_keeper_refuses_a_malformed_request_and_starts_nothing(tmp_path: Path) -> None:
    naive = REPO / "tests" / "solutions" / "rmsnorm_bwd_naive.py"
    zygotes = SolutionZygotes()
    try:
        connected = zygotes.connect(naive, "cpu", [])
        assert connected is not None
        conn, _ = connected
        conn.send(json.dumps({"op": "start"}).encode())  # no descriptors
        conn.settimeout(60)
        assert conn.recv(4096) == b""  # the keeper ended without an answer
        conn.close()
    finally:
        zygotes.close()


@needs_bwrap
def test_a_solution_that_kills_itself_is_reported_as_by_the_plain_start(tmp_path: Path) -> None:
    crash = probe_solution(tmp_path, "crash.py", "import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n")
    pool = process_pool()
    warm = evaluate(TASK, crash, "cpu", WORKLOAD, pool=pool, timing=False, static_policy=False)
    plain = evaluate(TASK, crash, "cpu", WORKLOAD, timing=False, static_policy=False)
    assert "warm start" in warm.sandbox
    assert (warm.status, warm.message) == (plain.status, plain.message) == ("crashed", "the solution process died with SIGSEGV")


def warm_and_plain(tmp_path: Path, name: str, probe: str) -> tuple[dict[str, object], dict[str, object]]:
    """What one probe solution saw from a warm start and from a plain one."""
    path = probe_solution(tmp_path, name, probe)
    warm = evaluate(TASK, path, "cpu", WORKLOAD, pool=process_pool(), timing=False, static_policy=False)
    plain = evaluate(TASK, path, "cpu", WORKLOAD, timing=False, static_policy=False)
    assert "warm start" in warm.sandbox and "warm start" not in plain.sandbox
    return seen(warm), seen(plain)


@needs_bwrap
def test_the_warm_process_sees_the_mounts_of_a_plain_one(tmp_path: Path) -> None:
    warm_seen, plain_seen = warm_and_plain(tmp_path, "mounts.py", MOUNTS)
    assert warm_seen == plain_seen  # the same mount points, read-only where they were (the repository's
    # files bound under /tmp when it lies there, bwrap's read-only parts of /proc), and nothing else writable
    # Writable on top, as in a plain start: /tmp, /dev/shm, /proc, /dev and /dev/pts (in the warm start each
    # mounted for this evaluation, over the zygote's own, which are read-only below) and the device nodes
    on_top = warm_seen["writable"]
    assert isinstance(on_top, list)
    writable = set(on_top) - {"/tmp", "/dev/shm", "/proc", "/dev", "/dev/pts"}
    assert all(point.startswith("/dev/") for point in writable)  # the device nodes only, as in a plain start


@needs_bwrap
def test_the_warm_process_shares_no_writable_memory_and_holds_the_descriptors_of_a_plain_one(tmp_path: Path) -> None:
    warm_seen, plain_seen = warm_and_plain(tmp_path, "shared.py", SHARED)
    assert [m for m in warm_seen["shared"] if "w" in m.split()[0]] == []  # type: ignore[union-attr]
    assert warm_seen["shared"] == plain_seen["shared"]  # read-only files mapped by the C library, as a plain one
    assert warm_seen["fds"] == plain_seen["fds"]  # stdin, the output pipe, the channel: nothing of the zygote's


@needs_bwrap
def test_a_while_without_a_sandbox_does_not_give_the_warm_start_up(monkeypatch: pytest.MonkeyPatch) -> None:
    naive = REPO / "tests" / "solutions" / "rmsnorm_bwd_naive.py"
    zygotes = SolutionZygotes()
    try:
        with monkeypatch.context() as off:
            off.setenv(sandbox.SWITCH_ENV, "off")
            assert [zygotes.connect(naive, "cpu", []) for _ in range(3)] == [None, None, None]
        connected = zygotes.connect(naive, "cpu", [])  # the sandbox is back: so is the warm start
        assert connected is not None
        connected[0].close()
    finally:
        zygotes.close()


@needs_bwrap
def test_a_zygote_outlives_the_thread_that_asked_for_it_and_a_killed_one_is_replaced() -> None:
    naive = REPO / "tests" / "solutions" / "rmsnorm_bwd_naive.py"
    zygotes = SolutionZygotes()
    try:
        asked: list[object] = []
        worker = threading.Thread(target=lambda: asked.append(zygotes.connect(naive, "cpu", [])))
        worker.start()
        worker.join()  # the thread is gone (a TUI worker's would be): its zygote must not be
        (first,) = zygotes.zygote_pids()
        for _ in range(3):  # killed three times: replaced each time (a zygote that served is no failed start)
            again = zygotes.connect(naive, "cpu", [])
            assert again is not None and zygotes.zygote_pids() == [first]
            again[0].close()
            os.kill(first, signal.SIGKILL)
            deadline = time.monotonic() + 10
            while running(first) and time.monotonic() < deadline:
                time.sleep(0.05)
            replaced = zygotes.connect(naive, "cpu", [])
            assert replaced is not None and zygotes.zygote_pids() != [first]
            replaced[0].close()
            (first,) = zygotes.zygote_pids()
    finally:
        zygotes.close()
