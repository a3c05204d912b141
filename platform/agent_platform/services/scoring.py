"""Lead scores: explained sums of the workspace's rules over facts the
platform already knows, recomputed when a fact changes.

A lead's facts that are not on its contact (messages received, the fastest
reply, intentions matched, appointments booked) live on the lead row and are
updated as they happen (on_inbound, on_intention, on_appointment); custom
field values are read from the contact. Recomputing thus reads one lead, one
contact and the workspace's few rules: never a scan of messages per request.
"""

from .. import formats
from ..events import emit
from ..models import Contact, Lead, Message, SalesSettings, ScoringRule, fastsql, jsonquery
from ..models.leads import QUALIFIABLE

MIN_SCORE, MAX_SCORE = 0, 100


def render(lead):
    return formats.jsonable(lead.as_dict())


def satisfied(rule, facts, contact):
    """Whether the rule's fact holds for the lead."""
    return _HOLDS[rule.kind](rule.params, facts, contact)


def _replied_within(params, facts, contact):
    fastest = facts.get("fastest_reply_seconds")
    return fastest is not None and fastest <= params["seconds"]


def _field_holds(params, facts, contact):
    value = (contact.custom_fields if contact else {}).get(params["custom_field_id"])
    if isinstance(value, list):
        return params["value"] in value
    return value is not None and value == params["value"]


_HOLDS = {
    "messages_received": lambda params, facts, contact: (
        facts.get("messages_received", 0) >= params["at_least"]
    ),
    "replied_within": _replied_within,
    "intention_matched": lambda params, facts, contact: (
        params["intention_id"] in facts.get("intentions", [])
    ),
    "custom_field_value": _field_holds,
    "appointment_booked": lambda params, facts, contact: facts.get("appointments_booked", 0) > 0,
}


def scored(lead, rules):
    """(score, reasons) of the lead under `rules`."""
    contact = Contact.by_id(lead.contact_id)
    reasons = [
        {"rule_id": rule.id, "name": rule.name, "kind": rule.kind, "points": rule.points}
        for rule in rules
        if satisfied(rule, lead.facts, contact)
    ]
    if lead.adjustment:
        manual = {"rule_id": None, "name": "manual adjustments", "kind": "manual"}
        reasons.append({**manual, "points": lead.adjustment})
    total = sum(reason["points"] for reason in reasons)
    return max(MIN_SCORE, min(MAX_SCORE, total)), reasons


def recompute(lead, now, rules=None, settings=None, save=False):
    """Score the lead again: when the score or its reasons change, save it
    and raise lead.updated, or lead.qualified when the score reaches the
    workspace's threshold; else save it only if `save` (its facts changed).
    Call inside a transaction."""
    rules = ScoringRule.active(lead.workspace_id) if rules is None else rules
    score, reasons = scored(lead, rules)
    rescored = score != lead.score or reasons != lead.score_reasons
    threshold = (settings or SalesSettings.of(lead.workspace_id)).qualify_threshold
    qualifies = threshold is not None and score >= threshold and lead.status in QUALIFIABLE
    if not rescored and not qualifies:
        if save:
            lead.save(keep_updated_at=True)
        return lead
    lead.score, lead.score_reasons, lead.updated_at = score, reasons, now
    if qualifies:
        return qualify(lead, now, automatic=True)
    lead.save(keep_updated_at=True)
    emit(lead.workspace_id, "lead.updated", render(lead), now=now)
    return lead


def qualify(lead, now, automatic=False):
    lead.status, lead.qualified_at, lead.updated_at = "qualified", now, now
    lead.save(keep_updated_at=True)
    emit(lead.workspace_id, "lead.qualified", {**render(lead), "automatic": automatic}, now=now)
    return lead


def rescore_workspace(workspace_id, now):
    """Every lead again, after the rules changed (a change of rules, not a request's read)."""
    rules, settings = ScoringRule.active(workspace_id), SalesSettings.of(workspace_id)
    sql = 'SELECT * FROM "lead" WHERE "workspace_id" = ? ORDER BY "id"'
    for lead in fastsql.fetch_all(Lead, sql, workspace_id):
        recompute(lead, now, rules, settings)


def history_facts(contact_id):
    """The facts of a contact's past messages, read once when its lead is made."""
    intention = jsonquery.member_text_sql('"m"."metadata"', "intention", "id")
    sql = (
        'SELECT "m"."conversation_id", "m"."direction", "m"."created_at", '
        f'{intention} FROM "message" AS "m" '
        'JOIN "conversation" AS "c" ON "c"."id" = "m"."conversation_id" '
        'WHERE "c"."contact_id" = ? ORDER BY "m"."conversation_id", "m"."created_at", "m"."id"'
    )
    facts = {"messages_received": 0, "intentions": [], "appointments_booked": _booked(contact_id)}
    previous = None
    for conversation_id, direction, created_at, intention_id in fastsql.execute(sql, contact_id):
        created_at = Message.created_at.python_value(created_at)
        if direction == "inbound":
            facts["messages_received"] += 1
            if previous and previous[0] == conversation_id and previous[1] == "outbound":
                _note_reply(facts, (created_at - previous[2]).total_seconds())
        if intention_id and intention_id not in facts["intentions"]:
            facts["intentions"].append(intention_id)
        previous = (conversation_id, direction, created_at)
    return facts


def _note_reply(facts, seconds):
    fastest = facts.get("fastest_reply_seconds")
    if fastest is None or seconds < fastest:
        facts["fastest_reply_seconds"] = max(0, int(seconds))


# The message before one just stored, in its conversation (index on
# conversation_id, created_at, id).
_PREVIOUS = (
    'SELECT "direction", "created_at" FROM "message" WHERE "conversation_id" = ? '
    'AND "id" != ? ORDER BY "created_at" DESC, "id" DESC LIMIT 1'
)


def on_inbound(workspace_id, lead, message, now):
    """A message from the lead's contact: count it, and time it when it
    answers one of ours."""
    facts = dict(lead.facts)
    facts["messages_received"] = facts.get("messages_received", 0) + 1
    before = fastsql.execute(_PREVIOUS, message.conversation_id, message.id).fetchone()
    if before and before[0] == "outbound":
        sent = Message.created_at.python_value(before[1])
        _note_reply(facts, (message.created_at - sent).total_seconds())
    lead.facts = facts
    return recompute(lead, now, save=True)


def on_intention(workspace_id, contact_id, intention_id, now):
    """The agent matched an intention on the contact's message."""
    lead = contact_id and Lead.of_contact(workspace_id, contact_id)
    if not lead or intention_id in lead.facts.get("intentions", []):
        return
    lead.facts = {**lead.facts, "intentions": [*lead.facts.get("intentions", []), intention_id]}
    recompute(lead, now, save=True)


def on_contact_changed(contact, now):
    """The contact's custom fields may have changed: its lead's score may too."""
    lead = Lead.of_contact(contact.workspace_id, contact.id)
    if lead is not None:
        recompute(lead, now)


# The contact's appointments that still count as booked (index on contact_id).
_BOOKED = 'SELECT count(*) FROM "appointment" WHERE "contact_id" = ? AND "status" != \'canceled\''


def _booked(contact_id):
    return fastsql.scalar(_BOOKED, contact_id)


def on_appointment(workspace_id, contact_id, now):
    """An appointment of the contact was booked or canceled: count again
    the ones that stand. Call inside the transaction that changed it."""
    lead = Lead.of_contact(workspace_id, contact_id)
    if lead is None:
        return
    booked = _booked(contact_id)
    if booked != lead.facts.get("appointments_booked", 0):
        lead.facts = {**lead.facts, "appointments_booked": booked}
        recompute(lead, now, save=True)
