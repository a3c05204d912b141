"""Companies, their workspaces, and the API keys that act in one workspace."""

import json
from functools import lru_cache

from peewee import SQL, BooleanField, CharField, ForeignKeyField, IntegerField

from .. import storage
from ..db import database
from .base import BaseModel, JSONField, TimestampedModel, UtcDateTimeField, utcnow
from .dialect import engine
from .fastsql import execute, fetch_one_apart, from_rows, read_apart


class Company(TimestampedModel):
    name = CharField(max_length=200)


class Workspace(TimestampedModel):
    company = ForeignKeyField(Company, backref="workspaces", on_delete="CASCADE")
    name = CharField(max_length=200)
    # The billing plan, by name, and the trial's end (None: no trial). The
    # two *_raised_at record that trial.expiring / trial.expired were raised
    # for the current trial end, so each is raised once, whatever restarts.
    plan = CharField(max_length=50, default="free", constraints=[SQL("DEFAULT 'free'")])
    trial_ends_at = UtcDateTimeField(null=True)
    trial_expiring_raised_at = UtcDateTimeField(null=True)
    trial_expired_raised_at = UtcDateTimeField(null=True)

    class Meta:
        indexes = ((("trial_ends_at",), False),)

    @classmethod
    def trials_to_raise(cls, now, warning):
        """Workspaces whose trial is within `warning` of its end, or past it,
        with an event of it still to raise."""
        return cls.select().where(
            cls.trial_ends_at.is_null(False)
            & cls.trial_expired_raised_at.is_null()
            & (
                (cls.trial_ends_at <= now)
                | ((cls.trial_ends_at <= now + warning) & cls.trial_expiring_raised_at.is_null())
            )
        )

    @classmethod
    def mark_raised(cls, workspace_id, field, trial_ends_at, now):
        """Set `field` if unset for this trial end; True when this call set it
        (of two processes at once, one wins and raises the event)."""
        query = cls.update({field: now}).where(
            (cls.id == workspace_id) & field.is_null() & (cls.trial_ends_at == trial_ends_at)
        )
        return query.execute() == 1

    @staticmethod
    @lru_cache(maxsize=4096)
    def company_of(workspace_id):
        """The company of a workspace. A workspace never changes company, so
        the answer is cached for the life of the process."""
        return Workspace.select(Workspace.company).where(Workspace.id == workspace_id).scalar()


class ScopesField(JSONField):
    """A key's scopes, read on every request. Keys share a handful of scope
    sets, so each stored set is decoded once and then shared, as a tuple
    that no caller can change."""

    def python_value(self, value):
        return None if value is None else _decoded_scopes(value)


@lru_cache(maxsize=256)
def _decoded_scopes(stored):
    return tuple(json.loads(stored))


class ApiKey(TimestampedModel):
    """A key is shown once; only the SHA-256 of the whole key is stored.

    `lookup_id` is the random public part embedded in the key, so a request
    finds its row by an indexed equality and then compares the hash in
    constant time.

    A key minted by another key (POST /workspaces/permissions) records that
    `parent`, and the `root` of the chain: the first key, made by the CLI or
    at first start, whose own `parent` and `root` are None. Revoking a key
    revokes every key minted from it; the rate limit counts a key's requests
    against its root, so minting never multiplies it.
    """

    workspace = ForeignKeyField(Workspace, backref="api_keys", on_delete="CASCADE")
    name = CharField(max_length=200)
    lookup_id = CharField(max_length=32, unique=True)
    key_hash = CharField(max_length=64)
    scopes = ScopesField()
    last_used_at = UtcDateTimeField(null=True)
    revoked_at = UtcDateTimeField(null=True)
    parent = ForeignKeyField("self", null=True, backref="children", on_delete="CASCADE")
    root = ForeignKeyField("self", null=True, backref="descendants", on_delete="CASCADE")

    @classmethod
    def by_lookup_id(cls, lookup_id):
        """The key with this lookup id. Every request runs this: plain SQL
        spares peewee's query building and row loading, and the read apart
        the pool's checkout (fastsql.fetch_one_apart). On SQLite outside a
        transaction, a key read once is kept (KEPT_KEYS)."""
        if engine.postgresql or database.connection_in_transaction():
            return fetch_one_apart(cls, 'SELECT * FROM "api_key" WHERE "lookup_id" = ?', lookup_id)
        return KEPT_KEYS.get(lookup_id)

    @classmethod
    def counted_by_lookup_id(cls, lookup_id, key_hash, window):
        """PostgreSQL only (migration 0029): the key with this lookup id
        and, when `key_hash` is its hash and it is live, its hit counted
        by the database's clock against its root's `window` (limiter name,
        limit, seconds), in one statement: (the key or None, the hit as
        rate_limit_hit gives it or None when nothing was counted)."""
        alone = not database.in_transaction()  # then its commit need not wait for the disk
        cursor = execute(_KEY_ADMITTED, lookup_id, key_hash, *window, alone)
        row = cursor.fetchone()
        if row is None:
            return None, None
        hit = row[-_HIT_COLUMNS:]
        columns = [column[0] for column in cursor.description[:-_HIT_COLUMNS]]
        return from_rows(cls, columns, [row])[0], None if hit[0] is None else hit

    @classmethod
    def of_workspace(cls, workspace_id, is_revoked=None):
        query = cls.select().where(cls.workspace == workspace_id)
        if is_revoked is not None:
            query = query.where(cls.revoked_at.is_null(not is_revoked))
        return query

    @classmethod
    def in_workspace_by_id(cls, workspace_id, key_id):
        return cls.get_or_none((cls.workspace == workspace_id) & (cls.id == key_id))

    @property
    def company_id(self):
        return Workspace.company_of(self.workspace_id)

    @property
    def is_revoked(self):
        return self.revoked_at is not None

    @property
    def rate_limit_id(self):
        """What the rate limit counts this key's requests against: its root."""
        return self.root_id or self.id

    def revoke(self, now=None):
        """Revoke this key (unless it is already) and every live key minted
        from it, directly or through others, all with the same time; never a
        key of another workspace. Returns how many others were revoked. The
        caller holds the transaction that makes it all or nothing."""
        now = now or utcnow()
        if self.revoked_at is None:
            self.revoked_at = now
            self.save()
        workspace = self.workspace_id
        minted = (
            ApiKey.select(ApiKey.id)
            .where((ApiKey.parent == self.id) & (ApiKey.workspace == workspace))
            .cte("minted", recursive=True, columns=("id",))
        )
        below = ApiKey.alias()
        minted = minted.union(
            below.select(below.id)
            .join(minted, on=(below.parent == minted.c.id))
            .where(below.workspace == workspace)
        )
        # The WITH inside the subquery: an UPDATE that starts with WITH has
        # no row count in Python's sqlite3.
        query = ApiKey.update(revoked_at=now, updated_at=now).where(
            ApiKey.id.in_(minted.select_from(minted.c.id))
            & ApiKey.revoked_at.is_null()
            & (ApiKey.workspace == workspace)
        )
        return query.execute()

    def touch(self, now):
        """Record use without rewriting updated_at (that tracks edits). Not
        while the database cannot take writes: a read does not fail for it."""
        try:
            ApiKey.update(last_used_at=now).where(ApiKey.id == self.id).execute()
        except Exception as error:
            if storage.failed(error) is None:
                raise
            return
        self.last_used_at = now


class KeysVersion(BaseModel):
    """One row, whose version every change of an API key moves forward (the
    triggers of migration 0030, on SQLite): while it stands, a key read
    before is still what the database holds. PostgreSQL has the table but
    no triggers: it reads a key with its rate-limit hit in one statement
    (counted_by_lookup_id) and keeps none."""

    id = IntegerField(primary_key=True)
    version = IntegerField()

    class Meta:
        table_name = "keys_version"


class KeptKeys:
    """SQLite's keys as requests named them, each with the keys' version it
    was read at. Reading the version is one statement on a one-row table;
    reading and loading the key was four times that, amid a request. A key
    revoked, changed or deleted by any process moves the version, so the
    next request reads it anew: no revocation waits. At most `most` keys
    are kept (past that, all are forgotten at once: a miss costs a read)."""

    _VERSION = 'SELECT "version" FROM "keys_version"'
    # The version and the key in one statement: one snapshot, so the key
    # kept is never older than the version it is kept with.
    _VERSION_AND_KEY = (
        'SELECT v."version", k.* FROM "keys_version" AS v'
        ' LEFT JOIN "api_key" AS k ON k."lookup_id" = ?'
    )

    def __init__(self, most):
        self.most = most
        self._kept = {}  # (database file, lookup id) -> (version, columns, row)

    def get(self, lookup_id):
        """The key with this lookup id, or None. Outside a transaction only."""
        place = (database.database, lookup_id)
        kept = self._kept.get(place)
        if kept is None or kept[0] != read_apart(self._VERSION)[1][0][0]:
            kept = self._read(place, lookup_id)
        return None if kept is None else from_rows(ApiKey, kept[1], [kept[2]])[0]

    def _read(self, place, lookup_id):
        """What is kept of the key now read, or None when there is no such key."""
        description, rows = read_apart(self._VERSION_AND_KEY, lookup_id)
        version, *row = rows[0]
        if row[0] is None:
            return None  # unknown ids are not kept: anyone can make them up
        if len(self._kept) >= self.most:
            self._kept.clear()
        columns = tuple(column[0] for column in description[1:])
        self._kept[place] = kept = (version, columns, tuple(row))
        return kept


KEPT_KEYS = KeptKeys(most=10_000)


class RuntimeFlag(BaseModel):
    """On/off switches changed while the service runs (maintenance mode),
    shared by every process through the database."""

    id = CharField(primary_key=True, max_length=100)
    is_enabled = BooleanField(default=False)

    @classmethod
    def is_on(cls, name):
        row = cls.get_or_none(cls.id == name)
        return bool(row and row.is_enabled)

    @classmethod
    def set(cls, name, enabled):
        cls.insert(id=name, is_enabled=enabled).on_conflict(
            conflict_target=[cls.id], preserve=[cls.is_enabled]
        ).execute()


# After the key's columns, the hit's four, as rate_limit_hit gives them.
_HIT_COLUMNS = 4
_KEY_ADMITTED = (
    'SELECT (a."api_key").*, a."hit_allowed", a."hit_counted", a."hit_oldest", a."hit_now"'
    ' FROM "api_key_admitted"(?, ?, ?, ?, ?, ?) AS a'
)
