"""WhatsApp's 24-hour customer service window and template messages: a
free-form message outside the window is refused (409) before Meta is asked;
an approved template goes at any time, in the Cloud API's payload shape;
Meta's re-engagement refusal (131047), if it comes anyway, synchronously or
in a failed status, is recorded as OUTSIDE_SERVICE_WINDOW."""

from datetime import timedelta

import pytest

from agent_platform.errors import ApiError
from agent_platform.models import Message
from agent_platform.models.base import utcnow
from agent_platform.services import messages, sending
from conftest import assert_error
from conversations_helpers import (
    data,
    events,
    make_channel,
    make_contact,
    make_conversation,
)
from whatsapp_helpers import *  # noqa: F403  (the fixtures)
from whatsapp_helpers import (
    CUSTOMER,
    TEMPLATE,
    TEMPLATE_SENT,
    messages_payload,
    received,
    status,
    statuses_payload,
    text,
)

# Meta's answer to a free-form message outside the window.
REENGAGEMENT = {
    "message": "(#131047) Re-engagement message",
    "type": "OAuthException",
    "code": 131047,
    "error_data": {
        "messaging_product": "whatsapp",
        "details": "Message failed to send because more than 24 hours have passed since "
        "the customer last replied to this number.",
    },
}


@pytest.fixture
def settings(tmp_path, graph):
    """As whatsapp_helpers' settings, with the window checked."""
    return {
        "DATABASE_PATH": str(tmp_path / "test.db"),
        "WHATSAPP_GRAPH_API_BASE": graph.base,
        "WHATSAPP_TIMEOUT_SECONDS": 2,
        "WHATSAPP_CHECK_SERVICE_WINDOW": True,
    }


@pytest.fixture
def quiet(caller, channel):
    """A conversation with a contact who has never written."""
    contact = make_contact(caller, name="Bia", phone="+" + CUSTOMER)
    return make_conversation(caller, contact["id"], channel["id"])


def post(caller, conversation_id, **body):
    return caller.post(f"/v1/conversations/{conversation_id}/messages", json=body)


def wrote(client, channel, hours_ago=0, wamid="wamid.IN1"):
    """The customer writes (through the signed callback), `hours_ago`."""
    received(client, channel["id"], messages_payload(text("Oi", wamid=wamid)))
    inbound = Message.get(Message.external_id == wamid)
    when = utcnow() - timedelta(hours=hours_ago)
    Message.update(created_at=when).where(Message.id == inbound.id).execute()
    return inbound.conversation_id


def test_free_form_to_a_contact_who_never_wrote_is_refused_before_meta(caller, quiet, graph):
    error = assert_error(post(caller, quiet["id"], text="Hi"), 409, "OUTSIDE_SERVICE_WINDOW")
    assert "never written" in error["message"] and "template" in error["message"]
    media = post(caller, quiet["id"], type="image", media_url="https://cdn.example.com/a.jpg")
    assert_error(media, 409, "OUTSIDE_SERVICE_WINDOW")
    assert data(caller.get(f"/v1/conversations/{quiet['id']}/messages")) == []
    assert sending.send_queued() == 0 and graph.requests == []


def test_free_form_within_24_hours_of_the_customer_is_sent(client, caller, channel, graph):
    conversation_id = wrote(client, channel, hours_ago=23)
    data(post(caller, conversation_id, text="Yes, we are open"), 201)
    assert sending.send_queued() == 1
    assert graph.sent()[0]["text"]["body"] == "Yes, we are open"


def test_after_24_hours_free_form_is_refused_naming_the_last_message(client, caller, channel):
    conversation_id = wrote(client, channel, hours_ago=25)
    error = assert_error(post(caller, conversation_id, text="Hi"), 409, "OUTSIDE_SERVICE_WINDOW")
    assert "last wrote at" in error["message"]


def test_a_template_goes_outside_the_window_in_the_cloud_api_shape(caller, quiet, graph):
    message = data(post(caller, quiet["id"], type="template", template=TEMPLATE), 201)
    assert (message["type"], message["text"], message["status"]) == ("template", None, "queued")
    assert message["metadata"] == {"template": TEMPLATE}
    assert sending.send_queued() == 1
    assert graph.sent() == [TEMPLATE_SENT]
    assert data(caller.get(f"/v1/messages/{message['id']}"))["status"] == "sent"


def test_a_template_without_parameters_has_no_components(caller, quiet, graph):
    template = {"name": "hello_world", "language": "en_US"}
    data(post(caller, quiet["id"], type="template", template=template), 201)
    sending.send_queued()
    assert graph.sent()[0]["template"] == {"name": "hello_world", "language": {"code": "en_US"}}


def template(**values):
    return {"type": "template", "template": {"name": "hi", "language": "en", **values}}


@pytest.mark.parametrize(
    "body, code, field",
    [
        ({"type": "template"}, "MISSING_REQUIRED_FIELD", "template"),
        ({"type": "template", "template": {"language": "en"}}, "MISSING_REQUIRED_FIELD", "name"),
        (template(name="Hello World"), "VALIDATION_ERROR", "name"),
        (template(language="english"), "VALIDATION_ERROR", "language"),
        (template(parameters=[""]), "VALIDATION_ERROR", "parameters"),
        (template(parameters=["x"] * 51), "VALIDATION_ERROR", "parameters"),
        ({**template(), "text": "Hi"}, "VALIDATION_ERROR", "text"),
        ({**template(), "metadata": {"template": 1}}, "VALIDATION_ERROR", "metadata"),
        ({"text": "Hi", "template": TEMPLATE}, "VALIDATION_ERROR", "template"),
    ],
)
def test_bad_templates_are_400_naming_the_field(caller, quiet, body, code, field):
    assert_error(post(caller, quiet["id"], **body), 400, code, field)
    assert data(caller.get(f"/v1/conversations/{quiet['id']}/messages")) == []


def test_templates_are_whatsapps_only(caller):
    site = make_channel(caller, name="Site", type="website")
    contact = make_contact(caller, name="Visitor")
    conversation = make_conversation(caller, contact["id"], site["id"])
    response = post(caller, conversation["id"], type="template", template=TEMPLATE)
    assert_error(response, 400, "VALIDATION_ERROR", "WhatsApp")


def test_a_template_message_cannot_be_edited(caller, quiet):
    message = data(post(caller, quiet["id"], type="template", template=TEMPLATE), 201)
    response = caller.patch(f"/v1/messages/{message['id']}", json={"text": "changed"})
    assert_error(response, 409, "MESSAGE_NOT_EDITABLE", "template")


class TestWithTheCheckOff:
    @pytest.fixture
    def settings(self, settings):
        return {**settings, "WHATSAPP_CHECK_SERVICE_WINDOW": False}

    def test_meta_refusing_is_recorded_as_outside_the_window_once(self, caller, quiet, graph):
        graph.fail_next(400, REENGAGEMENT)
        message = data(post(caller, quiet["id"], text="Hi"), 201)
        sending.send_queued()
        sending.send_queued(now=utcnow() + timedelta(hours=1))
        failed = data(caller.get(f"/v1/messages/{message['id']}"))
        assert failed["status"] == "failed"
        assert failed["error"]["code"] == "OUTSIDE_SERVICE_WINDOW"
        assert "approved template" in failed["error"]["title"]
        assert failed["error"]["details"]["meta_code"] == "131047"
        assert len(graph.sent()) == 1  # final: not tried again
        assert [name for name, _ in events(caller.workspace_id, "message.failed")] == [
            "message.failed"
        ]


def test_a_failed_status_with_131047_is_mapped_too(client, caller, channel, graph):
    conversation_id = wrote(client, channel, hours_ago=1)
    message = data(post(caller, conversation_id, text="Hi"), 201)
    sending.send_queued()
    wamid = data(caller.get(f"/v1/messages/{message['id']}"))["external_id"]
    errors = [
        {"code": 131047, "title": "Re-engagement message", "message": "Re-engagement message"}
    ]
    received(client, channel["id"], statuses_payload(status(wamid, "failed", errors=errors)))
    failed = data(caller.get(f"/v1/messages/{message['id']}"))
    assert (failed["status"], failed["error"]["code"]) == ("failed", "OUTSIDE_SERVICE_WINDOW")
    assert failed["error"]["details"]["meta_code"] == "131047"


def test_the_window_is_judged_at_the_moment_the_message_is_posted(caller, client, channel):
    """post_message's `now` stamps the message and judges the window alike."""
    conversation_id = wrote(client, channel, hours_ago=30)
    values = {"sender_type": "human", "type": "text", "text": "Hi"}
    then = utcnow() - timedelta(hours=20)  # ten hours after the customer wrote
    message, _ = messages.post_message(caller.workspace_id, conversation_id, values, now=then)
    assert (message.created_at, message.status) == (then, "queued")
    with pytest.raises(ApiError) as refused:
        messages.post_message(caller.workspace_id, conversation_id, values)
    assert refused.value.code == "OUTSIDE_SERVICE_WINDOW"
