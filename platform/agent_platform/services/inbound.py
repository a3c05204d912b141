"""The channel adapters' way in: messages contacts write, and identity
changes. Both are idempotent and run in one transaction each; see their
docstrings for the contract. Receipts, reactions and edits of stored
messages are in `receipts`."""

from collections import namedtuple
from datetime import datetime

from peewee import IntegrityError

from ..channels.neutral import INBOUND_TYPES, InboundMessage
from ..db import database, transaction
from ..errors import NotFound, ValidationError
from ..events import emit
from ..models import Channel, Contact, ContactIdentity, Conversation, Message, fastsql
from ..models.base import utcnow
from ..models.messages import INBOUND_STATUS
from . import contacts, conversations, formats, leads, replies
from .messages import insert_message, render

InboundResult = namedtuple("InboundResult", "message duplicate")


def receive_inbound(channel, inbound, now=None):
    """Store a message a contact wrote on `channel` (a models.Channel).

    Contract for adapters: call it once per network message, from anywhere,
    as often as the network redelivers. In ONE transaction it
    - returns the stored message untouched if (channel, inbound.external_id)
      is known already (duplicate=True, nothing else happens);
    - finds the contact by its identity on the network (channel type +
      inbound.sender_id), else by sender_phone / sender_email, else creates
      it (contact.created; contact.updated when an identity or name is added);
    - uses the conversation of inbound.thread (a message it follows) when it
      is the contact's on the channel and open, or closed while the contact
      has no other open there; else the contact's open or handoff
      conversation on the channel, else reopens the latest closed one
      (conversation.reopened), else starts one with the channel's agent
      (conversation.created);
    - stores the message (direction inbound, sender contact, status received)
      and raises message.received.
    Returns InboundResult(message, duplicate). An inactive channel is
    CHANNEL_NOT_FOUND; a malformed InboundMessage is ValueError.

    Another process storing the same new contact or message at the same
    moment (several servers on one PostgreSQL database) makes a try fail on
    a unique index: the try is rolled back and made once more, and then
    finds what the other stored.
    """
    _check_inbound(inbound)
    now = now or utcnow()
    try:
        return _received(channel, inbound, now)
    except IntegrityError:
        return _received(channel, inbound, now)


def senders(channel, items):
    """The identities that receive_inbound holds to store the messages
    among `items` (parsed items of `channel`), for hold_senders."""
    return [
        (channel.workspace_id, channel.type, item.sender_id)
        for item in items
        if isinstance(item, InboundMessage)
    ]


def hold_senders(identities):
    """Hold `identities` (see senders) to the end of the write transaction,
    in the one order every transaction takes them: one that stores several
    senders' messages (a group commit's batch) then never holds an identity
    that another waits for while it waits for one the other holds (on
    PostgreSQL, a deadlock). receive_inbound finds its sender's held already."""
    for identity in sorted(set(identities), key=str):
        ContactIdentity.hold(*identity)


def _received(channel, inbound, now):
    with _atomic():
        ContactIdentity.hold(channel.workspace_id, channel.type, inbound.sender_id)
        channel, existing_id, known, current = _looked_up(channel, inbound)
        if existing_id is not None:  # a redelivery: plain SQL, it must stay cheap
            return InboundResult(Message.by_external_id(channel.id, inbound.external_id), True)
        contact, conversation = _contact_and_conversation(channel, inbound, known, current, now)
        message = insert_message(
            conversation=conversation.id,
            channel=channel.id,
            contact_id=contact.id,
            direction="inbound",
            sender_type="contact",
            status=INBOUND_STATUS,
            external_id=inbound.external_id,
            reply_to_id=_reply_to_external(channel, inbound.reply_to_external_id),
            metadata=_inbound_metadata(inbound),
            error=inbound.error,
            created_at=now,
            updated_at=now,
            **_inbound_content(inbound),
        )
        conversation.touch(now)
        leads.on_inbound(channel, contact, conversation, message, now)  # issue 20
        data = {**_rendered(message), "contact": _contact_summary(contact)}
        emit(channel.workspace_id, "message.received", data, now=now)
        replies.schedule_reply(conversation, message, now)  # the agent's answer (issue 7)
        return InboundResult(message, False)


def _rendered(message):
    """render(message) for a message just stored from an adapter: its JSON
    columns hold JSON values already (they were just stored as JSON), so
    only its own times need formatting, not a walk of every value."""
    data, stamps = message.as_dict(), {}
    for name, value in data.items():
        if type(value) is datetime:  # created_at and updated_at: one `now`, formatted once
            data[name] = stamps.get(value) or stamps.setdefault(value, formats.utc_timestamp(value))
    return data


def _contact_and_conversation(channel, inbound, known, current, now):
    """The sender's contact and conversation: as the lookup read them when
    the contact stays as it is (the usual message), else through the full
    path: contacts.identify (which creates or changes the contact; its
    event is raised here), then the conversation read again."""
    if known is not None and not contacts.learns_name(known, inbound.sender_name):
        threaded = _threaded(channel, inbound.thread, known.id, current)
        return known, _continued(channel, known.id, threaded, now)
    contact, change = contacts.identify(channel, inbound)
    if change:
        emit(channel.workspace_id, f"contact.{change}", contacts_render(contact), now=now)
    return contact, _conversation_for(channel, contact, now, inbound.thread)


def _threaded(channel, thread, contact_id, current):
    """The conversation of the first message of `thread` (network ids)
    stored on the channel, when it is the contact's and open, or closed while
    `current` (the contact's current one) is not open; else `current`."""
    if not thread:
        return current
    found = Conversation.of_thread(channel.id, contact_id, thread)
    if found is None or (current is not None and found.id == current.id):
        return current
    if found.status == "closed" and current is not None and current.status != "closed":
        return current
    return found


def _atomic():
    """receive_inbound's transaction: a savepoint of a fixed name when one is
    open already (an adapter batching items, such as the WhatsApp intake's
    group commit), so SQLite reuses its prepared SAVEPOINT and RELEASE
    statements instead of preparing two new ones per message."""
    return _SAVEPOINT if database.in_transaction() else transaction()


class _Savepoint:
    """peewee's savepoint (SAVEPOINT; RELEASE, or ROLLBACK TO when the block
    raises), with constant statements run straight on the cursor: peewee's
    formats them and goes through execute_sql for each."""

    def __enter__(self):
        fastsql.execute('SAVEPOINT "receive_inbound"')

    def __exit__(self, error_type, error, traceback):
        if error_type is None:
            try:
                fastsql.execute('RELEASE SAVEPOINT "receive_inbound"')
                return
            except Exception:
                self._rollback()
                raise
        self._rollback()

    def _rollback(self):
        fastsql.execute('ROLLBACK TO SAVEPOINT "receive_inbound"')


_SAVEPOINT = _Savepoint()


def _looked_up(channel, inbound):
    """What receive_inbound reads before it writes, in one statement:
    `channel` with its current agent, checked active inside the transaction
    (CHANNEL_NOT_FOUND if it is not any more); the id of the message stored
    with inbound.external_id on it, if any; the contact with the sender's
    identity on the channel's network, if any; and that contact's current
    conversation on the channel (Conversation.current_for), if any, both
    with only the columns the message path reads (see _CONTACT_COLUMNS).
    The caller has just loaded the channel's row, and a channel's workspace
    and type never change."""
    row = fastsql.execute(
        _LOOKUP,
        inbound.external_id,
        channel.workspace_id,
        channel.type,
        inbound.sender_id,
        channel.id,
    ).fetchone()
    if row is None:
        raise NotFound("The channel is not active.", code="CHANNEL_NOT_FOUND")
    if row[0] != channel.agent_id:
        channel = Channel.active_by_id(channel.id) or channel
    contact = _loaded(Contact, _CONTACT_COLUMNS, row, 2)
    conversation = _loaded(Conversation, _CONVERSATION_COLUMNS, row, 2 + len(_CONTACT_COLUMNS))
    return channel, row[1], contact, conversation


def _selected(alias, columns):
    return ", ".join(f'{alias}."{column}"' for column in columns)


def _loaded(model, columns, row, start):
    """The `model` whose `columns` are `row`'s from `start`, or None when its
    id, the first of the columns, is NULL (not found)."""
    values = row[start : start + len(columns)]
    return fastsql.from_rows(model, columns, [values])[0] if values[0] is not None else None


# The columns of the contact and its conversation that the message path
# reads: the contact's summary in message.received (and its name, for
# contacts.learns_name); what _continued, Conversation.touch and
# replies.schedule_reply use of the conversation. Every column read costs:
# the other sixteen, with their conversions, were about 60 k instructions of
# a stored message's 1.42 M. The paths that change or render the whole row
# (a name learnt, a closed conversation reopened) read it again in full.
_CONTACT_COLUMNS = ("id", "name", "phone", "email")
_CONVERSATION_COLUMNS = ("id", "workspace_id", "status", "agent_id", "message_count")
# The conversation subquery is Conversation.current_for's (see there for the
# unary + on the columns SQLite must not pick an index by).
_LOOKUP = f"""
SELECT ch."agent_id",
    (SELECT "id" FROM "message" WHERE "channel_id" = ch."id" AND "external_id" = ?),
    {_selected("c", _CONTACT_COLUMNS)},
    {_selected("v", _CONVERSATION_COLUMNS)}
FROM "channel" AS ch
LEFT JOIN "contact_identity" AS i
    ON i."workspace_id" = ? AND i."type" = ? AND i."external_id" = ?
LEFT JOIN "contact" AS c ON c."id" = i."contact_id"
LEFT JOIN "conversation" AS v ON v."id" = (
    SELECT "id" FROM "conversation"
    WHERE "contact_id" = c."id" AND +"channel_id" = ch."id" AND +"workspace_id" = ch."workspace_id"
    ORDER BY "status" IN ('open', 'handoff') DESC, "updated_at" DESC, "id" DESC
    LIMIT 1
)
WHERE ch."id" = ? AND ch."is_active" = 1
"""


def contacts_render(contact):
    return formats.jsonable(contacts.render(contact))


def _check_inbound(inbound):
    if not inbound.external_id or not inbound.sender_id:
        raise ValueError("InboundMessage needs external_id and sender_id")
    if len(inbound.external_id) > 200:
        raise ValueError("InboundMessage.external_id is longer than 200 characters")


def _conversation_for(channel, contact, now, thread=()):
    current = Conversation.current_for(channel.workspace_id, contact.id, channel.id)
    return _continued(channel, contact.id, _threaded(channel, thread, contact.id, current), now)


def _continued(channel, contact_id, conversation, now):
    """The contact's `conversation` (its current one on the channel, maybe
    with only _CONVERSATION_COLUMNS), reopened or given the channel's agent
    when it needs; a new one when it is None."""
    if conversation is None:
        return conversations.start(
            channel.workspace_id, contact_id, channel.id, channel.agent_id, now
        )
    if conversation.status == "closed":  # move() saves and renders the whole row
        conversation = Conversation.get_by_id(conversation.id)
        conversations.move(conversation, "reopen", now)
    if conversation.agent_id is None and channel.agent_id:
        conversation.agent = channel.agent_id
        conversation.save(only=[Conversation.agent], keep_updated_at=True)
    return conversation


def _inbound_content(inbound):
    kind = inbound.type if inbound.type in INBOUND_TYPES else "unsupported"
    return {
        "type": kind,
        "text": inbound.text,
        "caption": inbound.caption,
        "media_url": inbound.media_url,
        "media_mime_type": inbound.media_mime_type,
    }


def _inbound_metadata(inbound):
    metadata = dict(inbound.metadata or {})
    if inbound.timestamp is not None:
        metadata["network_timestamp"] = formats.jsonable(formats.naive_utc(inbound.timestamp))
    if inbound.type not in INBOUND_TYPES:
        metadata["network_type"] = inbound.type
    if inbound.reply_to_external_id:
        metadata["reply_to_external_id"] = inbound.reply_to_external_id
    return metadata


def _reply_to_external(channel, external_id):
    if not external_id:
        return None
    return Message.id_by_external_id(channel.id, external_id)


def _contact_summary(contact):
    return {"id": contact.id, "name": contact.name, "phone": contact.phone, "email": contact.email}


def receive_identity_change(channel, change, now=None):
    """The network says a contact changed identity (a channels.IdentityChange:
    WhatsApp's "changed their phone number").

    In one transaction, idempotent on change.external_id like receive_inbound:
    the identity `sender_id` of the channel's type becomes `new_sender_id`
    (and the contact's phone follows, when it was `sender_phone` and
    `new_sender_phone` is free), raising contact.updated; the notice is
    stored in the contact's conversation as a system message (type system,
    sender system) and raises message.received. When the new identity
    belongs to another contact already, nothing is merged. Returns
    InboundResult(message, duplicate).
    """
    now = now or utcnow()
    with transaction():
        channel = Channel.active_by_id(channel.id)
        if channel is None:
            raise NotFound("The channel is not active.", code="CHANNEL_NOT_FOUND")
        existing = Message.by_external_id(channel.id, change.external_id)
        if existing is not None:
            return InboundResult(existing, True)
        contact = _moved_identity(channel, change, now)
        conversation = _conversation_for(channel, contact, now)
        metadata = dict(change.metadata or {})
        if change.timestamp is not None:
            metadata["network_timestamp"] = formats.jsonable(formats.naive_utc(change.timestamp))
        message = insert_message(
            conversation=conversation.id,
            channel=channel.id,
            contact_id=contact.id,
            direction="inbound",
            sender_type="system",
            status=INBOUND_STATUS,
            type="system",
            text=change.text,
            external_id=change.external_id,
            metadata=metadata,
            created_at=now,
            updated_at=now,
        )
        conversation.touch(now)
        data = {**render(message), "contact": _contact_summary(contact)}
        emit(channel.workspace_id, "message.received", data, now=now)
        return InboundResult(message, False)


def _moved_identity(channel, change, now):
    """The contact of `change`, its identity moved to the new id when possible."""
    workspace_id, kind = channel.workspace_id, channel.type
    identity = ContactIdentity.find(workspace_id, kind, change.sender_id)
    taken = change.new_sender_id and ContactIdentity.find(workspace_id, kind, change.new_sender_id)
    if identity is None or not change.new_sender_id or taken:
        known = identity or taken
        if known:
            return Contact.by_id(known.contact_id)
        sender = change.new_sender_id or change.sender_id
        contact, contact_change = contacts.identify(
            channel, InboundMessage(external_id=change.external_id, sender_id=sender)
        )
        if contact_change:
            emit(workspace_id, f"contact.{contact_change}", contacts_render(contact), now=now)
        return contact
    identity.external_id = change.new_sender_id
    identity.save(only=[ContactIdentity.external_id])
    contact = Contact.by_id(identity.contact_id)
    old_phone = _canonical_phone(change.sender_phone)
    new_phone = _canonical_phone(change.new_sender_phone)
    if old_phone and new_phone and contact.phone == old_phone:
        if Contact.with_phone(workspace_id, new_phone) is None:
            contact.phone = new_phone
    contact.updated_at = now
    contact.save(keep_updated_at=True)
    emit(workspace_id, "contact.updated", contacts_render(contact), now=now)
    return contact


def _canonical_phone(value):
    try:
        return formats.phone(value, "phone") if value else None
    except ValidationError:
        return None
