"""Phone numbers in the forms Meta shows them are stored as E.164."""

import pytest

from conftest import assert_error
from conversations_helpers import WA_SETTINGS, data


@pytest.mark.parametrize(
    "given",
    ["+15557014422", "+1 555-701-4422", "15557014422", "+1 (555) 701.4422", "0015557014422",
     " +1\u00a0555\u2011701\u20114422 "],
)  # fmt: skip
def test_meta_forms_are_stored_as_e164(caller, given):
    contact = data(caller.post("/v1/contacts", json={"name": "Bia", "phone": given}), 201)
    assert contact["phone"] == "+15557014422"
    found = data(caller.get("/v1/contacts", query_string={"phone": "15557014422"}))
    assert [item["id"] for item in found] == [contact["id"]]


def test_a_channel_display_number_is_stored_as_e164(caller):
    settings = {**WA_SETTINGS, "display_phone_number": "+55 11 98765-4321"}
    body = {"name": "WhatsApp", "type": "whatsapp", "settings": settings}
    channel = data(caller.post("/v1/channels", json=body), 201)
    shown = data(caller.get(f"/v1/channels/{channel['id']}/settings"))
    assert shown["display_phone_number"] == "+5511987654321"


@pytest.mark.parametrize(
    "given", ["555-CALL-NOW", "+0 555 701 4422", "12345", "+1 555 701 4422 99999", ""]
)
def test_what_is_not_a_number_is_refused(caller, given):
    response = caller.post("/v1/contacts", json={"name": "Bia", "phone": given})
    assert_error(response, 400, "INVALID_PHONE_FORMAT", "phone")
