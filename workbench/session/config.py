"""`session.toml`: what a session is (task, guidance, driver, device, ...), written once by `session new`."""

from __future__ import annotations

import json
import platform
import re
import secrets
import tomllib
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from workbench.budget import DEFAULT_MAX_TURNS
from workbench.catalog.guidance import GuidanceConfig
from workbench.device import DEVICE_PATTERN, bad_device_message
from workbench.errors import SessionError

CONFIG_NAME = "session.toml"
FORMAT_VERSION: Literal[1] = 1
DriverName = Literal["human", "command", "replay", "agent"]
DRIVERS: tuple[DriverName, ...] = ("human", "command", "replay", "agent")
ProviderName = Literal["openai", "openai-responses", "anthropic"]
PROVIDERS: tuple[ProviderName, ...] = ("openai", "openai-responses", "anthropic")
AgentMode = Literal["code", "design"]
ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


class ConfigError(SessionError):
    """A session.toml that is missing or invalid."""


class TokenPrice(BaseModel):
    """A model's price in USD per million tokens, given with the session (a campaign's model entry) instead
    of the shipped price table. Omitted cache prices default to the input price."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    input: float = Field(ge=0)
    output: float = Field(ge=0)
    cached_input: float | None = Field(default=None, ge=0)
    cache_write: float | None = Field(default=None, ge=0)


class SessionConfig(BaseModel):
    """The contents of `session.toml` (format 1). Paths inside are relative to the session directory."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    format: Literal[1] = FORMAT_VERSION
    id: str = Field(pattern=ID_PATTERN.pattern)
    task: str
    guidance: GuidanceConfig = "none"
    driver: DriverName
    command: str | None = None  # command driver: the shell command run in the workspace
    unsandboxed: bool = False  # command driver: run without the sandbox (asked for explicitly)
    from_session: str | None = None  # replay driver: the recorded session's id
    device: str  # cpu, cuda or cuda:N (never "auto": resolved when the session is created)
    workloads: list[str] | None = None  # None: the harness default (smoke workloads on cpu, all on a GPU)
    eval_timeout_s: float | None = None  # None: the harness default
    provider: ProviderName | None = None  # agent driver: the API (the key comes from the environment, never a file)
    model: str | None = None  # agent driver: the model's name at that provider
    base_url: str | None = None  # agent driver: any compatible server (vLLM, SGLang, llama.cpp, ...)
    max_turns: int = Field(default=DEFAULT_MAX_TURNS, ge=1)  # agent driver: model calls at most
    max_usd: float | None = Field(default=None, gt=0)  # agent driver: optional dollar budget
    allow_unpriced: bool = False  # agent driver: a model missing from the price table runs with cost null
    agent_mode: AgentMode = "code"  # agent driver: write kernels (code) or propose a design (design)
    price: TokenPrice | None = None  # agent driver: the model's price, overriding the shipped price table
    debounce_ms: int = Field(default=500, ge=50, le=60_000)  # quiet time that ends a burst of writes
    solution: str = "solution.py"  # the file evaluated, relative to the workspace
    created: datetime
    versions: dict[str, str] = {}

    @model_validator(mode="after")
    def _driver_fields(self) -> SessionConfig:
        """Each driver's own fields: a command session has its command, a replay its recorded session."""
        if self.driver == "command" and not self.command:
            raise ValueError("a command session needs `command` (the shell command run in the workspace)")
        if self.driver == "replay" and not self.from_session:
            raise ValueError("a replay session needs `from_session` (the recorded session to replay)")
        if self.driver == "agent" and not (self.provider and self.model):
            raise ValueError("an agent session needs `provider` and `model`")
        return self

    @field_validator("device")
    @classmethod
    def _device(cls, value: str) -> str:
        if not DEVICE_PATTERN.match(value):
            raise ValueError(bad_device_message(value))
        return value


def load_config(session_dir: Path) -> SessionConfig:
    """Read and validate `session_dir/session.toml`; ConfigError says what is wrong and where."""
    path = session_dir / CONFIG_NAME
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{path}: file not found") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    try:
        return SessionConfig.model_validate(data)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in first["loc"]) or "(top level)"
        raise ConfigError(f"{path}: {where}: {first['msg']}") from None


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)  # a JSON string is a valid TOML basic string
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise TypeError(f"cannot write {type(value).__name__} to TOML")


def dump_config(config: SessionConfig) -> str:
    """The TOML text of a config: scalars first, `[versions]` last; None values are left out."""
    data = config.model_dump()
    versions = data.pop("versions")
    lines = []
    for key, value in data.items():
        if isinstance(value, dict):  # a small table (the price) as an inline table
            inner = ", ".join(f"{k} = {_toml_value(v)}" for k, v in value.items() if v is not None)
            lines.append(f"{key} = {{ {inner} }}")
        elif value is not None:
            lines.append(f"{key} = {_toml_value(value)}")
    lines += ["", "[versions]"]
    lines += [f"{json.dumps(key)} = {_toml_value(value)}" for key, value in sorted(versions.items())]
    return "\n".join(lines) + "\n"


def write_config(session_dir: Path, config: SessionConfig) -> Path:
    path = session_dir / CONFIG_NAME
    temporary = path.with_suffix(".toml.tmp")
    temporary.write_text(dump_config(config), encoding="utf-8")
    temporary.replace(path)
    return path


def new_session_id(task: str, now: datetime | None = None) -> str:
    """Readable and sortable: `20261130-051200-muon_orthogonalize-ab12` (UTC time, 4 random hex digits)."""
    moment = (now or datetime.now(UTC)).astimezone(UTC)
    return f"{moment:%Y%m%d-%H%M%S}-{task}-{secrets.token_hex(2)}"


def collect_versions() -> dict[str, str]:
    """Versions of what a session's results depend on, without importing torch."""
    versions = {"python": platform.python_version()}
    for package in ("d2k-workbench", "torch", "triton", "gitpython"):
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            continue
    return versions
