"""Shared pieces of the benchmarks: start servers the way `serve` does, load them with wrk.

wrk is the load generator (`apt-get install wrk`): it runs outside Python, so the
figures measure the server rather than the client.
"""

import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_until_up(url, timeout=30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            requests.get(url, timeout=1)
            return
        except requests.RequestException:
            time.sleep(0.1)
    raise RuntimeError(f"{url} did not come up")


class Service:
    """`agent-platform serve` on a fresh database in a temporary directory."""

    def __init__(self, extra_env=None):
        self.directory = tempfile.mkdtemp(prefix="agent-platform-bench-")
        self.database = os.path.join(self.directory, "bench.db")
        self.port = free_port()
        self.env = {
            **os.environ,
            "AGENT_PLATFORM_DATABASE_PATH": self.database,
            "AGENT_PLATFORM_LOG_LEVEL": "WARNING",
            **(extra_env or {}),
        }
        self.process = None
        self.admin_key = None
        self.log = os.path.join(self.directory, "serve.log")  # its warnings and errors

    @property
    def base(self):
        return f"http://127.0.0.1:{self.port}"

    def start(self):
        with open(self.log, "w") as log:
            self.process = subprocess.Popen(
                [str(BIN / "agent-platform"), "serve", "--port", str(self.port)],
                cwd=self.directory,
                env=self.env,
                stdout=subprocess.PIPE,
                stderr=log,
                text=True,
            )
        first = self.process.stdout.readline()
        if "shown only once" in first:
            self.admin_key = self.process.stdout.readline().strip()
        # Keep reading, so a full pipe never blocks the server.
        threading.Thread(target=self.process.stdout.read, daemon=True).start()
        try:
            wait_until_up(self.base + "/v1/health")
        except RuntimeError:
            self.cleanup()  # a service that never came up is not left running
            raise
        return self

    def logged(self, last=20):
        """The service log's last lines (gunicorn's and the app's warnings)."""
        with open(self.log, errors="replace") as log:
            return log.read().splitlines()[-last:]

    def stop(self):
        if self.process:
            self.process.terminate()
            self.process.wait(timeout=30)
            self.process = None

    def cleanup(self):
        self.stop()
        shutil.rmtree(self.directory, ignore_errors=True)


def bare_flask(route_file, port, threads):
    """A bare Flask app under the same gunicorn settings as the service."""
    process = subprocess.Popen(
        [
            str(BIN / "gunicorn"),
            "--workers", "1", "--worker-class", "gthread", "--threads", str(threads),
            "--bind", f"127.0.0.1:{port}", "--log-level", "warning", route_file,
        ],
        cwd=ROOT / "bench",
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    wait_until_up(f"http://127.0.0.1:{port}/")
    return process


def resident_mb(pid):
    """Memory of a process and those under it in MB: (RSS sum, PSS sum).

    gunicorn forks its worker from the master, and the worker its widget
    process, so they share most pages; RSS counts shared pages once per
    process, PSS (proportional set size) once in all.
    """
    rss = pss = 0
    for candidate in [pid, *descendants(pid)]:
        try:
            rollup = Path(f"/proc/{candidate}/smaps_rollup").read_text()
        except FileNotFoundError:
            continue
        rss += int(re.search(r"^Rss:\s+(\d+)", rollup, re.M).group(1))
        pss += int(re.search(r"^Pss:\s+(\d+)", rollup, re.M).group(1))
    return rss / 1024, pss / 1024


def cpu_seconds(pid):
    """CPU time (user + system) used so far by a process and those under it."""
    total = 0
    for candidate in [pid, *descendants(pid)]:
        try:
            fields = Path(f"/proc/{candidate}/stat").read_text().rsplit(")", 1)[1].split()
        except FileNotFoundError:
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / os.sysconf("SC_CLK_TCK")


def descendants(pid):
    """The processes under `pid`, at every depth (gunicorn's worker, and the
    widget process the worker forks)."""
    found = []
    for child in _children(pid):
        found += [child, *descendants(child)]
    return found


def _children(pid):
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except FileNotFoundError:
        return []
    return [int(child) for child in text.split()]


PACED_SCRIPT = Path(__file__).resolve().parent / "paced.lua"


def wrk(
    url, connections=16, seconds=10, headers=None, threads=2, script=None, pace_ms=40, jitter=0.0
):
    """Run wrk; returns requests/s, p50 and p99 latency in ms, and non-2xx count.

    script=PACED_SCRIPT makes each connection pause `pace_ms` between requests,
    so the latency is measured below saturation instead of being mostly queueing;
    `jitter` (a fraction) draws each pause around `pace_ms` (paced.lua says why);
    with it the result also holds the run's latency histogram, {microseconds: count}.
    """
    if shutil.which("wrk") is None:
        sys.exit("wrk is needed for this benchmark: apt-get install wrk")
    command = ["wrk", "-t", str(threads), "-c", str(connections), "-d", f"{seconds}s", "--latency"]
    for name, value in (headers or {}).items():
        command += ["-H", f"{name}: {value}"]
    if script:
        command += ["-s", str(script)]
    histogram = tempfile.NamedTemporaryFile("r", suffix=".latency")
    environ = {
        **os.environ,
        "PACE_MS": str(pace_ms),
        "PACE_JITTER": str(jitter),
        "LATENCY_OUT": histogram.name,
    }
    output = subprocess.run(
        command + [url], capture_output=True, text=True, check=True, env=environ
    ).stdout
    with histogram:
        counts = dict(tuple(map(int, line.split())) for line in histogram)
    return {
        "histogram": counts,
        "requests": int(re.search(r"(\d+) requests in", output).group(1)),
        "rps": float(re.search(r"Requests/sec:\s+([\d.]+)", output).group(1)),
        "p50_ms": _latency(output, "50%"),
        "p99_ms": _latency(output, "99%"),
        "errors": int(m.group(1))
        if (m := re.search(r"Non-2xx or 3xx responses: (\d+)", output))
        else 0,
    }


def _latency(output, percentile):
    value, unit = re.search(rf"{percentile}\s+([\d.]+)(us|ms|s)", output).groups()
    return float(value) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]
