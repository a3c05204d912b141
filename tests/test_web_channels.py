"""The admins' channel pages at /app/channels over HTTP: each type created
and configured through its form (the API's own checks, refusals named beside
the field), secrets write-only, the credential checks, connecting an agent,
recent errors; the agent role refused, another workspace's channel 404."""

import re

import pytest

from agent_platform.channels import channel_errors
from agent_platform.models import Channel
from conversations_helpers import WA_SETTINGS, event_names, make_agent, make_channel
from telegram_stub import TOKEN, TelegramStub
from test_cli import free_port
from web_helpers import make_user, page_token, sign_in, text

PUBLIC_URL = "http://127.0.0.1:8080"


@pytest.fixture
def bot_api():
    stub = TelegramStub()
    yield stub
    stub.close()


@pytest.fixture
def settings(tmp_path, bot_api):
    return {
        "DATABASE_PATH": str(tmp_path / "test.db"),
        "TELEGRAM_API_BASE": bot_api.base,
        "TELEGRAM_TIMEOUT_SECONDS": 2,
        "EMAIL_ALLOW_PRIVATE_HOSTS": True,
        "EMAIL_TIMEOUT_SECONDS": 2,
        "SERVER_PUBLIC_URL": PUBLIC_URL,
    }


@pytest.fixture
def admin(client, caller):
    make_user(caller.workspace_id)
    sign_in(client)
    return client


def post(client, path, **form):
    return client.post(path, data={"csrf_token": page_token(client, "/app/channels"), **form})


def created_id(response):
    assert response.status_code == 303, text(response)
    return response.headers["Location"].rsplit("/", 1)[-1]


def error_beside(page, field):
    """The refusal shown under the field `field` (its id is <field>-error)."""
    found = re.search(rf'id="{field}-error" role="alert">([^<]+)<', page)
    return found and found.group(1)


def test_the_list_shows_the_workspaces_channels_with_agent_and_latest_error(admin, caller, other):
    agent = make_agent(caller, name="Ana Bot")
    site = make_channel(caller, name="Site", type="website", agent_id=agent)
    make_channel(caller, name="Bot", type="telegram", settings={"bot_token": TOKEN})
    make_channel(other, name="Elsewhere", type="website")
    channel_errors.channel_error(
        Channel.get_by_id(site["id"]), "getUpdates_failed",
        {"code": "X", "title": "The <network> said no", "details": None},
    )  # fmt: skip
    page = text(admin.get("/app/channels"))
    assert "Site" in page and "Bot" in page and "Elsewhere" not in page
    assert "Ana Bot" in page and "none (disconnected)" in page
    assert "The &lt;network&gt; said no" in page


def test_a_website_channel_is_created_with_its_snippet_and_preview(admin, caller):
    form = {"name": "Site", "allowed_origins": "https://shop.example.com\n\nhttps://b.example",
            "greeting": "Hi <b>there</b>", "primary_color": "#8a4b2a", "title": "Loja"}  # fmt: skip
    channel_id = created_id(post(admin, "/app/channels/new/website", **form))
    stored = Channel.get_by_id(channel_id)
    assert stored.settings["allowed_origins"] == ["https://shop.example.com", "https://b.example"]
    page = text(admin.get(f"/app/channels/{channel_id}"))
    snippet = f'src="{PUBLIC_URL}/widget/{channel_id}/widget.js"'
    assert snippet.replace('"', "&#34;") in page or snippet.replace('"', "&quot;") in page
    assert 'id="preview-greeting">Hi &lt;b&gt;there&lt;/b&gt;</p>' in page
    assert "https://shop.example.com\nhttps://b.example</textarea>" in page
    secret = "s3cret-of-the-shop-42"
    post(admin, f"/app/channels/{channel_id}", name="Site", identity_secret=secret)
    assert Channel.get_by_id(channel_id).settings["identity_secret"] == secret
    assert secret not in text(admin.get(f"/app/channels/{channel_id}"))


def test_refusals_are_shown_beside_the_field_and_change_nothing(admin, caller):
    bad = post(admin, "/app/channels/new/website", name="Site", primary_color="red",
               greeting="Hello")  # fmt: skip
    assert bad.status_code == 400
    assert "must be a hex color" in error_beside(text(bad), "primary_color")
    assert 'value="Hello"' in text(bad)  # what was typed stays
    origin = post(admin, "/app/channels/new/website", name="Site", allowed_origins="nope")
    assert "must be an origin" in error_beside(text(origin), "allowed_origins")
    for typed in ("99999", "²", "٣"):  # Unicode digits are no port number either
        port = post(admin, "/app/channels/new/email", name="Mail", imap_port=typed)
        assert "port number" in error_beside(text(port), "imap_port"), typed
    for name in ("", "   ", "two\nlines", "x" * 201):
        unnamed = post(admin, "/app/channels/new/website", name=name)
        assert unnamed.status_code == 400 and error_beside(text(unnamed), "name"), repr(name)
    assert Channel.select().count() == 0
    created_id(post(admin, "/app/channels/new/website", name="Site"))
    taken = post(admin, "/app/channels/new/website", name="Site")
    assert taken.status_code == 409 and "already exists" in text(taken)


def test_whatsapp_shows_the_callback_url_and_the_verify_token_once(admin, caller):
    new = text(admin.get("/app/channels/new/whatsapp"))
    token = re.search(r'id="verify_token" name="verify_token" type="text" autocomplete="off" '
                      r'value="([^"]+)"', new).group(1)  # fmt: skip
    form = {**WA_SETTINGS, "name": "WhatsApp", "verify_token": token, "mark_read": "true"}
    created = post(admin, "/app/channels/new/whatsapp", **form)
    assert created.status_code == 200
    channel = Channel.get(Channel.name == "WhatsApp")
    assert channel.settings["verify_token"] == token and channel.settings["mark_read"] is True
    shown = text(created)
    assert f'value="{PUBLIC_URL}/inbound/whatsapp/{channel.id}"' in shown
    assert f'id="verify-token-once" readonly value="{token}"' in shown
    again = text(admin.get(f"/app/channels/{channel.id}"))
    assert f"{PUBLIC_URL}/inbound/whatsapp/{channel.id}" in again
    for secret in (token, WA_SETTINGS["access_token"], WA_SETTINGS["app_secret"]):
        assert secret not in again
    assert again.count("(set)") == 3


def test_secrets_are_write_only_and_kept_when_left_empty(admin, caller):
    channel_id = created_id(post(admin, "/app/channels/new/telegram", name="Bot",
                                 bot_token=TOKEN, bot_username="loja_da_ana_bot"))  # fmt: skip
    page = text(admin.get(f"/app/channels/{channel_id}"))
    assert TOKEN not in page and "(set)" in page
    saved = post(admin, f"/app/channels/{channel_id}", name="Bot 2", bot_token="",
                 bot_username="loja_da_ana_bot")  # fmt: skip
    assert saved.status_code == 200 and TOKEN not in text(saved)
    assert Channel.get_by_id(channel_id).settings["bot_token"] == TOKEN
    assert Channel.get_by_id(channel_id).name == "Bot 2"
    unnamed = post(admin, f"/app/channels/{channel_id}", name="", bot_username="loja_da_ana_bot")
    assert unnamed.status_code == 400 and Channel.get_by_id(channel_id).name == "Bot 2"
    refused = post(admin, f"/app/channels/{channel_id}", name="Bot 2", bot_token="not-a-token")
    assert refused.status_code == 400
    assert "a bot token from BotFather" in error_beside(text(refused), "bot_token")
    assert "not-a-token" not in text(refused)


def test_telegram_verify_shows_the_bots_name_and_the_failure(admin, caller, bot_api):
    bot = {"bot_token": TOKEN, "bot_username": "loja_da_ana_bot"}
    channel = make_channel(caller, name="Bot", type="telegram", settings=bot)
    checked = post(admin, f"/app/channels/{channel['id']}/verify")
    assert checked.status_code == 200
    assert "The bot is <strong>@loja_da_ana_bot</strong> (Loja)" in text(checked)
    assert "Verified bot: <strong>@loja_da_ana_bot</strong>" in text(
        admin.get(f"/app/channels/{channel['id']}")
    )
    bot_api.token = "999999999:" + "b" * 35
    failed = text(post(admin, f"/app/channels/{channel['id']}/verify"))
    assert "It failed" in failed and "Unauthorized" in failed
    assert "credentials_failed" in failed  # in the recent errors
    bare = make_channel(caller, name="Bare", type="telegram")
    unset = post(admin, f"/app/channels/{bare['id']}/verify")
    assert unset.status_code == 409 and "settings.bot_token" in text(unset)


def test_email_check_connection_names_the_step_that_failed(admin, caller):
    form = {"name": "Mail", "from_address": "help@example.com", "imap_host": "127.0.0.1",
            "imap_port": str(free_port()), "imap_security": "none", "imap_password": "pw-123",
            "smtp_host": "127.0.0.1", "smtp_security": "none"}  # fmt: skip
    channel_id = created_id(post(admin, "/app/channels/new/email", **form))
    assert Channel.get_by_id(channel_id).settings["imap_port"] == int(form["imap_port"])
    page = text(post(admin, f"/app/channels/{channel_id}/verify"))
    assert "at the step <strong>imap_connect</strong>" in page and "IMAP_UNREACHABLE" in page
    assert "pw-123" not in page
    assert 'data-imap-host="imap.fastmail.com"' in page  # the presets


def test_a_website_has_no_credentials_to_check(admin, caller):
    site = make_channel(caller, name="Site", type="website")
    page = text(admin.get(f"/app/channels/{site['id']}"))
    assert "Check now" not in page
    refused = post(admin, f"/app/channels/{site['id']}/verify")
    assert refused.status_code == 404 and "cannot be checked" in text(refused)


def test_connect_and_disconnect_an_agent(admin, caller, other):
    agent = make_agent(caller, name="Ana Bot")
    foreign_agent = make_agent(other, name="Zed")
    site = make_channel(caller, name="Site", type="website")
    page = text(admin.get(f"/app/channels/{site['id']}"))
    assert "Ana Bot" in page and "Zed" not in page
    refused = post(admin, f"/app/channels/{site['id']}/connect", agent_id=foreign_agent)
    assert refused.status_code == 404 and "not found" in text(refused)
    connected = post(admin, f"/app/channels/{site['id']}/connect", agent_id=agent)
    assert "Connected to <strong>Ana Bot</strong>" in text(connected)
    assert Channel.get_by_id(site["id"]).agent_id == agent
    post(admin, f"/app/channels/{site['id']}/disconnect")
    assert Channel.get_by_id(site["id"]).agent_id is None
    # The API's own events, for the workspace's webhooks.
    raised = [name for name in event_names(caller.workspace_id) if name.startswith("channel.")]
    assert raised == ["channel.connected", "channel.disconnected"]


def test_delete_removes_the_channel_from_the_list(admin, caller):
    site = make_channel(caller, name="Site", type="website")
    gone = post(admin, f"/app/channels/{site['id']}/delete")
    assert gone.status_code == 303
    assert Channel.get_by_id(site["id"]).is_active is False


def test_another_workspaces_channel_is_404(admin, caller, other):
    foreign = make_channel(other, name="Theirs", type="website")
    for path in ("", "/verify", "/connect", "/disconnect", "/delete"):
        method = admin.get if path == "" else None
        response = (
            method(f"/app/channels/{foreign['id']}")
            if method
            else post(admin, f"/app/channels/{foreign['id']}{path}", agent_id="x")
        )
        assert response.status_code == 404, path
    assert post(admin, f"/app/channels/{foreign['id']}", name="Mine").status_code == 404
    assert Channel.get_by_id(foreign["id"]).name == "Theirs"
    assert admin.get("/app/channels/new/fax").status_code == 404


def test_the_agent_role_is_refused(client, caller):
    make_user(caller.workspace_id, email="bia@example.com", name="Bia", role="agent")
    sign_in(client, email="bia@example.com")
    site = make_channel(caller, name="Site", type="website")
    token = page_token(client, "/app")
    for path in ("/app/channels", "/app/channels/new/website", f"/app/channels/{site['id']}"):
        assert client.get(path).status_code == 403, path
    refused = client.post("/app/channels/new/website", data={"csrf_token": token, "name": "X"})
    assert refused.status_code == 403 and Channel.select().count() == 1
    assert "Channels</a>" not in text(client.get("/app"))
