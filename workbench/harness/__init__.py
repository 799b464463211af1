"""Evaluate one solution file on one task: isolation, checks, policy, timing, roofline.

Imports only the catalog; never sessions, agents or the UI. `evaluate` lives in `workbench.harness.evaluate`
and is not imported here: it imports torch, and the report types below are read by the CLI, the session
log and the workbench, which start without torch.
"""

from workbench.device import resolve_device
from workbench.harness.report import STATUSES, EvalReport, Status, Violation, WorkloadResult

__all__ = ["STATUSES", "EvalReport", "Status", "Violation", "WorkloadResult", "resolve_device"]
