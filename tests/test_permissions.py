"""Permissions (API keys) of the variant address form: created once with
their secret, listed without it, revoked by a key holding all their scopes."""

import json
import sqlite3

import pytest

from agent_platform.migrate import migration_files, migrations_dir, sqlite_statements
from agent_platform.scopes import SCOPES
from conftest import Caller, assert_error


def create(caller, name="reader", scopes=("agents:read",)):
    response = caller.post("/workspaces/permissions", json={"name": name, "scopes": list(scopes)})
    assert response.status_code == 201, response.get_json()
    return response.get_json()["data"]["permission"]


def listed(caller, query=""):
    response = caller.get(f"/workspaces/permissions{query}")
    assert response.status_code == 200, response.get_json()
    return response.get_json()


def test_the_list_shows_every_key_of_the_workspace_never_a_secret(caller, other):
    made = [create(caller, f"key {i}") for i in range(3)]
    create(other, "elsewhere")
    body = listed(caller)
    assert body["success"] is True
    assert body["pagination"] == {"page": 1, "limit": 20, "total": 4, "total_pages": 1}
    # Newest first: the three made here, then the caller's own key.
    assert [key["id"] for key in body["data"][:3]] == [key["id"] for key in reversed(made)]
    assert body["data"][3]["name"] == "test key"
    text = json.dumps(body)
    for key in made:
        # The secret follows the second underscore; it may itself start with one.
        assert key["key"] not in text and key["key"].split("_", 2)[2] not in text
    first = body["data"][2]
    assert set(first) == {
        "id", "name", "workspace_id", "scopes", "key_prefix", "parent_id", "created_at",
        "last_used_at", "revoked_at",
    }  # fmt: skip
    assert made[0]["key"].startswith(first["key_prefix"] + "_")
    assert first["scopes"] == ["agents:read"] and first["revoked_at"] is None
    # Minted by the caller's key; the caller's own key, made without one, is a root.
    assert first["parent_id"] == body["data"][3]["id"] == made[0]["parent_id"]
    assert body["data"][3]["parent_id"] is None


def test_listing_needs_permissions_read(caller, make_caller):
    limited = make_caller(["agents:read"], workspace_id=caller.workspace_id)
    assert_error(
        limited.get("/workspaces/permissions"), 403, "INSUFFICIENT_SCOPE", "permissions:read"
    )
    reader = make_caller(["permissions:read"], workspace_id=caller.workspace_id)
    assert listed(reader)["pagination"]["total"] == 3


def test_a_revoked_key_stops_working_and_revoking_again_changes_nothing(client, caller):
    made = create(caller)
    made_caller = Caller(client, made["key"], caller.workspace_id)
    assert made_caller.get("/v1/agents").status_code == 200
    revoked = caller.delete(f"/workspaces/permissions/{made['id']}").get_json()
    assert revoked["success"] is True
    assert revoked["data"]["permission"]["id"] == made["id"]
    assert revoked["data"]["permission"]["revoked_at"].endswith("Z")
    assert "key" not in revoked["data"]["permission"]
    assert_error(made_caller.get("/v1/agents"), 401, "INVALID_API_KEY")
    again = caller.delete(f"/workspaces/permissions/{made['id']}").get_json()
    assert again["data"]["permission"]["revoked_at"] == revoked["data"]["permission"]["revoked_at"]


def test_the_revoked_filter(caller):
    kept, gone = create(caller, "kept"), create(caller, "gone")
    caller.delete(f"/workspaces/permissions/{gone['id']}")
    assert [key["id"] for key in listed(caller, "?is_revoked=true")["data"]] == [gone["id"]]
    live = [key["id"] for key in listed(caller, "?is_revoked=false")["data"]]
    assert kept["id"] in live and gone["id"] not in live
    assert_error(
        caller.get("/workspaces/permissions?is_revoked=maybe"),
        400,
        "VALIDATION_ERROR",
        "is_revoked",
    )


def test_another_workspaces_key_is_404_and_stays_live(client, caller, other):
    theirs = create(other)
    response = caller.delete(f"/workspaces/permissions/{theirs['id']}")
    assert_error(response, 404, "PERMISSION_NOT_FOUND")
    assert Caller(client, theirs["key"], other.workspace_id).get("/v1/agents").status_code == 200
    assert_error(caller.delete("/workspaces/permissions/nonsense"), 404, "PERMISSION_NOT_FOUND")


def test_a_narrow_key_cannot_revoke_a_broader_one(client, caller, make_caller):
    revoker = make_caller(["permissions:write", "agents:read"], workspace_id=caller.workspace_id)
    broad = create(caller, "broad", ["agents:read", "agents:write"])
    response = revoker.delete(f"/workspaces/permissions/{broad['id']}")
    assert_error(response, 403, "INSUFFICIENT_SCOPE", "agents:write")
    assert Caller(client, broad["key"], caller.workspace_id).get("/v1/agents").status_code == 200
    narrow = create(caller, "narrow", ["agents:read"])
    assert revoker.delete(f"/workspaces/permissions/{narrow['id']}").status_code == 200


def test_revoking_needs_permissions_write(caller, make_caller):
    made = create(caller)
    reader = make_caller(["permissions:read", "agents:read"], workspace_id=caller.workspace_id)
    response = reader.delete(f"/workspaces/permissions/{made['id']}")
    assert_error(response, 403, "INSUFFICIENT_SCOPE", "permissions:write")


def test_the_routes_are_documented_with_their_scopes(client):
    spec = client.get("/openapi.json").get_json()
    listing = spec["paths"]["/workspaces/permissions"]["get"]
    assert listing["x-required-scope"] == "permissions:read"
    assert {parameter["name"] for parameter in listing["parameters"]} >= {"is_revoked", "page"}
    revoke = spec["paths"]["/workspaces/permissions/{permission_id}"]["delete"]
    assert revoke["x-required-scope"] == "permissions:write"
    assert {"200", "403", "404"} <= set(revoke["responses"])


NEW = ["permissions:read", "permissions:write"]
# The scopes there were before migration 0016 (the first 33 of the catalogue).
BEFORE = sorted(list(SCOPES)[:33])


def migrated_up_to(tmp_path, number, scopes="[]", before_0022=None):
    """A database migrated up to migration `number`, holding one key with
    `scopes` (JSON) and what `before_0022(connection)` adds; then `number`
    itself is applied. The connection."""
    connection = sqlite3.connect(tmp_path / "old.db")
    files = migration_files(migrations_dir())  # SQLite's, whatever the suite's engine
    for path in [path for path in files if path.name < number]:
        for statement in sqlite_statements(path.read_text()):
            connection.execute(statement)
    connection.execute(
        "INSERT INTO company (id, name, created_at, updated_at) VALUES ('c', 'C', 0, 0)"
    )
    connection.execute(
        "INSERT INTO workspace (id, company_id, name, created_at, updated_at) "
        "VALUES ('w', 'c', 'W', 0, 0)"
    )
    connection.execute(
        "INSERT INTO api_key (id, workspace_id, name, lookup_id, key_hash, scopes, "
        "created_at, updated_at) VALUES ('k', 'w', 'admin', 'l', 'h', ?, 0, 0)",
        (scopes,),
    )
    if before_0022:
        before_0022(connection)
    (ours,) = [path for path in files if path.name.startswith(number)]
    for statement in sqlite_statements(ours.read_text()):
        connection.execute(statement)
    return connection


@pytest.mark.parametrize("held, gains", [(BEFORE, True), (["agents:read"], False)])
def test_migration_0016_gives_keys_that_held_every_scope_the_new_ones(tmp_path, held, gains):
    connection = migrated_up_to(tmp_path, "0016", json.dumps(held))
    (scopes,) = connection.execute("SELECT scopes FROM api_key").fetchone()
    assert json.loads(scopes) == (sorted(BEFORE + NEW) if gains else held)
