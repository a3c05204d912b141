"""The built-in `knowledge` provider: offline, deterministic, no model.

It answers the customer's new words with the answer of the best matching
Q&A training, or the most relevant passage of a text training, when the
matcher (replies.knowledge.decide) says one passes its thresholds (the
agent's `qa_threshold`, `qa_margin`, `passage_threshold`). Otherwise it
answers "none" and the engine sends the fallback (and hands off when the
agent's settings say so). A message with nothing to look up - a greeting, a
thanks, "ok" - is small talk, answered with a short built-in line. When the
matcher is unsure (replies.clarifying) and the agent's `clarify_enabled`
setting is on, it answers "clarify" with the Q&A trainings to offer the
customer (`detail.choices`: training_id and label, best first).
"""

from ...models import Training
from .. import clarifying, knowledge, matching
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
        decision, trainings = decide(prompt.agent_id, text, prompt.language, run.settings)
        detail = _decision(decision, trainings, run.settings)
        if detail.get("choices"):
            return ProviderReply("clarify", model="knowledge", detail=detail)
        if decision.answered:
            return ProviderReply("answer", decision.text, model="knowledge", detail=detail)
        return ProviderReply("none", model="knowledge", detail=detail)

    def describe(self, prompt, run):
        text = prompt.customer_text
        if not text.strip() or not matching.analyse(text, prompt.language):
            return {"decision": None}
        decision, trainings = decide(prompt.agent_id, text, prompt.language, run.settings)
        return {"decision": _decision(decision, trainings, run.settings)}


def decide(agent_id, text, language, settings):
    """(the matcher's Decision, the agent's ready trainings as dicts)."""
    trainings = Training.select(
        Training.id,
        Training.type,
        Training.status,
        Training.question,
        Training.answer,
        Training.title,
        Training.content,
    ).where(Training.agent == agent_id, Training.status == "ready")
    rows = list(trainings.dicts())
    return knowledge.decide(text, rows, language, settings, ("trainings", agent_id)), rows


def _decision(decision, trainings, settings):
    found = {
        "kind": decision.kind,
        "training_id": decision.training_id,
        "score": decision.score,
        "runner_up": decision.runner_up,
        "runner_up_id": decision.runner_up_id,
        "best_id": decision.best_id,
    }
    asks = settings.get("clarify_enabled", True)
    offered = clarifying.choices(decision, settings) if asks else ()
    if offered:
        questions = {row["id"]: row["question"] for row in trainings if row["type"] == "qa"}
        found["choices"] = [
            {"training_id": training_id, "label": clarifying.label(questions[training_id])}
            for training_id in offered
        ]
    return found
