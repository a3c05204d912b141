"""WSGI entry point (`gunicorn app:app`); `python app.py` serves like `agent-platform serve`.

gunicorn started here reads gunicorn.conf.py, which checks the configuration
in its master first."""

import sys
from pathlib import Path

# The source root, so this file works without installing the package.
sys.path.insert(0, str(Path(__file__).resolve().parent / "platform"))

if __name__ == "__main__":
    from agent_platform.cli import main

    main(["serve", *sys.argv[1:]])
else:
    from agent_platform.server import worker_app

    app = worker_app()
