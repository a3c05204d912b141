"""What an attacker or a careless client sends is refused with a 400 that
names the place at fault, never a 500, and changes nothing: HEAD without a
key, huge page numbers, lone surrogates, deep nesting, extreme dates, empty
PATCHes, names of control characters or spaces, names equal but for case."""

import json
import logging
import re

import pytest

from agent_platform.models import Agent, Channel, ChannelEvent, Message, TelegramUpdate
from conftest import assert_error
from conversations_helpers import data, make_agent
from fuzz_seed import seed_workspace
from telegram_helpers import telegram_channel
from whatsapp_helpers import *  # noqa: F403  (the fixtures)
from whatsapp_helpers import messages_payload, post, sign, text

MISSING = "6f1c4b9e-8a47-4a1e-9f0e-3e2b1c0d9a88"


@pytest.fixture
def settings(tmp_path, graph):
    # As whatsapp_helpers', and the seeded webhook and MCP server of
    # fuzz_seed may point at a closed loopback port.
    return {
        "DATABASE_PATH": str(tmp_path / "test.db"),
        "WHATSAPP_GRAPH_API_BASE": graph.base,
        "WHATSAPP_TIMEOUT_SECONDS": 2,
        "MEDIA_DIR": str(tmp_path / "media"),
        "SERVER_PUBLIC_URL": "https://agents.example.com",
        "WEBHOOKS_ALLOW_PRIVATE_TARGETS": True,
        "WEBHOOKS_ALLOWED_PORTS": [],
        "MCP_ALLOW_PRIVATE_URLS": True,
        # Four pages past the maximum for each of the 30-odd listings, from one
        # key: more than the default 100 a minute (the limit is tested elsewhere).
        "RATE_LIMIT_REQUESTS": 10_000,
    }


def raw(caller, method, path, body):
    headers = caller.headers({"Content-Type": "application/json"})
    return caller.client.open(path, method=method, data=body, headers=headers)


# --- HEAD is GET without a body -----------------------------------------------------


def test_head_needs_a_key_and_the_scope_as_get_does(client, caller, make_caller):
    assert_head_like_get(client.head("/v1/agents"), client.get("/v1/agents"))
    limited = make_caller(scopes=["contacts:read"])
    assert_head_like_get(limited.request("HEAD", "/v1/agents"), limited.get("/v1/agents"))
    assert_head_like_get(caller.request("HEAD", "/v1/agents"), caller.get("/v1/agents"))
    unknown = f"/v1/agents/{MISSING}"
    assert_head_like_get(caller.request("HEAD", unknown), caller.get(unknown))


def assert_head_like_get(head, get):
    assert (head.status_code, head.data) == (get.status_code, b"")
    assert head.headers["Content-Type"] == get.headers["Content-Type"]


def test_every_listing_refuses_a_page_past_the_maximum(client, caller):
    spec = client.get("/openapi.json").get_json()
    listings = [
        path
        for path, item in spec["paths"].items()
        if any(p["name"] == "page" for p in item.get("get", {}).get("parameters", []))
    ]
    assert len(listings) >= 14
    for path in listings:
        concrete = re.sub(
            r"\{[^}]+\}",
            lambda m: caller.workspace_id if "orkspace" in m.group() else MISSING,
            path,
        )
        for value in (2**62, 2**64, 10**30, 1_000_001):
            response = caller.get(f"{concrete}?page={value}")
            assert_error(response, 400, "VALIDATION_ERROR", "page")


def test_the_last_allowed_page_is_answered(caller):
    body = caller.get("/v1/agents?page=1000000&limit=100").get_json()
    assert (body["data"], body["pagination"]["page"]) == ([], 1_000_000)


# --- bodies ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "body, field",
    [
        (b'{"name": "\\ud800"}', "name"),
        (b'{"name": "ok\\udfff"}', "name"),
        (b'{"name": "A", "description": "\\ud83d"}', "description"),
        (b'{"\\ud800": "A"}', "body"),
    ],
)
def test_a_lone_surrogate_is_refused_naming_its_field(caller, body, field):
    error = assert_error(raw(caller, "POST", "/v1/agents", body), 400, "VALIDATION_ERROR")
    assert error["message"].startswith(f"{field}: ")
    assert Agent.select().count() == 0


@pytest.mark.parametrize(
    "body, field",
    [
        (b'{"name": "A", "description": "\\u00aa\\u0000\\u0007"}', "description"),
        (b'{"name": "A", "settings": {"x": ["ok", "a\\u0000"]}}', "settings.x[1]"),
        (b'{"name": "A", "k\\u0000": 1}', "k\\u0000"),
    ],
)
def test_a_nul_in_any_text_is_refused_naming_its_field(caller, body, field):
    """PostgreSQL cannot store NUL in text (it was a 500 there); it is
    refused on both engines alike (api/nul.py)."""
    error = assert_error(raw(caller, "POST", "/v1/agents", body), 400, "VALIDATION_ERROR")
    assert error["message"] == f"{field}: must not contain the NUL character (U+0000)"
    assert Agent.select().count() == 0


def test_a_nul_in_a_query_parameter_is_refused(caller):
    error = assert_error(caller.get("/v1/contacts?search=a%00b"), 400, "VALIDATION_ERROR")
    assert error["message"].startswith("search: must not contain the NUL")


def test_an_escaped_backslash_before_u0000_is_ordinary_text(caller):
    created = raw(caller, "POST", "/v1/agents", b'{"name": "A", "description": "x\\\\u0000"}')
    assert data(created, 201)["description"] == "x\\u0000"


def test_a_surrogate_pair_is_an_ordinary_character(caller):
    created = data(raw(caller, "POST", "/v1/agents", b'{"name": "Ana \\ud83d\\ude00"}'), 201)
    assert created["name"] == "Ana \U0001f600"


@pytest.mark.parametrize("depth", [33, 1000, 100_000])
def test_deep_nesting_is_refused(caller, depth):
    body = '{"name": "A", "description": ' + "[" * depth + "]" * depth + "}"
    error = assert_error(raw(caller, "POST", "/v1/agents", body.encode()), 400, "VALIDATION_ERROR")
    assert "nested deeper than 32 levels" in error["message"]
    assert Agent.select().count() == 0


def test_nesting_up_to_the_limit_reaches_the_schema(caller):
    body = '{"name": "A", "description": ' + "[" * 31 + "]" * 31 + "}"
    error = assert_error(raw(caller, "POST", "/v1/agents", body.encode()), 400, "VALIDATION_ERROR")
    assert error["message"].startswith("description: ")  # a string is wanted, not a list


def test_brackets_inside_strings_are_not_nesting(caller):
    body = json.dumps({"name": "[" * 100, "description": "{" * 100}).encode()
    assert data(raw(caller, "POST", "/v1/agents", body), 201)["name"] == "[" * 100


def test_the_whatsapp_intake_refuses_deep_nesting_and_stores_nothing(client, channel):
    payload = messages_payload(text("hi", wamid="wamid.DEEP"))
    payload["entry"][0]["extra"] = json.loads("[" * 40 + "]" * 40)
    response = post(client, channel["id"], payload)
    assert_error(response, 400, "VALIDATION_ERROR", "nested deeper than 32 levels")
    assert Message.select().count() == 0


def test_the_whatsapp_intake_refuses_a_lone_surrogate(client, channel):
    body = json.dumps(messages_payload(text("hi", wamid="wamid.SURR"))).replace('"hi"', '"\\ud800"')
    response = post(client, channel["id"], None, raw=body.encode())
    assert_error(response, 400, "VALIDATION_ERROR", "lone UTF-16 surrogate")
    assert Message.select().count() == 0


@pytest.mark.parametrize(
    "length, status, code, says",
    [
        ("²", 400, "VALIDATION_ERROR", "Content-Length: must be a number of bytes."),
        (
            "1" * 5000,
            413,
            "PAYLOAD_TOO_LARGE",
            "The request body exceeds the limit of 5242880 bytes.",
        ),
    ],
)
def test_a_content_length_int_cannot_read_is_refused(client, channel, length, status, code, says):
    body = json.dumps(messages_payload(text("hi", wamid="wamid.LEN"))).encode()
    headers = {"Content-Type": "application/json", "X-Hub-Signature-256": sign(body)}
    path, overrides = f"/inbound/whatsapp/{channel['id']}", {"CONTENT_LENGTH": length}
    response = client.post(path, data=body, headers=headers, environ_overrides=overrides)
    error = assert_error(response, status, code)
    assert error["message"] == says
    assert Message.select().count() == 0


@pytest.mark.parametrize(
    "body, says",
    [
        (b'{"update_id": 1, "x": ' + b"[" * 5000 + b"]" * 5000 + b"}", "nested deeper than 32"),
        (b'{"update_id": 1, "message": {"text": "\\ud800"}}', "message.text: contains a lone"),
    ],
)
def test_the_telegram_intake_refuses_deep_nesting_and_lone_surrogates(
    app,
    client,
    caller,
    bot_api,
    body,
    says,
):
    app.config["TELEGRAM_API_BASE"] = bot_api.base  # setWebhook goes to the stand-in
    channel = telegram_channel(caller, mode="webhook")
    headers = {
        "X-Telegram-Bot-Api-Secret-Token": bot_api.webhook["secret_token"],
        "Content-Type": "application/json",
    }
    response = client.post(f"/inbound/telegram/{channel['id']}", data=body, headers=headers)
    assert_error(response, 400, "VALIDATION_ERROR", says)
    assert Message.select().count() == 0 and TelegramUpdate.select().count() == 0


# --- dates ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "query, field",
    [
        ("to=9999-12-31", "to"),
        ("from=0001-01-01", "from"),
        ("from=1969-12-31", "from"),
    ],
)
def test_credits_outside_the_range_of_dates_are_400(caller, query, field):
    agent = make_agent(caller)
    assert_error(caller.get(f"/v1/agents/{agent}/credits?{query}"), 400, "VALIDATION_ERROR", field)


def test_the_last_day_in_range_is_answered(caller):
    agent = make_agent(caller)
    report = data(caller.get(f"/v1/agents/{agent}/credits?from=9999-12-01&to=9999-12-30"))
    assert report["period_end"] == "9999-12-30T23:59:59.999999Z"


@pytest.mark.parametrize(
    "since",
    ["9999-12-31T23:59:59Z", "0001-01-01T00:00:00Z", "0001-01-01T00:00:00+14:00",
     "9999-12-31T23:00:00-12:00"],
)  # fmt: skip
def test_times_outside_the_range_are_400(caller, since):
    response = caller.get("/v1/conversations", query_string={"updated_since": since})
    assert_error(response, 400, "VALIDATION_ERROR", "updated_since")
    hook = f"/v1/webhooks/{MISSING}/recover"
    assert_error(caller.post(hook, query_string={"since": since}), 400, "VALIDATION_ERROR", "since")


# --- PATCH changes something ------------------------------------------------------------


@pytest.mark.parametrize("body", [None, b"{}", b""])
def test_a_patch_with_nothing_to_change_is_400(caller, body):
    agent = make_agent(caller)
    path = f"/v1/agents/{agent}"
    if body is None:
        response = caller.patch(path)
    else:
        response = raw(caller, "PATCH", path, body)
    assert_error(response, 400, "VALIDATION_ERROR", "body: ")
    assert Agent.get_by_id(agent).name == "Ana"


# --- names ------------------------------------------------------------------------------


BAD_NAMES = ["a\x00b", "line\nbreak", "tab\there", "\x7f", "\x85", "   ", "\u3000"]

# Every create that takes a name: (path, the rest of a valid body); {agent}
# and {workspace} are the caller's.
NAMED = [
    ("/v1/agents", {}),
    ("/v1/channels", {"type": "whatsapp"}),
    ("/v1/custom-fields", {"field_type": "text"}),
    ("/v1/contacts", {}),
    ("/v1/mcp-servers", {"url": "http://127.0.0.1:9/mcp"}),
    ("/v1/agents/{agent}/intentions",
     {"examples": ["cancel my order"], "action": "reply", "reply_text": "Done."}),
    ("/v1/agents/{agent}/transfer-rules",
     {"match_type": "keywords", "keywords": ["human"], "action": "handoff"}),
    ("/v1/agents/{agent}/idle-actions", {"minutes": 30, "action": "close"}),
    ("/workspace/{workspace}/agents", {}),
    ("/workspaces/permissions", {"scopes": ["agents:read"]}),
]  # fmt: skip


@pytest.mark.parametrize("path, body", NAMED)
def test_names_of_control_characters_or_spaces_are_refused(caller, path, body):
    path = path.format(agent=make_agent(caller), workspace=caller.workspace_id)
    for name in BAD_NAMES:
        response = caller.post(path, json={**body, "name": name})
        assert_error(response, 400, "VALIDATION_ERROR", "name: ")
    created = caller.post(path, json={**body, "name": "Fine"})
    assert created.status_code in (200, 201), created.get_data(as_text=True)  # only the name


@pytest.mark.parametrize("path, body", NAMED)
def test_a_name_too_long_is_refused_by_its_length_before_its_characters(caller, path, body):
    # The length is checked first, so a name of megabytes is never read
    # character by character (tests/test_serving_bodies.py measures it).
    path = path.format(agent=make_agent(caller), workspace=caller.workspace_id)
    response = caller.post(path, json={**body, "name": "\n" * 5_000})
    assert_error(response, 400, "VALIDATION_ERROR", "name: ")
    assert "control characters" not in response.get_json()["error"]["message"]
    assert "length" in response.get_json()["error"]["message"].lower()


@pytest.mark.parametrize(
    "path, field",
    [
        ("/v1/agents/{agent}/settings", "base_url"),
        ("/v1/mcp-servers", "url"),
        ("/v1/agents/{agent}/trainings", "url"),
    ],
)
def test_a_url_is_at_most_2000_characters(caller, path, field):
    path = path.format(agent=make_agent(caller))
    method = caller.put if path.endswith("/settings") else caller.post
    body = {"name": "Tools", "type": "url", field: "https://example.com/" + "a" * 1981}
    response = method(path, json=body)
    assert_error(response, 400, "VALIDATION_ERROR", f"{field}: Longer than maximum length 2000.")


@pytest.mark.parametrize("path, body", NAMED[:8])
def test_a_rename_is_checked_too(caller, path, body):
    path = path.format(agent=make_agent(caller), workspace=caller.workspace_id)
    item = data(caller.post(path, json={**body, "name": "Fine"}), 201)
    for name in BAD_NAMES:
        response = caller.patch(f"{path}/{item['id']}", json={"name": name})
        assert_error(response, 400, "VALIDATION_ERROR", "name: ")
    assert data(caller.get(f"{path}/{item['id']}"), 200)["name"] == "Fine"


@pytest.mark.parametrize(
    "first, second",
    [("Straße", "STRASSE"), ("École", "école"), ("ΣΊΣΥΦΟΣ", "σίσυφος"), ("ＡＢＣ", "abc"),
     ("Ǆ", "ǆ")],
)  # fmt: skip
def test_names_equal_but_for_case_are_one_name(caller, first, second):
    data(caller.post("/v1/custom-fields", json={"name": first, "field_type": "text"}), 201)
    again = caller.post("/v1/custom-fields", json={"name": second, "field_type": "text"})
    assert_error(again, 409, "CUSTOM_FIELD_EXISTS")
    data(caller.post("/v1/channels", json={"name": first, "type": "whatsapp"}), 201)
    assert_error(
        caller.post("/v1/channels", json={"name": second, "type": "whatsapp"}),
        409,
        "CHANNEL_NAME_EXISTS",
    )
    assert Channel.select().count() == 1


def test_a_dotted_capital_i_is_not_a_plain_i(caller):
    data(caller.post("/v1/custom-fields", json={"name": "İstanbul", "field_type": "text"}), 201)
    data(caller.post("/v1/custom-fields", json={"name": "Istanbul", "field_type": "text"}), 201)


@pytest.mark.parametrize("bad_id", [None, "", "  ", {"x": 1}, True])
def test_a_whatsapp_message_without_an_id_is_refused_and_the_batch_kept(
    client, channel, caplog, bad_id
):
    good = text("first", wamid="wamid.GOOD")
    bad = text("second", wamid="wamid.PLACEHOLDER")
    bad["id"] = bad_id
    with caplog.at_level(logging.WARNING, logger="agent_platform"):
        response = post(client, channel["id"], messages_payload(good, bad))
    assert response.status_code == 200
    assert [m.external_id for m in Message.select()] == ["wamid.GOOD"]
    assert f"channel {channel['id']}: item malformed: ValueError: id is" in caplog.text
    event = ChannelEvent.get(ChannelEvent.kind == "malformed")
    assert event.payload["item"]["text"] == {"body": "second"}


# --- found by the OpenAPI fuzz test (tests/test_fuzz_openapi.py) ----------------------


def test_options_needs_no_key_and_reveals_only_the_methods(client, caller):
    agent_id = make_agent(caller)
    response = client.options(f"/v1/agents/{agent_id}")
    assert response.status_code == 200
    allowed = set(response.headers["Allow"].split(", "))
    assert allowed == {"GET", "HEAD", "OPTIONS", "PATCH", "DELETE"}
    assert response.get_data() == b""


def test_a_huge_limit_is_400_on_every_listing(client, caller):
    ids = seed_workspace(client, caller.key)
    document = client.get("/openapi.json").get_json()
    listings = [
        re.sub(r"\{(\w+)\}", lambda name: ids[name.group(1)], path)
        for path, operations in document["paths"].items()
        if any(p["name"] == "limit" for p in operations.get("get", {}).get("parameters", []))
    ]
    assert len(listings) >= 14
    for path in listings:
        response = caller.get(path, query_string={"limit": 2**62, "q": "x"})
        assert response.status_code == 400, path
        assert "limit: Must be" in response.get_json()["error"]["message"], path


def test_sort_fields_are_documented_as_the_enum_that_is_checked(client, caller):
    document = client.get("/openapi.json").get_json()
    parameters = document["paths"]["/v1/agents"]["get"]["parameters"]
    (sort,) = [parameter for parameter in parameters if parameter["name"] == "sort"]
    assert sort["schema"]["enum"] == ["created_at", "name", "updated_at"]
    for value in sort["schema"]["enum"]:
        assert caller.get("/v1/agents", query_string={"sort": value}).status_code == 200
    assert_error(caller.get("/v1/agents?sort="), 400, "VALIDATION_ERROR", "sort: Must be one of")


def test_a_patch_keeps_the_required_fields_of_nested_objects(caller):
    # PATCH schemas were partial all the way down: an identity without its
    # type reached the service and failed there with a KeyError (a 500).
    contact = data(caller.post("/v1/contacts", json={"name": "Bia"}), 201)
    path = f"/v1/contacts/{contact['id']}"
    response = caller.patch(path, json={"identities": [{"external_id": "5511911112222"}]})
    assert_error(response, 400, "MISSING_REQUIRED_FIELD", "identities.0.type")
    assert data(caller.get(path))["identities"] == []


def test_a_handoff_takes_no_body_as_its_document_says(client, caller):
    conversation_id = seed_workspace(client, caller.key)["conversation_id"]
    assert data(caller.post(f"/v1/chats/{conversation_id}/handoff"))["status"] == "handoff"
    document = client.get("/openapi.json").get_json()
    operation = document["paths"]["/v1/chats/{conversation_id}/handoff"]["post"]
    assert operation["requestBody"]["required"] is False


def test_channel_settings_responses_match_their_documented_schema(client, caller):
    channel_id = seed_workspace(client, caller.key)["channel_id"]
    document = client.get("/openapi.json").get_json()
    schema = document["components"]["schemas"]["ChannelSettings"]
    settings = data(caller.get(f"/v1/channels/{channel_id}/settings"))
    assert settings["phone_number_id"] and schema.get("additionalProperties", True) is not False


def test_credits_from_the_last_month_of_the_range_end_on_its_last_day(caller):
    # The default end (the month's last day, 9999-12-31) had no day after it: a 500.
    agent_id = make_agent(caller)
    for day in ("9999-12-01", "9999-12-30"):
        report = data(caller.get(f"/v1/agents/{agent_id}/credits?from={day}"))
        assert report["period_end"] == "9999-12-30T23:59:59.999999Z"
