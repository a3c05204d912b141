"""Learning from the humans: the customers' questions the agent did not
answer and a person of the team did, grouped by similarity, and one call
that turns a group into a Q&A training.

A customer's message is unanswered when no reply of the agent answered it
before a human wrote: the agent was silent (a human held the chat), or it
sent the fallback or a clarifying question. Small talk ("hi", "thanks") is
left out, and so are questions the agent's knowledge answers now (so a group
disappears once a training answers it). The human's next message in the
conversation is the reply shown with the question. The agent's latest
SCAN_MESSAGES messages are looked at.

Groups: each question's terms as the matcher sees them (replies.matching:
folded, stemmed, stop words out, synonyms as one concept); a question joins
the first group whose first question shares at least SIMILARITY of their
terms (Jaccard), else starts one. A group's id is its oldest message's id.
"""

from ..db import transaction
from ..errors import NotFound
from ..models import Message, Training
from ..replies import knowledge, matching
from ..turns import give_way_if_due
from . import agents

SCAN_MESSAGES = 20_000
SIMILARITY = 0.5
QUESTION_CHARS = 2000  # a Q&A's question, as the trainings API allows


def not_found(group_id):
    return NotFound(f"No unanswered group {group_id} for this agent.", code="GROUP_NOT_FOUND")


def list_groups(workspace_id, agent_id):
    """The agent's unanswered questions in groups, largest first."""
    agent = agents.get_agent(workspace_id, agent_id)
    return _groups(agent)


def learn(workspace_id, agent_id, group_id, values):
    """A Q&A training from a group: its questions as the question's lines
    (variants), the human's reply as the answer (`values` may give either)."""
    agent = agents.get_agent(workspace_id, agent_id)
    group = next((g for g in _groups(agent) if g["id"] == group_id), None)
    if group is None:
        raise not_found(group_id)
    question = values.get("question") or _variants(group["questions"])
    answer = values.get("answer") or group["reply"]["text"]
    with transaction():
        agent = agents.get_agent(workspace_id, agent_id)
        return Training.create(
            workspace=workspace_id, agent=agent.id, type="qa", question=question, answer=answer
        )


def _variants(questions):
    """The distinct question texts, one per line, as many as fit."""
    lines, seen = [], set()
    for item in questions:
        line = " ".join(item["text"].split())
        if line.casefold() not in seen and len("\n".join([*lines, line])) <= QUESTION_CHARS:
            lines.append(line)
            seen.add(line.casefold())
    return "\n".join(lines)


def _groups(agent):
    answers = _answerer(agent)
    gaps = [gap for gap in _gaps(agent) if not answers(gap["text"])]
    groups = []
    for gap in gaps:
        give_way_if_due()
        terms = _terms(gap["text"], agent.language)
        group = next((g for g in groups if _similar(g["terms"], terms)), None)
        if group is None:
            group = {"terms": terms, "id": gap["message_id"], "questions": []}
            groups.append(group)
        group["questions"].append(gap)
    groups.sort(key=lambda g: (-len(g["questions"]), g["questions"][-1]["created_at"]))
    return [_shown(group) for group in groups]


def _shown(group):
    latest = group["questions"][-1]
    return {
        "id": group["id"],
        "count": len(group["questions"]),
        "questions": [{k: v for k, v in q.items() if k != "reply"} for q in group["questions"]],
        "reply": latest["reply"],
    }


def _terms(text, language):
    return frozenset(token.term for token in matching.analyse(text, language))


def _similar(first, other):
    union = first | other
    return bool(union) and len(first & other) / len(union) >= SIMILARITY


def _answerer(agent):
    """text -> whether the agent's knowledge answers it now."""
    rows = Training.select(
        Training.id, Training.type, Training.status, Training.question, Training.answer,
        Training.title, Training.content,
    ).where(Training.agent == agent.id, Training.status == "ready")  # fmt: skip
    trainings, settings = list(rows.dicts()), agents.settings_of(agent)
    owner = ("trainings", agent.id)  # the index the replies use

    def answers(text):
        give_way_if_due()
        return knowledge.decide(text, trainings, agent.language, settings, owner).answered

    return answers


def _gaps(agent):
    """Unanswered customer messages with the human reply that followed,
    oldest first."""
    found, waiting, conversation = [], [], None
    for message in _messages(agent):
        give_way_if_due()  # SCAN_MESSAGES of them: seconds of analysis
        if message.conversation_id != conversation:
            waiting, conversation = [], message.conversation_id
        if message.direction == "inbound":
            if message.type == "text" and _asks(message, agent.language):
                waiting.append(message)
        elif message.sender_type == "human":
            reply = _reply(message)
            found += [_gap(question, reply) for question in waiting if reply["text"]]
            waiting = []
        elif message.sender_type == "agent" and _answers(message):
            waiting = []
    return sorted(found, key=lambda gap: (gap["created_at"], gap["message_id"]))


def _messages(agent):
    """The agent's conversations' latest messages, by conversation and time."""
    return Message.latest_of_agent(agent.workspace_id, agent.id, SCAN_MESSAGES)


def _asks(message, language):
    return bool(matching.analyse(message.text or "", language))


def _answers(message):
    """Whether an agent's message answered: a reply of a provider, an
    intention or a chosen clarification; not the fallback, a question back, a
    handoff notice, a greeting or a message posted through the API."""
    record = (message.metadata or {}).get("reply") or {}
    if record.get("fallback") or record.get("choices"):
        return False
    return "provider" in record or "intention_id" in record


def _reply(message):
    return {"message_id": message.id, "text": (message.text or "").strip(),
            "created_at": message.created_at}  # fmt: skip


def _gap(question, reply):
    return {
        "message_id": question.id,
        "conversation_id": question.conversation_id,
        "text": (question.text or "").strip(),
        "created_at": question.created_at,
        "reply": reply,
    }
