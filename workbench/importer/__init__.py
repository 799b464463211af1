"""Import peer problem sets (KernelBench, GPU MODE reference-kernels) from a local checkout as tasks of this
workbench: one task folder per problem, its signature inferred by the sandboxed probe, its reference and inputs
calling the peer's own code with seeds the harness controls. Problems the task format cannot express are
skipped with their reason. Never downloads anything and never runs the peer's code in this process.
"""
