"""A small client of the Model Context Protocol, streamable HTTP transport.

JSON-RPC 2.0 over HTTP POST: `initialize`, then `notifications/initialized`,
then requests such as `tools/list` (following `nextCursor`) and `tools/call`.
A server answers a request with `application/json` or with a
`text/event-stream` whose events carry JSON-RPC messages; the one with our
request id is the answer. A server that keeps sessions returns an
`Mcp-Session-Id` header on initialize, sent back on every later request
(and a DELETE ends the session).

Every request goes through netguard (no private addresses unless allowed, no
redirects, time and size bounded). Failures raise McpError with a message
fit for the user.
"""

import json
from importlib.metadata import version
from urllib.parse import urlsplit

import requests

from .. import jsonbody, netguard
from ..nul_text import nul_replaced

# What the client tells a server it is: the installed package's version
# (its metadata, not the package root, which only the top of the house imports).
CLIENT_INFO = {"name": "agent-platform", "version": version("agent-platform")}

# The setting that lets MCP servers be on private addresses and any port.
PRIVATE_URLS_SETTING = "mcp.allow_private_urls"
# The revision we offer, and those we accept from the server.
PROTOCOL_VERSION = "2025-06-18"
SUPPORTED_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
MAX_TOOL_PAGES = 100
# What a server's tools may hold: each is stored, listed and offered to the
# model at every answer, and one answer may be 5 MB (mcp.max_response_bytes).
MAX_TOOLS = 1000
MAX_SCHEMA_CHARS = 65_536  # a tool's input schema, as compact JSON
MAX_DESCRIPTION_CHARS = 10_000  # a longer description is cut there
_ERROR_BODY_CHARS = 200


class McpError(Exception):
    """The MCP server could not be used; the message says why."""


class McpSession:
    def __init__(self, url, headers=None, *, allow_private=False, timeout=15, max_bytes=None):
        self.url = url
        self.headers = dict(headers or {})
        self.allow_private = allow_private
        self.timeout = timeout
        self.max_bytes = max_bytes
        self.session_id = None
        self.protocol_version = None
        self.server_info = None
        self._last_id = 0

    def __enter__(self):
        self.initialize()
        return self

    def __exit__(self, *exc_info):
        self.close()

    def initialize(self):
        result = self.request(
            "initialize",
            {
                "protocolVersion": PROTOCOL_VERSION,
                "capabilities": {},
                "clientInfo": CLIENT_INFO,
            },
        )
        version = result.get("protocolVersion") if isinstance(result, dict) else None
        if version not in SUPPORTED_VERSIONS:
            raise McpError(f"the server speaks MCP protocol version {version!r}, not supported")
        self.protocol_version = version
        info = result.get("serverInfo") or {}
        self.server_info = {
            "name": str(info.get("name", "")),
            "version": str(info.get("version", "")),
            "protocol_version": version,
        }
        self.notify("notifications/initialized")
        return self.server_info

    def list_tools(self):
        """Every tool of the server, following pagination cursors."""
        tools, cursor, seen = [], None, set()
        for _ in range(MAX_TOOL_PAGES):
            result = self.request("tools/list", {"cursor": cursor} if cursor else {})
            page = result.get("tools") if isinstance(result, dict) else None
            if not isinstance(page, list):
                raise McpError("tools/list did not return a list of tools")
            tools.extend(_tool(item) for item in page)
            if len(tools) > MAX_TOOLS:
                raise McpError(f"tools/list offers more than {MAX_TOOLS:,} tools")
            cursor = result.get("nextCursor")
            if not cursor:
                return tools
            if cursor in seen:
                raise McpError("tools/list repeated a pagination cursor")
            seen.add(cursor)
        raise McpError(f"tools/list has more than {MAX_TOOL_PAGES} pages")

    def call_tool(self, name, arguments=None):
        """The CallToolResult: {"content": [...], "isError": bool, ...}."""
        result = self.request("tools/call", {"name": name, "arguments": arguments or {}})
        if not isinstance(result, dict) or not isinstance(result.get("content", []), list):
            raise McpError("tools/call did not return a tool result")
        return result

    def close(self):
        """End the server's session, if it keeps one (best effort)."""
        if self.session_id is None:
            return
        try:
            self._send("DELETE", None)
        except (McpError, requests.RequestException, netguard.UnsafeURL):
            pass
        self.session_id = None

    def request(self, method, params=None):
        """Send a JSON-RPC request and return its result (McpError on an error)."""
        self._last_id += 1
        message = {"jsonrpc": "2.0", "id": self._last_id, "method": method}
        if params is not None:
            message["params"] = params
        response = self._send("POST", message)
        if method == "initialize" and response.headers.get("Mcp-Session-Id"):
            self.session_id = response.headers["Mcp-Session-Id"]
        answer = _find_answer(_messages(response), self._last_id, method)
        if "error" in answer:
            error = answer["error"] if isinstance(answer["error"], dict) else {}
            raise McpError(
                f"{method} failed: {error.get('message', 'error')} (code {error.get('code')})"
            )
        return answer.get("result")

    def notify(self, method, params=None):
        message = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self._send("POST", message)

    def _send(self, http_method, message):
        headers = {
            **self.headers,
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json",
        }
        if self.session_id:
            headers["Mcp-Session-Id"] = self.session_id
        if self.protocol_version:
            headers["MCP-Protocol-Version"] = self.protocol_version
        try:
            response = netguard.safe_request(
                http_method,
                self.url,
                allow_private=self.allow_private,
                allowed_ports=() if self.allow_private else None,
                timeout=self.timeout,
                max_bytes=self.max_bytes,
                headers=headers,
                data=None if message is None else json.dumps(message),
            )
        except netguard.UnsafeURL as error:
            reason = netguard.refusal(error, PRIVATE_URLS_SETTING, PRIVATE_URLS_SETTING)
            raise McpError(f"the URL is refused: {reason}") from None
        except requests.Timeout:
            raise McpError(f"no answer within {self.timeout} seconds") from None
        except requests.ConnectionError:
            raise McpError(f"cannot connect to {urlsplit(self.url).netloc}") from None
        except requests.RequestException as error:
            raise McpError(f"the request failed ({type(error).__name__})") from None
        _check_status(response, self.max_bytes)
        return response


def _check_status(response, max_bytes):
    if 300 <= response.status_code < 400:
        location = response.headers.get("Location", "elsewhere")
        raise McpError(f"the server redirects (HTTP {response.status_code}) to {location}")
    if response.status_code >= 400:
        body = nul_replaced(response.content[:_ERROR_BODY_CHARS].decode("utf-8", "replace"))
        body = body.strip()
        detail = f": {body}" if body else ""
        raise McpError(f"the server answered HTTP {response.status_code}{detail}")
    if getattr(response, "truncated", False):
        raise McpError(f"the answer is larger than {max_bytes} bytes")


def _messages(response):
    """The JSON-RPC messages of an answer (a JSON body or an event stream)."""
    media_type = response.headers.get("Content-Type", "").split(";")[0].strip().lower()
    text = response.content.decode("utf-8", "replace")
    if media_type == "application/json":
        return [_json(text)]
    if media_type == "text/event-stream":
        return [_json(data) for data in _event_data(text)]
    raise McpError(f"not an MCP server (it answered {media_type or 'no content type'})")


def _event_data(text):
    """The data of each server-sent event (multi-line data joined by newlines)."""
    data = []
    for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        if not line:
            if data:
                yield "\n".join(data)
            data = []
        elif line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))
    if data:
        yield "\n".join(data)


def _json(text):
    # With jsonbody's limits: a peer's answer nested thousands deep would
    # raise RecursionError in json.loads, a 500 instead of the peer's fault.
    # Its tools and results are kept (tools, replies): a NUL as U+FFFD.
    try:
        return nul_replaced(jsonbody.loads(text.encode("utf-8")))
    except jsonbody.BodyError as error:
        raise McpError(error.told_of("the answer")) from None
    except ValueError:
        raise McpError("not an MCP server (the answer is not JSON)") from None


def _find_answer(messages, request_id, method):
    for message in messages:
        batch = message if isinstance(message, list) else [message]
        for item in batch:
            if (
                isinstance(item, dict)
                and item.get("id") == request_id
                and ("result" in item or "error" in item)
            ):
                return item
    raise McpError(f"not an MCP server (no JSON-RPC answer to {method})")


def _tool(item):
    if not isinstance(item, dict) or not isinstance(item.get("name"), str) or not item["name"]:
        raise McpError("tools/list returned a tool without a name")
    schema = item.get("inputSchema") or {"type": "object"}
    if not isinstance(schema, dict):
        raise McpError(f"tool {item['name']} has an input schema that is not an object")
    size = len(json.dumps(schema, ensure_ascii=False, separators=(",", ":")))
    if size > MAX_SCHEMA_CHARS:
        raise McpError(
            f"tool {item['name'][:200]} has an input schema of {size:,} characters; "
            f"at most {MAX_SCHEMA_CHARS:,}"
        )
    description = item.get("description")
    return {
        "name": item["name"][:200],
        "description": description[:MAX_DESCRIPTION_CHARS] if isinstance(description, str) else "",
        "input_schema": schema,
    }
