"""The agent asks back when unsure: the question (numbered in the text, or
as buttons where the channel shows them), the customer's choice answered
with that training, "none of these" and free text, and the record of it all
on the conversation through the API."""

import pytest

from agent_platform.channels import adapters
from agent_platform.models import Clarification
from agent_platform.replies import clarifying, knowledge
from conftest import assert_error
from conversations_helpers import data
from replies_helpers import (
    add_qa,
    agent_channel,
    at,
    customer_says,
    fake,  # noqa: F401  (fixture)
    make_agent,
    outbound,
    run_replies,
)

COST = ("How much does delivery cost?", "Delivery costs $5 within the city.")
AREA = ("Which areas do you deliver to?", "We deliver within 10 km of the shop.")
HOURS = ("What are your opening hours?", "We open every day from 11am to 11pm.")


@pytest.fixture
def shop(caller, fake):  # noqa: F811
    agent_id = make_agent(caller)
    ids = [add_qa(caller, agent_id, *pair) for pair in (COST, AREA, HOURS)]
    channel = agent_channel(caller, agent_id)
    return {"agent_id": agent_id, "channel_id": channel["id"], "ids": ids}


def asked(caller, shop, text="do you deliver?"):
    """The customer's unclear message and the agent's question back."""
    message = customer_says(shop["channel_id"], text, at(0))
    run_replies(at(5))
    [question] = outbound(message.conversation_id)
    return message.conversation_id, question


def clarifications_of(caller, conversation_id):
    return data(caller.get(f"/v1/conversations/{conversation_id}/clarifications"))


def test_an_unclear_message_gets_the_close_trainings_numbered(caller, shop, monkeypatch):
    # As on a channel without buttons (e-mail).
    monkeypatch.setattr(adapters.channel_type("whatsapp"), "buttons", False)
    conversation_id, question = asked(caller, shop)
    assert question.text == (
        "Do you mean:\n1. How much does delivery cost?\n2. Which areas do you deliver to?\n"
        "0. None of these\nReply with the number, or write your question."
    )
    assert "buttons" not in question.metadata
    record = question.metadata["reply"]
    # Equal scores: the training created first (the smaller id) comes first.
    assert record["choices"] == [
        {"training_id": shop["ids"][0], "label": COST[0]},
        {"training_id": shop["ids"][1], "label": AREA[0]},
    ]
    [clarification] = clarifications_of(caller, conversation_id)
    assert clarification["status"] == "pending"
    assert clarification["message_id"] == question.id
    assert clarification["choices"] == record["choices"]
    assert clarification["expires_at"].endswith("Z")


@pytest.mark.parametrize(
    "answer, chosen", [("2", 1), ("1.", 0), ("which areas do you deliver to", 1)]
)
def test_the_customers_choice_is_answered_with_that_training(caller, shop, answer, chosen):
    conversation_id, question = asked(caller, shop)
    reply_to = customer_says(shop["channel_id"], answer, at(10))
    run_replies(at(15))
    reply = outbound(conversation_id)[-1]
    assert reply.text == (COST, AREA)[chosen][1]
    assert reply.metadata["reply"]["training_id"] == shop["ids"][chosen]
    [clarification] = clarifications_of(caller, conversation_id)
    assert clarification["status"] == "chosen"
    assert clarification["chosen_training_id"] == shop["ids"][chosen]
    assert clarification["reply_message_id"] == reply_to.id
    assert clarification["resolved_at"].endswith("Z")


@pytest.mark.parametrize("answer", ["0", "None of these", "none"])
def test_none_of_these_sends_the_fallback_and_hands_off(caller, shop, answer):
    conversation_id, _ = asked(caller, shop)
    customer_says(shop["channel_id"], answer, at(10))
    run_replies(at(15))
    assert outbound(conversation_id)[-1].text.startswith("Sorry, I can't answer that")
    assert data(caller.get(f"/v1/conversations/{conversation_id}"))["status"] == "handoff"
    assert clarifications_of(caller, conversation_id)[0]["status"] == "none"


def test_free_text_after_the_question_is_a_new_message(caller, shop):
    conversation_id, _ = asked(caller, shop)
    customer_says(shop["channel_id"], "what are your opening hours?", at(10))
    run_replies(at(15))
    assert outbound(conversation_id)[-1].text == HOURS[1]
    assert clarifications_of(caller, conversation_id)[0]["status"] == "other"


def test_a_number_out_of_range_is_free_text(caller, shop):
    conversation_id, _ = asked(caller, shop)
    customer_says(shop["channel_id"], "7", at(10))
    run_replies(at(15))
    assert clarifications_of(caller, conversation_id)[0]["status"] == "other"


def test_an_expired_question_reads_nothing(caller, shop):
    conversation_id, _ = asked(caller, shop)
    customer_says(shop["channel_id"], "2", at(25 * 3600))
    run_replies(at(25 * 3600 + 5))
    assert outbound(conversation_id)[-1].text != AREA[1]
    [clarification] = clarifications_of(caller, conversation_id)
    assert clarification["status"] == "expired"
    assert clarification["reply_message_id"] is None


def test_a_channel_with_buttons_gets_them_and_a_pressed_button_answers(caller, shop, monkeypatch):
    monkeypatch.setattr(adapters.channel_type("whatsapp"), "buttons", True)
    conversation_id, question = asked(caller, shop)
    assert question.text == "Do you mean:"
    assert question.metadata["buttons"] == [
        {"text": COST[0], "data": "choice:1"},
        {"text": AREA[0], "data": "choice:2"},
        {"text": "None of these", "data": "choice:0"},
    ]
    assert question.metadata["buttons_label"] == "Choose"
    pressed = {"interactive": {"type": "button_reply", "id": "choice:2", "title": "How much"}}
    customer_says(shop["channel_id"], "How much", at(10), type="interactive", metadata=pressed)
    run_replies(at(15))
    assert outbound(conversation_id)[-1].text == AREA[1]


def test_a_chosen_training_deleted_since_is_free_text(caller, shop):
    conversation_id, _ = asked(caller, shop)
    assert caller.delete(f"/v1/trainings/{shop['ids'][1]}").status_code == 204
    customer_says(shop["channel_id"], "2", at(10))
    run_replies(at(15))
    assert clarifications_of(caller, conversation_id)[0]["status"] == "other"


def test_without_clarify_enabled_the_fallback_is_sent(caller, shop):
    body = {"clarify_enabled": False}
    data(caller.put(f"/v1/agents/{shop['agent_id']}/settings", json=body))
    conversation_id, question = asked(caller, shop)
    assert question.text.startswith("Sorry, I can't answer that")
    assert clarifications_of(caller, conversation_id) == []


def test_the_question_is_in_the_agents_language(caller, fake, monkeypatch):  # noqa: F811
    monkeypatch.setattr(adapters.channel_type("whatsapp"), "buttons", False)
    agent_id = make_agent(caller, language="pt-BR")
    add_qa(caller, agent_id, "Quanto custa a entrega?", "A entrega custa R$ 5.")
    add_qa(caller, agent_id, "Para quais bairros vocês entregam?", "Entregamos até 10 km.")
    channel = agent_channel(caller, agent_id)
    message = customer_says(channel["id"], "vocês entregam?", at(0))
    run_replies(at(5))
    assert outbound(message.conversation_id)[0].text.startswith("Você quer saber:\n1. ")


def test_clarifications_of_another_workspace_are_not_found(caller, other, shop):
    conversation_id, _ = asked(caller, shop)
    response = other.get(f"/v1/conversations/{conversation_id}/clarifications")
    assert_error(response, 404, "CONVERSATION_NOT_FOUND")
    assert Clarification.select().count() == 1


# --- the decision and the reading, as functions ---------------------------------------


TRAININGS = [
    {"id": "cost", "type": "qa", "question": COST[0], "answer": COST[1]},
    {"id": "area", "type": "qa", "question": AREA[0], "answer": AREA[1]},
    {"id": "hours", "type": "qa", "question": HOURS[0], "answer": HOURS[1]},
]


@pytest.mark.parametrize(
    "text, offered",
    [
        ("delivery?", ("area", "cost")),  # equal scores: the smaller id first
        ("how much does delivery cost", ()),  # sure: answered
        ("what are your opening hours", ()),
        ("can I pay with bitcoin", ()),  # nothing relevant: the fallback
    ],
)
def test_choices_follow_the_matchers_candidates(text, offered):
    assert clarifying.choices(knowledge.decide(text, TRAININGS, "en")) == offered


def test_an_unsure_answer_is_asked_about_and_a_setting_moves_it():
    decision = knowledge.decide("hours for the pickup counter", TRAININGS, "en")
    assert decision.kind == "qa" and decision.score < clarifying.SURE
    assert clarifying.choices(decision) == ("hours",)
    assert clarifying.choices(decision, {"clarify_sure": decision.score}) == ()


@pytest.mark.parametrize(
    "text, data, number",
    [
        ("2", None, 2),
        (" #1 ", None, 1),
        ("3", None, None),
        ("0", None, 0),
        ("ninguna de estas", None, 0),
        ("second one", None, None),
        ("x", "choice:1", 1),
        ("x", "choice:9", None),
        ("x", "choice:", None),
        ("x", "choice:²", None),
        ("x", "choice:" + "1" * 5000, None),
        ("x", "choice:002", 2),
        ("١", None, 1),  # an Arabic-Indic one, typed
        ("x", "other", None),
        ("WHICH AREAS DO YOU DELIVER TO?", None, 2),
        ("", None, None),
    ],
)
def test_reading_the_customers_answer(text, data, number):
    assert clarifying.reading(text, data, [COST[0], AREA[0]]) == number


def test_a_long_question_is_cut_into_a_label():
    label = clarifying.label("word " * 40 + "\nsecond line")
    assert len(label) <= clarifying.LABEL_CHARS and label.endswith("…")
    assert clarifying.label("First line\nSecond") == "First line"
