"""Signing people in to /app through HTTP, as a browser does (forms, cookies)."""

import re

from agent_platform.services import users

SESSION_COOKIE = "agent_platform_session"
PASSWORD = "a long password"


def make_user(workspace_id, email="ana@example.com", name="Ana", role="admin", password=PASSWORD):
    values = {"email": email, "name": name, "role": role}
    if password is not None:
        values["password"] = password
    return users.invite(workspace_id, values)


def form_token(response):
    """The CSRF token of the page's first form."""
    found = re.search(r'name="csrf_token" value="([^"]+)"', response.get_data(as_text=True))
    assert found, response.get_data(as_text=True)
    return found.group(1)


def sign_in(client, email="ana@example.com", password=PASSWORD, **kwargs):
    token = form_token(client.get("/app/sign-in"))
    form = {"csrf_token": token, "email": email, "password": password}
    return client.post("/app/sign-in", data=form, **kwargs)


def session_cookie(client):
    cookie = client.get_cookie(SESSION_COOKIE, path="/app")
    return cookie.value if cookie else None


def page_token(client, path="/app"):
    """The CSRF token of a signed-in page."""
    return form_token(client.get(path))


def text(response):
    return response.get_data(as_text=True)
