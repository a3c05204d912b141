"""Issue 42 benchmark: signed WhatsApp messages stored per second on
PostgreSQL with 1, 2 and 4 `serve` processes on one database.

A PostgreSQL 15 server of Debian's package in a temporary directory, with
its durable defaults (fsync and synchronous_commit on: every 200 is answered
after its COMMIT reached the disk, as SQLite's WAL does with
synchronous=NORMAL... stricter, in fact, which the figures carry). For each
count of servers: a new database, that many `agent-platform serve`
processes (each gunicorn's master and one gevent worker, its jobs running),
1,000 customers warmed up, then rounds of wrk, one instance per server
splitting the same 16 connections, each posting its own distinct signed
single-message bodies (bench/whatsapp_inbound.py's; the same bodies to every
server would measure redeliveries, stored once). Messages stored are counted in the
database after each round; CPU is the servers' (all their processes) and
the database server's (its postmaster and backends), per message stored.
In the same run, the SQLite default with one `serve`, for comparison.

Everything shares this machine's CPUs: the load generator, the servers and
PostgreSQL. More processes than CPUs add no CPU: the ratio to one process
says what running several costs or gains here, not on a cluster.

    .venv/bin/python bench/postgresql_intake.py [--seconds 10] [--rounds 3]
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from functools import partial
from pathlib import Path

import psycopg
from loadgen import Service, cpu_seconds, throwaway_postgresql
from whatsapp_inbound import CUSTOMERS, LUA, create_channel, load, stored, warm_up, write_bodies

CONNECTIONS = 16


class Servers:
    """`count` serve processes on the database at `url`."""

    def __init__(self, url, count, work):
        self.url, self.count = url, count
        self.environ = {
            "AGENT_PLATFORM_DATABASE_URL": url,
            "AGENT_PLATFORM_INBOUND_MAX_REQUESTS_PER_MINUTE": "1000000000",
            "AGENT_PLATFORM_MEDIA_DIR": os.path.join(work, "media"),
            # One key of stored secrets for all (each would make its own).
            "AGENT_PLATFORM_SECRETS_KEY_FILE": os.path.join(work, f"secrets-{count}.key"),
        }
        self.services = []

    def start(self):
        first = Service(self.environ).start()  # migrates, prints the admin key
        self.services = [first]
        for _ in range(self.count - 1):
            service = Service(self.environ)
            service.admin_key = first.admin_key
            self.services.append(service.start())
        return self

    def pids(self):
        return [service.process.pid for service in self.services]

    def stop(self):
        for service in self.services:
            service.cleanup()


def stored_on(url):
    with psycopg.connect(url) as connection:
        return connection.execute("SELECT count(*) FROM message").fetchone()[0]


def medians(rows):
    return [statistics.median(column) for column in zip(*rows, strict=True)]


def parallel_load(urls, script, prefixes, seconds):
    """One wrk per server URL at once, the connections split between them,
    each posting the bodies of its own prefix."""
    per_server = str(max(1, CONNECTIONS // len(urls)))
    command = ["wrk", "-t", "1", "-c", per_server, "-d", f"{seconds}s", "-s", script]
    runs = [subprocess.Popen([*command, url, "--", prefix, "0"], stdout=subprocess.DEVNULL)
            for url, prefix in zip(urls, prefixes, strict=True)]  # fmt: skip
    for run in runs:
        run.wait()


def bodies(work, name, count, offset=0):
    """Signed bodies of distinct messages, from customer `offset` on."""
    return write_bodies(os.path.join(work, name), name, count, CUSTOMERS + offset)


def bodies_per_server(work, name, count, servers):
    """Each server's own messages (the same on each would be one message
    delivered several times, stored once), its customers starting apart."""
    return [bodies(work, f"{name}S{n}", count, n * CUSTOMERS // servers) for n in range(servers)]


class Meter:
    """Messages stored, and the CPU of the servers and of PostgreSQL."""

    def __init__(self, url, server_pids, database_pid):
        self.url, self.server_pids, self.database_pid = url, server_pids, database_pid

    def read(self):
        servers = sum(cpu_seconds(pid) for pid in self.server_pids)
        return stored_on(self.url), servers, cpu_seconds(self.database_pid)

    def round(self, run, seconds):
        """(msg/s, servers' CPU ms per message, PostgreSQL's) of one `run()`."""
        before = self.read()
        run()
        new, servers, database = (after - first for after, first in
                                  zip(self.read(), before, strict=True))  # fmt: skip
        return new / seconds, servers * 1000 / new, database * 1000 / new


def measure_postgresql(server, count, args, work, script):
    name = f"bench_{count}"
    server.execute(f"CREATE DATABASE {name}")
    servers = Servers(server.url(name), count, work).start()
    try:
        channel_id = create_channel(servers.services[0])
        urls = [f"{service.base}/inbound/whatsapp/{channel_id}" for service in servers.services]
        warm_up(urls[0], bodies(work, f"W{count}", CUSTOMERS))
        meter = Meter(server.url(name), servers.pids(), server.postmaster_pid())
        rows = []
        for n in range(args.rounds):
            prefixes = bodies_per_server(work, f"P{count}R{n}", args.bodies, count)
            rows.append(meter.round(partial(parallel_load, urls, script, prefixes, args.seconds),
                                    args.seconds))  # fmt: skip
            print(
                f"  {count} server(s), round {n + 1}: {rows[-1][0]:6.0f} msg/s, CPU per "
                f"message: servers {rows[-1][1]:.2f} ms, PostgreSQL {rows[-1][2]:.2f} ms"
            )
        return medians(rows)
    finally:
        servers.stop()


def measure_sqlite(args, work, script):
    """The default: one serve on a SQLite file, the same load."""
    limits = {"AGENT_PLATFORM_INBOUND_MAX_REQUESTS_PER_MINUTE": "1000000000"}
    service = Service({**limits, "AGENT_PLATFORM_MEDIA_DIR": os.path.join(work, "m")}).start()
    try:
        url = f"{service.base}/inbound/whatsapp/{create_channel(service)}"
        warm_up(url, bodies(work, "WS", CUSTOMERS))
        rows = []
        for n in range(args.rounds):
            prefix = bodies(work, f"SR{n}", args.bodies)
            before, cpu = stored(service.database), cpu_seconds(service.process.pid)
            load(url, script, prefix, args.seconds)
            new = stored(service.database) - before
            used = cpu_seconds(service.process.pid) - cpu
            rows.append((new / args.seconds, used * 1000 / new))
            print(f"  SQLite, round {n + 1}: {rows[-1][0]:6.0f} msg/s, CPU {rows[-1][1]:.2f} ms")
        return medians(rows)
    finally:
        service.cleanup()


def report(figures, sqlite):
    one = figures[min(figures)][0]
    print("\nservers  stored msg/s  ratio to 1  CPU ms/msg: servers  PostgreSQL")
    for count, (rate, servers_ms, database_ms) in figures.items():
        print(f"{count:7d}  {rate:12.0f}  {rate / one:10.2f}  {servers_ms:18.2f}  "
              f"{database_ms:10.2f}")  # fmt: skip
    print(f"SQLite (one serve): {sqlite[0]:.0f} msg/s, CPU {sqlite[1]:.2f} ms/msg")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--bodies", type=int, default=20000, help="signed bodies per round")
    parser.add_argument("--servers", default="1,2,4")
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="postgresql-bench-")
    script = os.path.join(work, "signed.lua")
    Path(script).write_text(LUA)
    print(
        f"wrk, {CONNECTIONS} connections in all, {args.seconds} s rounds, loopback, "
        f"{os.cpu_count()} CPUs shared by the load, the servers and the database\n"
    )
    try:
        with throwaway_postgresql() as server:
            counts = [int(count) for count in args.servers.split(",")]
            figures = {count: measure_postgresql(server, count, args, work, script)
                       for count in counts}  # fmt: skip
            report(figures, measure_sqlite(args, work, script))
    finally:
        subprocess.run(["rm", "-rf", work], check=False)


if __name__ == "__main__":
    sys.exit(main())
