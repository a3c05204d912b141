"""Users: the people of a workspace who sign in to the inbox at /app."""

from flask import g
from flask.views import MethodView

from ..services import users
from .blueprint import ApiBlueprint
from .pagination import paginated
from .schemas.users import (
    SignInLinkSchema,
    UserCreatedSchema,
    UserCreateSchema,
    UserListQuery,
    UserSchema,
    UserUpdateSchema,
)

blp = ApiBlueprint(
    "users",
    __name__,
    url_prefix="/users",
    description="The people who sign in to the inbox (/app).",
)


@blp.route("")
class Users(MethodView):
    @blp.scope("users:read")
    @blp.arguments(UserListQuery, location="query")
    @blp.response(200, paginated(UserSchema))
    @blp.errors(400)
    def get(self, query):
        """List users"""
        return users.list_users(g.workspace_id, **query)

    @blp.scope("users:write")
    @blp.arguments(UserCreateSchema)
    @blp.response(201, UserCreatedSchema)
    @blp.errors(400, 409)
    def post(self, values):
        """Create a user (with a one-time sign-in link unless a password is given)"""
        return users.invite(g.workspace_id, values)


@blp.route("/<user_id>")
class UserById(MethodView):
    @blp.scope("users:read")
    @blp.response(200, UserSchema)
    @blp.errors(404)
    def get(self, user_id):
        """Get a user"""
        return users.get_user(g.workspace_id, user_id)

    @blp.scope("users:write")
    @blp.arguments(UserUpdateSchema)
    @blp.response(200, UserSchema)
    @blp.errors(400, 404, 409)
    def patch(self, changes, user_id):
        """Update a user's name, role or active state"""
        return users.update_user(g.workspace_id, user_id, changes)


@blp.route("/<user_id>/sign-in-link")
class UserSignInLink(MethodView):
    @blp.scope("users:write")
    @blp.response(201, SignInLinkSchema)
    @blp.errors(404)
    def post(self, user_id):
        """Make a one-time sign-in link (a password reset; ends the user's sessions)"""
        return users.link_for(g.workspace_id, user_id)
