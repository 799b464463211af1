"""Checkers forked from a warm zygote (harness/host/checker_pool.py): each one a fresh process that reads
its own request and reports through its own pipe, ended with the pool, and a zygote that died replaced;
an evaluation through the pool reports what the plain start reports."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from workbench import paths
from workbench.catalog import Catalog
from workbench.harness.host.checker_pool import CheckerPool
from workbench.harness.host.evaluate import CPU_ADDRESS_LIMIT, evaluate, worker_env
from workbench.harness.protocol.messages import EvalRequest, WorkerResult

pytestmark = pytest.mark.slow  # each test starts zygotes (an interpreter importing torch) and checkers

REPO = paths.REPO_ROOT
TASK = Catalog(REPO / "tasks", REPO / "guidance").task("rmsnorm_bwd")
REFUSED = "import torch\n\ndef run(x, w, dy):\n    return torch.matmul(x, w)\n"  # torch math: the static policy refuses it


def request_for(solution: Path) -> str:
    return EvalRequest(
        task_dir=str(TASK.dir), solution=str(solution), device="cpu", workloads=["smoke_m64_n256"], secret=12345,
        timing=False, timeout_s=60, hidden=[], static_policy=True, reference_timings=[],
    ).model_dump_json()  # fmt: skip


def start(pool: CheckerPool, folder: Path) -> tuple[object, int]:
    read, write = os.pipe()
    try:
        checker = pool.start(worker_env("cpu"), str(folder), write, CPU_ADDRESS_LIMIT)
    finally:
        os.close(write)
    return checker, read


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"


def test_each_checker_is_a_fresh_child_that_answers_its_own_request(tmp_path: Path) -> None:
    solution = tmp_path / "solution.py"
    solution.write_text(REFUSED)
    with CheckerPool() as pool:
        pids = []
        for _ in range(2):
            checker, read = start(pool, tmp_path)
            checker.stdin.write(request_for(solution))  # type: ignore[attr-defined]
            checker.stdin.close()  # type: ignore[attr-defined]
            assert checker.wait(timeout=120) == 0  # type: ignore[attr-defined]
            with os.fdopen(read) as pipe:
                result = WorkerResult.model_validate_json(pipe.read().splitlines()[-1])
            assert result.complete and result.report.status == "policy_violation"
            pids.append(checker.pid)  # type: ignore[attr-defined]
        assert pids[0] != pids[1] and os.getpid() not in pids and not set(pids) & set(pool.zygote_pids())
        assert len(pool.zygote_pids()) == 1  # both forked by one zygote


def test_closing_the_pool_ends_a_running_checker_and_its_zygote(tmp_path: Path) -> None:
    pool = CheckerPool()
    checker, read = start(pool, tmp_path)  # it waits for a request that never comes
    os.close(read)
    assert checker.poll() is None and alive(checker.pid)  # type: ignore[attr-defined]
    pool.close()
    assert checker.wait(timeout=30) == -signal.SIGKILL  # type: ignore[attr-defined]
    deadline = time.monotonic() + 10
    while alive(checker.pid) and time.monotonic() < deadline:  # type: ignore[attr-defined]
        time.sleep(0.05)
    assert not alive(checker.pid)  # type: ignore[attr-defined]


def test_a_zygote_that_died_is_replaced(tmp_path: Path) -> None:
    solution = tmp_path / "solution.py"
    solution.write_text("KERNELS = []\n")  # no run(): the checker itself says so, starting no solution process
    with CheckerPool() as pool:
        first, read = start(pool, tmp_path)
        first.stdin.close()  # type: ignore[attr-defined]
        first.wait(timeout=120)  # type: ignore[attr-defined]
        os.close(read)
        (zygote,) = pool.zygote_pids()
        os.kill(zygote, signal.SIGKILL)
        report = evaluate(TASK, solution, "cpu", ["smoke_m64_n256"], pool=pool)
        assert report.status == "compile_error" and "no top-level run" in report.message  # a new zygote's checker
        assert pool.zygote_pids() != [zygote]


def test_an_evaluation_through_the_pool_reports_as_the_plain_start(tmp_path: Path) -> None:
    naive = REPO / "tests" / "solutions" / "rmsnorm_bwd_naive.py"
    plain = evaluate(TASK, naive, "cpu", ["smoke_m64_n256"])
    with CheckerPool() as pool:
        pooled = [evaluate(TASK, naive, "cpu", ["smoke_m64_n256"], pool=pool) for _ in range(2)]
    assert plain.status == "passed" and [r.status for r in pooled] == ["passed", "passed"]
    assert [w.name for w in pooled[1].workloads] == [w.name for w in plain.workloads]
    assert pooled[0].workloads[0].rel_err != pooled[1].workloads[0].rel_err  # fresh secret inputs each time


def test_a_zygote_that_cannot_start_is_given_up_after_two_tries(tmp_path: Path) -> None:
    from workbench.harness.host.checker_pool import PoolUnavailable

    fake = tmp_path / "shadow" / "workbench"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('not this workbench')\n")
    env = {**worker_env("cpu"), "PYTHONPATH": str(fake.parent)}
    read, write = os.pipe()
    try:
        with CheckerPool() as pool:
            for _ in range(2):
                with pytest.raises(PoolUnavailable):
                    pool.start(env, str(tmp_path), write, None)
            started = time.monotonic()
            with pytest.raises(PoolUnavailable, match="no zygote"):
                pool.start(env, str(tmp_path), write, None)
            assert time.monotonic() - started < 0.5  # no third zygote is started
    finally:
        os.close(read)
        os.close(write)
