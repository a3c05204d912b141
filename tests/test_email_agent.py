"""The agent answers by e-mail as on WhatsApp: from its knowledge, silent
while a human holds the chat (the human's answer leaves by mail too),
transfer rules, credits, and the same events, delivered to a webhook. Mail
comes from Dovecot, answers go to aiosmtpd, the webhook is a real receiver,
all on loopback."""

import json

import pytest

from agent_platform.events.delivery import deliver_due
from agent_platform.models import Conversation
from agent_platform.services import replies, sending
from conversations_helpers import data, event_names, events
from email_helpers import *  # noqa: F403  (the fixtures)
from email_helpers import email_channel, mail, mail_config, poll
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
