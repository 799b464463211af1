"""Token usage and spend: the one definition every package adds up.

``Usage`` is one model call's tokens, normalised across providers (the event log records it as is);
``Spend`` is the tokens of some calls with their count and cost. Both add with ``+`` field by field, so a
new bucket is added here once and every sum (sessions, scoring, the judge, the workbench) follows.
``output`` excludes reasoning: ``reasoning`` is its own bucket, billed at the output price
(``prices.cost_usd``); ``output_tokens`` is the two together.
"""

from __future__ import annotations

from typing import Self

from pydantic import BaseModel, ConfigDict


class Usage(BaseModel):
    """Tokens of one model call, normalised across providers."""

    uncached_input: int = 0
    cache_read: int = 0
    cache_write: int = 0
    output: int = 0
    reasoning: int = 0

    def __add__(self, other: Self) -> Self:
        return type(self)(**{name: getattr(self, name) + getattr(other, name) for name in type(self).model_fields})

    @property
    def input_tokens(self) -> int:
        """The prompt's tokens, whatever the cache did with them."""
        return self.uncached_input + self.cache_read + self.cache_write

    @property
    def output_tokens(self) -> int:
        """What the model generated: the visible output and its reasoning."""
        return self.output + self.reasoning


class Spend(Usage):
    """The tokens of some model calls, how many calls, and what they cost.

    ``cost_usd`` sums the calls that have a price; ``unpriced_calls`` counts those without one (a model
    missing from the price table), so ``cost_usd`` is then a lower bound.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    calls: int = 0
    unpriced_calls: int = 0
    cost_usd: float = 0.0

    @classmethod
    def of_call(cls, usage: Usage, cost_usd: float | None) -> Spend:
        return cls(**usage.model_dump(), calls=1, unpriced_calls=int(cost_usd is None), cost_usd=cost_usd or 0.0)
