"""The agent answers end to end on WhatsApp: signed callbacks in, the Graph API
stand-in out (tests/graph_stub.py), the OpenAI-compatible stand-in as the
model where one is needed. The callback stores messages at the time they
arrive, so the reply job runs at the real time with no debounce here (the
debounce is tested in test_replies.py); later times are driven with `now=`."""

from datetime import timedelta

import pytest

from agent_platform.models import Conversation, Message
from agent_platform.models.base import utcnow
from agent_platform.services import idle_actions, replies, sending
from conversations_helpers import WA_SETTINGS, data, event_names, events, make_channel
from openai_stub import OpenAIStub, answer, failure
from whatsapp_helpers import *  # noqa: F403  (the fixtures)
from whatsapp_helpers import message, messages_payload, post, text

CUSTOMER = "5511933334444"
GREETING = "Olá! Sou a Ana, da Pizzaria Roma."
DELIVERY = ("Quanto custa a entrega?", "A entrega custa R$ 5 em São Paulo.")
HOURS = ("Qual o horário de funcionamento?", "Abrimos todos os dias das 11h às 23h.")


@pytest.fixture
def settings(tmp_path, graph):
    return {
        "DATABASE_PATH": str(tmp_path / "test.db"),
        "WHATSAPP_GRAPH_API_BASE": graph.base,
        "WHATSAPP_TIMEOUT_SECONDS": 2,
        "MEDIA_DIR": str(tmp_path / "media"),
        "REPLIES_DEBOUNCE_SECONDS": 0,
    }


@pytest.fixture(scope="module")
def model():
    with OpenAIStub() as stub:
        yield stub


@pytest.fixture(autouse=True)
def fresh_model(model):
    model.requests.clear()
    model._script.clear()


@pytest.fixture
def shop(caller):
    body = {"name": "Ana", "language": "pt-BR", "greeting_message": GREETING}
    agent_id = data(caller.post("/v1/agents", json=body), 201)["id"]
    for question, reply in (DELIVERY, HOURS):
        qa = {"type": "qa", "question": question, "answer": reply}
        data(caller.post(f"/v1/agents/{agent_id}/trainings", json=qa), 201)
    channel = make_channel(caller, settings=dict(WA_SETTINGS), agent_id=agent_id)
    return {"agent_id": agent_id, "channel_id": channel["id"]}


_ids = iter(range(1, 10**6))


def customer_writes(client, shop, words):
    """A signed WhatsApp message from the customer; returns when it arrived."""
    arrived = utcnow()
    payload = messages_payload(text(words, wamid=f"wamid.E2E{next(_ids)}", sender=CUSTOMER))
    assert post(client, shop["channel_id"], payload).status_code == 200
    return arrived


def answers():
    """Run the reply job as its scheduler would, now."""
    return replies.run_due_replies()


def said(graph):
    """The texts the Graph API was asked to send, in order."""
    return [body["text"]["body"] for body in graph.sent() if body.get("type") == "text"]


def conversation():
    return Conversation.get()


def use_model(caller, shop, model):
    settings = {"model_provider": "openai", "base_url": model.url, "api_key": "sk-e2e"}
    data(caller.put(f"/v1/agents/{shop['agent_id']}/settings", json=settings))


def test_a_customer_gets_the_greeting_and_the_answer(client, caller, shop, graph):
    customer_writes(client, shop, "Oi! quanto custa a entrega?")
    assert said(graph) == []  # the agent answers from its job, not in the callback
    assert answers() == 1
    assert said(graph) == [GREETING, DELIVERY[1]]
    assert all(body["to"] == CUSTOMER for body in graph.sent())
    reply = Message.get(Message.text == DELIVERY[1])
    shown = data(caller.get(f"/v1/messages/{reply.id}"))
    assert (shown["sender_type"], shown["status"]) == ("agent", "sent")
    assert shown["external_id"].startswith("wamid.")
    assert shown["metadata"]["reply"]["provider"] == "knowledge"
    # The next question: no second greeting.
    customer_writes(client, shop, "e qual o horario de funcionamento??")
    answers()
    assert said(graph) == [GREETING, DELIVERY[1], HOURS[1]]


def test_handoff_a_human_answers_and_the_agent_resumes_knowing_it(
    client, caller, shop, graph, model
):
    use_model(caller, shop, model)
    model.script(answer("Olá! Em que posso ajudar?"))
    customer_writes(client, shop, "Oi")
    answers()
    # A handoff keyword: the conversation goes to a human.
    customer_writes(client, shop, "quero falar com um atendente")
    answers()
    current = conversation()
    assert current.status == "handoff"
    assert "agent.handoff_started" in event_names(caller.workspace_id)
    assert said(graph)[-1] == (
        "Claro, vou passar você para uma pessoa da nossa equipe. Ela vai responder por aqui."
    )
    # The agent is silent while the human holds the chat.
    customer_writes(client, shop, "alô?")
    assert answers() == 0
    human = {"text": "Oi, aqui é o Carlos. Seu pedido sai em 10 minutos."}
    data(caller.post(f"/v1/conversations/{current.id}/messages", json=human), 201)
    sending.send_queued_job(now=utcnow())
    assert said(graph)[-1] == human["text"]
    data(caller.post(f"/v1/chats/{current.id}/handoff/complete"))
    # The agent answers again, and the human's message is in its prompt.
    model.script(answer("O Carlos já confirmou: seu pedido sai em 10 minutos."))
    customer_writes(client, shop, "e o meu pedido?")
    answers()
    assert said(graph)[-1] == "O Carlos já confirmou: seu pedido sai em 10 minutos."
    conversation_part = model.requests[-1]["body"]["messages"][1:]
    assert {
        "role": "assistant",
        "content": "[Human operator] Oi, aqui é o Carlos. Seu pedido sai em 10 minutos.",
    } in conversation_part
    assert conversation_part[-1] == {"role": "user", "content": "e o meu pedido?"}
    assert len(model.requests) == 2  # nothing was asked during the handoff


def test_an_idle_conversation_is_closed_by_its_idle_action(client, caller, shop, graph):
    action = {"name": "close", "minutes": 15, "action": "close", "message": "Até logo!"}
    data(caller.post(f"/v1/agents/{shop['agent_id']}/idle-actions", json=action), 201)
    when = customer_writes(client, shop, "quanto custa a entrega?")
    answers()
    assert idle_actions.run_idle_actions(now=when + timedelta(minutes=14)) == 0
    assert idle_actions.run_idle_actions(now=when + timedelta(minutes=15, seconds=1)) == 1
    sending.send_queued_job(now=when + timedelta(minutes=15, seconds=2))
    assert said(graph)[-1] == "Até logo!"
    assert conversation().status == "closed"
    assert events(caller.workspace_id, "conversation.closed")[-1][1]["id"] == conversation().id


def test_a_provider_that_is_down_ends_in_the_fallback_and_a_handoff(
    client, caller, shop, graph, model, app
):
    app.config["REPLIES_RETRY_SCHEDULE"] = [5]
    use_model(caller, shop, model)
    model.script(failure(502), failure(503))
    when = customer_writes(client, shop, "Oi, vocês abrem hoje?")
    answers()
    assert said(graph) == []  # a retry is due in 5 s
    replies.run_due_replies(now=when + timedelta(seconds=6))
    assert said(graph) == [GREETING, "Desculpe, não consigo responder isso agora. Uma pessoa da "
                           "nossa equipe vai falar com você assim que possível."]  # fmt: skip
    assert conversation().status == "handoff"
    assert len(model.requests) == 2


def test_credits_are_consumed_and_depleted(client, caller, shop, graph, app):
    app.config["PLAN_CREDITS"] = 2
    customer_writes(client, shop, "quanto custa a entrega?")
    answers()
    customer_writes(client, shop, "qual o horario?")
    answers()
    credits = data(caller.get(f"/v1/agents/{shop['agent_id']}/credits"))
    assert credits["total_credits"] == 2
    assert "credit.depleted" in event_names(caller.workspace_id)
    customer_writes(client, shop, "quanto custa a entrega?")
    answers()
    assert said(graph) == [GREETING, DELIVERY[1], HOURS[1]]  # no third answer
    assert conversation().status == "handoff"
    assert data(caller.get(f"/v1/agents/{shop['agent_id']}/credits"))["total_credits"] == 2


def test_an_unclear_question_gets_reply_buttons_and_a_pressed_one_is_answered(
    client, caller, shop, graph
):
    ask = {"type": "qa", "question": "Vocês entregam no centro?", "answer": "Entregamos, sim."}
    data(caller.post(f"/v1/agents/{shop['agent_id']}/trainings", json=ask), 201)
    customer_writes(client, shop, "entrega?")
    answers()
    [question] = [body for body in graph.sent() if body.get("type") == "interactive"]
    interactive = question["interactive"]
    assert interactive["type"] == "list"  # the questions are longer than a button's 20 characters
    assert interactive["body"]["text"] == "Você quer saber:"
    assert interactive["action"]["button"] == "Escolher"
    rows = interactive["action"]["sections"][0]["rows"]
    assert [row["id"] for row in rows][-1] == "choice:0"
    assert rows[-1]["title"] == "Nenhuma destas"
    chosen = next(row for row in rows if row["title"].startswith("Quanto custa"))
    pressed = {"type": "list_reply", "list_reply": {"id": chosen["id"], "title": chosen["title"]}}
    payload = messages_payload(message("interactive", pressed, wamid="wamid.E2Epress"))
    assert post(client, shop["channel_id"], payload).status_code == 200
    answers()
    assert said(graph)[-1] == DELIVERY[1]
    conversation_id = conversation().id
    [clarification] = data(caller.get(f"/v1/conversations/{conversation_id}/clarifications"))
    assert clarification["status"] == "chosen"
