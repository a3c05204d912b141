"""The index the `knowledge` provider scores a message against (see
knowledge.py for the decision it feeds).

Scoring (deterministic: same trainings, in any order, and same message give
the same decision; equal scores go to the smaller training id):
- Message and trainings are reduced to terms by `matching.analyse` (folded,
  stemmed, stop words out, everyday synonyms as one concept). A message word
  the agent's trainings do not have is tried as a hyphenated word written
  joined ("checkup" for "check-up"), then as a typo of a known word (one
  edit, two for long words, a short word's letter only for a neighbour key;
  `TYPO_QUALITY`), then as a word of the same family (a long shared
  beginning, or a compound ending with a known word: "pupilentes" /
  "lentes"; `FAMILY_QUALITY`).
- Each term weighs its inverse document frequency over the agent's units (a
  word every Q&A shares says little); a word no training has weighs
  `UNKNOWN_WEIGHT` of the most: it may be the real subject of the message.
  Generic verbs (sell, offer, come, see...) weigh `LIGHT_WEIGHT` of their
  due, and `UNKNOWN_LIGHT` of an unknown word when no training has them.
- A Q&A scores the F-beta (`BETA`) of how much of the message's weight it
  covers (question words fully, answer words at `ANSWER_WEIGHT`) and how much
  of its question's weight that makes (capped at 1). A message word under a
  concept that a training has as such (not only a synonym of it) adds
  `ALIAS_BONUS` of the concept's weight: "boleto" is @pay, and the Q&A that
  says "boleto" beats the one that says "cartão". A passage scores by its
  best sentence: the share of the message's weight the sentence (and, at
  `TITLE_WEIGHT`, its training's title) covers.

Trainings are analysed once and kept, one analysis per training for its
text; an agent's index is kept for all of them, one per agent, so a change
to any training (or its removal) builds a new one on the next message, in
place of the old. A first analysis of a long text takes seconds: it lets
the server's other requests run every few milliseconds (turns). Plain
Python, standard library only, no Flask.
"""

import math
import re
from dataclasses import dataclass
from functools import partial

from ..turns import give_way_if_due
from .built import BuiltOnce
from .matching import analyse, compounds, profile
from .typos import Endings, Fuzzy, Prefixes, lexicon_fuzzy

# A message term found only in a Q&A's answer counts this much of a question hit.
ANSWER_WEIGHT = 0.5
# A message word under a concept ("boleto": @pay) that a training has as
# such adds this share of the concept's weight: the exact word beats a synonym.
ALIAS_BONUS = 0.3
# A passage's training title counts like this much of its text.
TITLE_WEIGHT = 0.5
# A message word no training has weighs this share of what the rarest known
# word weighs: it is often the real subject ("do you sell skateboards?"), so
# as much as the rarest word; chatter is kept out by the stop words instead.
UNKNOWN_WEIGHT = 1.0
# Q&A score: F-beta of message coverage (recall) and question coverage;
# beta > 1 favours covering the message over covering every word of the
# question (customers ask in fewer words than the question was written in).
BETA = 1.5
# Generic verbs (sell, offer, bring...: lexicons.py) weigh this share of
# what their frequency says.
LIGHT_WEIGHT = 0.5
# ...and a generic verb no training has ("venir", "conseguir") weighs this
# share of an unknown word: it is not the subject the trainings lack.
UNKNOWN_LIGHT = 0.25
# A word of the same family (a long shared beginning) counts this much.
FAMILY_QUALITY = 0.7
# A typo (one or two edits from a known word) counts this much of the word.
TYPO_QUALITY = {1: 0.8, 2: 0.65}
# Trainings a Decision lists as candidates for a clarifying question.
CANDIDATES = 3
# Passages: paragraphs, long ones cut at sentence ends into about this many characters.
PASSAGE_CHARS = 600

_ROW_FIELDS = ("id", "type", "status", "question", "answer", "title", "content")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


# --- trainings -> units (a Q&A, or one passage of a text) -> an agent index


def _row(training):
    """(id, type, status, text fields) of a training object or dict."""
    if isinstance(training, dict):
        values = [training.get(name) for name in _ROW_FIELDS]
    else:
        values = [getattr(training, name, None) for name in _ROW_FIELDS]
    values = ["" if value is None else str(value) for value in values]
    return (*values[:3], tuple(values[3:]))


@dataclass(frozen=True)
class _Unit:
    training_id: str
    kind: str  # "qa" | "passage"
    text: str  # what is sent: the answer, or the passage
    main: frozenset  # question terms / passage terms
    extra: frozenset  # answer terms / title terms not already in main
    aliases: tuple  # ((concept, own term of a word under it, in main), ...)
    surfaces: tuple  # (folded word, term) pairs, for typo matching
    compounds: tuple  # ("checkup", ("check",)) for the text's "check-up"


def passages(content):
    """A text cut into passages: paragraphs, long ones at sentence ends."""
    for paragraph in re.split(r"\n\s*\n|\r\n\s*\r\n", content or ""):
        paragraph = " ".join(paragraph.split())
        chunk = ""
        for sentence in _SENTENCE_END.split(paragraph):
            if chunk and len(chunk) + len(sentence) > PASSAGE_CHARS:
                yield chunk
                chunk = ""
            chunk = f"{chunk} {sentence}".strip()
        if chunk:
            yield chunk


def _units_of(row, language):
    """The units of one training row (kept per id, type and language, for its text)."""
    training_id, kind, _, fields = row
    build = partial(_analysed, training_id, kind, fields, language)
    return _UNITS.get((training_id, kind, language), build, hash(fields))


def _analysed(training_id, kind, fields, language):
    return tuple(_analyse_training(training_id, kind, fields, language))


def _analyse_training(training_id, kind, fields, language):
    question, answer, title, content = fields
    same = _Same()
    if kind == "qa":
        # Each line of the question is a way to ask it (a variant): one unit
        # each, with the same answer (so never one another's runner-up).
        variants = [line for line in question.splitlines() if line.strip()]
        if answer.strip():
            for variant in variants:
                yield _unit(training_id, "qa", answer.strip(), variant, answer, language, same)
        return
    # A passage is scored by its best sentence: the message's words must
    # meet in one sentence, not be scattered over a paragraph.
    for passage in passages(content):
        for sentence in _SENTENCE_END.split(passage):
            yield _unit(training_id, "passage", passage, sentence, title, language, same)
            give_way_if_due()  # a text of a million characters takes seconds


def _unit(training_id, kind, text, main_text, extra_text, language, same):
    main, extra = analyse(main_text, language), analyse(extra_text, language)
    main_terms = frozenset(same(token.term) for token in main)
    aliases = {}
    for tokens, in_main in ((extra, False), (main, True)):
        for token in tokens:
            if token.alias:
                aliases[(token.term, token.alias)] = in_main
    return _Unit(
        training_id=training_id,
        kind=kind,
        text=text,
        main=main_terms,
        extra=same(frozenset(same(token.term) for token in extra) - main_terms),
        aliases=tuple(sorted((c, a, f) for (c, a), f in aliases.items())),
        surfaces=tuple({same((same(t.surface), same(t.term))) for t in main + extra if t.surface}),
        compounds=tuple(compounds(f"{main_text}\n{extra_text}", language).items()),
    )


class _Same(dict):
    """Equal values of one training's units as one object each (`same(value)`:
    the equal value seen before, else `value`): a text of a million
    characters made 140,000 strings of the same few thousand words."""

    def __call__(self, value):
        return self.setdefault(value, value)


_UNITS = BuiltOnce(20_000)
_INDEXES = BuiltOnce(64)


def clear_caches():
    """Forget every analysed training and index (a benchmark's cold start)."""
    _UNITS.clear()
    _INDEXES.clear()


def agent_index(trainings, language, owner=None):
    """The index of these trainings, cached by their ids, types and texts (a
    change to any of them, or another language, makes another index). Failed
    trainings (status "failed") are left out. `owner` (an agent's trainings,
    say): the one index kept for it, replaced by one of other trainings."""
    rows = tuple(row for row in map(_row, trainings) if row[2] in ("", "ready"))
    version = (len(rows), hash(rows))
    key = (language, version) if owner is None else (language, owner)
    return _INDEXES.get(key, lambda: _Index(_units(rows, language), language), version)


def _units(rows, language):
    return tuple(unit for row in rows for unit in _units_of(row, language))


@dataclass
class _Best:
    best: _Unit | None = None
    score: float = 0.0
    question_hit: bool = False  # a word of the best unit's question (or sentence) matched
    whole_question: bool = False  # every term of the best unit's question is in the message
    runner_up_whole: bool = False  # ...and of the runner-up's
    runner_up: float = 0.0
    runner_up_id: str | None = None
    candidates: tuple = ()  # (training id, score) of the best units with different answers

    def drop_unless(self, terms):
        """Forget the best unit when it lacks one of `terms`."""
        if self.best is not None and terms - (self.best.main | self.best.extra):
            self.score = self.runner_up = 0.0
            self.candidates = ()


@dataclass(frozen=True)
class _Message:
    terms: dict  # term -> quality
    aliases: frozenset  # (concept, own term) pairs the index knows

    def keys(self):
        return self.terms.keys()

    def items(self):
        return self.terms.items()

    def __iter__(self):
        return iter(self.terms)


class _Index:
    def __init__(self, units, language):
        self.units, self.language = units, language
        self.lexicon, self.light = profile(language).lexicon, profile(language).light
        document_frequency = {}
        for unit in units:
            for term in unit.main | unit.extra:
                document_frequency[term] = document_frequency.get(term, 0) + 1
            give_way_if_due()
        count = len(units)
        self.idf = {term: _idf(count, df) for term, df in document_frequency.items()}
        self.unknown_idf = UNKNOWN_WEIGHT * max(self.idf.values(), default=1.0)
        for term in profile(language).light:
            if term in self.idf:
                self.idf[term] *= LIGHT_WEIGHT
        self.postings = {}  # term -> [(unit position, weight factor)]
        for position, unit in enumerate(units):
            # One pair per unit, shared by its terms' postings (a text of a
            # million characters made 180,000 of them, 11 MB).
            main = (position, 1.0)
            extra = (position, ANSWER_WEIGHT if unit.kind == "qa" else TITLE_WEIGHT)
            for term in unit.main:
                self.postings.setdefault(term, []).append(main)
            for term in unit.extra:
                self.postings.setdefault(term, []).append(extra)
            give_way_if_due()
        self.main_weight = [sum(self.idf[t] for t in unit.main) for unit in units]
        # (concept, own term) -> [(unit position, weight factor)]: the exact
        # word under a concept, worth ALIAS_BONUS of the concept on top.
        self.alias_postings = {}
        for position, unit in enumerate(units):
            extra_factor = ANSWER_WEIGHT if unit.kind == "qa" else TITLE_WEIGHT
            for concept, alias, in_main in unit.aliases:
                factor = 1.0 if in_main else extra_factor
                self.alias_postings.setdefault((concept, alias), []).append((position, factor))
        self.surface_terms = {}
        for unit in units:
            for surface, term in unit.surfaces:
                self.surface_terms.setdefault(surface, term)
        self.fuzzy = Fuzzy(self.surface_terms)
        self.prefixes = Prefixes(self.surface_terms)
        self.endings = Endings(self.surface_terms)
        self.compounds = dict(pair for unit in units for pair in unit.compounds)

    def message_terms(self, text):
        """term -> quality (1 for a known word, less for a typo's guess);
        `aliases` is set to the message's (concept, own term) pairs."""
        found, aliases = {}, set()
        for token in analyse(text, self.language):
            if token.alias and (token.term, token.alias) in self.alias_postings:
                aliases.add((token.term, token.alias))
            if token.term in self.idf or not token.surface:
                pairs = [(token.term, 1.0)]
            elif token.surface in self.compounds:
                pairs = [(term, 1.0) for term in self.compounds[token.surface]]
            else:
                pairs = [self._typo(token.surface, token.term)]
            for term, quality in pairs:
                if quality > found.get(term, 0.0):
                    found[term] = quality
        return _Message(found, frozenset(aliases))

    def _typo(self, surface, term):
        """The known term a misspelt word stands for: the agent's own words
        first, then the language's concept words; else the word itself."""
        close = self.fuzzy.closest(surface)
        if close is not None:
            return self.surface_terms[close[1]], TYPO_QUALITY[close[0]]
        close = lexicon_fuzzy(self.language).closest(surface)
        if close is not None and close[0]:  # (a concept word itself already is its concept)
            return self.lexicon[close[1]], TYPO_QUALITY[close[0]]
        family = self.prefixes.closest(surface)
        if family is not None:
            return self.surface_terms[family], FAMILY_QUALITY
        family = self.endings.closest(surface)
        if family is not None:
            return self.surface_terms[family], FAMILY_QUALITY
        return term, 1.0

    def _weight(self, term):
        if term in self.idf:
            return self.idf[term]
        return self.unknown_idf * (UNKNOWN_LIGHT if term in self.light else 1.0)

    def best(self, message, kind):
        weights = {t: self._weight(t) * q for t, q in message.items()}
        total = sum(self._weight(t) for t in message)
        covered, main_hits, in_question = {}, set(), {}
        for term, weight in weights.items():
            for position, factor in self.postings.get(term, ()):
                if self.units[position].kind == kind:
                    covered[position] = covered.get(position, 0.0) + weight * factor
                    if factor == 1.0:
                        main_hits.add(position)
                        in_question[position] = in_question.get(position, 0.0) + weight
        for pair in message.aliases:
            weight = weights[pair[0]] * ALIAS_BONUS
            total += self._weight(pair[0]) * ALIAS_BONUS
            for position, factor in self.alias_postings[pair]:
                if self.units[position].kind == kind:
                    covered[position] = covered.get(position, 0.0) + weight * factor
        scored = []
        for position, weight in covered.items():
            message_share = weight / total
            if kind == "qa":
                # Answer hits count here too: "hay zumba?" is answered by the
                # Q&A whose answer lists zumba, though its question does not.
                question_share = min(1.0, weight / (self.main_weight[position] or 1))
                score = _f_beta(message_share, question_share)
            else:
                score = message_share
            scored.append((-score, self.units[position].training_id, position))
        scored.sort()
        result = _Best()
        for negative, _, position in scored:
            unit = self.units[position]
            whole = in_question.get(position, 0.0) >= 0.999 * self.main_weight[position]
            if result.best is None:
                result.best, result.score = unit, -negative
                result.question_hit = position in main_hits
                result.whole_question = whole
            elif unit.text != result.best.text:
                result.runner_up, result.runner_up_id = -negative, unit.training_id
                result.runner_up_whole = whole
                break
        result.candidates = _candidates(self.units, scored)
        return result


def _candidates(units, scored):
    """The first CANDIDATES trainings of `scored` with different answers."""
    found, texts = [], set()
    for negative, training_id, position in scored:
        text = units[position].text
        if text not in texts and all(training_id != seen for seen, _ in found):
            found.append((training_id, round(-negative, 4)))
            texts.add(text)
            if len(found) == CANDIDATES:
                break
    return tuple(found)


def _idf(count, df):
    return math.log(1 + (count - df + 0.5) / (df + 0.5))


def _f_beta(recall, precision):
    beta2 = BETA * BETA
    denominator = beta2 * precision + recall
    return (1 + beta2) * precision * recall / denominator if denominator else 0.0
