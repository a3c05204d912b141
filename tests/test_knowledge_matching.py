"""The offline `knowledge` provider's matcher: normalisation, Q&A choice,
passages, thresholds, caching and determinism (replies/knowledge.py)."""

import random
from types import SimpleNamespace

import pytest

from agent_platform.replies import knowledge, knowledge_index
from agent_platform.replies.knowledge import decide
from agent_platform.replies.matching import fold, terms
from agent_platform.replies.typos import edit_distance

PIZZERIA = [
    {"id": "fee", "type": "qa", "question": "How much does delivery cost?",
     "answer": "Delivery is $3.99 on orders under $25 and free from $25."},
    {"id": "time", "type": "qa", "question": "How long does delivery take?",
     "answer": "Usually 30 to 45 minutes after you order."},
    {"id": "area", "type": "qa", "question": "Which areas do you deliver to?",
     "answer": "We deliver within 5 km: Downtown, Riverside and Oak Park."},
    {"id": "hours", "type": "qa", "question": "What are your opening hours?",
     "answer": "Monday to Saturday 11am-10pm, Sunday 12pm-9pm."},
    {"id": "payment", "type": "qa", "question": "What payment methods do you accept?",
     "answer": "Cash, credit and debit cards, Apple Pay and Google Pay."},
    {"id": "vegan", "type": "qa", "question": "Do you have vegan options?",
     "answer": "Yes: vegan cheese on any pizza and the Garden Vegan pizza."},
    {"id": "about", "type": "text", "title": "About us",
     "content": "Our dough rests for 48 hours and is baked in a wood-fired oven.\n\n"
     "There is free parking behind the building, with 12 spaces.\n\n"
     "We are always hiring delivery drivers: send your CV to jobs@example.com."},
]  # fmt: skip

LOJA = [
    {"id": "frete", "type": "qa", "question": "Quanto custa o frete?",
     "answer": "O frete é grátis acima de R$ 199; abaixo disso é calculado pelo CEP."},
    {"id": "prazo", "type": "qa", "question": "Qual é o prazo de entrega?",
     "answer": "De 2 a 10 dias úteis após a confirmação do pagamento."},
    {"id": "troca", "type": "qa", "question": "Como faço para trocar um produto?",
     "answer": "A primeira troca é grátis em até 30 dias após o recebimento."},
    {"id": "parcelas", "type": "qa", "question": "Posso parcelar a compra?",
     "answer": "Sim, em até 6x sem juros no cartão de crédito."},
    {"id": "promocao", "type": "qa", "question": "Vocês têm promoções?",
     "answer": "Toda semana há ofertas na página Promoções."},
]  # fmt: skip

GIMNASIO = [
    {"id": "precio", "type": "qa", "question": "¿Cuánto cuesta la mensualidad?",
     "answer": "El plan mensual cuesta 35 € y el anual 300 €."},
    {"id": "horario", "type": "qa", "question": "¿Cuál es el horario del gimnasio?",
     "answer": "De lunes a viernes de 6:00 a 23:00."},
    {"id": "baja", "type": "qa", "question": "¿Cómo me doy de baja?",
     "answer": "En recepción o por email, con 15 días de antelación."},
]  # fmt: skip


def answer(message, trainings=PIZZERIA, language="en", settings=None):
    return decide(message, trainings, language, settings)


# --- normalisation


def test_fold_removes_case_and_accents():
    assert fold("PROMOÇÃO Órgão Mañana") == "promocao orgao manana"


@pytest.mark.parametrize(
    ("language", "one", "other"),
    [
        ("pt-BR", "Promoção", "promocao"),
        ("pt-BR", "promoções", "PROMOCAO"),
        ("es", "Cancelación", "cancelacion"),
        ("en", "Café", "cafe"),
    ],
)
def test_accents_and_case_do_not_change_terms(language, one, other):
    assert terms(one, language) == terms(other, language) != []


@pytest.mark.parametrize(
    ("language", "words"),
    [
        ("en", ["delivery", "deliveries", "delivering", "delivered"]),
        ("en", ["order", "orders", "ordering", "ordered"]),
        ("en", ["cancellation", "cancelled", "cancel"]),
        ("pt-BR", ["entrega", "entregas", "entregar", "entregamos"]),
        ("pt-BR", ["parcela", "parcelas", "parcelar", "parcelamento"]),
        ("es", ["clase", "clases"]),
        ("es", ["reserva", "reservas", "reservar"]),
        ("es", ["cuesta", "costo"]),  # stressed-vowel diphthong undone
    ],
)
def test_word_families_share_one_term(language, words):
    found = {tuple(terms(word, language)) for word in words}
    assert len(found) == 1 and found != {()}


def test_different_words_keep_different_terms():
    assert terms("order", "en") != terms("oven", "en")
    assert terms("troca", "pt-BR") != terms("trabalho", "pt-BR")


def test_greetings_stop_words_and_numbers_are_dropped():
    assert terms("Hi there, good morning! Thanks :)", "en") == []
    assert terms("Oi, tudo bem? Bom dia!", "pt-BR") == []
    assert terms("Hola, buenos días, gracias", "es") == []
    assert terms("table for 6", "en") == terms("table", "en")


def test_chat_abbreviations_are_expanded():
    assert terms("qnto eh o frete?", "pt-BR") == terms("quanto é o frete?", "pt-BR")
    assert terms("how much r u charging pls", "en") == terms("how much are you charging", "en")


def test_everyday_synonyms_become_one_concept():
    assert terms("price", "en") == terms("fee", "en") == terms("how much", "en")
    assert terms("quanto custa", "pt-BR") == terms("valor", "pt-BR")


def test_unknown_language_still_folds_and_strips_plurals():
    assert terms("Châteaux châteaus", "fr") == ["chateaux", "chateau"]


def test_edit_distance_counts_a_swap_as_one_edit():
    assert edit_distance("delivery", "delivry", 2) == 1
    assert edit_distance("horario", "horairo", 2) == 1
    assert edit_distance("delivery", "pizza", 2) == 3  # over the limit: limit + 1


# --- choosing a Q&A


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ("hi! how much is delivery?", "fee"),
        ("is delivery free?", "fee"),
        ("how long does delivery take", "time"),
        ("do you deliver to Riverside?", "area"),
        ("what time do you close?", "hours"),
        ("can I pay with Apple Pay", "payment"),
        ("any vegan pizzas?", "vegan"),
    ],
)
def test_close_topics_each_get_their_own_answer(message, expected):
    decision = answer(message)
    assert (decision.kind, decision.training_id) == ("qa", expected)
    assert decision.text == next(t["answer"] for t in PIZZERIA if t["id"] == expected)
    assert decision.score >= knowledge.QA_THRESHOLD


def test_a_near_topic_question_does_not_steal_another_answer():
    # Shares "delivery" with three Q&As, but asks how long: the time Q&A, and
    # the runner-up (another delivery Q&A) stays clearly behind.
    decision = answer("delivery time on a friday night?")
    assert decision.training_id == "time"
    assert decision.runner_up_id in {"fee", "area"}
    assert decision.score - decision.runner_up >= knowledge.QA_MARGIN


@pytest.mark.parametrize(
    "message", ["delivry time?", "how long does delivey take", "opening hrs", "vegann options?"]
)
def test_a_typo_still_matches(message):
    assert answer(message).kind == "qa"


def test_typos_match_the_intended_answer():
    assert answer("delivry time?").training_id == "time"
    assert answer("payment methds?").training_id == "payment"


@pytest.mark.parametrize(
    "message",
    ["hi", "thanks so much!!", "ok cool", "lol", "hello, good morning", "", "   ", "?!"],
)
def test_small_talk_gets_no_answer(message):
    decision = answer(message)
    assert (decision.kind, decision.text, decision.training_id) == ("none", None, None)
    assert not decision.answered


@pytest.mark.parametrize(
    "message",
    [
        "do you sell pizza ovens?",  # shares "pizza"/"oven" with trainings, asks something else
        "what's the wifi password",
        "I want to talk to the manager",
    ],
)
def test_other_subjects_get_no_answer(message):
    assert answer(message).kind == "none"


def test_portuguese_without_accents_and_with_slang():
    assert answer("oi, qnto eh o frete?", LOJA, "pt-BR").training_id == "frete"
    assert answer("quanto tempo demora pra chegar?", LOJA, "pt-BR").training_id == "prazo"
    assert answer("da pra parcelar?", LOJA, "pt-BR").training_id == "parcelas"
    assert answer("como funciona a troca", LOJA, "pt-BR").training_id == "troca"
    assert answer("obrigada!!", LOJA, "pt-BR").kind == "none"


def test_spanish():
    assert answer("hola cuanto cuesta el mes?", GIMNASIO, "es").training_id == "precio"
    assert answer("a que hora abren", GIMNASIO, "es-MX").training_id == "horario"
    assert answer("quiero darme de baja", GIMNASIO, "es").training_id == "baja"


def test_near_ties_between_different_answers_are_left_to_a_human():
    trainings = [
        {"id": "a", "type": "qa", "question": "Do you deliver pizza?", "answer": "Yes."},
        {"id": "b", "type": "qa", "question": "Do you deliver pasta?", "answer": "No."},
    ]
    decision = answer("do you deliver?", trainings)
    assert decision.kind == "none"
    assert decision.score == decision.runner_up > 0
    tie_allowed = {"qa_margin": 0, "qa_runner_up_ratio": 1}
    assert answer("do you deliver?", trainings, settings=tie_allowed).training_id == "a"
    # The runner-up must also score at most 90% of the best (a relative margin).
    assert answer("do you deliver?", trainings, settings={"qa_margin": 0}).kind == "none"


def test_duplicate_answers_are_not_a_tie():
    trainings = [
        {"id": "a", "type": "qa", "question": "Do you deliver pizza?", "answer": "Yes, we do."},
        {"id": "b", "type": "qa", "question": "Do you deliver pasta?", "answer": "Yes, we do."},
    ]
    assert answer("do you deliver?", trainings).training_id == "a"


def test_complaints_and_praise_are_left_to_a_human():
    assert answer("your delivery guy was really rude").kind == "none"
    assert answer("the pizza was amazing, loved it").kind == "none"
    service = [
        {"id": "atend", "type": "qa", "question": "Qual é o horário de atendimento?",
         "answer": "De segunda a sexta, das 8h às 18h."},
        {"id": "frete", "type": "qa", "question": "Quanto custa o frete?", "answer": "R$ 15."},
    ]  # fmt: skip
    assert answer("horário de atendimento?", service, "pt-BR").training_id == "atend"
    assert answer("péssimo atendimento, vcs são lerdos", service, "pt-BR").kind == "none"
    room = [
        {"id": "dirty", "type": "qa", "question": "What if my room is dirty?",
         "answer": "Call the front desk and we clean it at once."},
        {"id": "wifi", "type": "qa", "question": "Is there wifi in the room?", "answer": "Yes."},
    ]  # fmt: skip
    # A complaint the trainings are about is answered.
    assert answer("my room is dirty!", room).training_id == "dirty"


def test_a_generic_verb_does_not_carry_a_message_about_something_else():
    shop = [
        {"id": "ebikes", "type": "qa", "question": "Do you sell electric bikes?",
         "answer": "Yes, from $1,800."},
        {"id": "rent", "type": "qa", "question": "How much is it to rent a bike?",
         "answer": "$25 a day."},
        {"id": "repair", "type": "qa", "question": "How long does a repair take?",
         "answer": "1-2 days."},
        {"id": "hours", "type": "qa", "question": "When are you open?", "answer": "9 to 5."},
    ]  # fmt: skip
    assert answer("do you sell skateboards?", shop).kind == "none"
    assert answer("do you sell helmets?", shop).kind == "none"
    assert answer("do you sell e-bikes?", shop).training_id == "ebikes"


def test_a_word_of_the_same_family_matches():
    pets = [
        {"id": "dogs", "type": "qa", "question": "Vocês aceitam cachorro?", "answer": "Sim."},
        {"id": "hours", "type": "qa", "question": "Qual o horário?", "answer": "9h às 18h."},
    ]
    assert answer("posso levar meu cachorrinho?", pets, "pt-BR").training_id == "dogs"


def test_verbs_with_a_particle_keep_it():
    hotel = [
        {"id": "in", "type": "qa", "question": "What time is check-in?", "answer": "3pm."},
        {"id": "out", "type": "qa", "question": "What time is check-out?", "answer": "11am."},
    ]
    assert answer("checkout time?", hotel).training_id == "out"
    assert answer("when can we check in", hotel).training_id == "in"
    assert answer("can we check out late?", hotel).training_id == "out"


# --- passages


def test_passage_from_a_text_training_when_no_qa_matches():
    decision = answer("is there parking?")
    assert (decision.kind, decision.training_id) == ("passage", "about")
    assert decision.text == "There is free parking behind the building, with 12 spaces."


def test_passage_is_the_paragraph_whose_sentence_matches():
    decision = answer("are you hiring drivers")
    assert decision.kind == "passage" and decision.text.startswith("We are always hiring")


@pytest.mark.parametrize("kind", ["url", "document"])
def test_pages_and_documents_give_passages_too(kind):
    page = {"id": "p", "type": kind, "title": "Parking", "content": "Free parking behind us."}
    decision = answer("where do I park?", [page])
    assert (decision.kind, decision.training_id, decision.text) == (
        "passage",
        "p",
        "Free parking behind us.",
    )


def test_a_good_qa_wins_over_a_passage_that_shares_its_words():
    decision = answer("how much does delivery cost?")
    assert (decision.kind, decision.training_id) == ("qa", "fee")


def test_long_paragraphs_are_cut_at_sentence_ends():
    sentence = "The quick brown fox jumps over the lazy dog near the river bank. "
    text = {"id": "t", "type": "text", "title": "", "content": sentence * 30 + "Foxes love owls."}
    decision = answer("do foxes love owls?", [text])
    assert decision.kind == "passage"
    assert decision.text.endswith("Foxes love owls.")
    assert len(decision.text) <= knowledge_index.PASSAGE_CHARS + len(sentence)


# --- thresholds, inputs, caching, determinism


def test_thresholds_come_from_settings():
    assert answer("how much is delivery?", settings={"qa_threshold": 1.01}).kind != "qa"
    assert answer("are you hiring?").kind == "passage"
    assert answer("are you hiring?", settings={"passage_threshold": 1.01}).kind == "none"
    strict = answer("how much is delivery?", settings={"qa_threshold": "high", "other": 1})
    assert strict.training_id == "fee"  # not a number: the default stays


def test_thresholds_helper_lists_the_defaults():
    assert knowledge.thresholds(None) == {
        "qa_threshold": knowledge.QA_THRESHOLD,
        "qa_margin": knowledge.QA_MARGIN,
        "qa_runner_up_ratio": knowledge.QA_RUNNER_UP_RATIO,
        "passage_threshold": knowledge.PASSAGE_THRESHOLD,
    }
    assert knowledge.thresholds({"qa_threshold": 1, "qa_margin": True})["qa_margin"] == (
        knowledge.QA_MARGIN
    )


def test_training_objects_work_like_dicts():
    objects = [SimpleNamespace(status="ready", **training) for training in PIZZERIA]
    for message in ("how much is delivery?", "is there parking?", "hi"):
        assert answer(message, objects) == answer(message, PIZZERIA)


def test_failed_trainings_are_ignored():
    failed = [{**training, "status": "failed"} for training in PIZZERIA]
    assert answer("how much is delivery?", failed).kind == "none"


def test_no_trainings_no_answer():
    assert answer("how much is delivery?", []).kind == "none"


def test_an_edited_training_is_used_at_once():
    assert answer("how much is delivery?").text.startswith("Delivery is $3.99")
    edited = [dict(t) for t in PIZZERIA]
    edited[0]["answer"] = "Delivery is always free."
    assert answer("how much is delivery?", edited).text == "Delivery is always free."
    edited[0].update(question="Do you sell gift cards?", answer="Yes, in the shop.")
    assert answer("how much is delivery?", edited).training_id != "fee"
    assert answer("gift cards?", edited).text == "Yes, in the shop."
    assert answer("how much is delivery?", PIZZERIA[1:]).training_id != "fee"


def test_decisions_are_deterministic():
    messages = ["how much is delivery?", "delivry time?", "is there parking?", "hi", "vegan?"]
    first = [answer(message) for message in messages]
    knowledge_index.clear_caches()
    assert [answer(message) for message in messages] == first
    shuffled = PIZZERIA[:]
    random.Random(3).shuffle(shuffled)
    assert [answer(message, shuffled) for message in messages] == first


def test_a_large_agent_still_finds_the_answer():
    trainings = [
        {"id": f"q{n}", "type": "qa", "question": f"Question {n} about topic{n}?", "answer": "A."}
        for n in range(300)
    ] + PIZZERIA
    answer("warm up the cache", trainings)
    decision = answer("how much is delivery?", trainings)
    assert decision.training_id == "fee"
