"""An object or an array of a request body holds at most MAX_MEMBERS
members: marshmallow reads every member before a schema refuses the whole
(100,000 identities took 2.6 s of the server's one loop, 300,000 unknown
fields 1.4 s, 300,000 holidays 0.46 s). Refused first, naming the place."""

import json

import pytest

from agent_platform.api.json_bodies import MAX_MEMBERS
from agent_platform.models import Agent, Contact
from conftest import assert_error
from conversations_helpers import data

WEEK = {"monday": [{"start": "09:00", "end": "17:00"}]}


def sent(caller, method, path, document):
    headers = caller.headers({"Content-Type": "application/json"})
    return caller.client.open(path, method=method, data=json.dumps(document), headers=headers)


@pytest.mark.parametrize("count", [MAX_MEMBERS + 1, 200_000])
def test_an_object_of_too_many_members_is_refused_first(caller, count):
    body = {"name": "A", **{f"field{n}": 1 for n in range(count - 1)}}
    error = assert_error(sent(caller, "POST", "/v1/agents", body), 400, "VALIDATION_ERROR")
    assert error["message"] == f"body: holds {count:,} members; at most {MAX_MEMBERS:,}"
    assert Agent.select().count() == 0


def test_an_array_of_too_many_members_is_refused_naming_it(caller):
    identity = {"type": "whatsapp", "external_id": "5511900000000"}
    body = {"name": "Bia", "identities": [identity] * 50_000}
    error = assert_error(sent(caller, "POST", "/v1/contacts", body), 400, "VALIDATION_ERROR")
    assert error["message"] == f"identities: holds 50,000 members; at most {MAX_MEMBERS:,}"
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
