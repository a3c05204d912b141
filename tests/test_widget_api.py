"""The website widget's visitor API, through HTTP: a conversation with the
agent, origins, preflights, identity verification, isolation, limits and a
human taking over. The reply job runs as the scheduler would run it."""

import hashlib
import hmac
import secrets
import socket
import tracemalloc
from datetime import timedelta

import gunicorn.config
import gunicorn.http
import gunicorn.http.wsgi
import pytest

from agent_platform.models import Message
from agent_platform.models.base import utcnow
from agent_platform.services import replies, sending
from conftest import assert_error
from conversations_helpers import data, event_names, make_channel

SITE = "https://shop.example.com"
SECRET = "s3cret-identity-key-of-the-shop"
QUESTION, ANSWER = "How much is delivery?", "Delivery costs 5 euros in Lisbon."


@pytest.fixture
def settings(tmp_path):
    return {
        "DATABASE_PATH": str(tmp_path / "test.db"),
        "REPLIES_DEBOUNCE_SECONDS": 0,
        "WIDGET_VISITOR_REQUESTS_PER_MINUTE": 30,
        "WIDGET_ADDRESS_REQUESTS_PER_MINUTE": 60,
        "WIDGET_MESSAGE_MAX_CHARS": 500,
    }


@pytest.fixture
def agent_id(caller):
    agent = data(caller.post("/v1/agents", json={"name": "Ana"}), 201)["id"]
    qa = {"type": "qa", "question": QUESTION, "answer": ANSWER}
    data(caller.post(f"/v1/agents/{agent}/trainings", json=qa), 201)
    return agent


@pytest.fixture
def site(caller, agent_id):
    settings = {"allowed_origins": [SITE], "title": "Shop", "identity_secret": SECRET}
    return make_channel(caller, "Site", "website", settings, agent_id)


class Visitor:
    """A browser on SITE talking to one channel's widget."""

    def __init__(self, client, channel_id, origin=SITE, token=None, headers=None):
        self.client, self.channel_id, self.origin, self.token = client, channel_id, origin, token
        self.headers = headers or {}
        self.since = self.tag = None

    def call(self, method, path, body=None, token=None, headers=None):
        sent = {"Origin": self.origin} if self.origin else {}
        if token or self.token:
            sent["X-Visitor-Token"] = token or self.token
        sent.update({**self.headers, **(headers or {})})
        url = f"/widget/{self.channel_id}/api/{path}"
        return self.client.open(url, method=method, json=body, headers=sent)

    def start(self, **body):
        started = data(self.call("POST", "session", body))
        self.token = started["visitor_token"]
        return started

    def say(self, text, client_message_id, **fields):
        body = {"text": text, "client_message_id": client_message_id, **fields}
        return self.call("POST", "messages", body)

    def poll(self):
        query = f"?seen={self.tag}" if self.tag else ""
        query += f"&since={self.since}" if self.since else ""
        response = self.call("GET", f"messages{query}")
        if response.status_code == 204:
            return None
        changed = data(response)
        self.since, self.tag = changed["since"], changed["tag"]
        return changed["messages"]


def answer_now():
    replies.run_due_replies(now=utcnow())


def test_a_visitor_talks_with_the_agent(client, caller, site):
    visitor = Visitor(client, site["id"])
    started = visitor.start()
    assert len(started["visitor_token"]) == 43
    assert started["config"]["title"] == "Shop"
    assert "identity_secret" not in str(started["config"])
    assert visitor.poll() == []
    assert visitor.poll() is None  # a widget nobody wrote in yet polls cheaply too

    mine = data(visitor.say(QUESTION, "c-1"), 201)
    assert (mine["from"], mine["text"], mine["client_message_id"]) == ("visitor", QUESTION, "c-1")
    answer_now()
    seen = visitor.poll()
    reply = [m for m in seen if m["from"] == "agent"]
    assert [m["text"] for m in reply] == [ANSWER]
    assert visitor.poll() is None  # nothing new: the cheap answer, 204

    # The platform sees the same conversation, as on any channel.
    [conversation] = data(caller.get(f"/v1/conversations?channel_id={site['id']}"))
    messages = data(caller.get(f"/v1/conversations/{conversation['id']}/messages?order=asc"))
    assert [(m["direction"], m["status"]) for m in messages] == [
        ("inbound", "received"),
        ("outbound", "delivered"),  # sent when stored, delivered when the widget fetched it
    ]
    data(visitor.call("POST", "read", {"message_id": reply[0]["id"]}))
    assert data(caller.get(f"/v1/messages/{reply[0]['id']}"))["status"] == "read"
    names = event_names(caller.workspace_id)
    for name in ("message.received", "message.sent", "message.delivered", "message.read"):
        assert name in names
    # The status change is visible to the widget once (with what changed
    # in the minutes before it, which the widget already has), then nothing.
    assert {m["id"]: m["status"] for m in visitor.poll()}[reply[0]["id"]] == "read"
    assert visitor.poll() is None


def test_a_repeated_client_message_id_is_stored_once(client, caller, site):
    visitor = Visitor(client, site["id"])
    visitor.start()
    first = data(visitor.say("Hello", "same"), 201)
    again = data(visitor.say("Hello", "same"), 201)
    assert first["id"] == again["id"]
    assert len([m for m in visitor.poll() if m["from"] == "visitor"]) == 1


def test_a_reload_shows_the_history(client, site):
    visitor = Visitor(client, site["id"])
    visitor.start()
    visitor.say(QUESTION, "c-1")
    answer_now()
    visitor.poll()
    reloaded = Visitor(client, site["id"], token=visitor.token)
    assert reloaded.start(visitor_token=visitor.token)["visitor_token"] == visitor.token
    assert [m["text"] for m in reloaded.poll()] == [QUESTION, ANSWER]


def test_a_human_taking_over_is_seen_by_the_visitor(client, caller, site):
    visitor = Visitor(client, site["id"])
    visitor.start()
    visitor.say("I want a person", "c-1")
    [conversation] = data(caller.get(f"/v1/conversations?channel_id={site['id']}"))
    data(caller.post(f"/v1/chats/{conversation['id']}/handoff"))
    answer_now()  # the agent stays silent during a handoff
    posted = caller.post(
        f"/v1/conversations/{conversation['id']}/messages", json={"text": "Hi, Rui here."}
    )
    assert posted.status_code == 201
    sending.send_queued()
    seen = visitor.poll()
    assert [(m["from"], m["text"]) for m in seen if m["from"] != "visitor"] == [
        ("human", "Hi, Rui here.")
    ]


@pytest.mark.parametrize("origin", ["https://evil.example.com", "http://shop.example.com"])
def test_other_origins_are_refused_in_words_the_page_can_read(client, site, origin):
    """The preflight is answered, so the browser sends the request; its
    refusal carries CORS for that origin (no credentials), so the widget
    reads why and what to do, and tells the page's console."""
    preflight = client.options(
        f"/widget/{site['id']}/api/session",
        headers={"Origin": origin, "Access-Control-Request-Method": "POST"},
    )
    assert preflight.status_code == 204
    assert preflight.headers["Access-Control-Allow-Origin"] == origin
    visitor = Visitor(client, site["id"], origin=origin)
    response = visitor.call("POST", "session", {})
    assert_error(response, 403, "ORIGIN_NOT_ALLOWED", origin)
    message = response.get_json()["error"]["message"]
    assert "Allowed sites" in message and "settings.allowed_origins" in message
    assert "widget.allow_localhost" in message
    assert response.headers["Access-Control-Allow-Origin"] == origin
    assert "Access-Control-Allow-Credentials" not in response.headers
    assert Message.select().count() == 0


@pytest.mark.parametrize("origin", ["http://localhost:5173", "http://127.0.0.1:8000"])
def test_localhost_pages_are_allowed_only_with_the_development_switch(app, client, site, origin):
    visitor = Visitor(client, site["id"], origin=origin)
    assert_error(visitor.call("POST", "session", {}), 403, "ORIGIN_NOT_ALLOWED")
    app.config["WIDGET_ALLOW_LOCALHOST"] = True
    started = visitor.call("POST", "session", {})
    assert started.status_code == 200
    assert started.headers["Access-Control-Allow-Origin"] == origin
    elsewhere = Visitor(client, site["id"], origin="http://localhost.evil.example")
    assert_error(elsewhere.call("POST", "session", {}), 403, "ORIGIN_NOT_ALLOWED")
    page = client.get(f"/widget/{site['id']}").headers["Content-Security-Policy"]
    assert "frame-ancestors 'self' https://shop.example.com http://localhost:*" in page


def test_the_allowed_origin_gets_cors_and_preflight_answers(client, site):
    preflight = client.options(
        f"/widget/{site['id']}/api/messages",
        headers={
            "Origin": SITE,
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "content-type, x-visitor-token",
        },
    )
    assert preflight.status_code == 204
    assert preflight.headers["Access-Control-Allow-Origin"] == SITE
    assert "POST" in preflight.headers["Access-Control-Allow-Methods"]
    assert "X-Visitor-Token" in preflight.headers["Access-Control-Allow-Headers"]
    response = Visitor(client, site["id"]).call("POST", "session", {})
    assert response.status_code == 200
    assert response.headers["Access-Control-Allow-Origin"] == SITE
    assert response.headers["Vary"] == "Origin"


def test_identity_verification(client, caller, site):
    signature = hmac.new(SECRET.encode(), b"user-42", hashlib.sha256).hexdigest()
    phone = Visitor(client, site["id"])
    token = phone.start(user_id="user-42", user_hash=signature)["visitor_token"]
    data(phone.say("From my phone", "p-1", email="ana@example.com"), 201)
    laptop = Visitor(client, site["id"])
    assert laptop.start(user_id="user-42", user_hash=signature)["visitor_token"] == token
    assert [m["text"] for m in laptop.poll()] == ["From my phone"]
    [contact] = data(caller.get("/v1/contacts"))
    assert contact["email"] == "ana@example.com"
    assert [i["external_id"] for i in contact["identities"]] == ["user:user-42"]

    forged = Visitor(client, site["id"])
    bad = forged.call("POST", "session", {"user_id": "user-43", "user_hash": signature})
    assert_error(bad, 401, "INVALID_USER_HASH")
    tampered = token.replace(token.split(".")[1], "dXNlci00Mw")  # user-43, same signature
    assert_error(forged.call("GET", "messages", token=tampered), 401, "INVALID_USER_HASH")


def test_an_unverified_visitor_cannot_claim_a_contact_by_its_email(client, caller, site):
    victim = Visitor(client, site["id"])
    victim.start()
    victim.say("My address is 1 Main St", "v-1", email="bia@example.com")
    intruder = Visitor(client, site["id"])
    intruder.start()
    intruder.say("Hi", "i-1", email="bia@example.com")
    assert [m["text"] for m in intruder.poll()] == ["Hi"]
    assert len(data(caller.get("/v1/contacts"))) == 2


def test_nothing_of_another_visitor_or_channel_is_seen(client, caller, other, site, agent_id):
    alice = Visitor(client, site["id"])
    alice.start()
    said = data(alice.say("secret order 123", "a-1"), 201)
    bob = Visitor(client, site["id"])
    bob.start()
    assert bob.poll() == []
    assert_error(bob.call("POST", "read", {"message_id": said["id"]}), 404, "MESSAGE_NOT_FOUND")
    second = make_channel(caller, "Site 2", "website", {"allowed_origins": [SITE]}, agent_id)
    assert Visitor(client, second["id"], token=alice.token).poll() == []
    foreign = make_channel(other, "Theirs", "website", {"allowed_origins": [SITE]})
    assert Visitor(client, foreign["id"], token=alice.token).poll() == []
    whatsapp = make_channel(caller, "WA", "whatsapp")
    assert_error(
        Visitor(client, whatsapp["id"]).call("POST", "session", {}), 404, "CHANNEL_NOT_FOUND"
    )
    assert_error(Visitor(client, site["id"]).call("GET", "messages"), 401, "MISSING_VISITOR_TOKEN")
    assert_error(
        Visitor(client, site["id"], token="not-a-token").call("GET", "messages"),
        401,
        "INVALID_VISITOR_TOKEN",
    )


def test_messages_over_the_size_limit_are_refused(client, site):
    visitor = Visitor(client, site["id"])
    visitor.start()
    assert_error(visitor.say("x" * 501, "big"), 400, "MESSAGE_TOO_LONG", "500")
    assert visitor.poll() == []
    huge = visitor.call("POST", "messages", {"text": "y" * 20_000, "client_message_id": "h"})
    assert_error(huge, 413, "PAYLOAD_TOO_LARGE")
    assert_error(visitor.say("", "empty"), 400, "VALIDATION_ERROR", "text")


@pytest.mark.parametrize(
    ("body", "content_type", "status", "named"),
    [
        (b"[" * 5000 + b"]" * 5000, "application/json", 400, "nested deeper than 32"),
        (b'{"text": "a\\ud800", "client_message_id": "s"}', "application/json", 400, "surrogate"),
        (b'{"text": "hi", "client_message_id": "t"}', "text/plain", 415, "text/plain"),
        (b"{nope", "application/json", 400, "send a JSON object"),
    ],
    ids=["nested", "lone-surrogate", "text-plain", "not-json"],
)
def test_a_body_the_widget_cannot_read_is_refused_naming_why(
    client, site, body, content_type, status, named
):
    # The first two were 500s: the widget read its bodies without the API's limits.
    visitor = Visitor(client, site["id"])
    visitor.start()
    for path in ("session", "messages"):
        headers = {"Origin": SITE, "X-Visitor-Token": visitor.token, "Content-Type": content_type}
        response = client.post(f"/widget/{site['id']}/api/{path}", data=body, headers=headers)
        code = "UNSUPPORTED_MEDIA_TYPE" if status == 415 else "VALIDATION_ERROR"
        assert_error(response, status, code, named)
    assert visitor.poll() == []


def test_the_channel_may_ask_for_name_and_email(client, caller, site):
    data(caller.patch(f"/v1/channels/{site['id']}", json={"settings": {"require_email": True}}))
    visitor = Visitor(client, site["id"])
    assert visitor.start()["config"]["require_email"] is True
    assert_error(visitor.say("Hi", "1"), 400, "VALIDATION_ERROR", "email")
    assert_error(visitor.say("Hi", "1", email="nope"), 400, "VALIDATION_ERROR", "email")
    assert visitor.say("Hi", "1", email="ana@example.com").status_code == 201


@pytest.mark.parametrize("name", ["Evil\r\nName\tTab", "Tab\tonly", "Nul\x00", "   "])
def test_a_name_the_contacts_api_refuses_is_refused_alike(client, caller, site, name):
    visitor = Visitor(client, site["id"])
    visitor.start()
    refused = assert_error(visitor.say("hi", "n1", name=name), 400, "VALIDATION_ERROR", "name: ")
    api = assert_error(caller.post("/v1/contacts", json={"name": name}), 400, "VALIDATION_ERROR")
    assert refused["message"] == api["message"]  # one validator, one verdict
    assert data(caller.get("/v1/contacts")) == []
    assert visitor.poll() == []


def test_a_visitor_without_a_name_is_a_contact_without_one(client, caller, site):
    visitor = Visitor(client, site["id"])
    visitor.start()
    data(visitor.say("hi", "n1"), 201)
    [contact] = data(caller.get("/v1/contacts"))
    # As the contacts API makes a contact given no name: "", not null.
    assert contact["name"] == data(caller.post("/v1/contacts", json={}), 201)["name"] == ""
    data(visitor.say("it is Ana", "n2", name=" Ana "), 201)
    assert data(caller.get(f"/v1/contacts/{contact['id']}"))["name"] == "Ana"


def test_unknown_fields_are_refused_by_name(client, caller, site):
    visitor = Visitor(client, site["id"])
    session = visitor.call("POST", "session", {"extra": 1})
    assert_error(session, 400, "VALIDATION_ERROR", "extra: Unknown field.")
    visitor.start()
    extra = visitor.say("hi", "n1", extra=1)
    assert_error(extra, 400, "VALIDATION_ERROR", "extra: Unknown field.")
    assert data(caller.get("/v1/contacts")) == []
    assert visitor.poll() == []
    data(visitor.say(QUESTION, "n2"), 201)
    answer_now()
    [reply] = [m for m in visitor.poll() if m["from"] == "agent"]
    read = visitor.call("POST", "read", {"message_id": reply["id"], "seen": True})
    assert_error(read, 400, "VALIDATION_ERROR", "seen: Unknown field.")
    assert data(caller.get(f"/v1/messages/{reply['id']}"))["status"] == "delivered"


def test_requests_are_limited_per_visitor_token(client, site):
    visitor = Visitor(client, site["id"])
    visitor.start()
    assert {visitor.call("GET", "messages").status_code for _ in range(30)} == {200}
    limited = visitor.call("GET", "messages")
    assert_error(limited, 429, "RATE_LIMIT_EXCEEDED", "visitor")
    assert int(limited.headers["Retry-After"]) >= 1
    # Another visitor on the same address still gets through.
    assert Visitor(client, site["id"]).call("POST", "session", {}).status_code == 200


def open_stream(client, channel_id, token, origin=SITE, headers=None):
    """GET .../api/events as an EventSource sends it (the token in the URL),
    closed before any event is read: what opening it answers."""
    sent = {"Origin": origin, **(headers or {})}
    query = f"?token={token}" if token else ""
    url = f"/widget/{channel_id}/api/events{query}"
    response = client.get(url, headers=sent, buffered=False)
    response.close()
    return response


def test_a_stream_is_refused_as_a_poll_is(client, site):
    visitor = Visitor(client, site["id"])
    visitor.start()
    assert open_stream(client, site["id"], visitor.token).status_code == 200
    assert_error(open_stream(client, site["id"], None), 401, "MISSING_VISITOR_TOKEN")
    assert_error(open_stream(client, site["id"], "made-up"), 401, "INVALID_VISITOR_TOKEN")
    elsewhere = open_stream(client, site["id"], visitor.token, origin="https://evil.example.com")
    assert_error(elsewhere, 403, "ORIGIN_NOT_ALLOWED")
    made_up = open_stream(client, site["id"], visitor.token, headers={"Last-Event-ID": "x/soon"})
    assert_error(made_up, 400, "VALIDATION_ERROR", "since")
    # A preflight lets a browser send Last-Event-ID when it reconnects.
    preflight = visitor.call("OPTIONS", "events", headers={"Access-Control-Request-Method": "GET"})
    assert "Last-Event-ID" in preflight.headers["Access-Control-Allow-Headers"]


def test_opening_a_stream_counts_against_the_limits(client, site):
    visitor = Visitor(client, site["id"])
    visitor.start()
    opened = {open_stream(client, site["id"], visitor.token).status_code for _ in range(30)}
    assert opened == {200}  # each closed at once, so the cap of 3 open streams holds
    limited = open_stream(client, site["id"], visitor.token)
    assert_error(limited, 429, "RATE_LIMIT_EXCEEDED", "visitor")


def test_made_up_tokens_of_kilobytes_are_counted_in_little_memory(app, client, site):
    # Each request is counted per visitor token before the token is checked:
    # kept as itself, a window of an 8,000-character token held that much.
    app.config["SERVER_PROXY_HOPS"] = 1
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for number in range(1_000):
            token = secrets.token_urlsafe(6_000)
            forwarded = {"X-Forwarded-For": f"10.{number // 250}.{number % 250}.1"}
            visitor = Visitor(client, site["id"], token=token, headers=forwarded)
            assert visitor.call("GET", "messages").status_code == 401
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert held < 5_000_000, held  # 2.5 MB; kept as themselves, the tokens held 10


def test_requests_are_limited_per_client_address(client, site):
    for _ in range(60):
        assert Visitor(client, site["id"]).call("POST", "session", {}).status_code == 200
    limited = Visitor(client, site["id"]).call("POST", "session", {})
    assert_error(limited, 429, "RATE_LIMIT_EXCEEDED", "address")


def test_new_visitors_are_limited_per_client_address(app, caller, client, site):
    """Each new visitor's first message makes a contact; tokens are anyone's
    to make up, so a script need not even start a session."""
    app.config["SERVER_PROXY_HOPS"] = 1
    office = {"X-Forwarded-For": "198.51.100.7"}

    def contacts():
        return caller.get("/v1/contacts").get_json()["pagination"]["total"]

    returning = Visitor(client, site["id"], headers=office)
    returning.start()
    assert returning.say("Hi", "1").status_code == 201
    for _ in range(19):  # the default bound, widget.address_new_visitors_per_minute
        made_up = Visitor(client, site["id"], token=secrets.token_urlsafe(32), headers=office)
        assert made_up.say("Hi", "1").status_code == 201
    before = contacts()
    assert before == 20
    one_more = Visitor(client, site["id"], headers=office)
    one_more.start()  # a token costs nothing; its first message would make a contact
    limited = one_more.say("Hi", "1")
    assert_error(limited, 429, "RATE_LIMIT_EXCEEDED", "new visitors")
    assert int(limited.headers["Retry-After"]) >= 1
    assert contacts() == before
    assert returning.say("Still there?", "2").status_code == 201  # not new: not counted
    elsewhere = Visitor(client, site["id"], headers={"X-Forwarded-For": "203.0.113.5"})
    elsewhere.start()
    assert elsewhere.say("Hi", "1").status_code == 201
    assert contacts() == before + 1


def test_behind_a_proxy_the_forwarded_address_is_limited(app, client, site):
    def start(forwarded):
        visitor = Visitor(client, site["id"], headers={"X-Forwarded-For": forwarded})
        return visitor.call("POST", "session", {})

    # Unless proxies are declared, the header is the client's to write: ignored.
    for index in range(60):
        assert start(f"203.0.113.{index}").status_code == 200
    assert_error(start("203.0.113.99"), 429, "RATE_LIMIT_EXCEEDED", "address")
    app.config["SERVER_PROXY_HOPS"] = 1
    # What the proxy appended counts, not what the client wrote before it.
    for _ in range(60):
        assert start("198.51.100.7, 192.0.2.1").status_code == 200
    assert_error(start("198.51.100.8, 192.0.2.1"), 429, "RATE_LIMIT_EXCEEDED", "address")
    assert start("192.0.2.2").status_code == 200


@pytest.fixture
def flask_calls(app, monkeypatch):
    """The paths that reached Flask past api.inbound's middleware."""
    calls, middleware = [], app.wsgi_app
    inner = middleware.wsgi_app

    def counted(environ, start_response):
        calls.append(environ["PATH_INFO"])
        return inner(environ, start_response)

    monkeypatch.setattr(middleware, "wsgi_app", counted)
    return calls


def test_an_unchanged_poll_is_answered_ahead_of_flask_with_every_check(
    client, caller, site, agent_id, flask_calls
):
    visitor = Visitor(client, site["id"])
    visitor.start()
    data(visitor.say("Hi", "1"), 201)
    visitor.poll()
    query = f"messages?seen={visitor.tag}&since={visitor.since}"
    flask_calls.clear()
    unchanged = visitor.call("GET", query)
    assert unchanged.status_code == 204 and flask_calls == []
    assert unchanged.headers["Access-Control-Allow-Origin"] == SITE
    assert unchanged.headers["Vary"] == "Origin"
    assert unchanged.headers["X-Request-ID"]
    # Whatever the route refuses reaches it, and is refused as every error is.
    elsewhere = Visitor(client, site["id"], origin="https://evil.example.com", token=visitor.token)
    assert_error(elsewhere.call("GET", query), 403, "ORIGIN_NOT_ALLOWED")
    assert_error(visitor.call("GET", query, token="not-a-token"), 401, "INVALID_VISITOR_TOKEN")
    bad_since = f"messages?seen={visitor.tag}&since=yesterday"
    assert_error(visitor.call("GET", bad_since), 400, "VALIDATION_ERROR", "since")
    second = make_channel(caller, "Site 2", "website", {"allowed_origins": [SITE]}, agent_id)
    # Another channel's conversation is not the one the tag was of: the route answers.
    other_channel = Visitor(client, second["id"], token=visitor.token).call("GET", query)
    assert data(other_channel)["messages"] == []
    assert len([path for path in flask_calls if path.startswith("/widget/")]) == 4


def gunicorn_call(app, raw):
    """The status code answered to raw request bytes read
    by gunicorn's own parser into gunicorn's own environ, as `serve` does:
    it marks every request wsgi.input_terminated, bodiless GETs included."""
    client, server = socket.socketpair()
    with client, server:
        client.sendall(raw)
        config = gunicorn.config.Config()
        parsed = next(gunicorn.http.get_parser(config, server, ("127.0.0.1", 40000)))
        response, environ = gunicorn.http.wsgi.create(
            parsed, server, ("127.0.0.1", 40000), ("127.0.0.1", 8080), config
        )
        assert environ["wsgi.input_terminated"] is True
        for chunk in app.wsgi_app(environ, response.start_response):
            response.write(chunk)
        response.close()
        return int(client.recv(65536).split(b" ", 2)[1])


def test_an_unchanged_poll_read_by_gunicorn_is_answered_ahead_of_flask(
    app, client, site, flask_calls
):
    visitor = Visitor(client, site["id"])
    visitor.start()
    data(visitor.say("Hi", "1"), 201)
    visitor.poll()
    head = (
        f"GET /widget/{site['id']}/api/messages?seen={visitor.tag}&since={visitor.since} "
        f"HTTP/1.1\r\nHost: 127.0.0.1\r\nOrigin: {SITE}\r\nX-Visitor-Token: {visitor.token}\r\n"
    )
    flask_calls.clear()
    assert gunicorn_call(app, (head + "\r\n").encode()) == 204
    assert flask_calls == []
    # A GET with a body (chunked, of unknown length) goes on to the route.
    chunked = head + "Transfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n"
    assert gunicorn_call(app, chunked.encode()) == 204
    assert len(flask_calls) == 1


def test_each_poll_says_when_to_ask_again(client, site, flask_calls):
    """1 s while the visitor's message awaits its answer (two minutes at
    most), else 5 s: on the route's answers and on the fast path's 204,
    readable by the widget's script across origins."""
    visitor = Visitor(client, site["id"])
    visitor.start()

    def pace():
        query = f"messages?seen={visitor.tag}" if visitor.tag else "messages"
        query += f"&since={visitor.since}" if visitor.since else ""
        response = visitor.call("GET", query)
        if response.status_code == 200:
            changed = data(response)
            visitor.since, visitor.tag = changed["since"], changed["tag"]
        assert response.headers["Access-Control-Expose-Headers"] == "X-Poll-After"
        return response.status_code, response.headers["X-Poll-After"]

    assert pace() == (200, "5")  # nobody wrote yet
    assert pace() == (204, "5")
    mine = data(visitor.say(QUESTION, "c-1"), 201)
    assert pace() == (200, "1")  # the visitor's own message, awaiting its answer
    flask_calls.clear()
    assert pace() == (204, "1") and flask_calls == []  # the fast path says it too
    answer_now()
    assert pace() == (200, "5")
    assert pace() == (204, "5")
    data(visitor.say("And on Sundays?", "c-2"), 201)
    assert pace() == (200, "1")
    # Unanswered for two minutes: the quiet pace again (the agent may never answer).
    Message.update(created_at=utcnow() - timedelta(minutes=2)).where(
        Message.conversation == Message.get_by_id(mine["id"]).conversation_id
    ).execute()
    assert pace() == (204, "5")


def test_an_unchanged_poll_counts_once_against_the_limits(client, site, flask_calls):
    visitor = Visitor(client, site["id"])
    visitor.start()
    visitor.poll()  # the session had no token yet: this is the token's first request of 30
    query = f"messages?seen={visitor.tag}"
    assert {visitor.call("GET", query).status_code for _ in range(29)} == {204}
    assert_error(visitor.call("GET", query), 429, "RATE_LIMIT_EXCEEDED", "visitor")
    assert flask_calls.count(f"/widget/{site['id']}/api/messages") == 2  # the first poll, the 429


def test_the_script_and_the_page_are_served(client, caller, site):
    widget = data(caller.get(f"/v1/channels/{site['id']}/widget"))
    script = client.get(widget["script_url"].replace("http://127.0.0.1:8080", ""))
    assert script.status_code == 200
    assert script.mimetype == "text/javascript"
    assert b"textContent" in script.data and b"innerHTML" not in script.data
    page = client.get(widget["page_url"].replace("http://127.0.0.1:8080", ""))
    assert page.status_code == 200 and page.mimetype == "text/html"
    assert f"frame-ancestors 'self' {SITE};" in page.headers["Content-Security-Policy"]
    assert f"/widget/{site['id']}/widget.js" in page.get_data(as_text=True)
    assert_error(
        client.get("/widget/6f1c4b9e-8a47-4a1e-9f0e-3e2b1c0d9a88/widget.js"),
        404,
        "CHANNEL_NOT_FOUND",
    )


def test_website_channels_connect_and_send(caller, site):
    assert site["agent_id"] is not None
    assert site["settings"]["identity_secret_set"] is True
    assert "identity_secret" not in site["settings"]
