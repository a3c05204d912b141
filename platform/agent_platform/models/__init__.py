"""Every model, in dependency order (tables are created in this order)."""

from .agents import Agent
from .channels import Channel
from .contacts import Contact
from .conversations import Conversation
from .custom_fields import CustomField
from .events import Event
from .tenancy import ApiKey, Company, RuntimeFlag, Workspace

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
]

__all__ = [model.__name__ for model in ALL_MODELS] + ["ALL_MODELS"]
