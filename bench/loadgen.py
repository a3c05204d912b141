"""Shared pieces of the benchmarks: start servers the way `serve` does, load them with wrk.

wrk is the load generator (`apt-get install wrk`): it runs outside Python, so the
figures measure the server rather than the client. The service and the bare
baselines run this checkout's code (platform/ first on their PYTHONPATH),
whichever copy of the package the interpreter has installed.
"""

import itertools
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parents[1]


def tree_environ(extra=None):
    """os.environ and `extra`, with this checkout's platform/ first on
    PYTHONPATH (an `extra` PYTHONPATH, such as the probe's, comes before it)."""
    environ = {**os.environ, **(extra or {})}
    paths = [environ.get("PYTHONPATH"), str(ROOT / "platform"), os.environ.get("PYTHONPATH")]
    environ["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(filter(None, paths)))
    return environ


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

    def __init__(self, extra_env=None, worker=False):
        self.with_worker = worker  # jobs in `agent-platform worker` (server.jobs off)
        self.worker = None
        self.directory = tempfile.mkdtemp(prefix="agent-platform-bench-")
        self.database = os.path.join(self.directory, "bench.db")
        self.port = free_port()
        self.env = tree_environ(
            {
                "AGENT_PLATFORM_DATABASE_PATH": self.database,
                "AGENT_PLATFORM_LOG_LEVEL": "WARNING",
                **({"AGENT_PLATFORM_SERVER_JOBS": "false"} if worker else {}),
                **(extra_env or {}),
            }
        )
        self.process = None
        self.admin_key = None
        self.log = os.path.join(self.directory, "serve.log")  # its warnings and errors

    @property
    def base(self):
        return f"http://127.0.0.1:{self.port}"

    def start(self):
        with open(self.log, "w") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "agent_platform", "serve", "--port", str(self.port)],
                cwd=self.directory,
                env=self.env,
                stdout=subprocess.PIPE,
                stderr=log,
                text=True,
            )
        # Keep reading, so a full pipe never blocks the server.
        output = []
        threading.Thread(target=output.extend, args=(self.process.stdout,), daemon=True).start()
        try:
            wait_until_up(self.base + "/v1/health")
        except RuntimeError:
            self.cleanup()  # a service that never came up is not left running
            raise
        self.admin_key = self.admin_key or _first_key(output)
        if self.with_worker:
            self.worker = self._start_worker()
        return self

    def _start_worker(self):
        with open(self.log, "a") as log:
            return subprocess.Popen(
                [sys.executable, "-m", "agent_platform", "worker"],
                cwd=self.directory,
                env=self.env,
                stdout=subprocess.DEVNULL,
                stderr=log,
            )

    @property
    def pids(self):
        """The processes the service started itself: serve's, and the worker's."""
        return [self.process.pid] + ([self.worker.pid] if self.worker else [])

    def logged(self, last=20):
        """The service log's last lines (gunicorn's and the app's warnings)."""
        with open(self.log, errors="replace") as log:
            return log.read().splitlines()[-last:]

    def stop(self):
        """SIGTERM, and wait: open push streams hold the worker up to
        gunicorn's graceful timeout (30 s), after which it is killed."""
        for process in (self.worker, self.process):
            if process:
                process.terminate()
                process.wait(timeout=60)
        self.process = self.worker = None

    def cleanup(self):
        self.stop()
        shutil.rmtree(self.directory, ignore_errors=True)


@contextmanager
def throwaway_postgresql():
    """A PostgreSQL server of Debian's package in a temporary directory (the
    tests' tests/pg_server.py), stopped and removed on leaving. It keeps
    PostgreSQL's durable defaults (fsync and synchronous_commit on), as a
    deployment's server does: a measure, not a test."""
    if str(ROOT / "tests") not in sys.path:
        sys.path.insert(0, str(ROOT / "tests"))
    from pg_server import PostgresServer

    server = PostgresServer().start(durable=True)
    try:
        yield server
    finally:
        server.stop()


def bare_flask(app, port, extra_env=None):
    """A bare Flask app ("module:app" in bench/) under the service's own
    server: bench/bare_server.py, gunicorn's gevent worker with the options
    `serve` would take from the same AGENT_PLATFORM_* settings."""
    environ = tree_environ({"AGENT_PLATFORM_LOG_LEVEL": "WARNING", **(extra_env or {})})
    process = subprocess.Popen(
        [sys.executable, str(ROOT / "bench" / "bare_server.py"), app, str(port)],
        cwd=ROOT / "bench",
        env=environ,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_until_up(f"http://127.0.0.1:{port}/")
    except RuntimeError:
        process.terminate()
        process.wait()
        raise
    return process


def resident_mb(*pids):
    """Memory of processes and those under them in MB: (RSS sum, PSS sum).

    gunicorn forks its worker from the master, so they share pages; RSS
    counts shared pages once per process, PSS (proportional set size) once
    in all.
    """
    rss = pss = 0
    for candidate in [n for pid in pids for n in (pid, *descendants(pid))]:
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
    """The processes under `pid`, at every depth (gunicorn's worker)."""
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


def histogram_percentile(histogram, fraction):
    """The latency (ms) below which `fraction` of the requests of `histogram`
    (a Counter of microseconds, wrk's) fall."""
    rank, seen = sum(histogram.values()) * fraction, 0
    for microseconds in sorted(histogram):
        seen += histogram[microseconds]
        if seen >= rank:
            return microseconds / 1000
    return 0.0


def _latency(output, percentile):
    value, unit = re.search(rf"{percentile}\s+([\d.]+)(us|ms|s)", output).groups()
    return float(value) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]


class CpuQuota:
    """A CPU cgroup of its own with a quota, as Docker's --cpus or a systemd
    unit's CPUQuota= make one, for the processes put in it (their children
    follow them). cgroup v2's cpu.max where the cpu controller is on the
    unified hierarchy; else v1's cpu controller (cpu.cfs_quota_us). Root only.
    `systemd-run --scope -p CPUQuota=` does the same where systemd runs."""

    PERIOD_US = 100_000

    def __init__(self, percent):
        quota = int(self.PERIOD_US * percent / 100)
        name = f"agent-platform-bench-{os.getpid()}-{next(_cgroups)}"
        unified = Path("/sys/fs/cgroup")
        if "cpu" in _read(unified / "cgroup.controllers").split():
            self.kind, self.path = "v2", unified / name
            subtree = unified / "cgroup.subtree_control"
            if "cpu" not in _read(subtree).split():
                subtree.write_text("+cpu")
            self.path.mkdir()
            (self.path / "cpu.max").write_text(f"{quota} {self.PERIOD_US}")
        elif Path("/sys/fs/cgroup/cpu/cpu.cfs_quota_us").exists():
            self.kind, self.path = "v1", Path("/sys/fs/cgroup/cpu") / name
            self.path.mkdir()
            (self.path / "cpu.cfs_period_us").write_text(str(self.PERIOD_US))
            (self.path / "cpu.cfs_quota_us").write_text(str(quota))
        else:
            raise RuntimeError("no CPU cgroup controller this process can use")
        self.percent = percent

    def enter(self, pid):
        """Move `pid` and the processes under it into the group."""
        for process in [pid, *descendants(pid)]:
            (self.path / "cgroup.procs").write_text(str(process))

    def throttled_seconds(self):
        """How long the quota held the group back so far."""
        stat = dict(line.split() for line in _read(self.path / "cpu.stat").splitlines())
        if self.kind == "v2":
            return int(stat.get("throttled_usec", 0)) / 1e6
        return int(stat.get("throttled_time", 0)) / 1e9

    def remove(self):
        """Once its processes have ended."""
        for _ in range(50):
            try:
                self.path.rmdir()
                return
            except OSError:
                time.sleep(0.1)

    def __str__(self):
        return f"a CPU cgroup ({self.kind}) with a quota of {self.percent:g}% of one CPU"


_cgroups = itertools.count()


def _read(path):
    try:
        return Path(path).read_text()
    except FileNotFoundError:
        return ""


def _first_key(output, seconds=1.0):
    """The admin key a first start prints, last, before its worker serves
    (so it is in the pipe once the service answers); None on a later start."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        keys = [line.strip() for line in list(output) if line.startswith("apk_")]
        if keys:
            return keys[0]
        time.sleep(0.02)
    return None
