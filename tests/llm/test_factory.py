"""make_provider and the API keys."""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench.errors import UsageError
from workbench.llm import PROVIDER_NAMES, make_provider
from workbench.llm.anthropic_messages import AnthropicProvider
from workbench.llm.openai_chat import OpenAIChatProvider
from workbench.llm.openai_responses import OpenAIResponsesProvider


@pytest.fixture(autouse=True)
def no_keys(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_ADMIN_KEY", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN",
                 "ANTHROPIC_BASE_URL", "ANTHROPIC_PROFILE"):  # fmt: skip
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ANTHROPIC_CONFIG_DIR", str(tmp_path))  # no profile on disk


@pytest.mark.parametrize(
    ("name", "cls"),
    [("openai", OpenAIChatProvider), ("openai-responses", OpenAIResponsesProvider), ("anthropic", AnthropicProvider)],
)
def test_make_provider(name: str, cls: type, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-1")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-1")
    provider = make_provider(name, "some-model", timeout_s=30.0, max_output_tokens=1234)
    assert isinstance(provider, cls)
    assert provider.name == name and provider.model == "some-model"
    client = provider._client  # type: ignore[attr-defined]
    assert client.max_retries == 0
    assert client.timeout.read == 30.0
    assert provider.max_output_tokens == 1234  # type: ignore[attr-defined]
    assert client.api_key in {"sk-test-1", "sk-ant-test-1"}


def test_names() -> None:
    assert PROVIDER_NAMES == ("openai", "openai-responses", "anthropic")


def test_unknown_provider() -> None:
    with pytest.raises(UsageError, match="unknown provider 'gemini': one of openai, openai-responses, anthropic"):
        make_provider("gemini", "m")


@pytest.mark.parametrize(("name", "variable"), [("openai", "OPENAI_API_KEY"), ("openai-responses", "OPENAI_API_KEY"),
                                                ("anthropic", "ANTHROPIC_API_KEY")])  # fmt: skip
def test_missing_key_without_base_url(name: str, variable: str) -> None:
    with pytest.raises(UsageError, match=variable):
        make_provider(name, "m")


@pytest.mark.parametrize("name", PROVIDER_NAMES)
def test_placeholder_key_only_with_a_base_url(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    provider = make_provider(name, "m", "http://127.0.0.1:9/v1")
    assert provider._client.api_key == "not-needed"  # type: ignore[attr-defined]
    monkeypatch.setenv("OPENAI_API_KEY", "sk-real")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-real")
    provider = make_provider(name, "m", "http://127.0.0.1:9/v1")
    assert provider._client.api_key in {"sk-real", "sk-ant-real"}  # type: ignore[attr-defined]


def test_unreadable_anthropic_profile_is_a_usage_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("ANTHROPIC_CONFIG_DIR", str(tmp_path / "missing"))
    monkeypatch.setenv("ANTHROPIC_PROFILE", "work")
    with pytest.raises(UsageError, match="ANTHROPIC_API_KEY") as caught:
        make_provider("anthropic", "m")
    assert "\n" not in str(caught.value)
