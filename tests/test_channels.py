"""Channels: typed settings, write-only secrets, names, connect/disconnect,
QR codes, the widget, isolation and scopes."""

import io

import pytest
import segno

from agent_platform.models import Message
from agent_platform.services import channels, sending
from conftest import assert_error
from conversations_helpers import (
    WA_SETTINGS,
    data,
    event_names,
    events,
    make_agent,
    make_channel,
    send,
    setup_chat,
)

SECRETS = ("access_token", "app_secret", "verify_token")


def test_create_returns_the_channel_without_its_secrets(caller):
    response = caller.post(
        "/v1/channels", json={"name": "Sales", "type": "whatsapp", "settings": WA_SETTINGS}
    )
    channel = data(response, 201)
    assert set(channel) == {
        "id",
        "name",
        "type",
        "status",
        "agent_id",
        "is_active",
        "settings",
        "connected_at",
        "created_at",
        "updated_at",
    }
    assert (channel["type"], channel["status"], channel["agent_id"]) == (
        "whatsapp",
        "disconnected",
        None,
    )
    assert channel["settings"] == {
        "phone_number_id": "106540352242922",
        "business_account_id": "102290129340398",
        "display_phone_number": "+5511987654321",
        "access_token_set": True,
        "app_secret_set": True,
        "verify_token_set": True,
    }
    for path in (f"/v1/channels/{channel['id']}", f"/v1/channels/{channel['id']}/settings"):
        text = caller.get(path).get_data(as_text=True)
        for secret in SECRETS:
            assert WA_SETTINGS[secret] not in text
    assert data(caller.get("/v1/channels"))[0]["settings"] == channel["settings"]


def test_unset_secrets_read_as_not_set(caller):
    channel = make_channel(
        caller, name="Bot", type="telegram", settings={"bot_username": "@shop_bot"}
    )
    assert channel["settings"] == {
        "bot_username": "shop_bot",
        "bot_token_set": False,
        "secret_token_set": False,
    }


@pytest.mark.parametrize(
    "type_, values, field, code",
    [
        (
            "whatsapp",
            {"display_phone_number": "11 98765-4321"},
            "settings.display_phone_number",
            "INVALID_PHONE_FORMAT",
        ),
        ("whatsapp", {"phone_number_id": "abc"}, "settings.phone_number_id", "VALIDATION_ERROR"),
        ("whatsapp", {"bot_token": "1:x"}, "settings.bot_token", "VALIDATION_ERROR"),
        ("telegram", {"bot_token": "not a token"}, "settings.bot_token", "VALIDATION_ERROR"),
        ("telegram", {"secret_token": "has spaces"}, "settings.secret_token", "VALIDATION_ERROR"),
        ("email", {"smtp_port": 70000}, "settings.smtp_port", "VALIDATION_ERROR"),
        ("email", {"smtp_host": "not a host!"}, "settings.smtp_host", "VALIDATION_ERROR"),
        ("email", {"from_address": "nobody"}, "settings.from_address", "VALIDATION_ERROR"),
        ("email", {"smtp_security": "tls1"}, "settings.smtp_security", "VALIDATION_ERROR"),
        (
            "website",
            {"allowed_origins": ["https://shop.example.com/path"]},
            "settings.allowed_origins[0]",
            "VALIDATION_ERROR",
        ),
        (
            "website",
            {"allowed_origins": "https://shop.example.com"},
            "settings.allowed_origins",
            "VALIDATION_ERROR",
        ),
        ("website", {"primary_color": "blue"}, "settings.primary_color", "VALIDATION_ERROR"),
    ],
)
def test_settings_are_validated_per_type(caller, type_, values, field, code):
    response = caller.post("/v1/channels", json={"name": "C", "type": type_, "settings": values})
    assert_error(response, 400, code, field)
    assert data(caller.get("/v1/channels")) == []


def test_each_type_accepts_its_settings(caller):
    email = make_channel(
        caller,
        name="Mail",
        type="email",
        settings={
            "smtp_host": "smtp.example.com",
            "smtp_port": 587,
            "smtp_username": "bot",
            "smtp_password": "pw",
            "smtp_security": "starttls",
            "imap_host": "imap.example.com",
            "imap_port": 993,
            "imap_username": "bot",
            "imap_password": "pw2",
            "imap_security": "ssl",
            "from_address": "Help@Example.com",
            "from_name": "Help desk",
        },
    )
    assert email["settings"]["from_address"] == "help@example.com"
    assert email["settings"]["smtp_password_set"] is True
    assert "smtp_password" not in email["settings"]
    site = make_channel(
        caller,
        name="Site",
        type="website",
        settings={
            "allowed_origins": ["https://Shop.example.com", "https://shop.example.com/"],
            "title": "Talk to us",
            "greeting": "Hi!",
            "primary_color": "#1A73E8",
        },
    )
    assert site["settings"]["allowed_origins"] == ["https://shop.example.com"]
    assert site["settings"]["primary_color"] == "#1a73e8"


def test_unknown_type_and_unknown_fields_are_refused(caller):
    assert_error(
        caller.post("/v1/channels", json={"name": "X", "type": "fax"}),
        400,
        "VALIDATION_ERROR",
        "type",
    )
    assert_error(
        caller.post("/v1/channels", json={"name": "X", "type": "email", "colour": 1}),
        400,
        "VALIDATION_ERROR",
        "colour",
    )
    assert_error(
        caller.post("/v1/channels", json={"type": "email"}), 400, "MISSING_REQUIRED_FIELD", "name"
    )


def test_names_are_unique_per_workspace(caller, other):
    make_channel(caller, name="Sales")
    assert_error(
        caller.post("/v1/channels", json={"name": "sales", "type": "telegram"}),
        409,
        "CHANNEL_NAME_EXISTS",
        "sales",
    )
    make_channel(other, name="Sales")  # another workspace may use it
    second = make_channel(caller, name="Support")
    assert_error(
        caller.patch(f"/v1/channels/{second['id']}", json={"name": "SALES"}),
        409,
        "CHANNEL_NAME_EXISTS",
    )


def test_a_deleted_channel_is_gone_and_frees_its_name(caller):
    channel = make_channel(caller, name="Sales")
    response = caller.delete(f"/v1/channels/{channel['id']}")
    assert response.status_code == 204
    for method, path in (
        ("GET", ""),
        ("PATCH", ""),
        ("DELETE", ""),
        ("GET", "/settings"),
        ("PUT", "/settings"),
        ("POST", "/disconnect"),
        ("GET", "/qrcode"),
    ):
        body = {"name": "x"} if method == "PATCH" else {}
        response = caller.request(method, f"/v1/channels/{channel['id']}{path}", json=body)
        assert_error(response, 404, "CHANNEL_NOT_FOUND", channel["id"])
    assert data(caller.get("/v1/channels")) == []
    make_channel(caller, name="Sales")


def test_patch_renames_and_merges_settings(caller):
    channel = make_channel(caller, settings=WA_SETTINGS)
    changed = data(
        caller.patch(
            f"/v1/channels/{channel['id']}",
            json={"name": "Main line", "settings": {"phone_number_id": "42", "app_secret": None}},
        )
    )
    assert changed["name"] == "Main line"
    assert changed["settings"]["phone_number_id"] == "42"
    assert changed["settings"]["display_phone_number"] == "+5511987654321"
    assert changed["settings"]["app_secret_set"] is False
    assert changed["settings"]["access_token_set"] is True
    assert_error(
        caller.patch(f"/v1/channels/{channel['id']}", json={"type": "email"}),
        400,
        "VALIDATION_ERROR",
        "type",
    )


def test_put_settings_replaces_them_but_keeps_unsent_secrets(caller):
    channel = make_channel(caller, settings=WA_SETTINGS)
    path = f"/v1/channels/{channel['id']}/settings"
    settings = data(caller.put(path, json={"phone_number_id": "7", "verify_token": None}))
    assert settings == {
        "phone_number_id": "7",
        "access_token_set": True,
        "app_secret_set": True,
        "verify_token_set": False,
    }
    assert data(caller.get(path)) == settings
    assert_error(caller.put(path, json={"wat": 1}), 400, "VALIDATION_ERROR", "settings.wat")
    assert_error(
        caller.put(path, json={"display_phone_number": "0800"}),
        400,
        "INVALID_PHONE_FORMAT",
        "settings.display_phone_number",
    )
    assert data(caller.get(path)) == settings


def test_a_put_may_not_take_from_a_connected_channel_what_it_needs(caller):
    settings = {"sandbox": True, "phone_number_id": "106540352242922", "app_secret": "a"}
    channel = make_channel(caller, settings=settings, agent_id=make_agent(caller))
    path = f"/v1/channels/{channel['id']}/settings"
    before = data(caller.get(path))
    refused = caller.put(path, json={"verify_token": "v"})  # sandbox and number left out
    error = assert_error(refused, 409, "CHANNEL_SETTINGS_INCOMPLETE", channel["id"])
    assert "settings.phone_number_id, settings.access_token" in error["message"]
    assert "settings.app_secret" not in error["message"]  # a secret left out is kept
    assert data(caller.get(path)) == before  # nothing changed
    assert data(caller.put(path, json={**settings, "verify_token": "v"}))["verify_token_set"]
    data(caller.post(f"/v1/channels/{channel['id']}/disconnect"))
    assert data(caller.put(path, json={"verify_token": "w"})) == {
        "access_token_set": False,
        "app_secret_set": True,
        "verify_token_set": True,
    }
    spec = caller.get("/openapi.json").get_json()
    assert "409" in spec["paths"]["/v1/channels/{channel_id}/settings"]["put"]["responses"]


MAIL_SETTINGS = {
    "imap_host": "imap.example.com",
    "imap_password": "pw",
    "smtp_host": "smtp.example.com",
    "from_address": "help@example.com",
}


@pytest.mark.parametrize(
    "type_, values, body, lacking",
    [
        ("whatsapp", WA_SETTINGS, {}, "settings.phone_number_id"),
        ("whatsapp", WA_SETTINGS, {**WA_SETTINGS, "app_secret": None}, "settings.app_secret"),
        ("telegram", {"bot_token": "123456789:" + "A" * 35}, {"bot_token": None}, "bot_token"),
        ("email", MAIL_SETTINGS, {"imap_host": "imap.example.com"}, "smtp_host, settings.from"),
        ("email", MAIL_SETTINGS, {**MAIL_SETTINGS, "imap_password": None}, "imap_password"),
    ],
)
def test_each_type_says_what_a_connected_channel_needs(caller, type_, values, body, lacking):
    channel = make_channel(caller, "C", type_, values, agent_id=make_agent(caller))
    path = f"/v1/channels/{channel['id']}/settings"
    before = data(caller.get(path))
    assert_error(caller.put(path, json=body), 409, "CHANNEL_SETTINGS_INCOMPLETE", lacking)
    assert data(caller.get(path)) == before


def test_what_a_connected_channel_needs_may_be_given_a_step_at_a_time(caller):
    agent_id = make_agent(caller)
    channel = make_channel(caller, agent_id=agent_id)  # connected with no settings at all
    path = f"/v1/channels/{channel['id']}/settings"
    assert data(caller.put(path, json={"phone_number_id": "7"}))["phone_number_id"] == "7"
    site = make_channel(caller, "Site", "website", {"title": "Shop"}, agent_id=agent_id)
    assert data(caller.put(f"/v1/channels/{site['id']}/settings", json={})) == {
        "identity_secret_set": False
    }  # a website channel needs no setting to work


def test_list_filters_and_sorts(caller):
    agent_id = make_agent(caller)
    wa = make_channel(caller, name="B whatsapp", agent_id=agent_id)
    tg = make_channel(caller, name="A telegram", type="telegram")
    listed = caller.get("/v1/channels?sort=name&order=asc").get_json()
    assert [item["id"] for item in listed["data"]] == [tg["id"], wa["id"]]
    assert listed["pagination"]["total"] == 2
    assert [c["id"] for c in data(caller.get("/v1/channels?type=telegram"))] == [tg["id"]]
    assert [c["id"] for c in data(caller.get("/v1/channels?status=connected"))] == [wa["id"]]
    assert [c["id"] for c in data(caller.get(f"/v1/channels?agent_id={agent_id}"))] == [wa["id"]]
    assert_error(caller.get("/v1/channels?type=fax"), 400, "VALIDATION_ERROR", "type")


def test_connect_and_disconnect_raise_their_events_once(caller):
    agent_id = make_agent(caller)
    channel = make_channel(caller)
    path = f"/v1/channels/{channel['id']}"
    connected = data(caller.post(path + "/connect", json={"agent_id": agent_id}))
    assert (connected["status"], connected["agent_id"]) == ("connected", agent_id)
    assert connected["connected_at"].endswith("Z")
    again = data(caller.post(path + "/connect", json={"agent_id": agent_id}))
    assert again["connected_at"] == connected["connected_at"]
    assert [d for _, d in events(caller.workspace_id, "channel.connected")] == [connected]
    other_agent = make_agent(caller, name="Other")
    assert_error(
        caller.post(path + "/connect", json={"agent_id": other_agent}),
        409,
        "CHANNEL_ALREADY_CONNECTED",
        agent_id,
    )
    disconnected = data(caller.post(path + "/disconnect"))
    assert (disconnected["status"], disconnected["agent_id"]) == ("disconnected", None)
    assert data(caller.post(path + "/disconnect")) == disconnected
    [(_, payload)] = events(caller.workspace_id, "channel.disconnected")
    assert payload == {**disconnected, "previous_agent_id": agent_id}
    # Now the other agent may have it.
    assert (
        data(caller.post(path + "/connect", json={"agent_id": other_agent}))["agent_id"]
        == other_agent
    )
    assert event_names(caller.workspace_id).count("channel.connected") == 2


def test_detach_agent_disconnects_each_of_its_channels(caller):
    agent_id = make_agent(caller)
    first = make_channel(caller, name="One", agent_id=agent_id)
    second = make_channel(caller, name="Two", agent_id=agent_id)
    kept = make_channel(caller, name="Other", agent_id=make_agent(caller, name="B"))
    channels.detach_agent(caller.workspace_id, agent_id)
    assert data(caller.get(f"/v1/channels/{first['id']}"))["status"] == "disconnected"
    assert data(caller.get(f"/v1/channels/{second['id']}"))["agent_id"] is None
    assert data(caller.get(f"/v1/channels/{kept['id']}"))["status"] == "connected"
    disconnected = [d["id"] for _, d in events(caller.workspace_id, "channel.disconnected")]
    assert sorted(disconnected) == sorted([first["id"], second["id"]])


def test_connect_needs_a_live_agent_of_the_workspace(caller, other):
    channel = make_channel(caller)
    path = f"/v1/channels/{channel['id']}/connect"
    foreign = make_agent(other)
    assert_error(caller.post(path, json={"agent_id": foreign}), 404, "AGENT_NOT_FOUND")
    deleted = make_agent(caller, name="Gone")
    assert caller.delete(f"/v1/agents/{deleted}").status_code == 204
    assert_error(caller.post(path, json={"agent_id": deleted}), 404, "AGENT_NOT_FOUND")
    assert_error(caller.post(path, json={"agent_id": "nope"}), 400, "VALIDATION_ERROR", "agent_id")
    assert_error(caller.post(path, json={}), 400, "MISSING_REQUIRED_FIELD", "agent_id")
    assert events(caller.workspace_id, "channel.connected") == []


def test_deleting_a_connected_channel_disconnects_it_and_fails_its_queue(caller):
    chat = setup_chat(caller)
    message = data(send(caller, chat["conversation"]["id"]), 201)
    assert caller.delete(f"/v1/channels/{chat['channel']['id']}").status_code == 204
    assert [
        name
        for name in event_names(caller.workspace_id)
        if name.startswith(("channel.d", "message."))
    ] == [
        "channel.disconnected",
        "message.failed",
    ]
    failed = data(caller.get(f"/v1/messages/{message['id']}"))
    assert (failed["status"], failed["error"]["code"]) == ("failed", "CHANNEL_DELETED")
    assert Message.get_by_id(message["id"]).status == "failed"
    # The conversation keeps its history but cannot send any more.
    assert_error(send(caller, chat["conversation"]["id"]), 409, "CHANNEL_NOT_ACTIVE")
    assert sending.send_queued() == 0


def _segno_png(link):
    buffer = io.BytesIO()
    segno.make(link, error="m", micro=False).save(buffer, kind="png", scale=8, border=4)
    return buffer.getvalue()


@pytest.mark.parametrize(
    "type_, values, link",
    [
        ("whatsapp", {"display_phone_number": "+5511987654321"}, "https://wa.me/5511987654321"),
        ("telegram", {"bot_username": "@shop_bot"}, "https://t.me/shop_bot"),
        ("email", {"from_address": "help@example.com"}, "mailto:help@example.com"),
        ("website", {}, "http://127.0.0.1:8080/widget/{id}"),
    ],
)
def test_qrcode_encodes_the_public_link(caller, type_, values, link):
    channel = make_channel(caller, type=type_, settings=values)
    link = link.format(id=channel["id"])
    response = caller.get(f"/v1/channels/{channel['id']}/qrcode")
    assert response.status_code == 200
    assert response.mimetype == "image/png"
    assert response.headers["X-Channel-Link"] == link
    assert response.data.startswith(b"\x89PNG\r\n\x1a\n")
    assert response.data == _segno_png(link)


def test_qrcode_as_svg_and_its_parameters(caller):
    channel = make_channel(caller, settings={"display_phone_number": "+14155550100"})
    response = caller.get(f"/v1/channels/{channel['id']}/qrcode?format=svg&scale=2")
    assert response.status_code == 200
    assert response.mimetype == "image/svg+xml"
    assert b"<svg" in response.data
    assert_error(
        caller.get(f"/v1/channels/{channel['id']}/qrcode?format=gif"),
        400,
        "VALIDATION_ERROR",
        "format",
    )
    assert_error(
        caller.get(f"/v1/channels/{channel['id']}/qrcode?scale=0"), 400, "VALIDATION_ERROR", "scale"
    )


def test_qrcode_needs_the_setting_that_makes_the_link(caller):
    channel = make_channel(caller, type="telegram")
    assert_error(
        caller.get(f"/v1/channels/{channel['id']}/qrcode"),
        409,
        "CHANNEL_NOT_CONFIGURED",
        "settings.bot_username",
    )


def test_widget_of_a_website_channel(caller):
    channel = make_channel(
        caller,
        name="Shop site",
        type="website",
        settings={"allowed_origins": ["https://shop.example.com"], "greeting": "Hi!"},
    )
    widget = data(caller.get(f"/v1/channels/{channel['id']}/widget"))
    script = f"http://127.0.0.1:8080/widget/{channel['id']}/widget.js"
    assert widget["script_url"] == script
    assert f'src="{script}"' in widget["snippet"]
    assert widget["page_url"] == f"http://127.0.0.1:8080/widget/{channel['id']}"
    assert widget["config"] == {
        "channel_id": channel["id"],
        "title": "Shop site",
        "greeting": "Hi!",
        "colors": {"primary": None, "background": None, "text": None},
        "allowed_origins": ["https://shop.example.com"],
        "position": "bottom-right",
        "launcher_text": None,
        "require_name": False,
        "require_email": False,
        "identity_verification": False,
    }


def test_widget_of_another_type_is_a_404_naming_the_reason(caller):
    channel = make_channel(caller)
    assert_error(
        caller.get(f"/v1/channels/{channel['id']}/widget"),
        404,
        "WIDGET_NOT_AVAILABLE",
        "whatsapp",
    )


def test_another_workspace_cannot_see_or_touch_a_channel(caller, other):
    channel = make_channel(caller, type="website")
    agent_id = make_agent(other)
    base = f"/v1/channels/{channel['id']}"
    for method, path, body in (
        ("GET", "", None),
        ("PATCH", "", {"name": "x"}),
        ("DELETE", "", None),
        ("GET", "/settings", None),
        ("PUT", "/settings", {}),
        ("POST", "/connect", {"agent_id": agent_id}),
        ("POST", "/disconnect", None),
        ("GET", "/qrcode", None),
        ("GET", "/widget", None),
    ):
        assert_error(other.request(method, base + path, json=body), 404, "CHANNEL_NOT_FOUND")
    assert data(other.get("/v1/channels")) == []
    assert data(caller.get(base))["name"] == channel["name"]


def test_scopes(make_caller):
    reader = make_caller(scopes=["channels:read"])
    writer = make_caller(scopes=["channels:write"], workspace_id=reader.workspace_id)
    channel = data(writer.post("/v1/channels", json={"name": "S", "type": "website"}), 201)
    assert data(reader.get(f"/v1/channels/{channel['id']}"))["id"] == channel["id"]
    assert reader.get(f"/v1/channels/{channel['id']}/widget").status_code == 200
    assert_error(
        reader.post("/v1/channels", json={"name": "T", "type": "website"}),
        403,
        "INSUFFICIENT_SCOPE",
        "channels:write",
    )
    assert_error(reader.delete(f"/v1/channels/{channel['id']}"), 403, "INSUFFICIENT_SCOPE")
    assert_error(writer.get("/v1/channels"), 403, "INSUFFICIENT_SCOPE", "channels:read")
