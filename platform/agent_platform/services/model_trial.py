"""The agent page's "test the model" button: one tiny prompt through the
agent's configured provider, and what happened, in words. No conversation,
message or credit charge is made: it only checks that the provider answers
(reachable, the key accepted, the model known)."""

from flask import current_app

from ..replies.engine import Prompt
from ..replies.providers import ProviderError, Run, provider_for
from . import agents

PROMPT = "This is a connection test. Reply with one short sentence."
SHOWN_CHARS = 300
KEY_SHOWN_AS = "[the API key]"
# What a refusal most likely means, by the HTTP status the model server gave.
HINTS = {
    401: "the API key is missing or refused: type the provider's key and save",
    403: "the API key may not use this model",
    404: "the model name or the base URL is wrong",
}
NOTHING_TO_TEST = (
    "This agent uses the built-in knowledge provider: it answers from its "
    "trainings and calls no model, so there is nothing to test. Try it in the test chat."
)


def try_model(workspace_id, agent_id):
    """{"ok": whether the provider answered, "text": what happened in words}."""
    agent = agents.get_agent(workspace_id, agent_id)
    settings = agents.settings_of(agent)
    provider = provider_for(settings)
    if provider.name == "knowledge":
        return {"ok": True, "text": NOTHING_TO_TEST}
    model = f'The {provider.name} model "{settings["model_name"]}"'
    try:
        reply = provider.generate(_prompt(agent), Run(settings, current_app.config))
    except ProviderError as error:
        said = _without_key(str(error), settings)
        return {"ok": False, "text": f"{model} did not answer: {said}.{_hint(said)}"}
    said = _without_key(reply.text[:SHOWN_CHARS], settings)
    return {"ok": True, "text": f'{model} answered: "{said}"'}


def _prompt(agent):
    """The test prompt alone: no knowledge, history of a customer or tools."""
    prompt = Prompt(agent.id, None, agent.language, PROMPT)
    prompt.history = [{"role": "user", "content": PROMPT}]
    return prompt


def _hint(said):
    for status, hint in HINTS.items():
        if f"HTTP {status}" in said:
            return f" Most likely {hint}."
    return ""


def _without_key(text, settings):
    """A model server may echo the key it refused; it is never shown."""
    key = settings.get("api_key")
    return text.replace(key, KEY_SHOWN_AS) if key else text
