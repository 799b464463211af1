"""Campaigns: the paper's experiment matrix (models x tasks x guidance configurations, repetitions, design
runs, judging) run to the end on one machine's GPUs or a Ray cluster, resumable after any interruption.

- spec.py: the campaign file (TOML, pydantic; errors with file, line and key)
- plan.py: its units (one session each, ids fixed by the cell) and the plan's estimate
- work.py: one unit on one worker: create its session once, run or resume it, judge it
- pools.py: where jobs run (LocalPool: processes here; RayPool: Ray tasks)
- scheduler.py: GPU and CPU slots, retries, progress
- records.py: attempts per unit; status.py: progress read from disk
"""
