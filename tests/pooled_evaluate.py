"""`evaluate` for tests that evaluate in this process: the harness's own, with one checker pool per test
process, so that each evaluation's checker is forked from a warm zygote (harness/host/checker_pool.py)
instead of starting an interpreter that imports torch (about 1.5 s of CPU each, a quarter of the suite).
The plain start stays covered: every CLI and session test starts it, and test_checker_pool.py compares
the two. The pool ends with the test process (its zygotes see their socket close)."""

from __future__ import annotations

import atexit
import functools
from typing import Any

from workbench.harness.host import evaluate as harness
from workbench.harness.host.checker_pool import CheckerPool
from workbench.harness.protocol.report import EvalReport


@functools.cache
def process_pool() -> CheckerPool:
    pool = CheckerPool()
    atexit.register(pool.close)
    return pool


def evaluate(*args: Any, **kwargs: Any) -> EvalReport:
    """harness.evaluate(...) with this test process's checker pool."""
    return harness.evaluate(*args, pool=process_pool(), **kwargs)
