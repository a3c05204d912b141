"""How long a task woken from another CPU waits for its own CPU while a
process of the lowest priority keeps that CPU busy: the machine's side of
the wait that bench/widget.py --probe finds between an API request's
arrival and the worker's main thread.

A reader on CPU 0 blocks on a pipe; every 2 ms a writer on CPU 1 sends it
the time, and the reader notes how late it woke. Beside the reader, on CPU
0, at niceness 19 (or SCHED_IDLE with --idle), runs one competitor:
  none     nothing (the CPU idles between wake-ups: the bare baseline)
  loop     a Python loop with no system call
  threads  --threads Python threads in a loop, handing the interpreter lock
           to one another every --switch-ms (Python's default is 5 ms)
--slice-ms gives the competitor's threads that CPU slice (sched_setattr,
Linux 6.12 on) instead of the kernel's default (about 1.5 ms): a task woken
beside a task whose slice is longer than its own may take the CPU at once.
Prints the wake-up delay's p50, p90, p99 and max for each. Needs 2 CPUs.

    .venv/bin/python bench/wakeup.py [--wakeups 2000] [--threads 5] [--switch-ms 0.5]
        [--idle | --slice-ms 10]
"""

import argparse
import ctypes
import os
import struct
import sys
import threading
import time

READER_CPU, WRITER_CPU = 0, 1
STAMP = 8  # bytes of a perf_counter_ns stamp
SCHED_SETATTR_X86_64 = 314
# struct sched_attr: size, policy, flags, nice, priority, runtime (the
# slice, for an ordinary task), deadline, period, util_min, util_max.
SCHED_ATTR = struct.Struct("IIQiIQQQII")


def compete(kind, options):
    """Fork the competitor onto the reader's CPU; its pid, or None."""
    if kind == "none":
        return None
    pid = os.fork()
    if pid:
        return pid
    os.sched_setaffinity(0, {READER_CPU})
    if options.idle:
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    else:
        os.nice(19)
    if options.slice_ms:
        set_slice(int(options.slice_ms * 1e6))
    if kind == "threads":
        sys.setswitchinterval(options.switch_ms / 1000)
        for _ in range(options.threads - 1):
            threading.Thread(target=spin, daemon=True).start()
    spin()


def set_slice(slice_ns):
    """The calling thread's slice, which threads it starts inherit."""
    niceness = os.getpriority(os.PRIO_PROCESS, 0)
    attr = SCHED_ATTR.pack(SCHED_ATTR.size, 0, 0, niceness, 0, slice_ns, 0, 0, 0, 0)
    libc = ctypes.CDLL(None, use_errno=True)
    buffer = ctypes.create_string_buffer(attr, SCHED_ATTR.size)
    if libc.syscall(SCHED_SETATTR_X86_64, 0, buffer, 0) != 0:
        raise OSError(ctypes.get_errno(), "sched_setattr")


def spin():
    count = 0
    while True:
        count += 1


def read(pipe, wakeups):
    """The reader's delays in ms, sorted."""
    os.sched_setaffinity(0, {READER_CPU})
    delays = []
    for _ in range(wakeups):
        sent = int.from_bytes(os.read(pipe, STAMP), "little")
        delays.append((time.perf_counter_ns() - sent) / 1e6)
    return sorted(delays)


def measure(kind, options):
    competitor = compete(kind, options)
    readable, writable = os.pipe()
    results, reported = os.pipe()
    reader = os.fork()
    if not reader:
        delays = read(readable, options.wakeups)
        os.write(reported, " ".join(map(str, delays)).encode())
        os._exit(0)
    os.sched_setaffinity(0, {WRITER_CPU})
    for _ in range(options.wakeups):
        time.sleep(0.002)
        os.write(writable, time.perf_counter_ns().to_bytes(STAMP, "little"))
    os.waitpid(reader, 0)
    os.close(reported)
    delays = [float(value) for value in drain(results).split()]
    if competitor:
        os.kill(competitor, 9)
        os.waitpid(competitor, 0)
    return delays


def drain(fd):
    chunks = []
    while chunk := os.read(fd, 65536):
        chunks.append(chunk)
    return b"".join(chunks).decode()


def at(delays, fraction):
    return delays[min(len(delays) - 1, int(len(delays) * fraction))]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wakeups", type=int, default=2000)
    parser.add_argument("--threads", type=int, default=5)
    parser.add_argument("--switch-ms", type=float, default=0.5)
    # A slice is set with sched_setattr, which would put the competitor back
    # from SCHED_IDLE to the ordinary policy.
    policies = parser.add_mutually_exclusive_group()
    policies.add_argument("--idle", action="store_true", help="the competitor at SCHED_IDLE")
    policies.add_argument("--slice-ms", type=float, help="the competitor's CPU slice (x86-64)")
    options = parser.parse_args()
    policy = "SCHED_IDLE" if options.idle else "niceness 19"
    if options.slice_ms:
        policy += f", slice {options.slice_ms:g} ms"
    print(f"a reader woken from CPU {WRITER_CPU}, beside a competitor at {policy} on its CPU")
    for kind in ("none", "loop", "threads"):
        delays = measure(kind, options)
        label = kind
        if kind == "threads":
            label = f"{options.threads} threads, switch {options.switch_ms:g} ms"
        print(
            f"  {label:30} wake-up delay p50 {at(delays, 0.5):.3f}  p90 {at(delays, 0.9):.3f}  "
            f"p99 {at(delays, 0.99):.3f}  max {delays[-1]:.3f} ms"
        )


if __name__ == "__main__":
    main()
