"""`python -m agent_platform ...` is `agent-platform ...`."""

from .cli import main

main()
