"""The admins' test chat: what an agent would answer a customer's message,
and why, without a conversation. Nothing is stored, sent or charged.

It follows the reply engine's order (services/replies.answer) for what
needs no conversation: an inactive agent stays silent, a handoff keyword
hands off, then the agent's provider decides. The built-in `knowledge`
provider is asked as the engine asks it (its answer, a question back, small
talk or the fallback); a model provider is not called here (it would spend
the provider's tokens): the test chat says so and shows the trainings the
model would be given. Transfer rules and intentions are not tried."""

from flask import current_app

from ..models import Training
from ..replies import clarifying, texts
from ..replies.engine import Prompt, search_knowledge
from ..replies.providers import Run, provider_for
from . import agents, routing


def ask(workspace_id, agent_id, text):
    """{"text": the agent's reply or None, "why": the reason in words,
    "trainings": [{id, title, score}] it drew on}."""
    agent = agents.get_agent(workspace_id, agent_id)
    settings = agents.settings_of(agent)
    if not agent.is_active:
        return _said(None, "The agent is inactive: on a channel it would not answer at all.")
    keyword = routing.handoff_keyword(settings.get("handoff_keywords"), text)
    if keyword is not None:
        said = texts.setting_or_built_in(settings, "handoff_message", agent.language, "handoff")
        return _said(said, f'Handed off to a person: the message has the keyword "{keyword}".')
    provider = provider_for(settings)
    if provider.name != "knowledge":
        return _model_provider(agent, settings, provider.name, text)
    prompt = Prompt(agent.id, None, agent.language, text)
    reply = provider.generate(prompt, Run(settings, current_app.config))
    return _knowledge_reply(agent, settings, text, reply)


def _said(text, why, trainings=()):
    return {"text": text, "why": why, "trainings": list(trainings)}


def _knowledge_reply(agent, settings, text, reply):
    detail, language = reply.detail, agent.language
    if reply.kind == "small_talk":
        return _said(texts.small_talk_reply(text, language), "Small talk: nothing to look up.")
    if reply.kind == "clarify":
        labels = [choice["label"] for choice in detail["choices"]]
        shown = [_training(agent, choice["training_id"], None) for choice in detail["choices"]]
        why = _why_asked_back(len(labels))
        return _said(clarifying.question(labels, language, numbered=True), why, shown)
    if reply.kind == "answer":
        kind = "Q&A" if detail["kind"] == "qa" else "passage of a text"
        why = f"Answered from a {kind}, score {detail['score']}."
        limit = settings["max_reply_length"]
        return _said(
            texts.shorten(reply.text, limit),
            why,
            [_training(agent, detail["training_id"], detail["score"])],
        )
    return _fallback(agent, settings, detail)


def _why_asked_back(candidates):
    if candidates == 1:
        return "Asked back: one Q&A is close but not sure enough, so the customer confirms it."
    return "Asked back: several Q&As match about as well, so the customer chooses."


def _fallback(agent, settings, detail):
    said = texts.setting_or_built_in(settings, "fallback_message", agent.language, "fallback")
    if detail.get("reason"):
        why = f"The fallback: {detail['reason']}."
    else:
        why = f"The fallback: no training passed the thresholds (best score {detail['score']})."
    if settings.get("handoff_on_fallback", True):
        why += " The conversation would be handed to a person."
    best = detail.get("best_id")
    return _said(said, why, [_training(agent, best, detail["score"])] if best else [])


def _model_provider(agent, settings, name, text):
    found = search_knowledge(agent.id, text, agent.language, settings["knowledge_max_results"])
    why = (
        f"This agent answers with the {name} model, which the test chat does not call "
        "(it would spend the provider's tokens). These trainings would be given to it."
    )
    shown = [_training(agent, item["training_id"], item["score"]) for item in found]
    return _said(None, why, shown)


def _training(agent, training_id, score):
    row = Training.get_or_none(Training.id == training_id, Training.workspace == agent.workspace_id)
    title = (row.question or row.title or row.url or "") if row else ""
    return {"id": training_id, "title": title.splitlines()[0] if title else "", "score": score}
