#!/usr/bin/env python3
"""Server-side cost of TLS, measured from outside with Python's ssl module.

    tls_costs.py handshakes --port P --server-pid PID [--tls --ca ca.pem] [--cert c.pem --key c.key] [-n 2000]
        N sequential connections, each: connect, (TLS handshake), close. Prints
        the server's CPU time (utime + stime from /proc/PID/stat) per connection.
        Run once with and once without --tls: the difference is the handshake.

    tls_costs.py idle --proto outatime|redis --port P --server-pid PID [--tls ...] [-n 2000]
        N connections, each subscribed (OutaTime: hello + subscribe to one of
        100 channels; Redis: SUBSCRIBE) and left idle; prints the server's RSS
        (VmRSS from /proc/PID/status) growth per connection. Use a fresh server.

Loopback only; one JSON line per run. Needs `ulimit -n` above N + 50.
"""
import argparse
import json
import os
import socket
import ssl
import struct
import time


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_bytes(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS")


def context(args: argparse.Namespace) -> ssl.SSLContext | None:
    if not args.tls:
        return None
    ctx = ssl.create_default_context(cafile=args.ca)
    if args.cert:
        ctx.load_cert_chain(args.cert, args.key)
    return ctx


def connect(args: argparse.Namespace, ctx: ssl.SSLContext | None) -> socket.socket:
    sock = socket.create_connection((args.host, args.port), timeout=10)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return ctx.wrap_socket(sock, server_hostname=args.host) if ctx else sock


def read_exactly(sock: socket.socket, count: int) -> bytes:
    data = b""
    while len(data) < count:
        chunk = sock.recv(count - len(data))
        if not chunk:
            raise RuntimeError("connection closed")
        data += chunk
    return data


def outatime_call(sock: socket.socket, request: dict) -> dict:
    body = json.dumps(request).encode()
    sock.sendall(struct.pack(">I", len(body)) + body)
    while True:  # skip pushes (presence) until the reply
        frame = json.loads(read_exactly(sock, struct.unpack(">I", read_exactly(sock, 4))[0]))
        if frame.get("type") == "reply" and frame.get("id") == request["id"]:
            if not frame.get("ok"):
                raise RuntimeError(frame)
            return frame


def handshakes(args: argparse.Namespace) -> dict:
    ctx = context(args)
    if ctx:
        ctx.options |= ssl.OP_NO_TICKET  # no resumption: every handshake is a full one
    cpu_before, start = cpu_seconds(args.server_pid), time.monotonic()
    for _ in range(args.n):
        connect(args, ctx).close()
    elapsed = time.monotonic() - start
    # Let the server finish the last closes before reading its CPU time.
    time.sleep(0.5)
    cpu = cpu_seconds(args.server_pid) - cpu_before
    return {"scenario": "handshakes", "tls": args.tls, "connections": args.n, "seconds": round(elapsed, 3),
            "server_cpu_s": round(cpu, 3), "server_cpu_us_per_connection": round(cpu / args.n * 1e6, 1)}


def idle(args: argparse.Namespace) -> dict:
    ctx = context(args)
    rss_before = rss_bytes(args.server_pid)
    held = []
    for index in range(args.n):
        sock = connect(args, ctx)
        if args.proto == "outatime":
            outatime_call(sock, {"type": "hello", "id": 1, "protocol": 1, "name": f"idle-{index}"})
            outatime_call(sock, {"type": "subscribe", "id": 2, "channel": f"starport/idle-{index % 100}"})
        else:
            sock.sendall(f"SUBSCRIBE idle-{index % 100}\r\n".encode())
            if b"subscribe" not in sock.recv(4096):
                raise RuntimeError("no SUBSCRIBE reply")
        held.append(sock)
    time.sleep(args.settle)
    rss_after = rss_bytes(args.server_pid)
    for sock in held:
        sock.close()
    return {"scenario": "idle", "proto": args.proto, "tls": args.tls, "connections": args.n,
            "rss_before": rss_before, "rss_after": rss_after,
            "rss_per_connection_bytes": round((rss_after - rss_before) / args.n)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("scenario", choices=["handshakes", "idle"])
    parser.add_argument("--proto", choices=["outatime", "redis"], default="outatime")
    parser.add_argument("--host", default="localhost")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--server-pid", type=int, required=True)
    parser.add_argument("--tls", action="store_true")
    parser.add_argument("--ca")
    parser.add_argument("--cert")
    parser.add_argument("--key")
    parser.add_argument("-n", type=int, default=2000)
    parser.add_argument("--settle", type=float, default=2)
    args = parser.parse_args()
    args.tls = args.tls or args.ca is not None
    result = handshakes(args) if args.scenario == "handshakes" else idle(args)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
