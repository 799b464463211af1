"""Evaluate one solution file on one task, in three processes.

- ``protocol/``: what the processes share and send each other, with no torch (the report, the checker's
  request and the replies, device peak figures); read by sessions, scoring and the workbench.
- ``host/``: the parent side, no torch: ``evaluate()``, the static policy pass, the sandbox, the reference cache.
- ``checker/``: the trusted checker process (torch): secret inputs, the float64 oracle, correctness,
  timing, the cross-checks; it starts and drives the solution process.
- ``solution/``: what runs inside the sandboxed solution process (torch): its host loop, the guard, the
  timing loop, the Triton-interpreter fixes, the profiler's host.
- ``policy/``: the static policy: the allow-list (data), its resolver, the scope builder and the checker.

This package's own ``__init__`` imports nothing, so ``workbench.harness.protocol`` loads without torch.
"""
