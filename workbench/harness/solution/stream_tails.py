"""Device work a call leaves running after its timed window, measured on the device (no host clock).

A call's end event is recorded on the stream the call ran on; work the call queued on another stream
can still be running when that event fires, and a device-wide synchronisation then waits for it outside
the window. `StreamTails` measures that tail on the device alone:

1. at set-up, before any solution code runs, it collects every stream the solution could reach: torch's
   default stream and every stream of torch's stream pools (`torch.cuda.Stream()` hands them out round
   robin, 32 a priority; streams from raw handles need ctypes or a foreign library, which the policy
   refuses), with one timing event per stream;
2. right after the end event (`mark`), harness code records each stream's event, then a probe event on
   the call's stream. An idle stream's event fires when the device reaches it, before the probe (it was
   queued first); a stream still busy with the call's work fires when that work is done;
3. after the device-wide synchronisation (`hidden_ms`), the tail is the latest stream event after the
   probe, in device time (0 when none is later).

No host time enters it: a process descheduled between the records only delays the probe and the
events alike, so the figure does not move with the machine's load. It is measured on every call (timed,
checked and null calls alike), so a solution cannot tell which calls are looked at.
"""

from __future__ import annotations

import torch

POOL_PRIORITIES = range(0, -8, -1)  # torch's pools: priority 0 and the higher ones it offers (clamped)
POOL_SIZE_GUESS = 32  # streams per pool in torch's CUDAStream.cpp; the loop stops at the first repeat


def pool_streams(device: torch.device) -> list[torch.cuda.Stream]:
    """The default stream and every distinct stream of torch's pools on `device`."""
    found: dict[int, torch.cuda.Stream] = {}
    default = torch.cuda.default_stream(device)
    found[default.cuda_stream] = default
    for priority in POOL_PRIORITIES:
        seen_here: set[int] = set()
        for _ in range(4 * POOL_SIZE_GUESS):
            stream = torch.cuda.Stream(device=device, priority=priority)
            if stream.cuda_stream in seen_here:
                break
            seen_here.add(stream.cuda_stream)
            found.setdefault(stream.cuda_stream, stream)
    return list(found.values())


class StreamTails:
    """One timing event per reachable stream, and a probe; reused by every call."""

    def __init__(self, device: torch.device) -> None:
        self.streams = pool_streams(device)
        self.events = [torch.cuda.Event(enable_timing=True) for _ in self.streams]
        self.probe = torch.cuda.Event(enable_timing=True)

    def mark(self) -> None:
        """Record each stream's event, then the probe on the current stream (right after the end event)."""
        for stream, event in zip(self.streams, self.events, strict=True):
            event.record(stream)
        self.probe.record()

    def hidden_ms(self) -> float:
        """Device time from the probe to the last stream's event (after a device-wide synchronisation)."""
        return max(0.0, *(float(self.probe.elapsed_time(event)) for event in self.events))
