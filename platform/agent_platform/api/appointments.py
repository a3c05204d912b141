"""Appointments, the availability they are booked in, free slots, settings."""

from flask import Response, g
from flask.views import MethodView

from ..services import appointment_calendar as calendar
from ..services import (
    appointment_reminders,  # noqa: F401  (registers the reminder job)
    appointments,
)
from .blueprint import ApiBlueprint
from .pagination import paginated
from .schemas.appointments import (
    AppointmentCreateSchema,
    AppointmentListQuery,
    AppointmentSchema,
    AppointmentSettingsPutSchema,
    AppointmentSettingsSchema,
    AppointmentUpdateSchema,
    AvailabilityPutSchema,
    AvailabilitySchema,
    CancelSchema,
    FreeSlotsQuery,
    FreeSlotsSchema,
    ReminderSchema,
    RescheduleSchema,
)

blp = ApiBlueprint(
    "appointments",
    __name__,
    url_prefix="/appointments",
    description="Appointments: booked, rescheduled, completed or canceled; availability, "
    "free slots and reminders.",
)
agent_availability_blp = ApiBlueprint(
    "agent-availability",
    __name__,
    url_prefix="/agents",
    description="An agent's own availability, which replaces the workspace's for its calendar.",
)


@blp.route("")
class Appointments(MethodView):
    @blp.scope("appointments:read")
    @blp.arguments(AppointmentListQuery, location="query")
    @blp.response(200, paginated(AppointmentSchema))
    @blp.errors(400)
    def get(self, query):
        """List appointments"""
        return appointments.list_appointments(g.workspace_id, **query)

    @blp.scope("appointments:write")
    @blp.arguments(AppointmentCreateSchema)
    @blp.response(201, AppointmentSchema)
    @blp.errors(400, 404, 409)
    def post(self, values):
        """Book an appointment"""
        return appointments.create_appointment(g.workspace_id, values)


@blp.route("/free-slots")
class FreeSlots(MethodView):
    @blp.scope("appointments:read")
    @blp.arguments(FreeSlotsQuery, location="query")
    @blp.response(200, FreeSlotsSchema)
    @blp.errors(400, 404, 409)
    def get(self, query):
        """Free slots of a calendar"""
        return calendar.free_slots_view(g.workspace_id, **query)


@blp.route("/settings")
class Settings(MethodView):
    @blp.scope("appointments:read")
    @blp.response(200, AppointmentSettingsSchema)
    def get(self):
        """The workspace's appointment settings"""
        return calendar.settings_of(g.workspace_id).as_dict()

    @blp.scope("appointments:write")
    @blp.arguments(AppointmentSettingsPutSchema)
    @blp.response(200, AppointmentSettingsSchema)
    @blp.errors(400)
    def put(self, changes):
        """Set the time zone and reminder offsets"""
        return calendar.update_settings(g.workspace_id, changes).as_dict()


@blp.route("/availability")
class WorkspaceAvailability(MethodView):
    @blp.scope("appointments:read")
    @blp.response(200, AvailabilitySchema)
    @blp.errors(404)
    def get(self):
        """The workspace's availability"""
        return calendar.get_availability(g.workspace_id)

    @blp.scope("appointments:write")
    @blp.arguments(AvailabilityPutSchema)
    @blp.response(200, AvailabilitySchema)
    @blp.errors(400)
    def put(self, values):
        """Set the workspace's availability"""
        return calendar.set_availability(g.workspace_id, values)


@blp.route("/<appointment_id>")
class AppointmentById(MethodView):
    @blp.scope("appointments:read")
    @blp.response(200, AppointmentSchema)
    @blp.errors(404)
    def get(self, appointment_id):
        """Get an appointment"""
        return appointments.show(g.workspace_id, appointment_id)

    @blp.scope("appointments:write")
    @blp.arguments(AppointmentUpdateSchema)
    @blp.response(200, AppointmentSchema)
    @blp.errors(400, 404)
    def patch(self, changes, appointment_id):
        """Change an appointment's title, notes or location"""
        return appointments.update_appointment(g.workspace_id, appointment_id, changes)


@blp.route("/<appointment_id>/reschedule")
class Reschedule(MethodView):
    @blp.scope("appointments:write")
    @blp.arguments(RescheduleSchema)
    @blp.response(200, AppointmentSchema)
    @blp.errors(400, 404, 409)
    def post(self, values, appointment_id):
        """Reschedule an appointment"""
        return appointments.reschedule(g.workspace_id, appointment_id, values)


@blp.route("/<appointment_id>/cancel")
class Cancel(MethodView):
    @blp.scope("appointments:write")
    @blp.arguments(CancelSchema)
    @blp.response(200, AppointmentSchema)
    @blp.errors(400, 404, 409)
    def post(self, values, appointment_id):
        """Cancel an appointment"""
        return appointments.cancel(g.workspace_id, appointment_id, values.get("reason"))


@blp.route("/<appointment_id>/complete")
class Complete(MethodView):
    @blp.scope("appointments:write")
    @blp.response(200, AppointmentSchema)
    @blp.errors(404, 409)
    def post(self, appointment_id):
        """Mark an appointment completed"""
        return appointments.complete(g.workspace_id, appointment_id)


@blp.route("/<appointment_id>/reminders")
class Reminders(MethodView):
    @blp.scope("appointments:read")
    @blp.response(200, ReminderSchema(many=True))
    @blp.errors(404)
    def get(self, appointment_id):
        """The reminders done for an appointment, sent or skipped"""
        return appointments.reminders_of(g.workspace_id, appointment_id)


@agent_availability_blp.route("/<agent_id>/availability")
class AgentAvailability(MethodView):
    @agent_availability_blp.scope("appointments:read")
    @agent_availability_blp.response(200, AvailabilitySchema)
    @agent_availability_blp.errors(404)
    def get(self, agent_id):
        """An agent's own availability"""
        return calendar.get_availability(g.workspace_id, agent_id)

    @agent_availability_blp.scope("appointments:write")
    @agent_availability_blp.arguments(AvailabilityPutSchema)
    @agent_availability_blp.response(200, AvailabilitySchema)
    @agent_availability_blp.errors(400, 404)
    def put(self, values, agent_id):
        """Set an agent's own availability"""
        return calendar.set_availability(g.workspace_id, values, agent_id)

    @agent_availability_blp.scope("appointments:write")
    @agent_availability_blp.response(204)
    @agent_availability_blp.errors(404)
    def delete(self, agent_id):
        """Remove an agent's own availability (the workspace's applies again)"""
        calendar.delete_availability(g.workspace_id, agent_id)
        return Response(status=204)
