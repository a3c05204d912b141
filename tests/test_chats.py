"""Chats: the live conversations, human handoff and back, edits; scopes."""

from conftest import assert_error
from conversations_helpers import (
    data,
    event_names,
    events,
    id_forms,
    inbound,
    make_channel,
    send,
    setup_chat,
)


def test_chats_are_open_and_handoff_conversations_by_activity(caller):
    channel = make_channel(caller)
    first = inbound(channel["id"], "w1", sender_id="5511900000001").message.conversation_id
    second = inbound(channel["id"], "w2", sender_id="5511900000002").message.conversation_id
    third = inbound(channel["id"], "w3", sender_id="5511900000003").message.conversation_id
    caller.post(f"/v1/chats/{second}/handoff")
    caller.post(f"/v1/conversations/{third}/close")

    def ids(query=""):
        return [chat["id"] for chat in data(caller.get("/v1/chats?" + query))]

    assert ids() == [second, first]
    inbound(channel["id"], "w4", sender_id="5511900000001")  # new activity moves it up
    assert ids() == [first, second]
    assert ids("status=handoff") == [second]
    assert ids(f"channel_id={channel['id']}&status=open") == [first]
    assert_error(caller.get("/v1/chats?status=closed"), 400, "VALIDATION_ERROR", "status")
    assert caller.get("/v1/chats").get_json()["pagination"]["total"] == 2


def test_handoff_and_back(caller):
    chat = setup_chat(caller)
    conversation_id = chat["conversation"]["id"]
    taken = data(caller.post(f"/v1/chats/{conversation_id}/handoff", json={"assigned_to": "maria"}))
    assert (taken["status"], taken["assigned_to"]) == ("handoff", "maria")
    assert taken["agent_id"] == chat["agent_id"]  # the agent keeps it, silent
    assert event_names(caller.workspace_id)[-2:] == [
        "agent.handoff_started",
        "conversation.assigned",
    ]
    assert events(caller.workspace_id, "conversation.assigned")[0][1]["assigned_to"] == "maria"
    assert_error(
        caller.post(f"/v1/chats/{conversation_id}/handoff"),
        409,
        "INVALID_STATE_TRANSITION",
        "handoff",
    )
    back = data(caller.post(f"/v1/chats/{conversation_id}/handoff/complete"))
    assert (back["status"], back["handoff_started_at"]) == ("open", None)
    assert events(caller.workspace_id, "agent.handoff_completed") == [
        ("agent.handoff_completed", back)
    ]
    assert_error(
        caller.post(f"/v1/chats/{conversation_id}/handoff/complete"),
        409,
        "INVALID_STATE_TRANSITION",
        "open",
    )
    assert len(events(caller.workspace_id, "agent.handoff_started")) == 1


def test_handoff_of_a_closed_chat_is_refused(caller):
    conversation_id = setup_chat(caller)["conversation"]["id"]
    caller.post(f"/v1/conversations/{conversation_id}/close")
    assert_error(
        caller.post(f"/v1/chats/{conversation_id}/handoff"),
        409,
        "INVALID_STATE_TRANSITION",
        "closed",
    )
    assert_error(
        caller.post(f"/v1/chats/{conversation_id}/handoff", json={"assigned_to": ""}),
        400,
        "VALIDATION_ERROR",
    )


def test_what_the_human_writes_in_a_handoff_stays_for_the_agent(caller):
    chat = setup_chat(caller)
    conversation_id = chat["conversation"]["id"]
    inbound(
        chat["channel"]["id"],
        "w1",
        sender_id="5511911112222",
        text="I want a human",
        sender_phone="+5511911112222",
    )
    caller.post(f"/v1/chats/{conversation_id}/handoff")
    human = data(send(caller, conversation_id, text="Hi, Maria here", sender_type="human"), 201)
    assert_error(
        send(caller, conversation_id, text="bot", sender_type="agent"),
        409,
        "CONVERSATION_IN_HANDOFF",
    )
    inbound(chat["channel"]["id"], "w2", sender_id="5511911112222", text="Thanks Maria")
    caller.post(f"/v1/chats/{conversation_id}/handoff/complete")
    listed = data(caller.get(f"/v1/conversations/{conversation_id}/messages?order=asc"))
    assert [(m["sender_type"], m["text"]) for m in listed] == [
        ("contact", "I want a human"),
        ("human", "Hi, Maria here"),
        ("contact", "Thanks Maria"),
    ]
    assert listed[1]["id"] == human["id"]
    assert (
        send(caller, conversation_id, text="Back to the bot", sender_type="agent").status_code
        == 201
    )


def test_edit_a_chat_message(caller, other):
    chat = setup_chat(caller)
    conversation_id = chat["conversation"]["id"]
    message = data(send(caller, conversation_id, text="Helo"), 201)
    path = f"/v1/chats/{conversation_id}/messages/{message['id']}"
    edited = data(caller.put(path, json={"text": "Hello"}))
    assert (edited["text"], edited["edit_history"][0]["text"]) == ("Hello", "Helo")
    assert data(caller.get(f"/v1/messages/{message['id']}")) == edited
    # The message must belong to the chat named in the path.
    second_contact = data(caller.post("/v1/contacts", json={"name": "Zé"}), 201)
    second = data(
        caller.post(
            "/v1/conversations",
            json={"contact_id": second_contact["id"], "channel_id": chat["channel"]["id"]},
        ),
        201,
    )
    wrong = f"/v1/chats/{second['id']}/messages/{message['id']}"
    assert_error(caller.put(wrong, json={"text": "x"}), 404, "MESSAGE_NOT_FOUND")
    assert_error(other.put(path, json={"text": "x"}), 404, "MESSAGE_NOT_FOUND")
    assert_error(caller.put(path, json={}), 400, "VALIDATION_ERROR")


def test_other_workspaces_cannot_take_a_chat(caller, other):
    conversation_id = setup_chat(caller)["conversation"]["id"]
    for path in ("handoff", "handoff/complete"):
        assert_error(
            other.post(f"/v1/chats/{conversation_id}/{path}"), 404, "CONVERSATION_NOT_FOUND"
        )
    assert data(other.get("/v1/chats")) == []
    assert len(data(caller.get("/v1/chats"))) == 1


def test_scopes(make_caller):
    owner = make_caller()
    conversation_id = setup_chat(owner)["conversation"]["id"]
    reader = make_caller(
        scopes=["conversations:read", "messages:read"], workspace_id=owner.workspace_id
    )
    for method, path in (
        ("GET", "/v1/chats"),
        ("POST", f"/v1/chats/{conversation_id}/handoff"),
        ("POST", f"/v1/chats/{conversation_id}/handoff/complete"),
        ("PUT", f"/v1/chats/{conversation_id}/messages/{conversation_id}"),
    ):
        assert_error(
            reader.request(method, path, json={}), 403, "INSUFFICIENT_SCOPE", "chats:write"
        )
    operator = make_caller(scopes=["chats:write"], workspace_id=owner.workspace_id)
    assert [c["id"] for c in data(operator.get("/v1/chats"))] == [conversation_id]
    assert data(operator.post(f"/v1/chats/{conversation_id}/handoff"))["status"] == "handoff"


def test_taking_over_with_a_person_holds_the_chat(caller):
    from web_helpers import make_user

    ana = make_user(caller.workspace_id, email="ana@example.com", name="Ana")
    carla = make_user(caller.workspace_id, email="carla@example.com", name="Carla")
    conversation_id = setup_chat(caller)["conversation"]["id"]
    path = f"/v1/chats/{conversation_id}/handoff"
    # A handoff nobody holds (the agent's, or a key's) is picked up by a person.
    data(caller.post(path))
    before = event_names(caller.workspace_id)
    taken = data(caller.post(path, json={"assigned_to": ana["id"]}))
    assert (taken["status"], taken["assigned_to"]) == ("handoff", ana["id"])
    assert event_names(caller.workspace_id)[len(before) :] == ["conversation.assigned"]
    # Taking it again changes nothing; another person is refused, named.
    assert data(caller.post(path, json={"assigned_to": ana["id"]})) == taken
    refused = caller.post(path, json={"assigned_to": carla["id"]})
    assert_error(refused, 409, "CONVERSATION_HELD", "Ana already holds")
    assert_error(caller.post(path, json={"assigned_to": "maria"}), 409, "CONVERSATION_HELD", "Ana")
    assert len(event_names(caller.workspace_id)) == len(before) + 1
    # Once handed back, anyone may take it.
    data(caller.post(f"/v1/chats/{conversation_id}/handoff/complete"))
    assert data(caller.post(path, json={"assigned_to": carla["id"]}))["assigned_to"] == carla["id"]


def test_a_chat_held_by_free_text_names_it(caller):
    conversation_id = setup_chat(caller)["conversation"]["id"]
    path = f"/v1/chats/{conversation_id}/handoff"
    data(caller.post(path, json={"assigned_to": "maria@example.com"}))
    refused = caller.post(path, json={"assigned_to": "joão"})
    assert_error(refused, 409, "CONVERSATION_HELD", "maria@example.com already holds")


def test_a_person_holds_a_chat_whatever_form_of_their_id_is_given(caller):
    from web_helpers import make_user

    zed = make_user(caller.workspace_id, email="zed@example.com", name="Zed")
    conversation_id = setup_chat(caller)["conversation"]["id"]
    path = f"/v1/chats/{conversation_id}/handoff"
    taken = data(caller.post(path, json={"assigned_to": zed["id"].upper()}))
    assert taken["assigned_to"] == zed["id"]  # stored as every id is
    before = event_names(caller.workspace_id)
    for form in id_forms(zed["id"]):
        assert data(caller.post(path, json={"assigned_to": form})) == taken, form
    assert event_names(caller.workspace_id) == before  # nothing changed
    for form in id_forms(zed["id"]):
        held = data(caller.get(f"/v1/chats?assigned_to={form}"))
        assert [chat["id"] for chat in held] == [conversation_id], form
