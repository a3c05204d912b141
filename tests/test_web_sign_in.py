"""The inbox's sign-in at /app through HTTP with cookies: success and
refusal (the same for an unknown e-mail), the failed-attempt limit per
account and per address (kept across a restart), sessions (idle and
absolute expiry, sign-out, deactivation, password reset), CSRF and Origin
checks, one-time links, and the headers of every page."""

from datetime import timedelta

import pytest

from agent_platform import create_app
from agent_platform.models.base import utcnow
from agent_platform.models.users import SignInLink, UserSession
from agent_platform.services import sign_in as signing_in
from agent_platform.services import users
from web_helpers import (
    PASSWORD,
    SESSION_COOKIE,
    form_token,
    make_user,
    page_token,
    session_cookie,
    sign_in,
    text,
)

CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
)


@pytest.fixture
def settings(tmp_path):
    return {
        "DATABASE_PATH": str(tmp_path / "test.db"),
        "INBOX_SIGN_IN_ATTEMPTS": 3,
        "INBOX_SIGN_IN_ADDRESS_ATTEMPTS": 5,
    }


@pytest.fixture
def ana(caller):
    return make_user(caller.workspace_id)


def test_sign_in_sets_a_safe_cookie_and_shows_the_landing_page(client, caller, ana):
    response = sign_in(client)
    assert (response.status_code, response.headers["Location"]) == (303, "/app")
    cookie = response.headers["Set-Cookie"]
    assert cookie.startswith(SESSION_COOKIE + "=")
    assert "HttpOnly" in cookie and "SameSite=Lax" in cookie and "Path=/app" in cookie
    assert "Secure" not in cookie  # plain HTTP here
    page = client.get("/app")
    assert page.status_code == 200
    assert "Ana" in text(page) and "Workspace" in text(page) and "Sign out" in text(page)
    assert page.headers["Cache-Control"] == "no-store"


def test_the_cookie_is_secure_behind_a_trusted_https_proxy(app, client, caller, ana):
    app.config["SERVER_PROXY_HOPS"] = 1
    response = sign_in(client, headers={"X-Forwarded-Proto": "https"})
    assert "Secure" in response.headers["Set-Cookie"]


def test_only_a_hash_of_the_token_is_stored(client, caller, ana):
    sign_in(client)
    token = session_cookie(client)
    assert UserSession.select().where(UserSession.token_hash == token).count() == 0
    assert UserSession.select().count() == 1


def test_a_wrong_password_and_an_unknown_email_get_the_same_answer(client, caller, ana):
    wrong = sign_in(client, password="not the password")
    unknown = sign_in(client, email="nobody@example.com")
    assert wrong.status_code == unknown.status_code == 401
    message = "The e-mail or the password is wrong."
    assert message in text(wrong) and message in text(unknown)
    assert session_cookie(client) is None
    assert client.get("/app").status_code == 302


def test_the_next_page_is_kept_but_never_another_site(client, caller, ana):
    token = form_token(client.get("/app/sign-in"))
    form = {"csrf_token": token, "email": "ana@example.com", "password": PASSWORD}
    response = client.post("/app/sign-in?next=//evil.example/app", data=form)
    assert response.headers["Location"] == "/app"
    client.post("/app/sign-out", data={"csrf_token": page_token(client)})
    token = form_token(client.get("/app/sign-in"))
    response = client.post("/app/sign-in?next=/app/team", data={**form, "csrf_token": token})
    assert response.headers["Location"] == "/app/team"
    # Signed in, the form sends on at once. A line break was a 500.
    refused = ("/app%0d%0aSet-Cookie:%20x=1", "/app/%0ax", "/app%E2%80%A8x", "/appx", "/app\\x")
    for wanted in refused:
        response = client.get(f"/app/sign-in?next={wanted}")
        assert (response.status_code, response.headers["Location"]) == (303, "/app"), wanted
    assert client.get("/app/sign-in?next=/app?state=mine").headers["Location"] == "/app?state=mine"


def test_failed_sign_ins_per_account_are_limited_and_say_when_to_retry(app, client, caller, ana):
    app.config["INBOX_SIGN_IN_ADDRESS_ATTEMPTS"] = 100  # only the account's limit here
    for _ in range(3):
        assert sign_in(client, password="wrong password").status_code == 401
    refused = sign_in(client)  # even the right password, for now
    assert refused.status_code == 429
    assert "Try again in 15 minutes" in text(refused)
    assert 800 < int(refused.headers["Retry-After"]) <= 901
    assert session_cookie(client) is None
    # An e-mail without an account is limited the same way (nothing to enumerate).
    for _ in range(3):
        assert sign_in(client, email="nobody@example.com").status_code == 401
    assert sign_in(client, email="nobody@example.com").status_code == 429


def test_the_limit_survives_a_restart(settings, database_url, client, caller, ana):
    for _ in range(3):
        sign_in(client, password="wrong password")
    on_server = {"DATABASE_URL": database_url} if database_url else {}
    restarted = create_app({**settings, **on_server}).test_client()
    assert sign_in(restarted).status_code == 429


def test_the_limit_ends_when_the_failures_leave_the_window(client, caller, ana):
    from agent_platform.models.users import SignInFailure

    for _ in range(3):
        sign_in(client, password="wrong password")
    SignInFailure.update(created_at=utcnow() - timedelta(minutes=16)).execute()
    assert sign_in(client).status_code == 303


def test_failed_sign_ins_per_address_are_limited(client, caller, ana):
    for number in range(5):
        assert sign_in(client, email=f"guess{number}@example.com").status_code == 401
    assert sign_in(client).status_code == 429
    elsewhere = {"environ_base": {"REMOTE_ADDR": "192.0.2.7"}}
    token = form_token(client.get("/app/sign-in", **elsewhere))
    form = {"csrf_token": token, "email": "ana@example.com", "password": PASSWORD}
    assert client.post("/app/sign-in", data=form, **elsewhere).status_code == 303


def test_an_ipv6_client_is_limited_by_its_64_whatever_address_it_takes(client, caller, ana):
    # Counted address by address, a client with a /64 (any home connection)
    # could take a new one for each attempt and never meet the limit.
    def attempt(address, email):
        at = {"environ_base": {"REMOTE_ADDR": address}}
        token = form_token(client.get("/app/sign-in", **at))
        form = {"csrf_token": token, "email": email, "password": "not the password"}
        return client.post("/app/sign-in", data=form, **at).status_code

    for number in range(5):
        assert attempt(f"2001:db8:1:2::{number + 1:x}", f"guess{number}@example.com") == 401
    assert attempt("2001:db8:1:2:ffff:ffff:ffff:ffff", "ana@example.com") == 429
    assert attempt("2001:db8:1:3::1", "guess9@example.com") == 401  # another /64
    assert attempt("::ffff:192.0.2.8", "guess10@example.com") == 401  # IPv4, as IPv4


def test_an_idle_session_is_refused(client, caller, ana):
    sign_in(client)
    UserSession.update(last_seen_at=utcnow() - timedelta(hours=8, seconds=1)).execute()
    assert client.get("/app").headers["Location"] == "/app/sign-in?next=/app"
    assert UserSession.select().count() == 0  # deleted on sight


def test_each_request_moves_the_idle_expiry_on(client, caller, ana):
    sign_in(client)
    token, start = session_cookie(client), utcnow()
    assert signing_in.session_of(token, now=start + timedelta(hours=7)) is not None
    assert signing_in.session_of(token, now=start + timedelta(hours=14)) is not None
    assert signing_in.session_of(token, now=start + timedelta(hours=22, seconds=1)) is None


def test_a_form_sent_after_the_session_ended_goes_to_sign_in_then_back(client, caller, ana):
    """Its token ended with the session: no 403 about forgery, but the
    sign-in page, then the page the form was on (never another site's)."""
    sign_in(client)
    token = page_token(client)
    UserSession.update(last_seen_at=utcnow() - timedelta(hours=8, seconds=1)).execute()
    form = {"csrf_token": token}
    sent = client.post("/app/sign-out", data=form, headers={"Referer": "http://localhost/app/team"})
    assert (sent.status_code, sent.headers["Location"]) == (302, "/app/sign-in?next=/app/team")
    elsewhere = client.post("/app/sign-out", data=form, headers={"Referer": "http://x.test/app"})
    assert elsewhere.headers["Location"] == "/app/sign-in"
    fetched = client.post(
        "/app/sign-out", headers={"X-CSRF-Token": token, "Accept": "application/json"}
    )
    assert (fetched.status_code, fetched.get_json()["error"]["code"]) == (401, "NOT_SIGNED_IN")


def test_a_session_ends_at_its_absolute_expiry_however_active(client, caller, ana):
    sign_in(client)
    UserSession.update(expires_at=utcnow() - timedelta(seconds=1)).execute()
    assert client.get("/app").status_code == 302


def test_sign_out_ends_the_session_and_the_old_cookie_is_refused(client, caller, ana):
    sign_in(client)
    old = session_cookie(client)
    response = client.post("/app/sign-out", data={"csrf_token": page_token(client)})
    assert (response.status_code, response.headers["Location"]) == (303, "/app/sign-in")
    assert session_cookie(client) is None
    client.set_cookie(SESSION_COOKIE, old, path="/app")
    assert client.get("/app").status_code == 302


def test_a_fetch_without_a_session_gets_401_json(client):
    response = client.get("/app", headers={"Accept": "application/json"})
    assert response.status_code == 401
    assert response.get_json()["error"]["code"] == "NOT_SIGNED_IN"


# CSRF


def test_a_state_change_without_the_token_is_refused(client, caller, ana):
    sign_in(client)
    response = client.post("/app/sign-out")
    assert response.status_code == 403 and "reload the page" in text(response)
    assert client.get("/app").status_code == 200  # still signed in


def test_a_wrong_token_is_refused(client, caller, ana):
    sign_in(client)
    response = client.post("/app/sign-out", data={"csrf_token": "forged"})
    assert response.status_code == 403
    header = client.post("/app/sign-out", headers={"X-CSRF-Token": "forged"})
    assert header.status_code == 403
    assert client.get("/app").status_code == 200


def test_the_token_may_come_in_the_header(client, caller, ana):
    sign_in(client)
    response = client.post("/app/sign-out", headers={"X-CSRF-Token": page_token(client)})
    assert response.status_code == 303


def test_another_origin_is_refused_even_with_the_token(client, caller, ana):
    sign_in(client)
    token = page_token(client)
    response = client.post(
        "/app/sign-out", data={"csrf_token": token}, headers={"Origin": "https://evil.example"}
    )
    assert response.status_code == 403 and "evil.example" in text(response)
    same = client.post(
        "/app/sign-out", data={"csrf_token": token}, headers={"Origin": "http://localhost"}
    )
    assert same.status_code == 303


def test_the_sign_in_form_itself_needs_its_token(client, caller, ana):
    form = {"email": "ana@example.com", "password": PASSWORD}
    assert client.post("/app/sign-in", data=form).status_code == 403
    assert session_cookie(client) is None


# One-time links


def invite_path(caller, email="bia@example.com"):
    created = make_user(caller.workspace_id, email=email, name="Bia", role="agent", password=None)
    return created["invite_url"].removeprefix("http://127.0.0.1:8080")


def choose_password(client, path, password="a new long password", again=None):
    token = form_token(client.get(path))
    form = {"csrf_token": token, "password": password, "password_again": again or password}
    return client.post(path, data=form)


def test_a_one_time_link_sets_the_password_and_signs_in(client, caller, ana):
    path = invite_path(caller)
    page = client.get(path)
    assert page.status_code == 200 and "Welcome, Bia" in text(page)
    response = choose_password(client, path)
    assert (response.status_code, response.headers["Location"]) == (303, "/app")
    assert "Bia" in text(client.get("/app"))
    client.post("/app/sign-out", data={"csrf_token": page_token(client)})
    assert (
        sign_in(client, email="bia@example.com", password="a new long password").status_code == 303
    )


def test_a_one_time_link_used_twice_is_refused(client, caller, ana):
    path = invite_path(caller)
    choose_password(client, path)
    again = client.get(path)
    assert again.status_code == 404 and "Ask an admin" in text(again)
    token = page_token(client)
    form = {"csrf_token": token, "password": "x" * 12, "password_again": "x" * 12}
    assert client.post(path, data=form).status_code == 404


def test_an_expired_link_is_refused(client, caller, ana):
    path = invite_path(caller)
    SignInLink.update(expires_at=utcnow() - timedelta(seconds=1)).execute()
    assert client.get(path).status_code == 404


def test_a_short_or_mistyped_password_is_refused_with_a_clear_message(client, caller, ana):
    path = invite_path(caller)
    short = choose_password(client, path, password="short")
    assert short.status_code == 400 and "at least 10 characters" in text(short)
    mistyped = choose_password(client, path, again="another long password")
    assert mistyped.status_code == 400 and "same password" in text(mistyped)
    assert choose_password(client, path).status_code == 303  # the link still works


# Sessions that end for other reasons


def test_deactivation_ends_the_users_sessions(client, caller, ana):
    bia = make_user(caller.workspace_id, email="bia@example.com", name="Bia", role="agent")
    sign_in(client, email="bia@example.com")
    assert client.get("/app").status_code == 200
    caller.patch(f"/v1/users/{bia['id']}", json={"active": False})
    assert client.get("/app").status_code == 302
    assert sign_in(client, email="bia@example.com").status_code == 401


def test_a_password_reset_ends_the_users_sessions(client, caller, ana):
    sign_in(client)
    link = caller.post(f"/v1/users/{ana['id']}/sign-in-link").get_json()["data"]
    assert link["purpose"] == "reset"
    assert client.get("/app").status_code == 302
    assert sign_in(client).status_code == 303  # the old password works until it is changed


def test_setting_a_password_ends_other_sessions(app, client, caller, ana):
    sign_in(client)
    users.set_password(users.get_user(caller.workspace_id, ana["id"]), "another long password")
    assert client.get("/app").status_code == 302


# Headers and errors of every page


def test_every_app_page_carries_the_security_headers(client, caller, ana):
    path = invite_path(caller)
    anonymous = ["/app/sign-in", path, "/app/no-such-page", "/app/welcome/unknown"]
    responses = [client.get(page) for page in anonymous]
    responses.append(client.delete("/app/sign-in"))
    sign_in(client)
    responses += [client.get(page) for page in ("/app", "/app/team", "/app/sign-in")]
    responses.append(client.post("/app/sign-out"))  # refused: no token
    static = client.get("/app/static/app.css")
    static.close()
    for response in [*responses, static]:
        headers = response.headers
        assert headers["Content-Security-Policy"] == CSP, response.request.path
        assert headers["X-Content-Type-Options"] == "nosniff"
        assert headers["Referrer-Policy"] == "same-origin"
    assert {response.headers["Cache-Control"] for response in responses} == {"no-store"}
    assert static.status_code == 200 and static.mimetype == "text/css"


def test_app_errors_are_html_pages_not_the_apis_json(client):
    missing = client.get("/app/no-such-page")
    assert (missing.status_code, missing.mimetype) == (404, "text/html")
    assert "no page at /app/no-such-page" in text(missing)
    wrong_method = client.delete("/app/sign-in")
    assert (wrong_method.status_code, wrong_method.mimetype) == (405, "text/html")
    assert "POST" in wrong_method.headers["Allow"]


def test_no_api_key_is_needed_and_the_api_is_unchanged(client):
    assert client.get("/app/sign-in").status_code == 200
    assert client.get("/v1/users").status_code == 401  # the API still wants its key
