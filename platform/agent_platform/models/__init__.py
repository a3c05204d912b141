"""Every model, in dependency order (tables are created in this order)."""

from .agents import Agent
from .channels import Channel
from .contacts import Contact
from .context import ContextEntry
from .conversations import Conversation
from .credits import CreditUsage
from .custom_fields import CustomField
from .events import Event
from .mcp import AgentTool, McpServer, McpTool
from .tenancy import ApiKey, Company, RuntimeFlag, Workspace
from .trainings import Training
from .webhooks import Delivery, DeliveryAttempt, Webhook

ALL_MODELS = [
    Company,
    Workspace,
    ApiKey,
    RuntimeFlag,
    CustomField,
    Event,
    Agent,
    Channel,
    Contact,
    Conversation,
    Training,
    McpServer,
    McpTool,
    AgentTool,
    CreditUsage,
    ContextEntry,
    Webhook,
    Delivery,
    DeliveryAttempt,
]

__all__ = [model.__name__ for model in ALL_MODELS] + ["ALL_MODELS"]
