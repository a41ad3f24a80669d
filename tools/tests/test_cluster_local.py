"""`make cluster-local` end to end: three real nats-servers in one JetStream
cluster (every asset with 3 replicas), three real nodes in cluster mode, and
a real haproxy 2.6 in front with the PROXY protocol; one client goes through
haproxy, is answered by a node, and a durable command is acknowledged
(so JetStream stored it on a quorum). Run by `make test` (`make
test-cluster`) after the debug build."""
import os
import random
import socket
import subprocess
import sys
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SERVER = os.path.join(ROOT, ".build", "debug", "outatime-server")


def free(port):
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


def free_bases():
    """Ports the script uses: nats base..+2, +100..+102 and +200..+202, node base and +100, haproxy."""
    for _ in range(20):
        nats, node, proxy = (random.randrange(20000, 60000) for _ in range(3))
        ports = ([nats + i for i in range(3)] + [nats + 100 + i for i in range(3)] + [nats + 200 + i for i in range(3)]
                 + [node + i for i in range(3)] + [node + 100 + i for i in range(3)] + [proxy])
        if len(set(ports)) == len(ports) and all(free(p) for p in ports):
            return nats, node, proxy
    raise RuntimeError("no free ports found")


class ClusterLocalTest(unittest.TestCase):
    def test_check_through_haproxy(self):
        self.assertTrue(os.access(SERVER, os.X_OK), f"no {SERVER}: make build")
        nats, node, proxy = free_bases()
        result = subprocess.run(
            [sys.executable, os.path.join(ROOT, "tools", "cluster_local.py"), "--check", "--server", SERVER,
             "--nats-port", str(nats), "--node-port", str(node), "--port", str(proxy)],
            capture_output=True, text=True, timeout=180)
        self.assertEqual(result.returncode, 0, f"stdout: {result.stdout}\nstderr: {result.stderr}")
        self.assertIn(f"clients -> 127.0.0.1:{proxy} (haproxy)", result.stdout)
        self.assertRegex(result.stdout, r"answered by node n[123]; command ok=True")
        # Everything it started is gone: its ports are free again.
        for port in (nats, nats + 1, nats + 2, node, proxy):
            self.assertTrue(free(port), f"port {port} still in use after the script stopped")

    def test_refuses_an_old_nats_server(self):
        old = os.path.join(ROOT, ".build", "nats-2.9.10", "usr", "sbin", "nats-server")
        self.assertTrue(os.access(old, os.X_OK), f"no {old}: make test-deps")
        result = subprocess.run(
            [sys.executable, os.path.join(ROOT, "tools", "cluster_local.py"), "--check", "--server", SERVER,
             "--nats-server", old], capture_output=True, text=True, timeout=60)
        self.assertEqual(result.returncode, 2, result.stderr)
        self.assertIn("cluster mode needs nats-server 2.9.21 or later", result.stderr)


if __name__ == "__main__":
    unittest.main()
