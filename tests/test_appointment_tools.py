"""The agent books in the chat: with a model provider, the built-in
appointment tools are offered next to the MCP tools, and a scripted
OpenAI-compatible stand-in that calls them lists free slots, books,
reschedules and cancels for the customer of the conversation."""

import json

import mcp_types as types
import pytest

from conversations_helpers import data, event_names
from mcp_helpers import TOOLS, RunningMcpServer
from openai_stub import OpenAIStub, answer, tool_calls
from replies_helpers import (
    agent_channel,
    at,
    customer_says,
    fake,  # noqa: F401  (fixture)
    make_agent,
    outbound,
    run_replies,
    texts,
)
from test_appointments import NINE_TO_FIVE, next_monday, open_hours

TOOL_NAMES = {
    "appointments_free_slots",
    "appointments_book",
    "appointments_list",
    "appointments_reschedule",
    "appointments_cancel",
}


@pytest.fixture
def settings(tmp_path):
    return {
        "DATABASE_PATH": str(tmp_path / "test.db"),
        "REPLIES_MAX_TOOL_STEPS": 3,
        "MCP_ALLOW_PRIVATE_URLS": True,
    }


@pytest.fixture(scope="module")
def stub():
    with OpenAIStub() as server:
        yield server


@pytest.fixture(autouse=True)
def fresh_stub(stub):
    stub.requests.clear()
    stub._script.clear()


@pytest.fixture
def clinic(caller, fake, stub):  # noqa: F811
    model = {"model_provider": "openai", "model_name": "m", "base_url": stub.url}
    agent_id = make_agent(caller, settings=model)
    channel = agent_channel(caller, agent_id)
    data(caller.put("/v1/appointments/settings", json={"time_zone": "America/Sao_Paulo"}))
    open_hours(caller, weekly_hours=NINE_TO_FIVE, slot_minutes=60)
    return {"agent_id": agent_id, "channel_id": channel["id"]}


def tool_results(body):
    return [m["content"] for m in body["messages"] if m["role"] == "tool"]


def local(day, hour):
    return f"{day}T{hour:02d}:00:00-03:00"


def test_a_customer_books_reschedules_and_cancels_in_the_chat(caller, clinic, stub):
    day = next_monday().date()
    stub.script(
        tool_calls(("appointments_free_slots", {"from_date": str(day), "days": 1})),
        tool_calls(("appointments_book", {"start_at": local(day, 9), "title": "First visit"})),
        answer("You are booked on Monday at 9:00."),
    )
    first = customer_says(clinic["channel_id"], "Can I book a visit on Monday?", at(0))
    run_replies(at(2))
    offered, listed, booked = stub.bodies()
    names = {tool["function"]["name"] for tool in offered["tools"]}
    assert names == TOOL_NAMES
    slots = json.loads(tool_results(listed)[0])
    assert slots["time_zone"] == "America/Sao_Paulo"
    assert [s["start_at"] for s in slots["slots"]][:2] == [local(day, 9), local(day, 10)]
    result = json.loads(tool_results(booked)[-1])
    assert (result["status"], result["start_at"]) == ("scheduled", local(day, 9))
    conversation_id = first.conversation_id
    [appointment] = data(caller.get("/v1/appointments"))
    assert appointment["id"] == result["id"]
    assert (appointment["conversation_id"], appointment["agent_id"]) == (
        conversation_id,
        clinic["agent_id"],
    )
    assert appointment["contact_id"] == first.contact_id
    assert appointment["title"] == "First visit"
    assert texts(conversation_id)[-1] == "You are booked on Monday at 9:00."
    calls = outbound(conversation_id)[-1].metadata["reply"]["tool_calls"]
    assert [(c["name"], c["outcome"], c["server_name"]) for c in calls] == [
        ("appointments_free_slots", "ok", "built-in"),
        ("appointments_book", "ok", "built-in"),
    ]

    stub.requests.clear()
    move = {"appointment_id": appointment["id"], "start_at": local(day, 9).replace("T09", "T10")}
    stub.script(
        tool_calls(("appointments_list", {})),
        tool_calls(("appointments_reschedule", move)),
        answer("Moved to 10:00."),
    )
    customer_says(clinic["channel_id"], "Can we make it 10?", at(10))
    run_replies(at(12))
    mine = json.loads(tool_results(stub.bodies()[1])[0])
    assert [a["id"] for a in mine["appointments"]] == [appointment["id"]]
    moved = data(caller.get(f"/v1/appointments/{appointment['id']}"))
    assert (moved["status"], moved["start_at_local"]) == ("rescheduled", local(day, 10))

    stub.script(
        tool_calls(("appointments_cancel", {"appointment_id": appointment["id"]})),
        answer("Cancelled."),
    )
    customer_says(clinic["channel_id"], "Actually, cancel it", at(20))
    run_replies(at(22))
    assert data(caller.get(f"/v1/appointments/{appointment['id']}"))["status"] == "canceled"
    names = [n for n in event_names(caller.workspace_id) if n.startswith("appointment.")]
    assert names == [
        "appointment.created",
        "appointment.scheduled",
        "appointment.rescheduled",
        "appointment.cancelled",
        "appointment.canceled",
    ]


def test_the_model_is_refused_what_the_calendar_does_not_allow(caller, clinic, stub):
    day = next_monday().date()
    someone = data(
        caller.post("/v1/contacts", json={"name": "Caio", "phone": "+5511911113333"}), 201
    )
    taken = data(
        caller.post(
            "/v1/appointments",
            json={"contact_id": someone["id"], "start_at": f"{day}T12:00:00Z",
                  "agent_id": clinic["agent_id"]},
        ),
        201,
    )  # fmt: skip
    stub.script(
        tool_calls(
            ("appointments_book", {"start_at": local(day, 9)}),  # taken by Caio
            ("appointments_book", {"start_at": f"{day}T09:30:00-03:00"}),  # not a slot
            ("appointments_book", {"start_at": "tomorrow"}),
            ("appointments_book", {"start_at": "9999-12-31T00:00:00+00:00"}),
            ("appointments_cancel", {"appointment_id": taken["id"]}),  # Caio's
            ("appointments_free_slots", {"days": 99}),
        ),
        answer("Sorry."),
    )
    customer_says(clinic["channel_id"], "Book me Monday at 9", at(0))
    run_replies(at(2))
    errors = tool_results(stub.bodies()[1])
    assert all(text.startswith("Error: ") for text in errors), errors
    assert "not a free slot" in errors[0] and "not a free slot" in errors[1]
    assert "ISO 8601" in errors[2] and "within a year" in errors[3]
    assert "no appointment with that id" in errors[4]
    assert "from 1 to 14" in errors[5]
    assert [a["id"] for a in data(caller.get("/v1/appointments"))] == [taken["id"]]
    assert data(caller.get(f"/v1/appointments/{taken['id']}"))["status"] == "scheduled"


def test_without_availability_no_appointment_tool_is_offered(caller, fake, stub):  # noqa: F811
    model = {"model_provider": "openai", "model_name": "m", "base_url": stub.url}
    agent_id = make_agent(caller, settings=model)
    channel = agent_channel(caller, agent_id)
    stub.script(answer("Hello!"))
    customer_says(channel["id"], "Hi", at(0))
    run_replies(at(2))
    assert "tools" not in stub.bodies()[0]
    own = {"weekly_hours": {"friday": [{"start": "09:00", "end": "10:00"}]}, "slot_minutes": 60}
    data(caller.put(f"/v1/agents/{agent_id}/availability", json=own))
    stub.script(answer("Hello again!"))
    customer_says(channel["id"], "Hi again", at(10))
    run_replies(at(12))
    names = {tool["function"]["name"] for tool in stub.bodies()[1]["tools"]}
    assert names == TOOL_NAMES


def test_the_built_in_tools_are_offered_next_to_the_mcp_tools(caller, clinic, stub):
    """An MCP tool named like a built-in one gives way (a suffix); each call
    reaches its own side: the MCP server over HTTP, or the calendar."""
    twin = types.Tool(
        name="appointments_book",
        description="The shop's own booking",
        input_schema={"type": "object", "properties": {"number": {"type": "string"}}},
    )
    day = next_monday().date()
    with RunningMcpServer(json_response=True, tools=[TOOLS[0], twin]) as mcp:
        server = data(caller.post("/v1/mcp-servers", json={"name": "Shop", "url": mcp.url}), 201)
        data(caller.post(f"/v1/mcp-servers/{server['id']}/sync"))
        tools = data(caller.get(f"/v1/mcp-servers/{server['id']}/tools"))
        chosen = {"tool_ids": [tool["id"] for tool in tools]}
        data(caller.put(f"/v1/agents/{clinic['agent_id']}/tools", json=chosen))
        stub.script(
            tool_calls(
                ("add", {"a": 2, "b": 3}),
                ("appointments_book_2", {"number": "A17"}),
                ("appointments_book", {"start_at": local(day, 9)}),
            ),
            answer("Booked."),
        )
        message = customer_says(clinic["channel_id"], "Book me Monday at 9", at(0))
        run_replies(at(2))
    offered, answered = stub.bodies()
    names = {tool["function"]["name"] for tool in offered["tools"]}
    assert names == TOOL_NAMES | {"add", "appointments_book_2"}
    added, theirs, booked = tool_results(answered)
    assert (added, theirs) == ("5", "order A17 ships tomorrow")
    assert json.loads(booked)["start_at"] == local(day, 9)
    [appointment] = data(caller.get("/v1/appointments"))
    assert appointment["conversation_id"] == message.conversation_id
    calls = outbound(message.conversation_id)[-1].metadata["reply"]["tool_calls"]
    assert [(c["name"], c["server_name"], c["outcome"]) for c in calls] == [
        ("add", "Shop", "ok"),
        ("appointments_book", "Shop", "ok"),
        ("appointments_book", "built-in", "ok"),
    ]
