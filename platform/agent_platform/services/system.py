"""Health of the service: maintenance mode and a database that reads and writes."""

import logging

from .. import storage
from ..models import RuntimeFlag
from ..models.base import utcnow

log = logging.getLogger("agent_platform.health")
MAINTENANCE_FLAG = "maintenance"
CANNOT_WRITE = "the database cannot take writes: "


def set_maintenance(enabled):
    RuntimeFlag.set(MAINTENANCE_FLAG, enabled)


def health(maintenance_configured, now=None):
    """(status, timestamp, reason): ok or maintenance, or degraded and why."""
    timestamp = (now or utcnow()).isoformat(timespec="seconds") + "Z"
    try:
        in_maintenance = maintenance_configured or RuntimeFlag.is_on(MAINTENANCE_FLAG)
        cause = storage.writes_problem()
    except Exception as error:
        return "degraded", timestamp, _failure(error)
    if cause:
        return "degraded", timestamp, CANNOT_WRITE + cause
    return ("maintenance" if in_maintenance else "ok"), timestamp, None


def _failure(error):
    """Why the health check failed: a file that cannot be opened, say (logged
    once, in storage.py), or something else, logged each time."""
    cause = storage.failed(error)
    if cause is not None:
        return CANNOT_WRITE + storage.CAUSES[cause]
    log.exception("health check: the database does not answer")
    return "the database does not answer"
