"""The agent's tools: what a model may call while it writes a reply.

They sit above the services they call (appointments, MCP servers) and
below nothing but the app: `toolset.Toolset` offers the agent's MCP tools
and the built-in booking tools (`booking`) to a model and runs its calls.
The reply engine (replies/) never imports them: `create_app` registers
`Toolset.of_agent` with it (`replies.engine.register_toolsets`).
"""
