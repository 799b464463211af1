"""What runs inside the sandboxed solution process (torch): its host loop, the guard, the timing loop, the
Triton-interpreter fixes.
"""
