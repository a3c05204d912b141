"""An agent's routing rules: CRUD of intentions, transfer rules and idle
actions, how the reply engine matches them, and their actions.

- Intentions are matched on the customer's words with the knowledge matcher
  (each example phrase a question; INTENTION_THRESHOLD, INTENTION_MARGIN).
- Transfer rules are tried by `priority` (then age): `keywords` (a phrase
  among the customer's words: case, accents and punctuation ignored),
  `regex` (RE2 syntax, patterns.py: case-insensitive, on the first
  REGEX_CHARS characters) or `intention` (the matched intention).
- Idle actions are run by services.idle_actions.
"""

import logging
import time
from dataclasses import dataclass

from flask import current_app

from .. import formats, netguard, patterns
from ..db import transaction
from ..errors import ApiError, Conflict, NotFound, ValidationError
from ..events import delivery_settings, emit
from ..models import (
    Agent,
    Contact,
    CustomField,
    IdleAction,
    Intention,
    TransferRule,
    fastsql,
)
from ..models.pagination import paginate
from ..replies import knowledge, matching
from . import agents, contacts, conversations, scoring
from . import idle_actions as _idle_actions  # noqa: F401  (registers the idle job)

INTENTION_THRESHOLD = 0.45
INTENTION_MARGIN = 0.03
REGEX_CHARS = 2000
LEAD_TAGS_FIELD = "lead_tags"

log = logging.getLogger("agent_platform.routing")


# --- CRUD ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Kind:
    model: type
    label: str
    code: str
    fields: dict  # action -> the fields only that action uses


INTENTIONS = Kind(
    Intention,
    "Intention",
    "INTENTION_NOT_FOUND",
    {
        "reply": ("reply_text",),
        "webhook": ("url",),
        "tag": ("tag",),
        "transfer": ("target_agent_id",),
    },
)
TRANSFER_RULES = Kind(TransferRule, "Transfer rule", "TRANSFER_RULE_NOT_FOUND", {})
IDLE_ACTIONS = Kind(IdleAction, "Idle action", "IDLE_ACTION_NOT_FOUND", {})
REQUIRED = {
    ("intention", "reply"): "reply_text",
    ("intention", "webhook"): "url",
    ("intention", "tag"): "tag",
    ("rule", "keywords"): "keywords",
    ("rule", "regex"): "pattern",
    ("rule", "intention"): "intention_id",
    ("rule", "transfer"): "target_agent_id",
    ("idle", "message"): "message",
}


def not_found(kind, object_id):
    return NotFound(f"{kind.label} {object_id} not found.", code=kind.code)


def get_item(kind, workspace_id, agent_id, object_id):
    agent_id = agents.live_agent_id(workspace_id, agent_id)
    item = kind.model.get_in_workspace(workspace_id, object_id, not_found(kind, object_id))
    if item.agent_id != agent_id:
        raise not_found(kind, object_id)
    return item


def list_items(kind, workspace_id, agent_id, paging, is_active=None):
    agent_id = agents.live_agent_id(workspace_id, agent_id)
    return paginate(kind.model.listed(workspace_id, agent_id, is_active), kind.model, paging)


def create_item(kind, workspace_id, agent_id, values):
    with transaction():
        agent = agents.get_agent(workspace_id, agent_id)
        values = _checked(kind, workspace_id, agent, dict(values), current=None)
        return kind.model.create(workspace=workspace_id, agent=agent.id, **values)


def update_item(kind, workspace_id, agent_id, object_id, changes):
    with transaction():
        item = get_item(kind, workspace_id, agent_id, object_id)
        agent = agents.get_agent(workspace_id, agent_id)
        values = _checked(kind, workspace_id, agent, dict(changes), current=item)
        for name, value in values.items():
            setattr(item, name, value)
        item.save()
        return item


def delete_item(kind, workspace_id, agent_id, object_id):
    with transaction():
        item = get_item(kind, workspace_id, agent_id, object_id)
        if kind is INTENTIONS:
            used = TransferRule.select().where(TransferRule.intention == item.id).first()
            if used is not None:
                raise Conflict(
                    f"Intention {item.id} is used by transfer rule {used.id}; delete or change "
                    "that rule first.",
                    code="INTENTION_IN_USE",
                )
        item.delete_instance()


def _checked(kind, workspace_id, agent, values, current):
    """Values to store: the action's required fields present, fields of other
    actions refused when given and cleared when the action changes."""
    if "target_agent_id" in values:
        values["target_agent"] = _target_agent(workspace_id, agent, values.pop("target_agent_id"))
    if "intention_id" in values:
        values["intention"] = _intention_of(agent, values.pop("intention_id"))
    merged = {**(current.__data__ if current else {}), **values}
    if kind is INTENTIONS:
        _check_action_fields(values, merged, current)
        _require("intention", merged["action"], merged)
        if values.get("url"):
            values["url"] = _checked_url(values["url"])
    elif kind is TRANSFER_RULES:
        if current is not None and "match_type" in values:
            for name, key in (("keywords", "keywords"), ("regex", "pattern")):
                if merged["match_type"] != name and key not in values:
                    values[key] = [] if key == "keywords" else None
            if merged["match_type"] != "intention" and "intention" not in values:
                values["intention"] = None
        _require("rule", merged["match_type"], merged)
        _require("rule", merged["action"], merged)
        if merged["action"] == "handoff" and values.get("target_agent"):
            raise ValidationError("target_agent_id", "only a transfer goes to another agent")
        if merged["action"] == "handoff":
            values["target_agent"] = None
        if values.get("pattern"):
            _check_pattern(values["pattern"])
    else:
        _require("idle", merged["action"], merged)
    return values


def _check_action_fields(values, merged, current):
    action = merged["action"]
    for other, names in INTENTIONS.fields.items():
        if other == action:
            continue
        for name in names:
            key = "target_agent" if name == "target_agent_id" else name
            if values.get(key) is not None:
                raise ValidationError(name, f"does not apply to the action {action}")
            if current is not None and "action" in values:
                values[key] = None


def _require(group, choice, merged):
    name = REQUIRED.get((group, choice))
    if name is None:
        return
    key = {"target_agent_id": "target_agent", "intention_id": "intention"}.get(name, name)
    value = merged.get(key)
    if value in (None, "", []):
        raise ValidationError(name, f"required for {choice}", code="MISSING_REQUIRED_FIELD")


def _target_agent(workspace_id, agent, target_id):
    if target_id is None:
        return None
    target = agents.get_agent(workspace_id, str(target_id))
    if target.id == agent.id:
        raise ValidationError("target_agent_id", "must be another agent than this one")
    return target.id


def _intention_of(agent, intention_id):
    if intention_id is None:
        return None
    found = Intention.get_or_none(Intention.id == str(intention_id), Intention.agent == agent.id)
    if found is None:
        raise ValidationError("intention_id", "no intention with this id belongs to this agent")
    return found.id


def _checked_url(url):
    config = current_app.config
    try:
        netguard.check_url(
            url,
            allow_private=config["WEBHOOKS_ALLOW_PRIVATE_TARGETS"],
            allowed_ports=config["WEBHOOKS_ALLOWED_PORTS"],
        )
    except netguard.UnsafeURL as error:
        # An intention's URL is called like a webhook, under the webhooks' settings.
        reason = netguard.refusal(error, *delivery_settings.GUARD_SETTINGS)
        raise ValidationError("url", f"refused: {reason}") from None
    return url


def _check_pattern(pattern):
    try:
        patterns.compiled(pattern)
    except patterns.PatternError as error:
        raise ValidationError("pattern", str(error)) from None


def _matches(rule, text):
    """A stored pattern RE2 refuses (saved before patterns ran on RE2) matches
    nothing: the rule is skipped with a warning, the message still answered."""
    try:
        return patterns.compiled(rule.pattern).search(text[:REGEX_CHARS]) is not None
    except patterns.PatternError as error:
        log.warning("transfer rule %s skipped: its pattern is refused: %s", rule.id, error)
        return False


# --- matching -----------------------------------------------------------------------


@dataclass
class IntentionMatch:
    intention: Intention
    score: float
    example: str

    def note(self):
        """What is recorded on the customer's message."""
        return {
            "id": self.intention.id,
            "name": self.intention.name,
            "action": self.intention.action,
            "score": self.score,
            "example": self.example,
        }


def match_intention(agent, text, settings=None):
    """The agent's active intention the customer's words match best, or None."""
    if not text.strip():
        return None
    sql = 'SELECT * FROM "intention" WHERE "agent_id" = ? AND "is_active" = 1'
    intentions = {item.id: item for item in fastsql.fetch_all(Intention, sql, agent.id)}
    rows = [
        {"id": f"{item.id}:{number}", "type": "qa", "question": example, "answer": item.name}
        for item in intentions.values()
        for number, example in enumerate(item.examples)
    ]
    if not rows:
        return None
    limits = {"qa_threshold": INTENTION_THRESHOLD, "qa_margin": INTENTION_MARGIN}
    limits["passage_threshold"] = 2.0  # no passages here
    decision = knowledge.decide(text, rows, agent.language, limits, ("intentions", agent.id))
    if not decision.answered:
        return None
    intention_id, number = decision.training_id.split(":")
    intention = intentions[intention_id]
    return IntentionMatch(intention, decision.score, intention.examples[int(number)])


def phrase_in(text, phrases):
    """The first of `phrases` whose words appear together in `text` (case,
    accents and punctuation ignored), or None."""
    found = " " + " ".join(matching.words(text)) + " "
    for phrase in phrases or ():
        wanted = " ".join(matching.words(phrase))
        if wanted and f" {wanted} " in found:
            return phrase
    return None


def handoff_keyword(keywords, text):
    """The agent's handoff keyword the customer used, or None."""
    return phrase_in(text, keywords)


def match_transfer_rule(agent_id, text, intention_match=None):
    """The first active transfer rule (by priority, then age) that matches."""
    sql = (
        'SELECT * FROM "transfer_rule" WHERE "agent_id" = ? AND "is_active" = 1 '
        'ORDER BY "priority", "created_at", "id"'
    )
    rules = fastsql.fetch_all(TransferRule, sql, agent_id)
    for rule in rules:
        if rule.match_type == "keywords" and phrase_in(text, rule.keywords):
            return rule
        if rule.match_type == "regex" and _matches(rule, text):
            return rule
        if (
            rule.match_type == "intention"
            and intention_match is not None
            and intention_match.intention.id == rule.intention_id
        ):
            return rule
    return None


# --- actions ----------------------------------------------------------------------


def transfer(conversation, target_agent_id, now):
    """Transfer to another live agent (agent.transferred); False when it cannot."""
    target = target_agent_id and Agent.get_or_none(Agent.id == target_agent_id)
    if not target or not target.is_active or target.deleted_at is not None:
        return False  # the caller hands off instead
    try:
        conversations.transfer(conversation.workspace_id, conversation.id, target.id, now)
    except ApiError:
        return False
    return True


def call_intention_url(intention, turn):
    """POST the match to the intention's URL through the SSRF guard; the
    outcome (never an exception) is recorded on the customer's message."""
    config = current_app.config
    message = turn.pending[-1]
    body = {
        "event": "intention.matched",
        "timestamp": formats.jsonable(turn.now),
        "intention": {"id": intention.id, "name": intention.name},
        "agent_id": turn.agent.id,
        "conversation": formats.jsonable(turn.conversation.as_dict()),
        "message": formats.jsonable(message.as_dict()),
    }
    started = time.monotonic()
    outcome = {"url": intention.url}
    try:
        response = netguard.safe_request(
            "POST",
            intention.url,
            allow_private=config["WEBHOOKS_ALLOW_PRIVATE_TARGETS"],
            allowed_ports=config["WEBHOOKS_ALLOWED_PORTS"],
            timeout=config["WEBHOOKS_TIMEOUT_SECONDS"],
            max_bytes=1024,
            json=body,
        )
        outcome.update(status=response.status_code, ok=200 <= response.status_code < 300)
    except netguard.UnsafeURL as error:
        outcome.update(ok=False, error=delivery_settings.refused(error))
    except Exception as error:  # timeouts, refused connections: recorded, not raised
        outcome.update(ok=False, error=f"{type(error).__name__}: {error}"[:300])
    outcome["duration_ms"] = round((time.monotonic() - started) * 1000, 1)
    return outcome


def add_lead_tag(conversation, tag, now):
    """Add `tag` to the contact's `lead_tags` custom field (a multiselect made
    on first use, its options grown with each new tag); contact.updated."""
    with transaction():
        contact = conversation.contact_id and Contact.by_id(conversation.contact_id)
        if not contact:
            return {"tag": tag, "ok": False, "error": "the conversation has no contact"}
        field = CustomField.active_named(contact.workspace_id, LEAD_TAGS_FIELD)
        if field is None:
            field = CustomField.create(
                workspace=contact.workspace_id,
                name=LEAD_TAGS_FIELD,
                field_type="multiselect",
                options=[],
            )
        if field.field_type != "multiselect":
            error = f"the custom field {field.name} is not a multiselect"
            return {"tag": tag, "ok": False, "error": error}
        if tag not in field.options:
            field.options = [*field.options, tag]
            field.save()
        values = list(contact.custom_fields.get(field.id) or [])
        if tag not in values:
            contact.custom_fields = {**contact.custom_fields, field.id: [*values, tag]}
            contact.updated_at = now
            contact.save(keep_updated_at=True)
            emit(contact.workspace_id, "contact.updated", contacts_render(contact), now=now)
            scoring.on_contact_changed(contact, now)
        return {"tag": tag, "ok": True, "field": field.name}


def contacts_render(contact):
    return formats.jsonable(contacts.render(contact))
