"""Rate-limit windows kept in the database, which every process shares.

One row per limiter and key holds the Unix times of the requests counted in
its window, oldest first. A request reads its row locked (the upsert below
locks it on PostgreSQL until the transaction ends; on SQLite the write
transaction holds the whole database), so two processes counting the same
key take turns and the count stays exact. Times come from the database's
clock, the one clock every process and machine agrees on, unless the caller
gives its own now (tests drive the window with a clock of theirs). On
PostgreSQL a hit by the database's clock is one statement (counted_hit), so
a turn lasts no round trip.
"""

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
    hits = TextField()  # Unix times, oldest first, separated by spaces
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
    PostgreSQL by the database's clock in one statement (migration 0026's
    rate_limit_hit): the key's row is every server's turn for that key, held
    to the commit, so no round trip is made holding it."""
    if is_postgresql() and now is None:
        alone = not database.in_transaction()
        return database.execute_sql(_HIT, (limiter, key, limit, window, alone)).fetchone()
    with database.atomic():
        hits, now = locked_window(limiter, key, now)
        hits = [hit for hit in hits if hit > now - window]
        allowed = len(hits) < limit
        if allowed:
            hits.append(now)
        store_window(limiter, key, hits, hits[-1] + window)
    return allowed, len(hits), hits[0], now


_HIT = 'SELECT * FROM "rate_limit_hit"(?, ?, ?, ?, ?)'


def locked_window(limiter, key, now=None):
    """The times counted for `key` (oldest first) and `now` (None: the
    database's), the row locked for the rest of the transaction (made if
    missing)."""
    param = database.param
    row = database.execute_sql(
        "INSERT INTO rate_limit_window (limiter, key, hits, expires_at) "
        f"VALUES ({param}, {param}, '', 0) ON CONFLICT (limiter, key) "
        "DO UPDATE SET hits = rate_limit_window.hits "
        f"RETURNING hits, COALESCE(CAST({param} AS DOUBLE PRECISION), {_NOW[is_postgresql()]})",
        (limiter, key, now),
    ).fetchone()
    return [float(hit) for hit in row[0].split()], row[1]


def store_window(limiter, key, hits, expires_at):
    param = database.param
    database.execute_sql(
        f"UPDATE rate_limit_window SET hits = {param}, expires_at = {param} "
        f"WHERE limiter = {param} AND key = {param}",
        (" ".join(repr(hit) for hit in hits), expires_at, limiter, key),
    )


def prune_windows():
    """Forget the windows whose every hit has left; the number forgotten."""
    cursor = database.execute_sql(
        f"DELETE FROM rate_limit_window WHERE expires_at < {_NOW[is_postgresql()]}"
    )
    return cursor.rowcount
