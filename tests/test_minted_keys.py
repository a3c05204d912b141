"""Keys minted by keys (POST /workspaces/permissions): revoking a key revokes
every key minted from it, directly or through others, by the API and by the
CLI, never a key of another workspace. (That they share their root's rate
limit: test_ratelimit.py.)"""

import json

import pytest
from click.testing import CliRunner

from agent_platform.cli import main
from agent_platform.models import ApiKey
from conftest import Caller, assert_error, database_environ
from test_permissions import migrated_up_to


def mint(parent, name, scopes=("agents:read", "permissions:write", "permissions:read")):
    """A key minted by `parent`, as a Caller (its permission in .made)."""
    response = parent.post("/workspaces/permissions", json={"name": name, "scopes": list(scopes)})
    assert response.status_code == 201, response.get_json()
    made = response.get_json()["data"]["permission"]
    minted = Caller(parent.client, made["key"], parent.workspace_id)
    minted.made = made
    return minted


def works(caller):
    return caller.get("/v1/agents").status_code == 200


def assert_revoked(caller):
    assert_error(caller.get("/v1/agents"), 401, "INVALID_API_KEY")


@pytest.fixture
def tree(caller, other):
    """caller ─ child ─ grandchild ─ great-grandchild, child ─ second child,
    caller ─ sibling (minted by the caller, not by the child); and in
    another workspace a key minted by `other`."""
    child = mint(caller, "child")
    grandchild = mint(child, "grandchild")
    nodes = {
        "child": child,
        "grandchild": grandchild,
        "great-grandchild": mint(grandchild, "great-grandchild", ["agents:read"]),
        "second child": mint(child, "second child", ["agents:read"]),
        "sibling": mint(caller, "sibling"),
        "elsewhere": mint(other, "elsewhere"),
    }
    assert all(works(node) for node in nodes.values())
    return nodes


def test_minted_keys_record_their_parent_and_share_the_root(caller, tree):
    root = ApiKey.by_lookup_id(caller.key[4:16])
    stored = {name: ApiKey.get_by_id(node.made["id"]) for name, node in tree.items()}
    assert (root.parent_id, root.root_id) == (None, None)
    assert stored["child"].parent_id == root.id
    assert stored["grandchild"].parent_id == stored["child"].id
    assert stored["great-grandchild"].parent_id == stored["grandchild"].id
    # A child minted by a child has the root's root.
    assert {stored[name].root_id for name in stored if name != "elsewhere"} == {root.id}
    assert stored["elsewhere"].root_id != root.id


def test_revoking_a_key_through_the_api_revokes_what_it_minted(caller, tree):
    response = caller.delete(f"/workspaces/permissions/{tree['child'].made['id']}")
    assert response.status_code == 200, response.get_json()
    for name in ("child", "grandchild", "great-grandchild", "second child"):
        assert_revoked(tree[name])
    for name in ("sibling", "elsewhere"):
        assert works(tree[name])
    assert works(caller)
    # All in one stroke: the same revocation time for the key and its descendants.
    revoked = caller.get("/workspaces/permissions?is_revoked=true").get_json()["data"]
    assert {key["name"] for key in revoked} == {
        "child", "grandchild", "great-grandchild", "second child",
    }  # fmt: skip
    assert {key["revoked_at"] for key in revoked} == {
        response.get_json()["data"]["permission"]["revoked_at"]
    }


def test_revoking_a_middle_key_leaves_its_parent_and_revoking_it_by_itself(tree):
    # The grandchild revokes itself: its descendants go, its parent stays.
    grandchild = tree["grandchild"]
    assert grandchild.delete(f"/workspaces/permissions/{grandchild.made['id']}").status_code == 200
    assert_revoked(grandchild)
    assert_revoked(tree["great-grandchild"])
    assert works(tree["child"]) and works(tree["second child"])


def test_a_revoked_key_can_mint_nothing(caller):
    child = mint(caller, "child")
    caller.delete(f"/workspaces/permissions/{child.made['id']}")
    response = child.post("/workspaces/permissions", json={"name": "n", "scopes": ["agents:read"]})
    assert_error(response, 401, "INVALID_API_KEY")


def test_a_key_revoked_after_its_request_was_admitted_mints_nothing(caller, monkeypatch):
    """Revoked by another request between the pipeline's check and the
    mint's write transaction: the mint is refused, no live child left."""
    from agent_platform.services import keys, permissions

    child = mint(caller, "child")
    check = permissions._check_holds

    def check_then_revoke(api_key, scopes, action):
        check(api_key, scopes, action)
        keys.revoke_key(child.made["id"])

    monkeypatch.setattr(permissions, "_check_holds", check_then_revoke)
    response = child.post("/workspaces/permissions", json={"name": "n", "scopes": ["agents:read"]})
    assert_error(response, 401, "INVALID_API_KEY")
    assert not ApiKey.select().where(ApiKey.parent == child.made["id"]).exists()


def test_revoking_again_sweeps_what_is_still_live(caller):
    """A key revoked before its descendants were recorded keeps its time;
    revoking it again revokes what it minted that still works."""
    child = mint(caller, "child")
    grandchild = mint(child, "grandchild")
    ApiKey.update(revoked_at=ApiKey.created_at).where(ApiKey.id == child.made["id"]).execute()
    assert works(grandchild)
    again = caller.delete(f"/workspaces/permissions/{child.made['id']}").get_json()
    assert again["data"]["permission"]["revoked_at"] == child.made["created_at"]
    assert_revoked(grandchild)


def test_revoking_never_reaches_another_workspace(caller, other):
    """Even a parent link across workspaces (which minting never makes) is not followed."""
    child = mint(caller, "child")
    theirs = mint(other, "theirs")
    ApiKey.update(parent=child.made["id"]).where(ApiKey.id == theirs.made["id"]).execute()
    caller.delete(f"/workspaces/permissions/{child.made['id']}")
    assert_revoked(child)
    assert works(theirs)


def test_revoking_a_key_through_the_cli_revokes_what_it_minted(app, caller, tree):
    root_id = ApiKey.by_lookup_id(caller.key[4:16]).id
    environ = database_environ(app)
    result = CliRunner().invoke(main, ["keys", "revoke", root_id], env=environ)
    assert result.exit_code == 0, result.output
    assert_revoked(caller)
    for name, node in tree.items():
        if name == "elsewhere":
            assert works(node)
        else:
            assert_revoked(node)
    assert f"Revoked key {root_id} and 5 keys minted from it" in result.output
    listed = CliRunner().invoke(main, ["keys", "list", "--json"], env=environ)
    rows = {row["id"]: row for row in json.loads(listed.stdout)}
    grandchild = rows[tree["grandchild"].made["id"]]
    assert grandchild["parent_id"] == tree["child"].made["id"]
    assert grandchild["revoked_at"] == rows[root_id]["revoked_at"] is not None
    text = CliRunner().invoke(main, ["keys", "list"], env=environ).stdout
    assert f"minted_by={tree['child'].made['id']}" in text


def test_migration_0019_leaves_existing_keys_roots(tmp_path):
    connection = migrated_up_to(tmp_path, "0019")
    assert connection.execute("SELECT parent_id, root_id FROM api_key").fetchall() == [(None, None)]
