"""The conversation page's actions through HTTP, as a browser sends them
(forms with the CSRF token, the session cookie, 303 back to the page), and
as a script's fetch (JSON): take over, reply (WhatsApp through the Graph API
stand-in), the 24-hour window and its templates, hand back (the agent
answers again, through the real reply job), assign, transfer, close and
reopen; refusals in words; CSRF, isolation and roles. The action area
(`_actions.html`) is rendered with Flask's render_template from a real
conversation_view."""

from datetime import timedelta

import pytest
from flask import render_template

from agent_platform.events import delivery
from agent_platform.models import Conversation, Message
from agent_platform.models.base import utcnow
from agent_platform.services import inbox, replies, sending
from conftest import assert_error
from conversations_helpers import WA_SETTINGS, data, event_names, inbound, make_channel
from web_helpers import SESSION_COOKIE, make_user, page_token, sign_in, text
from webhooks_helpers import Receiver, register
from whatsapp_helpers import TEMPLATE_SENT, messages_payload, post
from whatsapp_helpers import text as whatsapp_text

CUSTOMER = "5511933334444"
QUESTION, ANSWER = "Quanto custa a entrega?", "A entrega custa R$ 5 em São Paulo."
NOTICE_COOKIE = "agent_platform_notice"


@pytest.fixture
def settings(tmp_path, graph):
    return {
        "DATABASE_PATH": str(tmp_path / "test.db"),
        "WHATSAPP_GRAPH_API_BASE": graph.base,
        "WHATSAPP_TIMEOUT_SECONDS": 2,
        "WHATSAPP_CHECK_SERVICE_WINDOW": True,
        "MEDIA_DIR": str(tmp_path / "media"),
        "REPLIES_DEBOUNCE_SECONDS": 0,
        "WEBHOOKS_ALLOW_PRIVATE_TARGETS": True,
        "WEBHOOKS_ALLOWED_PORTS": [],
    }


@pytest.fixture
def graph():
    from graph_stub import GraphStub

    stub = GraphStub(
        token=WA_SETTINGS["access_token"], phone_number_id=WA_SETTINGS["phone_number_id"]
    )
    yield stub
    stub.close()


@pytest.fixture
def shop(caller):
    """Two agents (the first with an answer it knows) and a WhatsApp channel of the first."""
    agent_id = data(caller.post("/v1/agents", json={"name": "Ana Bot"}), 201)["id"]
    qa = {"type": "qa", "question": QUESTION, "answer": ANSWER}
    data(caller.post(f"/v1/agents/{agent_id}/trainings", json=qa), 201)
    other_id = data(caller.post("/v1/agents", json={"name": "Bruno Bot"}), 201)["id"]
    channel = make_channel(caller, settings=dict(WA_SETTINGS), agent_id=agent_id)
    return {"agent_id": agent_id, "other_agent_id": other_id, "channel_id": channel["id"]}


@pytest.fixture
def ana(caller):
    return make_user(caller.workspace_id, email="ana@example.com", name="Ana", role="admin")


@pytest.fixture
def carlos(caller):
    return make_user(caller.workspace_id, email="carlos@example.com", name="Carlos", role="agent")


@pytest.fixture
def browser(client, ana):
    """Ana, signed in."""
    assert sign_in(client).status_code == 303
    return client


@pytest.fixture
def second_browser(app, carlos):
    """Carlos (role agent), signed in on another browser."""
    other = app.test_client()
    assert sign_in(other, email="carlos@example.com").status_code == 303
    return other


_ids = iter(range(1, 10**6))


def customer_writes(client, shop, words="Oi"):
    """A signed WhatsApp message from the customer; returns the conversation's id."""
    payload = messages_payload(
        whatsapp_text(words, wamid=f"wamid.ACT{next(_ids)}", sender=CUSTOMER)
    )
    assert post(client, shop["channel_id"], payload).status_code == 200
    return Conversation.get().id


def act(browser, conversation_id, action, fetch=False, **form):
    """POST an action's form with the page's CSRF token (or as a fetch, JSON)."""
    token = page_token(browser)
    headers = {"Accept": "application/json"} if fetch else {}
    path = f"/app/conversations/{conversation_id}/{action}"
    return browser.post(path, data={"csrf_token": token, **form}, headers=headers)


def back(response, conversation_id):
    assert response.status_code == 303, text(response)
    assert response.headers["Location"] == f"/app/conversations/{conversation_id}"
    return response


def action_area(app, browser, user_id, conversation_id, respond=False):
    """_actions.html as the conversation page includes it, for this browser
    (its session and notice cookies) and a real conversation_view."""
    cookies = "; ".join(
        f"{name}={browser.get_cookie(name, path=path).value}"
        for name, path in (
            (SESSION_COOKIE, "/app"),
            (NOTICE_COOKIE, f"/app/conversations/{conversation_id}"),
        )
        if browser.get_cookie(name, path=path) is not None
    )
    path = f"/app/conversations/{conversation_id}"
    with app.test_request_context(path, headers={"Cookie": cookies}):
        from agent_platform.web import session

        user = session.current_user()
        assert user.id == user_id
        view = inbox.conversation_view(user.workspace_id, user.id, conversation_id)
        shown = render_template("app/_actions.html", view=view, user=user)
        if respond:  # and the answer of the page that included it
            return shown, app.process_response(app.make_response(shown))
        return shown


def conversation():
    return Conversation.get()


def said(graph):
    return [body["text"]["body"] for body in graph.sent() if body.get("type") == "text"]


# -- Take over ---------------------------------------------------------------


def test_take_over_holds_the_conversation_with_the_apis_events_and_webhook(
    browser, caller, shop, ana
):
    receiver = Receiver()
    try:
        register(caller, receiver.url, ["agent.handoff_started", "conversation.assigned"])
        conversation_id = customer_writes(browser, shop)
        before = len(event_names(caller.workspace_id))
        back(act(browser, conversation_id, "take-over"), conversation_id)
        held = conversation()
        assert (held.status, held.assigned_to) == ("handoff", ana["id"])
        assert event_names(caller.workspace_id)[before:] == [
            "agent.handoff_started",
            "conversation.assigned",
        ]
        delivery.deliver_due()
        delivered = [request.body for request in receiver.requests]
        assert len(delivered) == 2
        assert b'"agent.handoff_started"' in delivered[0] and ana["id"].encode() in delivered[1]
        # Taking over what you hold changes nothing.
        back(act(browser, conversation_id, "take-over"), conversation_id)
        assert len(event_names(caller.workspace_id)) == before + 2
    finally:
        receiver.close()


def test_the_agent_falls_silent_once_a_person_takes_over(browser, shop, graph):
    conversation_id = customer_writes(browser, shop)
    replies.run_due_replies()
    back(act(browser, conversation_id, "take-over"), conversation_id)
    customer_writes(browser, shop, QUESTION)
    assert replies.run_due_replies() == 0
    assert ANSWER not in said(graph)


def test_a_second_take_over_is_refused_naming_who_holds_it(
    app, browser, second_browser, caller, shop, ana, carlos
):
    conversation_id = customer_writes(browser, shop)
    back(act(browser, conversation_id, "take-over"), conversation_id)
    events_before = event_names(caller.workspace_id)
    refused = back(act(second_browser, conversation_id, "take-over"), conversation_id)
    assert NOTICE_COOKIE in refused.headers["Set-Cookie"]
    shown = action_area(app, second_browser, carlos["id"], conversation_id)
    assert "Ana already holds conversation" in shown
    assert "Held by Ana." in shown and ">Take over<" not in shown
    as_fetch = act(second_browser, conversation_id, "take-over", fetch=True)
    assert_error(as_fetch, 409, "CONVERSATION_HELD", "Ana already holds")
    # The API's take-over names the same holder.
    through_api = caller.post(
        f"/v1/chats/{conversation_id}/handoff", json={"assigned_to": carlos["id"]}
    )
    assert_error(through_api, 409, "CONVERSATION_HELD", "Ana already holds")
    assert (conversation().assigned_to, event_names(caller.workspace_id)) == (
        ana["id"],
        events_before,
    )


def test_the_notice_is_shown_once(app, browser, shop, ana):
    conversation_id = customer_writes(browser, shop)
    back(act(browser, conversation_id, "take-over"), conversation_id)
    shown, response = action_area(app, browser, ana["id"], conversation_id, respond=True)
    assert "You hold this conversation now" in shown
    # The page that showed it clears the cookie.
    cleared = response.headers["Set-Cookie"]
    assert cleared.startswith(f"{NOTICE_COOKIE}=;") and "Max-Age=0" in cleared
    assert f"Path=/app/conversations/{conversation_id}" in cleared


def test_a_forged_notice_is_not_shown(app, browser, shop, ana):
    conversation_id = customer_writes(browser, shop)
    path = f"/app/conversations/{conversation_id}"
    browser.set_cookie(NOTICE_COOKIE, '{"kind": "refused", "text": "Call +1 555"}', path=path)
    assert "Call +1 555" not in action_area(app, browser, ana["id"], conversation_id)


# -- Reply, the 24-hour window, templates ---------------------------------------


def test_a_reply_goes_out_on_whatsapp_with_its_author(browser, caller, shop, graph, ana):
    conversation_id = customer_writes(browser, shop)
    back(act(browser, conversation_id, "take-over"), conversation_id)
    words = "Olá, aqui é a Ana.\r\nSeu pedido <b>sai</b> em 10 minutos."
    back(act(browser, conversation_id, "reply", text=words), conversation_id)
    sending.send_queued_job(now=utcnow())
    assert said(graph)[-1] == "Olá, aqui é a Ana.\nSeu pedido <b>sai</b> em 10 minutos."
    assert graph.sent()[-1]["to"] == CUSTOMER
    sent = Message.get(Message.sender_type == "human")
    assert (sent.author_user_id, sent.status) == (ana["id"], "sent")
    shown = data(caller.get(f"/v1/messages/{sent.id}"))
    assert shown["author_user_id"] == ana["id"]
    agent_side = data(caller.get(f"/v1/conversations/{conversation_id}/messages"))
    assert {message["author_user_id"] for message in agent_side} == {None, ana["id"]}
    listed = browser.get("/app").get_data(as_text=True)  # the list names her, not "Person"
    assert f'<span class="author">{ana["name"]}:</span> Olá, aqui é a Ana.' in listed


def test_a_reply_as_a_fetch_answers_the_message(browser, shop, ana):
    conversation_id = customer_writes(browser, shop)
    act(browser, conversation_id, "take-over")
    answer = act(browser, conversation_id, "reply", fetch=True, text="Oi!")
    assert answer.status_code == 200
    message = answer.get_json()["data"]
    assert (message["text"], message["author_user_id"], message["status"]) == (
        "Oi!",
        ana["id"],
        "queued",
    )
    assert_error(
        act(browser, conversation_id, "reply", fetch=True, text="  "),
        400,
        "MISSING_REQUIRED_FIELD",
        "text",
    )
    too_long = act(browser, conversation_id, "reply", fetch=True, text="a" * 4097)
    assert_error(too_long, 400, "VALIDATION_ERROR", "4096")


def test_a_reply_to_a_conversation_another_holds_is_refused(browser, second_browser, shop, graph):
    conversation_id = customer_writes(browser, shop)
    act(browser, conversation_id, "take-over")
    refused = act(second_browser, conversation_id, "reply", fetch=True, text="me too")
    assert_error(refused, 409, "CONVERSATION_HELD", "Ana")
    assert Message.select().where(Message.sender_type == "human").count() == 0


def test_outside_the_window_the_templates_are_offered_and_one_is_sent(
    app, browser, shop, graph, ana
):
    inbound(shop["channel_id"], "wamid.OLD", sender_id=CUSTOMER, now=utcnow() - timedelta(hours=25))
    conversation_id = conversation().id
    graph.templates = [
        _template("order_update", "pt_BR", "Olá {{1}}, seu pedido {{2}} saiu."),
        _template("welcome_back", "en_US", "Welcome back!"),
        {**_template("draft_offer", "en_US", "Not yet"), "status": "PENDING"},
    ]
    back(act(browser, conversation_id, "take-over"), conversation_id)
    refused = back(act(browser, conversation_id, "reply", text="Oi?"), conversation_id)
    assert refused.headers["Location"].endswith(conversation_id)
    shown = action_area(app, browser, ana["id"], conversation_id)
    assert shown.count("The customer last wrote more than 24 hours ago") == 2  # notice + state
    assert "Approved template" in shown and 'name="text"' not in shown
    assert '<option value="order_update:pt_BR">order_update (pt_BR, 2 parameters)</option>' in shown
    assert '<option value="welcome_back:en_US">welcome_back (en_US)</option>' in shown
    assert "draft_offer" not in shown
    assert "Olá {{1}}, seu pedido {{2}} saiu." in shown
    assert Message.select().where(Message.sender_type == "human").count() == 0
    form = {"template": "order_update:pt_BR", "parameters": "Bia\r\n#1234\r\n"}
    back(act(browser, conversation_id, "template", **form), conversation_id)
    sending.send_queued_job(now=utcnow())
    assert graph.sent()[-1] == TEMPLATE_SENT
    sent = Message.get(Message.type == "template")
    assert (sent.author_user_id, sent.status) == (ana["id"], "sent")


def test_templates_that_cannot_be_listed_are_said_in_words(app, browser, shop, graph, ana):
    inbound(shop["channel_id"], "wamid.OLD", sender_id=CUSTOMER, now=utcnow() - timedelta(hours=30))
    conversation_id = conversation().id
    act(browser, conversation_id, "take-over")
    graph.token = "another-token"  # Meta refuses the channel's token
    shown = action_area(app, browser, ana["id"], conversation_id)
    assert "WhatsApp did not list the approved templates (190: " in shown
    bad = act(browser, conversation_id, "template", fetch=True, template="Order Update:pt_BR")
    assert_error(bad, 400, "VALIDATION_ERROR", "template")


def _template(name, language, body):
    components = [
        {"type": "HEADER", "format": "TEXT", "text": "Loja"},
        {"type": "BODY", "text": body},
    ]
    return {
        "name": name,
        "language": language,
        "status": "APPROVED",
        "components": components,
        "id": "1",
    }


# -- Hand back, assign, transfer, close, reopen -----------------------------------


def test_hand_back_and_the_agent_answers_the_next_message(browser, caller, shop, graph, ana):
    conversation_id = customer_writes(browser, shop)
    replies.run_due_replies()
    back(act(browser, conversation_id, "take-over"), conversation_id)
    before = len(event_names(caller.workspace_id))
    back(act(browser, conversation_id, "hand-back"), conversation_id)
    handed = conversation()
    assert (handed.status, handed.assigned_to) == ("open", None)
    assert event_names(caller.workspace_id)[before:] == [
        "agent.handoff_completed",
        "conversation.assigned",
    ]
    customer_writes(browser, shop, QUESTION)
    assert replies.run_due_replies() == 1
    assert said(graph)[-1] == ANSWER
    again = act(browser, conversation_id, "hand-back", fetch=True)
    assert_error(again, 409, "INVALID_STATE_TRANSITION", "open")


def test_assign_to_a_colleague_or_nobody(app, browser, caller, shop, ana, carlos):
    conversation_id = customer_writes(browser, shop)
    back(act(browser, conversation_id, "assign", assigned_to=carlos["id"]), conversation_id)
    assert conversation().assigned_to == carlos["id"]
    assert event_names(caller.workspace_id)[-1] == "conversation.assigned"
    shown = action_area(app, browser, ana["id"], conversation_id)
    assert "Assigned to Carlos." in shown
    assert f'<option value="{carlos["id"]}" selected>Carlos</option>' in shown
    for unknown in ("5b0c3bb5-6f2b-4a4e-9a67-1d1c8a0f7e11", "maria"):
        refused = act(browser, conversation_id, "assign", fetch=True, assigned_to=unknown)
        assert_error(refused, 400, "VALIDATION_ERROR", "assigned_to")
    back(act(browser, conversation_id, "assign", assigned_to=""), conversation_id)
    assert conversation().assigned_to is None


def test_a_deactivated_colleague_is_not_offered_nor_accepted(app, browser, shop, ana, carlos):
    from agent_platform.services import users

    users.update_user(ana["workspace_id"], carlos["id"], {"active": False})
    conversation_id = customer_writes(browser, shop)
    assert "Carlos" not in action_area(app, browser, ana["id"], conversation_id)
    refused = act(browser, conversation_id, "assign", fetch=True, assigned_to=carlos["id"])
    assert_error(refused, 400, "VALIDATION_ERROR", "assigned_to")


def test_transfer_to_another_agent(app, browser, caller, shop, ana):
    conversation_id = customer_writes(browser, shop)
    shown = action_area(app, browser, ana["id"], conversation_id)
    assert f'<option value="{shop["other_agent_id"]}">Bruno Bot</option>' in shown
    assert f'value="{shop["agent_id"]}"' not in shown  # not to the agent it is with
    transferred = act(browser, conversation_id, "transfer", agent_id=shop["other_agent_id"])
    back(transferred, conversation_id)
    assert conversation().agent_id == shop["other_agent_id"]
    assert event_names(caller.workspace_id)[-2:] == [
        "conversation.transferred",
        "agent.transferred",
    ]
    again = act(browser, conversation_id, "transfer", fetch=True, agent_id=shop["other_agent_id"])
    assert_error(again, 409, "CONVERSATION_ALREADY_WITH_AGENT")
    none = act(browser, conversation_id, "transfer", fetch=True, agent_id="")
    assert_error(none, 400, "VALIDATION_ERROR", "agent_id")


def test_close_and_reopen(app, browser, caller, shop, ana):
    conversation_id = customer_writes(browser, shop)
    back(act(browser, conversation_id, "close"), conversation_id)
    assert conversation().status == "closed"
    assert event_names(caller.workspace_id)[-1] == "conversation.closed"
    refused = back(act(browser, conversation_id, "close"), conversation_id)
    assert refused.status_code == 303
    shown = action_area(app, browser, ana["id"], conversation_id)
    assert "Cannot close conversation" in shown and "its state is closed" in shown
    assert ">Reopen<" in shown and ">Take over<" not in shown
    back(act(browser, conversation_id, "reopen"), conversation_id)
    assert conversation().status == "open"
    assert event_names(caller.workspace_id)[-1] == "conversation.reopened"


# -- Who may act -----------------------------------------------------------------


def test_without_the_csrf_token_nothing_changes(browser, shop):
    conversation_id = customer_writes(browser, shop)
    path = f"/app/conversations/{conversation_id}/take-over"
    refused = browser.post(path, data={})
    assert refused.status_code == 403 and "This form has expired" in text(refused)
    wrong = browser.post(
        path, data={"csrf_token": "not-it"}, headers={"Accept": "application/json"}
    )
    assert_error(wrong, 403, "CSRF_TOKEN_INVALID")
    assert (conversation().status, conversation().assigned_to) == ("open", None)


def test_another_workspaces_conversation_is_404(browser, other, shop):
    channel = make_channel(other, settings=dict(WA_SETTINGS, phone_number_id="999"))
    theirs = inbound(channel["id"], "wamid.THEIRS", sender_id=CUSTOMER).message.conversation_id
    for action in (
        "take-over",
        "reply",
        "hand-back",
        "assign",
        "transfer",
        "close",
        "reopen",
        "template",
    ):
        page = act(browser, theirs, action, text="hi")
        assert page.status_code == 404 and f"Conversation {theirs} not found." in text(page)
    assert_error(act(browser, theirs, "close", fetch=True), 404, "CONVERSATION_NOT_FOUND")
    assert Conversation.get_by_id(theirs).status == "open"


def test_an_agent_user_acts_but_cannot_reach_the_team_page(second_browser, shop, carlos):
    conversation_id = customer_writes(second_browser, shop)
    back(act(second_browser, conversation_id, "take-over"), conversation_id)
    assert conversation().assigned_to == carlos["id"]
    assert second_browser.get("/app/team").status_code == 403


def test_signed_out_actions_go_to_sign_in(client, shop):
    conversation_id = customer_writes(client, shop)
    token = page_token(client, "/app/sign-in")
    path = f"/app/conversations/{conversation_id}/close"
    response = client.post(path, data={"csrf_token": token})
    assert response.status_code == 302 and "/app/sign-in" in response.headers["Location"]
    as_fetch = client.post(path, data={"csrf_token": token}, headers={"Accept": "application/json"})
    assert_error(as_fetch, 401, "NOT_SIGNED_IN")
    assert conversation().status == "open"


# -- The action area -------------------------------------------------------------


def test_the_action_area_is_labelled_protected_and_escapes_names(app, browser, caller, shop, ana):
    hostile = make_user(
        caller.workspace_id, email="x@example.com", name="<script>alert(1)</script>"
    )
    conversation_id = customer_writes(browser, shop)
    shown = action_area(app, browser, ana["id"], conversation_id)
    assert "<script>" not in shown and "&lt;script&gt;alert(1)&lt;/script&gt;" in shown
    assert hostile["id"] in shown
    assert (
        shown.count("<form ") == shown.count('name="csrf_token"') == 4
    )  # take over, close, assign, transfer
    assert " style=" not in shown and "onclick" not in shown
    for control in ("assign-to", "transfer-to"):
        assert f'<label for="{control}">' in shown and f'id="{control}"' in shown
    assert "The agent Ana Bot answers." in shown and ">Take over<" in shown
    back(act(browser, conversation_id, "take-over"), conversation_id)
    held = action_area(app, browser, ana["id"], conversation_id)
    assert (
        '<label for="reply-text">Your reply</label>' in held and ">Hand back to the agent<" in held
    )
