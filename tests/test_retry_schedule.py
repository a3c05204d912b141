"""Send retries pinned by behaviour: after the n-th retryable failure the next
attempt is due 5 x 2^(n-1) seconds later, not a moment earlier, and never
later than the documented cap (sending.MAX_RETRY_DELAY, 15 minutes)."""

from datetime import timedelta

import pytest

from agent_platform.channels import SendError, register_sender
from agent_platform.models import Event, Message
from agent_platform.models.base import utcnow
from agent_platform.services import sending
from conversations_helpers import data, send, setup_chat
from replies_helpers import fake  # noqa: F401  (fixture)

# 5, 10, 20, ... seconds, then the 15-minute cap: 640 s is the last doubling under it.
EXPECTED_DELAYS = [5, 10, 20, 40, 80, 160, 320, 640, 900, 900]
TICK = timedelta(milliseconds=1)


@pytest.fixture
def failing(fake):  # noqa: F811
    """Sends through a FakeSender: each test says which attempts fail."""
    return fake


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


def test_a_batch_sends_at_most_its_size(caller, failing):
    chat = setup_chat(caller)
    for _ in range(3):
        data(send(caller, chat["conversation"]["id"]), 201)
    assert sending.send_queued(batch=2) == 2
    assert len(failing.sent) == 2
    assert sending.send_queued(batch=2) == 1


def test_the_outcome_is_stamped_with_the_jobs_time(caller, failing):
    chat = setup_chat(caller)
    sent = data(send(caller, chat["conversation"]["id"]), 201)
    then = utcnow() - timedelta(days=3)  # a job that ran late, or a test's clock
    assert sending.send_queued(now=then) == 1
    stored = Message.get_by_id(sent["id"])
    assert (stored.sent_at, stored.updated_at) == (then, then)
    event = Event.get(Event.name == "message.sent")
    assert event.created_at == then


def test_a_retry_keeps_the_messages_updated_time(caller, failing):
    chat = setup_chat(caller)
    sent = data(send(caller, chat["conversation"]["id"]), 201)
    before = Message.get_by_id(sent["id"]).updated_at
    assert fail_once(failing, utcnow() + timedelta(hours=1)) == 1
    assert Message.get_by_id(sent["id"]).updated_at == before


def test_a_failure_is_stamped_with_the_jobs_time(caller, failing):
    chat = setup_chat(caller)
    sent = data(send(caller, chat["conversation"]["id"]), 201)
    then = utcnow() - timedelta(days=3)
    failing.fail_next(SendError("131026", "Receiver is incapable", retryable=False))
    assert sending.send_queued(now=then) == 1
    stored = Message.get_by_id(sent["id"])
    assert (stored.status, stored.failed_at, stored.updated_at) == ("failed", then, then)
    assert Event.get(Event.name == "message.failed").created_at == then


class Crashing:
    def __init__(self, error):
        self.error = error

    def send(self, channel, message):
        raise self.error


@pytest.mark.parametrize(
    "error, title",
    [(RuntimeError("socket closed"), "socket closed"), (RuntimeError(), "RuntimeError")],
)
def test_a_crashing_sender_is_a_retryable_error_with_its_reason(
    caller, failing, caplog, error, title
):
    chat = setup_chat(caller)
    sent = data(send(caller, chat["conversation"]["id"]), 201)
    register_sender("whatsapp", Crashing(error))
    assert sending.send_queued() == 1
    stored = Message.get_by_id(sent["id"])
    assert (stored.status, stored.error["code"], stored.error["title"]) == (
        "queued",
        "SENDER_ERROR",
        title,
    )
    crash = next(record for record in caplog.records if record.name == "agent_platform.sending")
    assert crash.getMessage() == f"sender for whatsapp failed on message {sent['id']}"
    assert crash.exc_info[1] is error  # with its traceback
