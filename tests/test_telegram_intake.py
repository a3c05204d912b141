"""A Telegram channel through the API and the Bot API stand-in: its settings,
webhook registration and the secret-checked intake, long polling from the
stored offset, dedupe by update_id, and every kind of update."""

import json
import logging
import re

from agent_platform import scheduler
from agent_platform.channels.telegram import polling, tasks
from agent_platform.db import database
from agent_platform.models import Channel, ChannelEvent, Message, TelegramUpdate
from conftest import assert_error
from conversations_helpers import data, events, make_channel
from telegram_helpers import *  # noqa: F403  (the fixtures)
from telegram_helpers import PUBLIC_URL, deliver, delivered, telegram_channel
from telegram_stub import CUSTOMER, TOKEN, message_update, private_message


def test_the_bot_token_is_checked_and_write_only(caller):
    for bad in ("not a token", "123:short", "12345678:" + "a" * 29, TOKEN + " "):
        response = caller.post(
            "/v1/channels", json={"name": "T", "type": "telegram", "settings": {"bot_token": bad}}
        )
        assert_error(response, 400, "VALIDATION_ERROR", "settings.bot_token")
    response = caller.post(
        "/v1/channels",
        json={"name": "T", "type": "telegram", "settings": {"intake_mode": "push"}},
    )
    assert_error(response, 400, "VALIDATION_ERROR", "settings.intake_mode")
    channel = telegram_channel(caller)
    shown = data(caller.get(f"/v1/channels/{channel['id']}/settings"))
    assert shown["bot_token_set"] is True and "bot_token" not in shown
    assert TOKEN not in caller.get(f"/v1/channels/{channel['id']}").get_data(as_text=True)


def test_polling_is_the_default_and_sets_no_webhook(caller, bot_api):
    telegram_channel(caller)
    assert "setWebhook" not in bot_api.calls()


def test_webhook_mode_registers_a_random_secret(app, caller, bot_api):
    channel = telegram_channel(caller, mode="webhook")
    webhook = bot_api.webhook
    assert webhook["url"] == f"{PUBLIC_URL}/inbound/telegram/{channel['id']}"
    # 32 random bytes, in the characters Telegram allows in a secret_token.
    assert re.fullmatch(r"[A-Za-z0-9_-]{43}", webhook["secret_token"])
    assert set(webhook["allowed_updates"]) >= {"message", "edited_message", "callback_query"}
    stored = Channel.get_by_id(channel["id"]).settings["secret_token"]
    assert stored == webhook["secret_token"]
    assert stored_setting(app, channel["id"], "secret_token").startswith("enc:v1:")
    assert data(caller.get(f"/v1/channels/{channel['id']}"))["settings"]["secret_token_set"]
    logged = data(caller.get(f"/v1/channels/{channel['id']}/events"))
    assert [(e["kind"], e["is_error"]) for e in logged] == [("webhook_set", False)]
    assert logged[0]["payload"] == {"url": webhook["url"]}
    other = telegram_channel(caller, mode="webhook", agent=False, name="Other")
    assert bot_api.webhook["secret_token"] != stored  # each channel its own
    assert other["id"] != channel["id"]


def stored_setting(app, channel_id, name):
    """A setting as the database holds it, read in SQL past the model (which decrypts)."""
    query = "SELECT settings FROM channel WHERE id = ?"
    [(text,)] = database.execute_sql(query, (channel_id,)).fetchall()
    return json.loads(text)[name]


def test_the_webhook_url_keeps_the_public_urls_path(app, caller, bot_api):
    # Behind a proxy under a path, given with a trailing slash: that slash
    # alone goes (not the letters before it, nor a slash in front).
    app.config["SERVER_PUBLIC_URL"] = "https://example.com/LojaX/"
    channel = telegram_channel(caller, mode="webhook")
    expected = f"https://example.com/LojaX/inbound/telegram/{channel['id']}"
    assert bot_api.webhook["url"] == expected


def test_deleting_the_channel_deletes_its_webhook(caller, bot_api):
    channel = telegram_channel(caller, mode="webhook")
    assert caller.delete(f"/v1/channels/{channel['id']}").status_code == 204
    assert bot_api.webhook is None and bot_api.calls()[-1] == "deleteWebhook"


def test_webhook_mode_needs_an_https_public_url(app, caller, bot_api):
    app.config["SERVER_PUBLIC_URL"] = "http://127.0.0.1:8080"
    body = {"name": "T", "type": "telegram", "settings": {"intake_mode": "webhook"}}
    response = caller.post("/v1/channels", json=body)
    assert_error(response, 400, "VALIDATION_ERROR", "settings.intake_mode")
    assert "server.public_url" in response.get_json()["error"]["message"]
    assert data(caller.get("/v1/channels")) == [] and bot_api.calls() == []


def test_a_webhook_telegram_refuses_is_a_channel_error(caller, bot_api, caplog):
    bot_api.refuse["setWebhook"] = (400, "Bad Request: bad webhook: Failed to resolve host")
    with caplog.at_level(logging.WARNING, logger="agent_platform.telegram"):
        channel = telegram_channel(caller, mode="webhook")
    [line] = [r.getMessage() for r in caplog.records if r.name == "agent_platform.telegram"]
    assert line == (
        f"Telegram setWebhook failed on channel {channel['id']}: "
        "400: Bad Request: bad webhook: Failed to resolve host"
    )
    [(_, event)] = events(caller.workspace_id, "channel.error")
    assert event["id"] == channel["id"]
    assert "Failed to resolve host" in event["error"]["title"]
    logged = data(caller.get(f"/v1/channels/{channel['id']}/events"))
    assert [(e["kind"], e["is_error"]) for e in logged] == [("setWebhook_failed", True)]


def test_the_webhook_needs_the_secret(client, caller, bot_api):
    channel = telegram_channel(caller, mode="webhook")
    update = {"update_id": 1, **message_update()}
    assert_error(deliver(client, channel["id"], update, None), 401, "MISSING_SECRET_TOKEN")
    response = deliver(client, channel["id"], update, bot_api.webhook["secret_token"][:-1] + "x")
    assert_error(response, 401, "INVALID_SECRET_TOKEN", "X-Telegram-Bot-Api-Secret-Token")
    assert Message.select().count() == 0 and TelegramUpdate.select().count() == 0
    assert_error(deliver(client, "nope", update, "x"), 404, "CHANNEL_NOT_FOUND")
    whatsapp = make_channel(caller, name="WA")
    assert_error(deliver(client, whatsapp["id"], update, "x"), 404, "CHANNEL_NOT_FOUND")


def test_the_bound_is_per_channel_and_counts_updates_with_the_secret_only(
    app, client, caller, bot_api
):
    app.config["INBOUND_MAX_REQUESTS_PER_MINUTE"] = 3  # read when the first POST arrives
    channel = telegram_channel(caller, mode="webhook")
    secret = bot_api.webhook["secret_token"]
    second = telegram_channel(caller, mode="webhook", agent=False, name="Two")
    for number in range(5):  # without the secret: refused before it counts
        deliver(client, channel["id"], {"update_id": 90 + number, **message_update()}, "guess")
    for number in range(3):
        update = {"update_id": number + 1, **message_update(f"Oi {number}")}
        assert deliver(client, channel["id"], update, secret).status_code == 200
    refused = deliver(client, channel["id"], {"update_id": 9, **message_update()}, secret)
    assert_error(refused, 429, "RATE_LIMIT_EXCEEDED", "more than 3 updates in the last minute")
    assert int(refused.headers["Retry-After"]) >= 1
    update = {"update_id": 9, **message_update()}
    assert deliver(client, second["id"], update, bot_api.webhook["secret_token"]).status_code == 200
    assert TelegramUpdate.select().count() == 4


def test_a_polling_channel_accepts_no_webhook_post(client, caller):
    channel = telegram_channel(caller)  # no secret was ever given to Telegram
    response = deliver(client, channel["id"], {"update_id": 1, **message_update()}, "guess")
    assert_error(response, 401, "INVALID_SECRET_TOKEN")


def test_a_body_that_is_no_update_is_refused(client, caller, bot_api):
    channel = telegram_channel(caller, mode="webhook")
    secret = bot_api.webhook["secret_token"]
    # An id past 64 bits was a 500 (the column holds 64); true is no id.
    beyond = [{"update_id": odd, **message_update()} for odd in (2**63, 10**30, -1, True)]
    for body in ({"message": {}}, [1], {"update_id": "1"}, *beyond):
        assert_error(deliver(client, channel["id"], body, secret), 400, "VALIDATION_ERROR", "body")
    assert TelegramUpdate.select().count() == 0
    headers = {"X-Telegram-Bot-Api-Secret-Token": secret, "Content-Type": "application/json"}
    response = client.post(f"/inbound/telegram/{channel['id']}", data=b"{no", headers=headers)
    refused = assert_error(response, 400, "VALIDATION_ERROR")
    assert refused["message"] == "body: is not a JSON document"


def test_a_webhook_update_is_stored_once(client, caller, bot_api):
    channel = telegram_channel(caller, mode="webhook")
    secret = bot_api.webhook["secret_token"]
    update = {"update_id": 7001, **message_update("Oi, tudo bem?")}
    assert delivered(client, channel["id"], update, secret)["messages"] == 1
    assert delivered(client, channel["id"], update, secret)["duplicates"] == 1
    [message] = Message.select()
    assert (message.text, message.external_id) == ("Oi, tudo bem?", f"{CUSTOMER['id']}:1")
    contact = data(caller.get(f"/v1/contacts/{message.contact_id}"))
    assert contact["name"] == "Bia Souza"
    assert [(i["type"], i["external_id"]) for i in contact["identities"]] == [
        ("telegram", str(CUSTOMER["id"]))
    ]
    [(_, received)] = events(caller.workspace_id, "message.received")
    assert received["text"] == "Oi, tudo bem?"


def test_polling_stores_updates_from_the_stored_offset(caller, bot_api):
    channel = telegram_channel(caller)
    first = bot_api.push(message_update("um", message_id=1))
    second = bot_api.push(message_update("dois", message_id=2))
    assert polling.poll_updates() == 2
    assert "offset" not in bot_api.sent("getUpdates")[0]
    assert TelegramUpdate.next_offset(channel["id"]) == second["update_id"] + 1
    bot_api.push(message_update("três", message_id=3))
    assert polling.poll_updates() == 1
    assert bot_api.sent("getUpdates")[-1]["offset"] == second["update_id"] + 1
    assert [m.text for m in Message.select().order_by(Message.created_at)] == ["um", "dois", "três"]
    assert first["update_id"] < second["update_id"]
    assert polling.poll_updates() == 0


def test_an_update_polled_again_is_stored_once(caller, bot_api):
    channel = telegram_channel(caller)
    update = bot_api.push(message_update("um"))
    polling.poll_updates()
    TelegramUpdate.delete().execute()  # as if the offset were lost: Telegram redelivers
    assert polling.poll_updates() == 0  # the same message: a duplicate
    assert Message.select().count() == 1
    assert TelegramUpdate.next_offset(channel["id"]) == update["update_id"] + 1


def test_the_polling_job_is_registered_with_its_interval(app):
    assert (polling.poll_updates, "TELEGRAM_POLL_SECONDS") in scheduler.JOBS
    app.config["TELEGRAM_POLL_SECONDS"] = 3.5
    built = scheduler.build_scheduler(app)
    job = built.get_job("agent_platform.channels.telegram.polling.poll_updates")
    assert job.trigger.interval.total_seconds() == 3.5


def webhook_calls(bot_api):
    """(token, method) of each setWebhook / deleteWebhook, in order."""
    calls = [seen.path.removeprefix("/bot").split("/") for seen in bot_api.requests]
    return [(token, method) for token, method in calls if method.endswith("Webhook")]


def test_switching_to_polling_deletes_the_webhook_at_once(caller, bot_api):
    channel = telegram_channel(caller, mode="webhook")
    changed = {"settings": {"intake_mode": "polling"}}
    assert caller.patch(f"/v1/channels/{channel['id']}", json=changed).status_code == 200
    assert bot_api.webhook is None
    assert webhook_calls(bot_api) == [(TOKEN, "setWebhook"), (TOKEN, "deleteWebhook")]
    logged = data(caller.get(f"/v1/channels/{channel['id']}/events"))
    assert [e["kind"] for e in logged][:2] == ["webhook_deleted", "webhook_set"]  # newest first
    bot_api.push(message_update("um"))
    assert polling.poll_updates() == 1  # the first poll already gets the update


def test_a_new_token_deletes_the_old_bots_webhook_with_the_old_token(caller, bot_api):
    new_token = "7345678901:" + "N" * 35
    bot_api.add_bot(new_token)
    channel = telegram_channel(caller, mode="webhook")
    secret = bot_api.webhook["secret_token"]
    changed = {"settings": {"bot_token": new_token}}
    assert caller.patch(f"/v1/channels/{channel['id']}", json=changed).status_code == 200
    assert webhook_calls(bot_api)[1:] == [(TOKEN, "deleteWebhook"), (new_token, "setWebhook")]
    assert list(bot_api.webhooks) == [new_token]  # the old bot calls the service no more
    assert bot_api.webhooks[new_token]["secret_token"] == secret
    assert events(caller.workspace_id, "channel.error") == []


def test_removing_the_token_deletes_the_webhook_with_it(caller, bot_api):
    # Disconnected: a PUT may not take its token from a connected channel.
    channel = telegram_channel(caller, mode="webhook", agent=False)
    settings = {"intake_mode": "webhook", "bot_username": "loja_da_ana_bot", "bot_token": None}
    assert caller.put(f"/v1/channels/{channel['id']}/settings", json=settings).status_code == 200
    assert webhook_calls(bot_api) == [(TOKEN, "setWebhook"), (TOKEN, "deleteWebhook")]
    assert bot_api.webhooks == {}


def test_changing_other_settings_keeps_the_webhook(caller, bot_api):
    channel = telegram_channel(caller, mode="webhook")
    changed = {"settings": {"bot_username": "outra_loja_bot"}}
    assert caller.patch(f"/v1/channels/{channel['id']}", json=changed).status_code == 200
    assert webhook_calls(bot_api) == [(TOKEN, "setWebhook"), (TOKEN, "setWebhook")]
    assert bot_api.webhook is not None


def test_polling_removes_a_webhook_set_elsewhere(caller, bot_api):
    telegram_channel(caller)
    # Another program (or a deleteWebhook that failed) left the bot a webhook.
    bot_api.webhooks[TOKEN] = {"url": "https://elsewhere.example.com/hook"}
    bot_api.push(message_update("um"))
    assert polling.poll_updates() == 0  # Telegram: 409, a webhook is active
    assert bot_api.webhook is None
    assert polling.poll_updates() == 1


def test_a_revoked_token_is_a_channel_error(caller, bot_api):
    channel = telegram_channel(caller)
    bot_api.token = "999999999:" + "b" * 35
    assert polling.poll_updates() == 0
    assert polling.poll_updates() == 0  # said once, not at every poll
    [(_, event)] = events(caller.workspace_id, "channel.error")
    assert (event["id"], event["error"]["code"]) == (channel["id"], "401")


def test_another_process_polling_the_same_bot_is_no_channel_error(caller, bot_api):
    telegram_channel(caller)
    conflict = "Conflict: terminated by other getUpdates request; make sure that only one bot"
    bot_api.refuse["getUpdates"] = (409, conflict + " instance is running")
    assert polling.poll_updates() == 0
    assert events(caller.workspace_id, "channel.error") == []
    del bot_api.refuse["getUpdates"]
    bot_api.push(message_update("um"))
    assert polling.poll_updates() == 1


def test_group_chats_are_ignored_and_logged(caller, bot_api):
    channel = telegram_channel(caller)
    group = {"id": -1001234, "title": "Clientes", "type": "supergroup"}
    bot_api.push({"message": {**private_message("oi"), "chat": group}})
    polling.poll_updates()
    assert Message.select().count() == 0
    [logged] = ChannelEvent.select().where(ChannelEvent.channel == channel["id"])
    assert logged.kind == "skipped" and "only private chats" in logged.payload["reason"]


def stored_after(bot_api, *updates):
    for update in updates:
        bot_api.push(update)
    polling.poll_updates()
    return list(Message.select().order_by(Message.created_at))


def test_media_locations_contacts_and_stickers(caller, bot_api):
    telegram_channel(caller)
    photo = [
        {"file_id": "small", "file_unique_id": "s", "width": 90, "height": 60},
        {"file_id": "large", "file_unique_id": "l", "width": 1280, "height": 853},
    ]
    document = {"file_id": "doc", "file_unique_id": "d", "file_name": "a.pdf"}
    document["mime_type"] = "application/pdf"
    voice = {"file_id": "v", "file_unique_id": "v", "duration": 3, "mime_type": "audio/ogg"}
    updates = [
        {"message": private_message(None, 1, photo=photo, caption="olha")},
        {"message": private_message(None, 2, document=document)},
        {"message": private_message(None, 3, voice=voice)},
        {"message": private_message(None, 4, location={"latitude": -23.5, "longitude": -46.6})},
        {
            "message": private_message(
                None, 5, contact={"phone_number": "+5511999", "first_name": "Ze"}
            )
        },
        {"message": private_message(None, 6, sticker={"file_id": "st", "emoji": "👍"})},
        {"message": private_message(None, 7, dice={"emoji": "🎲", "value": 3})},
        {"message": private_message(None, 8, audio={"file_id": "a", "mime_type": "audio/mpeg"})},
        {"message": private_message(None, 9, video={"file_id": "vd", "mime_type": "video/mp4"})},
    ]
    stored = stored_after(bot_api, *updates)
    assert [m.type for m in stored] == [
        "image", "document", "audio", "location", "contacts", "sticker", "unsupported",
        "audio", "video",
    ]  # fmt: skip
    image, doc, audio, location, contact, sticker, other, music, video = stored
    assert (image.caption, image.metadata["media"]["file_id"]) == ("olha", "large")
    assert (doc.media_mime_type, doc.metadata["filename"]) == ("application/pdf", "a.pdf")
    assert audio.metadata["voice"] is True
    assert location.metadata["location"] == {"latitude": -23.5, "longitude": -46.6}
    assert contact.metadata["contacts"][0]["first_name"] == "Ze"
    assert sticker.text == "👍"
    assert other.metadata["network_type"] == "dice"
    assert (music.media_mime_type, "voice" in music.metadata) == ("audio/mpeg", False)
    assert (video.media_mime_type, video.metadata["media"]["file_id"]) == ("video/mp4", "vd")


def test_an_edited_message_keeps_its_history(caller, bot_api):
    telegram_channel(caller)
    stored_after(bot_api, message_update("pizza grande", message_id=9))
    edited = private_message("pizza média", message_id=9, edit_date=1767323100)
    [message] = stored_after(bot_api, {"edited_message": edited})
    shown = data(caller.get(f"/v1/messages/{message.id}"))
    assert shown["text"] == "pizza média" and shown["edited_at"].startswith("2026-01-02T03:05:00")
    assert [entry["text"] for entry in shown["edit_history"]] == ["pizza grande"]
    [message] = stored_after(bot_api, {"edited_message": edited})  # the same edit again
    assert len(data(caller.get(f"/v1/messages/{message.id}"))["edit_history"]) == 1


def test_a_message_edited_without_end_keeps_its_first_and_latest_versions(caller, bot_api):
    # Every edit rewrote the whole history: a contact editing a message
    # thousands of times made each edit and each page of messages longer.
    telegram_channel(caller)
    stored_after(bot_api, message_update("v0", message_id=9))
    edits = [
        {"edited_message": private_message(f"v{n}", message_id=9, edit_date=1767323100 + n)}
        for n in range(1, 31)
    ]
    [message] = stored_after(bot_api, *edits)
    shown = data(caller.get(f"/v1/messages/{message.id}"))
    assert shown["text"] == "v30"
    assert [entry["text"] for entry in shown["edit_history"]] == [
        "v0",
        *(f"v{n}" for n in range(11, 30)),
    ]


def test_a_button_press_is_a_button_message(caller, bot_api):
    telegram_channel(caller)
    bot = private_message("Escolha:", message_id=20)
    query = {"id": "4382bfdwdsb323b2d9", "from": CUSTOMER, "message": bot, "data": "size:large"}
    query["chat_instance"] = "-8"
    [message] = stored_after(bot_api, {"callback_query": query})
    assert (message.type, message.text) == ("button", "size:large")
    assert message.external_id == "callback:4382bfdwdsb323b2d9"
    assert message.metadata["button"]["callback_query_id"] == "4382bfdwdsb323b2d9"


JPEG = b"\xff\xd8\xff\xe0 a small jpeg"


def fetch(client, path):
    response = client.get(path)
    response.get_data()
    response.close()
    return response


def test_a_photo_is_fetched_through_getfile_into_media_url(client, caller, bot_api):
    telegram_channel(caller)
    bot_api.add_file("large", JPEG, "photos/file_7.jpg")
    photo = [{"file_id": "large", "file_unique_id": "l", "width": 800, "height": 600}]
    [message] = stored_after(bot_api, {"message": private_message(None, 1, photo=photo)})
    assert message.media_url is None  # fetched by its job, not while storing
    assert tasks.run_tasks() == 1
    shown = data(caller.get(f"/v1/messages/{message.id}"))
    assert shown["media_url"].startswith("https://agents.example.com/media/")
    assert shown["media_url"].endswith(".jpg") and shown["metadata"]["media"]["size"] == len(JPEG)
    assert "bot" + TOKEN not in str(shown) and TOKEN not in str(shown)
    served = fetch(client, "/media/" + shown["media_url"].rsplit("/", 1)[1])
    assert (served.status_code, served.data) == (200, JPEG)
    assert [c for c in bot_api.calls() if c != "getUpdates"] == ["getFile", "file_7.jpg"]
    assert tasks.run_tasks() == 0


def test_a_file_over_the_limit_is_given_up_with_the_reason(app, caller, bot_api):
    app.config["MEDIA_MAX_BYTES"] = 10
    channel = telegram_channel(caller)
    bot_api.add_file("doc", b"x" * 11, "documents/file_1.pdf")
    document = {"file_id": "doc", "file_unique_id": "d", "mime_type": "application/pdf"}
    [message] = stored_after(bot_api, {"message": private_message(None, 1, document=document)})
    tasks.run_tasks()
    shown = data(caller.get(f"/v1/messages/{message.id}"))
    assert (shown["media_url"], shown["error"]["code"]) == (None, "MEDIA_DOWNLOAD_FAILED")
    assert "over the limit of 10" in shown["error"]["title"]
    logged = data(caller.get(f"/v1/channels/{channel['id']}/events?kind=telegram_media_failed"))
    assert logged[0]["payload"]["error"]["code"] == "MEDIA_TOO_LARGE"


def test_verify_asks_getme(caller, bot_api):
    channel = telegram_channel(caller)
    result = data(caller.post(f"/v1/channels/{channel['id']}/verify"))
    assert result["ok"] is True
    assert (result["details"]["id"], result["details"]["username"]) == (
        7234567890,
        "loja_da_ana_bot",
    )
    renamed = {"settings": {"bot_username": "outra_loja_bot"}}
    caller.patch(f"/v1/channels/{channel['id']}", json=renamed)
    result = data(caller.post(f"/v1/channels/{channel['id']}/verify"))
    assert (result["ok"], result["error"]["code"]) == (False, "BOT_USERNAME_MISMATCH")
    bot_api.token = "999999999:" + "b" * 35
    result = data(caller.post(f"/v1/channels/{channel['id']}/verify"))
    assert (result["ok"], result["error"]["title"]) == (False, "Unauthorized")
    assert [e for e, _ in events(caller.workspace_id) if e.startswith("channel.")][-3:] == [
        "channel.connected",
        "channel.error",
        "channel.error",
    ]
    bare = telegram_channel(caller, name="Bare", agent=False, bot_token=None)
    response = caller.post(f"/v1/channels/{bare['id']}/verify")
    assert_error(response, 409, "CHANNEL_NOT_CONFIGURED", "settings.bot_token")


def test_old_update_ids_are_forgotten(caller, bot_api, monkeypatch):
    channel = telegram_channel(caller)
    monkeypatch.setattr("agent_platform.models.telegram.KEPT_UPDATES", 3)
    for number in range(1, 101):
        bot_api.updates.append({"update_id": number, "message": private_message("x", number)})
    polling.poll_updates()
    kept = [u.update_id for u in TelegramUpdate.select().order_by(TelegramUpdate.update_id)]
    assert kept == [98, 99, 100]
    assert TelegramUpdate.next_offset(channel["id"]) == 101


def test_oversized_or_deeply_nested_bodies_are_refused(app, client, caller, bot_api):
    channel = telegram_channel(caller, mode="webhook")
    headers = {"X-Telegram-Bot-Api-Secret-Token": bot_api.webhook["secret_token"]}
    path = f"/inbound/telegram/{channel['id']}"
    nested = b'{"update_id": 1, "message": ' + b"[" * 100000 + b"]" * 100000 + b"}"
    response = client.post(path, data=nested, headers=headers, content_type="application/json")
    assert_error(response, 400, "VALIDATION_ERROR", "body")
    app.config["LIMITS_MAX_BODY_BYTES"] = 100
    big = json.dumps({"update_id": 2, **message_update("x" * 200)})
    response = client.post(path, data=big, headers=headers, content_type="application/json")
    assert_error(response, 413, "PAYLOAD_TOO_LARGE")
    assert Message.select().count() == 0
