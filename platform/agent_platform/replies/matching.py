"""Text normalisation for the offline `knowledge` provider: words in, terms out.

`analyse(text, language)` turns what a customer (or a training) wrote into
the terms the matcher compares: case and accents folded, letters repeated
for emphasis squeezed ("pleeease"), chat abbreviations expanded ("qnto",
"pls"), stop words and greetings dropped, words stemmed by a light suffix
stripper (English, Portuguese, Spanish; Spanish also drops pronouns joined
to a verb: "devolverlo"), and everyday customer-service synonyms mapped to
one concept term ("@price" for price / fee / "how much" / "quanto custa";
"@pay" for card / pix / tarjeta; "@home" for house / apartment / domicilio;
"@complaint", "@praise" and "@wrong" mark feelings, "@job" and "@human" a
job seeker and a customer asking for a person); a word under a concept
keeps its own term as `Token.alias`, so the exact word can count a little
more than a synonym. Generic verbs
("sell", "offer", "come", "venir", "achar") are listed as light: they weigh
less. Derived nouns share their verb's stem (storage / store, embalaje /
embalar, montagem / montar, mudanza / mudar). Typos and families the
stemmer missed are in `typos`, the word lists in `lexicons`. A time of day
("afternoon", "noite", "mañana") weighs like a generic verb: it says when,
not what.

A snowball stemmer (the `snowballstemmer` package) was measured in place of
the light strippers and did no better on the evaluation set (81.3% top-1
against 82.2%), so no dependency.

Standard library only. The lexicons are deliberately small and generic (what
customers of any shop ask about), not tuned to one business.
"""

import re
import unicodedata
from dataclasses import dataclass, replace
from functools import lru_cache

from .lexicons import LEXICONS

_WORD = re.compile(r"[^\W_]+")
_REPEATS = re.compile(r"([^\W\d_])\1{2,}")  # "pleeease" -> "please", "kkkk" -> "k"
_DIGIT_LETTER = re.compile(r"(?<=\d)(?=[^\W\d_])|(?<=[^\W\d_])(?=\d)")
_VOWELS = set("aeiouy")


def fold(text):
    """Lower case without accents: "Promoção" -> "promocao"."""
    text = unicodedata.normalize("NFKD", (text or "").casefold())
    return "".join(char for char in text if not unicodedata.combining(char))


def words(text):
    """Folded words: apostrophes joined ("don't" -> "dont"), letter runs
    squeezed, numbers split from letters ("24h" -> "24", "h")."""
    text = fold(text).replace("'", "").replace("\u2019", "")
    text = _DIGIT_LETTER.sub(" ", _REPEATS.sub(r"\1", text))
    return _WORD.findall(text)


# --- stemmers: light suffix strippers; the same word family must land on
# --- the same stem, the stem need not be a word.


def _strip(word, suffixes, min_stem=3):
    for suffix in suffixes:
        if word.endswith(suffix) and len(word) - len(suffix) >= min_stem:
            stem = word[: -len(suffix)]
            if _VOWELS & set(stem):
                return stem
    return word


def _undouble(word):
    if len(word) > 3 and word[-1] == word[-2] and word[-1] not in _VOWELS:
        return word[:-1]
    return word


_EN_INFLECTIONS = ("ing", "ed")
_EN_SUFFIXES = (
    "ization", "isation", "ations", "ation", "ments", "ment", "ness", "ance", "ence", "age",
    "ion", "ful",
    "able", "ible", "ity", "ive", "ery", "ers", "er", "ly", "ic", "al", "y", "e",
)  # fmt: skip


def stem_en(word):
    if len(word) <= 3 or not word.isalpha():
        return word
    if word.endswith("sses"):
        word = word[:-2]
    elif word.endswith(("ies", "ied")) and len(word) > 4:
        word = word[:-3] + "y"
    elif word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    word = _undouble(_strip(word, _EN_INFLECTIONS))
    return _undouble(_strip(word, _EN_SUFFIXES))


_PT_PLURALS = (
    ("oes", "ao"), ("aes", "ao"), ("ais", "al"), ("eis", "el"), ("ois", "ol"),
    ("res", "r"), ("zes", "z"), ("ns", "m"), ("s", ""),
)  # fmt: skip
_PT_SUFFIXES = (
    "amentos", "imentos", "amento", "imento", "agem", "acoes", "mente", "acao", "icao", "ador",
    "adora", "ando", "endo", "indo", "ados", "adas", "idos", "idas", "ado", "ada", "ido",
    "ida", "aram", "eram", "iram", "avam", "amos", "emos", "imos", "cao", "ar", "er", "ir",
    "am", "em", "ou", "eu", "iu", "ei", "ue", "ao", "ia", "io", "a", "o", "e", "i",
)  # fmt: skip

_ES_PLURALS = (("ces", "z"), ("iones", "ion"), ("es", ""), ("s", ""))
_ES_SUFFIXES = (
    "anzas", "anza", "ajes", "aje", "amientos", "imientos", "amiento", "imiento", "aciones",
    "acion", "cion", "mente",
    "adora", "ador", "ando", "iendo", "ados", "adas", "idos", "idas", "ado", "ada", "ido",
    "ida", "aron", "ieron", "amos", "emos", "imos", "ar", "er", "ir", "an", "en", "as",
    "os", "ai", "ei", "ia", "io", "o", "a", "e", "i",
)  # fmt: skip


def _plural(word, rules):
    if word.endswith("mos"):  # a verb (entregamos), not a plural: left to the suffixes
        return word
    for suffix, replacement in rules:
        if word.endswith(suffix) and len(word) - len(suffix) + len(replacement) >= 3:
            return word[: -len(suffix)] + replacement
    return word


def stem_pt(word):
    if len(word) <= 3 or not word.isalpha():
        return word
    return _strip(_plural(word, _PT_PLURALS), _PT_SUFFIXES)


_ES_DIPHTHONG = re.compile(r"(?<![qg])(?:ue|ie)")


_ES_CLITIC = re.compile(
    r"(?:(?<=[aei]r)|(?<=ndo))(?:se|me|te|nos|os)?(?:lo|la|los|las|le|les|se|me|te|nos)$"
)


def stem_es(word):
    """Also undoes the stressed-vowel diphthong of Spanish verbs and nouns
    (cuesta / costar, prueba / probar, tiene / tener): ue -> o, ie -> e; and
    drops the pronouns joined to an infinitive or gerund (devolverlo ->
    devolver, ponerle -> poner)."""
    if len(word) <= 3 or not word.isalpha():
        return word
    bare = _ES_CLITIC.sub("", word)
    if len(bare) >= 5:
        word = bare
    stem = _strip(_plural(word, _ES_PLURALS), _ES_SUFFIXES)
    return _ES_DIPHTHONG.sub(lambda match: "o" if match[0] == "ue" else "e", stem)


def stem_plain(word):
    """Languages without a stemmer: only a plural -s."""
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


@dataclass(frozen=True)
class Profile:
    """One language's stemmer and lexicons, with keys prepared for lookup."""

    name: str
    stem: object
    stop: frozenset
    slang: dict  # word -> replacement words
    phrases: dict  # tuple of 2+ words -> concept terms (() drops the phrase)
    concepts: dict  # stem -> concept term
    stems: dict  # stem -> canonical stem
    light: frozenset  # terms of generic verbs
    lexicon: dict  # the language's concept words -> concept, for typos
    longest_phrase: int

    def concept(self, word):
        """The concept of a word listed under one, or of another word of its
        family (same stem); a stem of three letters or less must be the word
        listed ("cats" is @pet, "cater" is not)."""
        found = self.lexicon.get(word)
        if found is None:
            stem = self.stem(word)
            found = self.concepts.get(stem) if len(stem) > 3 else None
        return found

    def term(self, word):
        """The term of one word that is neither a stop word nor in a phrase."""
        stem = self.stem(word)
        return self.concept(word) or self.stems.get(stem, stem)

    def alias(self, word):
        """The word's own term when `term` gives its concept instead ("boleto"
        -> "bolet" under "@pay"), else "": an exact word counts a little more
        than a synonym."""
        stem = self.stem(word)
        return self.stems.get(stem, stem) if self.concept(word) else ""


def _profile(name, stem, stop=(), slang=None, concepts=None, stems=None, light=""):
    phrases, single = {}, {}
    for concept, entries in (concepts or {}).items():
        for entry in entries.split(","):
            entry_words = tuple(entry.split())
            target = concept if concept.startswith("@") else stem(concept)
            if len(entry_words) > 1:
                phrases[entry_words] = (target,) if concept else ()
            else:
                single.update((word, target) for word in entry_words)
    lexicon_stems = {stem(word) for word in single}
    stop = frozenset(word for word in stop if stem(word) not in lexicon_stems)
    prepared = Profile(
        name=name,
        stem=stem,
        stop=stop,
        slang={word: tuple(words(expansion)) for word, expansion in (slang or {}).items()},
        phrases=phrases,
        concepts={stem(word): concept for word, concept in single.items()},
        stems=stems or {},
        light=frozenset(),
        lexicon=single,
        longest_phrase=max((len(key) for key in phrases), default=1),
    )
    return replace(prepared, light=frozenset(prepared.term(word) for word in light.split()))


_STEMMERS = {"en": stem_en, "pt": stem_pt, "es": stem_es}


def profile(language):
    """The profile of a BCP 47 tag's language ("pt-BR" -> pt); languages with
    no lexicon get folding, a plural -s stripper and no stop words."""
    return _base_profile((language or "en").split("-")[0].lower())


@lru_cache(maxsize=16)
def _base_profile(base):
    """One per language, not per tag: "en", "en-US" and None share it."""
    if base in LEXICONS:
        return _profile(base, _STEMMERS[base], *LEXICONS[base])
    return _profile(base, stem_plain)


@dataclass(frozen=True)
class Token:
    surface: str  # the folded word as written (for typo matching); "" for a phrase
    term: str
    alias: str = ""  # the word's own term when `term` is its concept


def analyse(text, language):
    """The terms of `text`, in order, as Tokens (stop words, greetings and
    bare numbers dropped; phrases turned into their concept)."""
    prof = profile(language)
    expanded = []
    for word in words(text):
        expanded.extend(prof.slang.get(word, (word,)))
    tokens, index = [], 0
    while index < len(expanded):
        for size in range(min(prof.longest_phrase, len(expanded) - index), 1, -1):
            concept = prof.phrases.get(tuple(expanded[index : index + size]))
            if concept is not None:
                tokens.extend(Token("", term) for term in concept)
                index += size
                break
        else:
            word = expanded[index]
            index += 1
            if len(word) > 1 and not word.isdigit() and word not in prof.stop:
                tokens.append(Token(word, prof.term(word), prof.alias(word)))
    return tokens


_COMPOUND = re.compile(r"([^\W_]+)-([^\W_]+)")


def compounds(text, language):
    """Hyphenated words of `text` written as one ("check-up" -> "checkup"),
    each with the terms of its parts, as customers often write them joined."""
    found = {}
    for first, second in _COMPOUND.findall(fold(text)):
        parts = tuple(token.term for token in analyse(f"{first} {second}", language))
        if parts:
            found[first + second] = parts
    return found


def terms(text, language):
    """Just the terms (what tests and debugging look at)."""
    return [token.term for token in analyse(text, language)]
