"""The prompt: everything the engine gives a provider for one reply.

Built from the agent (name, workflow, language, tone, personality,
custom_instructions, business_context), the context entries added to the
conversation for the agent (`POST /v1/agents/{id}/context`), the last
`history_messages` messages of the conversation (a human operator's marked
`[Human operator]`, so the model knows a person of the team wrote it), and
the trainings the FTS5 index finds best for the customer's new words, top
`knowledge_max_results` with their relevance scores. `Prompt.messages()` is the
OpenAI chat-completions form; `Prompt.as_dict()` is what reply-preview shows.
"""

from dataclasses import dataclass, field

from ..models import ContextEntry, Message, Training
from ..models.fastsql import fetch_all
from . import matching

OPERATOR_MARK = "[Human operator]"
HISTORY_CHARS = 2000  # of one message in the prompt
# Of the customer's new words (their pending messages together), what the
# agent reads: every chat message whole, the start of a long mail. Reading
# costs about 1.7 µs a character on the server's one loop (the decision,
# routing, the search): a mail's 5 MB of text held it for 9 s.
CUSTOMER_CHARS = 20_000
KNOWLEDGE_CHARS = 1500  # of one training in the prompt
# Of a training's content, the characters read for that (its runs of spaces
# made one): a content may be 5 million, and five read whole held the loop
# 320 ms per reply. Read on only when they were mostly spaces.
KNOWLEDGE_READ_CHARS = 4 * KNOWLEDGE_CHARS
QUERY_WORDS = 32  # words of the customer's text sent to the search index
WORKFLOWS = {
    "support": "customer support",
    "sales": "sales",
    "scheduling": "scheduling",
    "lead_qualification": "lead qualification",
    "faq": "questions and answers",
    "custom": "",
}


# The agent's tools live above the services they call (tools/): create_app
# registers how to find an agent's, so that this engine imports none of them.
_TOOLSETS = []


def register_toolsets(of_agent):
    """Make `of_agent(agent, settings, conversation_id)` (tools.toolset's
    Toolset.of_agent) what a prompt's tools come from."""
    _TOOLSETS[:] = [of_agent]


@dataclass
class Prompt:
    agent_id: str
    conversation_id: str
    language: str
    customer_text: str
    system_parts: dict = field(default_factory=dict)  # name -> text, in order
    history: list = field(default_factory=list)  # {role, sender_type, content, ...}
    knowledge: list = field(default_factory=list)  # {training_id, type, score, text}
    toolset: object = None  # a tools.toolset.Toolset; None: no tools

    def system_text(self):
        return "\n\n".join(text for text in self.system_parts.values() if text)

    def messages(self):
        """The OpenAI chat-completions messages: one system message, then the
        conversation (context entries in their place in time)."""
        found = [{"role": "system", "content": self.system_text()}]
        found += [{"role": item["role"], "content": item["content"]} for item in self.history]
        return found

    def as_dict(self):
        return {
            "language": self.language,
            "customer_text": self.customer_text,
            "system_parts": self.system_parts,
            "history": self.history,
            "knowledge": self.knowledge,
            "tools": self.toolset.functions() if self.toolset is not None else [],
        }


def build_prompt(agent, settings, conversation_id, customer_text, with_tools=True):
    context = _context_entries(conversation_id, agent.id)
    history = _history(conversation_id, context, settings["history_messages"])
    knowledge = []
    if settings.get("knowledge_enabled", True):
        knowledge = search_knowledge(
            agent.id, customer_text, agent.language, settings["knowledge_max_results"]
        )
    prompt = Prompt(
        agent_id=agent.id,
        conversation_id=conversation_id,
        language=agent.language,
        customer_text=customer_text,
        history=history,
        knowledge=knowledge,
        toolset=_TOOLSETS[0](agent, settings, conversation_id) if with_tools else None,
    )
    prompt.system_parts = _system_parts(agent, settings, prompt, context)
    return prompt


def _context_entries(conversation_id, agent_id):
    sql = (
        'SELECT * FROM "context_entry" WHERE "conversation_id" = ? AND "agent_id" = ? '
        'ORDER BY "created_at", "id"'
    )
    return fetch_all(ContextEntry, sql, conversation_id, agent_id)


def _system_parts(agent, settings, prompt, context):
    workflow = WORKFLOWS.get(agent.workflow_type, "")
    role = f"the {workflow} assistant" if workflow else "the assistant"
    identity = f"You are {agent.name}, {role} of this business, answering customers in a chat."
    if agent.description:
        identity += f" {agent.description}"
    parts = {
        "identity": identity,
        "language": f"Answer in the language of the BCP 47 tag {agent.language}, unless the "
        "customer clearly writes in another language: then answer in theirs.",
        "tone": f"Tone: {agent.tone}.",
        "personality": _section("Personality", agent.personality),
        "custom_instructions": _section("Instructions", agent.custom_instructions),
        "business_context": _section("About the business", agent.business_context),
        "context": _section(
            "Context for this conversation",
            "\n".join(entry.content for entry in context if entry.role == "system"),
        ),
        "knowledge": _knowledge_text(prompt.knowledge),
        "operators": "",
        "rules": (
            f"Keep each reply under {settings['max_reply_length']} characters, in plain text. "
            "Answer from the knowledge and the conversation above; when they do not have the "
            "answer, say so and offer to pass the customer to a person of the team. Never make "
            "up prices, dates or policies."
        ),
    }
    if any(item["sender_type"] == "human" for item in prompt.history):
        parts["operators"] = (
            f"Messages starting with {OPERATOR_MARK} were written by a person of the team who "
            "took the chat over for a while; they are part of the conversation and may hold "
            "facts or promises to keep. You did not write them."
        )
    return parts


def _section(title, text):
    text = (text or "").strip()
    return f"{title}:\n{text}" if text else ""


def _knowledge_text(knowledge):
    if not knowledge:
        return ""
    lines = [
        "Knowledge of the business that may answer the customer (best first; the score is "
        "the search relevance, higher is better):"
    ]
    for number, item in enumerate(knowledge, 1):
        lines.append(f"[{number}] (score {item['score']}) {item['text']}")
    return "\n".join(lines)


def _history(conversation_id, context, limit):
    """The last `limit` messages, oldest first, with the context entries of
    role user/assistant merged in by time."""
    rows = []
    if limit:
        sql = (
            'SELECT * FROM "message" WHERE "conversation_id" = ? AND "deleted_at" IS NULL '
            'ORDER BY "created_at" DESC, "id" DESC LIMIT ?'
        )
        rows = [_from_message(m) for m in fetch_all(Message, sql, conversation_id, limit)]
        rows = [row for row in reversed(rows) if row]
    for entry in context:
        if entry.role in ("user", "assistant"):
            rows.append(
                {
                    "role": entry.role,
                    "sender_type": "context",
                    "content": entry.content[:HISTORY_CHARS],
                    "created_at": entry.created_at,
                    "message_id": None,
                }
            )
    rows.sort(key=lambda row: row["created_at"])
    for row in rows:
        row["created_at"] = row["created_at"].isoformat(timespec="microseconds") + "Z"
    return rows


def _from_message(message):
    content = message_text(message)
    if not content or message.sender_type == "system":
        return None
    if message.direction == "inbound":
        role = "user"
    else:
        role = "assistant"
        if message.sender_type == "human":
            content = f"{OPERATOR_MARK} {content}"
    return {
        "role": role,
        "sender_type": message.sender_type,
        "content": content[:HISTORY_CHARS],
        "created_at": message.created_at,
        "message_id": message.id,
    }


def message_text(message):
    """What a message says, for a prompt: its text, or its type and caption."""
    if message.type == "text":
        return (message.text or "").strip()
    caption = (message.caption or "").strip()
    return f"[{message.type}] {caption}".strip()


def search_knowledge(agent_id, text, language, limit):
    """The agent's trainings the search index ranks best for `text` (any of
    its words, stop words left out), each with its score (Training.search's
    rank negated: higher is better)."""
    profile = matching.profile(language)
    query_words = [
        word
        for word in dict.fromkeys(matching.words(text))
        if len(word) > 1 and word not in profile.stop
    ][:QUERY_WORDS]
    if not query_words:
        return []
    words = " ".join(query_words)
    hits = Training.search(agent_id, words, limit, False, KNOWLEDGE_READ_CHARS)
    return [
        {
            "training_id": hit.id,
            "type": hit.type,
            "score": round(-hit.rank, 4),
            "text": _prompt_text(hit),
        }
        for hit in hits
    ]


def _prompt_text(hit):
    """The prompt's text of a training found with the start of its content."""
    text = _training_text(hit)
    if len(text) < KNOWLEDGE_CHARS and len(hit.content or "") == KNOWLEDGE_READ_CHARS:
        hit.content = Training.content_of(hit.id)  # what was read may have been cut
        text = _training_text(hit)
    return text[:KNOWLEDGE_CHARS]


def _training_text(training):
    if training.type == "qa":
        return f"Q: {training.question.strip()} A: {training.answer.strip()}"
    title = (training.title or "").strip()
    body = " ".join((training.content or "").split())
    return f"{title}: {body}" if title else body
