"""The inbox's pages through HTTP (Flask test client, signed in with a
cookie as a browser is): the list's order, filters, search, cursor and
counts; bad parameters refused on the page; a conversation with its
authors, delivery states, media, the agent's question and the contact;
marking read; the regions a live refresh asks for; a customer's markup
shown as text; and nothing of another workspace, on a page or the stream."""

import base64
import html
import re
from datetime import timedelta

import pytest

import test_inbox_service
from agent_platform.channels import SendError
from agent_platform.models import Channel, Clarification, Conversation
from agent_platform.models.base import utcnow
from agent_platform.services import (
    appointments,
    conversations,
    inbox,
    messages,
    receipts,
    sending,
)
from test_inbox_service import _clarification, _photo_from_customer, at, customer
from web_helpers import make_user, sign_in, text

# The service's tests' fixtures: a desk (agents, two WhatsApp channels) and a fake sender.
desk, fake = test_inbox_service.desk, test_inbox_service.fake

PART = "X-Inbox-Part"


@pytest.fixture
def ana(client, caller):
    """Ana, an admin of the caller's workspace, signed in on `client`."""
    made = make_user(caller.workspace_id)
    assert sign_in(client).status_code == 303
    return made


def rows(page):
    """The conversation ids of a list page, in their order."""
    return re.findall(r'href="/app/conversations/([0-9a-f-]+)', text(page))


def shown(page):
    assert page.status_code == 200, text(page)
    return text(page)


def test_the_list_shows_waiting_first_with_counts_and_each_rows_facts(client, desk, ana):
    old, new, waiting = (
        customer(desk["main"], f"55119{n}", "Oi", n, name=f"C{n}") for n in (1, 2, 3)
    )
    conversations.transition(desk["ws"], waiting, "handoff", now=at(4))
    customer(desk["main"], "551191", "Ainda aí?", 5)
    page = client.get("/app")
    assert rows(page) == [waiting, old, new]
    body = shown(page)
    assert "Needs a human" in body and "1 waiting for a human" in body
    assert re.search(r'Needs a human <span class="count">1</span>', body)
    assert re.search(r'Handled by the agent <span class="count">2</span>', body)
    assert "Customer:</span> Ainda aí?" in body
    assert "Sales · whatsapp" in body and '<span class="agent">Ana</span>' in body
    assert body.count('class="row unread') == 3 and 'class="unread-count">2<' in body
    assert body.count("<time") == 3
    assert 'src="/app/static/inbox.js"' in body


def test_filters_search_and_the_older_link(client, desk, ana, monkeypatch):
    ws = desk["ws"]
    first = customer(desk["main"], "551190", "Qual o preço?", 1, name="Rui")
    second = customer(desk["support"], "551191", "Bom dia", 2, name="Zoë")
    third = customer(desk["support"], "551192", "Olá", 3, name="Caio")
    conversations.transition(ws, third, "close", now=at(4))
    assert rows(client.get("/app?state=closed")) == [third]
    assert rows(client.get("/app?state=agent")) == [second, first]
    assert rows(client.get(f"/app?channel={desk['support']}")) == [third, second]
    assert rows(client.get(f"/app?agent={desk['agent']}")) == [first]
    assert rows(client.get("/app?q=preco")) == [first]
    assert rows(client.get("/app?q=Zoë")) == [second]
    assert "No conversation matches “nada”." in shown(client.get("/app?q=nada"))
    conversations.assign(ws, second, ana["id"], now=at(5))
    mine = client.get("/app?state=mine")
    assert rows(mine) == [second] and "→ Ana" in text(mine)
    # Pages of one, by the "older" link (the filters kept in it).
    monkeypatch.setattr("agent_platform.web.inbox.LIST_PAGE", 1)
    page, seen = client.get("/app?state=agent"), []
    while True:
        seen += rows(page)
        older = re.search(r'href="([^"]+)" rel="next"', text(page))
        if not older:
            break
        assert "state=agent" in older.group(1)
        page = client.get(html.unescape(older.group(1)))
    assert seen == [second, first]


def cursor_of(document):
    return base64.urlsafe_b64encode(document).decode().rstrip("=")


@pytest.mark.parametrize(
    "query, named",
    [
        ("state=everything", "state"),
        ("channel=nope", "channel"),
        ("agent=0b6f3b1e-0000-4000-8000-000000000000", "agent"),
        ("cursor=%%%", "cursor"),
        # A cursor nested thousands deep, or naming a lone surrogate, was a 500.
        ("cursor=" + cursor_of(b"[" * 2000 + b"]" * 2000), "cursor"),
        ("cursor=" + cursor_of(b'[0, "2026-01-01T00:00:00", "\\ud800"]'), "cursor"),
        ("q=" + "x" * 201, "q"),
    ],
)
def test_a_bad_parameter_is_a_400_page_naming_it(client, desk, ana, query, named):
    page = client.get("/app?" + query)
    assert page.status_code == 400
    assert page.mimetype == "text/html"
    assert re.search(rf'<p role="alert">{named}: ', text(page)), text(page)


def test_another_workspaces_channel_is_not_a_filter(client, desk, ana, other):
    settings = {"allowed_origins": ["https://x.example"]}
    body = {"name": "Theirs", "type": "website", "settings": settings}
    theirs = other.post("/v1/channels", json=body)
    assert theirs.status_code == 201, text(theirs)
    assert client.get(f"/app?channel={theirs.get_json()['data']['id']}").status_code == 400


def test_a_conversation_shows_authors_delivery_media_question_and_contact(
    app, client, caller, desk, fake, ana
):
    ws = desk["ws"]
    photo = f"{app.config['SERVER_PUBLIC_URL'].rstrip('/')}/media/{'A' * 32}.jpg"
    conversation_id = customer(desk["main"], "551190", "Olá", 1, name="Bia")
    channel = Channel.get_by_id(desk["main"])
    _photo_from_customer(channel, photo)
    conversations.transition(ws, conversation_id, "handoff", now=at(3))
    messages.post_message(ws, conversation_id, {"sender_type": "human", "text": "Sou a Ana"},
                          now=at(4), author_user_id=ana["id"])  # fmt: skip
    sending.send_queued(now=at(4))
    receipts.apply_status(channel, fake.sent[-1][2], "delivered", now=at(5))
    fake.fail_next(SendError("131047", "Re-engagement message", {"window": "24h"}))
    messages.post_message(ws, conversation_id, {"sender_type": "human", "text": "Oi?"}, now=at(6))
    sending.send_queued(now=at(6))
    conversations.transition(ws, conversation_id, "complete_handoff", now=at(7))
    _clarification(ws, conversation_id, desk["agent"])
    caller.post("/v1/custom-fields", json={"name": "Plano", "field_type": "text"})
    contact_id = inbox.conversation_view(ws, "u", conversation_id)["contact"]["id"]
    values = {"phone": "+5511990001111", "custom_fields": {"Plano": "Ouro"}}
    changed = caller.patch(f"/v1/contacts/{contact_id}", json=values)
    assert changed.status_code == 200
    assert caller.post("/v1/leads", json={"contact_id": contact_id}).status_code == 201

    body = shown(client.get(f"/app/conversations/{conversation_id}"))
    authors = re.findall(r'<span class="msg-author">(.*?) <span class="role">(\w+)', body)
    assert authors == [("Bia", "customer"), ("Bia", "customer"), ("Ana", "team"),
                       ("A person of the team", "team"), ("Ana", "agent")]  # fmt: skip
    assert "Delivered" in body
    assert "Not delivered: Re-engagement message (code 131047)" in body
    assert f'<img src="/media/{"A" * 32}.jpg" alt="foto.jpg"' in body
    assert "The customer chose “Preços”." in body
    assert '<li class="chosen">Preços <strong>(chosen)</strong></li>' in body
    assert "<dt>Phone</dt><dd>+5511990001111</dd>" in body
    assert "<dt>Plano</dt><dd>Ouro</dd>" in body
    assert "<dt>Lead</dt><dd>new, score 0</dd>" in body
    assert "Sales (whatsapp)" in body
    assert 'id="actions-region"' in body  # where the actions' partial goes
    assert 'aria-current="page"' in body  # the conversation marked in the list beside


def test_media_of_another_site_is_never_loaded(client, desk, ana):
    conversation_id = customer(desk["main"], "551190", "Olá", 1)
    channel = Channel.get_by_id(desk["main"])
    _photo_from_customer(channel, "https://evil.example/track.jpg")
    body = shown(client.get(f"/app/conversations/{conversation_id}"))
    assert "evil.example" not in body
    assert "Image not stored by this service." in body


def test_audio_and_files_are_played_and_linked(app, client, desk, ana):
    served = app.config["SERVER_PUBLIC_URL"].rstrip("/")
    conversation_id = customer(desk["main"], "551190", "Olá", 1)
    for kind, name, mime in (("audio", "B" * 32 + ".ogg", "audio/ogg"),
                             ("document", "C" * 32 + ".pdf", "application/pdf")):  # fmt: skip
        customer_media(desk["main"], kind, f"{served}/media/{name}", mime)
    body = shown(client.get(f"/app/conversations/{conversation_id}"))
    assert f'<audio controls preload="metadata" src="/media/{"B" * 32}.ogg"' in body
    assert f'<a href="/media/{"C" * 32}.pdf" download>nota.pdf</a>' in body


def customer_media(channel_id, kind, url, mime):
    from conversations_helpers import inbound

    inbound(channel_id, f"wamid.{kind}", sender_id="551190", text=None, type=kind,
            media_url=url, media_mime_type=mime, now=at(2),
            metadata={"filename": "nota.pdf" if kind == "document" else None})  # fmt: skip


def test_opening_a_conversation_marks_it_read(client, desk, ana):
    conversation_id = customer(desk["main"], "551190", "Oi", 1)
    assert 'class="unread-count">1<' in shown(client.get("/app"))
    shown(client.get(f"/app/conversations/{conversation_id}"))
    body = shown(client.get("/app"))
    assert "unread-count" not in body and "0 unread of those and yours" in body


def test_the_thread_pages_back_with_before(client, desk, ana, monkeypatch):
    monkeypatch.setattr("agent_platform.web.inbox.THREAD_PAGE", 2)
    conversation_id = customer(desk["main"], "551190", "m0", 0)
    for n in range(1, 4):
        customer(desk["main"], "551190", f"m{n}", n)
    newest = shown(client.get(f"/app/conversations/{conversation_id}"))
    assert re.findall(r'<p class="msg-text">(m\d)</p>', newest) == ["m2", "m3"]
    older = re.search(r'href="([^"]+)" rel="prev">Older messages', newest).group(1)
    body = shown(client.get(html.unescape(older)))
    assert re.findall(r'<p class="msg-text">(m\d)</p>', body) == ["m0", "m1"]
    assert client.get(f"/app/conversations/{conversation_id}?before=nope").status_code == 400


def test_a_customers_markup_is_shown_as_text(client, desk, ana):
    attack = "<script>alert(1)</script> <img src=x onerror=alert(2)>"
    conversation_id = customer(desk["main"], "551190", attack, 1, name="<b>Eve</b>")
    for path in ("/app", f"/app/conversations/{conversation_id}", "/app?q=script"):
        body = shown(client.get(path))
        assert "<script>alert" not in body and "<img src=x" not in body and "<b>Eve" not in body
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in body
        assert "&lt;b&gt;Eve&lt;/b&gt;" in body


def test_the_regions_a_live_refresh_asks_for(client, desk, ana):
    conversation_id = customer(desk["main"], "551190", "Oi", 1)
    listed = client.get("/app", headers={PART: "list"})
    body = shown(listed)
    assert listed.headers["Vary"] == PART
    assert 'id="list-region"' in body and 'id="tabs-region"' in body
    assert 'class="top"' not in body and "<form" not in body  # neither header nor filters
    path = f"/app/conversations/{conversation_id}"
    thread = shown(client.get(path, headers={PART: "thread"}))
    assert 'id="thread-region"' in thread and 'id="contact-region"' in thread
    assert 'id="actions-region"' in thread and 'id="list-region"' not in thread
    both = shown(client.get(path, headers={PART: "list, thread"}))
    assert 'id="list-region"' in both and 'id="thread-region"' in both
    for asked, where in (("thread", "/app"), ("everything", path), ("", path)):
        refused = client.get(where, headers={PART: asked})
        assert refused.status_code == 400 and "X-Inbox-Part" in text(refused)


def test_signed_out_is_sent_to_sign_in(client, desk):
    conversation_id = customer(desk["main"], "551190", "Oi", 1)
    for path in ("/app", f"/app/conversations/{conversation_id}", "/app/events"):
        response = client.get(path)
        assert response.status_code == 302
        assert response.headers["Location"].startswith("/app/sign-in?next=")


def test_another_workspaces_conversation_is_not_found_nor_listed(client, desk, ana, other):
    theirs = other.post("/v1/agents", json={"name": "Theirs"})
    assert theirs.status_code == 201
    mine = customer(desk["main"], "551190", "segredo", 1)
    make_user(other.workspace_id, email="bo@example.com", name="Bo")
    client.post("/app/sign-out", data={"csrf_token": _token(client)})
    assert sign_in(client, email="bo@example.com").status_code == 303
    body = shown(client.get("/app"))
    assert rows(client.get("/app")) == [] and "segredo" not in body
    assert rows(client.get("/app?q=segredo")) == []
    refused = client.get(f"/app/conversations/{mine}")
    assert refused.status_code == 404 and "segredo" not in text(refused)
    assert client.get(f"/app/events?conversation={mine}").status_code == 404


def _token(client):
    return re.search(r'name="csrf_token" value="([^"]+)"', text(client.get("/app"))).group(1)


def test_the_list_beside_an_opened_conversation_shows_it_read(client, desk, ana):
    conversation_id = customer(desk["main"], "551190", "Oi", 1)
    body = shown(client.get(f"/app/conversations/{conversation_id}"))
    assert "unread-count" not in body


def test_the_page_shows_read_the_contacts_e_mail_appointments_and_every_choice(
    client, caller, desk, fake, ana
):
    """What the first conversation test leaves out: the Read state, an e-mail
    address, the contact's upcoming and past appointments on the page, and
    a question the customer answered with none of the options or not in time."""
    ws = desk["ws"]
    conversation_id = customer(desk["main"], "551190", "Olá", 1, name="Bia")
    channel = Channel.get_by_id(desk["main"])
    messages.post_message(ws, conversation_id, {"sender_type": "agent", "text": "Oi!"}, now=at(2))
    sending.send_queued(now=at(2))
    receipts.apply_status(channel, fake.sent[-1][2], "read", now=at(3))
    _question(ws, conversation_id, desk["agent"], "none", minute=4, expires=60)
    _question(ws, conversation_id, desk["agent"], "pending", minute=5, expires=6)
    contact_id = inbox.conversation_view(ws, "u", conversation_id)["contact"]["id"]
    changed = caller.patch(f"/v1/contacts/{contact_id}", json={"email": "bia@example.com"})
    assert changed.status_code == 200, text(changed)
    soon = (utcnow() + timedelta(days=2)).replace(microsecond=0)
    for title, start, now in (("Visita", soon, None), ("Primeira visita", at(30), at(10))):
        period = {"start_at": start, "end_at": start + timedelta(hours=1)}
        appointments.create_appointment(ws, {"contact_id": contact_id, "title": title, **period},
                                        now=now)  # fmt: skip

    body = shown(client.get(f"/app/conversations/{conversation_id}"))
    assert re.findall(r'<p class="delivery delivery-(\w+)">\s*(\w+)', body) == [
        ("read", "Read"), ("queued", "Queued"), ("queued", "Queued")]  # fmt: skip
    assert "<dt>E-mail</dt><dd>bia@example.com</dd>" in body
    appointments_shown = re.search(r'<ul class="appointments">(.*?)</ul>', body, re.S).group(1)
    listed = re.findall(r"</time> ([^<]+) <span", appointments_shown)
    assert listed == ["Visita", "Primeira visita"]
    assert appointments_shown.count("(past)") == 1
    assert "The customer chose none of these." in body
    assert "The customer did not choose in time." in body


def _question(ws, conversation_id, agent_id, status, minute, expires):
    conversation = Conversation.get_by_id(conversation_id)
    question = messages.queue_text(conversation, "agent", "Sobre o quê?", {}, at(minute))
    choices = [{"training_id": "t1", "label": "Planos"}, {"training_id": "t2", "label": "Preços"}]
    Clarification.create(workspace=ws, conversation=conversation_id, agent_id=agent_id,
                         message_id=question.id, asked_about_id=question.id, status=status,
                         choices=choices, expires_at=at(expires), created_at=at(minute),
                         updated_at=at(minute))  # fmt: skip
