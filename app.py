"""WSGI entry point (`gunicorn app:app`); `python app.py` serves like `agent-platform serve`."""

import sys
from pathlib import Path

# The source root, so this file works without installing the package.
sys.path.insert(0, str(Path(__file__).resolve().parent / "platform"))

if __name__ == "__main__":
    from agent_platform.cli import main

    main(["serve", *sys.argv[1:]])
else:
    from agent_platform import create_app
    from agent_platform.server import serving_app

    app = serving_app(create_app())
