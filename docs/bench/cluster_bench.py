#!/usr/bin/env python3
"""Cluster fan-out and durable commands beside a single node, in one run
(issue 25, docs/BENCHMARKS.md "Session 15").

Starts, side by side on loopback:

  single   one node, SQLite (--db in a temporary folder)
  js1      one node in cluster mode on one nats-server (JetStream, --cluster-replicas 1)
  c3       three nodes in cluster mode on three nats-servers (JetStream, R3),
           through tools/cluster_local.py's Cluster (no haproxy: clients go to nodes)

and runs interleaved rounds (the order reversed every other round) of

  fanout  single      100 subscribers x 64 B, publisher and subscribers on the one node
  fanout  js1         the same on the one cluster-mode node
  fanout  c3-owner    subscribers round-robin over the 3 nodes, publisher on the channel's owner
  fanout  c3-other    the same, publisher on a node that does not own the channel
  commands single     `outatime-load commands --clients 50`, SQLite
  commands js1        the same on the one cluster-mode node
  commands c3-via-n1  the same through node n1 of the 3-node cluster (its channels hash
                      over the 3 nodes: about 2/3 are owned elsewhere and forwarded)

Per run it records the load tool's figures, the CPU (utime+stime from
/proc/PID/stat) of the servers of that setup (summed) and of its nats-servers,
the load tool's own CPU, and for the cluster the nodes' `stats.cluster`
counters (forwarded, relayed pushes) before and after.

    python3 docs/bench/cluster_bench.py --rounds 3 --seconds 6 --json-out /tmp/cb.json

Needs release builds (`swift build -c release --product outatime-load
--product outatime-server`), nats-server 2.9.21+ on PATH. Every wait is
bounded; every process started is stopped at the end (also on Ctrl-C).
"""
import argparse
import json
import os
import random
import resource
import shutil
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time
import types
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools"))
from cluster_local import Cluster, nats_version, wait_port  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    """utime + stime of a live process, in seconds (0 when it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / TICK
    except (OSError, IndexError, ValueError):
        return 0.0


class Wire:
    """A minimal client of the length-prefixed JSON protocol, every read bounded."""

    def __init__(self, port, name="cluster-bench", timeout=5):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.next_id = 1
        self.call({"type": "hello", "protocol": 1, "name": name})

    def send(self, obj):
        body = json.dumps(obj).encode()
        self.sock.sendall(struct.pack(">I", len(body)) + body)

    def receive(self):
        def exact(n):
            data = b""
            while len(data) < n:
                chunk = self.sock.recv(n - len(data))
                if not chunk:
                    raise RuntimeError("connection closed")
                data += chunk
            return data
        (length,) = struct.unpack(">I", exact(4))
        return json.loads(exact(length))

    def call(self, obj):
        obj = dict(obj, id=self.next_id)
        self.next_id += 1
        self.send(obj)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            frame = self.receive()
            if frame.get("type") == "reply" and frame.get("id") == obj["id"]:
                if not frame.get("ok"):
                    raise RuntimeError(f"{obj['type']} refused: {frame}")
                return frame.get("result")
        raise RuntimeError(f"no reply to {obj['type']}")

    def close(self):
        self.sock.close()


def stats(port):
    w = Wire(port, "cluster-bench-stats")
    try:
        return w.call({"type": "stats"})
    finally:
        w.close()


def cluster_stats(port):
    try:
        return stats(port).get("cluster") or {}
    except (OSError, RuntimeError) as error:
        return {"error": str(error)}


class Bench:
    def __init__(self, args):
        self.args = args
        self.folder = tempfile.mkdtemp(prefix="outatime-cluster-bench-")
        self.procs = []  # (name, Popen)
        self.cluster = None
        self.notes = []  # odd things seen
        self.dead = set()  # pids already noted as exited

    # ---- processes ----

    def spawn(self, name, argv):
        log = open(os.path.join(self.folder, f"{name}.log"), "a")
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        log.close()
        self.procs.append((name, proc))
        return proc

    def start_server(self, name, argv, port, timeout=30):
        """A node exits 1 when it starts before JetStream is ready: try again, bounded."""
        deadline = time.monotonic() + timeout
        while True:
            proc = self.spawn(name, argv)
            if wait_port(port, min(10, max(1, deadline - time.monotonic()))) and proc.poll() is None:
                return proc
            proc.kill()
            proc.wait(timeout=10)
            self.procs.remove((name, proc))
            if time.monotonic() > deadline:
                tail = open(os.path.join(self.folder, f"{name}.log")).read()[-2000:]
                raise RuntimeError(f"{name} did not start within {timeout} s:\n{tail}")
            time.sleep(1)

    def start(self):
        a = self.args
        common = ["--max-requests-per-second", "0", "--log-level", "warning"]
        # (a) single node, SQLite
        self.single = self.start_server("single", [a.server, "--port", str(a.base_port), "--db",
                                                   os.path.join(self.folder, "single.sqlite")] + common, a.base_port)
        # (b) one node on one nats-server, R1
        js_port = a.nats_port + 50
        self.nats1 = self.spawn("nats-js1", [a.nats_server, "-a", "127.0.0.1", "-p", str(js_port), "-js",
                                             "-sd", os.path.join(self.folder, "nats-js1")])
        if not wait_port(js_port, 15):
            raise RuntimeError("nats-server for js1 did not listen")
        self.js1 = self.start_server("js1", [a.server, "--port", str(a.base_port + 1), "--cluster",
                                             f"nats://127.0.0.1:{js_port}", "--node", "s1", "--cluster-replicas", "1"]
                                     + common, a.base_port + 1)
        # (c) three nodes, three nats-servers, R3
        cargs = types.SimpleNamespace(nodes=3, port=a.base_port + 9, node_port=a.base_port + 10,
                                      nats_port=a.nats_port, server=a.server, nats_server=a.nats_server,
                                      haproxy=None, dir=os.path.join(self.folder, "c3"), log_level="warning",
                                      node_args=["--max-requests-per-second", "0"])
        self.cluster = Cluster(cargs)
        self.cluster.start_nats()
        self.cluster.start_nodes()
        self.c3_ports = [n.port for n in self.cluster.nodes]
        # Wait (bounded) until every node sees three live nodes and owns slots.
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            infos = [cluster_stats(p) for p in self.c3_ports]
            if all(len(i.get("live_nodes") or []) == 3 and (i.get("slots_owned") or 0) > 0 for i in infos):
                break
            time.sleep(0.5)
        else:
            self.notes.append(f"cluster not settled after 30 s: {infos}")
        time.sleep(2)

    def stop(self):
        if self.cluster:
            try:
                self.cluster.stop()
            except Exception as error:  # keep stopping the rest
                print(f"cluster stop: {error}", file=sys.stderr)
        for _, proc in reversed(self.procs):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if not self.args.keep:
            shutil.rmtree(self.folder, ignore_errors=True)

    def check_alive(self):
        """Notes (once) every process that exited, with its log's tail."""
        procs = list(self.procs)
        if self.cluster:
            procs += [(name, proc) for name, proc in self.cluster.processes]
        for name, proc in procs:
            code = proc.poll()
            if code is not None and proc.pid not in self.dead:
                self.dead.add(proc.pid)
                folder = self.cluster.folder if self.cluster and (name, proc) in self.cluster.processes else self.folder
                try:
                    tail = open(os.path.join(folder, f"{name}.log"), errors="replace").read()[-3000:]
                except OSError:
                    tail = ""
                self.notes.append(f"{name} (pid {proc.pid}) exited with {code}; log tail:\n{tail}")
                print(f"!! {name} (pid {proc.pid}) exited with {code}; log tail:\n{tail}", flush=True)

    # ---- setups ----

    def setup_pids(self, setup):
        """(server pids, nats pids) of a setup."""
        if setup == "single":
            return [self.single.pid], []
        if setup == "js1":
            return [self.js1.pid], [self.nats1.pid]
        return [n.proc.pid for n in self.cluster.nodes], [p.pid for p in self.cluster.nats]

    def owner_of(self, channel):
        """Creates `channel` (a subscribe through n1) and finds the node that owns it."""
        w = Wire(self.c3_ports[0], "cluster-bench-create")
        try:
            w.call({"type": "subscribe", "channel": channel})
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                for port in self.c3_ports:
                    if channel in (cluster_stats(port).get("owned_channels") or []):
                        return port
                time.sleep(0.2)
        finally:
            w.close()
        raise RuntimeError(f"no node owns {channel}")

    # ---- runs ----

    def load(self, argv, pids, nats_pids, c3_ports=()):
        before_cpu = [cpu_seconds(p) for p in pids], [cpu_seconds(p) for p in nats_pids]
        before_stats = {p: cluster_stats(p) for p in c3_ports}
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.monotonic()
        try:
            done = subprocess.run([self.args.load] + argv + ["--json"], capture_output=True, text=True,
                                  timeout=self.args.seconds + 60)
            out, err, code = done.stdout, done.stderr, done.returncode
        except subprocess.TimeoutExpired as error:
            out, err, code = "", f"timed out: {error}", -1
        wall = time.monotonic() - started
        after_children = resource.getrusage(resource.RUSAGE_CHILDREN)
        server_cpu = sum(cpu_seconds(p) for p in pids) - sum(before_cpu[0])
        nats_cpu = sum(cpu_seconds(p) for p in nats_pids) - sum(before_cpu[1])
        after_stats = {p: cluster_stats(p) for p in c3_ports}
        try:
            result = json.loads(out)
        except ValueError:
            result = {"ok": False, "unparsed": out[-2000:]}
        result["exit"] = code
        if code != 0:
            result["stderr"] = err[-2000:]
        result["wall_s"] = round(wall, 3)
        result["server_cpu_s"] = round(server_cpu, 3)
        result["nats_cpu_s"] = round(nats_cpu, 3)
        result["load_cpu_s"] = round((after_children.ru_utime + after_children.ru_stime)
                                     - (children.ru_utime + children.ru_stime), 3)
        if c3_ports:
            delta = {}
            for p in c3_ports:
                b, a = before_stats[p], after_stats[p]
                name = a.get("node") or str(p)
                delta[name] = {k: (a.get(k) or 0) - (b.get(k) or 0)
                               for k in ("forwarded", "forward_failures", "forwarded_served", "relayed_pushes",
                                         "relay_duplicates", "relay_gap_fills")}
            result["cluster_delta"] = delta
        return result

    def fanout(self, setup, round_no):
        a = self.args
        base = ["fanout", "--subscribers", str(a.subscribers), "--size", "64", "--messages", str(a.messages),
                "--duration", str(a.seconds), "--stall-timeout", "10", "--loops", "2"]
        pids, nats_pids = self.setup_pids("c3" if setup.startswith("c3") else setup)
        if setup == "single":
            return self.load(base + ["--port", str(a.base_port)], pids, nats_pids)
        if setup == "js1":
            return self.load(base + ["--port", str(a.base_port + 1)], pids, nats_pids)
        channel = f"starport/cbench-{round_no}-{setup}-{random.randrange(1 << 30):08x}"
        owner = self.owner_of(channel)
        publisher = owner if setup == "c3-owner" else next(p for p in self.c3_ports if p != owner)
        argv = base + ["--port", str(publisher), "--channel", channel,
                       "--subscriber-ports", ",".join(map(str, self.c3_ports))]
        result = self.load(argv, pids, nats_pids, self.c3_ports)
        result["owner_port"] = owner
        result["publisher_port"] = publisher
        return result

    def commands(self, setup):
        a = self.args
        base = ["commands", "--clients", str(a.clients), "--duration", str(a.seconds), "--loops", "2"]
        pids, nats_pids = self.setup_pids("c3" if setup.startswith("c3") else setup)
        if setup == "single":
            return self.load(base + ["--port", str(a.base_port)], pids, nats_pids)
        if setup == "js1":
            return self.load(base + ["--port", str(a.base_port + 1)], pids, nats_pids)
        return self.load(base + ["--port", str(self.c3_ports[0])], pids, nats_pids, self.c3_ports)


def summarize(results):
    """Medians per (scenario, setup) and ratios to the single node."""
    table = {}
    for r in results:
        key = (r["scenario"], r["setup"])
        table.setdefault(key, []).append(r)
    lines = []
    single = {}
    for (scenario, setup), runs in table.items():
        metric = "deliveries_per_s" if scenario == "fanout" else "commands_per_s"
        rates = [x.get(metric) or 0 for x in runs]
        per_cpu = [(x.get(metric_total(scenario)) or 0) / x["server_cpu_s"] if x["server_cpu_s"] > 0 else 0
                   for x in runs]
        med = statistics.median(rates)
        if setup == "single":
            single[scenario] = med
        lines.append((scenario, setup, med, rates, statistics.median(per_cpu),
                      statistics.median([x["server_cpu_s"] / x["wall_s"] for x in runs]),
                      statistics.median([x["nats_cpu_s"] / x["wall_s"] for x in runs]),
                      statistics.median([x["load_cpu_s"] / x["wall_s"] for x in runs]),
                      sum(1 for x in runs if x.get("ok") is not True)))
    out = ["| scenario | setup | median /s | runs /s | per server CPU s | server cores | nats cores | load cores | vs single | failed runs |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for scenario, setup, med, rates, per_cpu, sc, nc, lc, failed in sorted(lines):
        ratio = med / single[scenario] if single.get(scenario) else 0
        out.append(f"| {scenario} | {setup} | {med:,.0f} | {' / '.join(f'{x:,.0f}' for x in rates)} | "
                   f"{per_cpu:,.0f} | {sc:.2f} | {nc:.2f} | {lc:.2f} | {ratio:.3f} | {failed} |")
    return "\n".join(out)


def metric_total(scenario):
    return "delivered" if scenario == "fanout" else "acknowledged"


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--seconds", type=float, default=6, help="publishing / sending time of each run")
    p.add_argument("--subscribers", type=int, default=100)
    p.add_argument("--messages", type=int, default=5_000_000, help="fan-out messages (a cap; --seconds ends the run)")
    p.add_argument("--clients", type=int, default=50)
    p.add_argument("--base-port", type=int, default=27500, help="single: +0, js1: +1, the 3 nodes: +10..+12")
    p.add_argument("--nats-port", type=int, default=24421, help="the 3 nats-servers (+100 routes, +200 monitoring); js1's: +50")
    p.add_argument("--server", default=str(REPO / ".build/release/outatime-server"))
    p.add_argument("--load", default=str(REPO / ".build/release/outatime-load"))
    p.add_argument("--nats-server", default=shutil.which("nats-server") or "nats-server")
    p.add_argument("--only", default="", help="comma-separated scenario/setup names to run (default: all)")
    p.add_argument("--json-out", help="write every run's result here")
    p.add_argument("--keep", action="store_true", help="keep the temporary folder (logs, stores)")
    args = p.parse_args()
    found, version = nats_version(args.nats_server)
    if found < (2, 9, 21):
        p.error(f"{args.nats_server} is {version or 'unknown'}; cluster mode needs 2.9.21 or later")
    bench = Bench(args)
    stop = {"now": False}
    signal.signal(signal.SIGTERM, lambda *_: stop.update(now=True))
    runs = [("fanout", s) for s in ("single", "js1", "c3-owner", "c3-other")] + \
           [("commands", s) for s in ("single", "js1", "c3-via-n1")]
    if args.only:
        wanted = set(args.only.split(","))
        runs = [r for r in runs if r[0] in wanted or r[1] in wanted or f"{r[0]}/{r[1]}" in wanted]
    results = []
    try:
        bench.start()
        print(f"up in {bench.folder}: single :{args.base_port}, js1 :{args.base_port + 1}, "
              f"c3 {bench.c3_ports}", flush=True)
        for round_no in range(args.rounds):
            order = runs if round_no % 2 == 0 else list(reversed(runs))
            for scenario, setup in order:
                if stop["now"]:
                    raise KeyboardInterrupt
                if scenario == "fanout":
                    r = bench.fanout(setup, round_no)
                else:
                    r = bench.commands(setup)
                r["scenario"], r["setup"], r["round"] = scenario, setup, round_no
                results.append(r)
                bench.check_alive()
                metric = "deliveries_per_s" if scenario == "fanout" else "commands_per_s"
                extra = ""
                if "cluster_delta" in r:
                    extra = " " + json.dumps(r["cluster_delta"], separators=(",", ":"))
                print(f"round {round_no} {scenario:8} {setup:9} {r.get(metric, 0):>12,}/s ok={r.get('ok')} "
                      f"server {r['server_cpu_s']:.2f} s nats {r['nats_cpu_s']:.2f} s load {r['load_cpu_s']:.2f} s "
                      f"wall {r['wall_s']:.1f} s{extra}", flush=True)
                if r.get("ok") is not True:
                    print(f"  not ok: {r.get('first_error') or r.get('stderr') or r.get('unparsed')}", flush=True)
        print(summarize(results))
        return 0
    except KeyboardInterrupt:
        return 130
    finally:
        if args.json_out:
            with open(args.json_out, "w") as f:
                json.dump({"results": results, "notes": bench.notes, "folder": bench.folder}, f, indent=1)
        for note in bench.notes:
            print(f"note: {note}", file=sys.stderr)
        bench.stop()


if __name__ == "__main__":
    sys.exit(main())
