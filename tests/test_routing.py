"""Intentions, transfer rules and idle actions: the resources (CRUD,
pagination, validation, scopes, tenancy) and what they do to conversations."""

import json
from datetime import timedelta

import pytest

from agent_platform.models import Conversation, Message
from agent_platform.services import idle_actions, routing
from conftest import assert_error
from conversations_helpers import data, event_names, events
from loopback import QuietHandler, serving
from replies_helpers import (
    add_qa,
    agent_channel,
    at,
    customer_says,
    fake,  # noqa: F401  (fixture)
    jobs,
    make_agent,
    outbound,
    run_replies,
    texts,
)

MISSING = "6f1c4b9e-8a47-4a1e-9f0e-3e2b1c0d9a88"
HOURS = ("What are your opening hours?", "We open every day from 11am to 11pm.")


@pytest.fixture
def settings(tmp_path):
    return {
        "DATABASE_PATH": str(tmp_path / "test.db"),
        "WEBHOOKS_ALLOW_PRIVATE_TARGETS": True,
        "WEBHOOKS_ALLOWED_PORTS": [],
    }


@pytest.fixture
def shop(caller, fake):  # noqa: F811
    agent_id = make_agent(caller)
    add_qa(caller, agent_id, *HOURS)
    channel = agent_channel(caller, agent_id)
    return {"agent_id": agent_id, "channel_id": channel["id"], "fake": fake}


def post(caller, agent_id, kind, **body):
    return caller.post(f"/v1/agents/{agent_id}/{kind}", json=body)


def intention(caller, agent_id, **values):
    body = {"name": "Cancel", "examples": ["I want to cancel my order"], "action": "reply"}
    body.update(reply_text="Your order is cancelled.")
    body.update(values)
    return data(post(caller, agent_id, "intentions", **body), 201)


# --- the resources ---------------------------------------------------------------------


def test_intention_crud(caller, shop):
    agent = shop["agent_id"]
    created = intention(caller, agent, description="Customers cancelling")
    assert set(created) == {
        "id", "agent_id", "name", "description", "examples", "action", "reply_text", "url",
        "tag", "target_agent_id", "is_active", "created_at", "updated_at",
    }  # fmt: skip
    assert (created["agent_id"], created["is_active"], created["url"]) == (agent, True, None)
    path = f"/v1/agents/{agent}/intentions/{created['id']}"
    assert data(caller.get(path)) == created
    changed = data(caller.patch(path, json={"action": "tag", "tag": "churn-risk"}))
    assert (changed["action"], changed["tag"], changed["reply_text"]) == ("tag", "churn-risk", None)
    assert caller.delete(path).status_code == 204
    assert_error(caller.get(path), 404, "INTENTION_NOT_FOUND")


def test_listings_are_paginated_filtered_and_sorted(caller, shop):
    agent = shop["agent_id"]
    for number in range(3):
        data(
            post(caller, agent, "idle-actions", name=f"n{number}", minutes=30 - number,
                 action="close", is_active=number != 1),
            201,
        )  # fmt: skip
    body = caller.get(f"/v1/agents/{agent}/idle-actions?limit=2&sort=minutes&order=asc").get_json()
    assert [item["minutes"] for item in body["data"]] == [28, 29]
    assert body["pagination"] == {"page": 1, "limit": 2, "total": 3, "total_pages": 2}
    assert body["meta"]["per_page"] == 2
    inactive = caller.get(f"/v1/agents/{agent}/idle-actions?is_active=false").get_json()
    assert [item["name"] for item in inactive["data"]] == ["n1"]
    assert_error(caller.get(f"/v1/agents/{agent}/idle-actions?sort=bogus"), 400, "VALIDATION_ERROR")
    assert_error(caller.get(f"/v1/agents/{agent}/idle-actions?nope=1"), 400, "VALIDATION_ERROR")


@pytest.mark.parametrize(
    "kind, body, code, field",
    [
        ("intentions", {"name": "x", "examples": ["a"], "action": "reply"},
         "MISSING_REQUIRED_FIELD", "reply_text"),
        ("intentions", {"name": "x", "examples": [], "action": "transfer"},
         "VALIDATION_ERROR", "examples"),
        ("intentions", {"name": "x", "examples": ["a"], "action": "reply", "reply_text": "r",
                        "tag": "t"}, "VALIDATION_ERROR", "tag"),
        ("intentions", {"name": "x", "examples": ["a"], "action": "webhook",
                        "url": "ftp://example.com/x"}, "VALIDATION_ERROR", "url"),
        ("intentions", {"name": "x", "examples": ["a"], "action": "dance"},
         "VALIDATION_ERROR", "action"),
        ("transfer-rules", {"name": "x", "match_type": "keywords", "action": "handoff"},
         "MISSING_REQUIRED_FIELD", "keywords"),
        ("transfer-rules", {"name": "x", "match_type": "regex", "pattern": "(unclosed",
                            "action": "handoff"}, "VALIDATION_ERROR", "pattern"),
        ("transfer-rules", {"name": "x", "match_type": "regex", "pattern": r"order(?=#)",
                            "action": "handoff"}, "VALIDATION_ERROR", "pattern"),
        ("transfer-rules", {"name": "x", "match_type": "keywords", "keywords": ["a"],
                            "action": "transfer"}, "MISSING_REQUIRED_FIELD", "target_agent_id"),
        ("transfer-rules", {"name": "x", "match_type": "intention", "intention_id": MISSING,
                            "action": "handoff"}, "VALIDATION_ERROR", "intention_id"),
        ("idle-actions", {"name": "x", "minutes": 0, "action": "close"},
         "VALIDATION_ERROR", "minutes"),
        ("idle-actions", {"name": "x", "minutes": 5, "action": "message"},
         "MISSING_REQUIRED_FIELD", "message"),
        ("idle-actions", {"name": "x", "minutes": 5, "action": "close", "extra": 1},
         "VALIDATION_ERROR", "extra"),
    ],
)  # fmt: skip
def test_invalid_rules_are_400_naming_the_field(caller, shop, kind, body, code, field):
    assert_error(post(caller, shop["agent_id"], kind, **body), 400, code, field)


def test_targets_must_be_other_live_agents_of_the_workspace(caller, other, shop):
    agent = shop["agent_id"]
    foreign = make_agent(other)
    body = {"name": "x", "match_type": "keywords", "keywords": ["a"], "action": "transfer"}
    assert_error(
        post(caller, agent, "transfer-rules", **body, target_agent_id=foreign),
        404,
        "AGENT_NOT_FOUND",
    )
    assert_error(
        post(caller, agent, "transfer-rules", **body, target_agent_id=agent),
        400,
        "VALIDATION_ERROR",
        "target_agent_id",
    )


def test_an_intention_used_by_a_rule_cannot_be_deleted(caller, shop):
    agent = shop["agent_id"]
    wanted = intention(caller, agent)
    body = {"name": "x", "match_type": "intention", "intention_id": wanted["id"]}
    rule = data(post(caller, agent, "transfer-rules", **body, action="handoff"), 201)
    path = f"/v1/agents/{agent}/intentions/{wanted['id']}"
    assert_error(caller.delete(path), 409, "INTENTION_IN_USE", rule["id"])
    assert caller.delete(f"/v1/agents/{agent}/transfer-rules/{rule['id']}").status_code == 204
    assert caller.delete(path).status_code == 204


def test_rules_belong_to_their_agent_and_workspace(caller, other, shop):
    agent = shop["agent_id"]
    second = make_agent(caller, name="Bob")
    created = intention(caller, agent)
    assert_error(
        caller.get(f"/v1/agents/{second}/intentions/{created['id']}"), 404, "INTENTION_NOT_FOUND"
    )
    assert_error(
        other.get(f"/v1/agents/{agent}/intentions/{created['id']}"), 404, "AGENT_NOT_FOUND"
    )
    assert_error(other.get(f"/v1/agents/{agent}/intentions"), 404, "AGENT_NOT_FOUND")
    assert_error(
        caller.get(f"/v1/agents/{agent}/intentions/not-a-uuid"), 404, "INTENTION_NOT_FOUND"
    )
    assert_error(caller.get(f"/v1/agents/{MISSING}/transfer-rules"), 404, "AGENT_NOT_FOUND")


@pytest.mark.parametrize("kind", ["intentions", "transfer-rules", "idle-actions"])
def test_each_kind_has_its_own_scopes(caller, make_caller, shop, kind):
    agent = shop["agent_id"]
    reader = make_caller(scopes=[f"{kind}:read"], workspace_id=caller.workspace_id)
    writer = make_caller(scopes=[f"{kind}:write"], workspace_id=caller.workspace_id)
    assert reader.get(f"/v1/agents/{agent}/{kind}").status_code == 200
    assert_error(post(reader, agent, kind, name="x"), 403, "INSUFFICIENT_SCOPE", f"{kind}:write")
    assert_error(writer.get(f"/v1/agents/{agent}/{kind}"), 403, "INSUFFICIENT_SCOPE")
    assert_error(
        make_caller(scopes=["agents:write"], workspace_id=caller.workspace_id).get(
            f"/v1/agents/{agent}/{kind}"
        ),
        403,
        "INSUFFICIENT_SCOPE",
        f"{kind}:read",
    )


# --- transfer rules and handoff keywords in action --------------------------------------


def test_a_keyword_rule_hands_off_with_its_message(caller, shop):
    rule = {"name": "Complaints", "match_type": "keywords", "keywords": ["speak to the manager"]}
    data(post(caller, shop["agent_id"], "transfer-rules", **rule, action="handoff",
              message="A manager will write to you shortly."), 201)  # fmt: skip
    message = customer_says(shop["channel_id"], "I want to SPEAK to the manager, now!", at(0))
    run_replies(at(2))
    assert texts(message.conversation_id) == ["A manager will write to you shortly."]
    conversation = Conversation.get_by_id(message.conversation_id)
    assert conversation.status == "handoff"
    assert events(caller.workspace_id, "agent.handoff_started")[-1][1]["id"] == conversation.id
    assert jobs(message.conversation_id)[0].outcome == "handoff"
    # The agent is silent now; a human answers.
    customer_says(shop["channel_id"], "what are your opening hours?", at(10))
    run_replies(at(20))
    assert len(texts(message.conversation_id)) == 1


def test_rules_go_by_priority_and_regex_matches_any_case(caller, shop):
    agent = shop["agent_id"]
    data(post(caller, agent, "transfer-rules", name="late", priority=5, match_type="regex",
              pattern=r"order\s*#?\d+", action="handoff", message="late"), 201)  # fmt: skip
    data(post(caller, agent, "transfer-rules", name="early", priority=1, match_type="regex",
              pattern=r"ORDER\s*#?\d+", action="handoff", message="early"), 201)  # fmt: skip
    message = customer_says(shop["channel_id"], "where is order #123?", at(0))
    run_replies(at(2))
    assert texts(message.conversation_id) == ["early"]


def test_the_agents_handoff_keywords_hand_off(caller, shop):
    message = customer_says(shop["channel_id"], "can I talk to a person please", at(0))
    run_replies(at(2))
    assert texts(message.conversation_id)[-1].startswith("Sure, I'm passing you to a person")
    assert Conversation.get_by_id(message.conversation_id).status == "handoff"
    assert jobs(message.conversation_id)[0].detail["handoff_keyword"] == "talk to a person"


def test_new_agents_get_handoff_keywords_in_their_language(caller, fake):  # noqa: F811
    for language, keywords in (
        ("pt-BR", ["atendente", "humano", "falar com uma pessoa"]),
        ("es-419", ["agente humano", "asesor", "hablar con una persona"]),
        ("de", ["human", "operator", "talk to a person"]),
    ):
        agent = make_agent(caller, language=language)
        shown = data(caller.get(f"/v1/agents/{agent}/settings"))["handoff_keywords"]
        assert shown == keywords, language
    channel = agent_channel(caller, make_agent(caller, language="pt-BR"), name="Loja")
    message = customer_says(channel["id"], "Quero falar com uma PESSOA!", at(0))
    run_replies(at(2))
    assert Conversation.get_by_id(message.conversation_id).status == "handoff"
    assert texts(message.conversation_id) == [
        "Claro, vou passar você para uma pessoa da nossa equipe. Ela vai responder por aqui."
    ]


def test_a_transfer_rule_moves_the_conversation_to_another_agent_who_answers(caller, shop):
    sales = make_agent(caller, name="Sales")
    add_qa(caller, sales, "Do you have discounts for big orders?", "Yes: 10% above 10 pizzas.")
    body = {"name": "To sales", "match_type": "keywords", "keywords": ["discount", "discounts"]}
    data(post(caller, shop["agent_id"], "transfer-rules", **body, action="transfer",
              target_agent_id=sales), 201)  # fmt: skip
    message = customer_says(shop["channel_id"], "any discounts for big orders?", at(0))
    run_replies(at(2))
    conversation = Conversation.get_by_id(message.conversation_id)
    assert conversation.agent_id == sales
    transferred = events(caller.workspace_id, "agent.transferred")[-1][1]
    assert (transferred["agent_id"], transferred["previous_agent_id"]) == (
        sales,
        shop["agent_id"],
    )
    run_replies(at(2))  # the new agent's job is due at once
    assert texts(message.conversation_id) == ["Yes: 10% above 10 pizzas."]
    first, second = jobs(message.conversation_id)
    assert (first.outcome, second.outcome, second.transfers) == ("transferred", "replied", 1)


def test_transfer_loops_end_in_a_handoff(caller, shop):
    other_agent = make_agent(caller, name="Other")
    rule = {"name": "ping", "match_type": "keywords", "keywords": ["ping"], "action": "transfer"}
    data(post(caller, shop["agent_id"], "transfer-rules", **rule, target_agent_id=other_agent), 201)
    data(post(caller, other_agent, "transfer-rules", **rule, target_agent_id=shop["agent_id"]), 201)
    message = customer_says(shop["channel_id"], "ping", at(0))
    for _ in range(5):
        run_replies(at(2))
    assert Conversation.get_by_id(message.conversation_id).status == "handoff"
    assert [job.outcome for job in jobs(message.conversation_id)] == [
        "transferred", "transferred", "transferred", "handoff",
    ]  # fmt: skip


# --- intentions in action -------------------------------------------------------------------


def test_a_reply_intention_answers_and_is_recorded_on_the_message(caller, shop):
    wanted = intention(caller, shop["agent_id"], examples=["cancel my order", "I want to cancel"])
    message = customer_says(shop["channel_id"], "pls cancel my order #123", at(0))
    run_replies(at(2))
    assert texts(message.conversation_id) == ["Your order is cancelled."]
    shown = data(caller.get(f"/v1/messages/{message.id}"))["metadata"]["intention"]
    assert (shown["id"], shown["name"], shown["action"]) == (wanted["id"], "Cancel", "reply")
    assert shown["score"] >= routing.INTENTION_THRESHOLD
    # Words of no intention go to the provider as usual.
    customer_says(shop["channel_id"], "opening hours?", at(10))
    run_replies(at(12))
    assert texts(message.conversation_id)[-1] == HOURS[1]


def test_an_intention_rule_and_a_transfer_intention_hand_off(caller, shop):
    wanted = intention(caller, shop["agent_id"], name="Refund", examples=["I want a refund"],
                       action="transfer", reply_text=None)  # fmt: skip
    message = customer_says(shop["channel_id"], "i want a refund", at(0))
    run_replies(at(2))
    assert Conversation.get_by_id(message.conversation_id).status == "handoff"
    assert jobs(message.conversation_id)[0].detail["intention_id"] == wanted["id"]


def test_a_webhook_intention_posts_the_match_and_the_agent_still_answers(caller, shop):
    received = []

    class Receiver(QuietHandler):
        def do_POST(self):
            received.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            self.reply(200, "application/json", b"{}")

    with serving(Receiver) as url:
        wanted = intention(caller, shop["agent_id"], name="Hours", examples=["opening hours"],
                           action="webhook", reply_text=None, url=url + "/hook")  # fmt: skip
        message = customer_says(shop["channel_id"], "what are your opening hours?", at(0))
        run_replies(at(2))
    (body,) = received
    assert body["event"] == "intention.matched"
    assert body["intention"] == {"id": wanted["id"], "name": "Hours"}
    assert body["message"]["id"] == message.id
    assert texts(message.conversation_id) == [HOURS[1]]
    note = Message.get_by_id(message.id).metadata["intention"]["webhook"]
    assert (note["status"], note["ok"]) == (200, True)


def test_a_webhook_that_fails_is_recorded_and_does_not_stop_the_reply(caller, shop, app):
    intention(caller, shop["agent_id"], name="Hours", examples=["opening hours"],
              action="webhook", reply_text=None, url="http://127.0.0.1:9/hook")  # fmt: skip
    message = customer_says(shop["channel_id"], "opening hours?", at(0))
    run_replies(at(2))
    assert texts(message.conversation_id) == [HOURS[1]]
    note = Message.get_by_id(message.id).metadata["intention"]["webhook"]
    assert note["ok"] is False and note["error"]


def test_a_tag_intention_tags_the_contact(caller, shop):
    intention(caller, shop["agent_id"], name="Big order", examples=["order for a party"],
              action="tag", reply_text=None, tag="big-order")  # fmt: skip
    message = customer_says(shop["channel_id"], "I need an order for a party of 30", at(0))
    run_replies(at(2))
    contact = data(caller.get(f"/v1/contacts/{message.contact_id}"))
    assert contact["custom_fields"] == {"lead_tags": ["big-order"]}
    assert events(caller.workspace_id, "contact.updated")[-1][1]["id"] == contact["id"]
    found = caller.get("/v1/contacts?custom_field.lead_tags=big-order").get_json()["data"]
    assert [item["id"] for item in found] == [contact["id"]]
    assert len(texts(message.conversation_id)) == 1  # the provider still answered


# --- idle actions -----------------------------------------------------------------------


def test_idle_actions_run_once_per_idle_period(caller, shop):
    agent = shop["agent_id"]
    data(post(caller, agent, "idle-actions", name="nudge", minutes=10, action="message",
              message="Are you still there?"), 201)  # fmt: skip
    data(post(caller, agent, "idle-actions", name="close", minutes=30, action="close",
              message="Closing this chat; write again any time."), 201)  # fmt: skip
    message = customer_says(shop["channel_id"], "opening hours?", at(0))
    run_replies(at(2))
    assert idle_actions.run_idle_actions(now=at(9 * 60)) == 0
    assert idle_actions.run_idle_actions(now=at(10 * 60)) == 1
    assert idle_actions.run_idle_actions(now=at(11 * 60)) == 0  # once per idle period
    assert texts(message.conversation_id)[-1] == "Are you still there?"
    customer_says(shop["channel_id"], "yes", at(12 * 60))  # a new idle period
    run_replies(at(12 * 60 + 2))
    assert idle_actions.run_idle_actions(now=at(22 * 60)) == 1
    assert texts(message.conversation_id)[-1] == "Are you still there?"
    assert idle_actions.run_idle_actions(now=at(42 * 60)) == 1
    conversation = Conversation.get_by_id(message.conversation_id)
    assert conversation.status == "closed"
    assert texts(message.conversation_id)[-1] == "Closing this chat; write again any time."
    assert "conversation.closed" in event_names(caller.workspace_id)
    assert idle_actions.run_idle_actions(now=at(24 * 3600)) == 0
    assert outbound(message.conversation_id)[-2].metadata["idle_action_id"]


def test_idle_actions_skip_handoff_inactive_rules_and_other_agents(caller, shop):
    agent = shop["agent_id"]
    action = data(post(caller, agent, "idle-actions", name="close", minutes=5,
                       action="close"), 201)  # fmt: skip
    message = customer_says(shop["channel_id"], "hi", at(0))
    data(caller.post(f"/v1/chats/{message.conversation_id}/handoff"))
    assert idle_actions.run_idle_actions(now=at(3600)) == 0
    data(caller.post(f"/v1/chats/{message.conversation_id}/handoff/complete"))
    caller.patch(f"/v1/agents/{agent}/idle-actions/{action['id']}", json={"is_active": False})
    assert idle_actions.run_idle_actions(now=at(3600)) == 0
    caller.patch(f"/v1/agents/{agent}/idle-actions/{action['id']}", json={"is_active": True})
    data(caller.post(f"/v1/agents/{agent}/deactivate"))
    assert idle_actions.run_idle_actions(now=at(3600)) == 0
    data(caller.post(f"/v1/agents/{agent}/activate"))
    assert idle_actions.run_idle_actions(now=at(3600)) == 1
    assert Conversation.get_by_id(message.conversation_id).status == "closed"
    assert idle_actions.run_idle_actions(now=at(3600) + timedelta(days=1)) == 0
