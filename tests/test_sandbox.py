"""The sandbox of solution processes (workbench/harness/host/sandbox.py): what a sandboxed program can and
cannot do, checked by running `sys.executable -c ...` inside it.

Tests of the real sandbox skip (with the reason) where bubblewrap cannot start on this machine; the
tests of the "none" path and of the command line (with a stand-in bwrap) always run.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from workbench import paths
from workbench.harness.host import sandbox

REPO = paths.REPO_ROOT
_, PROBE = sandbox.wrap(["true"], device="cpu", env={})
needs_bwrap = pytest.mark.skipif(PROBE.kind != "bubblewrap", reason=f"no sandbox on this machine: {PROBE.detail}")


def base_env() -> dict[str, str]:
    return {"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin", "HOME": "/tmp", "PYTHONDONTWRITEBYTECODE": "1"}


def sandboxed(
    code: str,
    *,
    extra_hidden: Sequence[Path] = (),
    readable: Sequence[Path] = (),
    env: dict[str, str] | None = None,
    pass_fds: Sequence[int] = (),
    args: Sequence[str] = (),
    launcher_env: dict[str, str] | None = None,
    timeout: float = 60,
) -> subprocess.CompletedProcess[str]:
    """Run `code` in the sandbox the harness builds (default hidden and readable paths plus these)."""
    argv = [sys.executable, "-c", textwrap.dedent(code), *args]
    command, info = sandbox.wrap(
        argv,
        device="cpu",
        env=env if env is not None else base_env(),
        readable=[*sandbox.default_readable(), *readable],
        hidden=sandbox.default_hidden(extra_hidden),
    )
    assert info.kind == "bubblewrap", info.detail
    return subprocess.run(
        command,
        env=launcher_env or sandbox.launcher_env(),
        pass_fds=tuple(pass_fds),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def results(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert done.returncode == 0, done.stderr
    out: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return out


@pytest.fixture
def outside_dir() -> Iterator[Path]:
    """A scratch directory outside /tmp (whose host copy the sandbox never shows anyway) and HOME."""
    base = Path("/var/tmp") if os.access("/var/tmp", os.W_OK) else None
    path = Path(tempfile.mkdtemp(prefix="d2k-sandbox-test-", dir=base))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


TRY_WRITES = """
    import json, sys
    out = {}
    for target in sys.argv[1:]:
        try:
            with open(target, "w") as handle:
                handle.write("escaped")
            out[target] = "written"
        except OSError as exc:
            out[target] = type(exc).__name__ + ": " + str(exc)
    print(json.dumps(out))
"""


# -- the real sandbox --------------------------------------------------------------------------------
def _in_private_tmp(path: Path) -> bool:
    return Path("/tmp") in path.resolve().parents


@needs_bwrap
def test_writes_outside_the_scratch_fail(outside_dir: Path) -> None:
    secret = outside_dir / "secret"
    secret.mkdir()
    marker = f"d2k-sandbox-{uuid.uuid4().hex}"
    targets = [
        REPO / marker,
        REPO / "workbench" / marker,
        REPO / "tasks" / marker,
        Path.home() / marker,
        Path("/etc") / marker,
        secret / marker,
        REPO / "pyproject.toml",
        Path(sys.prefix) / marker,
    ]
    before = (REPO / "pyproject.toml").read_bytes()
    out = results(sandboxed(TRY_WRITES, extra_hidden=[secret], args=[str(t) for t in targets]))
    for target in targets:
        if out[str(target)] == "written" and _in_private_tmp(target):
            continue  # a clone under /tmp: the write lands on the sandbox's own /tmp, never the host's
        assert out[str(target)] != "written", target
        assert out[str(target)].split(":")[0] in ("OSError", "PermissionError", "FileNotFoundError"), out[str(target)]
    for target in targets:
        if target.name == marker:
            assert not target.exists(), target
    assert (REPO / "pyproject.toml").read_bytes() == before


@needs_bwrap
def test_tmp_is_private_scratch(tmp_path: Path) -> None:
    host_file = tmp_path / "host-only.txt"
    host_file.write_text("host")
    marker = f"d2k-sandbox-{uuid.uuid4().hex}"
    done = sandboxed(
        f"""
        import json, os
        with open("/tmp/{marker}", "w") as handle:
            handle.write("inside")
        print(json.dumps({{"read": open("/tmp/{marker}").read(), "cwd": os.getcwd(),
                          "host_file": os.path.exists({str(host_file)!r}), "tmp": sorted(os.listdir("/tmp"))}}))
    """,
        readable=[Path("/tmp")],
    )  # a readable /tmp must not bring the host's /tmp back
    out = results(done)
    # where the repository itself lives under /tmp, the folders re-exposed from it show up there too
    shown = {REPO.resolve().relative_to("/tmp").parts[0]} if _in_private_tmp(REPO) else set()
    assert out == {"read": "inside", "cwd": "/tmp", "host_file": False, "tmp": sorted({marker, *shown})}
    assert not (Path("/tmp") / marker).exists()


@needs_bwrap
def test_repository_secrets_and_hidden_paths_are_invisible(outside_dir: Path) -> None:
    expert = REPO / "tasks" / "muon_orthogonalize" / "expert.py"
    assert expert.is_file()
    hidden = outside_dir / "scratch"
    hidden.mkdir()
    (hidden / "answer.txt").write_text("42")
    shown = outside_dir / "shown"  # not hidden: proves the listing inside works
    shown.mkdir()
    (shown / "visible.txt").write_text("yes")
    done = sandboxed(
        f"""
        import json, os
        out = {{}}
        try:
            open({str(expert)!r}).read()
            out["expert"] = "read"
        except OSError as exc:
            out["expert"] = type(exc).__name__
        for name, path in [("guidance", {str(REPO / "guidance")!r}), ("sessions", {str(REPO / "sessions")!r}),
                           ("tasks", {str(REPO / "tasks")!r}), ("git", {str(REPO / ".git")!r}),
                           ("home", {str(Path.home())!r}), ("hidden", {str(hidden)!r}), ("shown", {str(shown)!r})]:
            out[name] = sorted(os.listdir(path)) if os.path.isdir(path) else "missing"
        try:
            out["pyproject"] = open({str(REPO / "pyproject.toml")!r}).read()
        except OSError as exc:
            out["pyproject"] = type(exc).__name__
        print(json.dumps(out))
    """,
        extra_hidden=[hidden],
    )
    out = results(done)
    assert out["expert"] == "FileNotFoundError"
    assert out["guidance"] == out["sessions"] == out["tasks"] == out["git"] == out["hidden"] == []
    assert out["shown"] == ["visible.txt"]
    assert out["pyproject"] in ("", "PermissionError")  # a hidden file is /dev/null on a nodev mount
    home_entries = set(out["home"])  # only what the interpreter needs, re-exposed (e.g. ~/.pyenv)
    assert home_entries <= {
        Path(p).relative_to(Path.home()).parts[0]
        for p in sandbox.default_readable()
        if Path(os.path.realpath(p)).is_relative_to(Path.home())
    }


@needs_bwrap
def test_most_specific_rule_wins(outside_dir: Path) -> None:
    """A readable path inside a hidden one is visible again; a hidden one inside a readable one stays hidden."""
    top = outside_dir / "top"
    (top / "open" / "closed").mkdir(parents=True)
    (top / "top.txt").write_text("t")
    (top / "open" / "open.txt").write_text("o")
    (top / "open" / "closed" / "closed.txt").write_text("c")
    argv = [
        sys.executable,
        "-c",
        "import os, sys, json; print(json.dumps({p: sorted(os.listdir(p)) for p in sys.argv[1:]}))",
        str(top),
        str(top / "open"),
        str(top / "open" / "closed"),
    ]
    # Given in the "wrong" order: the deeper hidden path first, the readable one after.
    command, _info = sandbox.wrap(
        argv,
        device="cpu",
        env=base_env(),
        readable=[*sandbox.default_readable(), top / "open"],
        hidden=[top / "open" / "closed", top],
    )
    done = subprocess.run(command, env=sandbox.launcher_env(), capture_output=True, text=True, timeout=60, check=False)
    out = results(done)
    assert out == {str(top): ["open"], str(top / "open"): ["closed", "open.txt"], str(top / "open" / "closed"): []}


@needs_bwrap
def test_environment_is_exactly_what_the_caller_sets(monkeypatch: pytest.MonkeyPatch) -> None:
    secret = f"sk-fake-{uuid.uuid4().hex}"
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    env = {**base_env(), "D2K_SANDBOX_TEST": "1"}
    # bwrap itself gets one more variable: --clearenv must keep it from the program.
    done = sandboxed(
        """
        import json, os
        mine = open("/proc/self/environ", "rb").read().decode()
        others = {}
        for pid in [p for p in os.listdir("/proc") if p.isdigit()]:
            try:
                others[pid] = open(f"/proc/{pid}/environ", "rb").read().decode()
            except OSError as exc:
                others[pid] = type(exc).__name__
        print(json.dumps({"mine": mine, "others": others}))
    """,
        env=env,
        launcher_env={**sandbox.launcher_env(), "D2K_ONLY_FOR_BWRAP": "1"},
    )
    out = results(done)
    inside = dict(item.split("=", 1) for item in out["mine"].split("\0") if item)
    inside.pop("PWD", None)  # bwrap's --chdir sets it
    assert inside == env
    assert secret not in json.dumps(out)
    assert "OPENAI_API_KEY" not in json.dumps(out)


@needs_bwrap
def test_no_host_process_is_visible() -> None:
    done = sandboxed("""
        import json, os
        pids = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
        names = [open(f"/proc/{p}/cmdline", "rb").read().split(b"\\0")[0].decode() for p in pids]
        print(json.dumps({"pids": pids, "names": names, "me": os.getpid()}))
    """)
    out = results(done)
    assert os.getpid() not in out["pids"]
    assert len(out["pids"]) <= 3, out  # bwrap's init, the program (and a helper thread's leader at most)
    assert out["me"] in out["pids"] and out["me"] <= 3
    assert all(Path(name).name in ("bwrap", Path(sys.executable).name) or "python" in name for name in out["names"]), out


@needs_bwrap
def test_no_network_to_the_host() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        listener.setblocking(False)
        port = listener.getsockname()[1]
        done = sandboxed(f"""
            import json, socket
            try:
                socket.create_connection(("127.0.0.1", {port}), timeout=5).close()
                out = "connected"
            except OSError as exc:
                out = type(exc).__name__ + ": " + str(exc)
            print(json.dumps({{"connect": out}}))
        """)
        out = results(done)
        assert out["connect"] != "connected"
        assert out["connect"].split(":")[0] in ("ConnectionRefusedError", "OSError", "TimeoutError"), out
        with pytest.raises(BlockingIOError):
            listener.accept()


@needs_bwrap
def test_passed_descriptor_reaches_the_sandboxed_process() -> None:
    ours, theirs = socket.socketpair()
    with ours:
        try:
            fd = theirs.fileno()
            done = sandboxed(
                f"""
                import socket
                with socket.socket(fileno={fd}) as channel:
                    channel.sendall(b"hello from the sandbox\\n")
            """,
                pass_fds=[fd],
            )
        finally:
            theirs.close()
        assert done.returncode == 0, done.stderr
        ours.settimeout(10)
        assert ours.makefile("rb").readline() == b"hello from the sandbox\n"


def _processes_with(marker: str) -> dict[int, list[str]]:
    """The host's processes (but this one) whose command line holds `marker`: pid -> argv."""
    found: dict[int, list[str]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if marker.encode() in cmdline:
            found[int(entry.name)] = [part.decode(errors="replace") for part in cmdline.split(b"\0")[:-1]]
    return found


@needs_bwrap
def test_sandboxed_process_dies_with_its_parent() -> None:
    marker = f"d2k-sandbox-orphan-{uuid.uuid4().hex}"
    command, _ = sandbox.wrap(
        [sys.executable, "-c", "import time; time.sleep(120)", marker],
        device="cpu",
        env=base_env(),
        readable=sandbox.default_readable(),
        hidden=sandbox.default_hidden(),
    )
    helper = (
        "import json, subprocess, sys, time; subprocess.Popen(json.loads(sys.argv[1]), env={'PATH': '/usr/bin:/bin'}); "
        "time.sleep(120)"
    )
    parent = subprocess.Popen([sys.executable, "-c", helper, json.dumps(command)], stdin=subprocess.DEVNULL)

    def sandboxed_program_runs() -> bool:
        return any(
            argv[0] == sys.executable and argv[-1] == marker for pid, argv in _processes_with(marker).items() if pid != parent.pid
        )

    try:
        deadline = time.monotonic() + 20
        while not sandboxed_program_runs() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert sandboxed_program_runs(), "the sandboxed program did not start"
        assert len(_processes_with(marker)) >= 4  # the helper, bwrap, bwrap's init in the sandbox, the program
    finally:
        parent.kill()
        parent.wait()
    deadline = time.monotonic() + 10
    while _processes_with(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _processes_with(marker) == {}


@needs_bwrap
def test_torch_triton_and_workbench_import_inside() -> None:
    done = sandboxed(
        """
        import json, torch, triton, workbench
        print(json.dumps({"torch": torch.__version__, "workbench": workbench.__file__,
                          "sum": float(torch.ones(3).sum())}))
    """,
        timeout=120,
    )
    out = results(done)
    assert out["sum"] == 3.0
    assert out["workbench"] == str(REPO / "workbench" / "__init__.py")


@needs_bwrap
def test_sandbox_info_says_what_it_does() -> None:
    _, info = sandbox.wrap(["true"], device="cpu", env={})
    assert info.kind == "bubblewrap"
    assert info.detail.startswith("bubblewrap ")
    for words in ("read-only root", "private /tmp", "no network", "dies with its parent"):
        assert words in info.detail


# -- the "none" path and the command line: always run -----------------------------------------------
def test_disabled_by_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("D2K_SANDBOX", "off")
    argv = [sys.executable, "-c", "pass"]
    command, info = sandbox.wrap(argv, device="cpu", env={"A": "1"})
    assert command == argv and command is not argv
    assert info.kind == "none"
    assert info.detail == "disabled by D2K_SANDBOX=off"


def test_missing_bwrap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("D2K_SANDBOX", raising=False)
    monkeypatch.setenv("D2K_BWRAP", "/nonexistent/bwrap")
    assert sandbox.find_bwrap() is None
    command, info = sandbox.wrap(["prog", "arg"], device="cuda:0", env={})
    assert command == ["prog", "arg"]
    assert info.kind == "none"
    assert "not found" in info.detail and "/nonexistent/bwrap" in info.detail


def test_bwrap_that_cannot_start(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: Creating new namespace failed: Operation not permitted' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.delenv("D2K_SANDBOX", raising=False)
    monkeypatch.setenv("D2K_BWRAP", str(fake))
    assert sandbox.find_bwrap() == fake
    command, info = sandbox.wrap(["prog"], device="cpu", env={})
    assert command == ["prog"]
    assert info == sandbox.SandboxInfo(
        "none", "bwrap failed to start: bwrap: Creating new namespace failed: Operation not permitted"
    )


@pytest.fixture
def stand_in_bwrap(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """A bwrap that always 'works', to check the command line on any machine."""
    fake = tmp_path / "bin" / "bwrap"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\n[ \"$1\" = --version ] && echo 'bubblewrap 9.9.9'\nexit 0\n")
    fake.chmod(0o755)
    monkeypatch.delenv("D2K_SANDBOX", raising=False)
    monkeypatch.setenv("D2K_BWRAP", str(fake))
    return fake


def test_command_line_order(stand_in_bwrap: Path, tmp_path: Path) -> None:
    hidden_dir = tmp_path / "hidden"
    (hidden_dir / "inner").mkdir(parents=True)
    hidden_file = tmp_path / "secret.txt"
    hidden_file.write_text("s")
    writable = tmp_path / "out"
    writable.mkdir()
    link = tmp_path / "link"
    link.symlink_to(hidden_dir)
    command, info = sandbox.wrap(
        ["prog", "--flag"],
        device="cpu",
        env={"A": "1", "B": "two words"},
        readable=[hidden_dir / "inner", tmp_path / "missing"],
        hidden=[link, hidden_file],
        writable=[writable],
    )
    assert info.kind == "bubblewrap" and info.detail.startswith("bubblewrap 9.9.9: ")
    h, i, f, w = str(hidden_dir), str(hidden_dir / "inner"), str(hidden_file), str(writable)
    assert command == [
        str(stand_in_bwrap),
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        "--tmpfs",
        "/tmp",
        "--tmpfs",
        "/dev/shm",
        "--tmpfs",
        h,
        "--ro-bind",
        "/dev/null",
        f,
        "--bind",
        w,
        w,
        "--ro-bind",
        i,
        i,
        "--remount-ro",
        h,
        "--unshare-net",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--die-with-parent",
        "--new-session",
        "--cap-drop",
        "ALL",
        "--clearenv",
        "--setenv",
        "A",
        "1",
        "--setenv",
        "B",
        "two words",
        "--chdir",
        "/tmp",
        "--",
        "prog",
        "--flag",
    ]


def test_paths_that_would_undo_the_fixed_mounts_are_skipped(stand_in_bwrap: Path) -> None:
    command, _ = sandbox.wrap(
        ["prog"],
        device="cpu",
        env={},
        readable=[Path("/"), Path("/tmp"), Path("/dev")],
        hidden=[Path("/proc")],
        writable=[Path("/tmp"), Path("/")],
    )
    flags = command[: command.index("--")]
    assert flags[1:13] == [
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        "--tmpfs",
        "/tmp",
        "--tmpfs",
        "/dev/shm",
        "--unshare-net",
    ]


def test_gpu_binds_device_nodes_not_all_of_dev(stand_in_bwrap: Path) -> None:
    command, info = sandbox.wrap(["prog"], device="cuda:0", env={})
    assert info.kind == "bubblewrap" and "GPU" in info.detail
    flags = command[: command.index("--")]
    assert flags[1:6] == ["--ro-bind", "/", "/", "--dev", "/dev"]
    assert "/dev" not in [flags[k + 1] for k, flag in enumerate(flags) if flag == "--dev-bind"]


def test_environment_keys_are_checked(stand_in_bwrap: Path) -> None:
    with pytest.raises(ValueError):
        sandbox.wrap(["prog"], device="cpu", env={"A=B": "1"})


def test_default_paths() -> None:
    hidden = sandbox.default_hidden([Path("/some/extra")])
    for path in (Path.home(), REPO / "tasks", REPO / "guidance", REPO / "sessions", REPO / ".git", Path("/some/extra")):
        assert path in hidden, path
    assert REPO / "workbench" not in hidden
    assert not any(
        Path(os.path.realpath(sys.prefix)).is_relative_to(os.path.realpath(p)) for p in hidden if p.is_relative_to(REPO)
    )
    readable = sandbox.default_readable()
    for path in (Path(sys.prefix), Path(sys.base_prefix), REPO / "workbench", Path(sys.executable).resolve().parent):
        assert path in readable, path


# -- the allow-list sandbox of the solution process (sandbox.isolate) -------------------------------------
def _isolated_run(
    code: str, readable: Sequence[Path] = (), hidden: Sequence[Path] = (), env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-I", "-c", textwrap.dedent(code)]
    env = env if env is not None else {"PATH": "/usr/bin:/bin", "HOME": "/tmp", "PYTHONDONTWRITEBYTECODE": "1"}
    launch = sandbox.isolate(argv, device="cpu", env=env, readable=[*sandbox.interpreter_paths(env), *readable], hidden=hidden)
    assert launch.info.kind == "bubblewrap", launch.info.detail
    try:
        return subprocess.run(
            launch.command,
            executable=launch.executable,
            env=launch.env,
            pass_fds=launch.pass_fds,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    finally:
        launch.close()


@needs_bwrap
def test_isolated_root_shows_only_what_is_bound(outside_dir: Path) -> None:
    """Nothing of the machine but the system folders, the interpreter and the named files: not the
    repository (but the bound module), not HOME, not a folder nobody named, not /etc."""
    (outside_dir / "notes.txt").write_text("user data")
    module = REPO / "workbench" / "harness" / "solution" / "fast_exit.py"
    done = _isolated_run(
        f"""
        import json, os
        listing = lambda p: sorted(os.listdir(p)) if os.path.isdir(p) else "missing"
        fds = sorted(int(fd) for fd in os.listdir("/proc/self/fd"))
        print(json.dumps({{"root": listing("/"), "repo": listing({str(REPO)!r}), "harness": listing({str(module.parent)!r}),
                          "outside": listing({str(outside_dir)!r}), "etc": listing("/etc"), "fds": fds,
                          "init": open("/proc/1/cmdline").read().split("\\0")[:4],
                          "write": os.access("/", os.W_OK)}}))
        """,
        readable=[module],
    )
    out = results(done)
    assert out["outside"] == "missing"
    assert out["harness"] == ["fast_exit.py"]
    assert set(out["repo"]) <= {"workbench", ".venv"}  # the module's folder, and the venv where it lies inside
    assert set(out["etc"]) <= {"ld.so.cache", "alternatives", "passwd", "group"}
    assert set(out["root"]) <= {"bin", "sbin", "lib", "lib32", "lib64", "libx32", "usr", "etc", "sys", "dev", "proc", "tmp"} | {
        Path(p).parts[1] for p in [*sandbox.interpreter_paths(), REPO]
    }
    assert out["fds"] == [0, 1, 2, 3]  # the arguments' pipe is closed: 3 is listdir's own
    assert out["init"][:2] == ["bwrap", "--args"] and out["init"][2].isdigit() and out["init"][3] == "--"
    assert out["write"] is False


@needs_bwrap
def test_isolated_process_holds_no_capability_and_an_empty_bounding_set() -> None:
    """The plain start's sandbox: no capability held and none left to gain, bounding set included (bwrap
    leaves that set full for a caller of uid 0 outside a user namespace), as the warm start's process has."""
    done = _isolated_run(
        """
        import json
        fields = dict(line.split(":", 1) for line in open("/proc/self/status") if ":" in line)
        print(json.dumps({k: v.strip() for k, v in fields.items() if k.startswith("Cap") or k == "NoNewPrivs"}))
        """
    )
    status = results(done)
    assert {k: int(v, 16) for k, v in status.items() if k.startswith("Cap")} == dict.fromkeys(
        ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"), 0
    )
    assert status["NoNewPrivs"] == "1"


@needs_bwrap
def test_isolated_hidden_path_inside_a_bound_folder_stays_hidden(outside_dir: Path) -> None:
    (outside_dir / "shown.txt").write_text("yes")
    (outside_dir / "secret").mkdir()
    (outside_dir / "secret" / "answer.txt").write_text("42")
    done = _isolated_run(
        f"""
        import json, os
        top, secret = {str(outside_dir)!r}, {str(outside_dir / "secret")!r}
        print(json.dumps({{"top": sorted(os.listdir(top)), "secret": os.listdir(secret)}}))
        """,
        readable=[outside_dir],
        hidden=[outside_dir / "secret", Path.home()],
    )
    assert json.loads(done.stdout) == {"top": ["secret", "shown.txt"], "secret": []}, done.stderr


@pytest.mark.slow  # a sandboxed interpreter importing torch and triton (about 3 s; the plain sandbox's: below)
@needs_bwrap
def test_isolated_interpreter_imports_torch_triton_and_the_solution_side() -> None:
    modules = sandbox.module_files(["workbench.harness.solution.host"])
    done = _isolated_run(
        f"""
        import json, sys
        sys.path[:0] = {[str(paths.IMPORT_ROOT), *(p for p in sys.path if p and not Path(p).is_relative_to(REPO))]!r}
        import torch, triton, workbench.harness.solution.host
        print(json.dumps({{"sum": float(torch.ones(3).sum())}}))
        """,
        readable=modules,
    )
    assert json.loads(done.stdout) == {"sum": 3.0}, done.stderr


def test_module_files_follow_the_solution_sides_imports() -> None:
    files = sandbox.module_files(["workbench.harness.solution.host", "workbench.harness.solution.fast_exit"])
    names = {str(f.relative_to(REPO)) for f in files}
    for needed in ("workbench/__init__.py", "workbench/harness/__init__.py", "workbench/harness/solution/host.py"):
        assert needed in names
    for never in ("checker.py", "evaluate.py", "sandbox.py", "remote.py", "paths.py"):
        assert f"workbench/harness/{never}" not in names and f"workbench/{never}" not in names
    assert all(f.suffix == ".py" and f.is_file() for f in files)


def test_isolate_disabled_runs_the_command_unchanged(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("D2K_SANDBOX", "off")
    launch = sandbox.isolate(["prog"], device="cpu", env={"A": "1"}, readable=[REPO])
    assert (launch.command, launch.executable, launch.env, launch.pass_fds) == (["prog"], None, {"A": "1"}, ())
    assert launch.info == sandbox.SandboxInfo("none", "disabled by D2K_SANDBOX=off")


def test_isolate_command_line(stand_in_bwrap: Path, tmp_path: Path) -> None:
    bound = tmp_path / "bound"
    (bound / "hidden").mkdir(parents=True)
    (bound / "file.py").write_text("")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    launch = sandbox.isolate(
        ["prog", "arg"],
        device="cpu",
        env={"A": "1"},
        readable=[bound, bound / "file.py", tmp_path / "missing"],
        hidden=[bound / "hidden", elsewhere],
    )
    try:
        assert launch.command[0] == "bwrap" and launch.executable == str(stand_in_bwrap)
        assert launch.command[1:] == ["--args", str(launch.pass_fds[-1]), "--", "prog", "arg"]
        assert launch.env == sandbox.launcher_env()
        args = os.read(launch.pass_fds[-1], 1 << 20).decode().split("\0")[:-1]
        passwd = os.read(launch.pass_fds[0], 1 << 20).decode()
    finally:
        launch.close()
    assert launch.pass_fds == ()
    assert passwd.count("\n") == 1 and f":{os.getuid()}:{os.getgid()}:" in passwd  # only the process's own user
    assert [args[args.index("/etc/passwd") - 2], args[args.index("/etc/passwd")]] == ["--ro-bind-data", "/etc/passwd"]
    b, h = str(bound), str(bound / "hidden")
    assert args[:2] == ["--dev", "/dev"] and "/" not in [args[k + 1] for k, a in enumerate(args) if a == "--ro-bind"]
    assert ["--ro-bind", b, b] == args[args.index(b) - 1 : args.index(b) + 2]
    assert str(bound / "file.py") not in args  # inside a bound folder already
    assert ["--tmpfs", h] == args[args.index(h) - 1 : args.index(h) + 1]
    assert str(elsewhere) not in args  # hidden, but not inside anything bound: nothing to hide
    assert args[-4:] == ["--remount-ro", "/", "--chdir", "/tmp"]
    assert args.index("--remount-ro") > args.index(b)
    assert args[args.index("A") - 1 : args.index("A") + 2] == ["--setenv", "A", "1"]
    assert "--unshare-user" in args and "--cap-add" not in args  # a user namespace, no capability
    assert launch.info.kind == "bubblewrap" and "user namespace" not in launch.info.detail


def test_isolate_where_no_user_namespace_can_be_made_stays_sandboxed_and_says_so(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A bwrap that cannot make a user namespace (user namespaces disabled for uid 0): the plain start keeps
    the rest of the sandbox and the report says that the bounding set is kept; the zygote gets no sandbox."""
    fake = tmp_path / "bwrap"
    fake.write_text(
        "#!/bin/sh\n"
        "[ \"$1\" = --version ] && echo 'bubblewrap 9.9.9' && exit 0\n"
        "if [ \"$1\" = --args ] && tr '\\0' '\\n' <\"/dev/fd/$2\" | grep -qx -- --unshare-user; then\n"
        "  echo 'bwrap: No permissions to create new namespace' >&2; exit 1\n"
        "fi\n"
        "exit 0\n"
    )
    fake.chmod(0o755)
    monkeypatch.delenv("D2K_SANDBOX", raising=False)
    monkeypatch.setenv("D2K_BWRAP", str(fake))
    launch = sandbox.isolate(["prog"], device="cpu", env={}, readable=[])
    try:
        args = os.read(launch.pass_fds[-1], 1 << 20).decode().split("\0")[:-1]
    finally:
        launch.close()
    assert launch.info.kind == "bubblewrap" and "--unshare-user" not in args and "--unshare-pid" in args
    assert launch.info.detail.endswith(
        "no user namespace (bwrap: No permissions to create new namespace): capability bounding set kept"
    )
    zygote = sandbox.isolate(["prog"], device="cpu", env={}, readable=[], admin=True)
    assert zygote.info == sandbox.SandboxInfo(
        "none", "bwrap failed to start with an empty root: bwrap: No permissions to create new namespace"
    )


def test_the_hidden_paths_follow_the_catalogue_the_task_came_from(tmp_path: Path) -> None:
    """`eval --guidance-dir X` hides X, not the default guidance folder: the task carries its roots."""
    from workbench.catalog import Catalog
    from workbench.harness.host.evaluate import hidden_paths

    guidance = tmp_path / "my-guidance"
    guidance.mkdir()
    task = Catalog(REPO / "tasks", guidance).task("muon_orthogonalize")
    hidden = hidden_paths(task, [tmp_path / "sessions"])
    for path in (guidance, REPO / "tasks", tmp_path / "sessions"):
        assert str(path.resolve()) in hidden, path


def test_a_workers_environment_names_only_its_own_gpu_and_passes_no_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    from workbench.harness.host.sandbox import worker_env

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("CUDA_HOME", "/usr/local/cuda")
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert worker_env("cuda:3")["CUDA_VISIBLE_DEVICES"] == "3"
    assert worker_env("cuda")["CUDA_VISIBLE_DEVICES"] == "0"
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "5, 7")
    env = worker_env("cuda:1")
    assert env["CUDA_VISIBLE_DEVICES"] == "7" and env["CUDA_HOME"] == "/usr/local/cuda"
    assert "OPENAI_API_KEY" not in env and "TRITON_INTERPRET" not in env
    cpu = worker_env("cpu")
    assert cpu["TRITON_INTERPRET"] == "1" and cpu["CUDA_VISIBLE_DEVICES"] == ""
    with pytest.raises(ValueError, match="bad device"):
        worker_env("cuda:x")


def test_the_import_path_leaves_out_the_running_programs_own_folder(monkeypatch: pytest.MonkeyPatch) -> None:
    """A console script's bin/ folder (sys.path[0]) lies inside the virtual environment but is not the
    interpreter's: the host (a console script) and the checker (`python -m`) get the same import path."""
    interpreter = sandbox.interpreter_paths()
    plain = sandbox.import_path(interpreter)
    scripts = Path(sys.executable).parent  # .venv/bin: inside the bound prefix
    monkeypatch.setattr(sys, "path", [str(scripts), *sys.path[1:]])
    monkeypatch.setattr(sys, "argv", [str(scripts / "d2k-workbench")])
    assert str(scripts) not in sandbox.import_path(interpreter)
    assert sandbox.import_path(interpreter) == [p for p in plain if p != str(scripts)]
