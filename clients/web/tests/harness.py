"""What the board's browser tests share: the real server, a browser, a TCP client.

The server is ``$OUTATIME_SERVER`` or ``.build/debug/outatime-server``,
started with ``--port 0 --http 0`` (or given ports, to restart on the same
ones) on a database in a temporary folder; its ports come from the lines it
prints. The browser is Debian's Chromium (``/usr/bin/chromium``, or
``$OUTATIME_CHROMIUM``) driven by Playwright's sync API, headless; Playwright
downloads nothing. Every wait is bounded.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any, Optional

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parent.parent.parent
sys.path.insert(0, str(REPO_ROOT / "clients" / "python"))

from outatime import Client  # noqa: E402
from outatime_server import ServerProcess  # noqa: E402

SERVER_BIN = Path(os.environ.get("OUTATIME_SERVER", str(REPO_ROOT / ".build" / "debug" / "outatime-server")))
CHROMIUM = os.environ.get("OUTATIME_CHROMIUM", "/usr/bin/chromium")
ARTIFACTS = Path(os.environ.get("OUTATIME_WEB_ARTIFACTS", str(REPO_ROOT / ".build" / "web-artifacts")))

WAIT_MS = 10_000          # the longest any expected change on the page may take


class Server(ServerProcess):
    """One ``outatime-server`` with its protocol port and its HTTP port (the
    shared :class:`outatime_server.ServerProcess`); given ports restart it
    on the same ones."""

    def __init__(self, db: Path, log: Path, extra: Optional[list[str]] = None,
                 port: int = 0, http: int = 0) -> None:
        self.db, self.extra = db, extra or []
        super().__init__(SERVER_BIN, ["--port", str(port), "--http", str(http), "--db", str(db), *self.extra], log)

    @property
    def http(self) -> int:
        return self.http_port

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.http_port}/"

    def client(self, name: str = "tcp", **kw: Any) -> Client:
        c = Client(port=self.port, name=name, timeout=10.0, **kw)
        c.connect()
        return c


def launch_browser(playwright: Any) -> Any:
    """Headless Debian Chromium (``--no-sandbox`` when root: its sandbox refuses to run as root)."""
    args = ["--no-sandbox"] if os.geteuid() == 0 else []
    return playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=args, timeout=30_000)
