"""What every provider shares: the reply, the error, the run, the interface."""

from dataclasses import dataclass, field
from typing import Protocol


class ProviderError(Exception):
    """The provider could not answer; `retryable` when trying later may help."""

    def __init__(self, message, retryable=True):
        super().__init__(message)
        self.retryable = retryable


@dataclass
class ProviderReply:
    # answer: `text` is the reply; none: nothing to say (the engine sends the
    # fallback); small_talk: a greeting or thanks with nothing to look up.
    kind: str
    text: str = ""
    usage: dict | None = None  # prompt_tokens, completion_tokens, total_tokens
    tool_calls: list = field(default_factory=list)
    model: str | None = None
    detail: dict = field(default_factory=dict)


@dataclass
class Run:
    settings: dict
    config: dict
    heartbeat: object = None  # callable, or None

    def beat(self):
        if self.heartbeat is not None:
            self.heartbeat()


class Provider(Protocol):
    name: str

    def generate(self, prompt, run) -> ProviderReply:
        """Answer the prompt (see the module docstring)."""

    def describe(self, prompt, run) -> dict:
        """What would be sent, for reply-preview (no network, no tool calls)."""
