"""Webhooks: registration, secret rotation, test, the delivery log and redelivery."""

from flask import g
from flask.views import MethodView

from ..services import webhooks
from .blueprint import ApiBlueprint
from .pagination import paginated
from .schemas.webhooks import (
    DeliveryListQuery,
    DeliverySchema,
    RecoverQuery,
    RecoverResultSchema,
    TestResultSchema,
    WebhookCreateSchema,
    WebhookListQuery,
    WebhookSchema,
    WebhookUpdateSchema,
    WebhookWithSecretSchema,
)

blp = ApiBlueprint(
    "webhooks",
    __name__,
    url_prefix="/webhooks",
    description="Outbound webhooks: signed event deliveries to your systems.",
)


@blp.route("")
class Webhooks(MethodView):
    @blp.scope("webhooks:read")
    @blp.arguments(WebhookListQuery, location="query")
    @blp.response(200, paginated(WebhookSchema))
    @blp.errors(400, 404)
    def get(self, query):
        """List webhooks (agent_id: only that agent's)"""
        return webhooks.list_webhooks(g.workspace_id, **query)

    @blp.scope("webhooks:write")
    @blp.arguments(WebhookCreateSchema)
    @blp.response(201, WebhookWithSecretSchema)
    @blp.errors(400, 404, 409)
    def post(self, values):
        """Register a webhook (the secret is shown only in this response)"""
        return webhooks.create_webhook(g.workspace_id, values)


@blp.route("/<webhook_id>")
class WebhookById(MethodView):
    @blp.scope("webhooks:read")
    @blp.response(200, WebhookSchema)
    @blp.errors(404)
    def get(self, webhook_id):
        """Get a webhook"""
        return webhooks.get_webhook(g.workspace_id, webhook_id)

    @blp.scope("webhooks:write")
    @blp.arguments(WebhookUpdateSchema)
    @blp.response(200, WebhookSchema)
    @blp.errors(400, 404, 409)
    def patch(self, changes, webhook_id):
        """Update a webhook (is_active=true reactivates it)"""
        return webhooks.update_webhook(g.workspace_id, webhook_id, changes)

    @blp.scope("webhooks:delete")
    @blp.response(204)
    @blp.errors(404)
    def delete(self, webhook_id):
        """Delete a webhook and its delivery log"""
        webhooks.delete_webhook(g.workspace_id, webhook_id)


@blp.route("/<webhook_id>/rotate-secret")
class RotateSecret(MethodView):
    @blp.scope("webhooks:write")
    @blp.response(200, WebhookWithSecretSchema)
    @blp.errors(404)
    def post(self, webhook_id):
        """Rotate the secret (the old one keeps signing for 24 hours)"""
        return webhooks.rotate_secret(g.workspace_id, webhook_id)


@blp.route("/<webhook_id>/test")
class TestWebhook(MethodView):
    @blp.scope("webhooks:write")
    @blp.response(200, TestResultSchema)
    @blp.errors(404)
    def post(self, webhook_id):
        """Send a signed webhook.test event now and return the outcome"""
        return webhooks.test_webhook(g.workspace_id, webhook_id)


@blp.route("/<webhook_id>/deliveries")
class Deliveries(MethodView):
    @blp.scope("webhooks:read")
    @blp.arguments(DeliveryListQuery, location="query")
    @blp.response(200, paginated(DeliverySchema))
    @blp.errors(400, 404)
    def get(self, query, webhook_id):
        """List the deliveries of a webhook with their attempts"""
        return webhooks.list_deliveries(g.workspace_id, webhook_id, **query)


@blp.route("/<webhook_id>/deliveries/<delivery_id>")
class DeliveryById(MethodView):
    @blp.scope("webhooks:read")
    @blp.response(200, DeliverySchema)
    @blp.errors(404)
    def get(self, webhook_id, delivery_id):
        """Get one delivery with its attempts"""
        return webhooks.get_delivery(g.workspace_id, webhook_id, delivery_id)


@blp.route("/<webhook_id>/deliveries/<delivery_id>/redeliver")
class Redeliver(MethodView):
    @blp.scope("webhooks:write")
    @blp.response(202, DeliverySchema)
    @blp.errors(404)
    def post(self, webhook_id, delivery_id):
        """Schedule a delivery again, now"""
        return webhooks.redeliver(g.workspace_id, webhook_id, delivery_id)


@blp.route("/<webhook_id>/recover")
class Recover(MethodView):
    @blp.scope("webhooks:write")
    @blp.arguments(RecoverQuery, location="query")
    @blp.response(202, RecoverResultSchema)
    @blp.errors(400, 404)
    def post(self, query, webhook_id):
        """Schedule again every failed delivery since a time"""
        return webhooks.recover(g.workspace_id, webhook_id, query["since"])
