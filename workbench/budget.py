"""The built-in agent's default budget: the paper's 350 model turns per session.

Here, not in the session package, so that the CLI can show it as an option's default without importing the
session package (which imports torch through the harness): `d2k-workbench --help` and the workbench start fast.
"""

DEFAULT_MAX_TURNS = 350
