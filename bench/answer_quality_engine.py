"""Answer quality of the `knowledge` provider measured THROUGH the reply
engine, on the evaluation set of bench/answer_quality.py.

Each business becomes an agent (its language, its trainings created through
the trainings service) on a channel of a fresh SQLite file; each labelled
customer message arrives through services.inbound.receive_inbound from a
new contact, and the reply job (services.replies.run_due_replies) answers it
as it would in production: handoff keywords, small talk, the matcher with
the agent's thresholds, the fallback. What the customer got is read back
from the stored reply (its `metadata.reply`: kind and training). A fallback,
a small-talk line or a handoff count as no answer. The figures are the same
as answer_quality.py's (top-1, passages, precision, coverage, abstained);
they differ from it only where the engine's own steps change the outcome.

    .venv/bin/python bench/answer_quality_engine.py
        [--split tune|dev|final|blind|blind2|blind3|blind4|blind5|all]
        [--database-url postgresql://...]   (an empty database on that engine)
"""

import argparse
import logging
import statistics
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "platform"))
sys.path.insert(0, str(ROOT / "bench"))

from answer_quality import HEADER, SPLITS, figures, line, load  # noqa: E402

from agent_platform import create_app  # noqa: E402
from agent_platform.channels import InboundMessage  # noqa: E402
from agent_platform.db import database  # noqa: E402
from agent_platform.migrate import apply_migrations  # noqa: E402
from agent_platform.models import Message, ReplyJob  # noqa: E402
from agent_platform.models.base import utcnow  # noqa: E402
from agent_platform.services import agents, channels, inbound, keys, replies, trainings  # noqa: E402

FIELDS = {"qa": ("question", "answer"), "text": ("title", "content")}


def agent_for(business, clarify=True):
    workspace = keys.create_workspace(business["business"][:50])
    agent = agents.create_agent(workspace.id, {"name": "Agent", "language": business["language"]})
    agents.update_settings(workspace.id, agent.id, {"clarify_enabled": clarify})
    ids = {}
    for training in business["trainings"]:
        kind = "qa" if training["type"] == "qa" else "text"
        values = {
            "type": kind,
            **{name: training[name] for name in FIELDS[kind] if training.get(name)},
        }
        ids[trainings.create_training(workspace.id, agent.id, values).id] = training["id"]
    channel = channels.create_channel(workspace.id, {"name": "Site", "type": "website"})
    channels.connect(workspace.id, channel.id, agent.id)
    return channel, ids


def ask(channel, text, number, now):
    """One customer message through the engine; (kind, eval training id, text,
    job, the reply's record)."""
    message = InboundMessage(external_id=f"m{number}", sender_id=f"visitor-{number}", text=text)
    stored = inbound.receive_inbound(channel, message, now=now).message
    replies.run_due_replies(now=now + timedelta(seconds=3))
    return _last_reply(stored.conversation_id)


# How a customer answers the yes/no question over one choice, by language.
YES_NO = {"en": ("yes", "no"), "pt": ("sim", "não"), "es": ("sí", "no")}


def choose(channel, choices, ids, expected, number, now, language="en"):
    """The customer answers the agent's clarifying question as the label
    says: the number of the expected training among the choices, else 0
    ("none of these"); a yes or a no when one training is offered; then
    what the engine answered."""
    offered = [ids.get(choice["training_id"]) for choice in choices]
    picked = offered.index(expected) + 1 if expected in offered else 0
    text = str(picked)
    if len(offered) == 1:
        text = YES_NO.get(language.split("-")[0], YES_NO["en"])[0 if picked else 1]
    message = InboundMessage(
        external_id=f"m{number}-choice", sender_id=f"visitor-{number}", text=text
    )
    stored = inbound.receive_inbound(channel, message, now=now + timedelta(seconds=10)).message
    replies.run_due_replies(now=now + timedelta(seconds=13))
    return picked, _last_reply(stored.conversation_id)


def _last_reply(conversation_id):
    reply = (
        Message.select()
        .where(Message.conversation == conversation_id, Message.sender_type == "agent")
        .order_by(Message.created_at.desc())
        .first()
    )
    job = (
        ReplyJob.select()
        .where(ReplyJob.conversation == conversation_id)
        .order_by(ReplyJob.created_at.desc())
        .first()
    )
    record = (reply.metadata.get("reply") if reply else None) or {}
    kind = record.get("kind")
    if record.get("choices") or record.get("fallback"):
        kind = "clarify" if record.get("choices") else "none"
    return kind, record.get("training_id"), reply.text if reply else "", job, record


def judge(business, ids, message, kind, training_id, text):
    kinds = {t["id"]: t["type"] for t in business["trainings"]}
    expected = message["expect"]
    got = ids.get(training_id)
    if kind not in ("qa", "passage"):
        return "abstained" if expected is None else "missed"
    if expected is None or got != expected:
        return "wrong"
    wanted = "qa" if kinds[expected] == "qa" else "passage"
    if kind != wanted or message.get("contains", "").casefold() not in text.casefold():
        return "wrong"
    return "right"


def evaluate(business, now, counter, times, clarify=True, cpu_times=None):
    cpu_times = [] if cpu_times is None else cpu_times
    channel, ids = agent_for(business, clarify)
    kinds = {t["id"]: t["type"] for t in business["trainings"]}
    rows = []
    for message in business["messages"]:
        number = next(counter)
        started, cpu = time.perf_counter(), time.process_time()
        kind, training_id, text, job, record = ask(channel, message["text"], number, now)
        times.append((time.perf_counter() - started) * 1000)
        cpu_times.append((time.process_time() - cpu) * 1000)
        expected = message["expect"]
        label = "none" if expected is None else ("qa" if kinds[expected] == "qa" else "text")
        outcome = judge(business, ids, message, kind, training_id, text)
        row = {"message": message, "label": label, "outcome": outcome,
               "got": ids.get(training_id), "job": job.outcome}  # fmt: skip
        row["asked"] = kind == "clarify"
        if row["asked"]:
            row["choices"] = [ids.get(c["training_id"]) for c in record["choices"]]
            picked, (kind, training_id, text, job, _) = choose(
                channel, record["choices"], ids, expected, number, now, business["language"]
            )
            row["picked"] = picked
            row["after"] = judge(business, ids, message, kind, training_id, text)
        rows.append(row)
    return rows


def clarified(rows):
    """The issue's figures: precision of the answers given without asking,
    and of every answer (after a choice too); null-labelled messages given
    an answer; answerable messages ending with the right training, directly
    or after one question; messages asked about."""
    direct = [row["outcome"] for row in rows if not row["asked"]]
    after = [row["after"] for row in rows if row["asked"]]
    answerable = [row for row in rows if row["label"] != "none"]
    nulls = [row for row in rows if row["label"] == "none"]
    ends = sum(row.get("after", row["outcome"]) == "right" for row in answerable)
    right, wrong = direct.count("right"), direct.count("wrong")
    return {
        "messages": len(rows),
        "precision": _ratio(right, right + wrong),
        "precision_all": _ratio(right + after.count("right"), right + wrong + _given(after)),
        "null_answered": _ratio(sum(_answered(row) for row in nulls), len(nulls)),
        "ends_right": _ratio(ends, len(answerable)),
        "asked": _ratio(len(after), len(rows)),
        "wrong": wrong + after.count("wrong"),
    }


def _given(outcomes):
    return sum(outcome in ("right", "wrong") for outcome in outcomes)


def _answered(row):
    return row.get("after", row["outcome"]) in ("right", "wrong")


def _ratio(part, whole):
    return part / whole if whole else float("nan")


CLARIFY_HEADER = (
    f"{'':40} {'msgs':>4} {'precis.':>7} {'all ans':>7} {'null ans':>8} {'ends ok':>7}"
    f" {'asked':>6} {'wrong':>5}"
)


def clarified_line(name, f):
    return (
        f"{name:40} {f['messages']:>4} {f['precision']:>7.1%} {f['precision_all']:>7.1%}"
        f" {f['null_answered']:>8.1%} {f['ends_right']:>7.1%} {f['asked']:>6.1%} {f['wrong']:>5}"
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--split", choices=(*SPLITS, "all"), default="all")
    parser.add_argument(
        "--no-clarify", action="store_true", help="agents that never ask back (clarify_enabled off)"
    )
    parser.add_argument(
        "--database-url",
        help="an empty PostgreSQL database (postgresql://...) instead of a SQLite file",
    )
    args = parser.parse_args()
    logging.disable(logging.INFO)
    businesses = [b for b in load() if args.split == "all" or b["split"] == args.split]
    counter, times, cpu_times, results = iter(range(1, 10**9)), [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        storage = {"DATABASE_PATH": str(Path(tmp) / "quality.db")}
        if args.database_url:
            storage = {"DATABASE_URL": args.database_url}
        app = create_app(storage)
        with app.app_context():
            apply_migrations()
            now = utcnow()
            for business in businesses:
                rows = evaluate(business, now, counter, times, not args.no_clarify, cpu_times)
                results.append((business, rows))
        database.close_all()
    print(f"Answer quality of the knowledge provider through the engine ({args.split})\n")
    print(HEADER)
    for business, rows in results:
        name = f"{business['business'][:24]} [{business['language']}, {business['split']}]"
        print(line(name, figures(rows)))
    for part in SPLITS:
        rows = [row for business, rows in results if business["split"] == part for row in rows]
        if rows and args.split == "all":
            print(line(f"{part} split", figures(rows)))
    every = [row for _, rows in results for row in rows]
    print(line("overall", figures(every)))
    wrong = [(b, row) for b, rows in results for row in rows if row["outcome"] == "wrong"]
    print(f"\nWrong answers ({len(wrong)}):")
    for business, row in wrong:
        print(f"  [{business['business'][:24]}] {row['message']['text']!r}: expected "
              f"{row['message']['expect']}, got {row['got']}")  # fmt: skip
    print("\nWith one clarifying question, the customer choosing the labelled training:\n")
    print(CLARIFY_HEADER)
    for business, rows in results:
        name = f"{business['business'][:24]} [{business['language']}, {business['split']}]"
        print(clarified_line(name, clarified(rows)))
    for part in SPLITS:
        rows = [row for business, rows in results if business["split"] == part for row in rows]
        if rows and args.split == "all":
            print(clarified_line(f"{part} split", clarified(rows)))
    print(clarified_line("overall", clarified(every)))
    wrong_after = [(b, r) for b, rows in results for r in rows if r.get("after") == "wrong"]
    for business, row in wrong_after:
        print(f"  after a choice, wrong: [{business['business'][:24]}] {row['message']['text']!r}")
    outcomes = {}
    for row in every:
        outcomes[row["job"]] = outcomes.get(row["job"], 0) + 1
    print(f"\nReply job outcomes: {outcomes}")
    engine = "PostgreSQL" if args.database_url else "SQLite file"
    print(
        f"Time per message (inbound + reply job, {engine}): p50 "
        f"{statistics.median(times):.1f} ms, p99 {sorted(times)[int(len(times) * 0.99) - 1]:.1f} ms"
    )
    # The process's CPU time (all its threads): what a message costs here,
    # without the waits for the cores other processes on the machine take.
    print(f"CPU time per message: p50 {statistics.median(cpu_times):.1f} ms")


if __name__ == "__main__":
    main()
