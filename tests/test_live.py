"""events.live, through its public functions: who hears which change, a
change committed by another process, the in-process wake, the bounded
queue, and the watcher that runs only while someone listens."""

import subprocess
import sys
import textwrap
import threading
import time

import pytest

from agent_platform import events
from agent_platform.db import database, transaction
from agent_platform.events import live
from conftest import ON_POSTGRESQL
from conversations_helpers import WA_SETTINGS, data, inbound, make_agent, make_channel


def heard(subscription, count=1, seconds=5):
    """The changes the subscription gets until `count` came or `seconds` passed."""
    got, deadline = [], time.monotonic() + seconds
    while len(got) < count and time.monotonic() < deadline:
        batch = subscription.next(deadline - time.monotonic())
        assert batch != live.RESYNC
        got.extend(batch)
    return got


def watcher_threads():
    return [t for t in threading.enumerate() if t.name == "live-watcher"]


@pytest.fixture
def channels(caller, other):
    """A WhatsApp channel in each of two workspaces."""
    return (
        make_channel(caller, settings=WA_SETTINGS, agent_id=make_agent(caller)),
        make_channel(other, settings={**WA_SETTINGS, "phone_number_id": "2"}),
    )


def test_subscribers_hear_their_workspace_conversation_or_contact_only(caller, other, channels):
    mine, theirs = channels
    first = inbound(mine["id"], "a-1", sender_id="5511900000001").message
    second = inbound(mine["id"], "b-1", sender_id="5511900000002").message
    with (
        live.subscribe(caller.workspace_id) as everything,
        live.subscribe(caller.workspace_id, conversation_id=first.conversation_id) as chat,
        live.subscribe(caller.workspace_id, contact_id=second.contact_id) as visitor,
        live.subscribe(caller.workspace_id, channel_id=mine["id"]) as channel,
        live.subscribe(other.workspace_id) as elsewhere,
    ):
        inbound(theirs["id"], "c-1", sender_id="5511900000001")
        inbound(mine["id"], "a-2", sender_id="5511900000001")
        inbound(mine["id"], "b-2", sender_id="5511900000002")
        # A new contact's first message makes its conversation, then itself.
        heard_there = [c.name for c in heard(elsewhere, 2)]
        assert heard_there == ["conversation.created", "message.received"]
        data(caller.post("/v1/contacts", json={"name": "Bia"}), 201)  # not about a message
        assert {c.workspace_id for c in heard(everything, 2)} == {caller.workspace_id}
        [to_chat] = heard(chat)
        assert (to_chat.conversation_id, to_chat.contact_id) == (
            first.conversation_id,
            first.contact_id,
        )
        [to_visitor] = heard(visitor)
        assert to_visitor.conversation_id == second.conversation_id
        assert len(heard(channel, 2)) == 2
        # Nothing more came to any of them: each heard only its own.
        for subscription in (everything, chat, visitor, channel, elsewhere):
            assert subscription.next(0.5) == []


def test_a_subscriber_hears_only_what_its_own_test_accepts(caller, channels):
    channel_id = channels[0]["id"]
    tested = []

    def created(change):
        tested.append(change.name)
        return change.name == "conversation.created"

    with live.subscribe(caller.workspace_id, channel_id=channel_id, accepts=created) as mine:
        inbound(channel_id, "a-1", sender_id="5511900000001")  # a conversation, a message
        inbound(channel_id, "a-2", sender_id="5511900000001")  # a message
        inbound(channel_id, "b-1", sender_id="5511900000002")  # a conversation, a message
        assert [c.name for c in heard(mine, 2)] == ["conversation.created"] * 2
        assert mine.next(0.5) == []
    assert sorted(tested) == ["conversation.created"] * 2 + ["message.received"] * 3


def test_a_subscriber_whose_test_fails_is_told_of_the_change(caller, channels, caplog):
    def failing(change):
        raise RuntimeError("cannot tell")

    channel_id = channels[0]["id"]
    with live.subscribe(caller.workspace_id, channel_id=channel_id, accepts=failing) as mine:
        inbound(channel_id, "a-1", sender_id="5511900000001")
        assert [c.name for c in heard(mine, 2)] == ["conversation.created", "message.received"]
    assert "a subscriber's test of a change failed" in caplog.text


def test_a_conversation_state_change_is_heard(caller, channels):
    message = inbound(channels[0]["id"], "a-1").message
    chat = message.conversation_id
    with live.subscribe(caller.workspace_id, conversation_id=chat) as subscription:
        data(caller.post(f"/v1/chats/{chat}/handoff"))
        assert [c.name for c in heard(subscription)] == ["agent.handoff_started"]


def test_a_change_committed_by_another_process_is_heard(app, caller, channels):
    """As `agent-platform worker` storing a reply while the server streams."""
    database = {name: app.config[name] for name in ("DATABASE_PATH", "DATABASE_URL")}
    script = textwrap.dedent(
        f"""
        from agent_platform import create_app
        from agent_platform.channels.neutral import InboundMessage
        from agent_platform.models import Channel
        from agent_platform.services.inbound import receive_inbound
        app = create_app({database!r})
        with app.app_context():
            channel = Channel.get_by_id({channels[0]["id"]!r})
            message = InboundMessage(external_id="x-1", sender_id="5511900000009", text="Oi")
            receive_inbound(channel, message)
        """
    )
    with live.subscribe(caller.workspace_id) as subscription:
        subprocess.run([sys.executable, "-c", script], check=True, timeout=60)
        created, change = heard(subscription, 2, seconds=10)
    assert created.name == "conversation.created"
    assert (change.name, change.channel_id) == ("message.received", channels[0]["id"])
    assert change.message_id is not None


@pytest.mark.skipif(
    not ON_POSTGRESQL, reason="SQLite's write transactions never overlap: one writer at a time"
)
def test_a_transaction_that_began_first_but_commits_last_is_heard(caller, channels):
    """Two connections: the first writes its event, the second writes and
    commits one after it, then the first commits. Each is heard once, the
    first's too, though the second's was read before it was committed."""
    message = inbound(channels[0]["id"], "a-1").message
    first_wrote, second_heard_of = threading.Event(), threading.Event()

    def first():
        with transaction():
            emit_about(caller, message, "first")
            first_wrote.set()
            second_heard_of.wait(10)
        database.close()

    with live.subscribe(caller.workspace_id) as subscription:
        writer = threading.Thread(target=first)
        writer.start()
        assert first_wrote.wait(10)
        with transaction():
            emit_about(caller, message, "second")
        live.flush()
        held_back = heard(subscription, seconds=1)  # read while the first is open
        second_heard_of.set()
        writer.join(10)
        changes = held_back + heard(subscription, 2 - len(held_back), seconds=5)
        assert sorted(change.message_id for change in changes) == ["first", "second"]
        assert subscription.next(0.5) == []


def emit_about(caller, message, message_id):
    """A message.delivered event in the caller's transaction."""
    data = {"id": message_id, "conversation_id": message.conversation_id}
    events.emit(caller.workspace_id, "message.delivered", data)


def test_a_change_made_in_this_process_wakes_the_watcher(monkeypatch, caller, channels):
    """With the watcher's own reading far apart, a change still arrives at
    once when its request ends (the app context's teardown flushes), and
    one written outside a request when flush() is called."""
    monkeypatch.setattr(live, "POLL_SECONDS", 60)
    with live.subscribe(caller.workspace_id) as subscription:
        time.sleep(0.2)  # the watcher is waiting its 60 s now
        message = inbound(channels[0]["id"], "a-1").message  # no request: nobody flushed
        assert subscription.next(1) == []
        live.flush()
        created, received = heard(subscription, 2, seconds=2)
        assert (created.name, received.message_id) == ("conversation.created", message.id)
        chat = message.conversation_id
        data(caller.post(f"/v1/chats/{chat}/handoff"))
        assert [c.name for c in heard(subscription, seconds=2)] == ["agent.handoff_started"]


def test_a_subscriber_that_falls_behind_is_told_to_resync(monkeypatch, caller, channels):
    monkeypatch.setattr(live, "QUEUE_LIMIT", 2)
    inbound(channels[0]["id"], "a-0")
    with live.subscribe(caller.workspace_id) as slow, live.subscribe(caller.workspace_id) as quick:
        for number in range(1, 5):
            inbound(channels[0]["id"], f"a-{number}")
            live.flush()
            assert len(heard(quick)) == 1
        assert slow.next(1) == live.RESYNC  # its changes dropped, not kept growing
        assert slow.next(0.2) == []
        inbound(channels[0]["id"], "a-9")
        live.flush()
        assert len(heard(slow)) == 1  # and it hears what comes next


def test_the_watcher_runs_only_while_someone_listens(caller, other):
    assert not live.watching() and watcher_threads() == []
    first = live.subscribe(caller.workspace_id)
    second = live.subscribe(other.workspace_id)
    assert live.watching() and len(watcher_threads()) == 1
    first.close()
    assert live.watching()
    second.close()
    assert not live.watching() and watcher_threads() == []
    with live.subscribe(caller.workspace_id):  # and starts again
        assert len(watcher_threads()) == 1
    assert watcher_threads() == []


def test_a_subscription_is_always_to_one_workspace():
    with pytest.raises(ValueError):
        live.subscribe(None, conversation_id="c")


def test_close_all_ends_every_subscription_and_any_made_after(monkeypatch, caller):
    """What a stopping server calls: a subscriber waiting hears CLOSED at
    once, and so does one that subscribes afterwards, which starts no watcher."""
    monkeypatch.setattr(live, "_the_hub", None)  # a hub of this test's own, closed for good
    answers = []
    with live.subscribe(caller.workspace_id) as subscription:
        waiting = threading.Thread(target=lambda: answers.append(subscription.next(30)))
        waiting.start()
        time.sleep(0.2)
        started = time.monotonic()
        live.close_all()
        waiting.join(5)
        assert answers == [live.CLOSED] and time.monotonic() - started < 1
        assert subscription.next(30) == live.CLOSED  # for good
    assert not live.watching()
    late = live.subscribe(caller.workspace_id)
    started = time.monotonic()
    assert late.next(30) == live.CLOSED and time.monotonic() - started < 1
    assert not live.watching() and watcher_threads() == []
    late.close()
