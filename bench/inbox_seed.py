"""A database the size issue 39 asks the inbox to answer at: one workspace
with 100,000 conversations and 1,000,000 messages, built through the
project's migrations and bulk inserted (executemany in big transactions,
with the migrations' triggers running as they do for the service).

    seed(path) -> Seeded(workspace_id, user_id, conversation_ids, ...)

bench/inbox.py times the service's queries on it; a benchmark of the
inbox's HTTP pages can seed the same way and sample the same ids.

The spread: three channels (WhatsApp, Telegram, website) each with its own
agent; 5% of the conversations wait for a human, 25% are closed, the rest
are with the agent; 30% of the active ones are assigned to one of ten
users; conversations hold 1 to 60 messages (10 on average), customer and
agent taking turns, their activity over 90 days; message text is drawn
from a vocabulary of common words plus rarer ones (Zipf-like), so a word
can be searched that matches a few, some or many conversations.
"""

import random
import sys
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "platform"))

from agent_platform import create_app  # noqa: E402
from agent_platform.db import database  # noqa: E402
from agent_platform.migrate import apply_migrations  # noqa: E402
from agent_platform.models import Channel  # noqa: E402
from agent_platform.services import agents as agents_service  # noqa: E402
from agent_platform.services import keys  # noqa: E402

CHUNK = 100_000
START = datetime(2026, 1, 1)
NAMES = ("Ana", "Bruno", "Cris")
USERS = [f"user-{n}" for n in range(1, 11)]
COMMON = (
    "oi olá bom dia boa tarde obrigado por favor pedido entrega produto preço prazo "
    "pagamento pix cartão boleto frete endereço quando quanto quero preciso ajuda "
    "hello thanks order delivery price please help where status today tomorrow"
).split()
FIRST_NAMES = (
    "Ana Beatriz Carla Daniel Eduardo Fernanda Gabriel Helena Igor Joana Kátia Lucas "
    "Marina Nicolás Otávio Paula Rafael Sofia Tiago Úrsula Vitor Zoë João Maria José"
).split()
LAST_NAMES = (
    "Silva Souza Oliveira Santos Pereira Lima Carvalho Ferreira Rodrigues Almeida "
    "Costa Gomes Martins Araújo Barbosa Ribeiro Alves Monteiro Mendes Cardoso"
).split()


@dataclass
class Seeded:
    path: str
    workspace_id: str
    user_id: str  # a user with conversations assigned and some read
    conversation_ids: list
    channel_ids: list
    agent_ids: list
    words: dict  # "rare" | "some" | "many" -> a word of message text
    name: str  # a contact name to search for


def seed(path, conversations=100_000, messages=1_000_000, rng_seed=39):
    """Build a fresh database at `path` (it must not exist); the ids to sample."""
    rng = random.Random(rng_seed)
    app = create_app({"DATABASE_PATH": str(path), "LOG_LEVEL": "WARNING"})
    with app.app_context():
        apply_migrations()
        workspace_id = keys.create_workspace("Inbox bench").id
        channels, agents = _channels_and_agents(workspace_id)
        vocabulary = _vocabulary(rng)
        plan = _conversations(rng, workspace_id, channels, agents, conversations, messages)
        _insert_contacts_and_conversations(plan)
        _insert_messages(rng, plan, vocabulary)
        _insert_reads(rng, plan, workspace_id)
        database.close()
    return Seeded(
        path=str(path),
        workspace_id=workspace_id,
        user_id=USERS[0],
        conversation_ids=[row["id"] for row in plan],
        channel_ids=[channel.id for channel in channels],
        agent_ids=[agent.id for agent in agents],
        words={"rare": vocabulary[-1], "some": COMMON[30], "many": "pedido"},
        name=plan[len(plan) // 2]["name"].split()[0],
    )


def _channels_and_agents(workspace_id):
    agents = [agents_service.create_agent(workspace_id, {"name": name}) for name in NAMES]
    kinds = (("whatsapp", "WhatsApp"), ("telegram", "Telegram"), ("website", "Site"))
    channels = [
        Channel.create(workspace=workspace_id, type=kind, name=name, agent=agent.id)
        for (kind, name), agent in zip(kinds, agents, strict=True)
    ]
    return channels, agents


def _vocabulary(rng):
    """The common words, then 5,000 rarer made-up product words."""
    syllables = "ka lo mi ne tu ra so vi de pa zu fe go bi ce".split()
    rare = {"".join(rng.choice(syllables) for _ in range(4)) for _ in range(6000)}
    return COMMON + sorted(rare)[:5000]


def _conversations(rng, workspace_id, channels, agents, count, messages):
    span = 90 * 24 * 3600
    plan = []
    for number in range(count):
        status = rng.choices(("handoff", "closed", "open"), (5, 25, 70))[0]
        channel = rng.randrange(len(channels))
        assigned = rng.choice(USERS) if status != "closed" and rng.random() < 0.3 else None
        size = max(1, min(40, int(rng.expovariate(1 / (messages / count)))))
        last = START + timedelta(seconds=rng.randrange(span))
        name = f"{rng.choice(FIRST_NAMES)} {rng.choice(LAST_NAMES)}"
        plan.append(
            {
                "id": str(uuid.uuid4()),
                "contact_id": str(uuid.uuid4()),
                "workspace_id": workspace_id,
                "status": status,
                "assigned_to": assigned,
                "channel_id": channels[channel].id,
                "channel_type": channels[channel].type,
                "agent_id": agents[channel].id,
                "size": size,
                "last": last,
                "name": name,
                "phone": f"+55119{number:08d}",
            }
        )
    _fit(plan, messages)
    return plan


def _fit(plan, messages):
    """Sizes that add up to exactly `messages`."""
    missing = messages - sum(row["size"] for row in plan)
    step = 1 if missing > 0 else -1
    index = 0
    while missing:
        row = plan[index % len(plan)]
        if 1 <= row["size"] + step <= 60:
            row["size"] += step
            missing -= step
        index += 1


def _insert_contacts_and_conversations(plan):
    connection = database.connection()
    contacts, identities, conversations = [], [], []
    for row in plan:
        first = row["last"] - timedelta(minutes=5 * row["size"])
        contacts.append(
            (row["contact_id"], first, first, row["workspace_id"], row["name"], row["phone"], "{}")
        )
        identities.append(
            (
                str(uuid.uuid4()),
                row["workspace_id"],
                row["contact_id"],
                row["channel_type"],
                row["phone"][1:],
                row["channel_id"],
                first,
            )
        )
        conversations.append(
            (
                row["id"],
                first,
                row["last"],
                row["workspace_id"],
                row["contact_id"],
                row["channel_id"],
                row["agent_id"],
                row["status"],
                row["assigned_to"],
                row["size"],
            )
        )
    with database.atomic():
        connection.executemany(
            "INSERT INTO contact (id, created_at, updated_at, workspace_id, name, phone, "
            "custom_fields) VALUES (?, ?, ?, ?, ?, ?, ?)",
            contacts,
        )
        connection.executemany(
            "INSERT INTO contact_identity (id, workspace_id, contact_id, type, external_id, "
            "channel_id, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
            identities,
        )
        connection.executemany(
            "INSERT INTO conversation (id, created_at, updated_at, workspace_id, contact_id, "
            "channel_id, agent_id, status, assigned_to, message_count) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            conversations,
        )


MESSAGE_SQL = (
    "INSERT INTO message (id, created_at, updated_at, conversation_id, channel_id, contact_id, "
    "direction, sender_type, type, text, status, metadata, edit_history, send_attempts, "
    "search_rowid, author_user_id) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'text', ?, ?, '{}', '[]', 0, ?, ?)"
)


def _insert_messages(rng, plan, vocabulary):
    """Every conversation's messages, in time order across conversations (as
    traffic arrives); the conversations' last_message_at follows."""
    rows = []
    for row in plan:
        for index in range(row["size"]):
            moment = row["last"] - timedelta(minutes=5 * (row["size"] - 1 - index))
            rows.append((moment, index, row))
    rows.sort(key=lambda item: item[0])
    connection = database.connection()
    batch = []
    for number, (moment, index, row) in enumerate(rows, start=1):
        batch.append(_message(rng, vocabulary, moment, index, row, number))
        if len(batch) >= CHUNK:
            _flush(connection, batch)
    _flush(connection, batch)
    with database.atomic():
        connection.execute('UPDATE "conversation" SET "last_message_at" = "updated_at"')


def _message(rng, vocabulary, moment, index, row, number):
    inbound = index % 2 == 0 or row["size"] == 1
    person = not inbound and row["status"] == "handoff" and index == row["size"] - 1
    sender = "contact" if inbound else ("human" if person else "agent")
    status = "received" if inbound else rng.choice(("sent", "delivered", "read", "read"))
    return (
        str(uuid.uuid4()),
        moment,
        moment,
        row["id"],
        row["channel_id"],
        row["contact_id"],
        "inbound" if inbound else "outbound",
        sender,
        _text(rng, vocabulary),
        status,
        number,
        row["assigned_to"] if person else None,
    )


def _text(rng, vocabulary):
    """6 to 20 words, most common ones, now and then a rarer one (Zipf-like)."""
    words = []
    for _ in range(rng.randint(6, 20)):
        rank = min(int(rng.paretovariate(1.1)) - 1, len(vocabulary) - 1)
        words.append(vocabulary[rank] if rank < len(COMMON) else rng.choice(vocabulary))
    return " ".join(words)


def _flush(connection, batch):
    with database.atomic():
        connection.executemany(MESSAGE_SQL, batch)
    batch.clear()


def _insert_reads(rng, plan, workspace_id):
    """The first user read a tenth of the conversations at their last activity."""
    reads = [
        (USERS[0], row["id"], workspace_id, row["last"], None) for row in plan if rng.random() < 0.1
    ]
    with database.atomic():
        database.connection().executemany(
            "INSERT INTO conversation_reads (user_id, conversation_id, workspace_id, "
            "last_read_at, last_read_message_id) VALUES (?, ?, ?, ?, ?)",
            reads,
        )
