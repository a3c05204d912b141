"""The API process's short CPU slice (agent_platform.cpu_slice), set on real
threads of a child interpreter, so this process keeps its own scheduling."""

import json
import os
import subprocess
import sys

from agent_platform import cpu_slice

SHORTEN_IN_A_CHILD = """
import json, os, sys, threading
from agent_platform import cpu_slice

os.nice(3)
before = cpu_slice.slice_of(0)
started, stop = threading.Event(), threading.Event()
def wait():
    os.sched_setscheduler(0, os.SCHED_BATCH, os.sched_param(0))  # the operator's choice
    started.set()
    stop.wait()
batch = threading.Thread(target=wait)
batch.start()
started.wait()
done = cpu_slice.shorten(int(sys.argv[1]))
later = {}
thread = threading.Thread(target=lambda: later.update(slice=cpu_slice.slice_of(0)))
thread.start()
thread.join()
print(json.dumps({
    "done": done,
    "before": before,
    "main": cpu_slice.slice_of(0),
    "nice": os.getpriority(os.PRIO_PROCESS, threading.get_native_id()),
    "batch_policy": os.sched_getscheduler(batch.native_id),
    "batch_slice": cpu_slice.slice_of(batch.native_id),
    "started_later": later["slice"],
}))
stop.set()
"""


def shortened(slice_ns):
    run = subprocess.run(
        [sys.executable, "-c", SHORTEN_IN_A_CHILD, str(slice_ns)],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    return json.loads(run.stdout)


def test_every_ordinary_thread_gets_the_slice_and_threads_started_later_inherit_it():
    seen = shortened(cpu_slice.SLICE_NS)
    assert seen["done"] is True
    assert seen["before"] != cpu_slice.SLICE_NS  # the kernel's default
    assert seen["main"] == seen["started_later"] == cpu_slice.SLICE_NS
    assert seen["nice"] == 3  # the niceness the thread had


def test_a_thread_under_another_policy_is_left_alone():
    seen = shortened(cpu_slice.SLICE_NS)
    assert seen["batch_policy"] == os.SCHED_BATCH
    assert seen["batch_slice"] == seen["before"]
