"""The solution host answers a request only once the request's own work is over, freeing included: work it
left for after the reply would run while the checker's clock times the next request (a timed call), and the
wall-clock cross-check would charge the harness's work to the solution."""

from __future__ import annotations

import time
import weakref
from typing import Any, cast

import pytest
import torch

from workbench.harness.solution.host import HeldReplies, Host
from workbench.harness.solution.transport import Channel, ChannelClosed


class RecordingWire:
    """A channel end that plays a list of requests and notes, at each reply, which request tensors are alive."""

    def __init__(self, requests: list[tuple[dict[str, Any], int]]) -> None:
        self.requests = requests  # (message, number of fresh tensors made for it)
        self.made: list[weakref.ref[torch.Tensor]] = []
        self.alive_at_reply: list[int] = []
        self.replies: list[dict[str, Any]] = []

    def recv(self, timeout: float | None = None, device: torch.device | str = "cpu") -> tuple[dict[str, Any], list[torch.Tensor]]:
        if not self.requests:
            raise ChannelClosed("no more requests")
        message, count = self.requests.pop(0)
        tensors = [torch.randn(64, 64) for _ in range(count)]
        self.made = [weakref.ref(t) for t in tensors]
        return message, tensors

    def send(self, message: dict[str, Any], tensors: Any = ()) -> None:
        self.replies.append(message)
        self.alive_at_reply.append(sum(ref() is not None for ref in self.made))


def test_a_refills_temporaries_are_freed_before_its_reply() -> None:
    wire = RecordingWire(
        [
            ({"op": "put", "slot": 0, "names": ["a", "b"]}, 2),  # new tensors: the slot keeps them
            ({"op": "put", "slot": 0, "names": ["a", "b"], "refill": True, "timed": True}, 2),  # values copied in
        ]
    )
    Host(cast("Channel", wire)).serve()
    assert [r["ok"] for r in wire.replies] == [True, True]
    assert wire.alive_at_reply == [2, 0]  # the refill's received tensors were gone when it answered


def test_a_malformed_request_is_still_answered() -> None:
    wire = RecordingWire([({"op": "put", "slot": 0, "names": ["a"]}, 2), ({"op": "no_such_op"}, 0)])
    Host(cast("Channel", wire)).serve()
    assert [r["ok"] for r in wire.replies] == [False, False]
    assert "bad request" in wire.replies[0]["message"] and "unknown request" in wire.replies[1]["message"]


def test_release_reports_the_device_memory_peak_the_checker_reads() -> None:
    """`release` answers with the process's device-memory peak (0 on a CPU), in the shape the checker parses:
    `bench tasks` shows it per workload beside the checker's own peak."""
    from workbench.harness.protocol.replies import ProtocolViolation, ReleaseReply, parse

    wire = RecordingWire([({"op": "release"}, 0)])
    Host(cast("Channel", wire)).serve()
    assert parse(ReleaseReply, wire.replies[0]).peak_bytes == 0
    for forged in ({"ok": True}, {"ok": True, "peak_bytes": -1}, {"ok": True, "peak_bytes": "1"}):
        with pytest.raises(ProtocolViolation):
            parse(ReleaseReply, forged)


def test_a_calls_reply_says_how_long_the_process_served_it_and_no_other_reply_does() -> None:
    """From reading the request to sending the reply, stamped as the reply leaves (frees included): the cross-check's
    note sets it beside the checker's round trip, to tell time spent in the process from time outside it."""
    wire = RecordingWire([])
    held = HeldReplies(cast("Channel", wire))
    held.received_at = time.perf_counter() - 0.002
    held.send({"ok": True, "ms": 0.1, "host_ms": 0.5})
    held.send({"ok": True})
    held.release()
    assert wire.replies[0]["served_ms"] >= 2.0 and "served_ms" not in wire.replies[1]
