"""The agent's MCP tools offered to a model as OpenAI-format functions, and
their execution over the Model Context Protocol (`tools/call`); with them,
the built-in appointment tools (tools/booking.py) when an
availability applies to the agent.

A tool's function name is its MCP name made safe for the OpenAI format
(letters, digits, `_` and `-`, at most 64); two tools of different servers
with the same name get a numbered suffix. A call's failure - arguments that
are not JSON, a tool unknown to the agent, an MCP error, a result marked
`isError` - goes back to the model as the tool's answer ("Error: ..."), it
never fails the reply. Every call is recorded: name, server, arguments,
duration, outcome.
"""

import json
import re
import time
from functools import partial

from .. import jsonbody
from ..models import AgentTool, fastsql
from ..services import mcp
from .booking import AppointmentTools, ToolRefused

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
RESULT_CHARS = 20_000  # of a tool result given to the model
RECORDED_CHARS = 1_000  # of a result kept on the reply's record


class Toolset:
    def __init__(self, tools, builtins=None):
        """`tools`: McpTool rows with their `server` (an McpServer);
        `builtins`: AppointmentTools, whose names MCP tools give way to."""
        self.tools, self.builtins = {}, builtins
        taken = set(builtins.names) if builtins else set()
        for tool in tools:
            name = base = (_UNSAFE.sub("_", tool.name) or "tool")[:64]
            number = 2
            while name in self.tools or name in taken:
                name = f"{base[:60]}_{number}"
                number += 1
            self.tools[name] = tool

    @classmethod
    def of_agent(cls, agent, settings, conversation_id=None):
        """The agent's enabled tools on active servers, and the appointment
        tools when an availability applies (none when tools are off)."""
        if not settings.get("tools_enabled", True):
            return cls([])
        builtins = AppointmentTools.for_agent(agent, conversation_id)
        sql = 'SELECT 1 FROM "agent_tool" WHERE "agent_id" = ? LIMIT 1'
        if fastsql.scalar(sql, agent.id) is None:  # most agents: no query building
            return cls([], builtins)
        tools = AgentTool.tools_of(agent.id)
        return cls((tool for tool in tools if tool.server.is_active), builtins)

    def __bool__(self):
        return bool(self.tools or self.builtins)

    def functions(self):
        """The tools in the OpenAI chat-completions `tools` format."""
        builtins = self.builtins.functions() if self.builtins else []
        return builtins + [
            {
                "type": "function",
                "function": {
                    "name": name,
                    "description": tool.description or tool.name,
                    "parameters": _parameters(tool.input_schema),
                },
            }
            for name, tool in self.tools.items()
        ]

    def call(self, function_name, arguments_text):
        """Run one call; returns (text for the model, record of the call)."""
        if self.builtins and function_name in self.builtins.names:
            record = {"name": function_name, "server_id": None, "server_name": "built-in"}
            return _recorded(record, arguments_text, partial(self.builtins.call, function_name))
        tool = self.tools.get(function_name)
        record = {
            "name": tool.name if tool else function_name,
            "server_id": tool.server.id if tool else None,
            "server_name": tool.server.name if tool else None,
        }
        return _recorded(record, arguments_text, partial(_call_mcp, tool, function_name))


def _call_mcp(tool, function_name, arguments):
    if tool is None:
        raise ToolFailure(f"no tool named {function_name} is available")
    result = mcp.call_tool(tool.server, tool.name, arguments)
    text = _result_text(result)
    if result.get("isError"):
        raise ToolFailure(text or "the tool reported an error")
    return text


def _recorded(record, arguments_text, run):
    """`run(arguments)`'s text for the model, and `record` completed: the
    arguments, the outcome, the (shortened) result or error, the duration."""
    started = time.monotonic()
    record["arguments"] = None
    try:
        arguments = _arguments(arguments_text)
        record["arguments"] = arguments
        text = run(arguments)
    except (ToolFailure, ToolRefused, mcp.McpError) as error:
        record.update(outcome="error", error=str(error), result=None)
        answer = f"Error: {error}"
    else:
        record.update(outcome="ok", error=None, result=text[:RECORDED_CHARS])
        answer = text[:RESULT_CHARS]
    record["duration_ms"] = round((time.monotonic() - started) * 1000, 1)
    return answer, record


class ToolFailure(Exception):
    pass


def _parameters(schema):
    schema = dict(schema or {})
    schema.setdefault("type", "object")
    if schema["type"] == "object":
        schema.setdefault("properties", {})
    return schema


def _arguments(text):
    if text in (None, ""):
        return {}
    if isinstance(text, dict):
        return text
    try:
        # A model's string: with jsonbody's limits, deep nesting is no RecursionError.
        value = jsonbody.loads(str(text).encode("utf-8", "surrogatepass"))
    except jsonbody.BodyError as error:
        raise ToolFailure(error.told_of("the arguments' JSON")) from None
    except ValueError:
        raise ToolFailure(f"the arguments are not JSON: {str(text)[:200]}") from None
    if not isinstance(value, dict):
        raise ToolFailure("the arguments must be a JSON object")
    return value


def _result_text(result):
    """The text of a CallToolResult: its text parts, else its structured content."""
    parts = []
    for item in result.get("content") or []:
        if isinstance(item, dict) and item.get("type") == "text":
            parts.append(str(item.get("text", "")))
        elif isinstance(item, dict):
            parts.append(f"[{item.get('type', 'content')}]")
    if not parts and result.get("structuredContent") is not None:
        parts.append(json.dumps(result["structuredContent"], ensure_ascii=False))
    return "\n".join(parts)
