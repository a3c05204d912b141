"""Asking back instead of guessing: when the knowledge matcher is unsure,
the agent offers the customer its best Q&A trainings to choose from.

`choices(decision, settings)` says which trainings to offer, best first (at
most `knowledge_index.CANDIDATES`), or () to answer or fall back as decided:
- a Q&A answer is kept when it scores at least `clarify_sure` and the next
  Q&A with another answer scores at most `CLOSE_RATIO` of it; otherwise the
  agent asks between the Q&A trainings scoring at least `SHARE` of the best;
- a message left unanswered is asked about when its best Q&A scores at least
  `clarify_floor` (relevant, though under the answer threshold);
- a passage answer, and a message with no Q&A candidate, are left as decided.
A wrong guess costs the business more than a question: the customer who
meant none of the choices says so, or writes again, and nothing wrong was
said. The values were swept on the splits of bench/answer_quality.py that
were already tuned (tune to blind3), then checked once on blind4.

`question(...)` is what the agent writes, `buttons(...)` the channel's
buttons, and `reading(text, data, labels)` turns the customer's next
message into the choice's number (1-based), 0 for "none of these", or None
for anything else (a new message). One choice is a yes/no question, not a
menu: "Do you mean “What are your opening hours”?", with Yes/No buttons
(`choice:1`, `choice:0`) or "Reply yes or no." in the text; a yes reads as
1, a no as 0. Plain Python, no Flask.
"""

import re

from .knowledge import thresholds
from .matching import fold

# An answer scoring at least this, with no close runner-up, is given as it is.
SURE = 0.65
# ...a runner-up with another answer scoring over this share of it is close.
CLOSE_RATIO = 0.6
# An unanswered message whose best Q&A scores at least this is asked about.
FLOOR = 0.25
# Offered with the best: the Q&A trainings scoring at least this share of it.
SHARE = 0.6
SETTINGS = {"clarify_sure": SURE, "clarify_floor": FLOOR}
LABEL_CHARS = 72  # of a training's question, in a choice
BUTTON_DATA = "choice:"  # a button's data: "choice:2"; "choice:0" is "none of these"

# The agent's words in each language the agent may speak: the question over
# several choices, "none of these", how to answer a numbered list, a list's
# button; for one choice, the yes/no question (with "{}" for the choice) and
# its buttons and hint.
TEXTS = {
    "en": {"ask": "Do you mean:", "none": "None of these",
           "how": "Reply with the number, or write your question.", "list": "Choose",
           "one": "Do you mean “{}”?", "yes": "Yes", "no": "No", "yes_no": "Reply yes or no."},
    "pt": {"ask": "Você quer saber:", "none": "Nenhuma destas",
           "how": "Responda com o número ou escreva sua pergunta.", "list": "Escolher",
           "one": "Você quer dizer “{}”?", "yes": "Sim", "no": "Não",
           "yes_no": "Responda sim ou não."},
    "es": {"ask": "¿Te refieres a:", "none": "Ninguna de estas",
           "how": "Responde con el número o escribe tu pregunta.", "list": "Elegir",
           "one": "¿Te refieres a “{}”?", "yes": "Sí", "no": "No",
           "yes_no": "Responde sí o no."},
}  # fmt: skip
_NONE_WORDS = {fold(texts["none"]) for texts in TEXTS.values()} | {
    "none",
    "neither",
    "nenhuma",
    "nenhum",
    "ninguna",
    "ninguno",
}
# Answers to the yes/no question, folded, in any of the languages (a customer
# may answer in another than the agent's), and the polite words around them.
_YES = {"yes", "yeah", "yep", "yup", "y", "sure", "correct", "right", "exactly", "ok", "okay",
        "thats it", "thats right", "sim", "s", "isso", "isso mesmo", "exato", "exatamente",
        "claro", "certo", "si", "eso", "eso es", "exacto", "correcto", "vale"}  # fmt: skip
_NO = {"no", "nope", "nah", "n", "not really", "nao", "nao e", "nao e isso", "no es eso"}
_POLITE = {"please", "thanks", "thank", "you", "obrigado", "obrigada", "por", "favor", "gracias"}
_TERMINAL = ".!?;:,"  # a choice's own end, replaced by the question's "?"
_NUMBER = re.compile(r"^\s*(?:#|n[.ºo°]?\s*)?(\d{1,2})\s*[.)!]?\s*$", re.IGNORECASE)


def choices(decision, settings=None):
    """Training ids to offer, best first, or () (see the module docstring)."""
    limits = thresholds(settings, SETTINGS)
    candidates = decision.candidates
    if decision.kind == "passage" or not candidates:
        return ()
    best = candidates[0][1]
    if decision.kind == "qa":
        close = len(candidates) > 1 and candidates[1][1] > CLOSE_RATIO * best
        if best >= limits["clarify_sure"] and not close:
            return ()
    elif best < limits["clarify_floor"]:
        return ()
    return tuple(training_id for training_id, score in candidates if score >= SHARE * best)


def _texts(language):
    return TEXTS.get((language or "en").split("-")[0].lower(), TEXTS["en"])


def label(question):
    """A training's question as a choice: its first line, cut to LABEL_CHARS."""
    line = " ".join((question or "").strip().splitlines()[0].split()) if question else ""
    if len(line) <= LABEL_CHARS:
        return line
    return line[: LABEL_CHARS - 1].rsplit(" ", 1)[0] + "…"


def question(labels, language, numbered):
    """The agent's question: the choices numbered in the text when the
    channel shows no buttons, else only the question (the buttons carry
    them); one choice is a yes/no question."""
    texts = _texts(language)
    if len(labels) == 1:
        asked = texts["one"].format(_quoted(labels[0]))
        return f"{asked} {texts['yes_no']}" if numbered else asked
    if not numbered:
        return texts["ask"]
    lines = [texts["ask"]] + [f"{number}. {text}" for number, text in enumerate(labels, 1)]
    lines += [f"0. {texts['none']}", texts["how"]]
    return "\n".join(lines)


def _quoted(label):
    """A choice inside the yes/no question, without the end (and Spanish
    opening) marks of its own, so the question's "?" is the only one:
    "What are your opening hours?" -> "What are your opening hours"."""
    core = label.strip().rstrip(_TERMINAL + " ").lstrip("¿¡ ")
    return core or label.strip()


def buttons(labels, language):
    """The metadata of the question on a channel that shows buttons: one
    per choice, then "none of these" (Yes and No for one choice); and the
    name of a list's button."""
    texts = _texts(language)
    if len(labels) == 1:
        found = [{"text": texts["yes"], "data": f"{BUTTON_DATA}1"}]
        found.append({"text": texts["no"], "data": f"{BUTTON_DATA}0"})
    else:
        found = [{"text": text, "data": f"{BUTTON_DATA}{n}"} for n, text in enumerate(labels, 1)]
        found.append({"text": texts["none"], "data": f"{BUTTON_DATA}0"})
    return {"buttons": found, "buttons_label": texts["list"]}


def reading(text, data, labels):
    """The customer's next message as a choice: 1..len(labels), 0 for none of
    these, or None when it is something else (a new message)."""
    if isinstance(data, str) and data.startswith(BUTTON_DATA):
        return _in_range(data[len(BUTTON_DATA) :], len(labels))
    text = (text or "").strip()
    found = _NUMBER.match(text)
    if found:
        return _in_range(found.group(1), len(labels))
    folded = fold(text).strip(" .!?¿¡")
    if folded in _NONE_WORDS:
        return 0
    answer = _yes_or_no(folded) if len(labels) == 1 else None
    if answer is not None:
        return answer
    for number, option in enumerate(labels, 1):
        if folded and folded == fold(option).strip(" .!?¿¡"):
            return number
    return None


def _yes_or_no(folded):
    """1 for a yes ("yes", "Sim, obrigado!", "sí por favor"), 0 for a no,
    None for anything else ("no, I meant delivery" is a new message)."""
    words = re.findall(r"\w+", folded.replace("'", "").replace("\u2019", ""))
    while words and words[-1] in _POLITE:
        words.pop()
    said = " ".join(words)
    if said in _YES:
        return 1
    return 0 if said in _NO else None


def _in_range(digits, count):
    """`digits` (a client's text) as a choice within 0..count, else None.
    isdecimal, not isdigit: int() reads "١" (Arabic-Indic one), not "²"."""
    if not digits.isdecimal() or len(digits) > 3:
        return None
    number = int(digits)
    return number if number <= count else None
