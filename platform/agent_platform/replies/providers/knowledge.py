"""The built-in `knowledge` provider: offline, deterministic, no model.

It answers the customer's new words with the answer of the best matching
Q&A training, or the most relevant passage of a text training, when the
matcher (replies.knowledge.decide) says one passes its thresholds (the
agent's `qa_threshold`, `qa_margin`, `passage_threshold`). Otherwise it
answers "none" and the engine sends the fallback (and hands off when the
agent's settings say so). A message with nothing to look up - a greeting, a
thanks, "ok" - is small talk, answered with a short built-in line.
"""

from ...models import Training
from .. import knowledge, matching
from .base import ProviderReply


class KnowledgeProvider:
    def __init__(self, name="knowledge"):
        self.name = name

    def generate(self, prompt, run):
        text = prompt.customer_text
        if not text.strip():
            return ProviderReply("none", detail={"reason": "no text to answer"})
        if not matching.analyse(text, prompt.language):
            return ProviderReply("small_talk", detail={"reason": "nothing to look up"})
        if not run.settings.get("knowledge_enabled", True):
            return ProviderReply("none", detail={"reason": "knowledge is disabled"})
        decision = decide(prompt.agent_id, text, prompt.language, run.settings)
        detail = _decision(decision)
        if decision.answered:
            return ProviderReply("answer", decision.text, model="knowledge", detail=detail)
        return ProviderReply("none", model="knowledge", detail=detail)

    def describe(self, prompt, run):
        text = prompt.customer_text
        if not text.strip() or not matching.analyse(text, prompt.language):
            return {"decision": None}
        decision = decide(prompt.agent_id, text, prompt.language, run.settings)
        return {"decision": _decision(decision)}


def decide(agent_id, text, language, settings):
    trainings = Training.select(
        Training.id,
        Training.type,
        Training.status,
        Training.question,
        Training.answer,
        Training.title,
        Training.content,
    ).where(Training.agent == agent_id, Training.status == "ready")
    return knowledge.decide(text, list(trainings.dicts()), language, settings)


def _decision(decision):
    return {
        "kind": decision.kind,
        "training_id": decision.training_id,
        "score": decision.score,
        "runner_up": decision.runner_up,
        "runner_up_id": decision.runner_up_id,
        "best_id": decision.best_id,
    }
