"""The log's integrity seal: each line of events.jsonl carries an HMAC chained over every line before it.

The key (`.log-key`, 32 random bytes in hex, mode 0600) is made when the session is created and lives
in the session folder, which a sandboxed command never sees. A line that an agent (or anything but the
runner) added or changed does not carry a valid seal: readers report it as a bad line and ignore it,
and the chain goes on from the last good line. Sessions made before the seal existed have no key and
are read as before.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import secrets
from pathlib import Path

KEY_NAME = ".log-key"
_SEAL = re.compile(rb',"mac":"([0-9a-f]{64})"\}$')


def create_key(session_dir: Path) -> None:
    """Make the session's key (once, when the session is created)."""
    path = session_dir / KEY_NAME
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(secrets.token_hex(32) + "\n")


class Chain:
    """The running seal of one log: `seal` for the writer, `check` for readers (both advance it)."""

    def __init__(self, key: bytes | None) -> None:
        self.key = key
        self.last = b""

    @staticmethod
    def for_session(session_dir: Path) -> Chain:
        path = session_dir / KEY_NAME
        try:
            return Chain(bytes.fromhex(path.read_text().strip()))
        except FileNotFoundError:
            return Chain(None)
        except ValueError:
            return Chain(b"")  # an unreadable key: nothing verifies, every line is reported

    def _mac(self, body: bytes) -> bytes:
        assert self.key is not None
        return hmac.new(self.key, self.last + body, hashlib.sha256).hexdigest().encode()

    def seal(self, text: str) -> str:
        """`text` (one JSON object) with its seal as the last field."""
        if self.key is None:
            return text
        mac = self._mac(text.encode())
        self.last = mac
        return text[:-1] + f',"mac":"{mac.decode()}"}}'

    def check(self, raw: bytes) -> str | None:
        """None when the line is the runner's own (the chain advances), else why not."""
        if self.key is None:
            return None
        found = _SEAL.search(raw.rstrip())
        if found is None:
            return "no integrity seal: not written by this session's runner"
        expected = self._mac(raw.rstrip()[: found.start()] + b"}")
        if not self.key or not hmac.compare_digest(expected, found.group(1)):
            return "integrity seal does not match: not written by this session's runner"
        self.last = found.group(1)
        return None
