"""The inbox's service (services/inbox.py): the list, its counts, unread
marks and one conversation, on the app's real database; conversations and
messages are made through the intake, the API and the send job."""

import shutil
from datetime import timedelta

import pytest

from agent_platform import create_app
from agent_platform.channels import SendError, get_sender, register_sender, unregister_sender
from agent_platform.channels.fake import FakeSender
from agent_platform.db import database
from agent_platform.errors import NotFound, ValidationError
from agent_platform.migrate import apply_migrations, migration_files
from agent_platform.models import Channel, Clarification, Contact, Conversation, Message
from agent_platform.models.base import utcnow
from agent_platform.services import conversations, inbox, keys, messages, receipts, sending
from conftest import OFFLINE, ON_POSTGRESQL, new_postgres_database
from conversations_helpers import WA_SETTINGS, inbound, make_agent, make_channel

T0 = utcnow() - timedelta(days=1)


def at(minutes):
    return T0 + timedelta(minutes=minutes)


@pytest.fixture
def desk(caller):
    """An agent and two WhatsApp channels of the caller's workspace."""
    agent_id = make_agent(caller, "Ana")
    other_agent = make_agent(caller, "Beto")
    main = make_channel(caller, "Sales", settings=WA_SETTINGS, agent_id=agent_id)
    second = {**WA_SETTINGS, "phone_number_id": "2222", "display_phone_number": "+5511900000000"}
    support = make_channel(caller, "Support", settings=second, agent_id=other_agent)
    return {
        "ws": caller.workspace_id,
        "agent": agent_id,
        "other_agent": other_agent,
        "main": main["id"],
        "support": support["id"],
    }


def customer(channel_id, who, text, minute, name=None):
    """A message from customer `who` through the intake; its conversation id."""
    result = inbound(
        channel_id,
        f"wamid.{who}.{minute}",
        sender_id=who,
        text=text,
        sender_name=name,
        now=at(minute),
    )
    return result.message.conversation_id


def ids(page):
    return [row["id"] for row in page["items"]]


def test_waiting_for_a_human_come_first_then_newest_activity(desk):
    old, new, waiting = (customer(desk["main"], f"55119{n}", "Oi", n) for n in (1, 2, 3))
    conversations.transition(desk["ws"], waiting, "handoff", now=at(4))
    customer(desk["main"], "551191", "Ainda aí?", 5)  # `old` moves up
    page = inbox.inbox_list(desk["ws"], "u1")
    assert ids(page) == [waiting, old, new]
    first = page["items"][0]
    assert first["needs_human"] and first["state"] == "handoff"
    assert first["channel"] == {"id": desk["main"], "name": "Sales", "type": "whatsapp"}
    assert first["agent"] == {"id": desk["agent"], "name": "Ana"}
    assert page["items"][1]["last_message"] == {
        "preview": "Ainda aí?",
        "type": "text",
        "deleted": False,
        "author": "customer",
        "author_user_id": None,
    }
    assert page["next_cursor"] is None


def test_each_state_filter_and_the_counts(desk):
    ws = desk["ws"]
    agent_held = customer(desk["main"], "551190", "a", 1)
    waiting = customer(desk["main"], "551191", "b", 2)
    mine = customer(desk["support"], "551192", "c", 3)
    closed = customer(desk["support"], "551193", "d", 4)
    conversations.transition(ws, waiting, "handoff", now=at(5))
    conversations.assign(ws, mine, "u1", now=at(6))
    conversations.transition(ws, closed, "close", now=at(7))
    assert ids(inbox.inbox_list(ws, "u1", state="needs_human")) == [waiting]
    assert ids(inbox.inbox_list(ws, "u1", state="agent")) == [mine, agent_held]
    assert ids(inbox.inbox_list(ws, "u1", state="mine")) == [mine]
    assert ids(inbox.inbox_list(ws, "u2", state="mine")) == []
    assert ids(inbox.inbox_list(ws, "u1", state="closed")) == [closed]
    assert ids(inbox.inbox_list(ws, "u1", channel_id=desk["support"])) == [closed, mine]
    assert ids(inbox.inbox_list(ws, "u1", agent_id=desk["agent"])) == [waiting, agent_held]
    assert inbox.inbox_counts(ws, "u1") == {
        "needs_human": 1,
        "agent": 2,
        "mine": 1,
        "closed": 1,
        "unread": 2,  # the waiting one and u1's, not the agent's
    }
    with pytest.raises(ValidationError, match="state"):
        inbox.inbox_list(ws, "u1", state="everything")


@pytest.fixture(params=["collecting", "walking"])
def search_way(request, monkeypatch):
    """A search collects the conversations its words are in, or (words in
    many messages) walks the list testing each: both ways, whatever the count."""
    if request.param == "walking":
        monkeypatch.setattr(inbox, "COMMON_HITS", 1)
    return request.param


def test_search_by_contact_name_and_message_text(desk, search_way):
    ws = desk["ws"]
    zoe = customer(desk["main"], "551190", "Bom dia", 1, name="Zoë Ávila")
    price = customer(desk["main"], "551191", "Qual o preço da promoção?", 2, name="Rui")
    customer(desk["main"], "551192", "Obrigado", 3, name="Caio")

    def found(words, **filters):
        return ids(inbox.inbox_list(ws, "u1", search=words, **filters))

    assert found("Zoë") == [zoe]
    assert found("avila") == []  # names match as written (LIKE), words of text fold
    assert found("PRECO") == [price]  # diacritics and case folded
    assert found("promo") == [price]  # the last word is a prefix
    assert found("preço qual") == [price]
    assert found("preço bom") == []
    assert found("preço", state="closed") == []
    assert found("100%") == []  # what a person types is never syntax
    assert found('"') == ids(inbox.inbox_list(ws, "u1"))  # no word: no search


def test_pages_by_cursor_have_no_duplicates_or_gaps_while_messages_arrive(desk):
    ws = desk["ws"]
    senders = [f"5511{n:05}" for n in range(25)]
    made = [customer(desk["main"], sender, "Oi", n) for n, sender in enumerate(senders)]
    sender_of = dict(zip(made, senders, strict=True))
    for n in (3, 11):
        conversations.transition(ws, made[n], "handoff", now=at(100 + n))
    seen, cursor, minute = [], None, 200
    while True:
        page = inbox.inbox_list(ws, "u1", cursor=cursor, limit=4)
        seen += ids(page)
        # Meanwhile one seen and one not yet seen conversation get a message.
        for touched in (seen[0], made[len(seen) % 25]):
            customer(desk["main"], sender_of[touched], "+1", minute)
            minute += 1
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert len(seen) == len(set(seen))
    touched_ahead = set(made) - set(seen)
    assert all(_last_message_at(c) >= at(200) for c in touched_ahead)  # moved above the cursor
    assert seen[:2] == [made[11], made[3]]


def _contact(conversation_id):
    return Conversation.get_by_id(conversation_id).contact_id


def _last_message_at(conversation_id):
    return Conversation.get_by_id(conversation_id).last_message_at


def test_a_foreign_or_broken_cursor_is_refused(desk):
    for n in range(3):
        customer(desk["main"], f"55119{n}", "Oi", n)
    of_all = inbox.inbox_list(desk["ws"], "u1", limit=1)["next_cursor"]
    with pytest.raises(ValidationError, match="cursor"):
        inbox.inbox_list(desk["ws"], "u1", state="closed", cursor=of_all)
    for cursor in ("not-base64!", "W10", "WyJ4IiwgMSwgMl0", "WzUsICJ4IiwgInkiXQ"):
        with pytest.raises(ValidationError, match="cursor"):
            inbox.inbox_list(desk["ws"], "u1", cursor=cursor)
    with pytest.raises(ValidationError, match="limit"):
        inbox.inbox_list(desk["ws"], "u1", limit=0)


def test_unread_counts_customer_messages_after_the_users_mark(desk):
    ws = desk["ws"]
    conversation = customer(desk["main"], "551190", "1", 1)
    customer(desk["main"], "551190", "2", 2)
    row = inbox.inbox_list(ws, "u1")["items"][0]
    assert (row["unread"], row["unread_count"]) == (True, 2)
    # The count leaves out what the agent handles: nobody reads all of it.
    assert inbox.inbox_counts(ws, "u1")["unread"] == 0
    conversations.transition(ws, conversation, "handoff", now=at(3))
    assert inbox.inbox_counts(ws, "u1")["unread"] == 1
    inbox.mark_read(ws, "u1", conversation)
    row = inbox.inbox_list(ws, "u1")["items"][0]
    assert (row["unread"], row["unread_count"]) == (False, 0)
    assert inbox.inbox_counts(ws, "u1")["unread"] == 0
    assert inbox.inbox_counts(ws, "u2")["unread"] == 1  # marks are each user's
    customer(desk["main"], "551190", "3", 4)
    assert inbox.inbox_list(ws, "u1")["items"][0]["unread_count"] == 1
    assert inbox.inbox_counts(ws, "u1")["unread"] == 1


def test_the_unread_count_takes_in_what_is_assigned_to_the_user(desk):
    ws = desk["ws"]
    theirs = customer(desk["main"], "551190", "1", 1)
    customer(desk["main"], "551191", "2", 2)  # the agent's, nobody's
    conversations.assign(ws, theirs, "u1", now=at(3))
    assert inbox.inbox_counts(ws, "u1")["unread"] == 1
    assert inbox.inbox_counts(ws, "u2")["unread"] == 0
    conversations.transition(ws, theirs, "handoff", now=at(4))  # waiting: everyone's
    assert inbox.inbox_counts(ws, "u2")["unread"] == 1
    assert inbox.inbox_counts(ws, "u1")["unread"] == 1  # counted once


@pytest.fixture
def fake():
    real = get_sender("whatsapp")
    sender = FakeSender()
    register_sender("whatsapp", sender)
    yield sender
    unregister_sender("whatsapp")
    if real is not None:
        register_sender("whatsapp", real)


def test_the_view_shows_authors_delivery_media_clarification_and_contact(app, caller, desk, fake):
    ws = desk["ws"]
    served = app.config["SERVER_PUBLIC_URL"].rstrip("/")
    photo = f"{served}/media/{'A' * 32}.jpg"
    conversation_id = customer(desk["main"], "551190", "Olá", 1, name="Bia")
    channel = Channel.get_by_id(desk["main"])
    _photo_from_customer(channel, photo)
    conversations.transition(ws, conversation_id, "handoff", now=at(3))
    human, _ = messages.post_message(
        ws,
        conversation_id,
        {"sender_type": "human", "text": "Sou a Carla"},
        now=at(4),
        author_user_id="u-carla",
    )
    sending.send_queued(now=at(4))
    receipts.apply_status(channel, fake.sent[-1][2], "delivered", now=at(5))
    fake.fail_next(SendError("131047", "Re-engagement message", {"window": "24h"}))
    failed, _ = messages.post_message(
        ws, conversation_id, {"sender_type": "human", "text": "Oi?"}, now=at(6)
    )
    sending.send_queued(now=at(6))
    conversations.transition(ws, conversation_id, "complete_handoff", now=at(7))
    question = _clarification(ws, conversation_id, desk["agent"])
    field = caller.post("/v1/custom-fields", json={"name": "Plano", "field_type": "text"})
    contact_id = _contact(conversation_id)
    changed = caller.patch(
        f"/v1/contacts/{contact_id}",
        json={"phone": "+5511990001111", "custom_fields": {"Plano": "Ouro"}},
    )
    assert changed.status_code == 200, changed.get_data(as_text=True)
    assert caller.post("/v1/leads", json={"contact_id": contact_id}).status_code == 201
    start = (utcnow() + timedelta(days=2)).replace(hour=10, minute=0, second=0, microsecond=0)
    booked = caller.post(
        "/v1/appointments",
        json={
            "contact_id": contact_id,
            "title": "Visita",
            "agent_id": None,
            "start_at": start.isoformat() + "Z",
            "end_at": (start + timedelta(hours=1)).isoformat() + "Z",
        },
    )
    assert booked.status_code == 201, booked.get_data(as_text=True)

    view = inbox.conversation_view(ws, "u1", conversation_id)
    shown = {m["id"]: m for m in view["messages"]}
    assert [m["author"]["kind"] for m in view["messages"]] == [
        "customer",
        "customer",
        "person",
        "person",
        "agent",
    ]
    assert shown[human.id]["author"] == {"kind": "person", "user_id": "u-carla"}
    assert shown[human.id]["delivery"]["status"] == "delivered"
    assert shown[failed.id]["author"] == {"kind": "person", "user_id": None}
    assert shown[failed.id]["delivery"]["status"] == "failed"
    assert shown[failed.id]["delivery"]["reason"] == "Re-engagement message"
    assert shown[failed.id]["delivery"]["error_code"] == "131047"
    assert view["messages"][1]["media"] == {
        "kind": "image",
        "mime_type": "image/jpeg",
        "file_name": "foto.jpg",
        "size": 2048,
        "url": photo,
        "path": "/media/" + "A" * 32 + ".jpg",
    }
    assert shown[question]["clarification"] == {
        "status": "chosen",
        "options": ["Planos", "Preços"],
        "choice": "Preços",
        "reply_message_id": None,
    }
    assert view["conversation"]["state"] == "open" and view["conversation"]["held_by"] == "agent"
    panel = view["contact"]
    assert (panel["name"], panel["phone"]) == ("Bia", "+5511990001111")
    assert panel["handles"][0]["external_id"] == "551190"
    assert panel["custom_fields"] == [
        {"id": field.get_json()["data"]["id"], "label": "Plano", "type": "text", "value": "Ouro"}
    ]
    assert panel["lead"]["status"] == "new" and panel["lead"]["score"] == 0
    assert [a["title"] for a in panel["appointments"]["upcoming"]] == ["Visita"]
    assert panel["appointments"]["past"] == []
    later = inbox.conversation_view(ws, "u1", conversation_id, now=start + timedelta(hours=2))
    assert [a["title"] for a in later["contact"]["appointments"]["past"]] == ["Visita"]


def _photo_from_customer(channel, url):
    inbound(
        channel.id,
        "wamid.photo",
        sender_id="551190",
        text=None,
        type="image",
        media_url=url,
        media_mime_type="image/jpeg",
        now=at(2),
        metadata={"filename": "foto.jpg", "media": {"size": 2048}},
    )


def _clarification(ws, conversation_id, agent_id):
    """The agent asked which of two trainings was meant; the customer chose the second."""
    conversation = Conversation.get_by_id(conversation_id)
    question = messages.queue_text(conversation, "agent", "Sobre o quê?", {}, at(8))
    Clarification.create(
        workspace=ws,
        conversation=conversation_id,
        agent_id=agent_id,
        message_id=question.id,
        asked_about_id=question.id,
        status="chosen",
        chosen_training_id="t2",
        choices=[
            {"training_id": "t1", "label": "Planos"},
            {"training_id": "t2", "label": "Preços"},
        ],
        expires_at=at(60),
        created_at=at(8),
        updated_at=at(8),
    )
    return question.id


def test_the_view_pages_back_through_the_thread(desk):
    conversation_id = next(customer(desk["main"], "551190", f"m{n}", n) for n in range(1))
    for n in range(1, 7):
        customer(desk["main"], "551190", f"m{n}", n)
    newest = inbox.conversation_view(desk["ws"], "u1", conversation_id, limit=4)
    assert [m["text"] for m in newest["messages"]] == ["m3", "m4", "m5", "m6"]
    older = inbox.conversation_view(
        desk["ws"], "u1", conversation_id, before=newest["older_cursor"], limit=4
    )
    assert [m["text"] for m in older["messages"]] == ["m0", "m1", "m2"]
    assert older["older_cursor"] is None
    with pytest.raises(ValidationError, match="before"):
        inbox.conversation_view(desk["ws"], "u1", conversation_id, before="nope")


def test_another_workspace_sees_nothing(desk, other):
    conversation_id = customer(desk["main"], "551190", "segredo", 1)
    inbox.mark_read(desk["ws"], "u1", conversation_id)
    for call in (
        lambda: inbox.conversation_view(other.workspace_id, "u1", conversation_id),
        lambda: inbox.mark_read(other.workspace_id, "u1", conversation_id),
    ):
        with pytest.raises(NotFound) as refused:
            call()
        assert refused.value.code == "CONVERSATION_NOT_FOUND"
    assert inbox.inbox_list(other.workspace_id, "u1")["items"] == []
    assert inbox.inbox_list(other.workspace_id, "u1", search="segredo")["items"] == []
    assert set(inbox.inbox_counts(other.workspace_id, "u1").values()) == {0}


def test_the_migration_indexes_the_messages_already_stored(tmp_path, request):
    before = tmp_path / "before"
    before.mkdir()
    for path in migration_files():
        if not path.name.startswith("0021_"):
            shutil.copy(path, before / path.name)
    if ON_POSTGRESQL:
        server = request.getfixturevalue("postgres_server")
        storage = {"DATABASE_URL": new_postgres_database(server)}
    else:
        storage = {"DATABASE_PATH": str(tmp_path / "old.db")}
    app = create_app({**OFFLINE, **storage})
    try:
        with app.app_context():
            apply_migrations(before)
            ws = keys.create_workspace("Old").id
            conversation_id = _stored_before_0021(ws)
            assert apply_migrations() == [p.name for p in migration_files() if "0021_" in p.name]
            assert ids(inbox.inbox_list(ws, "u1", search="orçamento")) == [conversation_id]
            row = inbox.inbox_list(ws, "u1")["items"][0]
            assert row["unread_count"] == 1
            conversation = Conversation.get_by_id(conversation_id)
            messages.queue_text(conversation, "agent", "Segue a proposta", {}, at(5))
            assert ids(inbox.inbox_list(ws, "u1", search="proposta")) == [conversation_id]
    finally:
        database.close()
        database.close_all()


def _stored_before_0021(ws):
    """A contact, conversation and message written as the schema before 0021
    holds them (peewee inserts only the columns given a value)."""
    channel = Channel.create(workspace=ws, name="WA", type="whatsapp", settings={})
    contact = Contact.create(workspace=ws, name="Old")
    conversation = Conversation.create(
        workspace=ws, contact=contact.id, channel=channel.id, created_at=at(1), updated_at=at(1)
    )
    Message.insert(
        id="0190d0c0-0000-7000-8000-000000000001",
        conversation=conversation.id,
        direction="inbound",
        sender_type="contact",
        type="text",
        status="received",
        text="Preciso de um orçamento",
        metadata={},
        edit_history=[],
        send_attempts=0,
        created_at=at(1),
        updated_at=at(1),
    ).execute()
    return conversation.id


def test_a_search_pages_by_cursor_in_the_lists_order(desk, search_way):
    ws = desk["ws"]
    made = [customer(desk["main"], f"55119{n}", f"pedido número {n}", n) for n in range(5)]
    customer(desk["main"], "5511988", "outra coisa", 9)
    conversations.transition(ws, made[1], "handoff", now=at(10))
    conversations.transition(ws, made[3], "close", now=at(11))
    seen, cursor = [], None
    while True:
        page = inbox.inbox_list(ws, "u1", search="pedido", cursor=cursor, limit=2)
        seen += ids(page)
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == [made[1], made[3], made[4], made[2], made[0]]


def test_the_search_index_follows_edits_deletes_and_erasure(caller, desk, fake):
    ws = desk["ws"]
    conversation_id = customer(desk["main"], "551190", "Oi", 1, name="Dora")
    conversations.assign(ws, conversation_id, "u1", now=at(2))
    sent, _ = messages.post_message(
        ws, conversation_id, {"sender_type": "human", "text": "boleto vence hoje"}, now=at(3)
    )
    messages.edit_message(ws, sent.id, {"text": "pix vence hoje"}, now=at(4))

    def found(words):
        return ids(inbox.inbox_list(ws, "u1", search=words))

    assert (found("boleto"), found("pix")) == ([], [conversation_id])
    messages.delete_message(ws, sent.id, now=at(5))
    assert found("pix") == []
    customer(desk["main"], "551190", "cancelamento", 6)
    contact_id = _contact(conversation_id)
    assert caller.delete(f"/v1/contacts/{contact_id}").status_code == 204
    assert found("cancelamento") == []
    # FTS5's own check; on PostgreSQL: no row of the index without its message.
    if ON_POSTGRESQL:
        orphans = database.execute_sql(
            'SELECT count(*) FROM "message_fts" AS f LEFT JOIN "message" AS m'
            ' ON m."search_rowid" = f."search_rowid" WHERE m IS NULL'
        )
        assert orphans.fetchone()[0] == 0
    else:
        database.execute_sql("INSERT INTO message_fts (message_fts) VALUES ('integrity-check')")
