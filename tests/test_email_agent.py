"""The agent answers by e-mail as on WhatsApp: from its knowledge, silent
while a human holds the chat (the human's answer leaves by mail too) and
back when it is handed back, transfer rules, credits, idle actions,
clarifying questions (numbered in the text: e-mail has no buttons), and the
same events, delivered to a webhook. A model reads what the customer wrote
this time, not the history their mail quotes. Mail comes from Dovecot,
answers go to aiosmtpd, the webhook and the model are real servers, all on
loopback."""

import json
import re
from datetime import timedelta

import pytest

from agent_platform.events.delivery import deliver_due
from agent_platform.models import Conversation
from agent_platform.models.base import utcnow
from agent_platform.services import idle_actions, replies, sending
from conversations_helpers import data, event_names, events
from email_helpers import *  # noqa: F403  (the fixtures)
from email_helpers import email_channel, mail, mail_config, poll
from openai_stub import OpenAIStub
from openai_stub import answer as model_answer
from replies_helpers import add_qa, make_agent
from webhooks_helpers import Receiver, register

GREETING = "Olá! Sou a Ana, da Pizzaria Roma."
DELIVERY = ("Quanto custa a entrega?", "A entrega custa R$ 5 em São Paulo.")
HOURS = ("Qual o horário de funcionamento?", "Abrimos todos os dias das 11h às 23h.")
HANDOFF = "Claro, vou passar você para uma pessoa da nossa equipe. Ela vai responder por aqui."


@pytest.fixture
def settings(tmp_path):
    webhooks = {"WEBHOOKS_ALLOW_PRIVATE_TARGETS": True, "WEBHOOKS_ALLOWED_PORTS": []}
    return {**mail_config(tmp_path), **webhooks}


@pytest.fixture
def receiver():
    server = Receiver()
    yield server
    server.close()


@pytest.fixture
def shop(caller, dovecot, mailbox, smtp):
    agent_id = make_agent(caller, language="pt-BR", greeting_message=GREETING)
    for question, answer in (DELIVERY, HOURS):
        add_qa(caller, agent_id, question, answer)
    channel = email_channel(caller, dovecot, mailbox, smtp, agent=agent_id)
    return {"agent_id": agent_id, "channel_id": channel["id"], "mailbox": mailbox}


def customer_writes(dovecot, shop, words):
    dovecot.deliver(mail(words, subject="Pedido"), user=shop["mailbox"])
    assert poll(shop["channel_id"]) == 1
    replies.run_due_replies()


def customer_answers(dovecot, shop, smtp, words):
    """The customer replies to the latest mail sent, quoting it under their words."""
    latest = smtp.mails()[-1]
    quoted = "\n".join(f"> {line}" for line in said(smtp)[-1].splitlines())
    text = f"{words}\n\n-- \nBia Souza\n\nOn Thu, 26 Nov 2026, Pizzaria wrote:\n{quoted}"
    threading = {"In-Reply-To": latest["Message-ID"], "References": latest["Message-ID"]}
    dovecot.deliver(mail(text, subject=latest["Subject"], headers=threading), user=shop["mailbox"])
    assert poll(shop["channel_id"]) == 1
    replies.run_due_replies()


def said(smtp):
    """The text parts of the mails sent, in order (a mail may carry the greeting)."""
    return [m.get_body(preferencelist=("plain",)).get_content().strip() for m in smtp.mails()]


def test_knowledge_answers_events_and_webhooks(caller, shop, dovecot, smtp, receiver):
    hook = register(caller, receiver.url, events=["message.received", "message.sent"])
    customer_writes(dovecot, shop, "Oi! quanto custa a entrega?")
    assert said(smtp) == [GREETING, DELIVERY[1]]
    customer_writes(dovecot, shop, "e qual o horario de funcionamento??")
    assert said(smtp)[-1] == HOURS[1]
    assert deliver_due() >= 1
    delivered = [json.loads(r.body) for r in receiver.requests]
    names = [body["event"] for body in delivered]
    assert names.count("message.received") == 2 and names.count("message.sent") == 3
    received = next(b["data"] for b in delivered if b["event"] == "message.received")
    assert received["contact"]["email"] == "bia@customer.example"
    assert received["metadata"]["email"]["subject"] == "Pedido"
    assert {b["webhook_id"] for b in delivered} == {hook["id"]}


def test_handoff_a_human_answers_by_mail_and_the_agent_is_silent(caller, shop, dovecot, smtp):
    customer_writes(dovecot, shop, "quero falar com um atendente")
    conversation = Conversation.get()
    assert conversation.status == "handoff" and said(smtp)[-1] == HANDOFF
    assert "agent.handoff_started" in event_names(caller.workspace_id)
    customer_writes(dovecot, shop, "alô? quanto custa a entrega?")
    assert said(smtp)[-1] == HANDOFF  # the agent does not answer during the handoff
    human = {"text": "Oi, aqui é o Carlos. A entrega é grátis hoje."}
    data(caller.post(f"/v1/conversations/{conversation.id}/messages", json=human), 201)
    sending.send_queued()
    assert said(smtp)[-1] == human["text"]
    assert smtp.mails()[-1]["Subject"] == "Re: Pedido"
    data(caller.post(f"/v1/chats/{conversation.id}/handoff/complete"))
    # Handed back: the agent answers the customer's reply to the human's mail.
    customer_answers(dovecot, shop, smtp, "e qual o horario de funcionamento?")
    assert said(smtp)[-1] == HOURS[1]
    assert Conversation.select().count() == 1
    assert "agent.handoff_completed" in event_names(caller.workspace_id)


def test_a_transfer_rule_hands_the_mail_to_another_agent(caller, shop, dovecot, smtp):
    sales = make_agent(caller, name="Sales")
    add_qa(
        caller, sales, "Vocês têm desconto para pedidos grandes?", "Sim: 10% acima de 10 pizzas."
    )
    rule = {"name": "Vendas", "match_type": "keywords", "keywords": ["desconto"]}
    rule.update(action="transfer", target_agent_id=sales)
    data(caller.post(f"/v1/agents/{shop['agent_id']}/transfer-rules", json=rule), 201)
    customer_writes(dovecot, shop, "Vocês têm desconto para pedidos grandes?")
    replies.run_due_replies()  # the new agent's job
    assert Conversation.get().agent_id == sales
    assert said(smtp)[-1] == "Sim: 10% acima de 10 pizzas."
    assert events(caller.workspace_id, "agent.transferred")


def test_credits_are_consumed_and_depleted(caller, shop, dovecot, smtp, app):
    app.config["PLAN_CREDITS"] = 2
    customer_writes(dovecot, shop, "quanto custa a entrega?")
    customer_writes(dovecot, shop, "qual o horario de funcionamento?")
    assert "credit.depleted" in event_names(caller.workspace_id)
    customer_writes(dovecot, shop, "quanto custa a entrega?")
    assert said(smtp) == [GREETING, DELIVERY[1], HOURS[1]]  # no third answer
    assert Conversation.get().status == "handoff"
    credits = data(caller.get(f"/v1/agents/{shop['agent_id']}/credits"))
    assert credits["total_credits"] == 2


def test_an_idle_conversation_is_closed_by_its_idle_action_by_mail(caller, shop, dovecot, smtp):
    action = {"name": "close", "minutes": 15, "action": "close", "message": "Até logo!"}
    data(caller.post(f"/v1/agents/{shop['agent_id']}/idle-actions", json=action), 201)
    when = utcnow()
    customer_writes(dovecot, shop, "quanto custa a entrega?")
    assert idle_actions.run_idle_actions(now=when + timedelta(minutes=14)) == 0
    assert idle_actions.run_idle_actions(now=when + timedelta(minutes=15, seconds=5)) == 1
    sending.send_queued(now=when + timedelta(minutes=15, seconds=6))
    assert said(smtp)[-1] == "Até logo!"
    assert smtp.mails()[-1]["Subject"] == "Re: Pedido"
    assert Conversation.get().status == "closed"
    assert events(caller.workspace_id, "conversation.closed")


def test_a_clarifying_question_is_numbered_and_a_number_in_the_reply_answers(
    caller, shop, dovecot, smtp
):
    add_qa(caller, shop["agent_id"], "Vocês entregam no centro?", "Entregamos, sim.")
    customer_writes(dovecot, shop, "entrega?")
    question = said(smtp)[-1]
    assert question.startswith("Você quer saber:") and "\n0. Nenhuma destas" in question
    [number] = re.findall(r"^(\d)\. Quanto custa a entrega", question, re.MULTILINE)
    # The reply quotes the question, numbers and all: only its new line is read.
    customer_answers(dovecot, shop, smtp, number)
    assert said(smtp)[-1] == DELIVERY[1]
    [clarification] = data(caller.get(f"/v1/conversations/{Conversation.get().id}/clarifications"))
    assert clarification["status"] == "chosen"


@pytest.fixture
def model():
    with OpenAIStub() as stub:
        yield stub


def test_a_model_reads_the_customers_words_not_the_quoted_history(
    caller, shop, dovecot, smtp, model
):
    settings = {"model_provider": "openai", "base_url": model.url, "api_key": "sk-mail"}
    data(caller.put(f"/v1/agents/{shop['agent_id']}/settings", json=settings))
    model.script(model_answer("Olá! Entregamos no sábado, sim."), model_answer("Até as 22h."))
    customer_writes(dovecot, shop, "Vocês entregam no sábado?")
    assert said(smtp)[-1] == "Olá! Entregamos no sábado, sim."
    customer_answers(dovecot, shop, smtp, "Até que horas?")
    assert said(smtp)[-1] == "Até as 22h."
    prompt = model.requests[-1]["body"]["messages"][1:]
    assert prompt[-1] == {"role": "user", "content": "Até que horas?"}
    assert {"role": "user", "content": "Vocês entregam no sábado?"} in prompt
    assert not any("wrote:" in m["content"] or "Bia Souza" in m["content"] for m in prompt)
