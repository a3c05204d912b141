"""Learning from the humans: the questions the agent left and a person
answered, grouped by similarity, turned into a Q&A training in one call, and
answered by the agent the next time - all through HTTP."""

import pytest

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

HOURS = ("What are your opening hours?", "We open every day from 11am to 11pm.")
GLUTEN_REPLY = "Yes! Our gluten-free base is baked apart, ask for it when you order."


@pytest.fixture
def shop(caller, fake):  # noqa: F811
    agent_id = make_agent(caller)
    add_qa(caller, agent_id, *HOURS)
    channel = agent_channel(caller, agent_id)
    return {"agent_id": agent_id, "channel_id": channel["id"]}


def unanswered_then_human(caller, shop, text, reply, sender, when):
    """A customer's question the agent cannot answer (fallback, handoff), then a
    human's reply (stored at the real time: the customer wrote an hour before)."""
    message = customer_says(shop["channel_id"], text, at(when - 3600), sender_id=sender)
    run_replies(at(when - 3595))
    path = f"/v1/conversations/{message.conversation_id}/messages"
    data(caller.post(path, json={"text": reply}), 201)
    return message


def groups(caller, agent_id):
    return data(caller.get(f"/v1/agents/{agent_id}/unanswered"))


def test_similar_questions_a_human_answered_are_one_group_with_the_reply(caller, shop):
    first = unanswered_then_human(
        caller, shop, "do you have gluten free pizza?", "Yes, we do.", "5511900000001", 0
    )
    second = unanswered_then_human(
        caller, shop, "Is there a gluten-free pizza?", GLUTEN_REPLY, "5511900000002", 60
    )
    unanswered_then_human(caller, shop, "can I bring my dog inside", "Sure!", "5511900000003", 120)
    found = groups(caller, shop["agent_id"])
    assert [group["count"] for group in found] == [2, 1]
    gluten = found[0]
    assert gluten["id"] == first.id
    assert [q["message_id"] for q in gluten["questions"]] == [first.id, second.id]
    assert gluten["questions"][1]["text"] == "Is there a gluten-free pizza?"
    assert gluten["questions"][0]["conversation_id"] == first.conversation_id
    assert gluten["reply"]["text"] == GLUTEN_REPLY  # the reply to the latest question
    assert gluten["questions"][0]["created_at"].endswith("Z")
    assert found[1]["questions"][0]["text"] == "can I bring my dog inside"


def test_a_group_becomes_a_qa_training_and_the_agent_answers_it_next_time(caller, shop):
    first = unanswered_then_human(
        caller, shop, "do you have gluten free pizza?", GLUTEN_REPLY, "5511900000001", 0
    )
    unanswered_then_human(
        caller, shop, "any gluten-free pizzas?", GLUTEN_REPLY, "5511900000002", 60
    )
    path = f"/v1/agents/{shop['agent_id']}/unanswered/{first.id}/training"
    training = data(caller.post(path, json={}), 201)
    assert training["type"] == "qa"
    assert training["question"] == "do you have gluten free pizza?\nany gluten-free pizzas?"
    assert training["answer"] == GLUTEN_REPLY
    assert groups(caller, shop["agent_id"]) == []  # answered now
    message = customer_says(shop["channel_id"], "gluten free pizza?", at(300), sender_id="55119003")
    run_replies(at(305))
    [reply] = outbound(message.conversation_id)
    assert reply.text == GLUTEN_REPLY
    assert reply.metadata["reply"]["training_id"] == training["id"]


def test_the_question_and_answer_may_be_given(caller, shop):
    first = unanswered_then_human(caller, shop, "do you sell gift cards", "yep", "5511900000001", 0)
    path = f"/v1/agents/{shop['agent_id']}/unanswered/{first.id}/training"
    body = {"question": "Do you sell gift cards?", "answer": "Yes, from $10 at the counter."}
    training = data(caller.post(path, json=body), 201)
    assert (training["question"], training["answer"]) == (body["question"], body["answer"])


def test_answered_small_talk_and_agent_answers_are_not_gaps(caller, shop):
    message = customer_says(shop["channel_id"], "opening hours?", at(0), sender_id="5511900000009")
    run_replies(at(5))
    customer_says(shop["channel_id"], "hi", at(10), sender_id="5511900000009")
    path = f"/v1/conversations/{message.conversation_id}/messages"
    data(caller.post(path, json={"text": "Anything else?"}), 201)
    assert groups(caller, shop["agent_id"]) == []


def test_a_question_nobody_answered_is_not_listed(caller, shop):
    customer_says(shop["channel_id"], "do you have gluten free pizza?", at(0))
    run_replies(at(5))
    assert groups(caller, shop["agent_id"]) == []


def test_unknown_group_and_other_workspace_are_404(caller, other, shop):
    first = unanswered_then_human(caller, shop, "gift cards?", "yes", "5511900000001", 0)
    path = f"/v1/agents/{shop['agent_id']}/unanswered/{shop['agent_id']}/training"
    assert_error(caller.post(path, json={}), 404, "GROUP_NOT_FOUND")
    assert_error(other.get(f"/v1/agents/{shop['agent_id']}/unanswered"), 404, "AGENT_NOT_FOUND")
    theirs = f"/v1/agents/{shop['agent_id']}/unanswered/{first.id}/training"
    assert_error(other.post(theirs, json={}), 404, "AGENT_NOT_FOUND")


@pytest.mark.parametrize(
    "body, field",
    [({"question": ""}, "question"), ({"answer": "x" * 20001}, "answer"), ({"extra": 1}, "extra")],
)
def test_a_bad_body_is_400_naming_the_field(caller, shop, body, field):
    first = unanswered_then_human(caller, shop, "gift cards?", "yes", "5511900000001", 0)
    path = f"/v1/agents/{shop['agent_id']}/unanswered/{first.id}/training"
    error = assert_error(caller.post(path, json=body), 400, "VALIDATION_ERROR")
    assert field in error["message"]
    assert len(groups(caller, shop["agent_id"])) == 1


def test_scopes(make_caller, caller, shop):
    first = unanswered_then_human(caller, shop, "gift cards?", "yes", "5511900000001", 0)
    reader = make_caller(scopes=["trainings:read"], workspace_id=caller.workspace_id)
    assert len(data(reader.get(f"/v1/agents/{shop['agent_id']}/unanswered"))) == 1
    path = f"/v1/agents/{shop['agent_id']}/unanswered/{first.id}/training"
    assert_error(reader.post(path, json={}), 403, "INSUFFICIENT_SCOPE")
