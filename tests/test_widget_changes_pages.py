"""The widget's poll past a full page: more than visitors.PAGE messages
changed within visitors.LAG all reach the visitor, in order, once each.

Before, the next cursor stepped back LAG from the page's newest change, so a
page that all changed within LAG was read again, its tag matched, and every
poll answered 204: the newer messages never came."""

import pytest

from agent_platform.channels.website import push, visitors
from agent_platform.channels.website.visitors import PAGE
from agent_platform.models import Channel, Message
from agent_platform.models.base import utcnow
from conversations_helpers import data, make_channel

SITE = "https://shop.example.com"
# Enough polls to page through anything these tests write, and then some.
POLLS = 10


@pytest.fixture
def settings(tmp_path):
    return {
        "DATABASE_PATH": str(tmp_path / "test.db"),
        # Hundreds of messages from one visitor within a minute.
        "WIDGET_VISITOR_REQUESTS_PER_MINUTE": 5000,
        "WIDGET_ADDRESS_REQUESTS_PER_MINUTE": 5000,
    }


@pytest.fixture
def site(caller):
    agent = data(caller.post("/v1/agents", json={"name": "Ana"}), 201)["id"]
    return make_channel(caller, "Site", "website", {"allowed_origins": [SITE]}, agent)


class Widget:
    """A visitor's widget: it polls with the cursor it was given, and keeps
    messages by id as widget.js does (a message sent again replaces itself)."""

    def __init__(self, client, channel_id):
        self.client, self.channel_id = client, channel_id
        self.since = self.tag = None
        self.shown, self.received = {}, []
        self.token = data(self.call("POST", "session", {}))["visitor_token"]

    def call(self, method, path, body=None):
        headers = {"Origin": SITE, "X-Visitor-Token": getattr(self, "token", "")}
        url = f"/widget/{self.channel_id}/api/{path}"
        return self.client.open(url, method=method, json=body, headers=headers)

    def say(self, count, start=0):
        for number in range(start, start + count):
            body = {"text": f"message {number}", "client_message_id": f"c-{number}"}
            assert self.call("POST", "messages", body).status_code == 201

    def poll(self):
        """The messages of one answer, or None for a 204."""
        query = f"?seen={self.tag}&since={self.since or ''}" if self.tag else ""
        response = self.call("GET", f"messages{query}")
        if response.status_code == 204:
            return None
        changed = data(response)
        self.since, self.tag = changed["since"], changed["tag"]
        self.received += [message["text"] for message in changed["messages"]]
        self.shown.update((message["id"], message["text"]) for message in changed["messages"])
        return changed["messages"]

    def poll_until_quiet(self):
        """Polls until one answers 204; how many answered."""
        for answered in range(POLLS):
            if self.poll() is None:
                return answered
        raise AssertionError(f"still answering after {POLLS} polls")


def texts(start, stop):
    return [f"message {number}" for number in range(start, stop)]


def test_more_than_a_page_within_lag_arrives_in_order_once_each(client, site):
    widget = Widget(client, site["id"])
    widget.say(PAGE + 70)  # all within seconds, far inside LAG

    assert widget.poll_until_quiet() == 2  # a full page, then the rest
    assert widget.received == texts(0, PAGE + 70)
    assert widget.poll() is None  # and it stays quiet


def test_a_widget_that_has_a_full_page_gets_what_follows_it(client, site):
    widget = Widget(client, site["id"])
    widget.say(PAGE)
    assert widget.poll_until_quiet() == 1
    widget.say(70, start=PAGE)

    widget.poll_until_quiet()
    # The page it had may come again (the widget replaces it by id), the
    # newer ones all come, and in the order they were written.
    assert list(widget.shown.values()) == texts(0, PAGE + 70)
    assert widget.received[-70:] == texts(PAGE, PAGE + 70)
    assert all(widget.received.count(text) == 1 for text in texts(PAGE, PAGE + 70))


def test_more_than_a_page_changed_at_one_moment_all_arrive(client, caller, site):
    widget = Widget(client, site["id"])
    widget.say(PAGE + 30)
    [conversation] = data(caller.get(f"/v1/conversations?channel_id={site['id']}"))
    # One moment for all (a bulk change): a page must not end inside it.
    moment = utcnow()
    Message.update(updated_at=moment).where(Message.conversation == conversation["id"]).execute()

    assert widget.poll_until_quiet() == 1
    assert widget.received == texts(0, PAGE + 30)  # one moment: in the order written (ids)
    widget.say(5, start=PAGE + 30)
    widget.poll_until_quiet()
    assert list(widget.shown.values()) == texts(0, PAGE + 35)
    assert widget.received[-5:] == texts(PAGE + 30, PAGE + 35)


def test_a_stream_sends_what_follows_a_full_page_at_once(app, client, site):
    # The stream reads again when something changes: the rest of a burst
    # waited for the next change, or for the stream's end.
    widget = Widget(client, site["id"])
    widget.say(PAGE + 70)
    sent = []
    with app.app_context():
        channel = Channel.get_by_id(site["id"])
        visitor = visitors.visitor(channel, widget.token)
        for changed in push.follow(channel, visitor, None, None, heartbeat=0.1, lifetime=1):
            if changed is None:
                break  # the first heartbeat: nothing more was ready to send
            sent += [message["text"] for message in changed["messages"]]
    assert sent == texts(0, PAGE + 70)
