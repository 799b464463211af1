"""The channel between the trusted checker and the untrusted solution process.

One `socket.socketpair(AF_UNIX, SOCK_SEQPACKET)`: each message is one JSON object (message boundaries
are kept by the socket type). Tensors travel through a staging arena per direction: a memory file
(memfd) the sender owns, passed once with SCM_RIGHTS (and again when it grows), mapped by both sides and,
where a GPU copies it, page-locked once (cudaHostRegister) so copies run by DMA at full speed. The message
names each tensor's dtype, shape and offset. Only plain bytes cross: the sender copies each tensor into
its arena, the receiver copies the bytes into memory of its own (on its device) before it answers, so
what the other side does to the arena afterwards changes nothing, and nothing but a plain tensor of the
stated dtype and shape can come out. No file path, secret or Python object crosses (a timed call's
seed does, just before the call: solution/host.py).

The protocol is strictly request-reply, so a sender never rewrites its arena while the other side is
still reading it.
"""

from __future__ import annotations

import ctypes
import json
import mmap
import os
import socket
from collections.abc import Sequence
from typing import Any

import torch

MAX_MESSAGE = 1 << 20  # bytes of JSON in one message
MAX_TENSORS = 64  # tensors in one message
_POPULATE = getattr(mmap, "MAP_POPULATE", 0)  # map the sender's pages at once (Linux)
DTYPES: dict[str, torch.dtype] = {
    str(d).removeprefix("torch."): d
    for d in (
        torch.float64,
        torch.float32,
        torch.float16,
        torch.bfloat16,
        torch.float8_e4m3fn,
        torch.float8_e5m2,
        torch.int64,
        torch.int32,
        torch.int16,
        torch.int8,
        torch.uint8,
        torch.bool,
    )
}


class ChannelClosed(Exception):
    """The other side closed the channel (it exited or crashed)."""


class ChannelTimeout(Exception):
    """No message arrived before the deadline."""


class ProtocolError(Exception):
    """A message that does not follow the protocol (malformed JSON, bad tensor description)."""


PIN_MIN_BYTES = 8 << 20  # arenas smaller than this are not worth page-locking
ALIGN = 4096


class _Mapping:
    """One mapping of an arena's memfd, page-locked on first use by a GPU copy."""

    def __init__(self, fd: int, size: int, owner: bool) -> None:
        self.fd, self.size, self.owner = fd, size, owner
        self.map = mmap.mmap(fd, size, flags=mmap.MAP_SHARED | (0 if owner else _POPULATE))
        self.anchor: ctypes.c_char | None = None
        self.pinned = False

    def pin(self) -> None:
        if self.pinned or self.size < PIN_MIN_BYTES or not torch.cuda.is_available():
            return
        self.anchor = ctypes.c_char.from_buffer(self.map)
        self.pinned = int(torch.cuda.cudart().cudaHostRegister(ctypes.addressof(self.anchor), self.size, 0)) == 0
        if not self.pinned:  # best effort: the copies still run, only slower
            self.anchor = None

    def view(self, offset: int, nbytes: int) -> torch.Tensor:
        return torch.frombuffer(self.map, dtype=torch.uint8, count=nbytes, offset=offset)

    def close(self) -> None:
        if self.pinned and self.anchor is not None:
            torch.cuda.cudart().cudaHostUnregister(ctypes.addressof(self.anchor))
        self.anchor = None
        self.pinned = False
        self.map.close()
        os.close(self.fd)


def _layout(tensors: Sequence[torch.Tensor]) -> tuple[list[int], int]:
    offsets, total = [], 0
    for t in tensors:
        offsets.append(total)
        total += -(-(t.numel() * t.element_size()) // ALIGN) * ALIGN
    return offsets, total


class Channel:
    """Messages with tensors over one end of a SOCK_SEQPACKET socketpair."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.outgoing: _Mapping | None = None  # our arena
        self.incoming: _Mapping | None = None  # the other side's arena, as mapped here

    @staticmethod
    def pair() -> tuple[Channel, socket.socket]:
        """A channel for this side and the other end's socket (to pass to the child process)."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        return Channel(ours), theirs

    @staticmethod
    def from_fd(fd: int) -> Channel:
        return Channel(socket.socket(fileno=fd))

    def _arena(self, total: int) -> int | None:
        """Make our arena at least `total` bytes; the fd to send when it is new."""
        if self.outgoing is not None and self.outgoing.size >= total:
            return None
        size = max(total, 2 * (self.outgoing.size if self.outgoing else 0), ALIGN)
        if self.outgoing is not None:
            self.outgoing.close()
        fd = os.memfd_create("d2k-arena", os.MFD_CLOEXEC)
        os.ftruncate(fd, size)
        self.outgoing = _Mapping(fd, size, owner=True)
        return fd

    def send(self, message: dict[str, Any], tensors: Sequence[torch.Tensor] = ()) -> None:
        if len(tensors) > MAX_TENSORS:
            raise ProtocolError(f"{len(tensors)} tensors in one message (at most {MAX_TENSORS})")
        datas = [t.detach() if t.is_contiguous() else t.detach().contiguous() for t in tensors]
        offsets, total = _layout(datas)
        new_fd = self._arena(total) if datas else None
        metas = []
        for data, offset in zip(datas, offsets, strict=True):
            nbytes = data.numel() * data.element_size()
            if nbytes:
                assert self.outgoing is not None
                if data.device.type == "cuda":
                    self.outgoing.pin()
                self.outgoing.view(offset, nbytes).copy_(data.reshape(-1).view(torch.uint8))
            metas.append(
                {"dtype": str(data.dtype).removeprefix("torch."), "shape": list(data.shape), "nbytes": nbytes, "offset": offset}
            )
        payload = json.dumps(
            {**message, "tensors": metas, "arena": self.outgoing.size if new_fd and self.outgoing is not None else None}
        ).encode()
        if len(payload) > MAX_MESSAGE:
            raise ProtocolError(f"message of {len(payload)} bytes (at most {MAX_MESSAGE})")
        try:
            socket.send_fds(self.sock, [payload], [new_fd] if new_fd is not None else [])
        except (BrokenPipeError, ConnectionResetError) as exc:
            raise ChannelClosed(str(exc)) from exc

    def recv(self, timeout: float | None = None, device: torch.device | str = "cpu") -> tuple[dict[str, Any], list[torch.Tensor]]:
        """The next message and its tensors (private copies on `device`). Raises ChannelClosed / ChannelTimeout."""
        self.sock.settimeout(timeout)
        try:
            data, fds, flags, _ = socket.recv_fds(self.sock, MAX_MESSAGE, 1)
        except TimeoutError as exc:
            raise ChannelTimeout(f"no answer within {timeout:g} s") from exc
        except (ConnectionResetError, OSError) as exc:
            raise ChannelClosed(str(exc)) from exc
        finally:
            self.sock.settimeout(None)
        if not data and not fds:
            raise ChannelClosed("the other side closed the channel")
        try:
            if flags & (socket.MSG_TRUNC | socket.MSG_CTRUNC):
                raise ProtocolError("message or descriptors truncated")
            try:
                message = json.loads(data)
            except ValueError as exc:
                raise ProtocolError(f"malformed message: {exc}") from exc
            if not isinstance(message, dict):
                raise ProtocolError("a message must be a JSON object")
            metas = message.pop("tensors", [])
            size = message.pop("arena", None)
            if not isinstance(metas, list) or len(metas) > MAX_TENSORS:
                raise ProtocolError(f"bad tensor list {metas!r}"[:200])
            if fds:
                if not isinstance(size, int) or size <= 0 or os.fstat(fds[0]).st_size < size:
                    raise ProtocolError("an arena whose size does not match its file")
                if self.incoming is not None:
                    self.incoming.close()
                self.incoming = _Mapping(fds.pop(), size, owner=False)
        finally:
            for fd in fds:
                os.close(fd)
        return message, [self._tensor(meta, torch.device(device)) for meta in metas]

    def _tensor(self, meta: Any, device: torch.device) -> torch.Tensor:
        try:
            dtype = DTYPES[meta["dtype"]]
            shape = [int(d) for d in meta["shape"]]
            offset = int(meta["offset"])
            if any(d < 0 for d in shape) or offset < 0:
                raise ProtocolError(f"negative dimension or offset in {meta!r}")
            numel = 1
            for d in shape:
                numel *= d
            nbytes = numel * torch.empty((), dtype=dtype).element_size()
        except (KeyError, TypeError, ValueError) as exc:
            raise ProtocolError(f"bad tensor description {meta!r}: {exc}") from exc
        if nbytes != meta.get("nbytes") or (nbytes and (self.incoming is None or offset + nbytes > self.incoming.size)):
            raise ProtocolError(f"tensor {meta!r} does not fit the arena")
        out = torch.empty(shape, dtype=dtype, device=device)
        if nbytes:
            assert self.incoming is not None
            if device.type == "cuda":
                self.incoming.pin()
            out.view(-1).view(torch.uint8).copy_(self.incoming.view(offset, nbytes))
        return out

    def close(self) -> None:
        for mapping in (self.outgoing, self.incoming):
            if mapping is not None:
                mapping.close()
        self.outgoing = self.incoming = None
        self.sock.close()


DIGEST_CHUNK = 1 << 24  # elements per step of `digest` (bounds its temporary memory to a few hundred MB)
_DIGEST_MULTIPLIER = 0x9E3779B97F4A7C15 - (1 << 64)  # an odd 64-bit constant, as a signed int64


def digest(t: torch.Tensor) -> int:
    """A 64-bit digest of a tensor's bytes, computed on its device: the sum over its 32-bit words (bytes
    where the size is not a multiple of 4) of word x (position x an odd constant + 1), in wrapping int64
    arithmetic. Integer addition modulo 2^64 is exact and commutative, so the result is the same on any
    device, in any reduction order. Both ends of the channel compare a slot's made inputs with it (a
    check against accidents of a task's generator, never a security check: the verdicts use the
    checker's own values)."""
    words = _words(t)
    total = torch.zeros((), dtype=torch.int64, device=t.device)
    for start in range(0, words.numel(), DIGEST_CHUNK):
        chunk = words[start : start + DIGEST_CHUNK].to(torch.int64)
        position = torch.arange(start, start + chunk.numel(), dtype=torch.int64, device=t.device)
        total += (chunk * (position * _DIGEST_MULTIPLIER + 1)).sum()
    return int(total.item())


# Taken when the solution process imports this module, before any solution code runs (as host.FOREACH_COPY):
# the guard's snapshot covers torch's public names only, and a private function replaced by a solution could
# hand back values of its choosing wherever the process packs a list (its state after a call, say).
FLATTEN = torch._C._nn.flatten_dense_tensors


def pack(tensors: Sequence[torch.Tensor]) -> torch.Tensor:
    """A list input's elements as one 1-D tensor (their values in order, always a new copy): how a list crosses
    the channel, with the element shapes in the message (`split` on the other side). One call for the whole
    list (torch's flatten_dense_tensors, a concatenation of the elements' flat views made in C++), not two
    tensor methods per element."""
    if not tensors:
        raise ValueError("an empty list cannot be packed")
    if len(tensors) == 1:  # flatten_dense_tensors returns a lone contiguous tensor's own storage, not a copy
        return torch.cat([tensors[0].detach().reshape(-1)])
    return FLATTEN(list(tensors)).detach()


def split(packed: torch.Tensor, shapes: Sequence[Sequence[int]]) -> list[torch.Tensor]:
    """Views of `packed` with the element `shapes` (the inverse of `pack`); ValueError when they do not fill it."""
    sizes = [_numel(shape) for shape in shapes]
    if packed.dim() != 1 or sum(sizes) != packed.numel():
        raise ValueError(f"a packed list of {packed.numel()} values does not hold elements of {sum(sizes)}")
    return [part.view(*shape) for part, shape in zip(torch.split(packed, sizes), shapes, strict=True)]


def _numel(shape: Sequence[int]) -> int:
    if not isinstance(shape, (list, tuple)) or not all(isinstance(d, int) and d >= 0 for d in shape):
        raise ValueError(f"bad element shape {shape!r}"[:100])
    count = 1
    for d in shape:
        count *= d
    return count


def digest_many(tensors: Sequence[torch.Tensor]) -> int:
    """One digest of a list's elements (each element's `digest`, in order, combined with wrapping arithmetic)."""
    total = 0
    for index, value in enumerate(digest_each(tensors)):
        total = (total * 1_000_003 + value + index) % (1 << 64)
    return total


def digest_each(tensors: Sequence[torch.Tensor]) -> list[int]:
    """`digest` of each tensor, runs of small ones of one device and word size (the 32-bit words, or bytes)
    computed together: their words concatenated, each word's position counted from its own tensor's start,
    the products summed per tensor (exact wrapping integer sums: any order gives the same digests)."""
    found: list[int] = []
    start = 0
    while start < len(tensors):
        words = _words(tensors[start])
        if words.numel() > DIGEST_CHUNK // 4 or words.numel() == 0:
            found.append(digest(tensors[start]))
            start += 1
            continue
        run, total = [words], words.numel()
        while start + len(run) < len(tensors) and len(run) < DIGEST_RUN:
            more = _words(tensors[start + len(run)])
            if not 0 < more.numel() <= DIGEST_CHUNK // 4 or more.dtype != words.dtype or more.device != words.device:
                break
            if total + more.numel() > DIGEST_CHUNK:
                break
            run.append(more)
            total += more.numel()
        found += _digest_run(run)
        start += len(run)
    return found


DIGEST_RUN = 4096  # tensors digested together at most


def _words(t: torch.Tensor) -> torch.Tensor:
    """A tensor's bytes as `digest` reads them: 32-bit words, or bytes where their count is not a multiple of 4.
    A view that starts between two words of its storage (a bfloat16 element at an odd offset) is copied first:
    its words are its own bytes, wherever it lies."""
    flat = t.detach().contiguous().view(-1).view(torch.uint8)
    if flat.numel() % 4:
        return flat
    if flat.storage_offset() % 4:
        flat = flat.clone()
    return flat.view(torch.int32)


def _digest_run(run: list[torch.Tensor]) -> list[int]:
    device = run[0].device
    lengths = torch.tensor([w.numel() for w in run], device=device)
    owner = torch.repeat_interleave(torch.arange(len(run), device=device), lengths)
    words = torch.cat(run).to(torch.int64)
    position = torch.arange(words.numel(), dtype=torch.int64, device=device) - (torch.cumsum(lengths, 0) - lengths)[owner]
    sums = torch.zeros(len(run), dtype=torch.int64, device=device)
    sums.index_add_(0, owner, words * (position * _DIGEST_MULTIPLIER + 1))
    return [int(v) for v in sums.tolist()]
