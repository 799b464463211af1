"""The cost of model calls, from a versioned price table kept in the repository (`prices.toml`).

Prices are USD per million tokens for uncached input, cached input (cache reads), cache writes and output;
reasoning tokens are billed as output. `cost_usd(model, usage)` prices one call's `Usage`. A model name
matches its exact table key, else the longest key that is a prefix of it followed by "-" (dated snapshots
such as `claude-sonnet-4-20250514`). A model the table does not know raises `UnpricedModel`.
"""

from __future__ import annotations

import functools
import tomllib
from importlib import resources
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from workbench.errors import UsageError
from workbench.llm.usage import Usage

_PER_TOKEN = 1e-6  # prices are per million tokens


class UnpricedModel(UsageError):
    """The price table has no entry for a model."""


class ModelPrice(BaseModel):
    """USD per million tokens."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    input: float = Field(ge=0)
    cached_input: float = Field(ge=0)
    cache_write: float = Field(ge=0)
    output: float = Field(ge=0)


class PriceTable(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    version: str
    models: dict[str, ModelPrice]

    def price_for(self, model: str) -> ModelPrice:
        """The price of `model`: its exact key, else the longest key K with `model.startswith(K + "-")`."""
        if model in self.models:
            return self.models[model]
        matches = [key for key in self.models if model.startswith(key + "-")]
        if not matches:
            raise UnpricedModel(
                f"no price for model {model!r} in the price table (version {self.version}): add it to "
                "workbench/llm/prices.toml, or pass --allow-unpriced to run without a cost"
            )
        return self.models[max(matches, key=len)]


def load_price_table(path: Path | None = None) -> PriceTable:
    """The table at `path`, or the one shipped with the package (`workbench/llm/prices.toml`)."""
    if path is None:
        return default_price_table()
    return _parse(path.read_text(encoding="utf-8"), str(path))


@functools.cache
def default_price_table() -> PriceTable:
    """The package's price table, read once."""
    text = resources.files("workbench.llm").joinpath("prices.toml").read_text(encoding="utf-8")
    return _parse(text, "workbench/llm/prices.toml")


def _parse(text: str, where: str) -> PriceTable:
    try:
        return PriceTable.model_validate(tomllib.loads(text))
    except (tomllib.TOMLDecodeError, ValidationError) as exc:
        first = str(exc).splitlines()
        raise UsageError(f"bad price table {where}: {' '.join(first[:3])}") from None


def cost_usd(model: str, usage: Usage, table: PriceTable | None = None) -> float:
    """The list-price cost of one call's `usage` on `model`, in USD. Raises UnpricedModel."""
    return price_cost((table or default_price_table()).price_for(model), usage)


def price_cost(price: ModelPrice, usage: Usage) -> float:
    """The cost of one call's `usage` at `price`, in USD."""
    return _PER_TOKEN * (
        usage.uncached_input * price.input
        + usage.cache_read * price.cached_input
        + usage.cache_write * price.cache_write
        + usage.output_tokens * price.output
    )
