"""Errors a user can cause are WorkbenchErrors with a message for them; config is validated by its model."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from workbench.catalog import CatalogError
from workbench.device import check_device_name, cuda_device_count, resolve_device
from workbench.errors import SessionError, UsageError, WorkbenchError
from workbench.session.config import ConfigError, SessionConfig, load_config, write_config
from workbench.session.eventlog import SessionLocked
from workbench.session.stop import SessionNotRunning
from workbench.session.store import SessionNotFound
from workbench.session.workspace import SecretInWorkspace, WorkspaceError


@pytest.mark.parametrize(
    "kind",
    [
        UsageError,
        SessionError,
        CatalogError,
        ConfigError,
        SessionNotFound,
        SessionLocked,
        SessionNotRunning,
        WorkspaceError,
        SecretInWorkspace,
    ],
)
def test_every_error_a_user_can_cause_is_a_workbench_error(kind: type[Exception]) -> None:
    assert issubclass(kind, WorkbenchError)
    assert not issubclass(kind, (KeyError, ValueError))  # so a bug's KeyError/ValueError is never taken for one


def test_the_message_is_the_whole_text() -> None:
    error = UsageError("unknown device 'tpu'; expected cpu, cuda or cuda:N")
    assert str(error) == error.message == "unknown device 'tpu'; expected cpu, cuda or cuda:N"
    assert str(CatalogError("tasks/x/task.toml", "Field required", "category")) == "tasks/x/task.toml: category: Field required"


@pytest.mark.parametrize("name", ["tpu", "cuda:", "CUDA", "cuda:x", "", "cpu "])
def test_bad_device_names_are_usage_errors(name: str) -> None:
    with pytest.raises(UsageError, match="expected cpu, cuda or cuda:N"):
        check_device_name(name)


def test_good_device_names_pass_without_a_gpu() -> None:
    assert [check_device_name(n) for n in ("cpu", "cuda", "cuda:3")] == ["cpu", "cuda", "cuda:3"]
    assert resolve_device("cpu") == "cpu"


def test_a_cuda_device_where_there_is_none_is_a_usage_error_suggesting_cpu() -> None:
    for name in ("cuda", "cuda:1"):
        with pytest.raises(UsageError, match=r"no CUDA device is available here; use --device cpu"):
            resolve_device(name, count=lambda: 0)
    assert resolve_device("auto", count=lambda: 0) == "cpu"
    assert resolve_device("auto", count=lambda: 2) == "cuda"
    assert resolve_device("cuda:1", count=lambda: 2) == "cuda:1"
    with pytest.raises(UsageError, match=r"this machine has 2 CUDA device\(s\): cuda:0..cuda:1"):
        resolve_device("cuda:2", count=lambda: 2)


def test_the_gpu_count_agrees_with_torch_in_this_process() -> None:
    """The child-process probe sees what torch would see here (0 on a machine without a GPU)."""
    import torch

    expected = torch.cuda.device_count() if torch.cuda.is_available() else 0
    assert cuda_device_count() == expected


def _config(**fields: object) -> dict[str, object]:
    base: dict[str, object] = {
        "id": "s1",
        "task": "muon_orthogonalize",
        "driver": "human",
        "device": "cpu",
        "created": datetime(2026, 12, 1, tzinfo=UTC),
    }
    return {**base, **fields}


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"driver": "command"}, r"driver\.command\.command[:\s]+Field required"),
        ({"driver": "replay"}, r"driver\.replay\.from_session[:\s]+Field required"),
        ({"device": "tpu"}, "unknown device 'tpu'"),
    ],
)
def test_a_session_config_missing_its_drivers_fields_is_refused_by_the_model(
    tmp_path: Path, fields: dict[str, object], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        SessionConfig.model_validate(_config(**fields))
    good = SessionConfig.model_validate(_config())
    write_config(tmp_path, good)
    text = (tmp_path / "session.toml").read_text()
    key, value = next(iter(fields.items()))
    (tmp_path / "session.toml").write_text(
        text.replace('kind = "human"', f'kind = "{value}"')
        if key == "driver"
        else text.replace('device = "cpu"', f'device = "{value}"')
    )
    with pytest.raises(ConfigError, match=message):
        load_config(tmp_path)


def test_the_cli_and_the_workbench_start_without_importing_torch_or_a_model_sdk() -> None:
    # `d2k-workbench --help` and the workbench's first paint must not wait for torch (over a second) or the SDKs
    import subprocess
    import sys

    heavy = "('torch', 'openai', 'anthropic', 'matplotlib')"
    code = f"import sys, workbench.cli, workbench.tui.app; print(sorted(m for m in {heavy} if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.strip() == "[]"
