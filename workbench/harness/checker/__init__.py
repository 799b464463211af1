"""The trusted checker process (torch): secret inputs, the float64 oracle, correctness, timing, the cross-checks;
it drives the solution process.
"""
