"""A probe for bench/widget.py --probe, loaded by every Python process that
finds this directory on PYTHONPATH and acting only where WIDGET_PROBE_OUT is
set (the service's processes). In the gunicorn worker it records, per
request: the time from its packet's arrival to the main thread's taking it
(on a kept-alive connection), the wait for a thread (queued by the main
thread to handler start), the handler's time, and the main thread's delay
in taking the connection back. Every 2 s it appends what is new as a JSON
line, with each thread's time on a CPU and time runnable but waiting for
one (/proc/.../schedstat). Its only thread is that writer: a thread that
woke every millisecond to time its own sleep, contending for the GIL and
the CPU, changed what it measured (docs/benchmarks.md)."""

import json
import os
import socket
import struct
import threading
import time

OUT = os.environ.get("WIDGET_PROBE_OUT")
# Linux's: the kernel stamps each packet with its arrival (CLOCK_REALTIME).
SO_TIMESTAMPNS = SCM_TIMESTAMPNS = 35
TIMESPEC = struct.Struct("qq")


def arrival_delay(conn):
    """Seconds from the arrival of the first unread packet to now; None
    when it bears no stamp (the connection's first, before the option)."""
    if not getattr(conn, "stamped", False):
        conn.sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        conn.stamped = True
        return None
    try:
        _, ancillary, _, _ = conn.sock.recvmsg(1, 64, socket.MSG_PEEK | socket.MSG_DONTWAIT)
    except OSError:
        return None
    for level, kind, data in ancillary:
        if level == socket.SOL_SOCKET and kind == SCM_TIMESTAMPNS:
            seconds, nanoseconds = TIMESPEC.unpack(data[: TIMESPEC.size])
            return time.time() - (seconds + nanoseconds / 1e9)
    return None


def kind(req):
    if req.path == "/v1/me":
        return "me"
    if req.path.startswith("/widget/"):
        return "poll" if req.method == "GET" and req.path.endswith("/api/messages") else "widget"
    return "other"


def install(worker_class):
    records, lock = [], threading.Lock()
    enqueue, handle, handle_request, finish = (
        worker_class.enqueue_req,
        worker_class.handle,
        worker_class.handle_request,
        worker_class.finish_request,
    )

    def timed_enqueue(self, conn):
        conn.probe = {"queued": time.perf_counter(), "arrival": arrival_delay(conn)}
        return enqueue(self, conn)

    def timed_handle(self, conn):
        conn.probe["started"] = time.perf_counter()
        try:
            return handle(self, conn)
        finally:
            conn.probe["ended"] = time.perf_counter()

    def typed_handle_request(self, req, conn):
        conn.probe["kind"] = kind(req)
        return handle_request(self, req, conn)

    def timed_finish(self, conn, future):
        probe = getattr(conn, "probe", {})
        if "kind" in probe:
            row = (
                probe["kind"],
                probe["started"] - probe["queued"],
                probe["ended"] - probe["started"],
                time.perf_counter() - probe["ended"],
                time.time(),
                probe["arrival"],
            )
            with lock:
                records.append(row)
        return finish(self, conn, future)

    worker_class.enqueue_req, worker_class.handle = timed_enqueue, timed_handle
    worker_class.handle_request, worker_class.finish_request = typed_handle_request, timed_finish
    run = worker_class.run

    def probed_run(self):
        threading.Thread(target=writer, args=(records, lock), daemon=True).start()
        return run(self)

    worker_class.run = probed_run


def writer(records, lock):
    written = 0
    while True:
        time.sleep(2)
        with lock:
            new = records[written:]
        written += len(new)
        line = {"records": new, "threads": threads_cpu()}
        with open(OUT, "a") as out:
            out.write(json.dumps(line) + "\n")


def threads_cpu():
    """{thread name: (seconds on a CPU, seconds runnable waiting for one)}."""
    names = {thread.native_id: thread.name for thread in threading.enumerate()}
    names[os.getpid()] = "main"
    times = {}
    for tid in os.listdir(f"/proc/{os.getpid()}/task"):
        try:
            with open(f"/proc/{os.getpid()}/task/{tid}/schedstat") as stat:
                on_cpu, waiting, _ = stat.read().split()
        except FileNotFoundError:  # a thread that ended meanwhile (a job's)
            continue
        times[f"{names.get(int(tid), 'other')}:{tid}"] = (int(on_cpu) / 1e9, int(waiting) / 1e9)
    return times


if OUT:
    from gunicorn.workers.gthread import ThreadWorker

    install(ThreadWorker)
