"""The import probe: a sandboxed worker process (torch) that runs a peer problem's own code once, on the CPU, to
describe its inputs, parameters and outputs at the peer's sizes and at reduced ones, and to check that the
problem is a function of the harness's seed. Its runtime (peer_runtime.py) is copied into every imported task.

This package's own ``__init__`` imports nothing (the importer finds the runtime's file without importing torch).
"""
