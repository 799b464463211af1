"""The parent side of an evaluation (no torch): the policy pass, the sandbox, the checker process it starts, the
reference-timing cache.
"""
