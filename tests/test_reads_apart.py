"""The API key every request reads first, and the version of a page kept,
are read on SQLite's connection for reads apart (db.read_apart), not on a
pooled one: what that read sees, and that a request whose view reads
nothing else (or serves a page kept) takes no pooled connection."""

import sqlite3
from contextlib import closing

import pytest

from agent_platform.db import database, transaction
from agent_platform.services import keys
from conftest import assert_error


@pytest.mark.sqlite_only(reason="another process's write, made through SQLite's own module")
def test_a_key_revoked_by_another_process_is_refused_at_its_next_request(app, caller):
    assert caller.get("/v1/me").status_code == 200  # the connection apart is open now
    with closing(sqlite3.connect(app.config["DATABASE_PATH"])) as elsewhere:
        lookup_id = caller.key.split("_", 2)[1]
        with elsewhere:  # committed, as the CLI's `keys revoke` would
            revoked = elsewhere.execute(
                "UPDATE api_key SET revoked_at = '2026-11-30 00:00:00+00:00' WHERE lookup_id = ?",
                (lookup_id,),
            )
        assert revoked.rowcount == 1
    assert_error(caller.get("/v1/me"), 401, "INVALID_API_KEY")


def test_a_key_made_in_an_open_transaction_authenticates_within_it(app):
    workspace = keys.create_workspace("Shop")
    with transaction() as made:
        key, raw = keys.create_key(workspace.id, "new", ["agents:read"])
        assert keys.authenticate(raw).id == key.id  # its own uncommitted write
        made.rollback()
    with pytest.raises(keys.Unauthorized):
        keys.authenticate(raw)  # rolled back: no such key


@pytest.mark.sqlite_only(reason="the pool of SQLite connections")
def test_requests_that_read_nothing_else_take_no_pooled_connection(caller, monkeypatch):
    assert caller.get("/v1/me").status_code == 200  # the key's first use is recorded: a write
    pool = type(database.obj)
    checkouts = []

    def counted(self):
        checkouts.append(1)
        return original(self)

    original = pool._connect
    monkeypatch.setattr(pool, "_connect", counted)
    database.close()  # the test's own connection back to the pool
    assert caller.get("/v1/me").status_code == 200
    assert checkouts == []
    assert caller.get("/v1/custom-fields").status_code == 200  # its page is rendered
    assert checkouts == [1]
    assert caller.get("/v1/custom-fields").status_code == 200  # and then kept
    assert checkouts == [1]


@pytest.mark.sqlite_only(reason="SQLite's rule for a read-only file")
def test_the_connection_apart_is_not_reused_while_the_pool_reuses_none(caller):
    # SQLite keeps a connection opened on a read-only file read-only for
    # good: while such a storage incident lasts, the pool opens every one
    # anew, and so does the read apart.
    assert caller.get("/v1/me").status_code == 200
    first = database.obj._apart[0]
    database.obj.storage_failed("The database file is read-only.", spends=True)
    try:
        assert caller.get("/v1/me").status_code == 200
        during = database.obj._apart[0]
        assert caller.get("/v1/me").status_code == 200
        assert len({id(first), id(during), id(database.obj._apart[0])}) == 3
    finally:
        database.obj.writes_work()
    assert caller.get("/v1/me").status_code == 200
    kept = database.obj._apart[0]
    assert caller.get("/v1/me").status_code == 200
    assert database.obj._apart[0] is kept
