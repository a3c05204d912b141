"""Health of the service: maintenance mode and a database that reads and writes."""

import logging

from ..db import database
from ..models import RuntimeFlag
from ..models.base import utcnow

log = logging.getLogger("agent_platform.health")
MAINTENANCE_FLAG = "maintenance"


def set_maintenance(enabled):
    RuntimeFlag.set(MAINTENANCE_FLAG, enabled)


def health(maintenance_configured, now=None):
    """(status, timestamp): ok, maintenance or degraded."""
    timestamp = (now or utcnow()).isoformat(timespec="seconds") + "Z"
    try:
        in_maintenance = maintenance_configured or RuntimeFlag.is_on(MAINTENANCE_FLAG)
        _probe_write()
    except Exception:
        log.exception("health check: the database does not answer")
        return "degraded", timestamp
    return ("maintenance" if in_maintenance else "ok"), timestamp


def _probe_write():
    """Take the write lock and write, then roll back: proves writes work
    without changing anything."""
    with database.atomic() as txn:
        RuntimeFlag.update(is_enabled=RuntimeFlag.is_enabled).where(
            RuntimeFlag.id == MAINTENANCE_FLAG
        ).execute()
        txn.rollback()
