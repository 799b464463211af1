"""Token usage adds up in one place: every bucket, the call count and the cost."""

from __future__ import annotations

from workbench.llm.usage import Spend, Usage


def test_usage_adds_every_bucket() -> None:
    a = Usage(uncached_input=10, cache_read=5, cache_write=2, output=7, reasoning=3)
    b = Usage(uncached_input=1, cache_read=1, cache_write=1, output=1, reasoning=1)
    total = a + b
    assert total == Usage(uncached_input=11, cache_read=6, cache_write=3, output=8, reasoning=4)
    assert total.input_tokens == 20 and total.output_tokens == 12


def test_spend_counts_calls_and_marks_unpriced_ones() -> None:
    priced = Spend.of_call(Usage(uncached_input=100, output=10), 0.25)
    unpriced = Spend.of_call(Usage(uncached_input=50, reasoning=5), None)
    total = sum((priced, unpriced), Spend())
    assert total.calls == 2 and total.unpriced_calls == 1
    assert total.cost_usd == 0.25  # a lower bound: one call had no price
    assert (total.uncached_input, total.output, total.reasoning, total.cache_read) == (150, 10, 5, 0)
    assert Spend() == Spend(calls=0, unpriced_calls=0, cost_usd=0.0)
