"""The team's inbox: what each user has read, and the queries of its pages.

A page of the list is found in two steps: the ids in order, each status a
range of one index read in its order (so page N costs what page 1 costs),
then what the page shows of those few conversations. Times are compared as
stored (text), the form cursors carry; PostgreSQL's timestamps are read
back in that form too (_as_stored). The choices (which statuses, in
which order, what a row shows) are services/inbox.py's.
"""

from datetime import datetime

from peewee import CharField, CompositeKey, DateTimeField, ForeignKeyField, Model

from ..db import database
from .appointments import Appointment
from .clarifications import Clarification
from .conversations import Conversation
from .custom_fields import CustomField
from .dialect import engine
from .fastsql import execute, fetch_all
from .messages import Message
from .tenancy import Workspace

# Unread messages are counted up to this (the page shows "99+").
UNREAD_CAP = 100
# Before every stored time, on either engine (a user who never read a conversation).
_EARLIEST = "0001-01-01 00:00:00"


def _as_stored(row):
    """A row with its times as SQLite stores them (str(datetime)): the form
    of cursors and of comparisons here. PostgreSQL's driver reads datetimes."""
    if row is None or not engine.postgresql:
        return row
    return tuple(str(value) if isinstance(value, datetime) else value for value in row)


class ConversationRead(Model):
    """Per user and conversation: the time of the newest message when the
    user last read it. `user_id` is a plain string (users are another
    module's, with no foreign key to them)."""

    user_id = CharField(max_length=200)
    conversation = ForeignKeyField(Conversation, on_delete="CASCADE")
    workspace = ForeignKeyField(Workspace, on_delete="CASCADE", index=False)
    last_read_at = DateTimeField()
    last_read_message_id = CharField(max_length=36, null=True)

    class Meta:
        database = database
        table_name = "conversation_reads"
        primary_key = CompositeKey("user_id", "conversation")
        without_rowid = True


def mark_read(workspace_id, user_id, conversation_id, read_at, message_id):
    execute(
        'INSERT INTO "conversation_reads" ("user_id", "conversation_id", "workspace_id", '
        '"last_read_at", "last_read_message_id") VALUES (?, ?, ?, ?, ?) '
        'ON CONFLICT ("user_id", "conversation_id") DO UPDATE SET '
        '"last_read_at" = excluded."last_read_at", '
        '"last_read_message_id" = excluded."last_read_message_id"',
        user_id,
        conversation_id,
        workspace_id,
        read_at,
        message_id,
    )


def newest_message(conversation_id):
    """(created_at as stored, id) of the conversation's newest message, or None."""
    sql = (
        'SELECT "created_at", "id" FROM "message" WHERE "conversation_id" = ? '
        'ORDER BY "created_at" DESC, "id" DESC LIMIT 1'
    )
    return _as_stored(execute(sql, conversation_id).fetchone())


# -- The list ------------------------------------------------------------------


def ordered_ids(workspace_id, status, filters, after, limit, condition=None):
    """[(updated_at, id)] of the workspace's conversations in `status`, newest
    activity first, after the keyset `after` ((updated_at, id) or None).

    `filters` are equalities by column (channel_id, agent_id, assigned_to):
    the index starting with the workspace and the filtered column serves them.
    `condition` (SQL and parameters) is tested on each row in that order.
    """
    equal = {"workspace_id": workspace_id, "status": status, **filters}
    conditions, params = _equalities("", equal)
    if condition is not None:
        conditions.append(condition[0])
        params += condition[1]
    if after is not None:
        conditions.append('"updated_at" <= ? AND ("updated_at" < ? OR "id" < ?)')
        params += [after[0], after[0], after[1]]
    sql = (
        f'SELECT "updated_at", "id" FROM "conversation" WHERE {" AND ".join(conditions)} '
        'ORDER BY "updated_at" DESC, "id" DESC LIMIT ?'
    )
    return [_as_stored(row) for row in execute(sql, *params, limit).fetchall()]


def matching_keys(workspace_id, segments, filters, after, limit, matching):
    """[(segment, updated_at, id)] of the conversations a search matched
    (`matching`: SQL and parameters selecting their ids), in the list's
    order: by segment (the index in `segments` of the statuses holding
    theirs), newest activity first, after the keyset `after`.

    The search's ids are found once and drive the query: the unary + keeps
    SQLite from walking an index of the whole workspace to test each one.
    """
    statuses = [status for segment in segments for status in segment]
    marks = ", ".join("?" * len(statuses))
    cases = " ".join(
        f'WHEN "status" IN ({", ".join("?" * len(segment))}) THEN {index}'
        for index, segment in enumerate(segments)
    )
    conditions, params = _equalities("+", {"workspace_id": workspace_id, **filters})
    conditions += [f'+"status" IN ({marks})', f'"id" IN ({matching[0]})']
    params += [*statuses, *matching[1]]
    sql = f'SELECT CASE {cases} END AS "segment", "updated_at", "id" FROM "conversation" WHERE '
    sql += " AND ".join(conditions)
    if after is not None:
        keyset = (
            '("segment" > ? OR ("segment" = ? AND ("updated_at" < ? '
            'OR ("updated_at" = ? AND "id" < ?))))'
        )
        # PostgreSQL's WHERE cannot name a column of the SELECT: one level up.
        if engine.postgresql:
            sql = f"SELECT * FROM ({sql}) AS listed WHERE {keyset}"
        else:
            sql += f" AND {keyset}"
        params += [after[0], after[0], after[1], after[1], after[2]]
    sql += ' ORDER BY "segment", "updated_at" DESC, "id" DESC LIMIT ?'
    return [_as_stored(row) for row in execute(sql, *statuses, *params, limit).fetchall()]


def _equalities(plus, equal):
    conditions = [f'{plus}"{column}" = ?' for column in equal]
    return conditions, list(equal.values())


def text_query(words):
    """The message index's query of `words` (what a person typed, cut into
    words): all of them, each a quoted string (never syntax), the last a
    prefix, as it may still be being typed. FTS5's syntax, or PostgreSQL's
    tsquery (read in the message_words configuration: accents folded)."""
    if engine.postgresql:
        return " & ".join(f"'{word}'" for word in words) + ":*"
    return " ".join(f'"{word}"' for word in words) + "*"


def _text_index():
    """(key column, condition) of message_fts rows matching a text_query."""
    if engine.postgresql:
        return '"search_rowid"', """"document" @@ to_tsquery('message_words', ?)"""
    return "rowid", '"message_fts" MATCH ?'


def _contacts():
    """(FROM, WHERE) of the workspace's contacts whose name is LIKE a
    pattern: SQLite's LIKE folds ASCII case, PostgreSQL's ILIKE does; SQLite
    reads the names from their index (the contact rows are larger)."""
    if engine.postgresql:
        return '"contact" AS k', 'k."workspace_id" = ? AND k."name" ILIKE ? ESCAPE \'\\\''
    return (
        '"contact" AS k INDEXED BY "contact_workspace_id_name"',
        """k."workspace_id" = ? AND k."name" LIKE ? ESCAPE '\\'""",
    )


def text_hits_reach(text_query, count):
    """Whether `text_query` matches at least `count` messages (of any workspace)."""
    condition = _text_index()[1]
    sql = f'SELECT count(*) FROM (SELECT 1 FROM "message_fts" WHERE {condition} LIMIT ?) AS hits'
    return execute(sql, text_query, count).fetchone()[0] >= count


def search_condition(workspace_id, text_query, name_pattern):
    """SQL and parameters testing one conversation against a search (see
    search_matches): for words so common that walking the list in its order
    finds a page sooner than collecting every conversation they match. The
    message index is read per conversation; the matching rowids and
    contacts are found once per statement."""
    (key, matches), (contacts, named) = _text_index(), _contacts()
    sql = (
        '(EXISTS (SELECT 1 FROM "message" AS m WHERE m."conversation_id" = "conversation"."id" '
        f'AND m."search_rowid" IN (SELECT {key} FROM "message_fts" WHERE {matches})) '
        f'OR "contact_id" IN (SELECT k."id" FROM {contacts} WHERE {named}))'
    )
    return sql, [text_query, workspace_id, name_pattern]


def search_matches(workspace_id, text_query, name_pattern):
    """SQL and parameters selecting the ids of conversations with a message
    matching `text_query` (see text_query; None: none) or whose contact's
    name is LIKE `name_pattern` (escaped with \\)."""
    (key, matches), (contacts, named) = _text_index(), _contacts()
    parts, params = [], []
    if text_query:
        parts.append(
            'SELECT m."conversation_id" FROM "message_fts" AS f '
            f'JOIN "message" AS m ON m."search_rowid" = f.{key} WHERE {matches}'
        )
        params.append(text_query)
    parts.append(
        f'SELECT v."id" FROM {contacts} JOIN "conversation" AS v ON v."contact_id" = k."id" '
        f"WHERE {named}"
    )
    params += [workspace_id, name_pattern]
    return " UNION ".join(parts), params


ROW_COLUMNS = (
    "id",
    "status",
    "assigned_to",
    "updated_at",
    "last_inbound_at",
    "contact_id",
    "contact_name",
    "contact_phone",
    "contact_email",
    "contact_handle",
    "channel_id",
    "channel_type",
    "channel_name",
    "agent_id",
    "agent_name",
    "last_read_at",
)
_ROWS_SQL = """
SELECT c."id", c."status", c."assigned_to", c."updated_at", c."last_inbound_at",
    c."contact_id", k."name", k."phone", k."email",
    coalesce(
        (SELECT i."external_id" FROM "contact_identity" AS i
         WHERE i."contact_id" = c."contact_id" AND +i."channel_id" = c."channel_id" LIMIT 1),
        (SELECT i."external_id" FROM "contact_identity" AS i
         WHERE i."contact_id" = c."contact_id" ORDER BY i."created_at" LIMIT 1)),
    c."channel_id", ch."type", ch."name", c."agent_id", a."name", r."last_read_at"
FROM "conversation" AS c
LEFT JOIN "contact" AS k ON k."id" = c."contact_id"
LEFT JOIN "channel" AS ch ON ch."id" = c."channel_id"
LEFT JOIN "agent" AS a ON a."id" = c."agent_id"
LEFT JOIN "conversation_reads" AS r ON r."user_id" = ? AND r."conversation_id" = c."id"
WHERE c."id" IN ({marks}) AND +c."workspace_id" = ?
"""


def rows(workspace_id, user_id, ids):
    """{id: {column: value}} of what the list shows of the conversations `ids`."""
    if not ids:
        return {}
    sql = _ROWS_SQL.format(marks=", ".join("?" * len(ids)))
    found = map(_as_stored, execute(sql, user_id, *ids, workspace_id).fetchall())
    return {row[0]: dict(zip(ROW_COLUMNS, row, strict=True)) for row in found}


def last_message(conversation_id):
    """(type, text, caption, sender_type, deleted_at, author_user_id) of the
    newest message, or None."""
    sql = (
        'SELECT "type", "text", "caption", "sender_type", "deleted_at", "author_user_id" '
        'FROM "message" '
        'WHERE "conversation_id" = ? ORDER BY "created_at" DESC, "id" DESC LIMIT 1'
    )
    return _as_stored(execute(sql, conversation_id).fetchone())


def unread_count(conversation_id, read_at):
    """The contact's messages after `read_at` (None: all), counted up to UNREAD_CAP."""
    sql = (
        'SELECT count(*) FROM (SELECT 1 FROM "message" WHERE "conversation_id" = ? '
        """AND "created_at" > ? AND "direction" = 'inbound' LIMIT ?) AS "unread" """
    )
    return execute(sql, conversation_id, read_at or _EARLIEST, UNREAD_CAP).fetchone()[0]


# -- Counts --------------------------------------------------------------------


def count_in(workspace_id, statuses, assigned_to=None):
    marks = ", ".join("?" * len(statuses))
    sql = f'SELECT count(*) FROM "conversation" WHERE "workspace_id" = ? AND "status" IN ({marks})'
    params = [workspace_id, *statuses]
    if assigned_to is not None:
        sql += ' AND "assigned_to" = ?'
        params.append(assigned_to)
    return execute(sql, *params).fetchone()[0]


def count_unread(workspace_id, user_id):
    """Conversations a person answers (waiting for a human, or open or
    waiting and assigned to `user_id`) with a message from the contact the
    user has not read. Those the agent handles are left out: nobody reads
    them all, and counting them walked every conversation of the workspace
    (28 ms at 100,000) on each refresh of every open inbox."""
    # Two index ranges (the waiting, the user's open ones), disjoint by status.
    sql = (
        "SELECT count(*) FROM ("
        'SELECT "id", "last_inbound_at" FROM "conversation" '
        'WHERE "workspace_id" = ? AND "status" = \'handoff\' AND "last_inbound_at" IS NOT NULL '
        "UNION ALL "
        'SELECT "id", "last_inbound_at" FROM "conversation" WHERE "workspace_id" = ? '
        # (+: the index on assigned_to, not the one on status, whose
        # open range is most of the workspace)
        'AND "assigned_to" = ? AND +"status" = \'open\' AND +"last_inbound_at" IS NOT NULL'
        ') AS c LEFT JOIN "conversation_reads" AS r '
        'ON r."user_id" = ? AND r."conversation_id" = c."id" '
        'WHERE r."last_read_at" IS NULL OR c."last_inbound_at" > r."last_read_at"'
    )
    return execute(sql, workspace_id, workspace_id, user_id, user_id).fetchone()[0]


# -- A conversation ------------------------------------------------------------


def message_position(conversation_id, message_id):
    """(created_at as stored, id) of a message of the conversation, or None."""
    sql = 'SELECT "created_at", "id" FROM "message" WHERE "id" = ? AND "conversation_id" = ?'
    return _as_stored(execute(sql, message_id, conversation_id).fetchone())


def thread_page(conversation_id, before, limit):
    """The conversation's messages before `before` ((created_at, id) or None:
    the newest), newest first: one range of its (conversation, created_at,
    id) index."""
    sql = 'SELECT * FROM "message" WHERE "conversation_id" = ?'
    params = [conversation_id]
    if before is not None:
        sql += ' AND "created_at" <= ? AND ("created_at" < ? OR "id" < ?)'
        params += [before[0], before[0], before[1]]
    sql += ' ORDER BY "created_at" DESC, "id" DESC LIMIT ?'
    return fetch_all(Message, sql, *params, limit)


def clarifications_asked_in(conversation_id, message_ids):
    """{question message id: Clarification} of the agent's questions among `message_ids`."""
    if not message_ids:
        return {}
    marks = ", ".join("?" * len(message_ids))
    sql = f'SELECT * FROM "clarification" WHERE "conversation_id" = ? AND "message_id" IN ({marks})'
    found = fetch_all(Clarification, sql, conversation_id, *message_ids)
    return {clarification.message_id: clarification for clarification in found}


def active_custom_fields(workspace_id):
    sql = (
        'SELECT * FROM "custom_field" WHERE "workspace_id" = ? AND "is_archived" = 0 '
        'ORDER BY "display_order", "created_at", "id"'
    )
    return fetch_all(CustomField, sql, workspace_id)


def contact_appointments(workspace_id, contact_id, now, upcoming, limit):
    """The contact's appointments starting from `now` on (soonest first) when
    `upcoming`, else those that started before it (latest first)."""
    if upcoming:
        condition, order = '"start_at" >= ?', '"start_at", "id"'
    else:
        condition, order = '"start_at" < ?', '"start_at" DESC, "id" DESC'
    sql = (
        'SELECT * FROM "appointment" WHERE "contact_id" = ? AND "workspace_id" = ? '
        f"AND {condition} ORDER BY {order} LIMIT ?"
    )
    return fetch_all(Appointment, sql, contact_id, workspace_id, now, limit)
