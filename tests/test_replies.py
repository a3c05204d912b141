"""The agent answers with the built-in `knowledge` provider, through the fake
sender: when it answers (debounce, greeting, states, inactive agents), what
it sends (Q&A answers, passages, small talk, fallback with handoff, long
replies split), and that a job survives a crash."""

from datetime import timedelta

import pytest

from agent_platform.channels import adapters
from agent_platform.models import Conversation, Message, ReplyJob
from agent_platform.replies.engine import CUSTOMER_CHARS, KNOWLEDGE_CHARS, KNOWLEDGE_READ_CHARS
from agent_platform.services import replies
from conversations_helpers import data, event_names, events
from replies_helpers import (
    add_qa,
    add_text,
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

DELIVERY = ("How much is delivery?", "Delivery costs $5 within the city.")
HOURS = ("What are your opening hours?", "We open every day from 11am to 11pm.")


@pytest.fixture
def shop(caller, fake):  # noqa: F811
    agent_id = make_agent(caller, greeting_message="Hi! I'm Ana from Pizza Roma.")
    add_qa(caller, agent_id, *DELIVERY)
    add_qa(caller, agent_id, *HOURS)
    channel = agent_channel(caller, agent_id)
    return {"agent_id": agent_id, "channel_id": channel["id"], "fake": fake}


def test_a_question_is_answered_after_the_debounce_with_the_greeting_first(caller, shop):
    message = customer_says(shop["channel_id"], "how much is the delivery?", at(0))
    assert run_replies(at(1)) == 0  # within the debounce (2 s): nothing yet
    assert texts(message.conversation_id) == []
    assert run_replies(at(2)) == 1
    greeting, reply = outbound(message.conversation_id)
    assert greeting.text == "Hi! I'm Ana from Pizza Roma."
    assert greeting.metadata["greeting"] is True
    assert reply.text == DELIVERY[1]
    assert (reply.sender_type, reply.direction) == ("agent", "outbound")
    assert [sent[1] for sent in shop["fake"].sent] == [greeting.id, reply.id]
    shown = data(caller.get(f"/v1/messages/{reply.id}"))
    assert shown["status"] == "sent"
    assert shown["metadata"]["reply"]["provider"] == "knowledge"
    assert shown["metadata"]["reply"]["kind"] == "qa"
    assert shown["metadata"]["reply"]["score"] >= 0.40
    (job,) = jobs(message.conversation_id)
    assert (job.status, job.outcome, job.attempts) == ("done", "replied", 1)


def test_the_second_question_gets_no_greeting_and_several_quick_messages_one_reply(caller, shop):
    first = customer_says(shop["channel_id"], "delivery price?", at(0))
    run_replies(at(2))
    customer_says(shop["channel_id"], "hello again", at(10))
    customer_says(shop["channel_id"], "when do you", at(11))
    customer_says(shop["channel_id"], "open?", at(12.5))
    assert run_replies(at(13)) == 0  # pushed back by every message: due at 14.5
    assert run_replies(at(14.5)) == 1
    assert texts(first.conversation_id) == [
        "Hi! I'm Ana from Pizza Roma.",
        DELIVERY[1],
        HOURS[1],
    ]
    assert len(jobs(first.conversation_id)) == 2


def test_the_agent_reads_the_start_of_a_message_of_a_million_characters(caller, shop):
    # Every step of the reply read all of it, about 1.7 s a million characters
    # on the server's one loop (a 5 MB mail: 9 s); now at most CUSTOMER_CHARS.
    said = "How much is delivery? " + "Thank you so much. " * 50_000
    message = customer_says(shop["channel_id"], said, at(0))
    assert Message.get_by_id(message.id).text == said  # stored whole
    preview = data(caller.get(f"/v1/conversations/{message.conversation_id}/reply-preview"))
    assert preview["prompt"]["customer_text"] == said[:CUSTOMER_CHARS]
    assert run_replies(at(2)) == 1
    assert outbound(message.conversation_id)[-1].text == DELIVERY[1]


@pytest.mark.parametrize("space", [" ", " " * 400], ids=["words", "mostly-spaces"])
def test_the_prompt_has_the_start_of_a_long_training_as_if_read_whole(caller, shop, space):
    # Five trainings of 4.9 MB read whole for the prompt held the loop 320 ms
    # a reply; the start is read, and more only when it was mostly spaces.
    body = space.join(["Parking is free at the Oak lot after six."] * 5_000)
    add_text(caller, shop["agent_id"], body, title="Parking")
    message = customer_says(shop["channel_id"], "where is the parking lot?", at(0))
    preview = data(caller.get(f"/v1/conversations/{message.conversation_id}/reply-preview"))
    [found] = [k for k in preview["prompt"]["knowledge"] if k["text"].startswith("Parking:")]
    whole = "Parking: " + " ".join(body.split())
    assert found["text"] == whole[:KNOWLEDGE_CHARS] and len(body) > 30 * KNOWLEDGE_READ_CHARS


def test_credits_are_used_per_reply(caller, shop):
    message = customer_says(shop["channel_id"], "what time do you open", at(0))
    run_replies(at(2))
    usage = data(caller.get(f"/v1/agents/{shop['agent_id']}/credits"))
    assert usage["total_credits"] == 1
    assert usage["breakdown"][0]["conversations"] == 1
    (job,) = jobs(message.conversation_id)
    assert job.detail["credits"] == 1


def test_nothing_is_answered_in_handoff_and_again_after_it(caller, shop):
    message = customer_says(shop["channel_id"], "hours?", at(0))
    run_replies(at(2))
    conversation_id = message.conversation_id
    data(caller.post(f"/v1/chats/{conversation_id}/handoff"))
    customer_says(shop["channel_id"], "how much is delivery?", at(10))
    assert run_replies(at(20)) == 0  # no job was scheduled in handoff
    assert len(texts(conversation_id)) == 2
    data(caller.post(f"/v1/chats/{conversation_id}/handoff/complete"))
    customer_says(shop["channel_id"], "how much is delivery?", at(30))
    run_replies(at(32))
    assert texts(conversation_id)[-1] == DELIVERY[1]


def test_a_handoff_while_the_job_waits_silences_it(caller, shop):
    message = customer_says(shop["channel_id"], "hours?", at(0))
    data(caller.post(f"/v1/chats/{message.conversation_id}/handoff"))
    assert run_replies(at(2)) == 1
    assert texts(message.conversation_id) == []
    (job,) = jobs(message.conversation_id)
    assert (job.outcome, job.detail["reason"]) == ("skipped", "the conversation is handoff")


def test_an_inactive_agent_and_a_closed_conversation_are_silent(caller, shop):
    data(caller.post(f"/v1/agents/{shop['agent_id']}/deactivate"))
    message = customer_says(shop["channel_id"], "hours?", at(0))
    assert jobs(message.conversation_id) == []
    data(caller.post(f"/v1/agents/{shop['agent_id']}/activate"))
    customer_says(shop["channel_id"], "hours?", at(5))
    data(caller.post(f"/v1/agents/{shop['agent_id']}/deactivate"))
    run_replies(at(10))
    assert texts(message.conversation_id) == []
    assert jobs(message.conversation_id)[0].detail == {
        "reason": "the conversation has no active agent"
    }


def test_a_closed_conversation_reopened_by_the_customer_is_answered(caller, shop):
    message = customer_says(shop["channel_id"], "hours?", at(0))
    run_replies(at(2))
    data(caller.post(f"/v1/conversations/{message.conversation_id}/close"))
    again = customer_says(shop["channel_id"], "delivery cost?", at(60))
    assert again.conversation_id == message.conversation_id
    run_replies(at(62))
    assert texts(message.conversation_id)[-1] == DELIVERY[1]


def test_a_duplicate_network_message_schedules_nothing_more(caller, shop):
    customer_says(shop["channel_id"], "hours?", at(0), external_id="wamid.same")
    message = customer_says(shop["channel_id"], "hours?", at(1), external_id="wamid.same")
    assert len(jobs(message.conversation_id)) == 1
    assert jobs(message.conversation_id)[0].due_at == at(2)


def test_no_answer_sends_the_fallback_and_hands_off(caller, shop):
    message = customer_says(shop["channel_id"], "do you repair bicycles?", at(0))
    run_replies(at(2))
    assert texts(message.conversation_id)[-1].startswith("Sorry, I can't answer that")
    conversation = data(caller.get(f"/v1/conversations/{message.conversation_id}"))
    assert conversation["status"] == "handoff"
    assert "agent.handoff_started" in event_names(caller.workspace_id)
    (job,) = jobs(message.conversation_id)
    assert (job.status, job.outcome) == ("done", "fallback")
    # No credits for a fallback.
    assert data(caller.get(f"/v1/agents/{shop['agent_id']}/credits"))["total_credits"] == 0


def test_the_fallback_text_and_handoff_follow_the_settings(caller, shop):
    settings = {"fallback_message": "Let me check that for you.", "handoff_on_fallback": False}
    data(caller.put(f"/v1/agents/{shop['agent_id']}/settings", json=settings))
    message = customer_says(shop["channel_id"], "do you repair bicycles?", at(0))
    run_replies(at(2))
    assert texts(message.conversation_id)[-1] == "Let me check that for you."
    assert Conversation.get_by_id(message.conversation_id).status == "open"


def test_small_talk_gets_the_greeting_or_a_short_line(caller, shop):
    message = customer_says(shop["channel_id"], "Hi!", at(0))
    run_replies(at(2))
    assert texts(message.conversation_id) == ["Hi! I'm Ana from Pizza Roma."]
    customer_says(shop["channel_id"], "thanks!", at(10))
    run_replies(at(12))
    assert texts(message.conversation_id)[-1].startswith("You're welcome!")
    assert Conversation.get_by_id(message.conversation_id).status == "open"


def test_a_passage_of_a_text_training_answers(caller, shop):
    add_text(
        caller,
        shop["agent_id"],
        "Parking: we have free parking for customers behind the restaurant.\n\n"
        "Allergies: tell us about allergies when you order.",
        title="Visiting us",
    )
    message = customer_says(shop["channel_id"], "is there free parking?", at(0))
    run_replies(at(2))
    reply = outbound(message.conversation_id)[-1]
    assert "free parking" in reply.text
    assert reply.metadata["reply"]["kind"] == "passage"


def test_long_replies_are_split_at_the_channel_limit_on_sentences(caller, shop, monkeypatch):
    monkeypatch.setattr(adapters.channel_type("whatsapp"), "text_limit", 60)
    no_questions = {"clarify_enabled": False}  # the message scores under clarifying.SURE
    data(caller.put(f"/v1/agents/{shop['agent_id']}/settings", json=no_questions))
    answer = (
        "Delivery costs $5 within the city. Outside the city it costs $9. "
        "Orders above $50 are delivered for free. We deliver until 10pm."
    )
    add_qa(caller, shop["agent_id"], "How much is delivery outside the city?", answer)
    message = customer_says(shop["channel_id"], "delivery outside the city price", at(0))
    run_replies(at(2))
    parts = outbound(message.conversation_id)[1:]
    assert [part.text for part in parts] == [
        "Delivery costs $5 within the city.",
        "Outside the city it costs $9.",
        "Orders above $50 are delivered for free.",
        "We deliver until 10pm.",
    ]
    assert all(len(part.text) <= 60 for part in parts)
    assert [part.metadata["reply_part"] for part in parts] == [[1, 4], [2, 4], [3, 4], [4, 4]]
    assert "reply" in parts[0].metadata


def test_max_reply_length_cuts_at_a_sentence(caller, shop):
    settings = {"max_reply_length": 40, "clarify_enabled": False}  # as above
    data(caller.put(f"/v1/agents/{shop['agent_id']}/settings", json=settings))
    answer = "Delivery costs $5 within the city. Outside the city it costs $9."
    add_qa(caller, shop["agent_id"], "How much is delivery outside the city?", answer)
    message = customer_says(shop["channel_id"], "delivery outside the city price", at(0))
    run_replies(at(2))
    assert texts(message.conversation_id)[-1] == "Delivery costs $5 within the city."


def test_a_human_answer_before_the_job_keeps_the_agent_silent(caller, shop):
    message = customer_says(shop["channel_id"], "hours?", at(0))
    caller.post(f"/v1/conversations/{message.conversation_id}/messages", json={"text": "11 to 23!"})
    run_replies(at(10**6))
    assert texts(message.conversation_id) == ["11 to 23!"]
    assert jobs(message.conversation_id)[0].detail == {"reason": "a human operator answered"}


def test_a_job_claimed_by_a_process_that_died_is_answered_once_after_its_lease(caller, shop):
    message = customer_says(shop["channel_id"], "hours?", at(0))
    claimed = replies.claim(at(2), batch=10, lease_seconds=120)  # then the process dies
    assert [job.id for job in claimed] == [jobs(message.conversation_id)[0].id]
    assert run_replies(at(100)) == 0  # still leased
    assert run_replies(at(122)) == 1
    assert texts(message.conversation_id)[-1] == HOURS[1]
    (job,) = jobs(message.conversation_id)
    assert (job.status, job.attempts) == ("done", 2)
    # The dead process's claim cannot store a second reply.
    replies.answer(claimed[0], at(123))
    assert texts(message.conversation_id).count(HOURS[1]) == 1
    assert jobs(message.conversation_id)[0].outcome == "replied"


def test_a_stale_claim_stores_nothing_even_with_something_to_answer(caller, shop):
    message = customer_says(shop["channel_id"], "hours?", at(0))
    (stale,) = replies.claim(at(2), batch=10, lease_seconds=120)
    (owner,) = replies.claim(at(130), batch=10, lease_seconds=120)  # took over
    assert replies.answer(stale, at(131)) == "lost"
    assert texts(message.conversation_id) == []
    assert replies.answer(owner, at(132)) == "replied"
    assert texts(message.conversation_id)[-1] == HOURS[1]


def test_the_job_is_written_with_the_message(caller, shop):
    message = customer_says(shop["channel_id"], "hours?", at(0))
    job = ReplyJob.get(ReplyJob.conversation == message.conversation_id)
    assert (job.status, job.message_id, job.due_at) == ("pending", message.id, at(2))
    assert Message.get_by_id(job.message_id).created_at == job.created_at


def test_credits_depleted_stop_the_agent_and_hand_off(caller, shop, app):
    app.config["PLAN_CREDITS"] = 1
    first = customer_says(shop["channel_id"], "hours?", at(0))
    run_replies(at(2))
    assert [name for name in event_names(caller.workspace_id) if name.startswith("credit.")] == [
        "credit.low",
        "credit.depleted",
    ]
    customer_says(shop["channel_id"], "delivery price?", at(10))
    run_replies(at(12))
    assert texts(first.conversation_id)[-1] == HOURS[1]  # nothing more was said
    conversation = Conversation.get_by_id(first.conversation_id)
    assert conversation.status == "handoff"
    last_job = jobs(first.conversation_id)[-1]
    assert (last_job.outcome, last_job.detail["reason"]) == ("handoff", "credits depleted")
    assert events(caller.workspace_id, "agent.handoff_started")[-1][1]["id"] == conversation.id


def test_prune_deletes_old_finished_jobs(caller, shop):
    message = customer_says(shop["channel_id"], "hours?", at(0))
    run_replies(at(2))
    assert replies.prune_reply_jobs(now=at(2) + timedelta(days=6)) == 0
    assert replies.prune_reply_jobs(now=at(2) + timedelta(days=8)) == 1
    assert jobs(message.conversation_id) == []
