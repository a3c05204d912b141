"""Model providers: one small interface, one module per provider.

A provider gets the Prompt (replies.engine) and a Run (the agent's settings,
the configuration, and a heartbeat to call between slow steps) and returns a
ProviderReply, or raises ProviderError (retryable for a provider that is
down or slow, so the reply job tries again later). To add a provider, write
a module with a class that has `name` and `generate(prompt, run)`, and add
it to PROVIDERS (and its settings name to services.agents.MODEL_PROVIDERS).
"""

from .base import Provider, ProviderError, ProviderReply, Run
from .knowledge import KnowledgeProvider
from .openai import OpenAIProvider

# Settings' model_provider -> the provider class serving it.
PROVIDERS = {
    "knowledge": KnowledgeProvider,
    "openai": OpenAIProvider,
    "openai-compatible": OpenAIProvider,
    "ollama": OpenAIProvider,
    "anthropic": OpenAIProvider,
    "google": OpenAIProvider,
}


def provider_for(settings):
    name = settings.get("model_provider") or "knowledge"
    return PROVIDERS.get(name, KnowledgeProvider)(name)


__all__ = ["PROVIDERS", "Provider", "ProviderError", "ProviderReply", "Run", "provider_for"]
