"""The agent's clarifying question in the website widget, through the
visitor API: its buttons (text and data only) on the agent's message, the
visitor's press (`choice`) answered with the chosen training by the reply
engine, and every press that is not one the visitor's own open question
offers refused with 400 naming the field, nothing stored."""

import pytest

from agent_platform.models import Clarification
from agent_platform.services import sending
from conftest import assert_error
from conversations_helpers import data, make_channel
from test_widget_api import (
    SITE,
    Visitor,
    answer_now,
    settings,  # noqa: F401  (fixture)
)

COST = ("How much does delivery cost?", "Delivery costs $5 within the city.")
AREA = ("Which areas do you deliver to?", "We deliver within 10 km of the shop.")
HOURS = ("What are your opening hours?", "We open every day from 11am to 11pm.")
OFFERED = [
    {"text": COST[0], "data": "choice:1"},
    {"text": AREA[0], "data": "choice:2"},
    {"text": "None of these", "data": "choice:0"},
]


@pytest.fixture
def site(caller):
    agent = data(caller.post("/v1/agents", json={"name": "Ana"}), 201)["id"]
    for question, answer in (COST, AREA, HOURS):
        body = {"type": "qa", "question": question, "answer": answer}
        data(caller.post(f"/v1/agents/{agent}/trainings", json=body), 201)
    return make_channel(caller, "Site", "website", {"allowed_origins": [SITE]}, agent)


def asked(client, site):
    """A visitor whose unclear message the agent asked back about: (visitor,
    the question as the widget sees it)."""
    visitor = Visitor(client, site["id"])
    visitor.start()
    data(visitor.say("do you deliver?", "c-1"), 201)
    answer_now()
    question = visitor.poll()[-1]
    return visitor, question


def press(visitor, choice, client_message_id="c-2", **fields):
    body = {"choice": choice, "client_message_id": client_message_id, **fields}
    return visitor.call("POST", "messages", body)


def test_the_question_shows_buttons_and_a_press_is_answered(client, caller, site):
    visitor, question = asked(client, site)
    assert question["from"] == "agent"
    assert question["text"] == "Do you mean:"  # the buttons carry the choices
    assert question["buttons"] == OFFERED  # nothing else of the metadata
    assert "buttons_label" not in question and "metadata" not in question

    pressed = data(press(visitor, "choice:2"), 201)
    assert (pressed["from"], pressed["type"], pressed["text"]) == ("visitor", "button", AREA[0])
    assert pressed["buttons"] is None
    answer_now()
    reply = visitor.poll()[-1]
    assert (reply["from"], reply["text"], reply["buttons"]) == ("agent", AREA[1], None)

    conversation = data(caller.get(f"/v1/conversations?channel_id={site['id']}"))[0]["id"]
    [clarification] = data(caller.get(f"/v1/conversations/{conversation}/clarifications"))
    assert (clarification["status"], clarification["reply_message_id"]) == (
        "chosen",
        pressed["id"],
    )
    assert clarification["chosen_training_id"] == clarification["choices"][1]["training_id"]
    stored = data(caller.get(f"/v1/conversations/{conversation}/messages?order=asc"))
    assert stored[-2]["metadata"]["button"] == {"text": AREA[0], "data": "choice:2"}
    assert stored[-1]["metadata"]["reply"]["provider"] == "clarification"


def test_none_of_these_sends_the_fallback(client, caller, site):
    visitor, _ = asked(client, site)
    assert data(press(visitor, "choice:0"), 201)["text"] == "None of these"
    answer_now()
    conversation = data(caller.get(f"/v1/conversations?channel_id={site['id']}"))[0]["id"]
    [clarification] = data(caller.get(f"/v1/conversations/{conversation}/clarifications"))
    assert clarification["status"] == "none"


@pytest.mark.parametrize(
    "choice, fields, field",
    [
        ("choice:3", {}, "choice"),  # not offered (two choices and none of these)
        ("choice:x", {}, "choice"),
        ("choice:1 ", {}, "choice"),
        ("", {}, "choice"),
        (1, {}, "choice"),
        (["choice:1"], {}, "choice"),
        ("choice:1", {"text": "hello"}, "text"),
    ],
)
def test_a_forged_choice_is_refused_and_nothing_stored(client, site, choice, fields, field):
    visitor, _ = asked(client, site)
    error = assert_error(press(visitor, choice, **fields), 400, "VALIDATION_ERROR")
    assert field in error["message"]
    assert visitor.poll() is None  # nothing new in the conversation


def test_a_stale_choice_is_refused(client, site):
    visitor, _ = asked(client, site)
    first = data(press(visitor, "choice:1"), 201)
    answer_now()
    visitor.poll()
    # The widget retrying the same press gets it back, nothing new stored.
    assert data(press(visitor, "choice:1"), 201) == first
    assert visitor.poll() is None
    # The question is answered: its buttons are no longer a choice.
    assert_error(press(visitor, "choice:2", "c-3"), 400, "VALIDATION_ERROR", "choice")
    # A question past its expiry is not either.
    data(visitor.say("do you deliver?", "c-4"), 201)
    answer_now()
    assert visitor.poll()[-1]["buttons"] == OFFERED
    Clarification.update(expires_at=Clarification.created_at).execute()
    assert_error(press(visitor, "choice:2", "c-5"), 400, "VALIDATION_ERROR", "choice")


def test_a_choice_without_a_question_is_refused(client, site):
    visitor = Visitor(client, site["id"])
    visitor.start()
    assert_error(press(visitor, "choice:1"), 400, "VALIDATION_ERROR", "choice")
    data(visitor.say("What are your opening hours?", "c-1"), 201)
    answer_now()
    assert visitor.poll()[-1]["buttons"] is None  # a sure answer asks nothing
    assert_error(press(visitor, "choice:1"), 400, "VALIDATION_ERROR", "choice")


def test_another_visitors_question_is_not_theirs_to_answer(client, caller, site):
    alice, question = asked(client, site)
    bob = Visitor(client, site["id"])
    bob.start()
    assert bob.poll() == []
    assert_error(press(bob, "choice:1"), 400, "VALIDATION_ERROR", "choice")
    # The same token on another channel of the agent is another conversation.
    second = make_channel(caller, "Site 2", "website", {"allowed_origins": [SITE]})
    elsewhere = Visitor(client, second["id"], token=alice.token)
    assert_error(press(elsewhere, "choice:1"), 400, "VALIDATION_ERROR", "choice")
    # Alice's question still waits for her.
    assert data(press(alice, "choice:1"), 201)["text"] == COST[0]


def test_a_humans_buttons_are_shown_only_from_the_agent(client, caller, site):
    visitor, question = asked(client, site)
    conversation = data(caller.get(f"/v1/conversations?channel_id={site['id']}"))[0]["id"]
    body = {"text": "Pick one", "metadata": {"buttons": [{"text": "A", "data": "choice:1"}]}}
    data(caller.post(f"/v1/conversations/{conversation}/messages", json=body), 201)
    sending.send_queued()
    human = [m for m in visitor.poll() if m["from"] == "human"]
    assert [(m["text"], m["buttons"]) for m in human] == [("Pick one", None)]
    # The agent's question is still the one a press answers.
    assert data(press(visitor, "choice:1"), 201)["text"] == COST[0]
