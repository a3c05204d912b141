"""What the widget's push streams read when a visitor writes for the first
time (channels.website.push.follow, in this process): a stream whose
visitor has no contact yet listens to the whole channel, and every first
message on it concerns them all."""

import threading
import time
from collections import Counter

import pytest

from agent_platform.channels.website import push, visitors
from agent_platform.models import Channel
from conversations_helpers import make_channel

SITE = "https://shop.example.com"
STREAMS = 12


class Listener:
    """A visitor's stream followed on a thread of its own until stopped."""

    def __init__(self, app, channel_id):
        self.app, self.channel_id = app, channel_id
        with app.app_context():
            self.token = visitors.start(Channel.get_by_id(channel_id))["visitor_token"]
        self.beats, self.changes, self.stop = 0, [], threading.Event()
        self.thread = threading.Thread(target=self._follow)
        self.thread.start()

    def _follow(self):
        with self.app.app_context():
            channel = Channel.get_by_id(self.channel_id)
            visitor = visitors.visitor(channel, self.token)
            for changed in push.follow(channel, visitor, None, None, heartbeat=0.05, lifetime=30):
                if changed is None:
                    self.beats += 1
                else:
                    self.changes.append(changed)
                if self.stop.is_set():
                    return

    def say(self, client, text):
        headers = {"Origin": SITE, "X-Visitor-Token": self.token}
        body = {"text": text, "client_message_id": "first"}
        sent = client.post(f"/widget/{self.channel_id}/api/messages", json=body, headers=headers)
        assert sent.status_code == 201, sent.get_data(as_text=True)


def waited(condition, what, seconds=10):
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"not {what} within {seconds} s"
        time.sleep(0.02)


@pytest.fixture
def listeners(app, caller):
    channel = make_channel(caller, "Site", "website", {"allowed_origins": [SITE]})
    started = [Listener(app, channel["id"]) for _ in range(STREAMS)]
    yield started
    for listener in started:
        listener.stop.set()
    for listener in started:
        listener.thread.join(10)


def test_a_first_message_is_read_once_for_all_the_streams_it_concerns(app, listeners, monkeypatch):
    counted = Counter()
    for name in ("contact_id", "visitor_identities"):
        monkeypatch.setattr(visitors, name, _counting(counted, name, getattr(visitors, name)))
    waited(lambda: all(listener.beats for listener in listeners), "every stream listening")
    counted.clear()  # each stream read its visitor's contact as it opened
    writer, others = listeners[0], listeners[1:]
    writer.say(app.test_client(), "Hello?")
    waited(lambda: "Hello?" in _texts(writer), "the writer's stream sent the message")
    # Every other stream has beaten twice since: anything it was told, it has seen.
    beats = [listener.beats for listener in others]
    waited(lambda: all(o.beats > b + 1 for o, b in zip(others, beats, strict=True)), "waiting")
    assert not any(_texts(listener) for listener in others)
    # The contact the change names, read once for all (by the watcher); the
    # writer's stream then read its visitor's contact, once.
    assert counted == {"visitor_identities": 1, "contact_id": 1}


def _texts(listener):
    return [m["text"] for changed in listener.changes for m in changed["messages"]]


def _counting(counted, name, function):
    def counting(*args):
        counted[name] += 1
        return function(*args)

    return counting
