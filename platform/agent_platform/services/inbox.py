"""The team's inbox (issue 39): the list of conversations, their counts, one
conversation with its thread and contact, and each user's unread marks.

Waiting for a human is the `handoff` state (services/conversations.py).
The list shows those first, then the rest, newest activity (updated_at)
first; its cursor is a keyset (segment, updated_at, id), so a page costs
what the first costs, and a conversation that moves up meanwhile (a new
message) leaves the pages still to come instead of shifting them.

`user_id` is the signed-in person's id, a plain string: this module reads
no users table.
"""

import base64
import binascii
import json
import re
from datetime import datetime
from functools import partial

from .. import formats, jsonbody
from ..db import transaction
from ..errors import ValidationError
from ..models import inbox as queries
from ..models.base import utcnow
from . import conversations
from .inbox_view import AUTHORS, conversation_view

__all__ = ["conversation_view", "inbox_counts", "inbox_list", "mark_read"]

# Each state filter: its segments, shown one after the other; a segment
# holds conversations of its statuses (merged by activity) and the filter's
# own conditions. `mine` and the default keep those waiting for a human on top.
STATES = {
    None: (("handoff",), ("open", "closed")),
    "needs_human": (("handoff",),),
    "agent": (("open",),),
    "mine": (("handoff",), ("open",)),
    "closed": (("closed",),),
}
ACTIVE = ("open", "handoff")
MAX_LIMIT = 100
# A search matching fewer messages than this collects the conversations
# they are in, then orders them; one matching more walks the list in its
# order, testing each conversation: with so many, a page is soon full
# (bench/inbox.py, 100,000 conversations: 12 to 25 ms either side of it).
COMMON_HITS = 5000
PREVIEW_CHARS = 120
_WORD = re.compile(r"\w+")


def inbox_list(
    workspace_id,
    user_id,
    state=None,
    channel_id=None,
    agent_id=None,
    search=None,
    cursor=None,
    limit=30,
):
    """A page of the list: {"items": [row], "next_cursor": str or None}.

    `state`: None (every conversation), needs_human, agent (the agent
    answers), mine (open or waiting, assigned to `user_id`), closed.
    `search` matches words of message text (prefixes of the last word)
    and contact names; `cursor` is a page's next_cursor."""
    segments = _segments(state)
    filters = _filters(state, user_id, channel_id, agent_id)
    limit = _limit(limit)
    words, after = _search(search), _decode(cursor)
    if after and not 0 <= after[0] < len(segments):
        raise ValidationError("cursor", "not a cursor of this list")
    keys = _keys(workspace_id, segments, filters, words, after, limit + 1)
    page, more = keys[:limit], len(keys) > limit
    found = queries.rows(workspace_id, user_id, [key[2] for key in page])
    items = [_row(found[key[2]]) for key in page if key[2] in found]
    return {"items": items, "next_cursor": _encode(page[-1]) if more else None}


def inbox_counts(workspace_id, user_id):
    """The number of conversations under each state filter, and those the
    user answers (waiting, or theirs) with a message they have not read."""
    return {
        "needs_human": queries.count_in(workspace_id, ("handoff",)),
        "agent": queries.count_in(workspace_id, ("open",)),
        "mine": queries.count_in(workspace_id, ACTIVE, assigned_to=user_id),
        "closed": queries.count_in(workspace_id, ("closed",)),
        "unread": queries.count_unread(workspace_id, user_id),
    }


def mark_read(workspace_id, user_id, conversation_id):
    """Everything in the conversation up to its newest message is read by the user."""
    with transaction():
        conversation = conversations.get_conversation(workspace_id, conversation_id)
        newest = queries.newest_message(conversation.id)
        read_at, message_id = newest if newest else (utcnow(), None)
        queries.mark_read(workspace_id, user_id, conversation.id, read_at, message_id)


def _segments(state):
    if state not in STATES:
        raise ValidationError("state", f"one of {', '.join(s for s in STATES if s)}, or none")
    return STATES[state]


def _filters(state, user_id, channel_id, agent_id):
    filters = {"channel_id": channel_id, "agent_id": agent_id}
    if state == "mine":
        filters["assigned_to"] = user_id
    return {column: str(value) for column, value in filters.items() if value}


def _limit(limit):
    if not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise ValidationError("limit", f"a whole number from 1 to {MAX_LIMIT}")
    return limit


def _keys(workspace_id, segments, filters, words, after, wanted):
    """The first `wanted` keys (segment, updated_at, id) after the cursor `after`."""
    if words and not queries.text_hits_reach(words[0], COMMON_HITS):
        matching = queries.search_matches(workspace_id, *words)
        return queries.matching_keys(workspace_id, segments, filters, after, wanted, matching)
    condition = queries.search_condition(workspace_id, *words) if words else None
    read = partial(_segment_keys, workspace_id, filters, wanted, condition)
    return _ordered_keys(segments, after, read, wanted)


def _ordered_keys(segments, after, read, wanted):
    """[(segment, updated_at, id)] in the list's order after the cursor `after`;
    `read(statuses, keyset)` reads a segment."""
    keys = []
    first = after[0] if after else 0
    for index in range(first, len(segments)):
        keyset = after[1:] if after and index == first else None
        keys += [(index, *key) for key in read(segments[index], keyset)]
        if len(keys) >= wanted:
            break
    return keys[:wanted]


def _segment_keys(workspace_id, filters, wanted, condition, statuses, keyset):
    """The segment's first `wanted` (updated_at, id): each status read in order, merged."""
    keys = []
    for status in statuses:
        keys += queries.ordered_ids(workspace_id, status, filters, keyset, wanted, condition)
    return sorted(keys, reverse=True)[:wanted]


def _search(search):
    """(message index query, LIKE pattern) of what a person typed, or None
    without a word: all its words (the last one a prefix, as it may still be
    being typed) or the contact's name."""
    words = _WORD.findall(search or "")
    if not words:
        return None
    escaped = re.sub(r"([\\%_])", r"\\\1", search.strip())
    return queries.text_query(words), f"%{escaped}%"


def _encode(key):
    return base64.urlsafe_b64encode(json.dumps(list(key)).encode()).decode().rstrip("=")


def _decode(cursor):
    if not cursor:
        return None
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        # jsonbody's limits: a cursor is the client's text (a page's address),
        # and one nested thousands deep, or holding a lone surrogate, was a 500.
        segment, updated_at, conversation_id = jsonbody.loads(raw)
        datetime.fromisoformat(updated_at)  # compared with stored times: one of them
    except (binascii.Error, ValueError, TypeError):
        raise ValidationError("cursor", "not a cursor this list gave") from None
    if not isinstance(segment, int):
        raise ValidationError("cursor", "not a cursor this list gave")
    return segment, updated_at, str(conversation_id)


def _row(found):
    last = queries.last_message(found["id"])
    unread = _unread(found)
    return {
        "id": found["id"],
        "state": found["status"],
        "needs_human": found["status"] == "handoff",
        "assigned_to": found["assigned_to"],
        "contact": _contact_summary(found),
        "channel": _named(found, "channel", "type"),
        "agent": _named(found, "agent"),
        "last_activity_at": formats.utc_timestamp(datetime.fromisoformat(found["updated_at"])),
        "last_message": _last_message(last),
        "unread": unread > 0,
        "unread_count": unread,
    }


def _unread(found):
    """The contact's messages after the user's mark (capped at UNREAD_CAP):
    none to count when the contact wrote nothing since."""
    inbound, read = found["last_inbound_at"], found["last_read_at"]
    if inbound is None or (read is not None and inbound <= read):
        return 0
    return queries.unread_count(found["id"], read)


def _contact_summary(found):
    name, phone, email = found["contact_name"], found["contact_phone"], found["contact_email"]
    handle = found["contact_handle"]
    return {
        "id": found["contact_id"],
        "display_name": name or phone or email or handle or "",
        "name": name,
        "phone": phone,
        "email": email,
        "handle": handle,
    }


def _named(found, prefix, *extra):
    if found[f"{prefix}_id"] is None:
        return None
    named = {"id": found[f"{prefix}_id"], "name": found[f"{prefix}_name"]}
    return {**named, **{column: found[f"{prefix}_{column}"] for column in extra}}


def _last_message(last):
    if last is None:
        return None
    kind, text, caption, sender_type, deleted_at, user_id = last
    shown = "" if deleted_at else " ".join((text or caption or "").split())
    if len(shown) > PREVIEW_CHARS:
        shown = shown[: PREVIEW_CHARS - 1].rstrip() + "…"
    return {
        "preview": shown,
        "type": kind,
        "deleted": deleted_at is not None,
        "author": AUTHORS.get(sender_type, sender_type),
        "author_user_id": user_id,  # a person of the team's, named by the page
    }
