"""The `knowledge` matcher's everyday vocabulary and word handling, through
`decide()`: synonyms any shop's customers use, the exact word beating its
synonym, something gone wrong left to a human, Spanish pronouns joined to
verbs, compound words, short concept words, and the relative margin."""

import pytest

from agent_platform.replies.knowledge import decide
from agent_platform.replies.matching import Fuzzy, stem_es, terms

BAKERY = [
    {"id": "hours", "type": "qa", "question": "What are your opening hours?",
     "answer": "Monday to Saturday 7am to 7pm."},
    {"id": "payment", "type": "qa", "question": "What payment methods do you accept?",
     "answer": "Cash, debit and credit cards, Apple Pay and Google Pay."},
    {"id": "notice", "type": "qa", "question": "How far in advance do I need to order a cake?",
     "answer": "Please order at least 72 hours ahead."},
    {"id": "catering", "type": "qa", "question": "Do you cater for events?",
     "answer": "Yes, pastry platters for 10 to 200 people."},
    {"id": "pets", "type": "qa", "question": "Are pets allowed inside?",
     "answer": "Dogs on a leash are welcome."},
    {"id": "classes", "type": "qa", "question": "Do you run baking classes?",
     "answer": "Sourdough bread workshops on the first Saturday of each month."},
    {"id": "wrong-order", "type": "qa", "question": "My order arrived wrong, what do I do?",
     "answer": "Send us a photo and we'll bring the right one."},
    {"id": "insurance", "type": "qa", "question": "Do you deliver to offices?",
     "answer": "Yes, within 10 km."},
]  # fmt: skip

OFICINA = [
    {"id": "pagamento", "type": "qa", "question": "Quais as formas de pagamento?",
     "answer": "Pix, dinheiro, débito e crédito em até 6x."},
    {"id": "prazo", "type": "qa", "question": "Quanto tempo demora o conserto?",
     "answer": "Serviços simples saem no mesmo dia."},
    {"id": "motor", "type": "qa", "question": "Vocês consertam motor?",
     "answer": "Sim, retífica completa em 7 dias."},
    {"id": "guincho", "type": "qa", "question": "Vocês têm guincho?",
     "answer": "Sim, guincho 24h."},
]  # fmt: skip

OPTICA = [
    {"id": "contacto", "type": "qa", "question": "¿Venden lentes de contacto?",
     "answer": "Sí, mensuales y diarios."},
    {"id": "devolucion", "type": "qa", "question": "¿Cómo devuelvo un producto?",
     "answer": "Tienes 30 días para devolver cualquier producto sin usar."},
    {"id": "horario", "type": "qa", "question": "¿Cuál es su horario?",
     "answer": "De lunes a viernes de 10:00 a 20:00."},
    {"id": "sobre", "type": "text", "title": "Sobre nosotros",
     "content": "Estamos en Av. Juárez 118, frente al parque.\n\n"
     "Vendemos estuches y paños de microfibra."},
]  # fmt: skip


def chosen(message, trainings, language="en", settings=None):
    decision = decide(message, trainings, language, settings)
    return decision.training_id if decision.answered else None


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ("do you take card?", "payment"),  # a way to pay is a payment question
        ("can i pay cash", "payment"),
        ("how many days before do i have to order a cake", "notice"),  # notice, in advance
        ("is it too late to order a cake for saturday?", "notice"),
        ("do you do platters for parties?", "catering"),  # parties, events, catering
        ("can i bring my dog", "pets"),
        ("do you teach bread making?", "classes"),
    ],
)
def test_everyday_synonyms_in_english(message, expected):
    assert chosen(message, BAKERY) == expected


@pytest.mark.parametrize(
    ("message", "expected", "trainings", "language"),
    [
        ("aceita cartão?", "pagamento", OFICINA, "pt-BR"),
        ("parcela no cartão?", "pagamento", OFICINA, "pt-BR"),
        ("aceitam pix", "pagamento", OFICINA, "pt-BR"),
        ("donde estan ubicados?", "sobre", OPTICA, "es-MX"),  # "Av." is an address
    ],
)
def test_everyday_synonyms_in_portuguese_and_spanish(message, expected, trainings, language):
    assert chosen(message, trainings, language) == expected


def test_the_exact_word_beats_its_synonym():
    # "conserta" is a repair word like "conserto" and "consertam": both Q&As
    # have the concept; the one with the customer's own word wins.
    decision = decide("vcs consertam motor?", OFICINA, "pt-BR")
    assert decision.training_id == "motor"
    trainings = [
        {"id": "repair", "type": "qa", "question": "Do you repair bikes?", "answer": "Yes."},
        {"id": "fix", "type": "qa", "question": "Do you fix bikes?", "answer": "Of course."},
    ]
    # A synonym is as good as the word: the two stay a near tie (left to a
    # human), but the exact word ranks first.
    assert decide("can you fix my bike", trainings, "en").best_id == "fix"
    assert decide("can you repair my bike", trainings, "en").best_id == "repair"
    assert decide("can you mend my bike", trainings, "en").score == pytest.approx(
        decide("can you mend my bike", trainings, "en").runner_up
    )


def test_something_gone_wrong_is_left_to_a_human_unless_a_training_speaks_of_it():
    assert chosen("my order arrived wrong", BAKERY) == "wrong-order"
    assert chosen("you forgot half of my order!", BAKERY) == "wrong-order"  # forgot: wrong
    assert chosen("you delivered to the wrong office", BAKERY) is None
    assert chosen("do you deliver to offices?", BAKERY) == "insurance"
    trainings = [{"id": "pay", "type": "qa", "question": "Aceitam boleto?", "answer": "Sim."}]
    assert chosen("aceitam boleto?", trainings, "pt-BR") == "pay"
    assert chosen("meu boleto veio com valor errado", trainings, "pt-BR") is None


def test_spanish_pronouns_joined_to_a_verb_are_dropped():
    assert stem_es("devolverlo") == stem_es("devolver") == stem_es("devolverla")
    assert stem_es("ponerle") == stem_es("poner")
    assert stem_es("perla") != stem_es("per")  # a short word keeps its ending
    assert chosen("cuantos dias tengo para devolverlo", OPTICA, "es") == "devolucion"


def test_a_compound_word_matches_the_word_it_ends_with():
    assert chosen("venden pupilentes?", OPTICA, "es-MX") == "contacto"
    assert chosen("venden anteojos?", OPTICA, "es-MX") is None


def test_a_short_concept_word_must_be_written_as_listed():
    assert "@pet" in terms("are cats allowed?", "en")
    assert "@pet" not in terms("do you cater for events?", "en")  # cater is not cat


def test_a_runner_up_close_in_proportion_is_a_near_tie():
    trainings = [
        {"id": "repair", "type": "qa", "question": "Do you repair bikes?", "answer": "Yes."},
        {"id": "fix", "type": "qa", "question": "Do you fix bikes?", "answer": "Of course."},
    ]
    decision = decide("can you fix my bike", trainings, "en")
    assert decision.kind == "none"  # clear by more than qa_margin, but not by 10%
    assert decision.score - decision.runner_up > 0.03
    assert decision.runner_up > 0.9 * decision.score
    loose = {"qa_runner_up_ratio": 1.0}
    assert decide("can you fix my bike", trainings, "en", loose).training_id == "fix"


def test_a_short_word_with_one_letter_changed_is_a_typo_only_for_neighbour_keys():
    assert Fuzzy(["price"]).closest("prixe") == (1, "price")  # x is next to c
    assert Fuzzy(["levam"]).closest("lavam") is None  # another word: lavar, not levar
    assert Fuzzy(["delivery"]).closest("delivary") == (1, "delivery")  # long words: any letter
    trainings = [
        {"id": "leva", "type": "qa", "question": "Vocês levam e trazem o carro?",
         "answer": "Sim, por R$ 40."},
        {"id": "revisao", "type": "qa", "question": "Quanto custa a revisão do carro?",
         "answer": "A partir de R$ 290."},
        {"id": "prazo", "type": "qa", "question": "Quando o carro fica pronto?",
         "answer": "No mesmo dia."},
    ]  # fmt: skip
    assert chosen("voces levam o carro?", trainings, "pt-BR") == "leva"
    assert chosen("voces lavam o carro?", trainings, "pt-BR") is None
