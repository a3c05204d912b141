"""Every event the service can raise, by category (both variants of the spec).

Category names are what a webhook may subscribe to instead of single events.
"""

CATEGORIES = {
    "conversations": (
        "conversation.created",
        "conversation.assigned",
        "conversation.closed",
        "conversation.reopened",
        "conversation.transferred",
    ),
    "messages": (
        "message.received",
        "message.sent",
        "message.failed",
        "message.delivered",
        "message.read",
    ),
    "contacts": ("contact.created", "contact.updated", "contact.deleted"),
    "agent": ("agent.handoff_started", "agent.handoff_completed", "agent.transferred"),
    "appointments": (
        "appointment.created",
        "appointment.scheduled",
        "appointment.rescheduled",
        "appointment.canceled",
        "appointment.cancelled",
        "appointment.completed",
        "appointment.reminder_sent",
    ),
    "leads": (
        "lead.created",
        "lead.updated",
        "lead.qualified",
        "lead.converted",
        "lead.deleted",
        "lead.settings_updated",
        "scoring_rule.created",
        "scoring_rule.updated",
        "scoring_rule.deleted",
    ),
    "pipeline": (
        "opportunity.created",
        "opportunity.updated",
        "opportunity.moved",
        "opportunity.won",
        "opportunity.lost",
        "opportunity.deleted",
        "pipeline_column.created",
        "pipeline_column.updated",
        "pipeline_column.deleted",
        "pipeline.reordered",
    ),
    "channels": ("channel.connected", "channel.disconnected", "channel.error"),
    "billing": (
        "credit.low",
        "credit.depleted",
        "plan.changed",
        "trial.expiring",
        "trial.expired",
    ),
}

EVENTS = {name: category for category, names in CATEGORIES.items() for name in names}


def category_of(name):
    return EVENTS[name]
