"""Issue 3 benchmark: knowledge search over 50,000 trainings.

Builds 50,000 trainings of one agent (70% texts, 30% Q&A pairs; words drawn
from a Zipf-distributed vocabulary of 8,000 made-up words) in a temporary
database through the model layer (bulk insert; the triggers index each row),
then measures GET /v1/agents/{id}/trainings/search?q=... through the whole
request pipeline (key, rate limit, scope, parsing, service, FTS5, join,
serialisation) against the bare FTS5 query on the same file in the same run:

    SELECT rowid, rank FROM training_fts WHERE training_fts MATCH ? ORDER BY rank LIMIT 10

with the same MATCH expression the service builds. Queries are 1 to 3
content words (vocabulary ranks 50-5,000, so neither stop words nor words
that appear once), all terms required (the endpoint's default). Requests and
bare queries alternate, so both see the same cache state.

Two API paths: the Flask test client in this process (the app's whole stack
without a socket), and `agent-platform serve` (gunicorn) over loopback HTTP
with a keep-alive connection (--no-http skips it). The HTTP client is the
standard library's http.client, not requests: requests spends 1-2 ms of its
own Python per call on this machine, more than the server's per-request cost,
and that is the client's time, not the endpoint's (--requests measures with it).

Fairness: both sides run the same MATCH expression with the same LIMIT on the
same file, alternating query by query (same cache state); outside the timing,
every answer is checked to hold the same rows, best first, as the bare query
(the API's scores are the bare ranks negated).

Targets: API p50 <= 3x the bare p50, and < 20 ms.

    .venv/bin/python bench/trainings_search.py [--trainings 50000] [--queries 300] [--rounds 3]
"""

import argparse
import http.client
import json
import os
import random
import sqlite3
import statistics
import sys
import time
from pathlib import Path
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "platform"))
sys.path.insert(0, str(ROOT / "bench"))

SYLLABLES = "ba be bi bo bu da de di do du ka ke ki ko ku la le li lo lu ma me mi mo mu".split()
SYLLABLES += "na ne ni no nu ra re ri ro ru sa se si so su ta te ti to tu va ve vi vo vu".split()
BARE_SQL = "SELECT rowid, rank FROM training_fts WHERE training_fts MATCH ? ORDER BY rank LIMIT ?"


def vocabulary(size, rng):
    words = set()
    while len(words) < size:
        words.add("".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4))))
    words = sorted(words)  # a set's order changes with the hash seed
    rng.shuffle(words)
    return words


class Words:
    """Zipf-distributed draws from a vocabulary (rank 1 is the most common)."""

    def __init__(self, vocab, exponent=1.07):
        self.vocab = vocab
        total, self.cumulative = 0.0, []
        for rank in range(1, len(vocab) + 1):
            total += 1 / rank**exponent
            self.cumulative.append(total)

    def text(self, rng, count):
        return " ".join(rng.choices(self.vocab, cum_weights=self.cumulative, k=count))


def build_rows(count, workspace_id, agent_id, words, rng):
    rows = []
    for _ in range(count):
        row = {"workspace": workspace_id, "agent": agent_id, "status": "ready"}
        if rng.random() < 0.7:
            row.update(
                type="text",
                title=words.text(rng, rng.randint(3, 7)).capitalize(),
                content=words.text(rng, rng.randint(30, 150)),
            )
        else:
            row.update(
                type="qa",
                question=words.text(rng, rng.randint(5, 12)).capitalize() + "?",
                answer=words.text(rng, rng.randint(10, 60)),
            )
        rows.append(row)
    return rows


def seed(database_path, trainings, rng):
    """Workspace, key, agent and the trainings, through the service and model layers."""
    from agent_platform import create_app
    from agent_platform.db import database, transaction
    from agent_platform.migrate import apply_migrations
    from agent_platform.models import Training
    from agent_platform.services import agents, keys

    app = create_app({"DATABASE_PATH": database_path, "LOG_LEVEL": "WARNING"})
    with app.app_context():
        apply_migrations()
        workspace_id = keys.create_workspace("Bench").id
        _, raw_key = keys.create_key(workspace_id, "bench", ["trainings:read"])
        agent = agents.create_agent(workspace_id, {"name": "Bench agent"})
        vocab = vocabulary(8000, rng)
        words = Words(vocab)
        started = time.perf_counter()
        rows = build_rows(trainings, workspace_id, agent.id, words, rng)
        with transaction():
            Training.insert_rows(rows)
        print(f"built {trainings} trainings in {time.perf_counter() - started:.1f} s")
        database.execute_sql("PRAGMA wal_checkpoint(TRUNCATE)")
        database.close()
    return raw_key, agent.id, vocab


def queries(vocab, count, rng, weighted):
    """1-3 content words (vocabulary ranks 50+, no stop words): either uniform
    over ranks 50-5,000 (mostly rare words: few matches) or drawn with the
    words' frequency in the trainings (what a knowledge base gets asked about)."""
    if weighted:
        words = Words(vocab[50:])
        return [words.text(rng, rng.choice((1, 2, 2, 3))) for _ in range(count)]
    content_words = vocab[50:5000]
    return [" ".join(rng.sample(content_words, rng.choice((1, 2, 2, 3)))) for _ in range(count)]


def percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))]


def summary(label, samples):
    p50, p99 = percentile(samples, 0.5), percentile(samples, 0.99)
    print(f"  {label:<46} p50 {p50 * 1000:7.3f} ms   p99 {p99 * 1000:7.3f} ms")
    return p50, p99


def measure(database_path, agent_id, query_texts, rounds, api_call):
    """Alternate one API request and one bare query per query text."""
    from agent_platform.models.trainings import match_expression

    bare = sqlite3.connect(database_path)
    api_times, bare_times, hits = [], [], []
    for query in query_texts[:20]:  # warm both paths up
        results(api_call(query))
        bare.execute(BARE_SQL, (match_expression(query), 10)).fetchall()
    for _ in range(rounds):
        for query in query_texts:
            started = time.perf_counter()
            response = api_call(query)  # the whole body has arrived when it returns
            api_times.append(time.perf_counter() - started)
            scores = results(response)
            expression = match_expression(query)
            started = time.perf_counter()
            rows = bare.execute(BARE_SQL, (expression, 10)).fetchall()
            bare_times.append(time.perf_counter() - started)
            if scores != [round(-rank, 6) for _, rank in rows]:
                raise RuntimeError(f"{query!r}: the API and the bare query found other rows")
            hits.append(len(scores))
    matches = [
        bare.execute(
            "SELECT count(*) FROM training_fts WHERE training_fts MATCH ?",
            (match_expression(query),),
        ).fetchone()[0]
        for query in query_texts
    ]
    bare.close()
    return api_times, bare_times, hits, matches


def results(response):
    """The scores of an API response's hits, best first (parsed outside the timing)."""
    status, body = response
    if status != 200:
        raise RuntimeError(body)
    return [hit["score"] for hit in json.loads(body)["data"]]


def test_client_caller(database_path, raw_key, agent_id):
    from agent_platform import create_app

    app = create_app(
        {"DATABASE_PATH": database_path, "LOG_LEVEL": "WARNING", "RATE_LIMIT_REQUESTS": 10**9}
    )
    client = app.test_client()
    path = f"/v1/agents/{agent_id}/trainings/search"

    def call(query):
        response = client.get(path, query_string={"q": query}, headers={"x-api-key": raw_key})
        return response.status_code, response.get_data()

    return call


def http_caller_for(service, use_requests=False):
    def http_caller(database_path, raw_key, agent_id):
        path = f"/v1/agents/{agent_id}/trainings/search"
        headers = {"x-api-key": raw_key}
        if use_requests:
            import requests

            session = requests.Session()

            def call(query):
                response = session.get(service.base + path, params={"q": query}, headers=headers)
                return response.status_code, response.content

            return call
        connection = http.client.HTTPConnection("127.0.0.1", service.port)

        def call(query):
            connection.request("GET", f"{path}?{urlencode({'q': query})}", headers=headers)
            response = connection.getresponse()
            return response.status, response.read()

        return call

    return http_caller


def report(api_times, bare_times):
    api_p50, api_p99 = summary("API  GET /v1/agents/{id}/trainings/search", api_times)
    bare_p50, bare_p99 = summary("bare SELECT ... MATCH (sqlite3)", bare_times)
    ratio = api_p50 / bare_p50
    verdict = "met" if ratio <= 3 and api_p50 < 0.020 else "NOT met"
    print(f"  ratio p50 {ratio:.2f}x, p99 {api_p99 / bare_p99:.2f}x")
    print(f"  target (API p50 <= 3x bare p50 and < 20 ms): {verdict}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trainings", type=int, default=50_000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--no-http", action="store_true", help="skip the gunicorn run")
    parser.add_argument(
        "--requests", action="store_true", help="HTTP client: requests instead of http.client"
    )
    args = parser.parse_args()
    rng = random.Random(args.seed)

    from loadgen import Service

    service = Service(extra_env={"AGENT_PLATFORM_RATE_LIMIT_REQUESTS": str(10**9)})
    try:
        if not args.no_http:
            # Started first: on an empty database it creates the default
            # workspace (a non-empty one would print no admin key to wait for).
            service.start()
        raw_key, agent_id, vocab = seed(service.database, args.trainings, rng)
        size = os.path.getsize(service.database) / 1e6
        print(f"database {size:.0f} MB; {args.queries} queries x {args.rounds} rounds per mix")
        callers = [("in process (Flask test client)", test_client_caller)]
        if not args.no_http:
            client = "requests" if args.requests else "http.client"
            callers.append(
                (
                    f"loopback HTTP (agent-platform serve; {client})",
                    http_caller_for(service, args.requests),
                )
            )
        for weighted in (False, True):
            query_texts = queries(vocab, args.queries, rng, weighted)
            mix = "frequency-weighted terms" if weighted else "uniform rare terms"
            for label, make in callers:
                caller = make(service.database, raw_key, agent_id)
                api, bare, hits, matches = measure(
                    service.database, agent_id, query_texts, args.rounds, caller
                )
                print(
                    f"\n[{mix}; {label}] matching trainings per query: median "
                    f"{statistics.median(matches):.0f}, p90 {percentile(matches, 0.9):.0f}, "
                    f"max {max(matches)}; returned: median {statistics.median(hits):.0f}"
                )
                report(api, bare)
    finally:
        service.cleanup()


if __name__ == "__main__":
    main()
