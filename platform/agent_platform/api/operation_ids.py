"""Each operation's operationId: the function name a generated client gives it.

Named from the view class and the HTTP method (`Agents` GET is `listAgents`,
POST `createAgent`; `AgentById` PATCH is `updateAgent`; an action such as
`ActivateAgent` is `activateAgent`), with the names that rule gets wrong
written out in OVERRIDES. tests/data/operation_ids.txt holds every id: a
client's function names change only when that file does.
"""

import re

# By "blueprint.ViewClass.method": where the rule's name is wrong or taken.
OVERRIDES = {
    "agents.AgentContext.post": "addAgentContext",
    "agents.AgentCredits.get": "getAgentCredits",
    "agents.AgentSettings.get": "getAgentSettings",
    "agents.AgentSettings.put": "updateAgentSettings",
    "appointments.Appointments.post": "bookAppointment",
    "appointments.Cancel.post": "cancelAppointment",
    "appointments.Complete.post": "completeAppointment",
    "appointments.Reminders.get": "listAppointmentReminders",
    "appointments.Reschedule.post": "rescheduleAppointment",
    "appointments.Settings.get": "getAppointmentSettings",
    "appointments.Settings.put": "setAppointmentSettings",
    "channels.ChannelSettings.get": "getChannelSettings",
    "channels.ChannelSettings.put": "replaceChannelSettings",
    "chats.ChatMessage.put": "editChatMessage",
    "chats.Handoff.post": "startHandoff",
    "custom-fields.ArchiveCustomField.put": "archiveCustomField",
    "custom-fields.UnarchiveCustomField.put": "unarchiveCustomField",
    "inbound.ChannelCallback.post": "receiveChannelCallback",
    "inbound.WhatsAppCallback.get": "verifyWhatsAppCallback",
    "inbound.WhatsAppCallback.post": "receiveWhatsAppCallback",
    "interactions.CloseMany.post": "closeInteractions",
    "interactions.CloseOne.post": "closeInteraction",
    "interactions.Interactions.get": "queryInteractions",
    "leads.Adjustments.get": "listLeadAdjustments",
    "leads.Adjustments.post": "adjustLeadScore",
    "leads.Settings.get": "getLeadSettings",
    "leads.Settings.patch": "updateLeadSettings",
    "learning.LearnGroup.post": "learnUnansweredGroup",
    "learning.Unanswered.get": "listUnansweredQuestions",
    "mcp-servers.McpServers.post": "registerMcpServer",
    "metrics.Metrics.get": "getMetrics",
    "messages.ConversationMessages.post": "sendMessage",
    "messages.MessageById.patch": "editMessage",
    "opportunities.OpportunityHistory.get": "listOpportunityHistory",
    "pipeline.ColumnById.delete": "deletePipelineColumn",
    "pipeline.ColumnById.get": "getPipelineColumn",
    "pipeline.ColumnById.patch": "updatePipelineColumn",
    "pipeline.ColumnOrder.put": "reorderPipelineColumns",
    "pipeline.Columns.get": "listPipelineColumns",
    "pipeline.Columns.post": "createPipelineColumn",
    "pipeline.Summary.get": "getPipelineSummary",
    "reply-preview.ReplyPreview.get": "previewReply",
    "trainings.AgentTrainings.get": "listTrainings",
    "trainings.AgentTrainings.post": "createTraining",
    "trainings.SearchTrainings.get": "searchTrainings",
    "users.UserSignInLink.post": "createUserSignInLink",
    "variant.VariantAgents.post": "variantCreateAgent",
    "variant.VariantPermissionById.delete": "variantRevokePermission",
    "variant.VariantPermissions.get": "variantListPermissions",
    "variant.VariantPermissions.post": "variantCreatePermission",
    "variant.VariantQa.post": "variantCreateQa",
    "variant.VariantSettings.get": "variantGetAgentSettings",
    "webhooks.Deliveries.get": "listWebhookDeliveries",
    "webhooks.DeliveryById.get": "getWebhookDelivery",
    "webhooks.Recover.post": "recoverWebhookDeliveries",
    "webhooks.Redeliver.post": "redeliverWebhookDelivery",
    "webhooks.RotateSecret.post": "rotateWebhookSecret",
    "webhooks.Webhooks.post": "registerWebhook",
}

# The verb of an operation on one object (`...ById`) and on anything else.
_ONE = {"get": "get", "patch": "update", "put": "replace", "delete": "delete"}
_OTHER = {"patch": "update", "put": "set", "delete": "delete"}


def operation_id(blueprint, view, method):
    """The operationId of `method` (lower case) on `view` of `blueprint`."""
    written = OVERRIDES.get(f"{blueprint}.{view}.{method}")
    if written:
        return written
    if view.endswith("ById"):
        return _ONE[method] + view.removesuffix("ById")
    if method == "get":
        return ("list" if view.endswith("s") else "get") + view
    if method == "post":
        return "create" + _singular(view) if view.endswith("s") else _lower_first(view)
    return _OTHER[method] + view


def _singular(plural):
    return re.sub("ies$", "y", plural) if plural.endswith("ies") else plural[:-1]


def _lower_first(name):
    return name[0].lower() + name[1:]
