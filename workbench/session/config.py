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
from typing import Annotated, Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from workbench.catalog.guidance import GuidanceConfig
from workbench.device import DEVICE_PATTERN, bad_device_message
from workbench.errors import SessionError

CONFIG_NAME = "session.toml"
FORMAT_VERSION: Literal[2] = 2
DriverName = Literal["human", "command", "replay", "agent"]
DRIVERS: tuple[DriverName, ...] = ("human", "command", "replay", "agent")
ProviderName = Literal["openai", "openai-responses", "anthropic"]
PROVIDERS: tuple[ProviderName, ...] = ("openai", "openai-responses", "anthropic")
AgentMode = Literal["code", "design"]
DEFAULT_MAX_TURNS = 350  # the built-in agent's default budget: the paper's 350 model turns per session
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


class HumanConfig(BaseModel):
    """A person edits the workspace; nothing is started."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["human"] = "human"


class CommandConfig(BaseModel):
    """A shell command run in the workspace (in the sandbox unless `unsandboxed` was asked for)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["command"] = "command"
    command: str = Field(min_length=1, pattern=r"\S")
    unsandboxed: bool = False


class ReplayConfig(BaseModel):
    """The revisions of a recorded session, written again in order."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["replay"] = "replay"
    from_session: str = Field(min_length=1)


class AgentConfig(BaseModel):
    """The built-in agent: its model and budget. Built once from the CLI's options, the launch dialog's
    draft or a campaign's model entry; every agent setting is a field here and nowhere else."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["agent"] = "agent"
    provider: ProviderName  # the API (the key comes from the environment, never a file)
    model: str = Field(min_length=1, pattern=r"\S")  # the model's name at that provider
    base_url: str | None = None  # any compatible server (vLLM, SGLang, llama.cpp, ...)
    max_turns: int = Field(default=DEFAULT_MAX_TURNS, ge=1)  # model calls at most
    max_usd: float | None = Field(default=None, gt=0)  # optional dollar budget
    allow_unpriced: bool = False  # a model missing from the price table runs with cost null
    mode: AgentMode = "code"  # write kernels (code) or propose a design (design)
    price: TokenPrice | None = None  # the model's price, overriding the shipped price table


DriverConfig = Annotated[HumanConfig | CommandConfig | ReplayConfig | AgentConfig, Field(discriminator="kind")]
# Format 1 kept every driver's fields at the top level; they move into the driver's table on reading.
FORMAT_1_DRIVER_FIELDS = {
    "command": {"command": "command", "unsandboxed": "unsandboxed"},
    "replay": {"from_session": "from_session"},
    "agent": {
        "provider": "provider",
        "model": "model",
        "base_url": "base_url",
        "max_turns": "max_turns",
        "max_usd": "max_usd",
        "allow_unpriced": "allow_unpriced",
        "agent_mode": "mode",
        "price": "price",
    },
}
ALL_FORMAT_1_FIELDS = {name for fields in FORMAT_1_DRIVER_FIELDS.values() for name in fields}
# What format 1 wrote for every driver, the agent's settings included: dropped from other drivers' sessions.
FORMAT_1_DEFAULTS: dict[str, Any] = {
    "unsandboxed": False,
    "max_turns": DEFAULT_MAX_TURNS,
    "allow_unpriced": False,
    "agent_mode": "code",
}


class SessionConfig(BaseModel):
    """The contents of `session.toml` (format 2; format 1 is read too). Paths inside are relative to the
    session directory. The driver and its settings are one table, `[driver]`, one arm per kind."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    format: Literal[2] = FORMAT_VERSION
    id: str = Field(pattern=ID_PATTERN.pattern)
    task: str
    guidance: GuidanceConfig = "none"
    driver_config: DriverConfig = Field(validation_alias=AliasChoices("driver", "driver_config"), serialization_alias="driver")
    device: str  # cpu, cuda or cuda:N (never "auto": resolved when the session is created)
    workloads: list[str] | None = None  # None: the harness default (smoke workloads on cpu, all on a GPU)
    eval_timeout_s: float | None = None  # None: the harness default
    debounce_ms: int = Field(default=500, ge=50, le=60_000)  # quiet time that ends a burst of writes
    solution: str = "solution.py"  # the file evaluated, relative to the workspace
    created: datetime
    versions: dict[str, str] = {}
    # which repetition of its configuration this run is (a campaign's r1, r2, ...); None: a single run. Reports
    # average over repetitions instead of keeping only the latest session.
    repetition: int | None = Field(default=None, ge=1)
    rerun_of: str | None = None  # the session this one reruns with changes (the workbench's rerun), if any
    # an imported task's origin ("KernelBench level1/4_ReLU.py @ <commit>"; `d2k-workbench import`), None otherwise
    imported_from: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _format_1(cls, data: Any) -> Any:
        """A format-1 session.toml (flat driver fields) read as format 2."""
        if not isinstance(data, dict) or not isinstance(data.get("driver"), str) or data.get("format", 1) != 1:
            return data
        data = dict(data)
        kind = data.get("driver")
        fields = FORMAT_1_DRIVER_FIELDS.get(kind, {}) if isinstance(kind, str) else {}
        driver: dict[str, Any] = {"kind": kind}
        for old in ALL_FORMAT_1_FIELDS:
            if old in data:
                value = data.pop(old)
                if old in fields and value is not None:
                    driver[fields[old]] = value
                elif old not in fields and value != FORMAT_1_DEFAULTS.get(old):
                    raise ValueError(f"`{old}` is not a setting of the {kind} driver")
        data["driver"] = driver
        data["format"] = FORMAT_VERSION
        return data

    @field_validator("device")
    @classmethod
    def _device(cls, value: str) -> str:
        if not DEVICE_PATTERN.match(value):
            raise ValueError(bad_device_message(value))
        return value

    @property
    def driver(self) -> DriverName:
        return self.driver_config.kind

    @property
    def agent(self) -> AgentConfig | None:
        """The agent's settings, in an agent session."""
        return self.driver_config if isinstance(self.driver_config, AgentConfig) else None

    @property
    def design_mode(self) -> bool:
        """An agent session that proposes a design (nothing is evaluated)."""
        return self.agent is not None and self.agent.mode == "design"

    @property
    def command(self) -> str | None:
        return self.driver_config.command if isinstance(self.driver_config, CommandConfig) else None

    @property
    def unsandboxed(self) -> bool:
        return isinstance(self.driver_config, CommandConfig) and self.driver_config.unsandboxed

    @property
    def from_session(self) -> str | None:
        return self.driver_config.from_session if isinstance(self.driver_config, ReplayConfig) else None


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


def _toml_pairs(data: dict[str, Any]) -> list[str]:
    """`key = value` lines; a small table (the price) as an inline table; None values are left out."""
    lines = []
    for key, value in data.items():
        if isinstance(value, dict):
            inner = ", ".join(f"{k} = {_toml_value(v)}" for k, v in value.items() if v is not None)
            lines.append(f"{key} = {{ {inner} }}")
        elif value is not None:
            lines.append(f"{key} = {_toml_value(value)}")
    return lines


def dump_config(config: SessionConfig) -> str:
    """The TOML text of a config: scalars first, then the `[driver]` table, `[versions]` last."""
    data = config.model_dump(by_alias=True)
    versions = data.pop("versions")
    driver = data.pop("driver")
    lines = [*_toml_pairs(data), "", "[driver]", *_toml_pairs(driver), "", "[versions]"]
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
