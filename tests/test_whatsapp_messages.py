"""Every WhatsApp message type, as Meta sends it, stored through the signed
callback URL: what each keeps, contacts and names, replies, redeliveries,
batches, reactions, number changes, placeholders."""

import json

from agent_platform.models import ChannelEvent, ChannelTask, Contact, Message
from conversations_helpers import data, event_names, events, make_contact
from whatsapp_helpers import *  # noqa: F403  (the fixtures)
from whatsapp_helpers import (
    CUSTOMER,
    T0,
    envelope,
    message,
    messages_payload,
    messages_value,
    post,
    received,
    status,
    text,
)


def stored(caller, wamid="wamid.IN1"):
    """The message with this network id, as the API shows it."""
    found = Message.get(Message.external_id == wamid)
    return data(caller.get(f"/v1/messages/{found.id}"))


def test_text_creates_contact_conversation_and_message(client, caller, channel):
    counts = received(client, channel["id"], messages_payload(text("Oi, tudo bem?")))
    assert counts["messages"] == 1
    got = stored(caller)
    assert (got["type"], got["text"], got["direction"], got["status"]) == (
        "text",
        "Oi, tudo bem?",
        "inbound",
        "received",
    )
    assert got["metadata"] == {"network_timestamp": "2026-01-02T03:04:05.000000Z"}
    contact = data(caller.get(f"/v1/contacts/{got['contact_id']}"))
    assert (contact["name"], contact["phone"]) == ("Customer 4444", "+" + CUSTOMER)
    assert [(i["type"], i["external_id"]) for i in contact["identities"]] == [
        ("whatsapp", CUSTOMER)
    ]
    conversation = data(caller.get(f"/v1/conversations/{got['conversation_id']}"))
    assert (conversation["channel_id"], conversation["agent_id"]) == (
        channel["id"],
        channel["agent_id"],
    )
    assert event_names(caller.workspace_id)[-3:] == [
        "contact.created",
        "conversation.created",
        "message.received",
    ]


def test_the_sender_name_is_the_profile_matched_on_wa_id(client, caller, channel):
    other = "5521988887777"
    contacts = [
        {"profile": {"name": "Bruno"}, "wa_id": other},
        {"profile": {"name": "Carla"}, "wa_id": CUSTOMER},
    ]
    payload = messages_payload(text(), contacts=contacts)
    received(client, channel["id"], payload)
    assert Contact.get(Contact.phone == "+" + CUSTOMER).name == "Carla"


def test_a_known_contact_is_found_by_phone(client, caller, channel):
    known = make_contact(caller, name="Ana Souza", phone="+" + CUSTOMER)
    received(client, channel["id"], messages_payload(text()))
    assert stored(caller)["contact_id"] == known["id"]
    assert Contact.select().count() == 1
    assert Contact.get_by_id(known["id"]).name == "Ana Souza"  # a name is never overwritten


def media_message(kind, content, wamid="wamid.IN1"):
    return message(kind, content, wamid=wamid)


def test_image_is_stored_with_caption_and_queued_for_download(client, caller, channel):
    image = {
        "caption": "Look at this",
        "mime_type": "image/jpeg",
        "sha256": "Gt6vlnhAkRS0lPXmm2Gj6cz7ELy7uUe0bGzhw1gdYyQ=",
        "id": "1479537139650973",
    }
    received(client, channel["id"], messages_payload(media_message("image", image)))
    got = stored(caller)
    assert (got["type"], got["caption"], got["text"]) == ("image", "Look at this", None)
    assert (got["media_mime_type"], got["media_url"]) == ("image/jpeg", None)
    assert got["metadata"]["media"] == {
        "id": "1479537139650973",
        "mime_type": "image/jpeg",
        "sha256": "Gt6vlnhAkRS0lPXmm2Gj6cz7ELy7uUe0bGzhw1gdYyQ=",
    }
    task = ChannelTask.get()
    assert (task.kind, task.message_id, task.payload["media_id"]) == (
        "media_download",
        got["id"],
        "1479537139650973",
    )


def test_voice_notes_are_flagged(client, caller, channel):
    voice = {"mime_type": "audio/ogg; codecs=opus", "sha256": "abc=", "id": "77", "voice": True}
    plain = {"mime_type": "audio/mpeg", "sha256": "def=", "id": "78", "voice": False}
    payload = messages_payload(
        media_message("audio", voice, "wamid.V"), media_message("audio", plain, "wamid.A")
    )
    received(client, channel["id"], payload)
    note, song = stored(caller, "wamid.V"), stored(caller, "wamid.A")
    assert (note["type"], note["media_mime_type"]) == ("audio", "audio/ogg; codecs=opus")
    assert note["metadata"]["voice"] is True
    assert "voice" not in song["metadata"]
    assert ChannelTask.select().count() == 2


def test_video_document_and_sticker(client, caller, channel):
    video = {"caption": "clip", "mime_type": "video/mp4", "sha256": "v=", "id": "80"}
    document = {
        "caption": "the invoice",
        "filename": "Fatura março.pdf",
        "mime_type": "application/pdf",
        "sha256": "d=",
        "id": "81",
    }
    sticker = {"mime_type": "image/webp", "sha256": "s=", "id": "82", "animated": False}
    payload = messages_payload(
        media_message("video", video, "wamid.VID"),
        media_message("document", document, "wamid.DOC"),
        media_message("sticker", sticker, "wamid.STK"),
    )
    assert received(client, channel["id"], payload)["messages"] == 3
    assert (stored(caller, "wamid.VID")["type"], stored(caller, "wamid.VID")["caption"]) == (
        "video",
        "clip",
    )
    doc = stored(caller, "wamid.DOC")
    assert (doc["type"], doc["caption"], doc["media_mime_type"]) == (
        "document",
        "the invoice",
        "application/pdf",
    )
    assert doc["metadata"]["filename"] == "Fatura março.pdf"
    assert doc["metadata"]["media"]["filename"] == "Fatura março.pdf"
    stk = stored(caller, "wamid.STK")
    assert (stk["type"], stk["media_mime_type"]) == ("sticker", "image/webp")
    assert stk["metadata"]["media"]["animated"] is False
    assert sorted(t.payload["media_id"] for t in ChannelTask.select()) == ["80", "81", "82"]


def test_location(client, caller, channel):
    location = {
        "latitude": -23.5613,
        "longitude": -46.6565,
        "name": "MASP",
        "address": "Av. Paulista, 1578 - Bela Vista, São Paulo",
        "url": "https://masp.org.br",
    }
    received(client, channel["id"], messages_payload(message("location", location)))
    got = stored(caller)
    assert got["type"] == "location"
    assert got["metadata"]["location"] == location
    assert ChannelTask.select().count() == 0


def test_shared_contact_cards(client, caller, channel):
    cards = [
        {
            "name": {"formatted_name": "Dra. Paula Lima", "first_name": "Paula"},
            "phones": [{"phone": "+55 11 3333-4444", "type": "WORK", "wa_id": "551133334444"}],
            "emails": [{"email": "paula@example.com", "type": "WORK"}],
            "org": {"company": "Clínica Lima"},
        },
        {"name": {"formatted_name": "João"}, "phones": [{"phone": "+351 912 345 678"}]},
    ]
    received(client, channel["id"], messages_payload(message("contacts", cards)))
    got = stored(caller)
    assert got["type"] == "contacts"
    assert got["metadata"]["contacts"] == cards
    assert Contact.select().count() == 1  # cards are content, not new contacts


def test_interactive_button_and_list_replies(client, caller, channel):
    button = {"type": "button_reply", "button_reply": {"id": "opt-yes", "title": "Yes, book it"}}
    listed = {
        "type": "list_reply",
        "list_reply": {"id": "slot-3", "title": "Tue 10:00", "description": "With Dr. Lima"},
    }
    context = {"from": "5511987654321", "id": "wamid.MENU"}
    payload = messages_payload(
        message("interactive", button, wamid="wamid.B", context=context),
        message("interactive", listed, wamid="wamid.L", context=context),
    )
    received(client, channel["id"], payload)
    first, second = stored(caller, "wamid.B"), stored(caller, "wamid.L")
    assert (first["type"], first["text"]) == ("interactive", "Yes, book it")
    assert first["metadata"]["interactive"] == {
        "type": "button_reply",
        "id": "opt-yes",
        "title": "Yes, book it",
    }
    assert second["text"] == "Tue 10:00"
    assert second["metadata"]["interactive"] == {"type": "list_reply", **listed["list_reply"]}
    assert first["metadata"]["reply_to_external_id"] == "wamid.MENU"


def test_template_quick_reply_button(client, caller, channel):
    button = {"payload": "CONFIRM_APPOINTMENT", "text": "Confirm"}
    context = {"from": "5511987654321", "id": "wamid.TEMPLATE"}
    received(client, channel["id"], messages_payload(message("button", button, context=context)))
    got = stored(caller)
    assert (got["type"], got["text"]) == ("button", "Confirm")
    assert got["metadata"]["button"] == {"text": "Confirm", "payload": "CONFIRM_APPOINTMENT"}


def test_reply_context_links_the_replied_message(client, caller, channel):
    received(client, channel["id"], messages_payload(text("first", wamid="wamid.A")))
    reply = text("about that", wamid="wamid.B", context={"from": CUSTOMER, "id": "wamid.A"})
    received(client, channel["id"], messages_payload(reply))
    first, second = stored(caller, "wamid.A"), stored(caller, "wamid.B")
    assert second["reply_to_id"] == first["id"]
    assert second["metadata"]["reply_to_external_id"] == "wamid.A"
    # A reply to a message the platform never saw keeps the id only.
    unknown = text("?", wamid="wamid.C", context={"from": CUSTOMER, "id": "wamid.ELSEWHERE"})
    received(client, channel["id"], messages_payload(unknown))
    third = stored(caller, "wamid.C")
    assert (third["reply_to_id"], third["metadata"]["reply_to_external_id"]) == (
        None,
        "wamid.ELSEWHERE",
    )


def test_forwarded_flags_are_kept(client, caller, channel):
    payload = messages_payload(
        text("fwd", wamid="wamid.F1", context={"forwarded": True}),
        text("viral", wamid="wamid.F2", context={"frequently_forwarded": True}),
        text("plain", wamid="wamid.F3"),
    )
    received(client, channel["id"], payload)
    assert stored(caller, "wamid.F1")["metadata"]["forwarded"] is True
    assert stored(caller, "wamid.F2")["metadata"]["frequently_forwarded"] is True
    assert "forwarded" not in stored(caller, "wamid.F3")["metadata"]
    assert stored(caller, "wamid.F1")["reply_to_id"] is None


def test_click_to_whatsapp_referral_is_kept(client, caller, channel):
    referral = {
        "source_url": "https://fb.me/3cr4Wq",
        "source_id": "120210000000000001",
        "source_type": "ad",
        "headline": "Summer sale",
        "body": "50% off",
        "media_type": "image",
        "image_url": "https://scontent.xx.fbcdn.net/ad.jpg",
        "ctwa_clid": "ARAkLkA8rmlFeiCktEJQ",
    }
    received(client, channel["id"], messages_payload(text("Is it still on?", referral=referral)))
    assert stored(caller)["metadata"]["referral"] == referral


def test_a_reaction_attaches_to_its_message_and_an_empty_one_removes_it(client, caller, channel):
    received(client, channel["id"], messages_payload(text("hi", wamid="wamid.T")))
    before = event_names(caller.workspace_id)

    def react(wamid, emoji, at):
        content = {"message_id": "wamid.T"}
        if emoji is not None:
            content["emoji"] = emoji
        item = message("reaction", content, wamid=wamid, timestamp=at)
        return received(client, channel["id"], messages_payload(item))

    assert react("wamid.R1", "👍", T0 + 10)["reactions"] == 1
    assert stored(caller, "wamid.T")["metadata"]["reaction"] == {
        "emoji": "👍",
        "external_id": "wamid.R1",
        "reacted_at": "2026-01-02T03:04:15.000000Z",
    }
    react("wamid.R2", None, T0 + 20)  # removed (Meta sends no emoji)
    assert stored(caller, "wamid.T")["metadata"]["reaction"]["emoji"] is None
    react("wamid.R1", "👍", T0 + 10)  # a late redelivery of the first: ignored
    assert stored(caller, "wamid.T")["metadata"]["reaction"]["external_id"] == "wamid.R2"
    react("wamid.R3", "❤️", T0 + 30)
    react("wamid.R4", "", T0 + 40)  # an empty emoji removes it too
    reaction = stored(caller, "wamid.T")["metadata"]["reaction"]
    assert (reaction["emoji"], reaction["external_id"]) == (None, "wamid.R4")
    # Reactions are not messages of their own, and raise no events.
    assert Message.select().count() == 1
    assert event_names(caller.workspace_id) == before
    # A reaction to a message the platform does not know is answered 200 and ignored.
    item = message("reaction", {"message_id": "wamid.NOPE", "emoji": "😀"}, wamid="wamid.R5")
    assert received(client, channel["id"], messages_payload(item))["reactions"] == 1


def test_a_number_change_moves_the_contacts_identity(client, caller, channel):
    received(client, channel["id"], messages_payload(text("hi", wamid="wamid.OLD")))
    contact = Contact.get()
    new_number = "5511955556666"
    system = {
        "body": "Customer 4444 changed their phone number to a new number",
        "wa_id": new_number,
        "type": "user_changed_number",
    }
    received(client, channel["id"], messages_payload(message("system", system, wamid="wamid.S")))
    notice = stored(caller, "wamid.S")
    assert (notice["type"], notice["sender_type"], notice["text"]) == (
        "system",
        "system",
        system["body"],
    )
    assert notice["contact_id"] == contact.id
    assert notice["metadata"]["system"] == system
    shown = data(caller.get(f"/v1/contacts/{contact.id}"))
    assert shown["phone"] == "+" + new_number
    assert [i["external_id"] for i in shown["identities"]] == [new_number]
    assert ("contact.updated", shown) in events(caller.workspace_id)
    # The new number's messages reach the same contact and conversation.
    received(
        client,
        channel["id"],
        messages_payload(text("new phone", wamid="wamid.N", sender=new_number)),
    )
    assert stored(caller, "wamid.N")["conversation_id"] == notice["conversation_id"]
    assert Contact.select().count() == 1


def test_newer_system_payloads_name_the_new_id_new_wa_id(client, caller, channel):
    received(client, channel["id"], messages_payload(text("hi", wamid="wamid.OLD")))
    system = {"body": "changed", "new_wa_id": "5511955556666", "type": "user_changed_number"}
    received(client, channel["id"], messages_payload(message("system", system, wamid="wamid.S")))
    assert Contact.get().phone == "+5511955556666"


def test_unsupported_and_unknown_types_are_placeholders_with_the_error(client, caller, channel):
    error = {
        "code": 131051,
        "title": "Message type unknown",
        "message": "Message type unknown",
        "error_data": {"details": "Message type is currently not supported."},
    }
    payload = messages_payload(
        message("unsupported", {"type": "poll"}, wamid="wamid.U", errors=[error]),
        message("unknown", None, wamid="wamid.K", errors=[error]),
        message("order", {"catalog_id": "c1", "product_items": []}, wamid="wamid.O"),
    )
    counts = received(client, channel["id"], payload)
    assert (counts["messages"], counts["failed"]) == (3, 0)
    unsupported = stored(caller, "wamid.U")
    assert (unsupported["type"], unsupported["text"]) == ("unsupported", None)
    assert unsupported["error"] == {
        "code": "131051",
        "title": "Message type unknown",
        "details": "Message type is currently not supported.",
    }
    assert unsupported["metadata"]["errors"] == [error]
    unknown = stored(caller, "wamid.K")
    assert (unknown["type"], unknown["metadata"]["network_type"]) == ("unsupported", "unknown")
    order = stored(caller, "wamid.O")
    assert (order["type"], order["metadata"]["network_type"]) == ("unsupported", "order")
    assert order["metadata"]["order"] == {"catalog_id": "c1", "product_items": []}


def test_a_malformed_item_is_logged_and_the_others_kept(client, caller, channel):
    broken = {"id": "wamid.X", "type": "text", "text": {"body": "no sender"}}
    payload = messages_payload(text("fine", wamid="wamid.OK"), broken)
    counts = received(client, channel["id"], payload)
    assert (counts["messages"], counts["notices"]) == (1, 1)
    event = ChannelEvent.get()
    assert event.kind == "malformed" and event.payload["item"] == broken


def test_a_profile_or_field_of_another_shape_is_answered_not_a_500(client, caller, channel):
    # A contact's profile that was not an object was a 500 (Meta sends it
    # again for days); a change's field that was not text failed its notice.
    for number, profile in enumerate(["Bia", 7, ["Bia"], {"name": 7}, None]):
        wamid = f"wamid.P{number}"
        payload = messages_payload(
            text("oi", wamid=wamid), contacts=[{"wa_id": CUSTOMER, "profile": profile}]
        )
        assert received(client, channel["id"], payload)["messages"] == 1
        assert stored(caller, wamid)["text"] == "oi"
    [contact] = Contact.select()
    assert contact.phone == "+" + CUSTOMER
    payload = envelope((["account_update"], {"event": "x"}), ({"a": 1}, {"event": "y"}))
    assert received(client, channel["id"], payload)["notices"] == 2
    assert [event.kind for event in ChannelEvent.select()] == ["unknown", "unknown"]
    errors = [{"code": [1], "title": {"a": 1}, "message": 2, "error_data": "not an object"}]
    payload = envelope(("messages", messages_value(errors=errors)))
    assert received(client, channel["id"], payload)["notices"] == 1  # was a 500
    error = ChannelEvent.select().order_by(ChannelEvent.id.desc()).get().payload["error"]
    assert error == {"code": "UNKNOWN", "title": "Error", "details": None}


def test_a_byte_identical_redelivery_stores_nothing_new(client, caller, channel):
    body = json.dumps(messages_payload(text(wamid="wamid.ONCE"))).encode()
    first = post(client, channel["id"], None, raw=body)
    before = event_names(caller.workspace_id)
    again = post(client, channel["id"], None, raw=body)
    assert (first.status_code, again.status_code) == (200, 200)
    assert again.get_json()["data"]["duplicates"] == 1
    assert again.get_json()["data"]["messages"] == 0
    assert Message.select().count() == 1
    assert ChannelTask.select().count() == 0
    assert event_names(caller.workspace_id) == before


def test_a_batch_of_two_entries_with_several_messages_and_a_status(client, caller, channel):
    # An outbound message the platform sent, for the status to find.
    received(client, channel["id"], messages_payload(text("hello", wamid="wamid.FIRST")))
    conversation_id = stored(caller, "wamid.FIRST")["conversation_id"]
    sent = data(
        caller.post(f"/v1/conversations/{conversation_id}/messages", json={"text": "Hi!"}), 201
    )
    Message.update(status="sent", external_id="wamid.OUT1").where(
        Message.id == sent["id"]
    ).execute()
    second = "5521977776666"
    payload = {
        "object": "whatsapp_business_account",
        "entry": [
            {
                "id": "102290129340398",
                "changes": [
                    {
                        "field": "messages",
                        "value": messages_value(
                            [text("one", wamid="wamid.1"), text("two", wamid="wamid.2")]
                        ),
                    }
                ],
            },
            {
                "id": "102290129340398",
                "changes": [
                    {
                        "field": "messages",
                        "value": messages_value(
                            [text("três", wamid="wamid.3", sender=second)],
                            statuses=[status("wamid.OUT1", "delivered", T0 + 5)],
                        ),
                    }
                ],
            },
        ],
    }
    counts = received(client, channel["id"], payload)
    assert (counts["messages"], counts["statuses"]) == (3, 1)
    assert [stored(caller, f"wamid.{n}")["text"] for n in (1, 2, 3)] == ["one", "two", "três"]
    assert stored(caller, "wamid.3")["contact_id"] != stored(caller, "wamid.1")["contact_id"]
    assert data(caller.get(f"/v1/messages/{sent['id']}"))["status"] == "delivered"
    assert Contact.select().count() == 2


def test_another_numbers_messages_are_skipped_and_logged(client, caller, channel):
    payload = envelope(
        ("messages", messages_value([text(wamid="wamid.ELSE")], number_id="999999999")),
        ("messages", messages_value([text(wamid="wamid.MINE")])),
    )
    counts = received(client, channel["id"], payload)
    assert (counts["messages"], counts["notices"]) == (1, 1)
    assert Message.select().count() == 1
    event = ChannelEvent.get()
    assert event.kind == "skipped" and "999999999" in event.payload["reason"]
    logged = data(caller.get(f"/v1/channels/{channel['id']}/events"))
    assert [entry["kind"] for entry in logged] == ["skipped"]


def test_mark_read_is_off_by_default_and_a_channel_setting(client, caller, channel):
    received(client, channel["id"], messages_payload(text(wamid="wamid.1")))
    assert ChannelTask.select().count() == 0
    changed = caller.patch(f"/v1/channels/{channel['id']}", json={"settings": {"mark_read": True}})
    assert data(changed)["settings"]["mark_read"] is True
    received(client, channel["id"], messages_payload(text(wamid="wamid.2")))
    task = ChannelTask.get()
    assert (task.kind, task.payload) == ("mark_read", {"external_id": "wamid.2"})
    bad = caller.patch(f"/v1/channels/{channel['id']}", json={"settings": {"mark_read": "yes"}})
    assert bad.status_code == 400 and "settings.mark_read" in bad.get_json()["error"]["message"]
