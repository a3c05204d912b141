"""Credits: the usage ledger, per-agent reports, and the workspace balance.

The plan's allowance (`PLAN_CREDITS`, None = unlimited) is per calendar
month, UTC. `record_usage` raises `credit.low` when the month's balance goes
from above 10% of the allowance to 10% or less, and `credit.depleted` when
it reaches 0, each in the transaction of the ledger entry that crossed the
line - so each is raised once per month, and never for a rolled-back entry.
"""

import calendar
from datetime import date, datetime, time, timedelta

from flask import current_app

from .. import events
from ..db import transaction
from ..errors import ValidationError
from ..models import Conversation, CreditUsage
from ..models.base import utcnow
from . import agents

LOW_FRACTION = 0.10
MAX_REPORT_DAYS = 366


def month_bounds(moment):
    """[start, end) of the calendar month of `moment` (naive UTC datetimes)."""
    start = datetime(moment.year, moment.month, 1)
    days = calendar.monthrange(moment.year, moment.month)[1]
    return start, start + timedelta(days=days)


def plan_credits():
    return current_app.config.get("PLAN_CREDITS")


def balance(workspace_id, now=None):
    """The workspace's allowance, use and balance this month; None when unlimited."""
    allowance = plan_credits()
    if allowance is None:
        return None
    start, end = month_bounds(now or utcnow())
    used = CreditUsage.used_by_workspace(workspace_id, start, end)
    return {
        "plan_credits": allowance,
        "used_credits": round(used, 6),
        "remaining_credits": round(allowance - used, 6),
        "period_start": start,
        "period_end": end,
    }


def record_usage(workspace_id, agent_id, credits, conversation_id=None, now=None):
    """Write one ledger entry; raise credit.low / credit.depleted on crossing."""
    if not credits > 0:
        raise ValidationError("credits", "must be a positive number")
    now = now or utcnow()
    with transaction():
        agent = agents.get_agent(workspace_id, agent_id)
        if conversation_id is not None:
            conversation_id = Conversation.get_in_workspace(
                workspace_id, conversation_id, agents.conversation_not_found(conversation_id)
            ).id
        before = balance(workspace_id, now)
        entry = CreditUsage.create(
            workspace=workspace_id,
            agent=agent.id,
            conversation=conversation_id,
            credits=credits,
            created_at=now,
        )
        if before is not None:
            _emit_crossings(workspace_id, agent.id, before, credits, now)
        return entry


def _emit_crossings(workspace_id, agent_id, before, credits, now):
    allowance = before["plan_credits"]
    remaining_before = before["remaining_credits"]
    remaining_after = round(remaining_before - credits, 6)
    data = {
        "agent_id": agent_id,
        "plan_credits": allowance,
        "used_credits": round(before["used_credits"] + credits, 6),
        "remaining_credits": remaining_after,
        "period_start": _iso(before["period_start"]),
        "period_end": _iso(before["period_end"]),
    }
    low_line = allowance * LOW_FRACTION
    if remaining_before > low_line >= remaining_after:
        events.emit(workspace_id, "credit.low", {**data, "threshold": "10%"}, now=now)
    if remaining_before > 0 >= remaining_after:
        events.emit(workspace_id, "credit.depleted", data, now=now)


def _iso(moment):
    return moment.isoformat() + "Z"


def usage_report(workspace_id, agent_id, date_from=None, date_to=None, now=None):
    """An agent's credits per day over [date_from, date_to] (whole UTC days).

    Missing bounds come from the month of the other bound, or of today.
    """
    agent_id = agents.live_agent_id(workspace_id, agent_id)
    date_from, date_to = _period(date_from, date_to, (now or utcnow()).date())
    start = datetime.combine(date_from, time())
    end = datetime.combine(date_to + timedelta(days=1), time())
    rows = list(CreditUsage.daily_for_agent(agent_id, start, end))
    return {
        "total_credits": round(sum(credits for _, credits, _ in rows), 6),
        "period_start": start,
        "period_end": end - timedelta(microseconds=1),
        "breakdown": [
            {"date": day, "credits": round(credits, 6), "conversations": conversations}
            for day, credits, conversations in rows
        ],
    }


def _period(date_from, date_to, today):
    anchor = date_from or date_to or today
    if date_from is None:
        date_from = date(anchor.year, anchor.month, 1)
    if date_to is None:
        month_end = date(
            anchor.year, anchor.month, calendar.monthrange(anchor.year, anchor.month)[1]
        )
        # Never date.max: the period's exclusive end is the day after its last.
        date_to = min(month_end, date.max - timedelta(days=1))
    if date_from > date_to:
        raise ValidationError("from", "must not be after to")
    if (date_to - date_from).days + 1 > MAX_REPORT_DAYS:
        raise ValidationError("to", f"the period may span at most {MAX_REPORT_DAYS} days")
    return date_from, date_to
