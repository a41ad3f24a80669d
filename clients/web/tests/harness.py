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
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Optional

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parent.parent.parent
sys.path.insert(0, str(REPO_ROOT / "clients" / "python"))

from outatime import Client  # noqa: E402

SERVER_BIN = Path(os.environ.get("OUTATIME_SERVER", str(REPO_ROOT / ".build" / "debug" / "outatime-server")))
CHROMIUM = os.environ.get("OUTATIME_CHROMIUM", "/usr/bin/chromium")
ARTIFACTS = Path(os.environ.get("OUTATIME_WEB_ARTIFACTS", str(REPO_ROOT / ".build" / "web-artifacts")))

STARTUP_TIMEOUT = 20.0
STOP_TIMEOUT = 10.0
WAIT_MS = 10_000          # the longest any expected change on the page may take


class Server:
    """One ``outatime-server`` with its protocol port and its HTTP port."""

    def __init__(self, db: Path, log: Path, extra: Optional[list[str]] = None,
                 port: int = 0, http: int = 0) -> None:
        self.db, self.log, self.extra = db, log, extra or []
        self.port, self.http = port, http
        self.proc: Optional[subprocess.Popen[bytes]] = None
        self.pump: Optional[threading.Thread] = None

    def start(self) -> "Server":
        if not os.access(SERVER_BIN, os.X_OK):
            raise AssertionError(f"{SERVER_BIN} is missing; run `swift build` (or set OUTATIME_SERVER)")
        args = [str(SERVER_BIN), "--port", str(self.port), "--http", str(self.http), "--db", str(self.db), *self.extra]
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=log, stdin=subprocess.DEVNULL)
        lines: "queue.Queue[Optional[bytes]]" = queue.Queue()
        stdout = self.proc.stdout
        assert stdout is not None

        def pump() -> None:  # read stdout to its end so the pipe never fills
            for line in stdout:
                lines.put(line)
            lines.put(None)

        self.pump = threading.Thread(target=pump, daemon=True)
        self.pump.start()
        port = http = 0
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while not (port and http):
            try:
                line = lines.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                self.kill()
                raise AssertionError(f"server did not print its ports within {STARTUP_TIMEOUT} s; log:\n{self.log_text()}")
            if line is None:
                self.kill()
                raise AssertionError(f"server exited before listening; log:\n{self.log_text()}")
            m = re.fullmatch(r"(http |tls )?listening on (\S+):(\d+)", line.decode().strip())
            if m and m.group(1) == "http ":
                http = int(m.group(3))
            elif m and not m.group(1):
                port = int(m.group(3))
        self.port, self.http = port, http
        return self

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.http}/"

    def stop(self) -> int:
        """SIGTERM and wait (the server bounds its shutdown to 5 s); the exit code."""
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout=STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"server did not stop within {STOP_TIMEOUT} s of SIGTERM")
        self._close()
        return rc

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=STOP_TIMEOUT)
        self._close()

    def _close(self) -> None:
        if self.pump is not None:
            self.pump.join(timeout=STOP_TIMEOUT)
        if self.proc is not None and self.proc.stdout is not None and not self.proc.stdout.closed:
            self.proc.stdout.close()

    def log_text(self) -> str:
        try:
            return self.log.read_text(errors="replace")[-4000:]
        except OSError:
            return "(no log)"

    def client(self, name: str = "tcp", **kw: Any) -> Client:
        c = Client(port=self.port, name=name, timeout=10.0, **kw)
        c.connect()
        return c


def launch_browser(playwright: Any) -> Any:
    """Headless Debian Chromium (``--no-sandbox`` when root: its sandbox refuses to run as root)."""
    args = ["--no-sandbox"] if os.geteuid() == 0 else []
    return playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=args, timeout=30_000)
