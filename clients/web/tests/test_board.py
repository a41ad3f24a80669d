"""The board in a real browser against the real server (``make test-web``): the issue's cases 1–5,
the moving boards, the link's heartbeat and gap recovery.

Each test starts ``outatime-server --port 0 --http 0`` on a fresh database, opens the page the
server serves in headless Chromium (Playwright, sync API) and drives or watches it beside the
Python TCP client. Run from the repository root:

    python3 -m unittest discover -s clients/web/tests -v
"""

from __future__ import annotations

import json
import subprocess
import time
import unittest
from typing import Any

from boardcase import (BoardTestCase, poll, raw_http, record_subscribe, start_browser, start_static_server,
                       stop_browser, websocket_upgrade)
from harness import WAIT_MS


def setUpModule() -> None:
    start_browser()


def tearDownModule() -> None:
    stop_browser()


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


class SecureBoardTest(BoardTestCase):
    """`--http-tls`: the page over https:// opens wss:// to its own server."""

    def extra_args(self) -> list[str]:
        self.cert, self.key = self.tmp / "cert.pem", self.tmp / "key.pem"
        done = subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                               "-nodes", "-keyout", str(self.key), "-out", str(self.cert), "-days", "1",
                               "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                              capture_output=True, text=True, timeout=30)
        self.assertEqual(done.returncode, 0, done.stderr)
        return ["--http-tls", "--tls-cert", str(self.cert), "--tls-key", str(self.key)]

    def test_page_over_https_uses_wss(self) -> None:
        context = self.browser.new_context(ignore_https_errors=True)  # a throwaway certificate
        context.set_default_timeout(WAIT_MS)
        self.addCleanup(context.close)
        page = context.new_page()
        sockets: list[str] = []
        page.on("websocket", lambda ws: sockets.append(ws.url))
        page.goto(f"https://127.0.0.1:{self.server.http}/#channel=delorean/main")
        self.wait_live(page, 0)
        self.assertEqual(sockets, [f"wss://127.0.0.1:{self.server.http}/ws"])
        self.tcp().command("delorean/main", "set_destination", time="1985-10-26T01:21:00Z")
        page.wait_for_selector("#circuit-destination[data-time='1985-10-26T01:21:00Z']")


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


if __name__ == "__main__":
    unittest.main()
