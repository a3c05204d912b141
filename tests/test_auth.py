from agent_platform.models import ApiKey
from agent_platform.scopes import SCOPES
from agent_platform.services import keys
from conftest import assert_error


def test_me_describes_the_key(caller):
    response = caller.get("/v1/me")
    assert response.status_code == 200
    info = response.get_json()["data"]
    assert info["key_name"] == "test key"
    assert info["workspace_id"] == caller.workspace_id
    assert info["company_id"]
    assert sorted(info["scopes"]) == sorted(SCOPES)
    assert info["permissions"]["agents"] == ["delete", "read", "write"]
    assert info["permissions"]["custom-fields"] == ["read", "write"]


def test_permissions_follow_the_scopes(make_caller):
    limited = make_caller(scopes=["contacts:read", "webhooks:write"])
    info = limited.get("/v1/me").get_json()["data"]
    assert info["scopes"] == ["contacts:read", "webhooks:write"]
    assert info["permissions"] == {"contacts": ["read"], "webhooks": ["write"]}


def test_bearer_header_works_like_x_api_key(client, caller):
    response = client.get("/v1/me", headers={"Authorization": f"Bearer {caller.key}"})
    assert response.status_code == 200


def test_missing_key(client):
    assert_error(client.get("/v1/me"), 401, "MISSING_API_KEY", "x-api-key")
    assert_error(
        client.get("/v1/me", headers={"Authorization": "Basic abc"}), 401, "MISSING_API_KEY"
    )


def test_key_in_query_string_is_not_accepted(client, caller):
    assert_error(client.get(f"/v1/me?api_key={caller.key}"), 401, "MISSING_API_KEY")


def test_unknown_and_mangled_keys(client, caller):
    for bad in (
        "nope",
        "apk_",
        caller.key[:-1] + ("A" if caller.key[-1] != "A" else "B"),
        caller.key + "x",
    ):
        assert_error(client.get("/v1/me", headers={"x-api-key": bad}), 401, "INVALID_API_KEY")


def test_revocation_takes_effect_on_the_next_request(caller):
    assert caller.get("/v1/me").status_code == 200
    key = ApiKey.get(ApiKey.name == "test key")
    keys.revoke_key(key.id)
    assert_error(caller.get("/v1/me"), 401, "INVALID_API_KEY")


def test_only_the_hash_is_stored(caller):
    row = ApiKey.get(ApiKey.name == "test key")
    assert caller.key.startswith("apk_")
    assert caller.key not in (row.key_hash, row.lookup_id)
    assert row.key_hash == keys.hash_key(caller.key)


def test_last_used_at_is_recorded(caller):
    assert ApiKey.get(ApiKey.name == "test key").last_used_at is None
    caller.get("/v1/me")
    assert ApiKey.get(ApiKey.name == "test key").last_used_at is not None


def test_keys_need_known_scopes(app):
    workspace = keys.create_workspace("w")
    try:
        keys.create_key(workspace.id, "k", ["agents:fly"])
    except Exception as error:
        assert "agents:fly" in error.message
    else:
        raise AssertionError("an unknown scope was accepted")


def test_health_needs_no_key_and_is_not_rate_limited(client):
    response = client.get("/v1/health")
    assert response.status_code == 200
    assert "X-RateLimit-Limit" not in response.headers
