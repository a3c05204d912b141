"""The kernel's scheduling group of the calling process's session, where
Linux has autogroups (for processes outside a CPU cgroup): its processes
share one claim on the CPU, whose niceness any of them may raise."""

import os
import time

AUTOGROUP = "/proc/self/autogroup"
# Without CAP_SYS_ADMIN, the kernel takes one change of any group's
# niceness per tenth of a second, machine-wide, and refuses others (EAGAIN).
CHANGE_SECONDS = 0.1
CHANGE_ATTEMPTS = 5


def has_autogroups():
    return os.path.exists(AUTOGROUP)


def lower_group(niceness, attempts=CHANGE_ATTEMPTS):
    """Set the niceness of the calling process's scheduling group, waiting
    out the kernel's limit on changes; OSError if it still refuses."""
    for _ in range(attempts - 1):
        try:
            return _write_niceness(niceness)
        except BlockingIOError:  # another process's change came first
            time.sleep(CHANGE_SECONDS)
    _write_niceness(niceness)


def _write_niceness(niceness):
    group = os.open(AUTOGROUP, os.O_WRONLY)
    try:
        os.write(group, str(niceness).encode())
    finally:
        os.close(group)
