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

Three OutaTime nodes by default (`--nodes N`, 1 to 9): they share every
channel, each served by its owner node (docs/CLUSTER.md). Needs nats-server 2.9.21 or later on PATH
(`make test-deps` installs 2.15.1), haproxy, and `make build` (or
`--server .build/release/outatime-server`). Everything lives in a temporary
folder (`--dir` to keep it), and every wait is bounded. Each nats-server's
monitoring endpoint (/jsz, /routez) listens on its client port + 200.

The classes here are also a library: tools/cluster_trials.py starts, kills,
freezes and restarts single nodes and nats-servers through `Cluster`.
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


class Node:
    """One OutaTime node as the cluster runs it: where clients reach it, and
    (when set) the network namespace it runs in and the address haproxy
    connects from (the address the node trusts with --proxy-from)."""

    def __init__(self, index, host, port, http_port, netns=None, proxy_source="127.0.0.2", nats_urls=None):
        self.index = index
        self.name = f"n{index + 1}"
        self.host = host
        self.port = port
        self.http_port = http_port
        self.netns = netns
        self.proxy_source = proxy_source
        self.nats_urls = nats_urls  # None: the cluster's
        self.proc = None


class Cluster:
    """The processes of a local cluster, each startable, killable and
    restartable on its own (tools/cluster_trials.py drives them).

    `args` needs nodes, port, node_port, nats_port, server, nats_server,
    haproxy and dir; optional: nats_host (the address the nats-servers'
    client and monitoring ports listen on, 127.0.0.1), log_level, and
    node_layout (a list of Node, one per node, replacing the loopback
    default)."""

    def __init__(self, args):
        self.args = args
        self.folder = args.dir or tempfile.mkdtemp(prefix="outatime-cluster-")
        os.makedirs(self.folder, exist_ok=True)
        self.processes = []  # (name, Popen), every process ever started, in order
        self.nats_host = getattr(args, "nats_host", None) or "127.0.0.1"
        layout = getattr(args, "node_layout", None)
        self.nodes = layout or [Node(i, "127.0.0.1", args.node_port + i, args.node_port + 100 + i)
                                for i in range(args.nodes)]
        self.nats = [None, None, None]  # Popen per nats-server

    def spawn(self, name, argv, log):
        handle = open(os.path.join(self.folder, log), "a")
        proc = subprocess.Popen(argv, stdout=handle, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        handle.close()
        self.processes.append((name, proc))
        return proc

    def nats_port(self, i):
        return self.args.nats_port + i

    def nats_monitor_port(self, i):
        """nats-server i's monitoring port (/varz, /jsz, /routez)."""
        return self.args.nats_port + 200 + i

    def nats_name(self, i):
        """nats-server i's server name, as JetStream names stream leaders."""
        return f"ot-nats-{i + 1}"

    def nats_urls(self):
        return ",".join(f"nats://{self.nats_host}:{self.nats_port(i)}" for i in range(3))

    def start_nats_server(self, i, wait=15):
        routes = ",".join(f"nats://127.0.0.1:{self.args.nats_port + 100 + j}" for j in range(3))
        self.nats[i] = self.spawn(f"nats-{i + 1}", [
            self.args.nats_server, "-a", self.nats_host, "-p", str(self.nats_port(i)), "-n", self.nats_name(i),
            "-m", str(self.nats_monitor_port(i)),
            "-js", "-sd", os.path.join(self.folder, f"nats-{i + 1}"),
            "--cluster_name", "outatime", "--cluster", f"nats://127.0.0.1:{self.args.nats_port + 100 + i}",
            "--routes", routes], f"nats-{i + 1}.log")
        if wait and not wait_port(self.nats_port(i), wait, self.nats_host):
            raise RuntimeError(f"nats-server {i + 1} did not listen on {self.nats_host}:{self.nats_port(i)}")
        return self.nats[i]

    def start_nats(self):
        for i in range(3):
            self.start_nats_server(i, wait=0)
        for i in range(3):
            if not wait_port(self.nats_port(i), 15, self.nats_host):
                raise RuntimeError(f"nats-server {i + 1} did not listen on {self.nats_host}:{self.nats_port(i)}")

    def node_argv(self, node):
        argv = [self.args.server, "--port", str(node.port),
                "--cluster", node.nats_urls or self.nats_urls(), "--node", node.name, "--cluster-replicas", "3",
                "--proxy-from", node.proxy_source, "--log-level", getattr(self.args, "log_level", None) or "info"]
        if node.host == "127.0.0.1":
            argv += ["--http", f"127.0.0.1:{node.http_port}"]
        else:
            # Off loopback: plain TCP and anonymous clients must be allowed
            # explicitly, and the HTTP listener made public.
            argv += ["--host", node.host, "--allow-plaintext", "--allow-anonymous",
                     "--http", f"{node.host}:{node.http_port}", "--http-public"]
        argv += list(getattr(self.args, "node_args", None) or [])
        if node.netns:
            # `ip netns exec` execs the server in place: the Popen's pid is the server's.
            argv = ["ip", "netns", "exec", node.netns] + argv
        return argv

    def start_node(self, node, timeout=30):
        """Starts (or restarts) `node`; returns once it listens. The
        JetStream cluster elects its meta leader within a second or so of
        starting; a node that came too early exits 1: try again."""
        deadline = time.monotonic() + timeout
        while True:
            proc = self.spawn(node.name, self.node_argv(node), f"{node.name}.log")
            node.proc = proc
            if wait_port(node.port, min(10, max(1, deadline - time.monotonic())), node.host) and proc.poll() is None:
                return proc
            proc.kill()
            proc.wait()
            self.processes.remove((node.name, proc))
            if time.monotonic() > deadline:
                log = open(os.path.join(self.folder, f"{node.name}.log")).read()[-2000:]
                raise RuntimeError(f"node {node.name} did not start within {timeout} s:\n{log}")
            time.sleep(1)

    def start_nodes(self):
        for node in self.nodes:
            self.start_node(node)

    def node(self, name):
        return next(n for n in self.nodes if n.name == name)

    def signal_node(self, node, sig):
        if node.proc is not None and node.proc.poll() is None:
            node.proc.send_signal(sig)

    def kill_node(self, node, timeout=10):
        """SIGKILL and reap."""
        if node.proc is not None and node.proc.poll() is None:
            node.proc.send_signal(signal.SIGCONT)  # a frozen process dies on SIGKILL too; reaped at once
            node.proc.kill()
            node.proc.wait(timeout=timeout)

    def kill_nats_server(self, i, timeout=10):
        proc = self.nats[i]
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait(timeout=timeout)

    def haproxy_config(self):
        servers = "\n".join(
            f"    server {n.name} {n.host}:{n.port} send-proxy-v2 source {n.proxy_source} "
            f"check port {n.http_port} inter 200ms fall 2 rise 2"
            for n in self.nodes)
        return f"""global
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

    def start_haproxy(self):
        path = os.path.join(self.folder, "haproxy.cfg")
        with open(path, "w") as f:
            f.write(self.haproxy_config())
        self.spawn("haproxy", [self.args.haproxy, "-f", path, "-db"], "haproxy.log")
        if not wait_port(self.args.port, 10):
            raise RuntimeError(f"haproxy did not listen on {self.args.port}")

    def stop(self):
        # In reverse order, each stopped before the next: haproxy, the nodes
        # (which still write to NATS while they stop), then the nats-servers.
        for _, proc in reversed(self.processes):
            if proc.poll() is None:
                proc.send_signal(signal.SIGCONT)  # a frozen one could not stop
                proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if not self.args.dir:
            shutil.rmtree(self.folder, ignore_errors=True)


def nats_version(nats_server):
    """The nats-server binary's version as a tuple ((0, 0, 0) when unknown) and its text."""
    version = subprocess.run([nats_server, "--version"], capture_output=True, text=True).stdout.strip()
    found = re.findall(r"(\d+)\.(\d+)\.(\d+)", version)
    return (tuple(int(x) for x in found[0]) if found else (0, 0, 0)), version


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
    parser.add_argument("--nodes", type=int, default=3, help="OutaTime nodes (ports from --node-port on)")
    parser.add_argument("--port", type=int, default=7400, help="haproxy's client port")
    parser.add_argument("--node-port", type=int, default=17401, help="first node's port (HTTP: +100)")
    parser.add_argument("--nats-port", type=int, default=14221, help="first nats-server's client port (routes: +100, monitoring: +200)")
    parser.add_argument("--server", default=".build/debug/outatime-server")
    parser.add_argument("--nats-server", default=shutil.which("nats-server") or "nats-server")
    parser.add_argument("--haproxy", default=shutil.which("haproxy") or "/usr/sbin/haproxy")
    parser.add_argument("--dir", help="keep the stores and logs in this folder")
    parser.add_argument("--check", action="store_true", help="start, check one client through haproxy, stop")
    args = parser.parse_args()
    if not 1 <= args.nodes <= 9:
        parser.error(f"--nodes {args.nodes}: give 1 to 9")
    for tool in (args.server, args.nats_server, args.haproxy):
        if not shutil.which(tool) and not os.access(tool, os.X_OK):
            parser.error(f"{tool} not found (make build; make test-deps for nats-server; apt-get install haproxy)")
    found, version = nats_version(args.nats_server)
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
              + ", ".join(f"{n.name} {n.host}:{n.port} (http {n.http_port})" for n in cluster.nodes)
              + f"; NATS {cluster.nats_urls()} (monitoring: http://{cluster.nats_host}:"
              + ",".join(str(cluster.nats_monitor_port(i)) for i in range(3)) + ")", flush=True)
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
