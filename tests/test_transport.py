"""The checker <-> solution channel: plain bytes only, and a misbehaving peer is an error, never a crash."""

from __future__ import annotations

import json
import socket

import pytest
import torch

from workbench.harness.solution.transport import Channel, ChannelClosed, ChannelTimeout, ProtocolError


@pytest.fixture
def pair() -> tuple[Channel, Channel]:
    ours, theirs = Channel.pair()
    return ours, Channel(theirs)


def test_tensors_cross_as_private_copies(pair: tuple[Channel, Channel]) -> None:
    a, b = pair
    x = torch.randn(3, 5).to(torch.bfloat16)
    a.send({"op": "put"}, [x, torch.empty(0, 4), torch.tensor(7, dtype=torch.int64), x.mT])
    message, (x2, empty, scalar, xt) = b.recv(timeout=5)
    assert message == {"op": "put"}
    assert torch.equal(x2, x) and x2.dtype == torch.bfloat16 and x2.data_ptr() != x.data_ptr()
    assert empty.shape == (0, 4) and int(scalar) == 7 and torch.equal(xt, x.mT) and xt.is_contiguous()
    a.send({}, [torch.ones(3, 5, dtype=torch.bfloat16)])  # the arena is reused: the first copy stays
    b.recv(timeout=5)
    assert torch.equal(x2, x)


def test_a_growing_arena_is_sent_again(pair: tuple[Channel, Channel]) -> None:
    a, b = pair
    for n in (10, 100_000, 10):
        y = torch.arange(n, dtype=torch.float32)
        a.send({"n": n}, [y])
        assert torch.equal(b.recv(timeout=5)[1][0], y)


def test_a_closed_peer_and_silence_are_reported(pair: tuple[Channel, Channel]) -> None:
    a, b = pair
    with pytest.raises(ChannelTimeout):
        b.recv(timeout=0.1)
    a.close()
    with pytest.raises(ChannelClosed):
        b.recv(timeout=1)


@pytest.mark.parametrize(
    "payload",
    [
        b"not json",
        b"[1, 2]",
        json.dumps({"tensors": [{"dtype": "float32", "shape": [4], "nbytes": 16, "offset": 0}]}).encode(),
        json.dumps({"tensors": [{"dtype": "complex128", "shape": [1], "nbytes": 16, "offset": 0}]}).encode(),
        json.dumps({"tensors": "x"}).encode(),
    ],
)
def test_malformed_messages_are_protocol_errors(payload: bytes) -> None:
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    ours.send(payload)
    with pytest.raises(ProtocolError):
        Channel(theirs).recv(timeout=5)


def test_a_tensor_outside_the_arena_is_refused(pair: tuple[Channel, Channel]) -> None:
    a, b = pair
    a.send({}, [torch.zeros(4)])
    b.recv(timeout=5)
    bad = {"tensors": [{"dtype": "float32", "shape": [1 << 20], "nbytes": 4 << 20, "offset": 0}], "arena": None}
    a.sock.send(json.dumps(bad).encode())
    with pytest.raises(ProtocolError):
        b.recv(timeout=5)
