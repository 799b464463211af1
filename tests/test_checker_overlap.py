"""The checker computes the oracle during the solution's call only where both fit on the device (issue 55:
fused_linear_ce's reference, materialised [tokens, vocabulary] logits, ran the device out of memory beside the
solution's own peak). The GPU's memory is faked here; `call_expecting` is exercised as the trials use it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch

from workbench.harness.checker.correctness import OVERLAP_SHARE, CheckerOutOfMemory, Expected, WorkloadChecker

GIB = 2**30


class FakeDevice:
    """A GPU's memory as the checker sees it: free bytes, and what the oracle allocates when it runs."""

    def __init__(self, free: int, oracle_needs: int) -> None:
        self.free, self.oracle_needs = free, oracle_needs
        self.allocated = self.peak = 1 * GIB

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr(torch.cuda, "empty_cache", lambda: None)
        monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device=None: (self.free, 80 * GIB))
        monkeypatch.setattr(torch.cuda, "memory_allocated", lambda device=None: self.allocated)
        monkeypatch.setattr(torch.cuda, "max_memory_allocated", lambda device=None: self.peak)

    def run_oracle(self) -> None:
        self.peak = max(self.peak, self.allocated + self.oracle_needs)


def checker(device: FakeDevice | None, events: list[str], fail_first_overlapped: bool = False) -> WorkloadChecker:
    """A checker whose call and oracle only record what happens (the order is what is checked)."""
    made = object.__new__(WorkloadChecker)
    made.device = torch.device("cuda" if device is not None else "cpu")
    made.overlap = None if device is not None else True
    failures = [fail_first_overlapped]

    def call(slot: int, *, profile: bool = False, keep: bool = False, meanwhile: Callable[[], None] | None = None) -> None:
        events.append("call starts")
        if meanwhile is not None:
            meanwhile()
        events.append("call returns")

    def expected(inputs: dict[str, Any]) -> Expected:
        if failures[0] and events[-1] == "call starts":
            failures[0] = False
            events.append("oracle out of memory")
            raise CheckerOutOfMemory("out of device memory in the checker")
        if device is not None:
            device.run_oracle()
        events.append("oracle")
        return Expected([], {}, None)

    made.call = call  # type: ignore[method-assign]
    made.expected = expected  # type: ignore[method-assign]
    return made


def test_on_the_cpu_the_oracle_runs_during_every_call() -> None:
    events: list[str] = []
    made = checker(None, events)
    made.call_expecting(0, {})
    made.call_expecting(0, {})
    assert events == ["call starts", "oracle", "call returns"] * 2


def test_on_a_gpu_the_first_call_runs_alone_and_later_ones_overlap_where_the_oracle_fits(monkeypatch: pytest.MonkeyPatch) -> None:
    device = FakeDevice(free=40 * GIB, oracle_needs=10 * GIB)
    device.install(monkeypatch)
    events: list[str] = []
    made = checker(device, events)
    made.call_expecting(0, {})
    assert events == ["call starts", "call returns", "oracle"]
    assert made.overlap is True
    events.clear()
    made.call_expecting(0, {})
    assert events == ["call starts", "oracle", "call returns"]


def test_an_oracle_too_large_for_what_the_solution_leaves_free_runs_after_every_call(monkeypatch: pytest.MonkeyPatch) -> None:
    device = FakeDevice(free=60 * GIB, oracle_needs=int(OVERLAP_SHARE * 60 * GIB) + GIB)
    device.install(monkeypatch)
    events: list[str] = []
    made = checker(device, events)
    for _ in range(3):
        made.call_expecting(0, {})
    assert made.overlap is False
    assert events == ["call starts", "call returns", "oracle"] * 3


def test_an_overlapped_oracle_that_runs_out_of_memory_is_computed_again_after_the_call(monkeypatch: pytest.MonkeyPatch) -> None:
    """The call itself completes (its reply, violations and outputs are still checked by `call`), and the oracle is
    computed once it has returned; later calls no longer overlap."""
    device = FakeDevice(free=40 * GIB, oracle_needs=GIB)
    device.install(monkeypatch)
    events: list[str] = []
    made = checker(device, events, fail_first_overlapped=True)
    made.overlap = True
    made.call_expecting(0, {})
    assert events == ["call starts", "oracle out of memory", "call returns", "oracle"]
    assert made.overlap is False
    events.clear()
    made.call_expecting(0, {})
    assert events == ["call starts", "call returns", "oracle"]
