"""The board's files as the server serves them: from the binary, from --web-root, and kinds.js
checked against protocol/vectors in the browser (``make test-web``)."""

from __future__ import annotations

import json
import subprocess
import sys
import unittest
from typing import Any

from boardcase import BoardTestCase, raw_http, start_browser, stop_browser
from harness import REPO_ROOT, WAIT_MS


def setUpModule() -> None:
    start_browser()


def tearDownModule() -> None:
    stop_browser()


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

    def test_four_tabs_from_one_address_all_load(self) -> None:
        # Each file is answered with Connection: close. Kept alive, a tab held about five idle
        # connections for 10 s, and the third tab met the 16-per-address cap (503 for its scripts).
        contexts = [self.browser.new_context() for _ in range(4)]
        for context in contexts:
            context.set_default_timeout(WAIT_MS)
            self.addCleanup(context.close)
        for context in contexts:
            page = context.new_page()
            page.goto(self.server.url + "#channel=delorean/main")
            page.wait_for_selector("#link[data-state=ready]")
        self.assertEqual(self.http("GET", "/web/board.js")["headers"]["connection"], "close")

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
            self.assertIn(b"under --web-root", answer["body"])
            self.assertNotIn(b"secret\n", answer["body"])


    def test_a_web_root_that_is_not_a_folder_is_refused_at_start(self) -> None:
        from harness import SERVER_BIN
        missing = self.tmp / "no-such-folder"
        run = subprocess.run([str(SERVER_BIN), "--port", "0", "--http", "0", "--db", str(self.tmp / "other.sqlite"),
                              "--web-root", str(missing)], capture_output=True, text=True, timeout=30)
        self.assertNotEqual(run.returncode, 0)
        self.assertIn(f"--web-root {missing} is not a folder", run.stderr)


if __name__ == "__main__":
    unittest.main()
