"""An object or an array of a request body holds at most MAX_MEMBERS
members: marshmallow reads every member before a schema refuses the whole
(100,000 identities took 2.6 s of the server's one loop, 300,000 unknown
fields 1.4 s, 300,000 holidays 0.46 s). Refused first, naming the place."""

import json

import pytest

from agent_platform.api.json_bodies import MAX_MEMBERS, MAX_MEMBERS_IN_ALL
from agent_platform.models import Agent, Contact
from conftest import assert_error
from conversations_helpers import data

WEEK = {"monday": [{"start": "09:00", "end": "17:00"}]}


def sent(caller, method, path, document):
    headers = caller.headers({"Content-Type": "application/json"})
    return caller.client.open(path, method=method, data=json.dumps(document), headers=headers)


@pytest.mark.parametrize("count", [MAX_MEMBERS + 1, 9_000])
def test_an_object_of_too_many_members_is_refused_first(caller, count):
    body = {"name": "A", **{f"field{n}": 1 for n in range(count - 1)}}
    error = assert_error(sent(caller, "POST", "/v1/agents", body), 400, "VALIDATION_ERROR")
    assert error["message"] == f"body: holds {count:,} members; at most {MAX_MEMBERS:,}"
    assert Agent.select().count() == 0


def test_an_array_of_too_many_members_is_refused_naming_it(caller):
    identity = {"type": "whatsapp", "external_id": "5511900000000"}
    body = {"name": "Bia", "identities": [identity] * 2_000}
    error = assert_error(sent(caller, "POST", "/v1/contacts", body), 400, "VALIDATION_ERROR")
    assert error["message"] == f"identities: holds 2,000 members; at most {MAX_MEMBERS:,}"
    assert Contact.select().count() == 0


def test_the_most_members_an_operation_takes_still_reach_it(caller):
    days = [f"2027-{month:02d}-{day:02d}" for month in range(1, 13) for day in range(1, 29)]
    holidays = (days * 3)[:MAX_MEMBERS]  # as many as availability takes
    body = {"weekly_hours": WEEK, "slot_minutes": 30, "holidays": holidays}
    saved = data(sent(caller, "PUT", "/v1/appointments/availability", body))
    assert len(saved["holidays"]) == len(set(holidays))
    too_many = {**body, "holidays": [*holidays, "2027-12-31"]}
    refused = sent(caller, "PUT", "/v1/appointments/availability", too_many)
    assert_error(refused, 400, "VALIDATION_ERROR", "holidays: holds 1,001 members")


def test_a_body_of_too_many_members_in_all_is_refused_before_it_is_read(caller):
    # 2.4 million numbers in arrays of 1,000: every container within
    # MAX_MEMBERS, and a second of the loop to parse and walk.
    thousand = [0] * MAX_MEMBERS
    body = {"name": "A", "a": [thousand] * 800, "b": [thousand] * 800}
    error = assert_error(sent(caller, "POST", "/v1/agents", body), 400, "VALIDATION_ERROR")
    most = f"{MAX_MEMBERS_IN_ALL:,}"
    assert error["message"] == f"body: holds more than {most} members in all; at most {most}"
    assert Agent.select().count() == 0


def test_a_body_of_many_short_strings_is_refused_for_its_members(caller):
    # Each member holds at most two strings (a key, a value): more strings
    # than twice the limit are more members, told without skipping them.
    body = {"name": "A", "a": ["x"] * (2 * MAX_MEMBERS_IN_ALL + 1)}
    error = assert_error(sent(caller, "POST", "/v1/agents", body), 400, "VALIDATION_ERROR")
    assert error["message"].startswith(f"body: holds more than {MAX_MEMBERS_IN_ALL:,} members")


@pytest.mark.parametrize(
    "text",
    ['- [x] "a", {b}: c, d: e\n ' * 10_000, "a, b, c, d, [e], {f}: g " * 10_000],
    ids=["escapes", "no-escape"],
)
def test_commas_and_brackets_in_text_are_not_members(caller, text):
    # 40,000 commas in one string: none of them is a member. The title's
    # closing quote follows an escaped backslash: taken for an escaped
    # quote, it would leave the text outside its string.
    agent = data(sent(caller, "POST", "/v1/agents", {"name": "A"}), 201)["id"]
    training = {"type": "text", "title": "C:\\", "content": text}
    made = data(sent(caller, "POST", f"/v1/agents/{agent}/trainings", training), 201)
    assert (made["title"], made["content"]) == ("C:\\", text)
