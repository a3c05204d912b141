"""gunicorn reads this file from the directory it starts in (`gunicorn app:app`
here), in its master, before a worker imports app.py: a configuration the
service cannot use stops it with the key named and status 2, as every
`agent-platform` command does. Nothing here sets gunicorn's own options."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "platform"))

from agent_platform.server import check_gunicorn_master  # noqa: E402

check_gunicorn_master()
