"""The resource limits a checker hands to a solution process it starts through the warm start (a plain start's
process inherits them): their names on the wire and the `resource` constants they stand for."""

from __future__ import annotations

import resource

RESOURCE_LIMITS = {
    "as": resource.RLIMIT_AS,
    "core": resource.RLIMIT_CORE,
    "data": resource.RLIMIT_DATA,
    "fsize": resource.RLIMIT_FSIZE,
    "nofile": resource.RLIMIT_NOFILE,
    "nproc": resource.RLIMIT_NPROC,
    "stack": resource.RLIMIT_STACK,
}
