"""The admins' team page at /app/team: listing, inviting (the link shown to
copy), new sign-in links, roles, deactivation; 403 for the agent role."""

import re

from agent_platform.models import User
from web_helpers import make_user, page_token, session_cookie, sign_in, text


def post(client, path, **form):
    return client.post(path, data={"csrf_token": page_token(client, "/app/team"), **form})


def signed_in_admin(client, caller):
    make_user(caller.workspace_id)
    sign_in(client)


def test_the_team_page_lists_the_workspaces_people_only(client, caller, other):
    signed_in_admin(client, caller)
    make_user(caller.workspace_id, email="bia@example.com", name="Bia", role="agent")
    make_user(other.workspace_id, email="zed@example.com", name="Zed")
    page = text(client.get("/app/team"))
    assert "bia@example.com" in page and "ana@example.com" in page
    assert "zed@example.com" not in page


def test_names_are_shown_as_text(client, caller):
    signed_in_admin(client, caller)
    make_user(caller.workspace_id, email="x@example.com", name="<script>alert(1)</script>")
    page = text(client.get("/app/team"))
    assert "<script>alert(1)</script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_invite_shows_a_one_time_link_that_works(client, caller, app):
    signed_in_admin(client, caller)
    response = post(client, "/app/team/invite", name="Bia", email="Bia@Example.com", role="agent")
    assert response.status_code == 200
    url = re.search(r'id="link-url" type="text" readonly value="([^"]+)"', text(response)).group(1)
    assert url.startswith("http://127.0.0.1:8080/app/welcome/")
    invited = User.get(User.email == "bia@example.com")
    assert (invited.role, invited.password_hash) == ("agent", None)
    other_browser = app.test_client()
    assert "Welcome, Bia" in text(other_browser.get(url.removeprefix("http://127.0.0.1:8080")))


def test_invite_refusals_name_the_problem_and_keep_what_was_typed(client, caller):
    signed_in_admin(client, caller)
    taken = post(client, "/app/team/invite", name="Ana 2", email="ana@example.com", role="agent")
    assert taken.status_code == 409 and "already exists" in text(taken)
    bad = post(client, "/app/team/invite", name="Bo", email="not-an-email", role="agent")
    assert bad.status_code == 400 and "email" in text(bad) and 'value="Bo"' in text(bad)
    role = post(client, "/app/team/invite", name="Bo", email="bo@example.com", role="owner")
    assert role.status_code == 400 and "role" in text(role)
    assert User.select().count() == 1


def test_change_role_deactivate_and_reactivate(client, caller, app):
    signed_in_admin(client, caller)
    bia = make_user(caller.workspace_id, email="bia@example.com", name="Bia", role="agent")
    bia_browser = app.test_client()
    sign_in(bia_browser, email="bia@example.com")
    assert post(client, f"/app/team/{bia['id']}", role="admin").status_code == 303
    assert User.get_by_id(bia["id"]).role == "admin"
    assert post(client, f"/app/team/{bia['id']}", active="false").status_code == 303
    assert User.get_by_id(bia["id"]).is_active is False
    assert bia_browser.get("/app").status_code == 302  # her session ended
    assert "deactivated" in text(client.get("/app/team"))
    assert post(client, f"/app/team/{bia['id']}", active="true").status_code == 303
    assert User.get_by_id(bia["id"]).is_active is True


def test_the_last_admin_cannot_lock_the_workspace_out(client, caller):
    signed_in_admin(client, caller)
    ana = User.get(User.email == "ana@example.com")
    refused = post(client, f"/app/team/{ana.id}", active="false")
    assert refused.status_code == 409 and "active admin" in text(refused)
    assert client.get("/app").status_code == 200


def test_a_new_sign_in_link_is_shown_and_ends_the_users_sessions(client, caller, app):
    signed_in_admin(client, caller)
    bia = make_user(caller.workspace_id, email="bia@example.com", name="Bia", role="agent")
    bia_browser = app.test_client()
    sign_in(bia_browser, email="bia@example.com")
    response = post(client, f"/app/team/{bia['id']}/sign-in-link")
    assert "One-time sign-in link for Bia" in text(response)
    assert bia_browser.get("/app").status_code == 302


def test_another_workspaces_user_is_404(client, caller, other):
    signed_in_admin(client, caller)
    zed = make_user(other.workspace_id, email="zed@example.com", name="Zed")
    assert post(client, f"/app/team/{zed['id']}", active="false").status_code == 404
    assert post(client, f"/app/team/{zed['id']}/sign-in-link").status_code == 404
    assert User.get_by_id(zed["id"]).is_active is True


def test_an_agent_gets_a_403_page_on_the_team_page(client, caller):
    make_user(caller.workspace_id)
    make_user(caller.workspace_id, email="bia@example.com", name="Bia", role="agent")
    sign_in(client, email="bia@example.com")
    page = client.get("/app/team")
    assert (page.status_code, page.mimetype) == (403, "text/html")
    assert "for the admins of your workspace" in text(page)
    token = page_token(client)
    refused = client.post("/app/team/invite", data={"csrf_token": token, "name": "X",
                                                    "email": "x@example.com"})  # fmt: skip
    assert refused.status_code == 403
    assert User.select().count() == 2
    assert "Team" not in text(client.get("/app"))  # not in the agent's nav
    assert session_cookie(client)
