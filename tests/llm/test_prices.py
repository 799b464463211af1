"""The price table and cost_usd, with hand-computed costs."""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench.errors import UsageError
from workbench.llm import UnpricedModel, cost_usd, default_price_table, load_price_table
from workbench.llm.usage import Usage


def test_table_is_versioned_and_holds_the_usual_models() -> None:
    table = default_price_table()
    assert table.version == "2026-12-01"
    for model in ("gpt-4.1", "gpt-4.1-mini", "o3", "o4-mini", "gpt-5", "gpt-5-mini", "claude-sonnet-4", "claude-opus-4",
                  "claude-3-5-haiku"):  # fmt: skip
        assert model in table.models
    text = (Path(__file__).parents[2] / "workbench" / "llm" / "prices.toml").read_text()
    assert "LIST PRICES" in text and "check" in text


def test_cost_claude_sonnet_4() -> None:
    # 37 x $3 + 10240 x $0.30 + 2048 x $3.75 + (112 + 300) x $15, per million tokens
    usage = Usage(uncached_input=37, cache_read=10240, cache_write=2048, output=112, reasoning=300)
    expected = (111 + 3072 + 7680 + 6180) / 1e6
    assert cost_usd("claude-sonnet-4-20250514", usage) == pytest.approx(expected)
    assert expected == pytest.approx(0.017043)


def test_cost_gpt_5() -> None:
    # 392 x $1.25 + 4096 x $0.125 + 512 x $1.25 + (160 + 640) x $10
    usage = Usage(uncached_input=392, cache_read=4096, cache_write=512, output=160, reasoning=640)
    assert cost_usd("gpt-5", usage) == pytest.approx(0.009642)


def test_cost_gpt_4_1_mini_snapshot() -> None:
    # 1_000_000 x $0.40 + 500_000 x $0.10 + 250_000 x $1.60
    usage = Usage(uncached_input=1_000_000, cache_read=500_000, output=250_000)
    assert cost_usd("gpt-4.1-mini-2025-04-14", usage) == pytest.approx(0.40 + 0.05 + 0.40)


def test_zero_usage_costs_nothing() -> None:
    assert cost_usd("o3", Usage()) == 0.0


@pytest.mark.parametrize(
    ("model", "key"),
    [("gpt-4.1", "gpt-4.1"), ("gpt-4.1-2025-04-14", "gpt-4.1"), ("gpt-4.1-mini-2025-04-14", "gpt-4.1-mini"),
     ("claude-sonnet-4-20250514", "claude-sonnet-4"), ("claude-sonnet-4-5-20250929", "claude-sonnet-4-5"),
     ("claude-opus-4-1-20250805", "claude-opus-4-1"), ("o3-2025-04-16", "o3"), ("o3-mini", "o3-mini")],
)  # fmt: skip
def test_longest_prefix_match(model: str, key: str) -> None:
    table = default_price_table()
    assert table.price_for(model) == table.models[key]


@pytest.mark.parametrize("model", ["gpt-4.10", "claude-sonnet", "gpt-5.1x", "llama-3-70b", "O3"])
def test_unknown_models_raise(model: str) -> None:
    with pytest.raises(UnpricedModel) as caught:
        cost_usd(model, Usage(output=1))
    assert isinstance(caught.value, UsageError)
    assert "--allow-unpriced" in str(caught.value) and repr(model) in str(caught.value)


def test_custom_table(tmp_path: Path) -> None:
    path = tmp_path / "p.toml"
    path.write_text('version = "x"\n[models."m"]\ninput = 1.0\ncached_input = 0.5\ncache_write = 2.0\noutput = 4.0\n')
    table = load_price_table(path)
    usage = Usage(uncached_input=1000, cache_read=1000, cache_write=1000, output=500, reasoning=500)
    assert cost_usd("m-2", usage, table) == pytest.approx((1000 + 500 + 2000 + 4000) / 1e6)


@pytest.mark.parametrize(
    "text",
    [
        'version = "x"\n[models."m"]\ninput = 1\n',
        "not toml [",
        'version = "x"\n[models."m"]\ninput=-1\ncached_input=0\ncache_write=0\noutput=0\n',
    ],
)
def test_bad_tables_are_usage_errors(tmp_path: Path, text: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(UsageError, match="bad price table"):
        load_price_table(path)
