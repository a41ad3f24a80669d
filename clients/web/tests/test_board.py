"""The board in a real browser against the real server (``make test-web``).

Each test starts ``outatime-server --port 0 --http 0`` on a fresh database,
opens the page the server serves in headless Chromium (Playwright, sync API)
and drives or watches it beside the Python TCP client. Screenshots go to
``.build/web-artifacts/`` (``$OUTATIME_WEB_ARTIFACTS``). Run from the
repository root:

    python3 -m unittest discover -s clients/web/tests -v
"""

from __future__ import annotations

import http.server
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import unittest
from pathlib import Path
from typing import Any, Optional

from harness import ARTIFACTS, REPO_ROOT, WAIT_MS, Server, launch_browser

from playwright.sync_api import Page, sync_playwright

FAST = ["--delorean-tick-ms", "10", "--lap-tick-ms", "50"]


_BROWSER: dict[str, Any] = {}


def setUpModule() -> None:
    """One Chromium for the whole run (a launch costs seconds); each test gets its own context."""
    playwright = sync_playwright().start()
    try:
        _BROWSER["browser"] = launch_browser(playwright)
    except Exception:
        playwright.stop()
        raise
    _BROWSER["playwright"] = playwright


def tearDownModule() -> None:
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


class ServingTest(BoardTestCase):
    """The page and its files from the binary, as a browser and as HTTP."""

    def test_embedded_files_match_clients_web(self) -> None:
        check = subprocess.run([sys.executable, str(REPO_ROOT / "tools" / "embed_web.py"), "--check"],
                               capture_output=True, text=True, timeout=30)
        self.assertEqual(check.returncode, 0, check.stderr)

    def test_page_headers_head_and_unknown_files(self) -> None:
        page, js, missing = (self.http("GET", "/"), self.http("GET", "/web/outatime.js"),
                             self.http("GET", "/web/nope.js"))
        self.assertEqual(page["status"], 200)
        self.assertEqual(page["headers"]["content-type"], "text/html; charset=utf-8")
        self.assertEqual(page["headers"]["cache-control"], "no-cache")
        csp = page["headers"]["content-security-policy"]
        self.assertIn("default-src 'self'", csp)
        self.assertIn(f"connect-src 'self' ws://127.0.0.1:{self.server.http} wss://127.0.0.1:{self.server.http}", csp)
        self.assertEqual(page["body"], (REPO_ROOT / "clients" / "web" / "index.html").read_bytes())
        self.assertEqual(js["headers"]["content-type"], "text/javascript; charset=utf-8")
        self.assertEqual(js["body"], (REPO_ROOT / "clients" / "web" / "outatime.js").read_bytes())
        self.assertEqual(missing["status"], 404)
        self.assertIn(b"/web/nope.js", missing["body"])
        head = self.http("HEAD", "/web/style.css")
        self.assertEqual(head["status"], 200)
        self.assertEqual(head["headers"]["content-length"],
                         str(len((REPO_ROOT / "clients" / "web" / "style.css").read_bytes())))
        self.assertEqual(head["body"], b"")

    def http(self, method: str, path: str) -> dict[str, Any]:
        return raw_http(self.server.http, f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{self.server.http}\r\n"
                        "Connection: close\r\n\r\n")


class KindVectorsTest(BoardTestCase):
    """kinds.js, as the page loads it, against protocol/vectors/: the events of every successful case
    applied to its state_before give its state_after (PROTOCOL.md §14.5)."""

    def test_events_applied_in_the_browser_give_the_vectors_states(self) -> None:
        page = self.context.new_page()
        page.goto(self.server.url + "web/icon.svg")  # the server's origin, without starting the board
        checked = 0
        for kind in ("delorean", "starport", "timers", "laps"):
            cases = json.loads((REPO_ROOT / "protocol" / "vectors" / f"{kind}.json").read_text())
            runnable = [c for c in cases if c["expect"].get("ok") and "events" in c["expect"]
                        and "state_after" in c["expect"] and c["expect"]["events"]]
            outcome = page.evaluate("""async ([kind, cases, initial]) => {
                const { applyEvent } = await import('/web/kinds.js');
                return cases.map((c) => {
                  let state = c.state_before ?? (kind === 'delorean' ? { ...initial, present_time: c.now.slice(0, 19) + 'Z' } : initial);
                  for (const e of c.expect.events) state = applyEvent(kind, state, e.event, e.data, c.now);
                  return { name: c.name, state };
                });
            }""", [kind, runnable, INITIAL_STATES[kind]])
            for case, got in zip(runnable, outcome):
                want, have = comparable(kind, case["expect"]["state_after"]), comparable(kind, got["state"])
                self.assertEqual(have, want, f"{kind}: {case['name']}")
                checked += 1
        self.assertGreater(checked, 20)


INITIAL_STATES = {
    "delorean": {"present_time": None, "destination_time": None, "last_departed": None, "speed_mph": 0, "status": "parked"},
    "starport": {"dispatches": []},
    "timers": {"timers": []},
    "laps": {"status": "idle", "lap_number": 0, "lap_elapsed_ms": 0, "total_elapsed_ms": 0, "laps": [],
             "average_lap_ms": None, "best_lap_ms": None, "worst_lap_ms": None, "running_since": None},
}


def comparable(kind: str, state: dict[str, Any]) -> dict[str, Any]:
    """What a client can know from events: a timer's viewer count only as zero or not (§14.3), and
    `next_id` (which only the server needs) left out."""
    state = json.loads(json.dumps(state))
    if kind == "timers":
        state.pop("next_id", None)
        for t in state.get("timers", []):
            t["viewers"] = bool(t.get("viewers"))
    return state


class WebRootTest(BoardTestCase):
    """``--web-root DIR``: files from disk, and nothing outside DIR."""

    def extra_args(self) -> list[str]:
        root = self.tmp / "web"
        (root / "sub").mkdir(parents=True)
        (root / "index.html").write_text("<p>from disk</p>")
        (root / "sub" / "a.css").write_text("p{}")
        (self.tmp / "secret.txt").write_text("secret")
        (root / "link.txt").symlink_to(self.tmp / "secret.txt")
        return ["--web-root", str(root)]

    def test_serves_from_disk_and_refuses_traversal(self) -> None:
        get = lambda path: raw_http(self.server.http, f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        self.assertEqual(get("/")["body"], b"<p>from disk</p>")
        css = get("/web/sub/a.css")
        self.assertEqual((css["status"], css["headers"]["content-type"], css["body"]), (200, "text/css; charset=utf-8", b"p{}"))
        for path in ("/web/../secret.txt", "/web/sub/../../secret.txt", "/web/link.txt", "/web/.hidden", "/web/%2e%2e/secret.txt",
                     "/web//etc/passwd", "/web/sub"):
            answer = get(path)
            self.assertEqual(answer["status"], 404, path)
            self.assertNotIn(b"secret\n", answer["body"])


    def test_a_web_root_that_is_not_a_folder_is_refused_at_start(self) -> None:
        from harness import SERVER_BIN
        missing = self.tmp / "no-such-folder"
        run = subprocess.run([str(SERVER_BIN), "--port", "0", "--http", "0", "--db", str(self.tmp / "other.sqlite"),
                              "--web-root", str(missing)], capture_output=True, text=True, timeout=30)
        self.assertNotEqual(run.returncode, 0)
        self.assertIn(f"--web-root {missing} is not a folder", run.stderr)


class LiveBoardTest(BoardTestCase):
    def test_1_delorean_trip_made_over_tcp_shows_88_mph_and_the_new_present(self) -> None:
        page = self.open_board("channel=delorean/main")
        self.wait_live(page, 0)
        # Every speed the page draws, kept by an observer: 88 mph is shown for a tick only.
        page.evaluate("""() => { window.speeds = [];
            new MutationObserver(() => window.speeds.push(document.querySelector('#speed').textContent))
              .observe(document.querySelector('#speed'), {childList: true, characterData: true, subtree: true}); }""")
        tcp = self.tcp()
        tcp.command("delorean/main", "set_destination", time="1985-10-26T01:21:00Z")
        page.wait_for_selector("#circuit-destination[data-time='1985-10-26T01:21:00Z']")
        present_before = page.get_attribute("#circuit-present", "data-time")
        tcp.command("delorean/main", "travel")
        page.wait_for_selector("#circuit-present[data-time='1985-10-26T01:21:00Z']")
        page.wait_for_selector(f"#circuit-departed[data-time='{present_before}']")
        speeds = page.evaluate("window.speeds")
        self.assertIn("88 MPH", speeds)
        self.assertEqual(page.text_content("#speed"), "0 MPH")
        row = page.inner_text("#circuit-present")
        for part in ("OCT", "26", "1985", "AM", "01", "21", "PRESENT TIME"):
            self.assertIn(part, row)
        self.assertEqual(page.get_attribute("#board", "data-seq"), "3")
        self.assert_no_page_errors()

    def test_2_command_typed_in_the_page_reaches_a_tcp_subscriber(self) -> None:
        page = self.open_board("channel=delorean/main")
        self.wait_live(page, 0)
        tcp = self.tcp("Doc")
        tcp.subscribe("delorean/main")
        page.wait_for_selector("#watchers li:has-text('Doc')")  # presence
        page.fill(".controls input[name=time]", "1955-11-12T22:04")
        page.click("button:text-is('SET DESTINATION TIME')")
        deadline = time.monotonic() + WAIT_MS / 1000
        while True:
            push = tcp.next_push(timeout=max(0.1, deadline - time.monotonic()))
            if push.get("type") == "event":
                break
        self.assertEqual((push["channel"], push["event"], push["data"]),
                         ("delorean/main", "destination_set", {"destination_time": "1955-11-12T22:04:00Z"}))
        self.wait_live(page, push["seq"])


class MovingBoardsTest(BoardTestCase):
    """What moves between the server's ticks moves on the page's clock; the page's own buttons drive it."""

    server_args = ["--lap-tick-ms", "1000"]  # a tick a second: finer steps on the page are its own

    def test_lap_clock_runs_between_ticks_and_page_buttons_drive_the_stopwatch(self) -> None:
        page = self.open_board("channel=laps/track_1")
        self.wait_live(page, 0)
        tcp = self.tcp()
        tcp.subscribe("laps/track_1")
        page.click("button:text-is('START')")
        self.wait_live(page, 1)
        shown = set()
        for _ in range(8):  # 1.2 s: at most two ticks, yet the tenths move every 100 ms
            shown.add(page.text_content("#lap-time"))
            page.wait_for_timeout(150)
        self.assertGreaterEqual(len(shown), 5, shown)
        page.click("button:text-is('NEW LAP')")
        self.wait_live(page, 2)
        self.assertEqual(page.text_content("#lap-number"), "2")
        self.assertEqual(page.locator(".laps tbody tr").count(), 1)
        events = [p["event"] for p in tcp.pushes(timeout=0.5) if p.get("type") == "event"]
        self.assertEqual(events[:2], ["started", "lap_completed"])
        self.assert_no_page_errors()

    def test_timer_started_in_the_page_counts_down(self) -> None:
        tcp = self.tcp()
        tcp.subscribe("timers/hv")
        timer = tcp.command("timers/hv", "add", event="Clock tower", location="Hill Valley", remaining_s=600)
        page = self.open_board("channel=timers/hv")
        self.wait_live(page, 1)
        card = f".timer[data-id='{timer['id']}']"
        self.assertEqual(page.text_content(f"{card} .remaining"), "10:00")
        page.click(f"{card} button:text-is('START')")
        self.wait_live(page, 2)
        page.wait_for_selector(f"{card}.running")
        poll(page, f"() => document.querySelector(\"{card} .remaining\").textContent <= '09:58'", timeout=6.0)
        self.assertEqual(page.text_content(f"{card} button:first-child"), "STOP")
        page.click(f"{card} button:text-is('STOP')")
        self.wait_live(page, 3)
        page.wait_for_selector(f"{card}.stopped")
        self.assert_no_page_errors()


class LinkTest(BoardTestCase):
    """The client's side of the link: heartbeats keep a quiet page connected; a seq gap is recovered."""

    server_args = ["--heartbeat-ms", "1000"]  # a connection silent for 2 s is closed (idle_timeout)

    def test_a_quiet_page_keeps_its_connection_with_pings(self) -> None:
        page = self.context.new_page()
        self.watch_errors(page)
        sockets: list[Any] = []
        page.on("websocket", lambda ws: sockets.append(ws))
        page.goto(self.server.url + "#channel=delorean/main")
        self.wait_live(page, 0)
        page.wait_for_timeout(5_000)  # 2.5 idle timeouts with nothing happening on the channel
        self.assertEqual(page.get_attribute("#link", "data-state"), "ready")
        self.assertEqual(len(sockets), 1)
        self.assert_no_page_errors()

    def test_a_seq_gap_is_recovered_with_since(self) -> None:
        page = self.open_board("channel=delorean/main")
        self.wait_live(page, 0)
        tcp = self.tcp()
        tcp.command("delorean/main", "set_destination", time="1985-10-26T01:21:00Z")
        self.wait_live(page, 1)
        # Events 2 and 3 happen; the page is handed event 3 alone first, as if 2 had been lost on the way.
        tcp.command("delorean/main", "set_destination", time="1955-11-12T22:04:00Z")
        tcp.command("delorean/main", "set_destination", time="2015-10-21T16:29:00Z")
        self.wait_live(page, 3)
        page.evaluate("""() => { const m = window.outatime.channels.get('delorean/main');
            m.seq = 1; m.state = {...m.state, destination_time: '1985-10-26T01:21:00Z'};
            window.outatime.receive(JSON.stringify({type: 'event', channel: 'delorean/main', seq: 3,
              event: 'destination_set', data: {destination_time: '2015-10-21T16:29:00Z'}, at: '2026-01-01T00:00:00Z'})); }""")
        page.wait_for_selector("#problems li[data-code=gap]")
        self.wait_live(page, 3)
        self.assertEqual(page.get_attribute("#board", "data-recovered"), "events:2")
        self.assertEqual(page.get_attribute("#circuit-destination", "data-time"), "2015-10-21T16:29:00Z")


class TokensTest(BoardTestCase):
    WATCH = "board-watch-Qm7vX2kR9tL4wZ8pN3cF"
    OPERATE = "board-operate-Y0bVs3cr3tMarty77"

    def extra_args(self) -> list[str]:
        tokens = self.tmp / "tokens.json"
        tokens.write_text(json.dumps([
            {"token": self.OPERATE, "name": "Marty", "role": "operate"},
            {"token": self.WATCH, "name": "Lobby screen", "role": "watch"},
        ]))
        return ["--tokens", str(tokens)]

    def test_3a_watch_token_shows_the_board_with_commands_disabled(self) -> None:
        self.tcp(token=self.OPERATE).subscribe("delorean/main")  # a watch token creates no channel
        page = self.open_board(f"channel=delorean/main&token={self.WATCH}")
        self.wait_live(page, 0)
        self.assertNotIn("token", page.evaluate("location.href"))
        self.assertEqual(page.evaluate("sessionStorage.getItem('outatime.token')"), self.WATCH)
        self.assertIn("watch", page.text_content("#link"))
        for selector in ("button:text-is('SET DESTINATION TIME')", "button:text-is('TRAVEL')", ".controls input[name=time]",
                         "#say input", "#say button"):
            self.assertTrue(page.is_disabled(selector), selector)
        self.assertIn("Lobby screen", page.inner_text("#watchers"))

    def test_3b_bad_token_shows_unauthorized_and_stops_retrying(self) -> None:
        page = self.context.new_page()
        sockets: list[Any] = []
        page.on("websocket", lambda ws: sockets.append(ws))
        page.goto(self.server.url + "#channel=delorean/main&token=not-a-token")
        page.wait_for_selector("#link[data-state=unauthorized]")
        self.assertEqual(page.text_content("#link-text"), "unauthorized")
        self.assertTrue(page.is_visible("#login"))
        page.wait_for_timeout(3_000)  # several backoff periods: no new socket
        self.assertEqual(len(sockets), 1)
        self.assertEqual(page.get_attribute("#link", "data-state"), "unauthorized")


class RestartTest(BoardTestCase):
    server_args = ["--delorean-tick-ms", "200"]  # a trip of 17.6 s: the server stops in the middle of it

    def test_4_page_reconnects_after_a_restart_and_recovers_with_since(self) -> None:
        page = self.open_board("channel=delorean/main")
        self.wait_live(page, 0)
        subscribes: list[dict[str, Any]] = []
        page.on("websocket", lambda ws: ws.on("framesent", lambda f: record_subscribe(f, subscribes)))
        tcp = self.tcp()
        tcp.command("delorean/main", "set_destination", time="2015-10-21T16:29:00Z")
        tcp.command("delorean/main", "travel")
        poll(page, "() => Number(document.querySelector('#board').dataset.speed) >= 2")
        self.wait_live(page, 2)
        tcp.close()
        port, http_port = self.server.port, self.server.http
        self.assertEqual(self.server.stop(), 0)
        page.wait_for_selector("#link[data-state=reconnecting]")
        self.server = self.start_server(port=port, http=http_port)
        # At start the server parks the car: acceleration_aborted (seq 3), which the page must recover.
        # The page's backoff grew while the server was down: allow for its longest pause.
        page.wait_for_selector("#link[data-state=ready]", timeout=30_000)
        self.wait_live(page, 3)
        self.assertEqual(page.get_attribute("#board", "data-recovered"), "events:1")
        self.assertIn({"channel": "delorean/main", "since": 2}, subscribes)
        self.assertEqual(page.text_content("#speed"), "0 MPH")
        self.assertEqual(page.text_content("#car-status"), "PARKED")
        self.assertEqual(page.get_attribute("#circuit-destination", "data-time"), "2015-10-21T16:29:00Z")


class CrossOriginTest(BoardTestCase):
    def test_5_a_page_from_another_origin_cannot_open_ws(self) -> None:
        folder = self.tmp / "other"
        folder.mkdir()
        (folder / "index.html").write_text(f"""<!doctype html><script>
            window.outcome = "pending";
            const ws = new WebSocket("ws://127.0.0.1:{self.server.http}/ws");
            ws.onopen = () => {{ window.outcome = "open"; }};
            ws.onerror = () => {{ if (window.outcome === "pending") window.outcome = "error"; }};
            ws.onclose = (e) => {{ window.closeCode = e.code; }};
            </script>""")
        other = start_static_server(folder)
        self.addCleanup(other.server_close)
        self.addCleanup(other.shutdown)
        page = self.context.new_page()
        errors: list[str] = []
        page.on("websocket", lambda ws: ws.on("socketerror", lambda e: errors.append(str(e))))
        page.goto(f"http://127.0.0.1:{other.server_address[1]}/index.html")
        poll(page, "() => window.outcome !== 'pending' && window.closeCode !== undefined")
        self.assertEqual(page.evaluate("window.outcome"), "error")
        self.assertEqual(page.evaluate("window.closeCode"), 1006)
        # What the browser could not say: the server refused the handshake with 403.
        answer = raw_http(self.server.http, websocket_upgrade(self.server.http, f"http://127.0.0.1:{other.server_address[1]}"))
        self.assertEqual(answer["status"], 403)
        if errors:
            self.assertIn("403", " ".join(errors))
        # The board's own origin is accepted.
        self.assertEqual(raw_http(self.server.http, websocket_upgrade(self.server.http, f"http://127.0.0.1:{self.server.http}"))["status"], 101)


class ScreenshotsTest(BoardTestCase):
    server_args = ["--delorean-tick-ms", "10", "--lap-tick-ms", "100"]

    def test_6_a_screenshot_of_each_kind(self) -> None:
        tcp = self.tcp("Doc Brown")
        tcp.subscribe("delorean/main")
        tcp.command("delorean/main", "set_destination", time="1955-11-12T22:04:00Z")
        tcp.command("delorean/main", "travel")
        while tcp.next_push(timeout=10).get("event") != "time_travel":
            pass
        tcp.command("delorean/main", "set_destination", time="1985-10-26T01:21:00Z")

        now = time.time()
        iso = lambda t: time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))
        board = "starport/hill-valley"
        tcp.command(board, "dispatch", model="SWingV2", path="AC", note="food and supplies", departs_at=iso(now - 3600))
        tcp.command(board, "dispatch", model="TearDrop", path="B-D-E", departs_at=iso(now + 1800), note="medical")
        tcp.command(board, "dispatch", model="SWingV3", path="EDCBA", departs_at=iso(now + 7200))
        tcp.command(board, "dispatch", model="SWingV1", path="ABAB", departs_at=iso(now - 90000))
        d = tcp.command(board, "dispatch", model="SWingV2", path="CE", departs_at=iso(now + 600))
        tcp.command(board, "cancel", id=d["id"])

        lst = "timers/1985.10.26"
        tcp.subscribe(lst)
        t1 = tcp.command(lst, "add", event="Lightning strikes the clock tower", location="Hill Valley", remaining_s=2 * 3600 + 17 * 60)
        tcp.command(lst, "add", event="Enchantment Under the Sea", location="Hill Valley High", remaining_s=5400)
        tcp.command(lst, "add", event="Marty leaves 1955", location="Courthouse square", remaining_s=0)
        tcp.command(lst, "start", id=t1["id"])

        laps = "laps/track_2"
        tcp.command(laps, "start")
        for _ in range(3):
            time.sleep(0.4)
            tcp.command(laps, "lap")

        marty = self.tcp("Marty")
        for channel in ("delorean/main", board, lst, laps):
            marty.subscribe(channel)
        marty.publish("delorean/main", {"text": "Doc, we have to go back!"})

        shots = {}
        page = self.context.new_page()
        self.watch_errors(page)
        for channel in ("delorean/main", board, lst, laps):
            page.goto(self.server.url + "#channel=" + channel)
            self.wait_live(page, channel=channel)
            if channel == "delorean/main":
                marty.publish("delorean/main", {"text": "Great Scott!"})
                page.wait_for_selector("#messages li")
            page.wait_for_timeout(1_200)  # countdowns and the lap clock move between ticks
            kind = channel.split("/")[0]
            shots[kind] = self.shot(page, f"board-{kind}")
            self.assertGreater(shots[kind].stat().st_size, 10_000)
        # The same page (one browser's connections: the server lets one address hold 16 HTTP connections)
        # in the light scheme, and on a laptop's screen.
        page.emulate_media(color_scheme="light")
        page.goto(self.server.url + "#channel=" + board)
        self.wait_live(page, channel=board)
        self.shot(page, "board-starport-light")
        page.emulate_media(color_scheme="dark")
        page.set_viewport_size({"width": 1366, "height": 768})
        page.goto(self.server.url + "#channel=delorean/main")
        self.wait_live(page, channel="delorean/main")
        self.shot(page, "board-delorean-laptop")
        self.assert_no_page_errors()
        readme = os.environ.get("OUTATIME_README_SHOT")
        if readme:  # `OUTATIME_README_SHOT=docs/img/board.png`: the README's picture, a wall screen at 1280×720
            page.set_viewport_size({"width": 1280, "height": 720})
            page.goto(self.server.url + "#channel=delorean/main&wall")
            page.reload()
            self.wait_live(page, channel="delorean/main")
            marty.publish("delorean/main", {"text": "Doc, we have to go back!"})
            tcp.publish("delorean/main", {"text": "Great Scott!"})
            page.wait_for_selector("#messages li:nth-child(2)")
            page.screenshot(path=str(REPO_ROOT / readme))


class LatencyTest(BoardTestCase):
    """Issue 28's browser figure: 50 commands by a TCP client, the new seq in the page vs a TCP subscriber.

    Prints p50/p95/max for both; it asserts only that every seq arrived (the lead records the figures)."""

    server_args: list[str] = []

    def test_latency_of_50_commands_page_vs_tcp_subscriber(self) -> None:
        channel = "delorean/latency"
        sender = self.tcp("sender")
        sender.subscribe(channel)  # creates it
        page = self.open_board("channel=" + channel)
        self.wait_live(page, 0)
        page.evaluate("""() => { window.seen = {};
            new MutationObserver(() => { const s = document.querySelector('#board').dataset.seq;
                if (s && !(s in window.seen)) window.seen[s] = performance.timeOrigin + performance.now(); })
              .observe(document.querySelector('#board'), {attributes: true, attributeFilter: ['data-seq']}); }""")
        watcher = self.tcp("watcher")
        watcher.subscribe(channel)
        received: dict[int, float] = {}
        done = threading.Event()

        def read() -> None:
            while len(received) < 50:
                try:
                    push = watcher.next_push(timeout=20)
                except Exception:
                    break
                if push.get("type") == "event":
                    received[push["seq"]] = time.time() * 1000
            done.set()

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        sent: dict[int, float] = {}
        for i in range(50):
            at = time.time() * 1000
            sender.command(channel, "set_destination", time=f"19{10 + i}-01-01T00:00:00Z")
            sent[i + 1] = at
        self.assertTrue(done.wait(20), "the TCP subscriber did not get 50 events")
        poll(page, "() => window.seen['50'] !== undefined", timeout=20.0)
        seen = {int(k): v for k, v in page.evaluate("window.seen").items()}
        page_ms = [seen[s] - sent[s] for s in sent if s in seen]
        tcp_ms = [received[s] - sent[s] for s in sent]
        self.assertEqual(len(tcp_ms), 50)
        self.assertGreaterEqual(len(page_ms), 45)  # an observer batches seqs drawn in one task

        def figures(values: list[float]) -> str:
            v = sorted(values)
            p95 = v[min(len(v) - 1, int(round(0.95 * len(v))) - 1)]
            return f"p50 {statistics.median(v):.1f} ms, p95 {p95:.1f} ms, max {v[-1]:.1f} ms (n={len(v)})"

        report = f"browser latency, 50 commands over TCP: page {figures(page_ms)}; TCP subscriber {figures(tcp_ms)}"
        print("\n" + report, file=sys.stderr)
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        (ARTIFACTS / "latency.txt").write_text(report + "\n")


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
