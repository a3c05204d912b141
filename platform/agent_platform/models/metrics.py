"""The figures /metrics shows, read at scrape time.

Counts that only grow come from tallies the triggers of migration 0022 keep
(a few rows per workspace, whatever the traffic; on PostgreSQL each is
spread over slots, one per concurrent writer, which migration 0026 adds and
the readers here add up); queue depths are counts of
the queues themselves, each over an index that holds only what waits, so a
scrape costs the same on a database of a million messages as on an empty
one. Every query takes a workspace id, or None for every workspace (the
operator's listen address); rows come back with the workspace id first.

The queries are written once for both engines: `?` stands for the engine's
placeholder (_execute), and SQLite's INDEXED BY, which only makes sure its
planner takes the partial index, is left out on PostgreSQL, whose planner
picks such an index by itself.
"""

from peewee import CharField, CompositeKey, FloatField, ForeignKeyField, IntegerField, Model

from ..db import database, is_postgresql
from .tenancy import Workspace


class MessageTally(Model):
    workspace = ForeignKeyField(Workspace, on_delete="CASCADE", index=False)
    channel_type = CharField(max_length=20)  # "none": a message without a channel
    direction = CharField(max_length=10)
    status = CharField(max_length=20)
    messages = IntegerField()

    class Meta:
        database = database
        table_name = "message_tally"
        primary_key = CompositeKey("workspace", "channel_type", "direction", "status")
        without_rowid = True


class SendErrorTally(Model):
    workspace = ForeignKeyField(Workspace, on_delete="CASCADE", index=False)
    channel_type = CharField(max_length=20)
    errors = IntegerField()

    class Meta:
        database = database
        table_name = "send_error_tally"
        primary_key = CompositeKey("workspace", "channel_type")
        without_rowid = True


class DeliveryTally(Model):
    workspace = ForeignKeyField(Workspace, on_delete="CASCADE", index=False)
    counted = CharField(max_length=10)  # "attempt" or "delivery"
    outcome = CharField(max_length=20)  # success/failure; succeeded/failed
    times = IntegerField()

    class Meta:
        database = database
        table_name = "delivery_tally"
        primary_key = CompositeKey("workspace", "counted", "outcome")
        without_rowid = True


class ReplyLatencyTally(Model):
    workspace = ForeignKeyField(Workspace, on_delete="CASCADE", index=False)
    le = CharField(max_length=10)  # the bucket's upper bound in seconds, or "+Inf"
    replies = IntegerField()
    seconds = FloatField()

    class Meta:
        database = database
        table_name = "reply_latency_tally"
        primary_key = CompositeKey("workspace", "le")
        without_rowid = True


# The bounds the trigger sorts replies into, in seconds (the migration's CASE).
REPLY_LATENCY_BOUNDS = ("1", "2", "5", "10", "30", "60", "120", "300", "+Inf")


def message_tallies(workspace_id):
    """(workspace, channel type, direction, status, messages) rows."""
    keys = '"channel_type", "direction", "status"'
    return _tallies("message_tally", keys, _total("messages"), workspace_id)


# One more failed send in the caller's transaction, on PostgreSQL in the
# slot it holds (migration 0026's tally_slot).
_COUNT_SEND_ERROR = {
    False: 'INSERT INTO "send_error_tally" ("workspace_id", "channel_type", "errors")'
    ' VALUES (?, ?, 1) ON CONFLICT ("workspace_id", "channel_type")'
    ' DO UPDATE SET "errors" = "send_error_tally"."errors" + 1',
    True: 'INSERT INTO "send_error_tally" ("workspace_id", "channel_type", "slot", "errors")'
    ' VALUES (?, ?, "tally_slot"(), 1) ON CONFLICT ("workspace_id", "channel_type", "slot")'
    ' DO UPDATE SET "errors" = "send_error_tally"."errors" + 1',
}


def count_send_error(workspace_id, channel_type):
    """One more failed attempt to send a message (in the caller's transaction)."""
    _execute(_COUNT_SEND_ERROR[is_postgresql()], workspace_id, channel_type)


def send_error_tallies(workspace_id):
    """(workspace, channel type, errors) rows."""
    return _tallies("send_error_tally", '"channel_type"', _total("errors"), workspace_id)


def delivery_tallies(workspace_id):
    """(workspace, counted, outcome, times) rows."""
    keys = '"counted", "outcome"'
    return _tallies("delivery_tally", keys, _total("times"), workspace_id)


def reply_latency_tallies(workspace_id):
    """(workspace, le, replies, seconds) rows."""
    totals = f'{_total("replies")}, sum("seconds")'
    return _tallies("reply_latency_tally", '"le"', totals, workspace_id)


def _total(column):
    # PostgreSQL's sum of a BIGINT is a NUMERIC (a Decimal in Python).
    return f'CAST(sum("{column}") AS BIGINT)'


def _tallies(table, keys, totals, workspace_id):
    """`table`'s rows, each key's slots added up (SQLite has one per key)."""
    sql = f'SELECT "workspace_id", {keys}, {totals} FROM "{table}"'
    return _rows(sql, workspace_id, group=True, by=keys)


def messages_to_send(workspace_id):
    """(workspace, queued messages) rows: the partial index of queued messages."""
    sql = (
        f'SELECT c."workspace_id", count(*) FROM "message" m {_indexed_by("message_queued")}'
        ' JOIN "conversation" c ON c."id" = m."conversation_id" WHERE m."status" = \'queued\''
    )
    return _rows(sql, workspace_id, column='c."workspace_id"', group=True)


def deliveries_due(workspace_id, now):
    """(workspace, pending deliveries whose next attempt is due) rows."""
    sql = (
        'SELECT w."workspace_id", count(*) FROM "delivery" d'
        + _indexed_by("delivery_status_next_attempt_at")
        + ' JOIN "webhook" w ON w."id" = d."webhook_id"'
        ' WHERE d."status" = \'pending\' AND d."next_attempt_at" <= ?'
    )
    return _rows(sql, workspace_id, now, column='w."workspace_id"', group=True)


def replies_pending(workspace_id):
    """(workspace, state, jobs) rows: reply jobs waiting or being answered."""
    sql = (
        'SELECT "workspace_id", "status", count(*) FROM "reply_job"'
        + _indexed_by("reply_job_status_due_at")
        + " WHERE \"status\" IN ('pending', 'running')"
    )
    return _rows(sql, workspace_id, group=True, by='"status"')


def handoffs_waiting(workspace_id):
    """(workspace, conversations a person holds) rows: one index range per
    workspace (grouping the whole table by workspace would read every
    conversation's index entry)."""
    sql = (
        'SELECT w."id", (SELECT count(*) FROM "conversation" c'
        ' WHERE c."workspace_id" = w."id" AND c."status" = \'handoff\') FROM "workspace" w'
    )
    if workspace_id is None:
        return _execute(sql).fetchall()
    return _execute(sql + ' WHERE w."id" = ?', workspace_id).fetchall()


def workspace_ids():
    return [row[0] for row in _execute('SELECT "id" FROM "workspace" ORDER BY "id"').fetchall()]


def database_bytes():
    """The database's size: the SQLite file's pages (the write-ahead log
    apart), or what PostgreSQL's pg_database_size tells."""
    if is_postgresql():
        return _execute("SELECT pg_database_size(current_database())").fetchone()[0]
    pages = _execute("PRAGMA page_count").fetchone()[0]
    return pages * _execute("PRAGMA page_size").fetchone()[0]


def _indexed_by(index):
    return "" if is_postgresql() else f' INDEXED BY "{index}"'


def _execute(sql, *params):
    """`sql` with `?` for each of `params`, on either engine."""
    return database.execute_sql(sql.replace("?", database.param), params)


def _rows(sql, workspace_id, *params, column='"workspace_id"', group=False, by=None):
    """`sql` narrowed to one workspace (or not), grouped by workspace (and `by`)."""
    params = list(params)
    if workspace_id is not None:
        sql += (" AND " if " WHERE " in sql else " WHERE ") + f"{column} = ?"
        params.append(workspace_id)
    if group:
        sql += f" GROUP BY {column}" + (f", {by}" if by else "")
    return _execute(sql, *params).fetchall()
