"""The inbox's live stream, GET /app/events, from a real `agent-platform
serve`: a change arrives within a second of a message stored or a state
change (a take-over, a close), another workspace's person hears nothing of
it, quiet streams beat and end, and a person's open streams are capped."""

import json
import time

import pytest
import requests

from inbox_served import (
    KNOWN,
    call,
    customer_writes,
    person_link,
    served,
    shop,
    signed_in,
    wait_for,
)

HEARTBEAT, LIFETIME = 0.5, 8  # long enough for the cap test to hold two on a busy machine


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    settings = {"INBOX_STREAM_HEARTBEAT_SECONDS": HEARTBEAT, "INBOX_STREAM_MAX_SECONDS": LIFETIME,
                "INBOX_STREAMS_PER_USER": 2}  # fmt: skip
    with served(tmp_path_factory.mktemp("live"), **settings) as (base, api, environ, graph):
        channel_id = shop(base, api)
        person = signed_in(person_link(environ, "ana@example.com", "Ana"))
        yield {"base": base, "api": api, "environ": environ, "channel": channel_id,
               "person": person}  # fmt: skip


class Stream:
    """A server-sent event stream, read event by event."""

    def __init__(self, session, url):
        self.response = session.get(url, stream=True, timeout=10)
        assert self.response.status_code == 200, self.response.text
        assert self.response.headers["Content-Type"].startswith("text/event-stream")
        self.lines = self.response.iter_lines(chunk_size=None, decode_unicode=True)

    def event(self):
        """The next event as {field: value} ({"comment": ...} for a heartbeat), None at the end."""
        fields = {}
        for line in self.lines:
            if line == "":
                if fields:
                    return fields
                continue
            name, _, value = line.partition(":")
            fields[name or "comment"] = value.removeprefix(" ")
        return None

    def changes(self, until):
        """The changes sent until `until(changes)` holds: all of them (heartbeats skipped)."""
        seen = []
        while (event := self.event()) is not None:
            if event.get("event") == "change":
                seen += json.loads(event["data"])
                if until(seen):
                    return seen
        raise AssertionError(f"the stream ended; seen {seen}")

    def close(self):
        self.response.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()


def test_a_message_stored_reaches_the_stream_within_a_second(service):
    base = service["base"]
    with Stream(service["person"], f"{base}/app/events") as stream:
        assert stream.event() == {"retry": "2000"}
        customer_writes(base, service["channel"], "Hello?", "wamid.LIVE1", sender="5511900000001")
        stored = time.monotonic()
        seen = stream.changes(
            lambda changes: any(c["event"] == "message.received" for c in changes)
        )
        assert time.monotonic() - stored < 1.0
    [conversation] = [c for c in call(service["api"], "GET", f"{base}/v1/conversations")
                      if c["id"] == seen[0]["conversation"]]  # fmt: skip
    # One conversation's stream hears of it, and only of it.
    url = f"{base}/app/events?conversation={conversation['id']}"
    with Stream(service["person"], url) as stream:
        stream.event()
        customer_writes(base, service["channel"], "Other", "wamid.LIVE2", sender="5511900000002")
        customer_writes(base, service["channel"], "Again", "wamid.LIVE3", sender="5511900000001")
        seen = stream.changes(
            lambda changes: any(c["event"] == "message.received" for c in changes)
        )
        assert {c["conversation"] for c in seen} == {conversation["id"]}


def test_a_state_change_reaches_the_stream_within_a_second(service):
    """A take-over and a close through the API, not only a message."""
    base, api = service["base"], service["api"]
    # A question the agent answers: it hands nothing off by itself.
    customer_writes(base, service["channel"], KNOWN[0], "wamid.LIVE5", sender="5511900000005")
    newest = max(call(api, "GET", f"{base}/v1/conversations"), key=lambda c: c["created_at"])
    conversation_id = newest["id"]  # this customer's: their first message
    url = f"{base}/app/events?conversation={conversation_id}"
    with Stream(service["person"], url) as stream:
        stream.event()
        for path, event in (("/v1/chats/{}/handoff", "agent.handoff_started"),
                            ("/v1/conversations/{}/close", "conversation.closed")):  # fmt: skip
            call(api, "POST", base + path.format(conversation_id), {})
            changed = time.monotonic()
            stream.changes(lambda changes, e=event: any(c["event"] == e for c in changes))
            assert time.monotonic() - changed < 1.0, event


def test_another_workspace_hears_nothing(service):
    base, environ = service["base"], service["environ"]
    from inbox_served import cli

    cli(environ, "workspaces", "create", "--name", "Other")
    stranger = signed_in(person_link(environ, "bo@example.com", "Bo", workspace="Other"))
    with (
        Stream(stranger, f"{base}/app/events") as theirs,
        Stream(service["person"], f"{base}/app/events") as ours,
    ):
        customer_writes(base, service["channel"], "Secret", "wamid.LIVE4", sender="5511900000003")
        ours.changes(lambda changes: any(c["event"] == "message.received" for c in changes))
        # Theirs beats and ends after its lifetime, having carried no change.
        events = []
        while (event := theirs.event()) is not None:
            events.append(event)
        assert events[0] == {"retry": "2000"}
        assert {"comment": "heartbeat"} in events
        assert all("data" not in event for event in events), events


def test_a_person_holds_at_most_their_cap_of_streams(service):
    base = service["base"]
    # The other tests' streams are let go at their next heartbeat, at the
    # latest at the end of their lifetime.
    first, second = wait_for(lambda: _two_open(service), "let two streams open", seconds=20)
    with first, second:
        refused = service["person"].get(f"{base}/app/events", timeout=10)
        assert refused.status_code == 429
    # Released when closed.
    wait_for(lambda: _opens(service), "let a stream open again", seconds=5)


def _open(service):
    """A stream, or None while the person's streams are all taken."""
    try:
        return Stream(service["person"], f"{service['base']}/app/events")
    except AssertionError:
        return None


def _two_open(service):
    """Two streams held at once, or None (both let go) while a slot is taken."""
    first = _open(service)
    second = first and _open(service)
    if second:
        return first, second
    if first:
        first.close()
    return None


def _opens(service):
    response = service["person"].get(f"{service['base']}/app/events", stream=True, timeout=10)
    response.close()
    return response.status_code == 200


def test_signed_out_gets_no_stream(service):
    response = requests.get(f"{service['base']}/app/events", allow_redirects=False, timeout=10)
    assert response.status_code == 302
