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
        [--split tune|dev|final|blind|blind2|blind3|blind4|all]
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


def agent_for(business):
    workspace = keys.create_workspace(business["business"][:50])
    agent = agents.create_agent(workspace.id, {"name": "Agent", "language": business["language"]})
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
    """One customer message through the engine; (kind, eval training id, text)."""
    message = InboundMessage(external_id=f"m{number}", sender_id=f"visitor-{number}", text=text)
    stored = inbound.receive_inbound(channel, message, now=now).message
    replies.run_due_replies(now=now + timedelta(seconds=3))
    reply = (
        Message.select()
        .where(Message.conversation == stored.conversation_id, Message.sender_type == "agent")
        .order_by(Message.created_at)
        .first()
    )
    job = ReplyJob.get(ReplyJob.conversation == stored.conversation_id)
    record = (reply.metadata.get("reply") if reply else None) or {}
    return record.get("kind"), record.get("training_id"), reply.text if reply else "", job


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


def evaluate(business, now, counter, times):
    channel, ids = agent_for(business)
    kinds = {t["id"]: t["type"] for t in business["trainings"]}
    rows = []
    for message in business["messages"]:
        number = next(counter)
        started = time.perf_counter()
        kind, training_id, text, job = ask(channel, message["text"], number, now)
        times.append((time.perf_counter() - started) * 1000)
        expected = message["expect"]
        label = "none" if expected is None else ("qa" if kinds[expected] == "qa" else "text")
        outcome = judge(business, ids, message, kind, training_id, text)
        rows.append(
            {"message": message, "label": label, "outcome": outcome, "got": ids.get(training_id),
             "job": job.outcome}
        )  # fmt: skip
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--split", choices=(*SPLITS, "all"), default="all")
    args = parser.parse_args()
    logging.disable(logging.INFO)
    businesses = [b for b in load() if args.split == "all" or b["split"] == args.split]
    counter, times, results = iter(range(1, 10**9)), [], []
    with tempfile.TemporaryDirectory() as tmp:
        app = create_app({"DATABASE_PATH": str(Path(tmp) / "quality.db")})
        with app.app_context():
            apply_migrations()
            now = utcnow()
            for business in businesses:
                results.append((business, evaluate(business, now, counter, times)))
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
    outcomes = {}
    for row in every:
        outcomes[row["job"]] = outcomes.get(row["job"], 0) + 1
    print(f"\nReply job outcomes: {outcomes}")
    print(
        f"Time per message (inbound + reply job, SQLite file): p50 "
        f"{statistics.median(times):.1f} ms, p99 {sorted(times)[int(len(times) * 0.99) - 1]:.1f} ms"
    )


if __name__ == "__main__":
    main()
