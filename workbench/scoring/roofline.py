"""Roofline time of a workload: the floor of any honest design (task.toml `[roofline]` `min_flops` and
`bytes`, the same floor the harness enforces) at the device model's datasheet peaks
(`workbench.harness.protocol.devices`). A passing solution's fraction of it is at most 1 on the device it was
measured on; the report gives the fraction per workload as a diagnostic (the paper leaves a SOL score out).
"""

from __future__ import annotations

from workbench.catalog import Catalog, CatalogError, Task
from workbench.errors import UsageError
from workbench.harness.protocol.devices import expert_floor_ms, peaks_for


class Roofline:
    """Roofline times per (task, workload, device model), from a catalogue; what could not be computed is
    said once in `notes`."""

    def __init__(self, catalog: Catalog | None) -> None:
        self.catalog = catalog
        self.notes: list[str] = []
        self._tasks: dict[str, Task | None] = {}
        self._noted: set[str] = set()

    def _note(self, key: str, text: str) -> None:
        if key not in self._noted:
            self._noted.add(key)
            self.notes.append(text)

    def _task(self, task_id: str) -> Task | None:
        if task_id not in self._tasks:
            task: Task | None = None
            if self.catalog is not None:
                try:
                    task = self.catalog.task(task_id)
                except CatalogError as exc:
                    self._note(f"task {task_id}", f"roofline of {task_id}: {exc.message}")
            self._tasks[task_id] = task
        return self._tasks[task_id]

    def floor_ms(self, task_id: str, workload: str, device_name: str) -> float | None:
        """The roofline time in ms, or None when the task, the workload or the device's peaks are unknown."""
        task = self._task(task_id)
        if task is None:
            return None
        peaks = peaks_for(device_name)
        if peaks is None:
            self._note(f"device {device_name}", f"roofline: no datasheet peaks for device {device_name!r}")
            return None
        try:
            spec = task.workload(workload)
        except UsageError:
            self._note(f"workload {task_id}/{workload}", f"roofline: task {task_id} declares no workload {workload!r}")
            return None
        return expert_floor_ms(peaks, task, spec)
