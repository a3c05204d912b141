"""One clear candidate is a yes/no question, not a one-item menu: asked in
the agent's language with its punctuation never doubled, as Yes/No buttons
where the channel shows them, and answered by a yes (the training's answer)
or a no (the fallback). Several candidates are still a menu."""

import re

import pytest

from agent_platform.channels import adapters
from agent_platform.replies import clarifying
from agent_platform.services import chat_trial
from conversations_helpers import data
from replies_helpers import (
    add_qa,
    agent_channel,
    at,
    customer_says,
    fake,  # noqa: F401  (fixture)
    make_agent,
    outbound,
    run_replies,
)

HOURS = ("What are your opening hours?", "We open every day from 11am to 11pm.")
COST = ("How much does delivery cost?", "Delivery costs $5 within the city.")
AREA = ("Which areas do you deliver to?", "We deliver within 10 km of the shop.")
# The question a customer gets in each language, over one Q&A of that language.
ONE = {
    "en": (HOURS, "when are you open on saturday?",
           "Do you mean “What are your opening hours”? Reply yes or no.", "yes", "No"),
    "pt-BR": (("Qual é o horário de funcionamento?", "Abrimos todos os dias das 11h às 23h."),
              "vocês abrem no sábado?",
              "Você quer dizer “Qual é o horário de funcionamento”? Responda sim ou não.",
              "Sim, obrigado!", "Não"),
    "es": (("¿Cuál es el horario de atención?", "Abrimos todos los días de 11 a 23."),
           "¿abren el sábado?",
           "¿Te refieres a “Cuál es el horario de atención”? Responde sí o no.",
           "sí", "No"),
}  # fmt: skip
DOUBLED = re.compile(r"[?!.¿¡][”\"]?[?!.]|[?!.][”\"]?[¿¡]")


@pytest.fixture
def no_buttons(monkeypatch):
    """The test channel (WhatsApp) as a channel without buttons (e-mail)."""
    monkeypatch.setattr(adapters.channel_type("whatsapp"), "buttons", False)


def one_qa(caller, language, pair):
    agent_id = make_agent(caller, language=language)
    add_qa(caller, agent_id, *pair)
    return agent_channel(caller, agent_id)["id"]


def ask(channel_id, text):
    message = customer_says(channel_id, text, at(0))
    run_replies(at(5))
    [question] = outbound(message.conversation_id)
    return message.conversation_id, question


def answer(channel_id, conversation_id, text):
    customer_says(channel_id, text, at(10))
    run_replies(at(15))
    return outbound(conversation_id)[-1]


def clarification(caller, conversation_id):
    [found] = data(caller.get(f"/v1/conversations/{conversation_id}/clarifications"))
    return found


@pytest.mark.parametrize("language", sorted(ONE))
def test_one_candidate_is_a_yes_no_question(caller, fake, no_buttons, language):  # noqa: F811
    pair, message, asked, _, _ = ONE[language]
    conversation_id, question = ask(one_qa(caller, language, pair), message)
    assert question.text == asked
    assert "\n" not in question.text and not DOUBLED.search(question.text)
    assert clarification(caller, conversation_id)["choices"][0]["label"] == pair[0]


@pytest.mark.parametrize("language", sorted(ONE))
def test_a_yes_gives_the_answer(caller, fake, no_buttons, language):  # noqa: F811
    pair, message, _, yes, _ = ONE[language]
    channel_id = one_qa(caller, language, pair)
    conversation_id, _ = ask(channel_id, message)
    reply = answer(channel_id, conversation_id, yes)
    assert reply.text == pair[1]
    assert reply.metadata["reply"]["provider"] == "clarification"
    assert clarification(caller, conversation_id)["status"] == "chosen"


@pytest.mark.parametrize("language", sorted(ONE))
def test_a_no_sends_the_fallback_and_hands_off(caller, fake, no_buttons, language):  # noqa: F811
    pair, message, _, _, no = ONE[language]
    channel_id = one_qa(caller, language, pair)
    conversation_id, _ = ask(channel_id, message)
    reply = answer(channel_id, conversation_id, no)
    assert reply.text != pair[1] and reply.metadata["reply"]["fallback"] is True
    assert data(caller.get(f"/v1/conversations/{conversation_id}"))["status"] == "handoff"
    assert clarification(caller, conversation_id)["status"] == "none"


def test_a_no_with_a_new_question_is_answered_as_a_new_message(caller, fake, no_buttons):  # noqa: F811
    agent_id = make_agent(caller)
    add_qa(caller, agent_id, *HOURS)
    add_qa(caller, agent_id, *COST)
    channel_id = agent_channel(caller, agent_id)["id"]
    conversation_id, question = ask(channel_id, "when are you open on saturday?")
    assert question.text.startswith("Do you mean “What are your opening hours”?")
    reply = answer(channel_id, conversation_id, "no, how much does delivery cost?")
    assert reply.text == COST[1]
    assert clarification(caller, conversation_id)["status"] == "other"


def test_buttons_are_yes_and_no_and_a_press_answers(caller, fake, monkeypatch):  # noqa: F811
    monkeypatch.setattr(adapters.channel_type("whatsapp"), "buttons", True)
    channel_id = one_qa(caller, "es", ONE["es"][0])
    conversation_id, question = ask(channel_id, "¿abren el sábado?")
    assert question.text == "¿Te refieres a “Cuál es el horario de atención”?"
    assert question.metadata["buttons"] == [
        {"text": "Sí", "data": "choice:1"},
        {"text": "No", "data": "choice:0"},
    ]
    pressed = {"interactive": {"type": "button_reply", "id": "choice:1", "title": "Sí"}}
    customer_says(channel_id, "Sí", at(10), type="interactive", metadata=pressed)
    run_replies(at(15))
    assert outbound(conversation_id)[-1].text == ONE["es"][0][1]


def test_several_candidates_are_still_a_menu(caller, fake, no_buttons):  # noqa: F811
    agent_id = make_agent(caller)
    for pair in (COST, AREA):
        add_qa(caller, agent_id, *pair)
    channel_id = agent_channel(caller, agent_id)["id"]
    conversation_id, question = ask(channel_id, "do you deliver?")
    assert question.text.startswith("Do you mean:\n1. ")
    assert "\n0. None of these\n" in question.text
    # A yes is no choice between two: it is a new message.
    answer(channel_id, conversation_id, "yes")
    assert clarification(caller, conversation_id)["status"] == "other"


def test_the_test_chat_asks_the_same_yes_no_question(caller, fake):  # noqa: F811
    agent_id = make_agent(caller)
    add_qa(caller, agent_id, *HOURS)
    said = chat_trial.ask(caller.workspace_id, agent_id, "when are you open on saturday?")
    assert said["text"] == "Do you mean “What are your opening hours”? Reply yes or no."
    assert said["why"].startswith("Asked back: one Q&A is close but not sure enough")


# --- the question's punctuation and the reading, as functions ----------------------


@pytest.mark.parametrize(
    "label, core",
    [
        ("What are your opening hours?", "What are your opening hours"),
        ("Book a table!", "Book a table"),
        ("Opening hours.", "Opening hours"),
        ("Opening hours", "Opening hours"),
        ("¿Hacen envíos?", "Hacen envíos"),
        ("Really?!", "Really"),
        ("Where is the shop …", "Where is the shop …"),
    ],
)
@pytest.mark.parametrize("language", ["en", "pt-BR", "es-MX"])
@pytest.mark.parametrize("numbered", [True, False])
def test_the_punctuation_is_never_doubled(label, core, language, numbered):
    asked = clarifying.question([label], language, numbered)
    assert f"“{core}”?" in asked
    assert not DOUBLED.search(asked)
    assert asked.count("?") == 1 and asked.endswith(".") == numbered


@pytest.mark.parametrize(
    "text, number",
    [
        ("yes", 1),
        ("Yes please!", 1),
        ("yeah, thanks", 1),
        ("Sim, obrigado", 1),
        ("sí", 1),
        ("si por favor", 1),
        ("no", 0),
        ("Não", 0),
        ("nope", 0),
        ("0", 0),
        ("1", 1),
        ("none", 0),
        ("no, how much is delivery?", None),
        ("yes but on sunday?", None),
        ("2", None),
        ("", None),
    ],
)
def test_reading_a_yes_or_a_no(text, number):
    assert clarifying.reading(text, None, [HOURS[0]]) == number


def test_a_yes_is_no_choice_among_several():
    assert clarifying.reading("yes", None, [COST[0], AREA[0]]) is None
    assert clarifying.reading("no", None, [COST[0], AREA[0]]) is None
