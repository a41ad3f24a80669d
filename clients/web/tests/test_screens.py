"""Screenshots of every kind's board (``.build/web-artifacts/``, ``$OUTATIME_WEB_ARTIFACTS``) and the
browser-latency figures of issue 28 (``make test-web``)."""

from __future__ import annotations

import json
import os
import statistics
import sys
import threading
import time
import unittest

from boardcase import BoardTestCase, poll, start_browser, stop_browser
from harness import ARTIFACTS, REPO_ROOT


def setUpModule() -> None:
    start_browser()


def tearDownModule() -> None:
    stop_browser()


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
    """Issue 28's browser figure: 50 commands by a TCP client, the new seq in the page vs a TCP subscriber
    (and a /ws subscriber without a browser).

    Prints p50/p95/max for each; it asserts only that every seq arrived (the lead records the figures)."""

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

        # A third subscriber over /ws without a browser (the websockets library): tells the
        # WebSocket path's share from the browser's.
        from websockets.sync.client import connect
        ws = connect(f"ws://127.0.0.1:{self.server.http}/ws", open_timeout=10)
        self.addCleanup(ws.close)
        ws.send(json.dumps({"type": "hello", "id": 1, "protocol": 1, "name": "ws watcher"}))
        ws.send(json.dumps({"type": "subscribe", "id": 2, "channel": channel}))
        while json.loads(ws.recv(timeout=10)).get("id") != 2:
            pass
        over_ws: dict[int, float] = {}
        ws_done = threading.Event()

        def read_ws() -> None:
            while len(over_ws) < 50:
                try:
                    push = json.loads(ws.recv(timeout=20))
                except Exception:
                    break
                if push.get("type") == "event":
                    over_ws[push["seq"]] = time.time() * 1000
            ws_done.set()

        threading.Thread(target=read_ws, daemon=True).start()
        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        sent: dict[int, float] = {}
        for i in range(50):
            at = time.time() * 1000
            sender.command(channel, "set_destination", time=f"19{10 + i}-01-01T00:00:00Z")
            sent[i + 1] = at
        self.assertTrue(done.wait(20), "the TCP subscriber did not get 50 events")
        self.assertTrue(ws_done.wait(20), "the /ws subscriber did not get 50 events")
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

        ws_ms = [over_ws[s] - sent[s] for s in sent]
        report = (f"browser latency, 50 commands over TCP: page {figures(page_ms)}; TCP subscriber {figures(tcp_ms)}; "
                  f"/ws subscriber (Python websockets) {figures(ws_ms)}")
        print("\n" + report, file=sys.stderr)
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        (ARTIFACTS / "latency.txt").write_text(report + "\n")


if __name__ == "__main__":
    unittest.main()
