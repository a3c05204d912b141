"""A probe for bench/widget.py --probe, loaded by every Python process that
finds this directory on PYTHONPATH and acting only where WIDGET_PROBE_OUT is
set (the service's processes). In gunicorn's gevent worker it records, per
request, its kind and its handler's time (the WSGI app and the writing of
its answer; a push stream's, which lasts as long as the stream, is left
out), and the event loop's lag: a greenlet sleeping 10 ms at a time notes
how late it wakes, which is how long anything ready to run (a request
whose bytes arrived) waited for the greenlet holding the loop. Every 2 s
another greenlet appends what is new as a JSON line. Greenlets, not
threads: a thread waking every millisecond to time its own sleep contended
for the interpreter lock and changed what it measured (docs/benchmarks.md);
a greenlet's timer is one more event in the loop it measures."""

import json
import os
import time

OUT = os.environ.get("WIDGET_PROBE_OUT")
TICK = 0.01


def kind(req):
    if req.path == "/v1/me":
        return "me"
    if req.path.startswith("/widget/"):
        if req.path.endswith("/api/events"):
            return "stream"
        return "poll" if req.method == "GET" and req.path.endswith("/api/messages") else "widget"
    return "other"


def install(worker_class):
    records = {"requests": [], "lags": []}
    handle_request, run = worker_class.handle_request, worker_class.run

    def timed_handle_request(self, listener_name, req, sock, addr):
        started = time.perf_counter()
        try:
            return handle_request(self, listener_name, req, sock, addr)
        finally:
            if kind(req) != "stream":
                elapsed = time.perf_counter() - started
                records["requests"].append((kind(req), elapsed, time.time()))

    def probed_run(self):
        import gevent

        gevent.spawn(measure_lag, records["lags"])
        gevent.spawn(writer, records)
        return run(self)

    worker_class.handle_request, worker_class.run = timed_handle_request, probed_run


def measure_lag(lags):
    import gevent

    while True:
        started = time.perf_counter()
        gevent.sleep(TICK)
        lags.append((time.time(), max(0.0, time.perf_counter() - started - TICK)))


def writer(records):
    import gevent

    while True:
        gevent.sleep(2)
        new = {name: rows[:] for name, rows in records.items()}
        for rows in records.values():
            rows.clear()
        with open(OUT, "a") as out:
            out.write(json.dumps(new) + "\n")


if OUT:
    from gunicorn.workers.ggevent import GeventWorker

    install(GeventWorker)
