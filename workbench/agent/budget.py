"""The agent's budget: model calls (turns) and, optionally, dollars.

Every model call is a turn, whether it asked for tools or only wrote text. The run stops before a call
once `max_turns` calls were made, or once the cost so far reached `max_usd`. A call's cost comes from
the price table (workbench/llm/prices.toml via `workbench.llm.prices`); a model missing from it is an
error at the start unless the session allows unpriced models, whose calls then cost null (and a dollar
budget cannot be kept for them, so the two do not go together).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from workbench.errors import UsageError
from workbench.llm import prices
from workbench.llm.usage import Usage
from workbench.session.config import AgentConfig, TokenPrice
from workbench.session.events import ModelCall

Pricer = Callable[[str, Usage], float]  # model, usage -> dollars; raises a UsageError (UnpricedModel) when unknown


def table_pricer() -> Pricer:
    """Prices from the shipped table (workbench/llm/prices.toml)."""
    table = prices.load_price_table()

    def price(model: str, usage: Usage) -> float:
        return prices.cost_usd(model, usage, table)

    return price


def session_pricer(agent: AgentConfig) -> Pricer:
    """The session's own price (a campaign's model entry) when it has one, else the shipped table."""
    return price_pricer(agent.price)


def price_pricer(given: TokenPrice | None) -> Pricer:
    """A pricer for one given price (USD per million tokens; cache prices default to the input price), or
    the shipped table for None."""
    if given is None:
        return table_pricer()

    price = prices.ModelPrice(
        input=given.input,
        output=given.output,
        cached_input=given.input if given.cached_input is None else given.cached_input,
        cache_write=given.input if given.cache_write is None else given.cache_write,
    )
    return lambda model, usage: prices.price_cost(price, usage)


def check_priced(model: str, allow_unpriced: bool, max_usd: float | None, pricer: Pricer | None = None) -> bool:
    """Whether the model's calls have a price. UsageError when it has none and the session does not allow
    that, or when a dollar budget is asked for a model without a price."""
    price = pricer or table_pricer()
    try:
        price(model, Usage())
    except UsageError as exc:
        if not allow_unpriced:
            raise  # UnpricedModel says to add the model to the table or pass --allow-unpriced
        if max_usd is not None:
            raise UsageError(f"--max-usd needs a priced model, and {model!r} has no price ({exc.message})") from None
        return False
    return True


@dataclass
class Budget:
    """Turns and dollars used so far (a resumed session counts the turns of the log) and the limits."""

    max_turns: int
    max_usd: float | None
    turns_used: int = 0
    spent_usd: float = 0.0

    @classmethod
    def resumed(cls, agent: AgentConfig, calls: list[ModelCall]) -> Budget:
        return cls(
            max_turns=agent.max_turns,
            max_usd=agent.max_usd,
            turns_used=len(calls),
            spent_usd=sum(c.cost_usd or 0.0 for c in calls),
        )

    @property
    def turns_left(self) -> int:
        return max(0, self.max_turns - self.turns_used)

    def exhausted(self) -> str | None:
        """Why no further model call may be made, or None."""
        if self.turns_used >= self.max_turns:
            return f"the turn budget is used up ({self.turns_used} of {self.max_turns} model calls)"
        if self.max_usd is not None and self.spent_usd >= self.max_usd:
            return f"the dollar budget is used up (${self.spent_usd:.4f} of ${self.max_usd:g})"
        return None

    def charge(self, cost_usd: float | None) -> None:
        self.turns_used += 1
        self.spent_usd += cost_usd or 0.0
