"""/v1/users: create (with a one-time link or a password), list, get,
update, new sign-in links; scopes, isolation, validation; and assigned_to
naming a user."""

import pytest

from conftest import assert_error
from conversations_helpers import data, setup_chat

ANA = {"email": "Ana@Example.COM", "name": "Ana", "role": "admin"}


def create(caller, **values):
    return data(caller.post("/v1/users", json={**ANA, **values}), 201)


def test_create_with_a_one_time_link(caller):
    user = create(caller)
    assert user["email"] == "ana@example.com"  # normalised
    assert (user["name"], user["role"], user["active"], user["has_password"]) == (
        "Ana", "admin", True, False,
    )  # fmt: skip
    assert user["invite_url"].startswith("http://127.0.0.1:8080/app/welcome/")
    assert user["workspace_id"] == caller.workspace_id
    assert "password_hash" not in user and "password" not in user


def test_create_with_a_password_has_no_link(caller):
    user = create(caller, password="a long password")
    assert (user["has_password"], user["invite_url"]) == (True, None)


def test_no_answer_ever_carries_a_password_hash(caller):
    user = create(caller, password="a long password")
    bodies = [
        caller.get("/v1/users").get_data(as_text=True),
        caller.get(f"/v1/users/{user['id']}").get_data(as_text=True),
        caller.patch(f"/v1/users/{user['id']}", json={"name": "Ana B"}).get_data(as_text=True),
    ]
    assert not [body for body in bodies if "argon2" in body or "password_hash" in body]


def test_list_is_paginated_and_get_finds_one(caller):
    first, second = create(caller), create(caller, email="bia@example.com", name="Bia")
    page = caller.get("/v1/users?limit=1&sort=created_at&order=asc").get_json()
    assert [user["id"] for user in page["data"]] == [first["id"]]
    assert page["pagination"] == {"page": 1, "limit": 1, "total": 2, "total_pages": 2}
    got = data(caller.get(f"/v1/users/{second['id']}"))
    assert (got["email"], got["name"]) == ("bia@example.com", "Bia")


def test_update_name_role_and_active(caller):
    create(caller)  # an admin stays
    bia = create(caller, email="bia@example.com", name="Bia", role="agent")
    changed = data(caller.patch(f"/v1/users/{bia['id']}", json={"name": "Bia S", "role": "admin"}))
    assert (changed["name"], changed["role"]) == ("Bia S", "admin")
    assert data(caller.patch(f"/v1/users/{bia['id']}", json={"active": False}))["active"] is False


def test_the_last_active_admin_stays(caller):
    ana = create(caller)
    for change in ({"role": "agent"}, {"active": False}):
        response = caller.patch(f"/v1/users/{ana['id']}", json=change)
        assert_error(response, 409, "LAST_ADMIN")
    assert data(caller.get(f"/v1/users/{ana['id']}"))["role"] == "admin"


def test_an_email_is_unique_across_the_instance(caller, other):
    create(caller)
    assert_error(other.post("/v1/users", json={**ANA, "email": "ANA@example.com"}), 409,
                 "USER_EXISTS")  # fmt: skip


@pytest.mark.parametrize(
    "body, field",
    [
        ({"name": "Ana", "role": "admin"}, "email"),
        ({"email": "ana", "name": "Ana"}, "email"),
        ({"email": " ana@example.com", "name": "Ana"}, "email"),
        ({"email": "ana@example.com", "name": "Ana", "role": "owner"}, "role"),
        ({"email": "ana@example.com", "name": "Ana", "password": "short"}, "password"),
        ({"email": "ana@example.com", "name": "A\nna"}, "name"),
        ({"email": "ana@example.com", "name": "Ana", "colour": "red"}, "colour"),
    ],
)
def test_validation_names_the_field_and_changes_nothing(caller, body, field):
    error = caller.post("/v1/users", json=body).get_json()["error"]
    assert error["status"] == 400 and field in error["message"]
    assert caller.get("/v1/users").get_json()["data"] == []


def test_the_password_length_error_is_clear(caller):
    body = {"email": "ana@example.com", "name": "Ana", "password": "123456789"}
    assert_error(caller.post("/v1/users", json=body), 400, "VALIDATION_ERROR", "password")


def test_another_workspaces_user_is_404(caller, other):
    user = create(caller)
    assert_error(other.get(f"/v1/users/{user['id']}"), 404, "USER_NOT_FOUND")
    assert_error(other.patch(f"/v1/users/{user['id']}", json={"name": "X"}), 404, "USER_NOT_FOUND")
    assert_error(other.post(f"/v1/users/{user['id']}/sign-in-link"), 404, "USER_NOT_FOUND")
    assert other.get("/v1/users").get_json()["data"] == []


def test_scopes(caller, make_caller):
    user = create(caller)
    reader = make_caller(["users:read"], caller.workspace_id)
    nobody = make_caller(["contacts:read"], caller.workspace_id)
    assert reader.get(f"/v1/users/{user['id']}").status_code == 200
    assert_error(reader.post("/v1/users", json=ANA), 403, "INSUFFICIENT_SCOPE", "users:write")
    assert_error(reader.post(f"/v1/users/{user['id']}/sign-in-link"), 403, "INSUFFICIENT_SCOPE")
    assert_error(reader.patch(f"/v1/users/{user['id']}", json={"name": "X"}), 403,
                 "INSUFFICIENT_SCOPE")  # fmt: skip
    assert_error(nobody.get("/v1/users"), 403, "INSUFFICIENT_SCOPE", "users:read")


def test_a_new_sign_in_link_replaces_the_old_one(caller, client):
    user = create(caller)
    first = user["invite_url"].split("8080")[1]
    link = data(caller.post(f"/v1/users/{user['id']}/sign-in-link"), 201)
    assert (link["user_id"], link["purpose"]) == (user["id"], "invite")
    assert link["url"] != user["invite_url"] and link["expires_at"].endswith("Z")
    assert client.get(first).status_code == 404
    assert client.get(link["url"].split("8080")[1]).status_code == 200


def test_openapi_documents_users_and_their_errors(client):
    paths = client.get("/openapi.json").get_json()["paths"]
    assert set(paths["/v1/users"]["post"]["responses"]) >= {"201", "400", "401", "403", "409"}
    assert set(paths["/v1/users/{user_id}"]["patch"]["responses"]) >= {"400", "404", "409"}
    assert "404" in paths["/v1/users/{user_id}/sign-in-link"]["post"]["responses"]
    assert not [path for path in paths if path.startswith("/app")]


# assigned_to naming a user


def test_assigned_to_may_name_an_active_user_of_the_workspace(caller):
    chat = setup_chat(caller)
    user = create(caller)
    path = f"/v1/conversations/{chat['conversation']['id']}/assign"
    assert data(caller.post(path, json={"assigned_to": user["id"]}))["assigned_to"] == user["id"]


def test_assigned_to_refuses_an_unknown_or_foreign_or_inactive_user(caller, other):
    chat = setup_chat(caller)
    create(caller)
    foreign = create(other, email="bo@example.com", name="Bo")
    inactive = create(caller, email="cy@example.com", name="Cy", role="agent")
    caller.patch(f"/v1/users/{inactive['id']}", json={"active": False})
    path = f"/v1/conversations/{chat['conversation']['id']}/assign"
    unknown = "6f1c4b9e-8a47-4a1e-9f0e-3e2b1c0d9a88"
    for value in (foreign["id"], inactive["id"], unknown):
        assert_error(caller.post(path, json={"assigned_to": value}), 400, "VALIDATION_ERROR",
                     "assigned_to")  # fmt: skip
    handoff = f"/v1/chats/{chat['conversation']['id']}/handoff"
    assert_error(caller.post(handoff, json={"assigned_to": unknown}), 400, "VALIDATION_ERROR")
    conversation = data(caller.get(f"/v1/conversations/{chat['conversation']['id']}"))
    assert (conversation["status"], conversation["assigned_to"]) == ("open", None)


def test_assigned_to_keeps_free_text(caller):
    chat = setup_chat(caller)
    path = f"/v1/conversations/{chat['conversation']['id']}/assign"
    assigned = data(caller.post(path, json={"assigned_to": "maria@shop.example"}))
    assert assigned["assigned_to"] == "maria@shop.example"
