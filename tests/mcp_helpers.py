"""A real MCP server (the `mcp` package's low-level Server over streamable
HTTP) on a loopback port, served by uvicorn in a thread.

It offers two tools, one per tools/list page (`per_page`), so a client
must follow the pagination cursor to see both. `json_response=True` answers with
application/json, False with text/event-stream.
"""

import socket
import threading
import time

import mcp_types as types
import uvicorn
from mcp.server.lowlevel.server import Server

TOOLS = [
    types.Tool(
        name="add",
        description="Add two numbers",
        input_schema={
            "type": "object",
            "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
            "required": ["a", "b"],
        },
    ),
    types.Tool(
        name="lookup_order",
        description="Find an order by its number",
        input_schema={
            "type": "object",
            "properties": {"number": {"type": "string"}},
            "required": ["number"],
        },
    ),
]


def build_server(tools, seen_headers, per_page=1):
    async def list_tools(ctx, params):
        request = getattr(ctx, "request", None)
        if request is not None:
            seen_headers.append(dict(request.headers))
        index = int(params.cursor) if params and params.cursor else 0
        following = str(index + per_page) if index + per_page < len(tools) else None
        return types.ListToolsResult(tools=tools[index : index + per_page], next_cursor=following)

    async def call_tool(ctx, params):
        arguments = params.arguments or {}
        if params.name == "add":
            text = str(arguments["a"] + arguments["b"])
        else:
            text = f"order {arguments.get('number')} ships tomorrow"
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)])

    return Server("test-tools", version="1.2.3", on_list_tools=list_tools, on_call_tool=call_tool)


class RunningMcpServer:
    def __init__(self, json_response=False, tools=None, per_page=1):
        self.tools = list(TOOLS if tools is None else tools)
        self.seen_headers = []
        server = build_server(self.tools, self.seen_headers, per_page)
        app = server.streamable_http_app(json_response=json_response)
        self.socket = socket.socket()
        self.socket.bind(("127.0.0.1", 0))
        self.port = self.socket.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.uvicorn = uvicorn.Server(uvicorn.Config(app, log_level="error", lifespan="on"))
        self.thread = threading.Thread(
            target=self.uvicorn.run, kwargs={"sockets": [self.socket]}, daemon=True
        )

    def __enter__(self):
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.uvicorn.started:
            if time.monotonic() > deadline:
                raise RuntimeError("the MCP server did not start")
            time.sleep(0.01)
        return self

    def __exit__(self, *exc_info):
        self.uvicorn.should_exit = True
        self.thread.join(10)
        self.socket.close()
