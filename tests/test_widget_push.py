"""The widget's push stream, GET /widget/<channel>/api/events, from a real
`agent-platform serve` (gunicorn and its scheduler): replies and a human's
messages arrive without a poll, a reconnect with Last-Event-ID resumes
without loss, heartbeats, the stream's end, the cap on one visitor's
streams, and a visitor hearing nothing of anyone else."""

import json
import os
import subprocess
import sys
import time

import pytest
import requests

from test_cli import free_port, serving

SITE = "https://shop.example.com"
QUESTION = "How much is delivery?"
ANSWER = "Delivery costs 5 euros in Lisbon."
HEARTBEAT, LIFETIME = 0.5, 4


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    """The service with fast heartbeats and short streams; (base, API session)."""
    port = free_port()
    environ = {
        **os.environ,
        "AGENT_PLATFORM_DATABASE_PATH": str(tmp_path_factory.mktemp("push") / "push.db"),
        "AGENT_PLATFORM_REPLIES_DEBOUNCE_SECONDS": "0",
        "AGENT_PLATFORM_MESSAGES_SEND_POLL_SECONDS": "0.2",
        "AGENT_PLATFORM_WIDGET_STREAM_HEARTBEAT_SECONDS": str(HEARTBEAT),
        "AGENT_PLATFORM_WIDGET_STREAM_MAX_SECONDS": str(LIFETIME),
    }
    with serving(["--port", str(port)], environ, port) as (base, lines):
        api = requests.Session()
        api.headers["x-api-key"] = lines[1].strip()
        yield base, api, environ


def another_workspace(service):
    """An API session of a new workspace (made by the CLI, on the same database)."""
    base, _, environ = service

    def cli(*arguments):
        command = [sys.executable, "-m", "agent_platform", *arguments, "--json"]
        done = subprocess.run(command, env=environ, capture_output=True, text=True, check=True)
        return json.loads(done.stdout)

    workspace = cli("workspaces", "create", "--name", "Other")
    key = cli("keys", "create", "--workspace", workspace["id"], "--name", "k", "--scopes", "all")
    api = requests.Session()
    api.headers["x-api-key"] = key["key"]
    return base, api


def call(api, method, url, body=None, status=200):
    response = api.request(method, url, json=body, timeout=10)
    assert response.status_code == status, response.text
    return response.json()["data"]


def website(service):
    """A website channel for SITE, with an agent that knows ANSWER: its id."""
    base, api = service[:2]
    agent = call(api, "POST", f"{base}/v1/agents", {"name": "Ana"}, 201)["id"]
    qa = {"type": "qa", "question": QUESTION, "answer": ANSWER}
    call(api, "POST", f"{base}/v1/agents/{agent}/trainings", qa, 201)
    body = {"name": "Site", "type": "website", "settings": {"allowed_origins": [SITE]}}
    channel = call(api, "POST", f"{base}/v1/channels", body, 201)["id"]
    call(api, "POST", f"{base}/v1/channels/{channel}/connect", {"agent_id": agent})
    return channel


@pytest.fixture(scope="module")
def channel(service):
    return website(service)


class Visitor:
    def __init__(self, service, channel_id):
        self.base = service[0]
        self.url = f"{self.base}/widget/{channel_id}/api/"
        started = self.call("POST", "session", {})
        self.token = started.json()["data"]["visitor_token"]

    def call(self, method, path, body=None, **kwargs):
        headers = {"Origin": SITE, **kwargs.pop("headers", {})}
        if getattr(self, "token", None):
            headers["X-Visitor-Token"] = self.token
        return requests.request(
            method, self.url + path, json=body, headers=headers, timeout=10, **kwargs
        )

    def say(self, text, client_message_id):
        body = {"text": text, "client_message_id": client_message_id}
        assert self.call("POST", "messages", body).status_code == 201

    def stream(self, last_event_id=None, query=""):
        headers = {"Origin": SITE, "Accept": "text/event-stream"}
        if last_event_id:
            headers["Last-Event-ID"] = last_event_id
        url = f"{self.url}events?token={self.token}{query}"
        return Stream(requests.get(url, headers=headers, stream=True, timeout=10))


class Stream:
    """A server-sent event stream, read event by event."""

    def __init__(self, response):
        self.response = response
        self.lines = response.iter_lines(chunk_size=None, decode_unicode=True)
        self.last_id = None

    def event(self):
        """The next event as {field: value} ({"comment": ...} for a
        heartbeat), or None when the stream ended."""
        fields = {}
        for line in self.lines:
            if line == "":
                if fields:
                    if "id" in fields:
                        self.last_id = fields["id"]
                    return fields
                continue
            name, _, value = line.partition(":")
            fields[name or "comment"] = value.removeprefix(" ")
        return None

    def changes(self):
        """The next event that carries changes, its data parsed (heartbeats skipped)."""
        while (event := self.event()) is not None:
            if "data" in event:
                return json.loads(event["data"])
        return None

    def until(self, predicate, seconds=15):
        """Messages pushed until one satisfies `predicate`: all seen, by id."""
        seen, deadline = {}, time.monotonic() + seconds
        while time.monotonic() < deadline:
            changed = self.changes()
            assert changed is not None, f"the stream ended; seen {seen}"
            seen.update({m["id"]: m for m in changed["messages"]})
            if any(predicate(m) for m in seen.values()):
                return seen
        raise AssertionError(f"nothing matched in {seconds} s; seen {seen}")

    def close(self):
        self.response.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()


def test_the_reply_and_a_humans_message_are_pushed(service, channel):
    base, api = service[:2]
    visitor = Visitor(service, channel)
    with visitor.stream() as stream:
        assert stream.response.status_code == 200
        headers = stream.response.headers
        assert headers["Content-Type"].startswith("text/event-stream")
        assert headers["Cache-Control"] == "no-cache"
        assert headers["X-Accel-Buffering"] == "no"
        assert headers["Access-Control-Allow-Origin"] == SITE
        assert stream.event() == {"retry": "2000"}
        assert stream.changes()["messages"] == []  # where it starts: nothing yet
        visitor.say(QUESTION, "c-1")
        seen = stream.until(lambda m: m["from"] == "agent")
        assert [m["text"] for m in seen.values()] == [QUESTION, ANSWER]

        [conversation] = call(api, "GET", f"{base}/v1/conversations?channel_id={channel}")
        chat = conversation["id"]
        call(api, "POST", f"{base}/v1/chats/{chat}/handoff")
        call(api, "POST", f"{base}/v1/conversations/{chat}/messages", {"text": "Rui here."}, 201)
        seen = stream.until(lambda m: m["from"] == "human")
        assert [m["text"] for m in seen.values() if m["from"] == "human"] == ["Rui here."]
    # Pushed, never polled: the reply became delivered when the stream read it.
    messages = call(api, "GET", f"{base}/v1/conversations/{chat}/messages?order=asc")
    assert [m["status"] for m in messages if m["sender_type"] == "agent"] == ["delivered"]


def test_a_reconnect_with_last_event_id_misses_nothing(service, channel):
    visitor = Visitor(service, channel)
    with visitor.stream() as stream:
        stream.changes()
        left_at = stream.last_id
    visitor.say(QUESTION, "c-1")  # while no stream is open
    with visitor.stream(last_event_id=left_at) as stream:
        seen = stream.until(lambda m: m["from"] == "agent")
        assert [m["text"] for m in seen.values()] == [QUESTION, ANSWER]
        newest = stream.last_id
    # From the newest id, nothing is sent again: heartbeats only.
    with visitor.stream(last_event_id=newest) as stream:
        assert stream.event() == {"retry": "2000"}
        assert stream.event() == {"comment": "heartbeat"}
    # The query's cursor (what a widget that polled has) works the same.
    tag, _, since = newest.partition("/")
    with visitor.stream(query=f"&seen={tag}&since={since}") as stream:
        stream.event()
        assert stream.event() == {"comment": "heartbeat"}


def test_a_quiet_stream_beats_and_ends_after_its_lifetime(service, channel):
    visitor = Visitor(service, channel)
    started = time.monotonic()
    with visitor.stream() as stream:
        events = []
        while (event := stream.event()) is not None:
            events.append(event)
    lasted = time.monotonic() - started
    assert LIFETIME - 0.5 < lasted < LIFETIME + 3
    beats = [event for event in events if event == {"comment": "heartbeat"}]
    assert len(beats) >= LIFETIME / HEARTBEAT - 3


def test_one_visitor_holds_at_most_three_streams(service, channel):
    visitor, other = Visitor(service, channel), Visitor(service, channel)
    streams = [visitor.stream() for _ in range(3)]
    try:
        assert all(stream.response.status_code == 200 for stream in streams)
        refused = visitor.stream()
        assert refused.response.status_code == 429
        error = refused.response.json()["error"]
        assert (error["code"], error["status"]) == ("TOO_MANY_STREAMS", 429)
        with other.stream() as theirs:  # another visitor is not counted with them
            assert theirs.response.status_code == 200
        streams.pop().close()
        # The server sees the stream gone at its next heartbeat.
        deadline = time.monotonic() + 10
        while (again := visitor.stream()).response.status_code == 429:
            assert time.monotonic() < deadline
            time.sleep(0.2)
        streams.append(again)
    finally:
        for stream in streams:
            stream.close()


def test_a_visitor_hears_nothing_of_another_visitor_or_workspace(service, channel):
    mine, neighbour = Visitor(service, channel), Visitor(service, channel)
    elsewhere = Visitor(service, website(another_workspace(service)))
    with mine.stream() as stream:
        stream.changes()
        neighbour.say(QUESTION, "n-1")
        elsewhere.say(QUESTION, "e-1")
        mine.say("Hello?", "m-1")
        seen = {}
        while (event := stream.event()) is not None:  # to the stream's end
            if "data" in event:
                seen.update({m["id"]: m for m in json.loads(event["data"])["messages"]})
    texts = [m["text"] for m in seen.values()]
    assert texts[0] == "Hello?" and len(texts) == 2  # their message, and the agent's greeting
    assert QUESTION not in texts and ANSWER not in texts
    # The others were answered meanwhile, and their streams have it.
    for visitor in (neighbour, elsewhere):
        with visitor.stream() as theirs:
            seen = theirs.until(lambda m: m["from"] == "agent")
            assert [m["text"] for m in seen.values()] == [QUESTION, ANSWER]
