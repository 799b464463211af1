"""The harness's version: a hash of the code that decides a report, recorded in every evaluation.

    harness_version()                    # "h-3f9c2a1b7d04e6a2": sha256 of every .py file of workbench/harness
    harness_version(static_policy=False) # the same with "-nopolicy": the source check was switched off (tests)

Every module of the harness package counts (the static policy, the guard and the sandbox, the checks and
tolerances, the timing loops, the protocol), each with its path, in sorted order, so that any change to what
can refuse a solution or measure it gives a new version. A regrade (`d2k-workbench regrade`) compares a stored
evaluation's version with this one. Task files are not part of it: a report names its task, and the reference
cache keys on their content separately.
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

HARNESS_DIR = Path(__file__).resolve().parents[1]  # workbench/harness
PREFIX = "h-"
NO_POLICY = "-nopolicy"


@functools.cache
def _code_hash(root: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def harness_version(static_policy: bool = True, root: Path = HARNESS_DIR) -> str:
    """The version of the harness in `root` (see the module's docstring)."""
    return PREFIX + _code_hash(root) + ("" if static_policy else NO_POLICY)
