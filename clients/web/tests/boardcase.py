"""The board tests' base class and helpers: the real server and a page in the run's one Chromium.

Each test module calls ``start_browser()`` in its ``setUpModule`` and ``stop_browser()`` in its
``tearDownModule``; a test gets its own server (fresh database), browser context and pages.
"""

from __future__ import annotations

import http.server
import json
import shutil
import socket
import tempfile
import threading
import time
import unittest
from pathlib import Path
from typing import Any, Optional

from harness import ARTIFACTS, WAIT_MS, Server, launch_browser

from playwright.sync_api import Page, sync_playwright

FAST = ["--delorean-tick-ms", "10", "--lap-tick-ms", "50"]


_BROWSER: dict[str, Any] = {}


def start_browser() -> None:
    """One Chromium for the whole run (a launch costs seconds); each test gets its own context."""
    playwright = sync_playwright().start()
    try:
        _BROWSER["browser"] = launch_browser(playwright)
    except Exception:
        playwright.stop()
        raise
    _BROWSER["playwright"] = playwright


def stop_browser() -> None:
    if "browser" in _BROWSER:
        _BROWSER.pop("browser").close()
    if "playwright" in _BROWSER:
        _BROWSER.pop("playwright").stop()


class BoardTestCase(unittest.TestCase):
    """A server, a browser context and a page per test, in the module's browser."""

    server_args: list[str] = FAST

    @property
    def browser(self) -> Any:
        return _BROWSER["browser"]

    def setUp(self) -> None:
        self.tmp = Path(tempfile.mkdtemp(prefix="outatime-web-"))
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)
        self.server = self.start_server()
        self.context = self.browser.new_context(viewport={"width": 1920, "height": 1080})
        self.addCleanup(self.context.close)
        self.context.set_default_timeout(WAIT_MS)
        self.clients: list[Any] = []
        self.addCleanup(self.close_clients)

    def start_server(self, port: int = 0, http: int = 0) -> Server:
        server = Server(self.tmp / "board.sqlite", self.tmp / "server.log", [*self.server_args, *self.extra_args()],
                        port=port, http=http).start()
        self.addCleanup(server.kill)
        return server

    def extra_args(self) -> list[str]:
        return []

    def close_clients(self) -> None:
        for c in self.clients:
            c.close()

    def tcp(self, name: str = "tcp", **kw: Any) -> Any:
        c = self.server.client(name, **kw)
        self.clients.append(c)
        return c

    def open_board(self, fragment: str) -> Page:
        page = self.context.new_page()
        self.watch_errors(page)
        page.goto(self.server.url + "#" + fragment)
        return page

    def watch_errors(self, page: Page) -> None:
        """Collects the page's uncaught exceptions and console errors (CSP violations among them)."""
        self.page_errors: list[str] = []
        page.on("pageerror", lambda e: self.page_errors.append(f"exception: {e}"))
        page.on("console", lambda m: self.page_errors.append(f"console: {m.text}") if m.type == "error" else None)

    def assert_no_page_errors(self) -> None:
        self.assertEqual(self.page_errors, [])

    def wait_live(self, page: Page, seq: Optional[int] = None, channel: Optional[str] = None) -> None:
        """The page is connected and shows a channel's state (`channel`'s, at `seq`, when given)."""
        page.wait_for_selector("#link[data-state=ready]")
        shown = f"[data-channel='{channel}']" if channel else ""
        if seq is None:
            page.wait_for_selector(f"#board{shown}[data-seq]:not([data-seq=''])", state="attached")
        else:
            page.wait_for_selector(f"#board{shown}[data-seq='{seq}']", state="attached")

    def shot(self, page: Page, name: str) -> Path:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        path = ARTIFACTS / f"{name}.png"
        page.screenshot(path=str(path))
        return path



# ---- helpers ---------------------------------------------------------------

def poll(page: Page, predicate: str, timeout: float = WAIT_MS / 1000) -> Any:
    """Evaluates `predicate` (a JS function) until it is truthy. Not `wait_for_function`: Playwright polls
    with `eval`, which the page's content security policy forbids (as it should)."""
    deadline = time.monotonic() + timeout
    while True:
        value = page.evaluate(predicate)
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"not true within {timeout} s: {predicate}")
        time.sleep(0.05)


def record_subscribe(frame: Any, into: list[dict[str, Any]]) -> None:
    payload = frame if isinstance(frame, str) else getattr(frame, "payload", frame)
    try:
        body = json.loads(payload)
    except (TypeError, ValueError):
        return
    if body.get("type") == "subscribe":
        into.append({k: body[k] for k in ("channel", "since") if k in body})


def websocket_upgrade(port: int, origin: str) -> str:
    return (f"GET /ws HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            f"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nOrigin: {origin}\r\n\r\n")


def raw_http(port: int, request: str, timeout: float = 5.0) -> dict[str, Any]:
    """Sends `request` as written and reads the answer's head (and body, by Content-Length)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(request.encode())
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        length = int(headers.get("content-length", "0"))
        is_head = request.startswith("HEAD ")
        while not is_head and status != 101 and len(body) < length:
            chunk = sock.recv(65536)
            if not chunk:
                break
            body += chunk
        return {"status": status, "headers": headers, "body": body if not is_head else body[:0]}


def start_static_server(folder: Path) -> http.server.ThreadingHTTPServer:
    """A page from another origin: Python's http.server on another port."""
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *a: Any, **kw: Any) -> None:
            super().__init__(*a, directory=str(folder), **kw)

        def log_message(self, *a: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


if __name__ == "__main__":
    unittest.main()

