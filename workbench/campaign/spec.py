"""The campaign file: one TOML file that names a whole experiment matrix.

    name = "paper-matrix"                 # sessions are named <name>--<unit>
    sessions_dir = "sessions/paper-matrix" # relative to this file; a shared path for many machines
    tasks = "all"                          # or ["muon_orthogonalize", ...] or { category = "attention" }
    guidance = ["none", "L1+L2+L3"]        # or the ablation: ["none", "L1", "L1+L2", "L1+L2+L3"]
    repetitions = 1
    max_turns = 350                        # per session
    max_usd = 25.0                         # per session (optional)
    design_runs = false                    # also one design session per model x task x configuration
    device = "cuda"                        # "cuda" (one GPU per coding session) or "cpu"
    gpus = "all"                           # GPU indices to use on this machine, or "all"
    gpu_model = "H200"                     # optional: every coding session on this device model
    cpu_slots = 2                          # sessions needing no GPU (design, judging) at once
    retries = 1                            # a failed session is run again (resumed) at most this often

    [[models]]
    provider = "openai"                    # openai, openai-responses or anthropic
    model = "gpt-4.1"
    base_url = "http://..."                # optional: any compatible server
    price = { input = 2.0, cached_input = 0.5, cache_write = 2.0, output = 8.0 }  # optional, USD / Mtok

    [judge]                                # optional: judge every finished session with this model
    provider = "anthropic"
    model = "claude-sonnet-4"

Errors name the file, the line and the key (`CampaignError`).
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from workbench.catalog.guidance import CONFIGS, GuidanceConfig
from workbench.errors import WorkbenchError
from workbench.session.config import DEFAULT_MAX_TURNS, ID_PATTERN, PROVIDERS, AgentConfig, AgentMode, ProviderName, TokenPrice

PAPER_CONFIGS: tuple[GuidanceConfig, ...] = ("none", "L1+L2+L3")  # the paper's main comparison


class CampaignError(WorkbenchError):
    """A campaign file that cannot be used: the file, the line and key where known, and what was expected."""

    def __init__(self, path: Path, message: str, key: str | None = None, line: int | None = None) -> None:
        self.path = path
        self.key = key
        self.line = line
        where = f"{path}" + (f":{line}" if line else "") + (f": {key}" if key else "")
        super().__init__(f"{where}: {message}")


class ModelEntry(BaseModel):
    """One model of the matrix."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    provider: ProviderName
    model: str = Field(min_length=1)
    base_url: str | None = None
    price: TokenPrice | None = None  # None: the shipped price table must know the model
    label: str | None = None  # the name in tables and session ids (default: the model)

    @property
    def name(self) -> str:
        return self.label or self.model

    @property
    def slug(self) -> str:
        """The name as it appears in session ids (letters, digits, `_`, `.` and `-`)."""
        return re.sub(r"[^A-Za-z0-9_.-]+", "_", self.name).strip("_.-") or "model"


class JudgeEntry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    provider: ProviderName
    model: str = Field(min_length=1)
    base_url: str | None = None


class CategoryFilter(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    category: str = Field(min_length=1)


class Estimate(BaseModel):
    """What `campaign plan` assumes per session when it estimates cost and GPU hours."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    turns: float = Field(default=0.4, gt=0, le=1, description="fraction of max_turns a session uses")
    input_tokens_per_turn: int = Field(default=30_000, ge=0)
    cached_fraction: float = Field(default=0.8, ge=0, le=1)
    output_tokens_per_turn: int = Field(default=1_500, ge=0)
    gpu_seconds_per_turn: float = Field(default=20.0, ge=0)
    judge_input_tokens: int = Field(default=30_000, ge=0, description="per judged session: the prompt, code and expert")
    judge_output_tokens: int = Field(default=4_000, ge=0, description="per judged session: the verdict")
    # per judged session; None: the judge model's price (the shipped table) for the tokens above
    judge_usd: float | None = Field(default=None, ge=0)


class CampaignSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=ID_PATTERN.pattern, max_length=60)
    sessions_dir: Path = Path("sessions")
    models: list[ModelEntry] = Field(min_length=1)
    tasks: Literal["all"] | list[str] | CategoryFilter = "all"
    guidance: list[GuidanceConfig] = Field(default_factory=lambda: list(PAPER_CONFIGS), min_length=1)
    repetitions: int = Field(default=1, ge=1, le=100)
    max_turns: int = Field(default=DEFAULT_MAX_TURNS, ge=1)
    max_usd: float | None = Field(default=None, gt=0)
    allow_unpriced: bool = False
    design_runs: bool = False
    judge: JudgeEntry | None = None
    device: Literal["cuda", "cpu"] = "cuda"
    gpus: Literal["all"] | list[int] = "all"
    # every coding session on this device model (a substring of the GPU's name, e.g. "H200"): paired runs
    # are compared on one device model; None: the GPUs used must all be of one model
    gpu_model: str | None = Field(default=None, min_length=1)
    cpu_slots: int = Field(default=2, ge=1, le=256)
    retries: int = Field(default=1, ge=0, le=10)
    workloads: list[str] | None = None  # None: the harness default for the device
    eval_timeout_s: float | None = Field(default=None, gt=0)
    estimate: Estimate = Estimate()

    def agent_config(self, model: ModelEntry, mode: AgentMode) -> AgentConfig:
        """The agent settings of this campaign's sessions of `model`: its provider and price, the
        campaign's budget."""
        return AgentConfig(
            provider=model.provider,
            model=model.model,
            base_url=model.base_url,
            price=model.price,
            max_turns=self.max_turns,
            max_usd=self.max_usd,
            allow_unpriced=self.allow_unpriced,
            mode=mode,
        )

    @field_validator("guidance")
    @classmethod
    def _distinct_configs(cls, value: list[GuidanceConfig]) -> list[GuidanceConfig]:
        if len(set(value)) != len(value):
            raise ValueError(f"each guidance configuration once (got {value}); choose from {', '.join(CONFIGS)}")
        return value

    @field_validator("gpus")
    @classmethod
    def _gpu_indices(cls, value: Literal["all"] | list[int]) -> Literal["all"] | list[int]:
        if isinstance(value, list) and (not value or len(set(value)) != len(value) or min(value) < 0):
            raise ValueError('gpus: distinct GPU indices >= 0, or "all"')
        return value

    @model_validator(mode="after")
    def _distinct_models(self) -> CampaignSpec:
        names = [m.name for m in self.models]
        slugs = [m.slug for m in self.models]
        if len(set(names)) != len(names) or len(set(slugs)) != len(slugs):
            raise ValueError(f"two models share a name ({names}); give one a distinct `label`")
        return self


class Campaign(BaseModel):
    """A loaded campaign file: the spec, where it came from and where its sessions live."""

    model_config = ConfigDict(frozen=True)

    spec: CampaignSpec
    path: Path
    sessions_dir: Path  # absolute

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def state_dir(self) -> Path:
        """The campaign's own records (one JSON file per unit), beside its sessions."""
        return self.sessions_dir / f".campaign-{self.spec.name}"


def _table_end(lines: list[str], start: int) -> int:
    """The index of the first table header after line `start` (or the end of the file)."""
    return next((i for i in range(start + 1, len(lines)) if lines[i].lstrip().startswith("[")), len(lines))


def _key_line(text: str, loc: tuple[int | str, ...]) -> int | None:
    """The 1-based line of a key path such as ('models', 1, 'price') in a TOML text, as well as simple
    parsing can tell: the N-th `[[models]]` header, then the key's `name =` line inside it."""
    lines = text.splitlines()
    start, end = 0, len(lines)
    table = ""
    parts = list(loc)
    while parts:
        part = parts.pop(0)
        if isinstance(part, int):
            continue
        header = f"{table}.{part}" if table else part
        array_headers = [i for i, line in enumerate(lines[start:end], start) if line.strip() == f"[[{header}]]"]
        if array_headers:
            index = parts.pop(0) if parts and isinstance(parts[0], int) else 0
            if not isinstance(index, int) or index >= len(array_headers):
                return array_headers[-1] + 1
            start = array_headers[index]
            end = _table_end(lines, start)
            table = header
            if not parts:
                return start + 1
            continue
        table_headers = [i for i, line in enumerate(lines) if line.strip() == f"[{header}]"]
        if table_headers:
            start = table_headers[0]
            end = _table_end(lines, start)
            table = header
            if not parts:
                return start + 1
            continue
        pattern = re.compile(rf"^\s*{re.escape(str(part))}\s*=")
        top = start if table else 0
        stop = end if table else _table_end(lines, -1)
        for i in range(top, stop):
            if pattern.match(lines[i]):
                return i + 1
        return start + 1 if table else None
    return None


UNION_TAGS = ("list[str]", "CategoryFilter", "literal['all']", "list[int]")  # pydantic's names of union forms
UNION_KEYS = {"tasks": '"all", a list of task ids, or { category = "..." }', "gpus": '"all" or a list of GPU indices'}


def _key_name(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else ("." if out else "") + part
    return out or "(top level)"


def load_campaign(path: Path) -> Campaign:
    """Read and validate a campaign file; CampaignError names the file, the line and the key."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise CampaignError(path, "file not found") from None
    except OSError as exc:
        raise CampaignError(path, f"cannot read: {exc.strerror}") from None
    try:
        data: dict[str, Any] = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        text_of = str(exc)
        at = re.search(r"\(at line (\d+), column \d+\)", text_of)
        line = int(at.group(1)) if at else (len(text.splitlines()) or 1) if "end of document" in text_of else None
        message = re.sub(r"\s*\(at (line \d+, column \d+|end of document)\)", "", text_of)
        raise CampaignError(path, f"not valid TOML: {message}", line=line) from None
    try:
        spec = CampaignSpec.model_validate(data)
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        # a union (tasks, gpus) reports one error per alternative: keep the most specific
        first = max(errors, key=lambda e: len(e["loc"]))
        loc = tuple(p for p in first["loc"] if p not in UNION_TAGS)
        message = first["msg"].removeprefix("Value error, ")
        if first["type"] not in ("missing", "value_error") and "input" in first:
            message += f" (got {first['input']!r})"
        if loc and loc[0] in UNION_KEYS and first["type"] != "value_error":  # none of the union's forms fits
            loc = loc[:1]
            message = f"{UNION_KEYS[str(loc[0])]} expected (got {data.get(str(loc[0]))!r})"
        if first["type"] == "extra_forbidden":
            message = "unknown key"
        if loc and loc[0] == "models" and len(loc) >= 3 and loc[2] == "provider":
            message = f"provider must be one of: {', '.join(PROVIDERS)} (got {first.get('input')!r})"
        more = len(errors) - 1
        suffix = (
            f" (and {more} more problem{'s' if more > 1 else ''})" if more and loc[:1] not in [(k,) for k in UNION_KEYS] else ""
        )
        raise CampaignError(path, message + suffix, key=_key_name(loc), line=_key_line(text, loc)) from None
    root = spec.sessions_dir if spec.sessions_dir.is_absolute() else (path.parent / spec.sessions_dir)
    return Campaign(spec=spec, path=path.resolve(), sessions_dir=root.resolve())


__all__ = ["Campaign", "CampaignError", "CampaignSpec", "Estimate", "JudgeEntry", "ModelEntry", "load_campaign"]
