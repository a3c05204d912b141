"""A short CPU slice for the API process's threads, so that a request takes
the CPU from the widget process as soon as it arrives.

Linux's scheduler (EEVDF, 6.6 and later) lets the task on a CPU run out its
slice, 0.75 ms times 1 + log2(CPUs) by default, before a task that wakes
there may take the CPU, unless the waking task's own slice is shorter
(6.12 and later). A widget process busy with polls and replies thus held
back the gunicorn main thread woken by an API request: at 500 open widgets
on one CPU, from the request's arrival to the main thread's taking it, p99
1.9 ms alone and 3.2 ms loaded (docs/benchmarks.md). With the API threads'
slice at the shortest the kernel takes, 0.1 ms, they take the CPU at once.

sched_setattr has no wrapper in Python's os module, hence ctypes. A kernel
without per-task slices keeps none, and where the call is refused (another
system, a seccomp filter) the service runs as it would without it.
"""

import ctypes
import functools
import os
import struct

SLICE_NS = 100_000  # the kernel's shortest
# struct sched_attr as of Linux 4.13 (SCHED_ATTR_SIZE_VER1, 56 bytes): size,
# policy, flags, nice, priority, runtime (a fair task's slice), deadline,
# period, util_min, util_max.
_ATTR = struct.Struct("IIQiIQQQII")
_SYSCALLS = {"x86_64": (314, 315), "aarch64": (274, 275)}  # sched_setattr, sched_getattr


def shorten(slice_ns=SLICE_NS):
    """Give every ordinary thread of this process `slice_ns`, at its own
    niceness (threads started later inherit it; a policy the operator chose,
    such as SCHED_BATCH, is left alone); False where the system refuses."""
    try:
        for thread in os.listdir("/proc/self/task"):
            _shorten_thread(int(thread), slice_ns)
    except OSError:
        return False
    return True


def _shorten_thread(tid, slice_ns):
    try:
        if os.sched_getscheduler(tid) == os.SCHED_OTHER:
            _set(tid, os.getpriority(os.PRIO_PROCESS, tid), slice_ns)
    except ProcessLookupError:
        pass  # a thread that ended meanwhile


def slice_of(tid):
    """A thread's slice in nanoseconds: its own, or the kernel's default."""
    numbers = _SYSCALLS.get(os.uname().machine)
    if numbers is None:
        raise OSError("sched_getattr: unknown on this machine")
    attr = ctypes.create_string_buffer(_ATTR.size)
    _call(numbers[1], tid, attr, _ATTR.size, 0)
    return _ATTR.unpack(attr.raw)[5]


def _set(tid, nice, slice_ns):
    numbers = _SYSCALLS.get(os.uname().machine)
    if numbers is None:
        raise OSError("sched_setattr: unknown on this machine")
    attr = _ATTR.pack(_ATTR.size, os.SCHED_OTHER, 0, nice, 0, slice_ns, 0, 0, 0, 0)
    _call(numbers[0], tid, ctypes.create_string_buffer(attr, _ATTR.size), 0)


def _call(number, *arguments):
    if _libc().syscall(number, *arguments) != 0:
        error = ctypes.get_errno()
        raise OSError(error, os.strerror(error))


@functools.cache
def _libc():
    return ctypes.CDLL(None, use_errno=True)
