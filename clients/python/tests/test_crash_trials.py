"""A short run of the crash trials (tools/crash_trials.py) against the real
``outatime-server``: 3 SIGKILLs under load from 4 clients, each followed by a
restart on the same database and the checks (every acknowledged event stored
at its seq, seqs contiguous without duplicates, ``PRAGMA integrity_check``).
``make crash-trials`` runs more; docs/BENCHMARKS.md records a run of 100.

The binary is ``$OUTATIME_SERVER`` or ``.build/debug/outatime-server``.
"""

from __future__ import annotations

import io
import os
import sys
import tempfile
import time
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parent.parent.parent
sys.path.insert(0, str(REPO_ROOT / "tools"))
sys.path.insert(0, str(HERE.parent))

import crash_trials  # noqa: E402
from outatime import Client  # noqa: E402

sys.path.insert(0, str(HERE))
from test_client import tcp_only  # noqa: E402

SERVER_BIN = Path(os.environ.get("OUTATIME_SERVER", str(REPO_ROOT / ".build" / "debug" / "outatime-server")))


def _wait_for_binary() -> None:
    # Fail (never skip): a concurrent `swift build` may be relinking it.
    deadline = time.monotonic() + 10.0
    while not os.access(SERVER_BIN, os.X_OK):
        if time.monotonic() > deadline:
            raise AssertionError(f"{SERVER_BIN} is missing; run `swift build` (or set OUTATIME_SERVER)")
        time.sleep(0.1)


@tcp_only("durability under SIGKILL, whatever the clients speak: tools/crash_trials.py runs once, over TCP")
class CrashTrialsTest(unittest.TestCase):
    def test_three_sigkills_under_load_lose_nothing(self) -> None:
        _wait_for_binary()
        out = io.StringIO()
        summary = crash_trials.run_trials(trials=3, server=SERVER_BIN, seed=1985, clients=4, channels=3,
                                          min_kill_s=0.2, max_kill_s=0.8, out=out)
        report = out.getvalue()
        self.assertEqual(len(summary.trials), 3, report)
        for t in summary.trials:
            # The load really ran: commands were acknowledged before each kill.
            self.assertGreater(t.acked, 0, report)
            self.assertGreaterEqual(t.stored, t.acked, report)
            self.assertEqual(t.lost, [], report)
            self.assertEqual(t.seq_errors, [], report)
            self.assertEqual(t.errors, [], report)
            self.assertEqual(t.integrity, "ok", report)
        self.assertIsNotNone(summary.final, report)
        self.assertTrue(summary.ok, report)
        self.assertEqual(summary.lost, 0, report)
        self.assertIn("PASS", report.splitlines()[-1], report)


@tcp_only("durability under SIGKILL, whatever the clients speak: tools/crash_trials.py runs once, over TCP")
class CrashCheckTest(unittest.TestCase):
    """The checker itself finds a missing or wrong acknowledged event."""

    def test_check_reports_missing_and_mismatched_events(self) -> None:
        _wait_for_binary()
        with tempfile.TemporaryDirectory(prefix="outatime-crashcheck-") as tmp:
            db = Path(tmp) / "c.sqlite"
            server = crash_trials.Server(SERVER_BIN, db, Path(tmp) / "server.log")
            server.start()
            try:
                ch = "timers/check"
                with Client("127.0.0.1", server.port, timeout=10.0) as c:
                    c.command(ch, "add", event="tag-1", remaining_s=60)
                    c.command(ch, "update", id=1, event="tag-2")
                Ack = crash_trials.Ack
                good = [Ack(ch, 1, "timer_added", "tag-1"), Ack(ch, 2, "timer_updated", "tag-2")]
                check = crash_trials.check_channels(server.port, good, [ch])
                self.assertEqual((check.lost, check.seq_errors, check.events), ([], [], 2))

                bad = [Ack(ch, 3, "timer_added", "tag-3"),        # never happened
                       Ack(ch, 2, "timer_updated", "other-tag")]  # another event at that seq
                check = crash_trials.check_channels(server.port, bad, [ch])
                self.assertEqual(len(check.lost), 2, check.lost)
                self.assertIn("seq 3 is missing", check.lost[0])
                self.assertIn("other-tag", check.lost[1])
            finally:
                rc = server.stop()
            self.assertEqual(rc, 0, server.log_tail())
            self.assertEqual(crash_trials.integrity_check(db), "ok")


if __name__ == "__main__":
    unittest.main()
