"""Typos and word families the stemmers miss: a symmetric-delete index
(`Fuzzy`) finds known words within one edit (two for long words) of an
unknown one, the true distance decides, and a short word's changed letter
must be a neighbour key; `Prefixes` finds a word of the same family by its
beginning ("cachorrito" / "cachorro"), `Endings` the word a compound ends
with ("pupilentes" / "lentes")."""

from functools import lru_cache

from ..turns import give_way_if_due
from .matching import profile


def _deletes(word, depth):
    found, frontier = set(), {word}
    for _ in range(depth):
        frontier = {w[:i] + w[i + 1 :] for w in frontier for i in range(len(w))}
        found |= frontier
    return found


def max_edits(word):
    """Typos looked for: none in words under 5 letters (one edit changes them
    too much: "beer" / "been"), one up to 8 letters, two beyond."""
    return 0 if len(word) < 5 else 1 if len(word) < 9 else 2


def edit_distance(a, b, limit):
    """Optimal string alignment distance (a swap of two letters is one edit),
    or limit + 1 when it is larger than `limit`."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    previous2, previous = None, list(range(len(b) + 1))
    for i, char_a in enumerate(a, 1):
        current = [i] + [0] * len(b)
        for j, char_b in enumerate(b, 1):
            cost = char_a != char_b
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
            if i > 1 and j > 1 and char_a == b[j - 2] and a[i - 2] == char_b:
                current[j] = min(current[j], previous2[j - 2] + 1)
        if min(current) > limit:
            return limit + 1
        previous2, previous = previous, current
    return previous[-1]


def shared_prefix(a, b):
    """Length of the common beginning of two words."""
    size = 0
    for char_a, char_b in zip(a, b, strict=False):
        if char_a != char_b:
            break
        size += 1
    return size


class Prefixes:
    """Known words by their first letters: `closest(word)` -> the known word
    sharing the longest beginning with `word` (at least 5 letters and three
    quarters of the shorter word: "cachorrito" / "cachorro", "estacionar" /
    "estacionamento"), a family the suffix strippers missed; or None."""

    def __init__(self, known_words):
        self.by_start = {}
        for word in sorted(set(known_words)):
            if len(word) >= 5:
                self.by_start.setdefault(word[:5], []).append(word)

    def closest(self, word):
        best = None
        for known in self.by_start.get(word[:5], ()):
            size = shared_prefix(word, known)
            if size * 4 >= 3 * min(len(word), len(known)) and (best is None or size > best[0]):
                best = (size, known)
        return best and best[1]


class Endings:
    """Known words by their last letters: `closest(word)` -> a known word
    that is the other's ending, the longer one a compound of it ("microchip" /
    "chip", "pupilentes" / "lentes"): the shorter of at least 4 letters and
    half the longer (less one letter: "chip" / "microchip"); the longest such
    known word; or None."""

    def __init__(self, known_words):
        self.by_end = {}
        for word in sorted(set(known_words)):
            if len(word) >= 4:
                self.by_end.setdefault(word[-4:], []).append(word)

    def closest(self, word):
        if len(word) < 4:
            return None
        best = None
        for known in self.by_end.get(word[-4:], ()):
            short, long = sorted((word, known), key=len)
            if long.endswith(short) and len(short) * 2 + 1 >= len(long) and short != long:
                if best is None or len(known) > len(best):
                    best = known
        return best


_KEYBOARD = ("qwertyuiop", "asdfghjkl", "zxcvbnm")
_KEY_AT = {
    key: (row, column) for row, keys in enumerate(_KEYBOARD) for column, key in enumerate(keys)
}


def _near_keys(a, b):
    """Whether two letters sit next to each other on a QWERTY keyboard."""
    if a not in _KEY_AT or b not in _KEY_AT:
        return False
    (row_a, col_a), (row_b, col_b) = _KEY_AT[a], _KEY_AT[b]
    return abs(row_a - row_b) <= 1 and abs(col_a - col_b) <= 1


def _likely_slip(word, known):
    """A one-letter substitution in a short word is a typo only when the two
    keys are neighbours ("prive" / "price"); otherwise it is more likely
    another word ("lavam" / "levam")."""
    if len(word) != len(known) or len(word) > SHORT_TYPO_LETTERS:
        return True
    changed = [(a, b) for a, b in zip(word, known, strict=True) if a != b]
    return len(changed) != 1 or _near_keys(*changed[0])


SHORT_TYPO_LETTERS = 6


class Fuzzy:
    """Known words by their deletions: `closest(word)` -> (distance, known
    word) or None; among equally close words the alphabetically first wins,
    so the answer never depends on insertion order."""

    def __init__(self, known_words):
        self.known = set()
        self.by_delete = {}
        for word in known_words:
            self.add(word)
            give_way_if_due()

    def add(self, word):
        edits = max_edits(word)
        if not edits or word in self.known:
            return
        self.known.add(word)
        for key in _deletes(word, edits) | {word}:
            # Most keys lead to one word: kept as that word rather than a set
            # of it (a set costs 216 bytes; the index of a text of a million
            # characters held 206,000 of them, 52 MB).
            found = self.by_delete.get(key)
            if found is None:
                self.by_delete[key] = word
            elif isinstance(found, str):
                self.by_delete[key] = {found, word}
            else:
                found.add(word)

    def closest(self, word):
        edits = max_edits(word)
        if not edits:
            return None
        candidates = set()
        for key in _deletes(word, edits) | {word}:
            found = self.by_delete.get(key, ())
            candidates.update((found,) if isinstance(found, str) else found)
        best = None
        for candidate in candidates:
            if candidate[0] != word[0]:  # a wrong first letter is another word, not a typo
                continue
            limit = min(edits, max_edits(candidate))
            distance = edit_distance(word, candidate, limit)
            if distance == 1 and not _likely_slip(word, candidate):
                continue
            if distance <= limit and (best is None or (distance, candidate) < best):
                best = (distance, candidate)
        return best


@lru_cache(maxsize=16)
def lexicon_fuzzy(language):
    """Typo index of the language's concept words (a misspelt "pirce" still
    means @price); look the word found up in `profile(language).lexicon`.
    Stop words are left out: "pessoa" is not a misspelt "pessoal"."""
    return Fuzzy(profile(language).lexicon)
