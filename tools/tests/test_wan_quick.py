"""The short WAN check (issue 27, scope 5): tools/wan_trials.py's `short`
scenario on the real rig: three network namespaces, the user-space bridge
at 80 ms RTT and 1 % loss, the real server (TLS) kept busy, `outatime
watch`, the Python client, a Python client viewing a timer, and one 15 s
blackhole (long enough that a server dropping dead peers within 10 s does
so while the path is still cut).

It asserts what holds once issue 27's liveness and recovery work is in:
no tick missing on the lossy link; the Python client raises or reconnects
within 8 s of the cut and has live data again within 10 s of the path's
return; `watch` leaves "live" within 8 s and is live again within 10 s;
the cut-off viewer leaves and its timer stops during the cut; no session
listed twice; no gap and no duplicate in seq order. The bounds are
generous (a shared 2-core machine); the Must-reach figures are measured by
`make wan-trials`.

Needs root (network namespaces): skipped, saying so, otherwise. About a
minute. Every namespace and process is removed also when the run fails or
is interrupted (the script cleans up on SIGTERM/SIGINT; anything left by a
killed run is removed here). The binaries: .build/debug (`make build`),
or the folder in OUTATIME_WAN_BIN (e.g. .build/release).

    make wan-quick
"""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools"))

import wan_trials  # noqa: E402

BIN = os.environ.get("OUTATIME_WAN_BIN") or os.path.join(ROOT, ".build", "debug")
SERVER = os.path.join(BIN, "outatime-server")
CLI = os.path.join(BIN, "outatime")
LIMIT_S = 240   # the whole run; it takes about 60-70 s


@unittest.skipUnless(os.geteuid() == 0, "needs root for network namespaces (make wan-quick as root)")
class WanQuickTest(unittest.TestCase):
    def tearDown(self):
        # A run killed before its own clean-up leaves namespaces named after its pid.
        wan_trials.Rig.remove_stale()

    def test_one_profile_and_a_blackhole(self):
        for tool in (SERVER, CLI):
            self.assertTrue(os.access(tool, os.X_OK), f"no {tool}: make build (or set OUTATIME_WAN_BIN)")
        ok, why = wan_trials.Rig.available()
        self.assertTrue(ok, why)
        # Kept when the check fails: the server's log and every client's records (JSONL).
        folder = tempfile.mkdtemp(prefix="outatime-wan-quick-")
        figures = os.path.join(folder, "figures.json")
        proc = subprocess.Popen(
            [sys.executable, os.path.join(ROOT, "tools", "wan_trials.py"), "--scenarios", "short",
             "--server", SERVER, "--cli", CLI, "--dir", os.path.join(folder, "run"), "--json", figures],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            out, _ = proc.communicate(timeout=LIMIT_S)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGTERM)   # the script removes its namespaces on SIGTERM
            try:
                out, _ = proc.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                out, _ = proc.communicate()
            self.fail(f"wan_trials.py did not finish within {LIMIT_S} s (records in {folder}):\n{out[-4000:]}")
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        report = out[out.find("figures against"):] if "figures against" in out else out[-4000:]
        self.assertEqual(proc.returncode, 0, f"exit {proc.returncode} (records in {folder}):\n{report}")
        self.assertTrue(os.path.exists(figures), out[-2000:])
        shutil.rmtree(folder, ignore_errors=True)
        # Nothing of the run is left: its namespaces are gone.
        listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
        self.assertNotIn(f"otwan-srv-{proc.pid}", listed)


if __name__ == "__main__":
    unittest.main()
