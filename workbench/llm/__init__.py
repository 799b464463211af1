"""Model providers shared by the agent and the judge: one protocol, adapters over the official SDKs.

The adapters (`openai_chat`, `openai_responses`, `anthropic_messages`) hold their wire format only and import
their SDK only when used; what they share lives once: `adapter_base` (making a provider and one call through
its SDK), `wire` (the pure pieces of requests and replies), `openai_client` (the two OpenAI adapters' client
and usage). `make_provider` picks one by name. `retry.call_with_retries` retries what is transient, `prices.cost_usd`
prices a call from the versioned table `prices.toml`.
"""

from workbench.llm.conversation import (
    AssistantTurn,
    Conversation,
    Message,
    ModelReply,
    ToolCallRequest,
    ToolOutput,
    ToolResultsTurn,
    ToolSpec,
    UserTurn,
)
from workbench.llm.factory import PROVIDER_NAMES, ProviderName, make_provider
from workbench.llm.prices import PriceTable, UnpricedModel, cost_usd, default_price_table, load_price_table
from workbench.llm.provider import Provider, ProviderError
from workbench.llm.retry import ContextOverflow, RetryPolicy, call_with_retries

__all__ = [
    "PROVIDER_NAMES",
    "AssistantTurn",
    "ContextOverflow",
    "Conversation",
    "Message",
    "ModelReply",
    "PriceTable",
    "Provider",
    "ProviderError",
    "ProviderName",
    "RetryPolicy",
    "ToolCallRequest",
    "ToolOutput",
    "ToolResultsTurn",
    "ToolSpec",
    "UnpricedModel",
    "UserTurn",
    "call_with_retries",
    "cost_usd",
    "default_price_table",
    "load_price_table",
    "make_provider",
]
