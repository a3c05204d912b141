"""Rate-limit windows kept in the database, which every process shares.

One row per limiter and key holds the hits counted in its window, in
SLICES slices of the window (oldest first): each slice's number, its count
of hits and the time of its last one. A hit then costs the same whatever
the rate: a list of every hit's time made a key allowed thousands a second
rewrite thousands of times at each request. A slice leaves the window when
its last hit does, so the count is strict: never more than the limit in any
window, and a refusal at most one slice (a 64th of the window) earlier than
counting hit by hit would give; a refused request is told to retry when the
oldest slice leaves, when room is made.

A request reads its row locked (the upsert below locks it on PostgreSQL
until the transaction ends; on SQLite the write transaction holds the whole
database), so two processes counting the same key take turns. Times come
from the database's clock, the one clock every process and machine agrees
on, unless the caller gives its own now (tests drive the window with a
clock of theirs). On PostgreSQL a hit by the database's clock is one
statement (counted_hit; migration 0027's rate_limit_hit, the same
arithmetic), so a turn lasts no round trip.
"""

import math

from peewee import CharField, CompositeKey, DoubleField, Model, TextField

from ..db import database, is_postgresql

# The database's clock in Unix seconds (SQLite's julianday('now') has
# millisecond precision).
_NOW = {
    False: "(julianday('now') - 2440587.5) * 86400.0",
    True: "extract(epoch FROM clock_timestamp())::double precision",
}


class RateLimitWindow(Model):
    limiter = CharField(max_length=40)
    key = TextField()
    hits = TextField()  # slices "number:count:last hit" (Unix time), oldest first
    expires_at = DoubleField()  # when the newest hit leaves the window

    class Meta:
        database = database
        table_name = "rate_limit_window"
        primary_key = CompositeKey("limiter", "key")
        indexes = ((("expires_at",), False),)


def counted_hit(limiter, key, limit, window, now=None):
    """Count a hit of `key` at `now` (None: the database's clock) in its
    window of `window` seconds if it holds fewer than `limit`: (whether it
    was counted, the hits the window holds, the oldest of them, now). On
    PostgreSQL by the database's clock in one statement (migration 0027's
    rate_limit_hit): the key's row is every server's turn for that key, held
    to the commit, so no round trip is made holding it."""
    if is_postgresql() and now is None:
        alone = not database.in_transaction()
        return database.execute_sql(_HIT, (limiter, key, limit, window, alone)).fetchone()
    with database.atomic():
        slices, now = locked_window(limiter, key, now)
        slices = [piece for piece in slices if piece[2] > now - window]
        held = sum(count for _, count, _ in slices)
        allowed = held < limit
        if allowed:
            slices, held = _with_hit(slices, now, window), held + 1
        store_window(limiter, key, slices, slices[-1][2] + window)
    return allowed, held, slices[0][2], now


SLICES = 64


def _with_hit(slices, now, window):
    """`slices` with a hit at `now`: in the newest slice if `now` falls in
    it (or before it: another machine's clock), else in a new one."""
    number = math.floor(now / (window / SLICES))
    if slices and slices[-1][0] >= number:
        newest, count, last = slices[-1]
        return [*slices[:-1], (newest, count + 1, max(last, now))]
    return [*slices, (number, 1, now)]


_HIT = 'SELECT * FROM "rate_limit_hit"(?, ?, ?, ?, ?)'


def locked_window(limiter, key, now=None):
    """The slices counted for `key` (oldest first: number, count, last hit)
    and `now` (None: the database's), the row locked for the rest of the
    transaction (made if missing)."""
    param = database.param
    row = database.execute_sql(
        "INSERT INTO rate_limit_window (limiter, key, hits, expires_at) "
        f"VALUES ({param}, {param}, '', 0) ON CONFLICT (limiter, key) "
        "DO UPDATE SET hits = rate_limit_window.hits "
        f"RETURNING hits, COALESCE(CAST({param} AS DOUBLE PRECISION), {_NOW[is_postgresql()]})",
        (limiter, key, now),
    ).fetchone()
    return [_slice(text) for text in row[0].split()], row[1]


def _slice(text):
    number, count, last = text.split(":")
    return int(number), int(count), float(last)


def store_window(limiter, key, slices, expires_at):
    param = database.param
    database.execute_sql(
        f"UPDATE rate_limit_window SET hits = {param}, expires_at = {param} "
        f"WHERE limiter = {param} AND key = {param}",
        (
            " ".join(f"{number}:{count}:{last!r}" for number, count, last in slices),
            expires_at,
            limiter,
            key,
        ),
    )


def prune_windows():
    """Forget the windows whose every hit has left; the number forgotten."""
    cursor = database.execute_sql(
        f"DELETE FROM rate_limit_window WHERE expires_at < {_NOW[is_postgresql()]}"
    )
    return cursor.rowcount
