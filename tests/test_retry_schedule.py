"""Send retries pinned by behaviour: after the n-th retryable failure the next
attempt is due 5 x 2^(n-1) seconds later, not a moment earlier, and never
later than the documented cap (sending.MAX_RETRY_DELAY, 15 minutes)."""

from datetime import timedelta

import pytest

from agent_platform.channels import SendError, get_sender, register_sender, unregister_sender
from agent_platform.channels.fake import FakeSender
from agent_platform.models import Message
from agent_platform.models.base import utcnow
from agent_platform.services import sending
from conversations_helpers import data, send, setup_chat

# 5, 10, 20, ... seconds, then the 15-minute cap: 640 s is the last doubling under it.
EXPECTED_DELAYS = [5, 10, 20, 40, 80, 160, 320, 640, 900, 900]
TICK = timedelta(milliseconds=1)


@pytest.fixture
def failing(app):
    """Every send fails with a retryable error (the real sender set aside)."""
    real = get_sender("whatsapp")
    sender = FakeSender()
    register_sender("whatsapp", sender)
    yield sender
    unregister_sender("whatsapp")
    if real is not None:
        register_sender("whatsapp", real)


def attempt(now):
    return sending.send_queued(now=now, max_attempts=len(EXPECTED_DELAYS) + 2)


def fail_once(sender, now):
    sender.fail_next(SendError("503", "Unavailable", retryable=True))
    return attempt(now)


def test_the_cap_is_fifteen_minutes():
    assert sending.MAX_RETRY_DELAY == timedelta(minutes=15)


def test_each_retry_waits_its_doubling_delay_exactly(caller, failing):
    chat = setup_chat(caller)
    message = data(send(caller, chat["conversation"]["id"]), 201)
    now = utcnow()
    assert fail_once(failing, now) == 1
    for delay in EXPECTED_DELAYS:
        due = now + timedelta(seconds=delay)
        assert Message.get_by_id(message["id"]).lease_until == due
        assert attempt(due - TICK) == 0, f"retried before its {delay} s"
        assert fail_once(failing, due) == 1, f"not retried after its {delay} s"
        now = due
    assert Message.get_by_id(message["id"]).status == "queued"


def test_the_last_allowed_attempt_fails_the_message_for_good(caller, failing):
    chat = setup_chat(caller)
    message = data(send(caller, chat["conversation"]["id"]), 201)
    now = utcnow()
    for attempt, delay in enumerate([5, 10, 0], start=1):
        failing.fail_next(SendError("503", "Unavailable", retryable=True))
        assert sending.send_queued(now=now, max_attempts=3) == 1
        stored = Message.get_by_id(message["id"])
        assert stored.send_attempts == attempt
        now += timedelta(seconds=delay)
    assert (stored.status, stored.lease_until) == ("failed", None)
    assert sending.send_queued(now=now + timedelta(days=1), max_attempts=3) == 0
