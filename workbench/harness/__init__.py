"""Evaluate one solution file on one task: isolation, checks, policy, timing, roofline.

Imports only the catalog; never sessions, agents or the UI.
"""

from workbench.device import resolve_device
from workbench.harness.evaluate import evaluate
from workbench.harness.report import STATUSES, EvalReport, Status, Violation, WorkloadResult

__all__ = ["STATUSES", "EvalReport", "Status", "Violation", "WorkloadResult", "evaluate", "resolve_device"]
