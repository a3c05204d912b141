"""The admins' page of the team: list, invite, reset a password (a new
one-time link), change a role, deactivate and reactivate."""

from flask import redirect, render_template, request, url_for

from .. import formats
from ..errors import ApiError, ValidationError
from ..services import users
from . import session
from .blueprint import blp
from .forms import SEE_OTHER


@blp.route("/team")
@session.signed_in(role="admin")
def team():
    return _team_page()


@blp.route("/team/invite", methods=["POST"])
@session.signed_in(role="admin")
def invite():
    form = request.form
    values = {"email": form.get("email", ""), "name": form.get("name", "").strip(),
              "role": form.get("role", "agent")}  # fmt: skip
    try:
        _check_form(values)
        created = users.invite(session.current_user().workspace_id, values)
    except ApiError as error:
        return _team_page(error=error.message, status=error.status, entered=values)
    return _team_page(link={"name": created["name"], "url": created["invite_url"]})


@blp.route("/team/<user_id>/sign-in-link", methods=["POST"])
@session.signed_in(role="admin")
def new_link(user_id):
    made = users.link_for(session.current_user().workspace_id, user_id)
    person = users.get_user(session.current_user().workspace_id, user_id)
    return _team_page(link={"name": person.name, "url": made["url"]})


@blp.route("/team/<user_id>", methods=["POST"])
@session.signed_in(role="admin")
def change(user_id):
    """A role (`role`) or the active state (`active` = "true" / "false")."""
    form, changes = request.form, {}
    if "role" in form:
        changes["role"] = form["role"]
    if "active" in form:
        changes["active"] = form["active"] == "true"
    try:
        _check_form(changes)
        users.update_user(session.current_user().workspace_id, user_id, changes)
    except ApiError as error:
        return _team_page(error=error.message, status=error.status)
    return redirect(url_for("web.team"), SEE_OTHER)


def _check_form(values):
    """What the API's schemas check, for the same fields sent by a form."""
    if "role" in values and values["role"] not in users.ROLES:
        raise ValidationError("role", f"must be one of {', '.join(users.ROLES)}")
    if "name" in values:
        problem = formats.name_problem(values["name"])
        if problem is None and not 1 <= len(values["name"]) <= 200:
            problem = "Must be 1 to 200 characters."
        if problem:
            raise ValidationError("name", problem)


def _team_page(error=None, status=200, link=None, entered=None):
    user = session.current_user()
    page = render_template(
        "app/team.html",
        user=user,
        workspace=user.workspace,
        people=users.all_users(user.workspace_id),
        roles=users.ROLES,
        error=error,
        link=link,
        entered=entered or {},
    )
    return page, status
