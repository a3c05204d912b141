"""Every model, in dependency order (tables are created in this order)."""

from .agents import Agent
from .appointments import Appointment, AppointmentReminder, AppointmentSettings, Availability
from .channel_events import ChannelEvent
from .channel_tasks import ChannelTask
from .channels import Channel
from .clarifications import Clarification
from .contacts import Contact, ContactIdentity
from .context import ContextEntry
from .conversations import Conversation
from .counts import RowCount
from .credits import CreditUsage
from .custom_fields import CustomField
from .email import EmailMailbox
from .events import Event
from .idempotency import IdempotencyKey
from .inbox import ConversationRead
from .jobs import JobTurn
from .leads import Lead, LeadAdjustment, SalesSettings, ScoringRule
from .mcp import AgentTool, McpServer, McpTool
from .messages import Message
from .metrics import DeliveryTally, MessageTally, ReplyLatencyTally, SendErrorTally
from .opportunities import Opportunity, OpportunityMove, PipelineColumn, PipelineTotal
from .rate_limits import RateLimitWindow
from .replies import ReplyJob, ReplyState
from .routing import IdleAction, IdleActionRun, Intention, TransferRule
from .telegram import TelegramUpdate
from .tenancy import ApiKey, Company, KeysVersion, RuntimeFlag, Workspace
from .trainings import Training
from .users import SignInFailure, SignInLink, User, UserSession
from .webhooks import Delivery, DeliveryAttempt, Webhook

ALL_MODELS = [
    Company,
    Workspace,
    ApiKey,
    KeysVersion,
    RuntimeFlag,
    RowCount,
    CustomField,
    Event,
    Agent,
    Channel,
    Contact,
    Conversation,
    ContactIdentity,
    Message,
    ConversationRead,
    IdempotencyKey,
    Training,
    McpServer,
    McpTool,
    AgentTool,
    CreditUsage,
    ContextEntry,
    ReplyJob,
    ReplyState,
    Clarification,
    Intention,
    TransferRule,
    IdleAction,
    IdleActionRun,
    Webhook,
    Delivery,
    DeliveryAttempt,
    ChannelEvent,
    ChannelTask,
    TelegramUpdate,
    EmailMailbox,
    Lead,
    LeadAdjustment,
    ScoringRule,
    SalesSettings,
    PipelineColumn,
    Opportunity,
    OpportunityMove,
    PipelineTotal,
    AppointmentSettings,
    Availability,
    Appointment,
    AppointmentReminder,
    User,
    UserSession,
    SignInLink,
    SignInFailure,
    MessageTally,
    SendErrorTally,
    DeliveryTally,
    ReplyLatencyTally,
    RateLimitWindow,
    JobTurn,
]

__all__ = [model.__name__ for model in ALL_MODELS] + ["ALL_MODELS"]
