"""Words the agent says on its own (fallback, handoff notice, small talk) in a
few languages, and how a reply is cut to the agent's maximum length and
split at the channel's size limit on sentence boundaries."""

import re

from .matching import words

# Used when the agent's settings leave the text empty. Languages without an
# entry get English.
BUILT_IN = {
    "en": {
        "fallback": "Sorry, I can't answer that right now. A person from our team will get "
        "back to you as soon as possible.",
        "handoff": "Sure, I'm passing you to a person from our team. They will answer you here.",
        "small_talk": "Hello! How can I help you?",
        "thanks": "You're welcome! Is there anything else I can help you with?",
    },
    "pt": {
        "fallback": "Desculpe, não consigo responder isso agora. Uma pessoa da nossa equipe vai "
        "falar com você assim que possível.",
        "handoff": "Claro, vou passar você para uma pessoa da nossa equipe. Ela vai responder "
        "por aqui.",
        "small_talk": "Olá! Como posso ajudar?",
        "thanks": "Por nada! Posso ajudar em mais alguma coisa?",
    },
    "es": {
        "fallback": "Lo siento, no puedo responder eso ahora. Una persona de nuestro equipo te "
        "contestará lo antes posible.",
        "handoff": "Claro, te paso con una persona de nuestro equipo. Te responderá por aquí.",
        "small_talk": "¡Hola! ¿En qué puedo ayudarte?",
        "thanks": "¡De nada! ¿Puedo ayudarte con algo más?",
    },
}
_THANKS = {"thanks", "thank", "thx", "ty", "obrigado", "obrigada", "valeu", "brigado", "gracias"}
_SENTENCE = re.compile(r"(?<=[.!?…])\s+|\n+")


def built_in(language, key):
    base = (language or "en").split("-")[0].lower()
    return BUILT_IN.get(base, BUILT_IN["en"])[key]


def setting_or_built_in(settings, name, language, key):
    """The agent's text `name` from its settings, else the built-in one."""
    value = (settings.get(name) or "").strip()
    return value or built_in(language, key)


def small_talk_reply(text, language):
    """The answer to a message with nothing to look up (hello, thanks, ok)."""
    key = "thanks" if _THANKS & set(words(text)) else "small_talk"
    return built_in(language, key)


def sentences(text):
    return [part.strip() for part in _SENTENCE.split(text.strip()) if part.strip()]


def shorten(text, limit):
    """`text` cut to at most `limit` characters: whole sentences while they
    fit, else the first sentence cut at a word boundary with an ellipsis."""
    text = text.strip()
    if len(text) <= limit:
        return text
    kept = ""
    for sentence in sentences(text):
        candidate = f"{kept} {sentence}".strip()
        if len(candidate) > limit:
            break
        kept = candidate
    if kept:
        return kept
    cut = text[: max(1, limit - 1)].rsplit(" ", 1)[0].rstrip(" ,;:")
    return cut[: limit - 1] + "…"


def split(text, limit):
    """`text` in parts of at most `limit` characters, cut between sentences;
    a sentence longer than the limit is cut between words (a word longer
    than it, anywhere)."""
    text = text.strip()
    if len(text) <= limit:
        return [text] if text else []
    parts, current = [], ""
    for piece in _pieces(text, limit):
        candidate = f"{current} {piece}" if current else piece
        if len(candidate) <= limit:
            current = candidate
        else:
            parts.append(current)
            current = piece
    if current:
        parts.append(current)
    return parts


def _pieces(text, limit):
    """Sentences, with over-long ones broken into word runs that fit."""
    for sentence in sentences(text):
        if len(sentence) <= limit:
            yield sentence
            continue
        run = ""
        for word in sentence.split():
            while len(word) > limit:
                if run:
                    yield run
                    run = ""
                yield word[:limit]
                word = word[limit:]
            candidate = f"{run} {word}" if run else word
            if len(candidate) <= limit:
                run = candidate
            else:
                yield run
                run = word
        if run:
            yield run
