"""Task and guidance schemas and loading. Knows nothing of the harness, sessions or UI."""

from workbench.catalog.catalog import Catalog, CatalogEntry, natural_key
from workbench.catalog.errors import CatalogError
from workbench.catalog.guidance import CONFIGS, Guidance, GuidanceConfig, Rubric, parse_config, render
from workbench.catalog.task import Task, TaskSpec, Workload

__all__ = [
    "CONFIGS",
    "Catalog",
    "CatalogEntry",
    "CatalogError",
    "Guidance",
    "GuidanceConfig",
    "Rubric",
    "Task",
    "TaskSpec",
    "Workload",
    "natural_key",
    "parse_config",
    "render",
]
