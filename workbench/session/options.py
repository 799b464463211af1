"""A session's driver settings from command-line options (and the launch dialog's draft): validated once,
by the pydantic models of session.toml, with errors that name the option a person typed."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import TypeAdapter, ValidationError

from workbench.errors import UsageError
from workbench.session.config import DRIVERS, PROVIDERS, AgentConfig, CommandConfig, DriverConfig, HumanConfig, ReplayConfig

# The option that sets each field, for error messages.
OPTION_OF = {
    "command": "--command",
    "unsandboxed": "--unsandboxed",
    "from_session": "--from",
    "provider": "--provider",
    "model": "--model",
    "base_url": "--base-url",
    "max_turns": "--max-turns",
    "max_usd": "--max-usd",
    "allow_unpriced": "--allow-unpriced",
    "mode": "design mode",
    "price": "price",
}
NEEDED = {
    "command": "--driver command needs --command CMD (the shell command to run in the workspace)",
    "from_session": "--driver replay needs --from SESSION (the recorded session to replay)",
    "provider": f"the agent needs --provider ({', '.join(PROVIDERS)})",
    "model": "the agent needs --model NAME (the model's name at the provider)",
}
T = TypeVar("T")
DRIVER_ADAPTER: TypeAdapter[DriverConfig] = TypeAdapter(DriverConfig)
DRIVER_FIELDS = {
    model.model_fields["kind"].default: set(model.model_fields) - {"kind"}
    for model in (HumanConfig, CommandConfig, ReplayConfig, AgentConfig)
}


def _message(error: Any) -> str:
    field = str(error["loc"][-1]) if error["loc"] else ""
    option = OPTION_OF.get(field, field)
    if error["type"] == "missing" and field in NEEDED:
        return NEEDED[field]
    if error["type"] == "extra_forbidden":
        return f"{option} is not a setting of this driver"
    if error["type"] == "literal_error" and field == "provider":
        return f"--provider must be one of: {', '.join(PROVIDERS)} (got {error['input']!r})"
    if field in {"model", "command"}:  # blank
        return NEEDED[field]
    if error["type"] == "greater_than":
        return f"{option} must be positive (got {error['input']!r})"
    if error["type"] == "greater_than_equal":
        return f"{option} must be at least {error['ctx']['ge']} (got {error['input']!r})"
    return f"{option}: {error['msg'].lower()} (got {error['input']!r})"


def _validated(validate: Callable[[dict[str, Any]], T], driver: str, given: dict[str, Any]) -> T:
    fields = {name: value for name, value in given.items() if value is not None and value is not False}
    try:
        return validate({"kind": driver, **fields})
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        foreign = [str(e["loc"][-1]) for e in errors if e["type"] == "extra_forbidden"]
        if foreign:
            options = ", ".join(OPTION_OF.get(name, name) for name in foreign)
            owners = sorted({owner for name in foreign for owner, names in DRIVER_FIELDS.items() if name in names})
            verb = "is" if len(foreign) == 1 else "are"
            raise UsageError(f"{options} {verb} only for the {' or '.join(owners)} driver") from None
        raise UsageError(_message(errors[0])) from None


def driver_from_options(driver: str, given: dict[str, Any]) -> DriverConfig:
    """The driver's settings from the options given (None or False for options not given). UsageError when
    the driver is unknown, an option belongs to another driver, or a value is out of range."""
    if driver not in DRIVERS:
        raise UsageError(f"unknown driver {driver!r}; expected one of: {', '.join(DRIVERS)}")
    return _validated(DRIVER_ADAPTER.validate_python, driver, given)


def agent_from_options(given: dict[str, Any]) -> AgentConfig:
    """The built-in agent's settings from the options given (as `driver_from_options` for the agent)."""
    return _validated(AgentConfig.model_validate, "agent", given)
