"""Website widget benchmark: many open widgets on one `agent-platform serve`.

The service is started as a self-hoster runs it (gunicorn's gevent worker:
one process, the scheduler in it), with the agent answering from its
knowledge (the offline provider, instant) and no debounce. N widgets (500
by default) behave as widget.js does with its panel open on a visible page:
a session, then polls of GET .../api/messages with the tag and since of the
previous answer (so most are the cheap 204), each after the pause the
previous answer's X-Poll-After gives (1 s while the visitor's message
awaits its answer, else 5 s) or, from a service that gives none, every
second for 30 s after the visitor wrote or was answered and every 5 s after
that. Each widget sends a message every 20 to 40 s (--every LOW-HIGH), the
first within 30 s of the start (within the mean interval).
They run in one asyncio loop of this process, on keep-alive connections,
each widget from a loopback address of its own (127.1.x.y), as browsers
come from theirs: the service caps the connections of one address
(server.max_connections_per_address).

The same run then does all of it again against the bare baseline:
bench/bare_widget_app.py (the widget's routes and /v1/me answered from
memory, a message answered 50 ms after it is posted) under the service's
own server (bench/bare_server.py: the same gevent worker and options).
Both get server.max_connections = 2 x widgets + 100: an open widget holds
its stream and, for a while after it wrote, a kept-alive connection.

After 20 s (every widget polls by then), /v1/me is measured in turn alone
and with the widgets, --rounds times each (3 by default): for a window
alone the widgets pause (no message, and no poll once their last message
is answered) and the service settles; after one they resume for 10 s
before the next. Alternating, a drift of the machine over the run (other
work on it, the host's) weighs on both figures alike, and each figure
pools the requests of all its windows. --null keeps the widgets paused in
the second windows too: the ratio then shows how far the figures move
between windows when nothing differs (the measure's own noise).

Figures, for the service and the bare baseline:
- reply visible: from sending a message to the poll that first shows the
  agent's answer to it, p50/p95/max (includes up to one poll interval, 1 s);
- /v1/me p99 for API clients (wrk, --api-connections paced connections,
  16 by default, each waiting 40 ms on average between requests, drawn
  from 20 to 60 ms (--api-jitter 0.5; 0 for exactly 40 ms, with which two
  connections fall into step); --api-seconds per window, 10 by default)
  without the widgets and with them, and the ratio; each window's p99,
  and the pooled p50 and p90 too;
- memory: RSS and PSS summed over the server's processes (gunicorn's
  master and worker), sampled every half second while /v1/me is measured
  with the widgets: median and peak;
- the widgets' poll rate, and how many polls were 204, while measured;
  the errors over the run by kind (a status other than the one expected,
  or a new connection reset);
- the load average before the run, and while /v1/me is measured alone and
  with the widgets, the server's time on a CPU and runnable but waiting
  for one, and the time the host took of the machine's CPUs (steal time,
  where the machine is virtual); the windows in which the server's
  processes were started anew, and, when that or an error happened, the
  last lines of the service's log.

--cgroup-quota PERCENT puts each server's processes in a CPU cgroup of
their own with that quota (200: two CPUs' worth), as Docker's --cpus or a
systemd unit's CPUQuota= do (loadgen.CpuQuota: cgroup v2's cpu.max, or v1's
cpu controller; root only), and reports how long the quota held it back.
--pin runs the servers on CPU 0 and this process and wrk on CPU 1, all at
nice -10 (root only). --probe loads bench/probe/ into the service: each
request's handler time by kind, and the event loop's lag (how late a
greenlet sleeping 10 ms at a time wakes: what anything ready waited for
the greenlet holding the loop). --old-script: the widgets ignore
X-Poll-After, as a widget.js pasted before it does. --push: the widgets
listen to the push stream (GET .../api/events, server-sent events) as
widget.js does where it can, and never poll; each holds its stream open
(reconnecting with Last-Event-ID when one ends), through the windows alone
too (an open widget's idle stream is part of the quiet service), and the
reply visible figure is from sending to the event that shows the answer.
--split runs the service with server.jobs off and `agent-platform worker`
beside it (the jobs in a process of their own); its memory, CPU and cgroup
then take in the worker too.

    .venv/bin/python bench/widget.py [--widgets 500] [--rounds 3] [--pin] [--probe]
        [--old-script | --push] [--split] [--null] [--cgroup-quota 200] [--every 20-40]
        [--api-connections 16] [--api-seconds 10] [--api-jitter 0.5]
"""

import argparse
import asyncio
import json
import os
import random
import statistics
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import requests

sys.path.insert(0, str(Path(__file__).resolve().parent))
from loadgen import (  # noqa: E402
    PACED_SCRIPT,
    CpuQuota,
    Service,
    bare_flask,
    descendants,
    free_port,
    histogram_percentile,
    resident_mb,
    wrk,
)

PROBE = Path(__file__).resolve().parent / "probe"

ORIGIN = "https://shop.example.com"
QUESTION, ANSWER = "How much is delivery?", "Delivery costs 5 euros."
# widget.js's schedule with its panel open on a visible page, without the
# server's X-Poll-After: every FAST seconds for ACTIVE_FOR seconds after the
# visitor wrote or was answered, then every IDLE seconds (AWAY, the closed
# panel's or hidden page's 15 s, does not arise here; it bounds the hint).
FAST, IDLE, AWAY, ACTIVE_FOR = 1.0, 5.0, 15.0, 30.0
# Seconds: every widget polls within the first (IDLE and then some); after
# resuming, every widget is back to its pace within the second.
RAMP, RESUME = 20, 10


class Connection:
    """One keep-alive HTTP/1.1 connection (a widget's browser has its own),
    from the widget's own address. When the server has closed it (idle past
    server.keepalive_seconds), the next request opens a new one, as a
    browser does."""

    def __init__(self, port, address):
        self.port, self.address, self.reader, self.writer = port, address, None, None
        self.poll_after = None  # the last answer's X-Poll-After

    async def request(self, method, path, headers, body=None):
        data = json.dumps(body).encode() if body is not None else b""
        lines = [f"{method} {path} HTTP/1.1", "Host: bench", f"Origin: {ORIGIN}"]
        lines += [f"{name}: {value}" for name, value in headers.items()]
        lines += ["Content-Type: application/json", f"Content-Length: {len(data)}", "", ""]
        sent = "\r\n".join(lines).encode() + data
        status_line = b""
        if self.writer is not None:  # kept alive, unless the server has closed it
            status_line = await self._send(sent)
        if not status_line:
            self.reader, self.writer = await connect(self.port, self.address)
            status_line = await self._send(sent)
        if not status_line:  # a new connection reset too: an error, and the next opens anew
            self.writer.close()
            self.writer = None
            return 0, None
        headers = {}
        while (line := await self.reader.readline()) not in (b"\r\n", b""):
            name, _, value = line.decode().partition(":")
            headers[name.lower()] = value.strip()
        length = int(headers.get("content-length", 0))
        payload = await self.reader.readexactly(length) if length else b""
        self.poll_after = float(headers["x-poll-after"]) if "x-poll-after" in headers else None
        return int(status_line.split()[1]), json.loads(payload) if payload else None

    async def _send(self, request):
        """The answer's status line; empty when the server closed the connection."""
        try:
            self.writer.write(request)
            return await self.reader.readline()
        except ConnectionError:
            return b""


class Figures:
    def __init__(self):
        self.visible, self.polls, self.not_modified, self.streams = [], 0, 0, 0
        self.errors = Counter()  # (what, status): 0 for a new connection reset
        self.awaiting = 0  # the visitors' messages not answered yet, over all widgets


class Control:
    """Set by the main thread, read by the widgets' loop. Paused widgets
    write nothing and, once their last message is answered, stop polling:
    they wait on `running` instead of waking to look, so that the loop
    leaves wrk's CPU alone in the windows without widgets."""

    def __init__(self):
        self.stopped = threading.Event()
        self.loop = self.running = None  # the widgets' loop's, once it runs

    def start(self):
        """In the widgets' loop, before the widgets."""
        self.loop, self.running = asyncio.get_running_loop(), asyncio.Event()
        self.running.set()

    def pause(self):
        self.loop.call_soon_threadsafe(self.running.clear)

    def resume(self):
        self.loop.call_soon_threadsafe(self.running.set)

    def stop(self):
        self.stopped.set()
        if self.loop is not None and not self.loop.is_closed():
            self.loop.call_soon_threadsafe(self.running.set)


async def connect(port, address):
    return await asyncio.open_connection("127.0.0.1", port, local_addr=(address, 0))


def widget_address(number):
    """The number-th widget's loopback address: 127.1.0.1, 127.1.0.2, ..."""
    return f"127.1.{number // 250}.{number % 250 + 1}"


async def ask(connection, base, headers, count, waiting, figures):
    """The visitor's count-th question, timed from now until its answer shows."""
    body = {"text": QUESTION, "client_message_id": f"m{count}"}
    status, sent = await connection.request("POST", base + "messages", headers, body)
    if status == 201:
        waiting[sent["data"]["id"]] = time.monotonic()
        figures.awaiting += 1
    else:
        figures.errors["message", status] += 1


async def widget(port, address, channel, figures, control, old_script, every):
    connection = Connection(port, address)
    await asyncio.sleep(random.random() * FAST)
    base = f"/widget/{channel}/api/"
    _, started = await connection.request("POST", base + "session", {}, {})
    headers = {"X-Visitor-Token": started["data"]["visitor_token"]}
    since = tag = None
    waiting, count, active_until = {}, 0, 0.0
    next_send = time.monotonic() + random.uniform(0, every[0] + every[1]) / 2
    while not control.stopped.is_set():
        paused = not control.running.is_set()
        if paused and not waiting:
            paused_at = time.monotonic()
            await control.running.wait()
            next_send += time.monotonic() - paused_at  # the schedule resumes where it was
            continue
        if not paused and time.monotonic() >= next_send:
            count += 1
            await ask(connection, base, headers, count, waiting, figures)
            active_until = time.monotonic() + ACTIVE_FOR
            next_send = time.monotonic() + random.uniform(*every)
        query = f"?seen={tag}" + (f"&since={since}" if since else "") if tag else ""
        status, changed = await connection.request("GET", base + "messages" + query, headers)
        figures.polls += 1
        if status == 204:
            figures.not_modified += 1
        elif status == 200:
            since, tag = changed["data"]["since"], changed["data"]["tag"]
            if answered(changed["data"]["messages"], waiting, figures):
                active_until = time.monotonic() + ACTIVE_FOR
        else:
            figures.errors["poll", status] += 1
        hint = None if old_script else connection.poll_after
        await asyncio.sleep(pace(hint, time.monotonic() < active_until))


async def pushed_widget(port, address, channel, figures, control, every):
    """A widget that listens to its stream and only writes."""
    connection = Connection(port, address)
    await asyncio.sleep(random.random() * FAST)
    base = f"/widget/{channel}/api/"
    _, started = await connection.request("POST", base + "session", {}, {})
    token = started["data"]["visitor_token"]
    waiting, count = {}, 0
    listener = asyncio.create_task(listen(port, address, base, token, waiting, figures, control))
    next_send = time.monotonic() + random.uniform(0, every[0] + every[1]) / 2
    while not control.stopped.is_set():
        if not control.running.is_set():
            paused_at = time.monotonic()
            await control.running.wait()
            next_send += time.monotonic() - paused_at
            continue
        if time.monotonic() < next_send:
            await asyncio.sleep(min(next_send - time.monotonic(), 1))  # sees a pause or stop
            continue
        count += 1
        await ask(connection, base, {"X-Visitor-Token": token}, count, waiting, figures)
        next_send = time.monotonic() + random.uniform(*every)
    listener.cancel()


async def listen(port, address, base, token, waiting, figures, control):
    """The widget's stream, opened again whenever it ends (HTTP/1.0, so the
    body is the events as written, not chunked)."""
    last_id, known = None, set()
    while not control.stopped.is_set():
        reader, writer = await connect(port, address)
        lines = [f"GET {base}events?token={token} HTTP/1.0", "Host: bench", f"Origin: {ORIGIN}"]
        lines += [f"Last-Event-ID: {last_id}"] if last_id else []
        writer.write(("\r\n".join(lines) + "\r\n\r\n").encode())
        status = int((await reader.readline()).split()[1] or 0)
        figures.streams += 1
        while (line := await reader.readline()) not in (b"\r\n", b""):
            pass
        if status != 200:
            figures.errors["stream", status] += 1
            await asyncio.sleep(2)
        try:
            while (line := await reader.readline()) != b"":
                if line.startswith(b"id: "):
                    last_id = line[4:].strip().decode()
                elif line.startswith(b"data: "):
                    messages = json.loads(line[6:])["messages"]
                    fresh = [m for m in messages if m["id"] not in known]
                    known.update(m["id"] for m in messages)
                    answered(fresh, waiting, figures)
        finally:  # cancelled at the end too: the server sees the stream closed
            writer.close()


def pace(poll_after, active):
    """widget.js's: the server's X-Poll-After when it gives one, else its own."""
    if poll_after is not None:
        return min(max(poll_after, FAST), AWAY)
    return FAST if active else IDLE


def answered(messages, waiting, figures):
    """An agent's message answers the oldest message still waiting; whether
    one came (the widget then polls fast again)."""
    replies = [message for message in messages if message["from"] == "agent"]
    for _ in replies:
        if waiting:
            oldest = min(waiting, key=waiting.get)
            figures.visible.append(time.monotonic() - waiting.pop(oldest))
            figures.awaiting -= 1
    return bool(replies)


def setup(service):
    api = requests.Session()
    api.headers["x-api-key"] = service.admin_key
    base = service.base

    def post(path, body):
        response = api.post(base + path, json=body, timeout=10)
        response.raise_for_status()
        return response.json()["data"]

    agent = post("/v1/agents", {"name": "Ana"})["id"]
    post(f"/v1/agents/{agent}/trainings", {"type": "qa", "question": QUESTION, "answer": ANSWER})
    settings = {"allowed_origins": [ORIGIN]}
    channel = post("/v1/channels", {"name": "Site", "type": "website", "settings": settings})
    post(f"/v1/channels/{channel['id']}/connect", {"agent_id": agent})
    return channel["id"]


def run_widgets(port, channel, count, control, figures, old_script, every, push):
    async def all_of_them():
        control.start()
        addresses = (widget_address(number) for number in range(count))
        if push:
            widgets = (
                pushed_widget(port, address, channel, figures, control, every)
                for address in addresses
            )
        else:
            widgets = (
                widget(port, address, channel, figures, control, old_script, every)
                for address in addresses
            )
        await asyncio.gather(*widgets)

    asyncio.run(all_of_them())


def seconds_range(text):
    low, _, high = text.partition("-")
    return float(low), float(high or low)


class Phase:
    """/v1/me's windows alone or with the widgets: their pooled latencies,
    each window's p99 and span, and what the windows `used` together: the
    service's CPU, the host's steal and the widgets' polls."""

    def __init__(self):
        self.latency, self.p99s, self.spans, self.used = Counter(), [], [], Counter()
        self.replaced = 0  # windows in which the service's processes were started anew
        self.memory = []  # (RSS, PSS) in MB, every half second while measured

    def measure(self, service, options, figures):
        headers = {"x-api-key": service.admin_key}
        connections = options.api_connections
        before, start = readings(service, figures), time.time()
        processes = service_processes(service)
        done = threading.Event()
        sampler = threading.Thread(target=self.sample, args=(target_pids(service), done))
        sampler.start()
        measured = wrk(
            service.base + "/v1/me",
            connections,
            options.api_seconds,
            headers,
            threads=min(connections, 2),
            script=PACED_SCRIPT,
            jitter=options.api_jitter,
        )
        done.set()
        sampler.join()
        self.used.update(readings(service, figures))
        self.used.subtract(before)
        self.replaced += service_processes(service) != processes
        self.spans.append((start, time.time()))
        self.latency.update(measured["histogram"])
        self.p99s.append(measured["p99_ms"])

    def sample(self, pids, done):
        while not done.wait(0.5):
            self.memory.append(resident_mb(*pids))

    def memory_text(self):
        """E.g. "PSS 80 MB (peak 82), RSS 110 MB (peak 112)": medians and peaks."""
        parts = []
        for name, values in (
            ("PSS", [m[1] for m in self.memory]),
            ("RSS", [m[0] for m in self.memory]),
        ):
            parts.append(f"{name} {statistics.median(values):.0f} MB (peak {max(values):.0f})")
        return ", ".join(parts)

    @property
    def seconds(self):
        return sum(end - start for start, end in self.spans)

    def p99(self):
        """In ms, over every window's requests together."""
        return self.percentile(0.99)

    def percentile(self, fraction):
        return histogram_percentile(self.latency, fraction)


def target_pids(target):
    """The service's own processes (serve's master, and a worker beside it)
    or the baseline's."""
    return getattr(target, "pids", [target.process.pid])


def service_processes(service):
    return {n for pid in target_pids(service) for n in (pid, *descendants(pid))}


def readings(service, figures):
    """The running totals a window's use is the difference of."""
    on_cpu, waiting = service_cpu(target_pids(service))
    return Counter(
        on_cpu=on_cpu,
        waiting=waiting,
        stolen=stolen(),
        polls=figures.polls,
        not_modified=figures.not_modified,
    )


def alternate(service, options, control, figures):
    """options.rounds windows of /v1/me alone and as many with the widgets,
    in turn, so that a drift of the machine weighs on both alike."""
    alone, loaded = Phase(), Phase()
    for _ in range(options.rounds):
        control.pause()
        settle(figures)
        alone.measure(service, options, figures)
        if not options.null:
            control.resume()
            time.sleep(RESUME)
        loaded.measure(service, options, figures)
    return alone, loaded


def settle(figures, limit=30):
    """Until the paused widgets' messages are answered and their replies'
    jobs are done."""
    deadline = time.monotonic() + limit
    while figures.awaiting > 0 and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(2)


class BareTarget:
    """The baseline, bench/bare_widget_app.py, under the service's server;
    what the benchmark needs of a Service."""

    admin_key = "bare"

    def __init__(self, environ):
        self.port = free_port()
        self.process = bare_flask("bare_widget_app:app", self.port, environ)

    @property
    def base(self):
        return f"http://127.0.0.1:{self.port}"

    def logged(self):
        return ["(the baseline logs nothing)"]

    def cleanup(self):
        """gunicorn's graceful stop: a stream whose client has gone ends at
        its second heartbeat after (the first write still succeeds), and
        is cut at 30 s."""
        self.process.terminate()
        self.process.wait(timeout=60)


class Run:
    """One target's figures: the service's or the baseline's."""

    def __init__(self, name):
        self.name, self.figures, self.throttled = name, Figures(), None
        self.alone = self.loaded = None
        self.elapsed = 0.0


def parse_options():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--widgets", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=3, help="windows alone, and loaded, each")
    parser.add_argument("--pin", action="store_true")
    parser.add_argument("--probe", action="store_true")
    parser.add_argument("--old-script", action="store_true")
    parser.add_argument("--push", action="store_true", help="streams instead of polls")
    parser.add_argument(
        "--split", action="store_true", help="server.jobs off, `agent-platform worker` beside"
    )
    parser.add_argument("--null", action="store_true", help="the second windows alone too")
    parser.add_argument(
        "--cgroup-quota", type=float, help="PERCENT of one CPU: each server in a CPU cgroup"
    )
    parser.add_argument("--api-connections", type=int, default=16, help="wrk's paced connections")
    parser.add_argument("--api-seconds", type=int, default=10, help="each /v1/me window's length")
    parser.add_argument(
        "--api-jitter",
        type=float,
        default=0.5,
        help="each connection's pause drawn from 40 ms times 1 -/+ this (0: always 40 ms)",
    )
    parser.add_argument(
        "--every", type=seconds_range, default=(20, 40), help="LOW-HIGH seconds between messages"
    )
    return parser.parse_args()


def main():
    options = parse_options()
    environ = {
        "AGENT_PLATFORM_REPLIES_DEBOUNCE_SECONDS": "0",
        "AGENT_PLATFORM_WIDGET_ADDRESS_REQUESTS_PER_MINUTE": "1000000",
        "AGENT_PLATFORM_WIDGET_ADDRESS_NEW_VISITORS_PER_MINUTE": "1000000",
        # wrk's API client must not meet the per-key limit either.
        "AGENT_PLATFORM_RATE_LIMIT_REQUESTS": "100000000",
        "AGENT_PLATFORM_SERVER_MAX_CONNECTIONS": str(2 * options.widgets + 100),
    }
    load_before = os.getloadavg()[0]
    if options.pin:
        os.nice(-10)
    print(f"load average (1 min) before the run: {load_before:.2f}", flush=True)
    probe_out = None
    if options.probe:
        probe_out = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"widget-probe-{os.getpid()}")
    service = run_target("service", options, environ, probe_out)
    bare = run_target("bare", options, environ, None)
    print(
        f"against the bare baseline: /v1/me p99 loaded {service.loaded.p99():.1f} ms against "
        f"{bare.loaded.p99():.1f} ms; PSS median {pss(service) - pss(bare):+.0f} MB "
        f"({pss(service):.0f} against {pss(bare):.0f} MB)"
    )
    if probe_out:
        report_probe(probe_out, {"alone": service.alone.spans, "loaded": service.loaded.spans})


def pss(run):
    return statistics.median(m[1] for m in run.loaded.memory)


def run_target(name, options, environ, probe_out):
    """Start the service or the baseline, load it, report, stop it."""
    run = Run(name)
    quota = CpuQuota(options.cgroup_quota) if options.cgroup_quota else None
    if options.pin:
        os.sched_setaffinity(0, {0})  # the server inherits CPU 0
    if name == "service":
        probe = {"PYTHONPATH": str(PROBE), "WIDGET_PROBE_OUT": probe_out} if probe_out else {}
        target = Service({**environ, **probe}, worker=options.split).start()
        channel = setup(target)
    else:
        target, channel = BareTarget(environ), "bare"
    if options.pin:
        os.sched_setaffinity(0, {1})  # this process and wrk
    control = Control()
    try:
        if quota:
            for pid in target_pids(target):
                quota.enter(pid)
            throttled_before = quota.throttled_seconds()
        load = threading.Thread(
            target=run_widgets,
            args=(
                target.port,
                channel,
                options.widgets,
                control,
                run.figures,
                options.old_script,
                options.every,
                options.push,
            ),
        )
        started = time.monotonic()
        load.start()
        time.sleep(RAMP)
        run.alone, run.loaded = alternate(target, options, control, run.figures)
        control.stop()
        load.join()
        run.elapsed = time.monotonic() - started
        if quota:
            run.throttled = quota.throttled_seconds() - throttled_before
        report(options, run, quota)
        if run.figures.errors or run.alone.replaced or run.loaded.replaced:
            print("  the server's log ends:", *target.logged(), sep="\n    ")
        if probe_out:
            time.sleep(2.5)  # its last lines
    finally:
        control.stop()
        try:
            target.cleanup()
        finally:
            if quota:
                quota.remove()
    return run


def stolen():
    """Seconds of this machine's CPUs that its host gave to others (steal
    time, on a virtual machine), all CPUs together."""
    with open("/proc/stat") as stat:
        fields = stat.readline().split()
    return int(fields[8]) / os.sysconf("SC_CLK_TCK")


def service_cpu(pids):
    """(seconds on a CPU, seconds runnable waiting for one), all threads of
    the service's processes."""
    on_cpu = waiting = 0
    for process in [n for pid in pids for n in (pid, *descendants(pid))]:
        for task in Path(f"/proc/{process}/task").iterdir():
            try:
                run, wait, _ = (task / "schedstat").read_text().split()
            except FileNotFoundError:  # a thread that ended meanwhile
                continue
            on_cpu, waiting = on_cpu + int(run), waiting + int(wait)
    return on_cpu / 1e9, waiting / 1e9


def report_probe(path, phases):
    """The probe's records (sitecustomize.py) by phase: handler times by
    kind of request, and the event loop's lag."""
    handled, lags = [], []
    with open(path) as lines:
        for line in lines:
            written = json.loads(line)
            handled += written["requests"]
            lags += written["lags"]
    os.remove(path)
    for name, spans in phases.items():

        def within(moment, spans=spans):
            return any(start <= moment <= end for start, end in spans)

        for kind in ("me", "poll", "widget"):
            times = [row[1] for row in handled if row[0] == kind and within(row[2])]
            if times:
                print(
                    f"  {name:6} {kind:6} ({len(times)}): handler "
                    f"{percentile(times, 0.5):.2f} / {percentile(times, 0.99):.2f} ms (p50 / p99)"
                )
        late = [row[1] for row in lags if within(row[0])]
        if late:
            print(
                f"  {name:6} event loop lag ({len(late)} wake-ups): {percentile(late, 0.5):.2f} / "
                f"{percentile(late, 0.99):.2f} ms, max {max(late) * 1000:.1f} ms"
            )


def percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * fraction))] * 1000 if ordered else 0.0


def errors_text(errors):
    """E.g. "3 errors (message 429: 2, poll reset: 1)"."""
    if not errors:
        return "no errors"
    kinds = sorted(errors.items(), key=lambda item: -item[1])
    named = ", ".join(f"{what} {status or 'reset'}: {count}" for (what, status), count in kinds)
    return f"{errors.total()} errors ({named})"


def report(options, run, quota):
    figures, alone, loaded = run.figures, run.alone, run.loaded
    visible = sorted(figures.visible)
    low, high = options.every
    where = f", in {quota}" if quota else ""
    split = (
        " (its jobs in `agent-platform worker`)" if options.split and run.name == "service" else ""
    )
    print(
        f"{run.name}: {options.widgets} widgets on one gevent worker{split}{where} for "
        f"{run.elapsed:.0f} s, {loaded.seconds:.0f} s of them measured with the widgets; "
        f"a message every {low:g}-{high:g} s each"
    )
    if options.push:
        print(f"  pushed: {figures.streams} streams opened (none polls)")
    print(
        f"  polls while measured: {loaded.used['polls'] / loaded.seconds:.0f}/s, "
        f"{loaded.used['not_modified'] / max(loaded.used['polls'], 1):.1%} answered 204; "
        f"{errors_text(figures.errors)} in the run"
    )
    if visible:
        p95 = visible[int(len(visible) * 0.95) - 1]
        print(
            f"  reply visible ({len(visible)} replies): p50 {statistics.median(visible):.2f} s, "
            f"p95 {p95:.2f} s, max {visible[-1]:.2f} s"
            + ("" if options.push else f" (a poll interval, {FAST:.0f} s, included)")
        )
    count = sum(alone.latency.values()) + sum(loaded.latency.values())
    print(
        f"  /v1/me p99 over {options.rounds} windows of {options.api_seconds} s each, "
        f"alone and loaded in turn ({count} requests): {alone.p99():.1f} ms alone, "
        f"{loaded.p99():.1f} ms {'alone again (--null)' if options.null else 'with the widgets'} "
        f"({loaded.p99() / alone.p99():.2f}x)"
    )
    print(
        f"    p50 {alone.percentile(0.5):.2f} -> {loaded.percentile(0.5):.2f} ms, "
        f"p90 {alone.percentile(0.9):.2f} -> {loaded.percentile(0.9):.2f} ms"
    )
    rounds = zip(alone.p99s, loaded.p99s, strict=True)
    print("    each round's: " + ", ".join(f"{a:.1f} -> {b:.1f} ms" for a, b in rounds))
    print(f"  memory (all its processes) while loaded: {loaded.memory_text()}")
    for name, phase in (("alone", alone), ("loaded", loaded)):
        used = phase.used
        print(
            f"  server while /v1/me was {name}: {used['on_cpu']:.1f} s on a CPU, "
            f"{used['waiting']:.1f} s runnable but waiting for one "
            "(all its processes and threads); "
            f"the host took {used['stolen']:.1f} s of the machine's CPUs"
        )
        if phase.replaced:
            print(
                f"    its processes were started anew in {phase.replaced} of these windows "
                "(their CPU times do not add up there)"
            )
    if run.throttled is not None:
        print(f"  the quota held it back for {run.throttled:.1f} s in the run")


if __name__ == "__main__":
    main()
