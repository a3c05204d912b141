"""The API key every request reads first, and the version of a page kept,
are read on SQLite's connection for reads apart (db.read_apart), not on a
pooled one: what that read sees, and that a request whose view reads
nothing else (or serves a page kept) takes no pooled connection. On
SQLite a key read once is kept while the keys' version stands
(models.tenancy.KeptKeys): a change by any process reaches the next request."""

import sqlite3
from contextlib import closing

import pytest

from agent_platform.db import database, transaction
from agent_platform.services import keys
from conftest import assert_error
from sql_trace import statements_traced


def changed_elsewhere(app, sql, *params):
    """`sql` committed by a connection of its own, as another process (the
    CLI) would; how many rows it changed."""
    with closing(sqlite3.connect(app.config["DATABASE_PATH"])) as elsewhere:
        elsewhere.execute("PRAGMA foreign_keys = ON")
        with elsewhere:
            return elsewhere.execute(sql, params).rowcount


def lookup_id(caller):
    return caller.key.split("_", 2)[1]


@pytest.mark.sqlite_only(reason="another process's write, made through SQLite's own module")
def test_a_key_revoked_by_another_process_is_refused_at_its_next_request(app, caller):
    assert caller.get("/v1/me").status_code == 200  # the key kept, the connection apart open
    revoke = "UPDATE api_key SET revoked_at = '2026-11-30 00:00:00+00:00' WHERE lookup_id = ?"
    assert changed_elsewhere(app, revoke, lookup_id(caller)) == 1
    assert_error(caller.get("/v1/me"), 401, "INVALID_API_KEY")


@pytest.mark.sqlite_only(reason="another process's write, made through SQLite's own module")
def test_scopes_narrowed_by_another_process_apply_at_the_next_request(app, caller):
    assert caller.get("/v1/agents").status_code == 200
    narrow = """UPDATE api_key SET scopes = '["contacts:read"]' WHERE lookup_id = ?"""
    assert changed_elsewhere(app, narrow, lookup_id(caller)) == 1
    assert_error(caller.get("/v1/agents"), 403, "INSUFFICIENT_SCOPE")
    assert caller.get("/v1/contacts").status_code == 200


@pytest.mark.sqlite_only(reason="another process's write, made through SQLite's own module")
def test_a_key_of_a_workspace_deleted_by_another_process_is_refused(app, caller):
    assert caller.get("/v1/me").status_code == 200
    deleted = changed_elsewhere(app, "DELETE FROM workspace WHERE id = ?", caller.workspace_id)
    assert deleted == 1  # its keys go with it, by the foreign key's cascade
    assert_error(caller.get("/v1/me"), 401, "INVALID_API_KEY")


@pytest.mark.sqlite_only(reason="the statements SQLite's connection apart runs")
def test_a_kept_key_is_not_read_again_while_no_key_changes(caller, other):
    assert caller.get("/v1/me").status_code == 200  # read, and its first use recorded
    assert caller.get("/v1/me").status_code == 200  # read again: the record moved the version
    with statements_traced() as seen:
        for _ in range(3):
            assert caller.get("/v1/me").status_code == 200
    assert not [sql for sql in seen if '"api_key"' in sql]
    assert len([sql for sql in seen if '"keys_version"' in sql]) == 3
    keys.create_key(other.workspace_id, "another", ["agents:read"])  # any key's change
    with statements_traced() as seen:
        assert caller.get("/v1/me").status_code == 200
    assert len([sql for sql in seen if '"api_key"' in sql]) == 1


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
