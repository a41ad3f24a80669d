#!/usr/bin/env python3
"""Start a cluster on this machine, without Docker: 3 nats-servers (one
JetStream cluster, every stream and bucket with 3 replicas), OutaTime
node(s) in cluster mode, and haproxy in front of them.

    tools/cluster_local.py                 # up until Ctrl-C (make cluster-local)
    tools/cluster_local.py --check         # up, one client through haproxy, down

Clients connect to haproxy (127.0.0.1:7400 by default). haproxy passes each
client's address with the PROXY protocol (`send-proxy-v2`, from the source
address 127.0.0.2, which the nodes trust with `--proxy-from 127.0.0.2`, so
a client may still connect to a node directly from 127.0.0.1) and checks
each node's `GET /readyz`, which fails while the node's NATS link is down.

Until slot ownership lands (docs/CLUSTER.md, section 6) a cluster runs ONE
OutaTime node: `--nodes 2` starts more, but they are fenced by JetStream on
every channel another node writes. Needs nats-server 2.9.21 or later on PATH
(`make test-deps` installs 2.15.1), haproxy, and `make build` (or
`--server .build/release/outatime-server`). Everything lives in a temporary
folder (`--dir` to keep it), and every wait is bounded.
"""
import argparse
import json
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time


def wait_port(port, timeout, host="127.0.0.1"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((host, port), timeout=0.5):
                return True
        except OSError:
            time.sleep(0.1)
    return False


class Cluster:
    def __init__(self, args):
        self.args = args
        self.folder = args.dir or tempfile.mkdtemp(prefix="outatime-cluster-")
        os.makedirs(self.folder, exist_ok=True)
        self.processes = []  # (name, Popen)

    def spawn(self, name, argv, log):
        handle = open(os.path.join(self.folder, log), "w")
        proc = subprocess.Popen(argv, stdout=handle, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        self.processes.append((name, proc))
        return proc

    def nats_urls(self):
        return ",".join(f"nats://127.0.0.1:{self.args.nats_port + i}" for i in range(3))

    def start_nats(self):
        routes = ",".join(f"nats://127.0.0.1:{self.args.nats_port + 100 + i}" for i in range(3))
        for i in range(3):
            self.spawn(f"nats-{i + 1}", [
                self.args.nats_server, "-a", "127.0.0.1", "-p", str(self.args.nats_port + i), "-n", f"ot-nats-{i + 1}",
                "-js", "-sd", os.path.join(self.folder, f"nats-{i + 1}"),
                "--cluster_name", "outatime", "--cluster", f"nats://127.0.0.1:{self.args.nats_port + 100 + i}",
                "--routes", routes], f"nats-{i + 1}.log")
        for i in range(3):
            if not wait_port(self.args.nats_port + i, 15):
                raise RuntimeError(f"nats-server {i + 1} did not listen on {self.args.nats_port + i}")

    def start_nodes(self):
        for i in range(self.args.nodes):
            name = f"n{i + 1}"
            argv = [self.args.server, "--port", str(self.args.node_port + i),
                    "--http", f"127.0.0.1:{self.args.node_port + 100 + i}",
                    "--cluster", self.nats_urls(), "--node", name, "--cluster-replicas", "3",
                    "--proxy-from", "127.0.0.2", "--log-level", "info"]
            # The JetStream cluster elects its meta leader within a second or
            # so of starting; a node that came too early exits 1: try again.
            deadline = time.monotonic() + 30
            while True:
                proc = self.spawn(name, argv, f"{name}.log")
                if wait_port(self.args.node_port + i, 10) and proc.poll() is None:
                    break
                proc.kill()
                proc.wait()
                self.processes.pop()
                if time.monotonic() > deadline:
                    log = open(os.path.join(self.folder, f"{name}.log")).read()[-2000:]
                    raise RuntimeError(f"node {name} did not start:\n{log}")
                time.sleep(1)

    def start_haproxy(self):
        servers = "\n".join(
            f"    server n{i + 1} 127.0.0.1:{self.args.node_port + i} send-proxy-v2 source 127.0.0.2 "
            f"check port {self.args.node_port + 100 + i} inter 200ms fall 2 rise 2"
            for i in range(self.args.nodes))
        config = f"""global
    log stderr format short local0 notice
defaults
    mode tcp
    log global
    timeout connect 1s
    timeout client 60s
    timeout server 60s
    option redispatch
    retries 2
frontend outatime
    bind 127.0.0.1:{self.args.port}
    default_backend nodes
backend nodes
    balance roundrobin
    option httpchk GET /readyz
{servers}
"""
        path = os.path.join(self.folder, "haproxy.cfg")
        with open(path, "w") as f:
            f.write(config)
        self.spawn("haproxy", [self.args.haproxy, "-f", path, "-db"], "haproxy.log")
        if not wait_port(self.args.port, 10):
            raise RuntimeError(f"haproxy did not listen on {self.args.port}")

    def stop(self):
        # In reverse order, each stopped before the next: haproxy, the nodes
        # (which still write to NATS while they stop), then the nats-servers.
        for _, proc in reversed(self.processes):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if not self.args.dir:
            shutil.rmtree(self.folder, ignore_errors=True)


def check(port):
    """One client through haproxy: hello names a node; a durable command is acknowledged."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)

    def send(obj):
        body = json.dumps(obj).encode()
        sock.sendall(struct.pack(">I", len(body)) + body)

    def receive():
        head = b""
        while len(head) < 4:
            chunk = sock.recv(4 - len(head))
            if not chunk:
                raise RuntimeError("connection closed")
            head += chunk
        (length,) = struct.unpack(">I", head)
        body = b""
        while len(body) < length:
            chunk = sock.recv(length - len(body))
            if not chunk:
                raise RuntimeError("connection closed")
            body += chunk
        return json.loads(body)

    def call(obj):
        send(obj)
        while True:
            frame = receive()
            if frame.get("type") == "reply" and frame.get("id") == obj["id"]:
                return frame

    hello = call({"type": "hello", "id": 1, "protocol": 1, "name": "cluster-check"})
    if not hello.get("ok") or not hello["result"].get("node"):
        raise RuntimeError(f"hello through haproxy: {hello}")
    reply = call({"type": "command", "id": 2, "channel": "laps/cluster-check", "action": "start", "args": {}})
    if not reply.get("ok"):
        reply = call({"type": "command", "id": 3, "channel": "laps/cluster-check", "action": "reset", "args": {}})
    sock.close()
    return hello["result"]["node"], reply


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=1, help="OutaTime nodes (1 until slot ownership lands)")
    parser.add_argument("--port", type=int, default=7400, help="haproxy's client port")
    parser.add_argument("--node-port", type=int, default=17401, help="first node's port (HTTP: +100)")
    parser.add_argument("--nats-port", type=int, default=14221, help="first nats-server's client port (routes: +100)")
    parser.add_argument("--server", default=".build/debug/outatime-server")
    parser.add_argument("--nats-server", default=shutil.which("nats-server") or "nats-server")
    parser.add_argument("--haproxy", default=shutil.which("haproxy") or "/usr/sbin/haproxy")
    parser.add_argument("--dir", help="keep the stores and logs in this folder")
    parser.add_argument("--check", action="store_true", help="start, check one client through haproxy, stop")
    args = parser.parse_args()
    if not 1 <= args.nodes <= 9:
        parser.error(f"--nodes {args.nodes}: give 1 to 9")
    if args.nodes > 1:
        print("warning: until slot ownership lands, extra nodes are fenced on every channel another node writes",
              file=sys.stderr)
    for tool in (args.server, args.nats_server, args.haproxy):
        if not shutil.which(tool) and not os.access(tool, os.X_OK):
            parser.error(f"{tool} not found (make build; make test-deps for nats-server; apt-get install haproxy)")
    version = subprocess.run([args.nats_server, "--version"], capture_output=True, text=True).stdout.strip()
    found = tuple(int(x) for x in re.findall(r"(\d+)\.(\d+)\.(\d+)", version)[0]) if re.search(r"\d+\.\d+\.\d+", version) else (0, 0, 0)
    if found < (2, 9, 21):
        parser.error(f"{args.nats_server} is {version or 'unknown'}; cluster mode needs nats-server 2.9.21 or later (make test-deps)")
    cluster = Cluster(args)
    stop = {"now": False}
    signal.signal(signal.SIGTERM, lambda *_: stop.update(now=True))
    try:
        cluster.start_nats()
        cluster.start_nodes()
        cluster.start_haproxy()
        print(f"cluster up in {cluster.folder}: clients -> 127.0.0.1:{args.port} (haproxy); nodes "
              + ", ".join(f"n{i + 1} 127.0.0.1:{args.node_port + i} (http {args.node_port + 100 + i})" for i in range(args.nodes))
              + f"; NATS {cluster.nats_urls()}", flush=True)
        if args.check:
            node, reply = check(args.port)
            print(f"check: hello through haproxy answered by node {node}; command ok={reply.get('ok')}", flush=True)
            return 0 if reply.get("ok") else 1
        while not stop["now"]:
            time.sleep(0.2)
        return 0
    except KeyboardInterrupt:
        return 0
    except RuntimeError as error:
        print(f"cluster_local: {error}", file=sys.stderr)
        return 1
    finally:
        cluster.stop()


if __name__ == "__main__":
    sys.exit(main())
